"""The evidence calibration suite at equal wall time: ``estimate_evidence`` against repeated ``pm.sample_smc``.

Run as ``.venv/bin/python -m benchmarks.bench_evidence_suite`` (``--quick`` for a smoke run;
``--models``, ``--seconds``, ``--seeds``, ``--workers`` to choose). For every model of
:data:`models.evidence_suite.SUITE`, every budget (15 s and 60 s of wall time by default) and every
seed (20 by default), two FRESH Python processes run:

``pool``        ``estimate_evidence(model, budget=seconds, random_seed=seed)``: the default pool sized
                for the budget, Thompson sampling, paired cost-aware reward, inverse variance, the
                guards, reliability and consistency checks. Building the pool (compilation, mode
                search) is not timed, as the budget does not count it; its seconds are reported.
``pool_smc``    (not run by default; ``--methods``) the same with :class:`~pmcbandit.arms.evidence.SMCArm`
                in the pool (``evidence_arms(model, smc=True, budget_seconds=seconds)``): does PyMC's
                SMC help as an arm?
``sample_smc``  what a PyMC user does: ``pm.sample_smc(model=m, cores=1)`` called repeatedly while the wall
                clock is under the budget (one untimed warm-up call first), the estimate being the mean
                of all its chains' final ``log_marginal_likelihood`` and its SE their sd / sqrt(chains)
                (:func:`benchmarks.bench_evidence_vs_smc.run_sample_smc`).

``--workers`` processes run side by side (default 2, one per core of this machine). Each is held
to one core (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``NUMBA_NUM_THREADS`` = 1; SMC's chains
run in sequence, ``cores=1``, its other settings PyMC's defaults), so both methods get one core
each, whatever runs beside them. Tasks are ordered seed by seed, so drift in the machine's speed
hits every model, budget and method alike.

Reported per model and budget, against the suite's reference ``log Z`` (its own SE, if any, is
added in quadrature to every run's SE: a z-score is ``(log Ẑ - log Z) / sqrt(se² + se_ref²)``):
the count of 95 % intervals that contain the reference (``log_z_ci(0.95)``; runs whose interval
status is not ``ok``/``random_effects`` are counted apart, and as not covering), the mean and the
largest |z|, the MSE of ``log Ẑ`` for both methods and their ratio, the largest wall-time overshoot
of the budget, and what the runs reported (interval statuses, warnings). Goals: no |z| > 4, coverage
in [90 %, 98 %], MSE at most ``sample_smc``'s, overshoot at most 10 %. The markdown is printed and
written to ``benchmarks/results/bench_evidence_suite.md``; every run to ``bench_evidence_suite.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks._common import RESULTS, machine, utc_now, write_section

MARK = "RESULT "
METHODS = ("pool", "sample_smc", "pool_smc")
DEFAULT_METHODS = ("pool", "sample_smc")
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


# --- one task (runs in its own process) ---------------------------------------------------------
def run_pool(model, seconds: float, seed: int, smc: bool = False) -> dict:
    import warnings

    from pmcbandit.evidence import estimate_evidence, evidence_arms
    from pmcbandit.exceptions import PmcBanditWarning

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PmcBanditWarning)
        arms = evidence_arms(model, smc=True, budget_seconds=seconds) if smc else None
        built = time.perf_counter() - start
        result = estimate_evidence(model, arms=arms, budget=seconds, random_seed=seed, progressbar=False)
    total = time.perf_counter() - start
    setup = float(result.settings["setup_seconds"]) + built
    table = result.arm_table()
    spent = np.nan_to_num(np.asarray(table["pulls"]) * np.asarray(table["cost"]))
    lo, hi = result.log_z_ci(0.95)
    return dict(
        log_z=result.log_z,
        log_z_se=result.log_z_se,
        ci=[lo, hi],
        status=result.interval_status,
        setup=setup,
        wall=total - setup,
        stopped_by=result.settings["stopped_by"],
        pulls={str(a): int(n) for a, n in zip(table["arm"], table["pulls"])},
        cost_share={str(a): float(c / spent.sum()) for a, c in zip(table["arm"], spent)} if spent.sum() else {},
        khat={str(a): float(k) for a, k in zip(table["arm"], table["khat"]) if np.isfinite(k)},
        arm_status={str(a): str(s) for a, s in zip(table["arm"], table["status"])},
        warnings=sorted({str(w.message)[:160] for w in caught if w.category is PmcBanditWarning}),
    )


def worker(model_name: str, method: str, seconds: float, seed: int) -> dict:
    import pmcbandit  # noqa: F401  (configures PyTensor first)
    from benchmarks.bench_evidence_vs_smc import run_sample_smc
    from models.evidence_suite import SUITE

    model = SUITE[model_name]().model
    if method in ("pool", "pool_smc"):
        return run_pool(model, seconds, seed, smc=method == "pool_smc")
    out = run_sample_smc(model, seconds, seed, "wall", cores=1)
    lo, hi = out["log_z"] - 1.96 * out["log_z_se"], out["log_z"] + 1.96 * out["log_z_se"]
    return dict(out, ci=[lo, hi], status="ok")


def in_fresh_process(model_name: str, method: str, seconds: float, seed: int) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.bench_evidence_suite",
        "--worker",
        model_name,
        method,
        "--seconds",
        str(seconds),
        "--seed",
        str(seed),
    ]
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, **SINGLE_THREAD)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=20 * seconds + 1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return dict(json.loads(lines[-1][len(MARK) :]), model=model_name, method=method, seconds=seconds, seed=seed)


# --- the report ------------------------------------------------------------------------------
def _kind(warning: str) -> str:
    """A warning's kind: its words before the first number, bracket or colon."""
    cut = len(warning)
    for mark in ("[", "(", ":", *"0123456789"):
        i = warning.find(mark)
        if i >= 0:
            cut = min(cut, i)
    return warning[:cut].strip(" ,;")


