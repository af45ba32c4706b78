"""Evidence on Pima T=50: ``estimate_evidence`` against ``pm.sample_smc`` for the same wall time.

Run as ``.venv/bin/python -m benchmarks.bench_evidence_vs_smc`` (``--quick``
for a smoke run). For each seed and configuration, in that order (seeds outer, so drift in
machine speed hits every configuration alike), a FRESH Python process builds what it needs
(compilation is not timed), then spends ``--seconds`` of wall time and reports ``log Ẑ``:

``default``       ``estimate_evidence`` with the default pool (AIS 400/2000/8000, Laplace-t IS
                  with ν = 5 and ν = 20, prior IS), Thompson sampling, paired cost-aware reward, inverse variance
                  (per-arm loss ranges, App. B: Thompson's default);
``default-shared`` the same with one loss range shared by all arms (``ranges="shared"``);
``ais``           the same with the paper's AIS-only pool;
``smc-arm``       an SMC-only pool: :class:`~pmcbandit.arms.evidence.SMCArm` (one
                  ``pm.sample_smc`` chain per pull) under the bandit (biased-consistent);
``sample_smc``    what a PyMC user does: ``pm.sample_smc(model=m)`` with default settings
                  (IMH, 2000 draws, PyMC's default chains and cores) called repeatedly while
                  the wall clock is under the budget, the estimate being the mean of all its
                  chains' final ``log_marginal_likelihood`` (one untimed warm-up call first,
                  as the arms' compilation is untimed);
``single:<arm>``  each arm of the default pool alone (oracle policy): the best single arm in
                  hindsight is the one with the smallest MSE.

``--clock cpu`` (for a shared, loaded machine) replaces wall seconds by CPU seconds of the
process and its children (``os.times``; ``pm.sample_smc`` runs its chains in child processes):
``pmcbandit.CpuSeconds`` for the pools, and the same count for the ``pm.sample_smc`` loop.

Runtime at the defaults (11 configurations x 10 seeds x 60 s, plus about 20-30 s of imports
and compilation per process) is about 2.5 h on 2 cores.

MSE is against ``models.pima.REFERENCE_LOG_Z[T]`` (or, where that is missing, a long Laplace-t
importance-sampling reference computed here in its own process; its SE² is reported beside
the MSEs because it is a floor under every MSE). Goals: MSE(sample_smc) /
MSE(default) >= 300, and MSE(default) / min_k MSE(single k) <= 1.25. The markdown section is
printed and written to ``benchmarks/results/bench_evidence_vs_smc.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common import add_runs_dir, machine, run_file, utc_now

RESULTS = Path(__file__).resolve().parent / "results"
CONFIGS = (
    "default",
    "default-shared",
    "ais",
    "smc-arm",
    "sample_smc",
    "single:ais-400",
    "single:ais-2000",
    "single:ais-8000",
    "single:laplace-t",
    "single:laplace-t20",
    "single:prior-is",
)
SINGLE = {  # evidence_arms keyword arguments that build one arm of the default pool
    "ais-400": dict(ais_steps=(400,), laplace=False, prior=False),
    "ais-2000": dict(ais_steps=(2000,), laplace=False, prior=False),
    "ais-8000": dict(ais_steps=(8000,), laplace=False, prior=False),
    "laplace-t": dict(ais_steps=(), prior=False, laplace_proposals=((5.0, 1.2),)),
    "laplace-t20": dict(ais_steps=(), prior=False, laplace_proposals=((20.0, 1.1),)),
    "prior-is": dict(ais_steps=(), laplace=False),
}
MARK = "RESULT "


# --- one configuration, one seed (runs in its own process) --------------------------------------
def _final_log_ml(idata) -> list[float]:
    """Each chain's final ``log_marginal_likelihood`` (the last finite stage value)."""
    values = idata.sample_stats["log_marginal_likelihood"].values
    out = []
    for chain in values:
        flat = np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in np.ravel(chain)])
        flat = flat[np.isfinite(flat)]
        out.append(float(flat[-1]))
    return out


