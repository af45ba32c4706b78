"""The mode search of the evidence pool's set-up, its Hessians from the NUMBA gradient or from PyTensor's.

:func:`pmcbandit.arms.evidence.modes.find_modes` (16 trust-region Newton searches) on the suite's models of
at least :data:`~pmcbandit.arms.evidence.model_density.NUMBA_HESSIAN_DIM` dimensions, each in a fresh
single-threaded process (:func:`benchmarks._common.run_fresh`), the two Hessian paths alternating, so both
see the same machine load:

``numba``
    the pool's path where its HMC pilot will run: the NUMBA gradient
    (:attr:`~pmcbandit.arms.evidence.ModelDensity.grad_jit_fn`) compiled first (timed: the pilot would
    compile it anyway), then every Hessian's ``2 * dim`` gradients from it;
``pytensor``
    no NUMBA gradient, ``NUMBA_HESSIAN_DIM`` raised past the dimension: ``2 * dim`` calls of the compiled
    PyTensor function per Hessian (the path of a run too short for the pilot, below ``NUMBA_HESSIAN_DIM``).

Reported: the seconds of compiling the Laplace functions plus the search (the density's own compilation,
common to both, excluded; for ``numba`` also without the gradient's compilation, which the pilot needs
anyway), the Hessians' share, and whether the two found the same modes.

    .venv/bin/python -m benchmarks.bench_mode_search --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from benchmarks._common import machine, run_fresh, utc_now, write_section

MODELS = ("hierarchical_normal_100", "hierarchical_logistic_50", "logistic_regression_d50")


def run(name: str, path: str) -> dict:
    """One mode search in this process."""
    import warnings

    import pmcbandit.arms.evidence.model_density as md
    from models.evidence_suite import SUITE
    from pmcbandit.arms.evidence._cache import density_for
    from pmcbandit.arms.evidence.modes import find_modes

    warnings.simplefilter("ignore")
    if path == "pytensor":
        md.NUMBA_HESSIAN_DIM = 10**9
    density = density_for(SUITE[name]().model, True, [])
    start = time.perf_counter()
    if path == "numba":
        density.grad_jit_fn  # as the evidence pool compiles it where its HMC pilot will run
    grad_compile = time.perf_counter() - start
    value_and_grad, hessian = density._laplace_functions()
    compiled = time.perf_counter() - start
    spent = [0.0, 0]

    def timed(x, beta):
        t = time.perf_counter()
        out = hessian(x, beta)
        spent[0] += time.perf_counter() - t
        spent[1] += 1
        return out

    density._laplace_fn = (value_and_grad, timed)
    search = find_modes(density)
    total = time.perf_counter() - start
    return dict(model=name, path=path, dim=density.dim, seconds=total, compile=compiled, grad_compile=grad_compile,
                hessian=spent[0],
                n_hessians=spent[1], log_density=[round(float(m.log_density), 6) for m in search.modes])


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run(*args.worker.split(":"))))
        return ""
    command = "python -m benchmarks.bench_mode_search " + " ".join(sys.argv[1:] if argv is None else argv)
    load = os.getloadavg()[0]
    runs = [run_fresh("benchmarks.bench_mode_search", ["--worker", f"{name}:{path}"],
                      dict(model=name, path=path, seconds=np.nan, compile=np.nan, hessian=np.nan, log_density=[]))
            for name in MODELS for _ in range(args.repeats) for path in ("numba", "pytensor")]
    lines = ["## Mode search of the evidence set-up: Hessians from the NUMBA gradient or PyTensor's "
             "(`bench_mode_search`)", "",
             f"- machine: {machine()}; date: {utc_now()}; load average before: {load:.2f}",
             f"- command: `{command}`; each run a fresh single-threaded process, the two paths alternating",
             "- seconds: compiling the Laplace functions (and, for `numba`, the NUMBA gradient) plus "
             "`find_modes`' 16 searches; medians over the repeats", "",
             "| model | dim | Hessians | numba: s (Hessians s) | of which NUMBA gradient compile s | "
             "pytensor: s (Hessians s) | pytensor / numba | pytensor / (numba less its gradient's compile) | "
             "same modes |", "|---|---:|---:|---|---:|---|---:|---:|---|"]
    for name in MODELS:
        mine = {p: [r for r in runs if r["model"] == name and r["path"] == p] for p in ("numba", "pytensor")}
        med = {p: (float(np.median([r["seconds"] for r in rs])), float(np.median([r["hessian"] for r in rs])),
                   float(np.median([r.get("grad_compile", np.nan) for r in rs]))) for p, rs in mine.items()}
        same = all(r["log_density"] == mine["numba"][0]["log_density"] for rs in mine.values() for r in rs)
        dim = mine["numba"][0].get("dim", "?")
        n_h = mine["numba"][0].get("n_hessians", "?")
        lines.append(f"| {name} | {dim} | {n_h} | {med['numba'][0]:.2f} ({med['numba'][1]:.2f}) | "
                     f"{med['numba'][2]:.2f} | {med['pytensor'][0]:.2f} ({med['pytensor'][1]:.2f}) | "
                     f"{med['pytensor'][0] / med['numba'][0]:.2f}x | "
                     f"{med['pytensor'][0] / (med['numba'][0] - med['numba'][2]):.2f}x | {'yes' if same else 'no'} |")
    md = "\n".join(lines) + "\n"
    write_section("bench_mode_search", md)
    print(md)
    return md


if __name__ == "__main__":
    main()