def summarise(runs: list[dict], references: dict) -> list[dict]:
    rows = []
    keys = sorted({(r["model"], r["seconds"]) for r in runs}, key=lambda k: (list(references).index(k[0]), k[1]))
    for model, seconds in keys:
        log_z, ref_se = references[model]
        row = dict(model=model, seconds=seconds)
        for method in METHODS:
            mine = [r for r in runs if (r["model"], r["seconds"], r["method"]) == (model, seconds, method)]
            if not mine:
                continue
            est = np.array([r["log_z"] for r in mine])
            se = np.hypot(np.array([r["log_z_se"] for r in mine]), ref_se)
            z = (est - log_z) / se
            printed = np.array([r["status"] in ("ok", "random_effects") for r in mine])
            covered = np.array([r["ci"][0] - 1.96 * ref_se <= log_z <= r["ci"][1] + 1.96 * ref_se for r in mine])
            row[method] = dict(
                n=len(mine),
                mse=float(np.mean((est - log_z) ** 2)),
                bias=float(np.mean(est - log_z)),
                mean_abs_z=float(np.mean(np.abs(z))),
                max_abs_z=float(np.max(np.abs(z))),
                covered=int(np.sum(covered & printed)),
                unprinted=int(np.sum(~printed)),
                overshoot=float(np.max([(r["wall"] - seconds) / seconds for r in mine])),
                statuses=dict(Counter(r["status"] for r in mine)),
                warnings=dict(Counter(_kind(w) for r in mine for w in set(r.get("warnings", [])))),
                setup=float(np.mean([r.get("setup", np.nan) for r in mine])),
                smc_share=float(
                    np.mean([sum(v for k, v in r.get("cost_share", {}).items() if k.startswith("smc")) for r in mine])
                ),
            )
        rows.append(row)
    return rows