def _cpu_with_children() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_sample_smc(model, seconds: float, seed: int, clock: str, cores: int | None = None) -> dict:
    """``pm.sample_smc`` with PyMC's default settings (``cores`` aside: ``None`` is PyMC's default)
    called repeatedly while ``clock`` is under ``seconds``; the mean of its chains' final log ML."""
    import pymc as pm

    from pmcbandit.arms.evidence.smc import quiet_pymc

    rng = np.random.default_rng(seed)
    kwargs = {} if cores is None else {"cores": cores}
    with quiet_pymc():
        pm.sample_smc(model=model, progressbar=False, random_seed=int(rng.integers(2**31 - 1)), **kwargs)  # warm-up
        runs, calls = [], 0
        start, cpu0 = time.perf_counter(), _cpu_with_children()

        def used():
            return time.perf_counter() - start if clock == "wall" else _cpu_with_children() - cpu0

        while used() < seconds:
            idata = pm.sample_smc(model=model, progressbar=False, random_seed=int(rng.integers(2**31 - 1)), **kwargs)
            if used() <= seconds or not runs:
                runs += _final_log_ml(idata)
                calls += 1
    return dict(
        log_z=float(np.mean(runs)),
        log_z_se=float(np.std(runs, ddof=1) / np.sqrt(len(runs))),
        pulls={"sample_smc chains": len(runs)},
        calls=calls,
        wall=time.perf_counter() - start,
        cpu=_cpu_with_children() - cpu0,
    )


def run_pool(model, config: str, seconds: float, seed: int, clock: str) -> dict:
    import pmcbandit
    from pmcbandit.arms.evidence import SMCArm
    from pmcbandit.evidence.estimate import estimate_evidence, evidence_arms

    policy, kwargs, run_kwargs = "thompson", {}, {}
    if config in ("default", "default-shared"):
        arms = evidence_arms(model)
        if config == "default-shared":
            run_kwargs["ranges"] = "shared"
    elif config == "ais":
        arms = evidence_arms(model, laplace=False, prior=False)
    elif config == "smc-arm":
        arms = [SMCArm(model)]
    else:
        arms = evidence_arms(model, **SINGLE[config.split(":", 1)[1]])
        policy, kwargs = "oracle", {"arm": 0}
    budget = seconds if clock == "wall" else pmcbandit.CpuSeconds(seconds)
    start, cpu0 = time.perf_counter(), _cpu_with_children()
    result = estimate_evidence(
        model,
        arms=arms,
        policy=policy,
        budget=budget,
        random_seed=seed,
        progressbar=False,
        policy_kwargs=kwargs,
        **run_kwargs,
    )
    table = result.arm_table()
    spent = np.asarray(table["pulls"]) * np.asarray(table["cost"])
    return dict(
        log_z=result.log_z,
        log_z_se=result.log_z_se,
        pulls={str(a): int(n) for a, n in zip(table["arm"], table["pulls"])},
        cost_share={str(a): float(c / spent.sum()) for a, c in zip(table["arm"], spent)},
        wall=time.perf_counter() - start,
        cpu=_cpu_with_children() - cpu0,
    )


def worker(config: str, seed: int, seconds: float, T: int, reference_draws: int, clock: str = "wall") -> dict:
    import pmcbandit  # noqa: F401  (configures PyTensor first)
    from models import pima

    if config == "reference":
        from benchmarks.fig3_evidence import reference_log_z

        log_z, se, source = reference_log_z(T, reference_draws)
        return dict(log_z=log_z, se=se, source=source)
    model = pima.logistic_regression(*pima.load_data(T))
    if config == "sample_smc":
        return run_sample_smc(model, seconds, seed, clock)
    return run_pool(model, config, seconds, seed, clock)


def _stored_reference(T: int):
    from models import pima

    if T in pima.REFERENCE_LOG_Z:
        log_z, se = pima.REFERENCE_LOG_Z[T]
        return dict(log_z=float(log_z), se=float(se), source="models.pima.REFERENCE_LOG_Z")
    return None


def in_fresh_process(
    config: str, seed: int, seconds: float, T: int, reference_draws: int = 10**8, clock: str = "wall"
) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.bench_evidence_vs_smc",
        "--worker",
        config,
        "--seed",
        str(seed),
        "--seconds",
        str(seconds),
        "--T",
        str(T),
        "--reference-draws",
        str(reference_draws),
        "--clock",
        clock,
    ]
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=20 * seconds + 1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len(MARK) :])


