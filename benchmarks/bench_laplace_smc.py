"""Laplace-t importance sampling and ``pm.sample_smc`` on the Pima model (Neufeld et al. 2014, Sec. 6.3).

Run as ``.venv/bin/python -m benchmarks.bench_laplace_smc`` (``--quick`` for a smoke
run). On ``logistic_regression(*load_data(T))`` (T = 50 by default) it measures

* :class:`~pmcbandit.arms.evidence.laplace_is.LaplaceISArm`: the relative variance
  per draw ``Var(w)/E[w]^2`` of the importance weights (from ``--is-draws`` draws)
  for the pure Student-t proposal (``defensive=0``: no prior component) at nu = 5,
  inflation 1.2 and a few others, and the CPU
  time per draw of a pull (``time.process_time``, batches of 1000 and 10000);
* :class:`~pmcbandit.arms.evidence.smc.SMCArm` (one ``pm.sample_smc`` IMH run per
  pull, default settings): sd and mean of :math:`\\log\\hat Z` over ``--smc-runs``
  runs at 500 / 2000 / 8000 particles, and CPU / wall seconds per run;
* with ``--reference``: a long Laplace-t estimate of :math:`\\log Z` for T = 5, 10,
  50 (``--draws`` weights each, batches of 10^5, accumulated by log-sum-exp of
  ``w`` and ``w^2``), the values stored in ``models.pima.REFERENCE_LOG_Z``.

Variance x cost compares the families: for Laplace-t, relvar per draw x seconds
per draw; for SMC, Var(log Zhat) x seconds per run (the delta method makes
Var(log Zhat) the relative variance of Zhat). The markdown section is printed and
written to ``benchmarks/results/bench_laplace_smc.md``.
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
from scipy.special import logsumexp

import pmcbandit  # noqa: F401  (configures PyTensor before anything imports it)
from models.pima import REFERENCE_LOG_Z, load_data, logistic_regression
from pmcbandit.arms.evidence.laplace_is import LaplaceISArm
from pmcbandit.arms.evidence.smc import SMCArm
from benchmarks._common import machine

PROPOSALS = [(5.0, 1.2), (10.0, 1.1), (20.0, 1.1), (20.0, 1.0)]
REFERENCE_PROPOSAL = (20.0, 1.1)
REFERENCE_BATCH = 100_000


def long_run(arm: LaplaceISArm, rng: np.random.Generator, draws: int, batch: int = REFERENCE_BATCH):
    """``(log Zhat, se of log Zhat, relvar per draw)`` from ``draws`` weights, in log space.

    :math:`\\log\\hat Z = \\mathrm{lse}(\\log w) - \\log N`; the relative variance is
    :math:`\\exp(\\mathrm{lse}(2\\log w) - \\log N - 2\\log\\hat Z) - 1` and the
    delta-method SE of :math:`\\log\\hat Z` is :math:`\\sqrt{\\text{relvar}/N}`.
    """
    lse1 = lse2 = -np.inf
    done = 0
    while done < draws:
        n = min(batch, draws - done)
        log_w = arm.log_weights(rng, n)
        lse1 = np.logaddexp(lse1, logsumexp(log_w))
        lse2 = np.logaddexp(lse2, logsumexp(2.0 * log_w))
        done += n
    log_z = lse1 - np.log(done)
    relvar = float(np.expm1(lse2 - np.log(done) - 2.0 * log_z))
    return float(log_z), float(np.sqrt(relvar / done)), relvar


def laplace_rows(model, rng, is_draws, reference):
    rows = []
    for df, inflation in PROPOSALS:
        arm = LaplaceISArm(model, df=df, inflation=inflation, defensive=0.0)  # the pure t proposal
        log_z, se, relvar = long_run(arm, rng, is_draws)
        timing = {}
        for batch in (1000, 10_000):
            arm.batch_size = batch
            arm.pull(rng)  # warm-up
            pulls = max(3, 2_000_000 // (batch * 10))
            start = time.process_time()
            for _ in range(pulls):
                arm.pull(rng)
            timing[batch] = (time.process_time() - start) / (pulls * batch) * 1e6
        rows.append(
            {
                "df": df,
                "inflation": inflation,
                "log_z": log_z,
                "se": se,
                "relvar": relvar,
                "us1k": timing[1000],
                "us10k": timing[10_000],
                "err": (log_z - reference[0]) if reference else None,
            }
        )
    return rows


def smc_rows(model, rng, runs, reference):
    rows = []
    for draws in (500, 2000, 8000):
        arm = SMCArm(model, draws=draws)
        arm.pull(rng)  # warm the compilation cache, as a user's second call would be
        values, cpu, wall = [], [], []
        for _ in range(runs):
            start = time.perf_counter()
            pull = arm.pull(rng)
            wall.append(time.perf_counter() - start)
            values.append(pull.values[0])
            cpu.append(pull.cost)
        values = np.asarray(values)
        rows.append(
            {
                "draws": draws,
                "mean": values.mean(),
                "sd": values.std(ddof=1),
                "bias": (values.mean() - reference[0]) if reference else None,
                "bias_se": values.std(ddof=1) / np.sqrt(runs),
                "cpu": float(np.mean(cpu)),
                "wall": float(np.mean(wall)),
            }
        )
    return rows


def reference_rows(draws, seed, Ts=(50, 10, 5)):
    rows = []
    df, inflation = REFERENCE_PROPOSAL
    # T = 5 and 10 are not the benchmark's target: a fifth of the draws suffices there.
    for T in Ts:
        n = draws if T == 50 else draws // 5
        rng = np.random.default_rng([seed, T])
        arm = LaplaceISArm(logistic_regression(*load_data(T)), df=df, inflation=inflation)
        start = time.process_time()
        log_z, se, relvar = long_run(arm, rng, n)
        rows.append(
            {"T": T, "draws": n, "log_z": log_z, "se": se, "relvar": relvar, "seconds": time.process_time() - start}
        )
    return rows


def markdown(T, lap, smc, ref, command, args) -> str:
    import pymc
    import pytensor

    reference = REFERENCE_LOG_Z.get(T)
    lines = [
        f"## Laplace-t importance sampling and pm.sample_smc on Pima T={T}",
        "",
        f"- machine: {machine()}; Python {platform.python_version()}, numpy {np.__version__}, "
        f"PyMC {pymc.__version__}, PyTensor {pytensor.__version__}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; load average at the "
        f"end {', '.join(f'{v:.1f}' for v in os.getloadavg())} (timings are CPU time of this process, "
        "but a loaded machine still slows them)",
        f"- command: `{command}`",
        f"- reference log Z (models.pima.REFERENCE_LOG_Z[{T}]): "
        + (f"{reference[0]:.6f} ± {reference[1]:.1e}" if reference else "not yet computed"),
        "",
    ]
    if lap:
        lines += [
            f"### Laplace-t IS ({args.is_draws:.0e} weights per proposal; CPU µs per draw of a pull)",
            "",
            "| nu | inflation | log Ẑ | SE | relvar per draw | µs/draw (B=1000) | µs/draw (B=10⁴) | relvar × s/draw | log Ẑ − ref |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in lap:
            err = f"{r['err']:+.5f}" if r["err"] is not None else "–"
            lines.append(
                f"| {r['df']:g} | {r['inflation']:g} | {r['log_z']:.5f} | {r['se']:.1e} | {r['relvar']:.3f} | "
                f"{r['us1k']:.2f} | {r['us10k']:.2f} | {r['relvar'] * r['us1k'] * 1e-6:.2e} | {err} |"
            )
        lines.append("")
    if smc:
        lines += [
            f"### pm.sample_smc (IMH, 1 chain, default settings; {args.smc_runs} runs per row)",
            "",
            "| draws | mean log Ẑ | sd(log Ẑ) | bias vs ref (± SE) | CPU s/run | wall s/run | Var(log Ẑ) × CPU s |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in smc:
            bias = f"{r['bias']:+.4f} ± {r['bias_se']:.4f}" if r["bias"] is not None else "–"
            lines.append(
                f"| {r['draws']} | {r['mean']:.4f} | {r['sd']:.4f} | {bias} | {r['cpu']:.3f} | "
                f"{r['wall']:.3f} | {r['sd'] ** 2 * r['cpu']:.2e} |"
            )
        lines.append("")
        if lap:
            best_smc = min(r["sd"] ** 2 * r["cpu"] for r in smc)
            default = lap[0]["relvar"] * lap[0]["us1k"] * 1e-6
            lines += [
                f"Variance × CPU cost: Laplace-t (nu=5, 1.2) {default:.2e} vs best SMC {best_smc:.2e} "
                f"({best_smc / default:.0f}× in favour of Laplace-t).",
                "",
            ]
    if ref:
        df, inflation = REFERENCE_PROPOSAL
        lines += [
            f"### Reference log Z (Laplace-t nu={df:g}, inflation {inflation:g}, seed [{args.seed}, T])",
            "",
            "| T | weights | log Z | SE | relvar per draw | CPU seconds |",
            "|---|---|---|---|---|---|",
        ]
        for r in ref:
            lines.append(
                f"| {r['T']} | {r['draws']:.0e} | {r['log_z']:.6f} | {r['se']:.1e} | {r['relvar']:.4f} | "
                f"{r['seconds']:.0f} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=50)
    parser.add_argument("--is-draws", type=int, default=4_000_000)
    parser.add_argument("--smc-runs", type=int, default=30)
    parser.add_argument("--reference", action="store_true", help="compute the long reference log Z")
    parser.add_argument("--only-reference", action="store_true")
    parser.add_argument("--draws", type=int, default=100_000_000, help="weights per reference value")
    parser.add_argument(
        "--reference-T",
        type=int,
        nargs="+",
        default=[50, 10, 5],
        help="data sizes for --only-reference (T=50 gets --draws, others a fifth)",
    )
    parser.add_argument("--seed", type=int, default=20141)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.is_draws, args.smc_runs, args.draws = 200_000, 3, 1_000_000
    command = ".venv/bin/python -m benchmarks.bench_laplace_smc " + " ".join(sys.argv[1:] if argv is None else argv)
    rng = np.random.default_rng(args.seed)
    model = logistic_regression(*load_data(args.T))
    reference = REFERENCE_LOG_Z.get(args.T)
    lap = smc = ref = None
    if not args.only_reference:
        lap = laplace_rows(model, rng, args.is_draws, reference)
        smc = smc_rows(model, rng, args.smc_runs, reference)
    if args.reference or args.only_reference:
        ref = reference_rows(args.draws, args.seed, tuple(args.reference_T))
    text = markdown(args.T, lap, smc, ref, command.strip(), args)
    print(text)
    name = "bench_laplace_smc_reference.md" if args.only_reference else "bench_laplace_smc.md"
    out = Path(__file__).parent / "results" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    return text


if __name__ == "__main__":
    main()