def markdown(rows: list[dict], references: dict, args, command: str, elapsed: float) -> str:
    lines = [
        "## Evidence calibration suite: `estimate_evidence` vs repeated `pm.sample_smc` at equal wall time",
        "",
        f"- machine: {machine()}; {args.workers} worker process(es) side by side, each held to one core",
        f"- date: {utc_now()}; this run took {elapsed / 60:.0f} min",
        f"- command: `{command}`",
        f"- seeds per model and budget: {args.seeds}; budgets (wall seconds): {', '.join(f'{s:g}' for s in args.seconds)}",
        "- z = (log Ẑ - log Z) / sqrt(se² + se_ref²); 95 % intervals from `log_z_ci(0.95)` (pool) and "
        "mean ± 1.96 SE over chains (sample_smc); an interval the result did not print (status "
        "`too_few_observations` / `no_reliable_arm`) counts as not covering",
        "- goals: no |z| > 4; coverage 90-98 %; MSE(pool) <= MSE(sample_smc); wall overshoot <= 10 %",
        "",
        "| model | budget | pool: covered / n | not printed | mean abs z | max abs z | MSE pool | MSE sample_smc "
        "| SMC / pool | SMC covered | max overshoot | setup (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        p, s = row.get("pool"), row.get("sample_smc")
        if p is None:
            continue
        ratio = f"{s['mse'] / p['mse']:.3g}x" if s else "-"
        smc_cov = f"{s['covered']}/{s['n']}" if s else "-"
        lines.append(
            f"| {row['model']} | {row['seconds']:g} s | {p['covered']}/{p['n']} | {p['unprinted']} | "
            f"{p['mean_abs_z']:.2f} | {p['max_abs_z']:.2f} | {p['mse']:.3g} | {s['mse'] if s else float('nan'):.3g} | "
            f"{ratio} | {smc_cov} | {100 * p['overshoot']:+.1f} % | {p['setup']:.1f} |"
        )
    with_smc = [row for row in rows if row.get("pool_smc") and row.get("pool")]
    if with_smc:
        lines += [
            "",
            "With PyMC's SMC as an arm of the pool (`pool_smc`), beside the default pool:",
            "",
            "| model | budget | covered / n | max abs z | MSE pool_smc | MSE pool | pool_smc / pool | SMC arm's cost share |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in with_smc:
            q, p = row["pool_smc"], row["pool"]
            lines.append(
                f"| {row['model']} | {row['seconds']:g} s | {q['covered']}/{q['n']} | {q['max_abs_z']:.2f} | "
                f"{q['mse']:.3g} | {p['mse']:.3g} | {q['mse'] / p['mse']:.3g}x | {q['smc_share']:.1%} |"
            )
    lines += ["", "References: " + "; ".join(f"{m} {v[0]:.6f} ± {v[1]:.1g}" for m, v in references.items()), ""]
    lines.append("What the pool's runs reported (interval status counts; warnings by kind, count of runs):")
    lines.append("")
    for row in rows:
        p = row.get("pool")
        if p:
            warn = "; ".join(f"{k} ({v})" for k, v in sorted(p["warnings"].items())) or "none"
            lines.append(f"- {row['model']}, {row['seconds']:g} s: statuses {p['statuses']}; warnings: {warn}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, nargs="+", default=[15.0, 60.0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), choices=METHODS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="5 s runs, 2 seeds")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--rescore",
        type=Path,
        nargs="+",
        default=None,
        metavar="JSON",
        help="re-summarise the runs saved in these JSON files without running anything",
    )
    parser.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(MARK + json.dumps(worker(args.worker[0], args.worker[1], args.seconds[0], args.seed)))
        return 0
    from models.evidence_suite import SUITE

    names = args.models or list(SUITE)
    references = {}
    for name in names:
        m = SUITE[name]()
        references[name] = (float(m.log_z), float(m.log_z_se))
    if args.quick:
        args.seconds, args.seeds = [5.0], 2
    start = time.perf_counter()
    if args.rescore:
        runs = [r for path in args.rescore for r in json.loads(path.read_text())["runs"]]
        runs = [r for r in runs if r["model"] in references]
        args.seeds = max(Counter((r["model"], r["seconds"], r["method"]) for r in runs).values())
        args.seconds = sorted({r["seconds"] for r in runs})
    else:
        tasks = [
            (name, method, seconds, seed)
            for seed in range(args.first_seed, args.first_seed + args.seeds)
            for name in names
            for seconds in args.seconds
            for method in args.methods
        ]
        runs = []

        def one(task):
            out = in_fresh_process(*task)
            print(
                f"{task}: log Z = {out['log_z']:.5f} ± {out['log_z_se']:.2g} ({out['status']})",
                file=sys.stderr,
                flush=True,
            )
            return out

        with ThreadPoolExecutor(args.workers) as pool:
            runs = list(pool.map(one, tasks))
    rows = summarise(runs, references)
    command = ".venv/bin/python -m benchmarks.bench_evidence_suite " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = markdown(rows, references, args, command.strip(), time.perf_counter() - start)
    if not args.quick:
        out = args.out or RESULTS
        out.mkdir(parents=True, exist_ok=True)
        if args.out is None:
            write_section("bench_evidence_suite", text)
        else:
            (out / "bench_evidence_suite.md").write_text(text + "\n")
        if not args.rescore:
            (out / "bench_evidence_suite.json").write_text(
                json.dumps(dict(command=command.strip(), runs=runs), indent=1)
            )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