# --- the report -----------------------------------------------------------------------------------
def summarise(rows: dict, log_z: float) -> dict:
    out = {}
    for config, runs in rows.items():
        est = np.array([r["log_z"] for r in runs])
        se = np.array([r["log_z_se"] for r in runs])
        err = est - log_z
        out[config] = dict(
            n=len(runs),
            mse=float(np.mean(err**2)),
            bias=float(err.mean()),
            bias_se=float(err.std(ddof=1) / np.sqrt(len(runs))) if len(runs) > 1 else float("nan"),
            sd=float(est.std(ddof=1)) if len(runs) > 1 else float("nan"),
            mean_se=float(se.mean()),
            cover=float(np.mean(np.abs(err) <= 1.96 * se)),
            wall=float(np.mean([r["wall"] for r in runs])),
            cpu=float(np.mean([r["cpu"] for r in runs])),
            pulls={k: float(np.mean([r["pulls"].get(k, 0) for r in runs])) for k in runs[0]["pulls"]},
            mean_se2=float(np.mean(se**2)),
            sq_err=err**2,
            se2=se**2,
            cost_share={
                k: float(np.mean([r.get("cost_share", {}).get(k, np.nan) for r in runs]))
                for k in runs[0].get("cost_share", {})
            },
        )
    return out


def ratio_interval(num: np.ndarray, den: np.ndarray, level: float = 0.95, draws: int = 20_000) -> tuple:
    """Percentile bootstrap interval of mean(num) / mean(den), resampling each sample's seeds.

    The two configurations ran with the same seeds but independent randomness inside, so the
    resampling is independent per configuration. Fixed generator: the report is reproducible.
    """
    rng = np.random.default_rng(20141)
    a = num[rng.integers(0, num.size, (draws, num.size))].mean(axis=1)
    b = den[rng.integers(0, den.size, (draws, den.size))].mean(axis=1)
    q = np.quantile(a / b, [(1 - level) / 2, (1 + level) / 2])
    return float(q[0]), float(q[1])


