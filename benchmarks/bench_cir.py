"""Path-steps per second per core of a CIR caplet arm vs a vectorised NumPy loop.

Run as ``.venv/bin/python -m benchmarks.bench_cir`` (``--quick`` for a short
smoke run). One path-step is one Euler step of one path (n = 100 steps per
path), including the draw of its normal. Timed side by side in one process,
interleaved block by block:

- ``arm (fused kernel)``: :class:`models.cir.CIRCapletArm` ``pull`` with the default
  ``engine="fused"`` — the numba loop of :mod:`models.cir_kernel` drawing each normal from
  the pull's Generator in-loop, with the diagnostics and PMC arrays (the default arm);
- ``arm (scan, FAST_RUN)``: the same arm with ``engine="graph"`` — NumPy
  normals from the pull's Generator, the shared PyTensor ``scan`` graph compiled
  with the C backend;
- ``arm (scan, NUMBA)``: the same arm with the graph compiled by the NUMBA backend;
- ``numpy loop``: ``rng.standard_normal`` + :func:`models.cir.simulate_paths_numpy`
  (a Python loop over the steps, vectorised over paths) — the baseline;
- ``scan with in-graph normals (NUMBA)``: the alternative design in which the
  normals are drawn inside the scan by a PyTensor ``normal`` on a Generator
  input (the RNG state threaded through the scan), compiled by NUMBA;
- and the two halves of the default arm: the normals alone and the compiled
  graph alone on fixed normals.

Blocks are timed in CPU time of the process (``time.process_time``; the
2-core machine is shared, wall time would count waiting for a core) and the
table reports the median block. The markdown section is printed and written to
``benchmarks/results/bench_cir.md``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import pmcbandit  # noqa: F401  (configures PyTensor before anything imports it)
from models.cir import CIRCapletArm, _compiled_paths, simulate_paths_numpy
from benchmarks._common import machine

GOAL = 1e8
N_STEPS = 100


def _in_graph_rng_fn(paths: int):
    """The same recursion with the normals drawn inside the scan (NUMBA backend)."""
    import pytensor
    import pytensor.tensor as pt
    from pytensor.tensor.random.type import random_generator_type

    rng_in = random_generator_type("rng")
    theta = pt.scalar("theta", dtype="float64")
    dt, eta, kappa, sigma, r0 = 1.0 / N_STEPS, 0.016, 0.2, 0.02, 0.08
    mu = theta * np.sqrt(dt)

    def step(r, s, inner, rng):
        next_rng, z = pt.random.normal(0.0, 1.0, size=(paths,), rng=rng).owner.outputs
        e = z + mu
        r_next = r + (eta - kappa * r) * dt + sigma * pt.sqrt(pt.maximum(r, 0.0) * dt) * e
        return r_next, s + e, inner + r_next, next_rng

    zeros = pt.zeros((paths,))
    r_path, s_path, inner_path, _ = pytensor.scan(
        step, outputs_info=[zeros + r0, zeros, zeros, rng_in], n_steps=N_STEPS, return_list=True, return_updates=False
    )
    r_n = r_path[-1]
    log_d = -dt * ((r0 + r_n) / 2 + inner_path[-1] - r_n)
    out = 1000.0 * pt.maximum(r_n - 0.07, 0.0) * pt.exp(log_d - mu * s_path[-1] + theta**2 / 2)
    fn = pytensor.function([rng_in, theta], out, mode="NUMBA")
    fn.trust_input = True
    return fn


def _variants(paths: int):
    arm_fused = CIRCapletArm(0.7, 0.07, paths)
    arm_c = CIRCapletArm(0.7, 0.07, paths, engine="graph", mode="FAST_RUN")
    arm_nb = CIRCapletArm(0.7, 0.07, paths, engine="graph", mode="NUMBA")
    fn = _compiled_paths("FAST_RUN")
    z_fixed = np.random.default_rng(1).standard_normal((N_STEPS, paths))
    args = arm_c._args
    mu = 0.7 * np.sqrt(1.0 / N_STEPS)
    in_graph = _in_graph_rng_fn(paths)
    theta = np.asarray(0.7)
    return {
        "arm (fused kernel)": lambda rng: arm_fused.pull(rng),
        "arm (scan, FAST_RUN)": lambda rng: arm_c.pull(rng),
        "arm (scan, NUMBA)": lambda rng: arm_nb.pull(rng),
        "numpy loop (baseline)": lambda rng: simulate_paths_numpy(
            rng.standard_normal((N_STEPS, paths)) + mu, 0.07, 0.7
        ),
        "scan with in-graph normals (NUMBA)": lambda rng: in_graph(rng, theta),
        "  normals only (rng.standard_normal)": lambda rng: rng.standard_normal((N_STEPS, paths)),
        "  graph only (FAST_RUN, fixed normals)": lambda rng: fn(z_fixed, *args),
    }


def measure(paths: int, block_steps: float, repeats: int) -> list[dict]:
    variants = _variants(paths)
    rng = np.random.default_rng(0)
    for f in variants.values():  # warm-up: compilation, caches
        for _ in range(3):
            f(rng)
    pulls = max(1, int(block_steps / (N_STEPS * paths)))
    times = {k: [] for k in variants}
    for _ in range(repeats):
        for name, f in variants.items():
            start = time.process_time()
            for _ in range(pulls):
                f(rng)
            times[name].append(time.process_time() - start)
    rows = []
    for name, ts in times.items():
        med = float(np.median(ts))
        rows.append(
            dict(name=name, paths=paths, rate=pulls * N_STEPS * paths / med, best=pulls * N_STEPS * paths / min(ts))
        )
    base = next(r["rate"] for r in rows if r["name"].startswith("numpy loop"))
    for r in rows:
        r["ratio"] = r["rate"] / base
    return rows


def markdown(rows: list[dict], command: str, repeats: int) -> str:
    import numba
    import pytensor

    lines = [
        "## bench_cir: CIR caplet arm, path-steps per second per core",
        "",
        f"- command: `{command}`",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}; load average at start {os.getloadavg()[0]:.1f}; Python "
        f"{platform.python_version()}, numpy {np.__version__}, pytensor {pytensor.__version__}, numba {numba.__version__}",
        f"- n = {N_STEPS} steps per path, θ = 0.7, K = 0.07; CPU time (process_time) per block, "
        f"median of {repeats} interleaved blocks; a path-step includes drawing its normal.",
        "",
        "| variant | paths/pull | path-steps/s (median) | best block | vs numpy loop |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['name']} | {r['paths']} | {r['rate']:.3g} | {r['best']:.3g} | {r['ratio']:.2f}x |")
    best_arm = max(r["rate"] for r in rows if r["name"].startswith("arm"))
    lines += [
        "",
        f"Goal ≥ {GOAL:.0e} path-steps/s per core: best arm variant {best_arm:.3g} "
        f"({'met' if best_arm >= GOAL else 'NOT met'}).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else 9
    block = 2e6 if args.quick else 2e7
    rows = []
    for paths in (100, 1000, 10000):
        rows += measure(paths, block, repeats)
    command = ".venv/bin/python -m benchmarks.bench_cir" + (" --quick" if args.quick else "")
    text = markdown(rows, command, repeats)
    sys.stdout.write(text)
    if not args.no_write:
        out = Path(__file__).resolve().parent / "results" / "bench_cir.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text(text)
    return text


if __name__ == "__main__":
    main()
