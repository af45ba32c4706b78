"""AIS arm on the paper's Pima model (T=50): cost and variance per estimate, slice vs IMH, serial vs parallel.

Run: ``.venv/bin/python -m benchmarks.bench_ais [--scale 1.0]``. Prints a markdown
section and writes ``benchmarks/results/bench_ais.md``.

Every configuration is pulled in round-robin blocks inside one process, so
machine load and speed drift hit all of them alike (the ratios are side by
side). Costs are CPU seconds (``time.process_time``) per AIS estimate (one
chain); "hand-fused" runs the same AIS kernel on a hand-written numba log
density, as the reference prototype did, to calibrate this machine against the
prototype's figures (12/61/243 ms per estimate with the PyMC logp and
6.4/32/126 ms hand-fused). The relative variance of :math:`\\hat Z` per estimate
is ``var(w) / mean(w)^2`` over all estimates of a configuration, with the
normal-theory SE ``relvar * sqrt(2/(K-1))``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import time

import numba
import numpy as np

import pmcbandit  # noqa: F401  (configures PyTensor before pymc)
from models.pima import load_data, logistic_regression
from pmcbandit.arms.evidence import AISArm, ModelDensity
from benchmarks._common import machine

PROTOTYPE_MS = {400: 12.0, 2000: 61.0, 8000: 243.0}
PROTOTYPE_FUSED_MS = {400: 6.4, 2000: 32.0, 8000: 126.0}
PROTOTYPE_RELVAR = {400: 0.029, 2000: 0.0058, 8000: 0.0014}


def _fused_density(x_data, y_data, prior_var):
    """Hand-written numba log density of the same model (the prototype's 'hand-fused' reference)."""
    x_data = np.ascontiguousarray(x_data, dtype=np.float64)
    y_data = np.ascontiguousarray(y_data, dtype=np.float64)
    d = x_data.shape[1]
    log_norm = -0.5 * d * np.log(2 * np.pi * prior_var)

    @numba.njit
    def fused(theta):
        lp = log_norm
        for k in range(d):
            lp -= 0.5 * theta[k] * theta[k] / prior_var
        ll = 0.0
        for t in range(x_data.shape[0]):
            eta = 0.0
            for k in range(d):
                eta += x_data[t, k] * theta[k]
            ll += y_data[t] * eta - (max(eta, 0.0) + np.log1p(np.exp(-abs(eta))))
        return np.asarray(lp), np.asarray(ll)

    return fused


class _FusedDensity(ModelDensity):
    """The model's ModelDensity with ``jit_fn`` swapped for the hand-fused density (same prior draws)."""

    def __init__(self, density, jit_fn):  # noqa: D107 - shares the compiled parts of ``density``
        self.__dict__.update(density.__dict__)
        self.jit_fn = jit_fn


def _measure(configs, blocks, rng):
    """Round-robin ``blocks`` pulls per config; return {name: (log_w array, cpu s, wall s, evals)}."""
    out = {name: ([], 0.0, 0.0, 0.0) for name in configs}
    for _ in range(blocks):
        for name, (arm, pulls) in configs.items():
            vals, cpu, wall, evals = out[name]
            for _ in range(pulls):
                t0, c0 = time.perf_counter(), time.process_time()
                pull = arm.pull(rng)
                cpu += time.process_time() - c0
                wall += time.perf_counter() - t0
                vals.append(pull.values)
                evals += pull.info["logp_evals"]
            out[name] = (vals, cpu, wall, evals)
    return {k: (np.concatenate(v[0]), v[1], v[2], v[3]) for k, v in out.items()}


def _relvar(log_w):
    w = np.exp(log_w - log_w.max())
    rv = w.var(ddof=1) / w.mean() ** 2
    return rv, rv * np.sqrt(2.0 / (w.size - 1))


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the number of estimates")
    parser.add_argument("--seed", type=int, default=2014)
    parser.add_argument("--out", default="benchmarks/results/bench_ais.md")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    load = os.getloadavg()
    t_start = time.perf_counter()
    x_data, y_data = load_data(50)
    density = ModelDensity(logistic_regression(x_data, y_data))
    fused = _FusedDensity(density, _fused_density(x_data, y_data, 0.05))
    t_build = time.perf_counter() - t_start

    # Per-evaluation cost, side by side.
    from pmcbandit.arms.evidence._kernels import eval_rows

    pts = density.sample_prior(rng, 20000)
    eval_rows(fused.jit_fn, pts[:2])
    per_eval = {"pytensor": 0.0, "fused": 0.0}
    for _ in range(5):
        for key, fn in (("pytensor", density.jit_fn), ("fused", fused.jit_fn)):
            c0 = time.process_time()
            eval_rows(fn, pts)
            per_eval[key] += (time.process_time() - c0) / (5 * pts.shape[0])

    chains = 4
    k = max(1, int(round(args.scale * 10)))
    plan = {400: 2 * k, 2000: k, 8000: max(1, k // 2)}  # blocks of pulls of 4 chains
    configs = {}
    for n, blocks in plan.items():
        configs[f"ais-{n}"] = (AISArm(density, n_steps=n, n_chains=chains), blocks)
        configs[f"fused-{n}"] = (AISArm(fused, n_steps=n, n_chains=chains, name=f"fused-{n}"), blocks)
        configs[f"ais-imh-{n}"] = (AISArm(density, n_steps=n, n_chains=chains, transition="imh"), 10 * blocks)
    configs["ais-imh-gauss-2000"] = (
        AISArm(density, n_steps=2000, n_chains=chains, transition="imh", imh_df=0, name="ais-imh-gauss-2000"),
        10 * k,
    )
    configs["ais-2000-parallel"] = (AISArm(density, n_steps=2000, n_chains=chains, parallel=True), k)
    t_compile = time.perf_counter() - t_start - t_build
    blocks = 5
    configs = {name: (arm, max(1, pulls // blocks)) for name, (arm, pulls) in configs.items()}
    t0 = time.perf_counter()
    res = _measure(configs, blocks, rng)
    t_run = time.perf_counter() - t0

    lines = [
        "## AIS arm on Pima T=50 (`benchmarks/bench_ais.py`)",
        "",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; machine: {machine()}",
        f"- Command: `.venv/bin/python -m benchmarks.bench_ais --scale {args.scale} --seed {args.seed}`",
        f"- Load average at start: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (other processes share the "
        "2 cores; CPU-time costs are inflated when it is above ~1, equally for all configurations, "
        "which are pulled round-robin)",
        f"- Model build {t_build:.1f} s; arm construction (numba kernels, Laplace fits) {t_compile:.1f} s; "
        f"measurement {t_run:.0f} s",
        f"- Log density per evaluation (CPU): PyMC graph via `jit_fn` {per_eval['pytensor'] * 1e6:.2f} us, "
        f"hand-fused {per_eval['fused'] * 1e6:.2f} us (ratio {per_eval['pytensor'] / per_eval['fused']:.2f})",
        "",
        "| arm | estimates | CPU ms / estimate | wall ms / estimate | evals / estimate | rel. var of Z-hat "
        "per estimate (± SE) | var x cost (ms) | prototype ms | prototype rel. var |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    summary = {}
    for name, (log_w, cpu, wall, evals) in res.items():
        m = log_w.size
        rv, rv_se = _relvar(log_w)
        cost_ms = 1e3 * cpu / m
        summary[name] = (cost_ms, rv)
        n = int(name.split("-")[-1]) if name.split("-")[-1].isdigit() else 2000
        # IMH rows: Student-t proposal with the arm's default df (10) unless named "gauss" (df = 0).
        proto = PROTOTYPE_FUSED_MS[n] if name.startswith("fused") else PROTOTYPE_MS[n]
        proto_rv = f"{PROTOTYPE_RELVAR[n]:.4f}" if name.startswith(("ais-4", "ais-2", "ais-8")) else "-"
        if "imh" in name:
            proto, proto_rv = "-", "-"
        lines.append(
            f"| {name} | {m} | {cost_ms:.2f} | {1e3 * wall / m:.2f} | {evals / m:.0f} | {rv:.4f} ± {rv_se:.4f} "
            f"| {rv * cost_ms:.4f} | {proto} | {proto_rv} |"
        )
    lines += [
        "",
        "`ais-imh-*`: one independence-Metropolis move per temperature from the interpolated "
        "Laplace Student-t proposal (df = 10, the default; `gauss`: df = 0). Prototype figures are "
        "from a reference prototype measured on another 2-core machine, unloaded: compare them through the hand-fused "
        "calibration below, not directly.",
        "",
        "Ratios (side by side in this run):",
        "",
    ]
    for n in PROTOTYPE_MS:
        ours, fz = summary[f"ais-{n}"][0], summary[f"fused-{n}"][0]
        lines.append(
            f"- n={n}: PyMC-logp AIS / hand-fused AIS = {ours / fz:.2f} (prototype {PROTOTYPE_MS[n] / PROTOTYPE_FUSED_MS[n]:.2f}); "
            f"calibrated cost = {ours / fz * PROTOTYPE_FUSED_MS[n]:.1f} ms vs prototype {PROTOTYPE_MS[n]:.0f} ms "
            f"(goal <= 1.5x: {ours / fz * PROTOTYPE_FUSED_MS[n] / PROTOTYPE_MS[n]:.2f}x); "
            f"slice var x cost / IMH var x cost = "
            f"{summary[f'ais-{n}'][0] * summary[f'ais-{n}'][1] / (summary[f'ais-imh-{n}'][0] * summary[f'ais-imh-{n}'][1]):.1f}"
        )
    par, ser = res["ais-2000-parallel"], res["ais-2000"]
    lines.append(
        f"- parallel (numba prange, {chains} chains/pull) vs serial, ais-2000: wall per estimate "
        f"{1e3 * par[2] / par[0].size:.1f} vs {1e3 * ser[2] / ser[0].size:.1f} ms, CPU "
        f"{1e3 * par[1] / par[0].size:.1f} vs {1e3 * ser[1] / ser[0].size:.1f} ms"
    )
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(text)
    return text


if __name__ == "__main__":
    main()