def markdown(stats, ref, args, command, elapsed, sources=()) -> str:
    import pymc

    lines = [
        f"## Evidence on Pima T={args.T}: estimate_evidence vs pm.sample_smc, {args.seconds:g} s {args.clock} each",
        "",
        f"- machine: {machine()}; Python {platform.python_version()}, PyMC {pymc.__version__}",
        f"- date: {utc_now()}; total {elapsed / 60:.1f} min",
        f"- command: `{command}`",
        *(f"- runs re-scored from {src}" for src in sources),
        f"- scale: {'up to ' if sources else ''}{args.seeds} seeds x {len(stats)} configurations (runs per "
        "configuration in the table), each in a fresh process "
        f"(seeds outer); {args.seconds:g} s {args.clock} budget per run (compilation untimed)",
        f"- reference log Z = {ref['log_z']:.6f} ± {ref['se']:.1e} ({ref['source']}); reference SE² = "
        f"{ref['se'] ** 2:.2e} is a floor under every MSE below",
        "",
        "| configuration | runs | MSE of log Ẑ | bias ± se | sd | mean reported se | 95% CI covers | "
        "mean wall s | mean CPU s | mean pulls |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for config, s in stats.items():
        pulls = ", ".join(f"{k} {v:.0f}" for k, v in s["pulls"].items())
        lines.append(
            f"| {config} | {s['n']} | {s['mse']:.3g} | {s['bias']:+.2e} ± {s['bias_se']:.1e} | "
            f"{s['sd']:.2e} | {s['mean_se']:.2e} | {s['cover']:.0%} | {s['wall']:.1f} | {s['cpu']:.1f} | {pulls} |"
        )
    lines.append("")
    d = stats.get("default")
    if d and "sample_smc" in stats:
        lines.append(
            f"- MSE(sample_smc) / MSE(default pool) = {stats['sample_smc']['mse'] / d['mse']:.0f}x (goal >= 300x)"
        )
    for other in ("default-shared", "ais", "smc-arm"):
        if d and other in stats:
            lines.append(f"- MSE({other}) / MSE(default pool) = {stats[other]['mse'] / d['mse']:.1f}x")
    singles = {k: v["mse"] for k, v in stats.items() if k.startswith("single:")}
    if singles:
        best = min(singles, key=singles.get)
        b = stats[best]
        lines.append(f"- best single arm in hindsight: {best} (MSE {singles[best]:.3g})")
        for name in ("default", "default-shared"):
            if name not in stats:
                continue
            d = stats[name]
            lo, hi = ratio_interval(d["sq_err"], b["sq_err"])
            lines.append(
                f"- MSE({name}) / MSE(best single) = {d['mse'] / singles[best]:.2f} (goal <= 1.25; "
                f"bootstrap 95% interval over seeds [{lo:.2f}, {hi:.2f}])"
            )
            lo, hi = ratio_interval(d["se2"], b["se2"])
            lines.append(
                f"- the same ratio from each run's own variance estimate, mean se² ({name}) / mean se² "
                f"({best}) = {d['mean_se2'] / b['mean_se2']:.2f} [{lo:.2f}, {hi:.2f}]: an estimate of the "
                "ratio of expected MSEs with far less seed noise than squared errors of heavy-tailed "
                "estimates"
            )
            # Every run is scored against the same reference: its own error is common to all of
            # them, so it adds its SE to a bias and cancels from a difference of biases.
            tot = np.hypot(d["bias_se"], ref["se"])
            diff, diff_se = d["bias"] - b["bias"], np.hypot(d["bias_se"], b["bias_se"])
            lines.append(
                f"- bias of {name} against the reference, counting the reference's SE: {d['bias']:+.2e} ± "
                f"{tot:.1e} ({abs(d['bias']) / tot:.1f} SE); minus {best}'s (the reference cancels): "
                f"{diff:+.2e} ± {diff_se:.1e} ({abs(diff) / diff_se:.1f} SE)"
            )
            arm = best.split(":", 1)[1]
            if arm in d["cost_share"] and np.isfinite(d["cost_share"][arm]):
                lines.append(
                    f"- share of {name}'s spent cost on {arm}: {d['cost_share'][arm]:.1%} "
                    f"(1 / share = {1 / d['cost_share'][arm]:.2f}, the MSE ratio if the other arms "
                    "contributed nothing)"
                )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="wall seconds per run (default 60)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument(
        "--first-seed",
        type=int,
        default=0,
        help="run seeds first-seed .. first-seed + seeds - 1 (to extend an earlier run)",
    )
    parser.add_argument("--T", type=int, default=50)
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="budget in wall seconds (default) or CPU seconds incl. children",
    )
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument(
        "--reference-draws",
        type=int,
        default=10**8,
        help="Laplace-t draws for a reference when models.pima.REFERENCE_LOG_Z lacks T",
    )
    parser.add_argument("--quick", action="store_true", help="3 s runs, 2 seeds, 4 configurations")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--rescore",
        type=Path,
        nargs="+",
        default=None,
        metavar="JSON",
        help="re-summarise the runs saved in one or more JSON files (merged per "
        "configuration) against models.pima.REFERENCE_LOG_Z (when it has T) "
        "without running anything",
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    add_runs_dir(parser)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(MARK + json.dumps(worker(args.worker, args.seed, args.seconds, args.T, args.reference_draws, args.clock)))
        return 0
    if args.quick:
        args.seconds, args.seeds, args.configs = (
            3.0,
            2,
            ["default", "sample_smc", "single:laplace-t", "single:laplace-t20"],
        )
        args.reference_draws = min(args.reference_draws, 10**6)
    start = time.perf_counter()
    sources = []
    if args.rescore is not None:
        rows = {}
        for path in args.rescore:
            saved = json.loads(path.read_text())
            for config, runs in saved["runs"].items():
                rows.setdefault(config, []).extend(runs)
            sources.append(f"`{path}` from `{saved.get('command', 'command not recorded')}`")
        ref, args.configs = saved["reference"], list(rows)
        ref = _stored_reference(args.T) or ref
        args.seeds = max(len(r) for r in rows.values())
        args.seconds, args.clock = saved.get("seconds", args.seconds), saved.get("clock", args.clock)
    else:
        ref = in_fresh_process("reference", 0, args.seconds, args.T, args.reference_draws)
        rows = {c: [] for c in args.configs}
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for config in args.configs:
                rows[config].append(in_fresh_process(config, seed, args.seconds, args.T, clock=args.clock))
                print(f"seed {seed} {config}: log Z = {rows[config][-1]['log_z']:.5f}", file=sys.stderr, flush=True)
    stats = summarise(rows, ref["log_z"])
    command = ".venv/bin/python -m benchmarks.bench_evidence_vs_smc " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = markdown(stats, ref, args, command.strip(), time.perf_counter() - start, sources)
    out = args.out or (RESULTS if not args.quick else None)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench_evidence_vs_smc.md").write_text(text + "\n")
        run_file(args.runs_dir, "bench_evidence_vs_smc.json").write_text(
            json.dumps(
                dict(command=command.strip(), reference=ref, seconds=args.seconds, clock=args.clock, runs=rows),
                indent=1,
            )
        )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
