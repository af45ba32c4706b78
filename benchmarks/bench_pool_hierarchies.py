"""The default evidence pool on two hierarchical models at fixed budgets: its standard error and z.

``estimate_evidence(model, budget=T)`` with nothing else set (set-up inside the budget), each run a
fresh single-threaded process, on

``hierarchical_normal_100`` (:mod:`models.evidence_suite`, dim 102) at 30 s
    exact log Z by quadrature;
``gamma_poisson20`` (:mod:`benchmarks.bench_ais_hmc`, dim 22) at 20 s
    exact log Z by quadrature.

Reported per model: the runs' mean and largest standard error, the largest \\|z\\| against the
exact value, the runs within 1.96 of their standard errors, the interval statuses and the pulls per arm of
the first run; then, grouped by the arm with the largest combination weight in each run, that arm's weight
and Pareto k-hat and the z of the runs it carried. Beside each run's own (inverse-variance) combination, the
uniform combiner and the cross-fitted one on the same pulls (``result.recombined(method)``,
:data:`OTHER_COMBINERS`) are scored too: they differ where the arms' estimated variances move with their means
(``benchmarks/bench_combine_skew.py``).

    .venv/bin/python -m benchmarks.bench_pool_hierarchies --seeds 4 --workers 2
    .venv/bin/python -m benchmarks.bench_pool_hierarchies --models gamma_poisson20 --seeds 20 --workers 2 \
        --name bench_pool_hierarchies_vm     # one model, written to a results file of its own
    .venv/bin/python -m benchmarks.bench_pool_hierarchies --from-json runs_a.json runs_b.json  # compare recorded runs

``--from-json`` runs nothing: for each recorded file, model and combination it prints coverage, mean z, mean se, the
spread of log Ẑ across the runs and their root-mean-square, median and largest absolute error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks._common import machine, run_fresh, utc_now, write_section

#: Combiners scored on each run's pulls beside its own (:func:`pmcbandit.stats.combine.combine`).
OTHER_COMBINERS = ("uniform", "cross_fitted")
BUDGETS = {"hierarchical_normal_100": 30.0, "gamma_poisson20": 20.0}
#: Budget of the untimed warm-up run of each model.
WARM_SECONDS = 5.0


def model_and_log_z(name: str):
    """The PyMC model and its exact log Z."""
    if name == "gamma_poisson20":
        from benchmarks import bench_ais_hmc

        return bench_ais_hmc.gp_model(), bench_ais_hmc.gp_log_z()[0]
    from models.evidence_suite import SUITE

    suite = SUITE[name]()
    return suite.model, suite.log_z


def run(name: str, seed: int, budget: float | None = None) -> dict:
    """One default-pool run (in this process); ``budget`` replaces the model's (a warm-up run)."""
    import warnings

    import pmcbandit as pb

    model, log_z = model_and_log_z(name)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pb.estimate_evidence(model, budget=BUDGETS[name] if budget is None else budget, random_seed=seed,
                                   progressbar=False)
    table = res.arm_table()
    others = {}
    for method in OTHER_COMBINERS:  # the same pulls read through another combination, beside the run's own
        other = res.recombined(method)
        others.update({f"z_{method}": (other.log_z - log_z) / other.log_z_se, f"se_{method}": other.log_z_se})
    return dict(model=name, seed=seed, log_z=res.log_z, se=res.log_z_se, z=(res.log_z - log_z) / res.log_z_se,
                **others, status=res.interval_status, wall=time.perf_counter() - start,
                topics=[m.topic for m in res.warnings()],
                pulls={str(a): int(n) for a, n in zip(table["arm"], table["pulls"])},
                weight={str(a): float(w) for a, w in zip(table["arm"], table["weight"])},
                khat={str(a): float(k) for a, k in zip(table["arm"], table["khat"])})


def _fresh(name: str, seed: int, budget: float | None = None) -> dict:
    job = f"{name}:{seed}" if budget is None else f"{name}:{seed}:{budget}"
    return run_fresh("benchmarks.bench_pool_hierarchies", ["--worker", job],
                     dict(model=name, seed=seed, log_z=float("nan"), se=float("nan"), z=float("nan"),
                          wall=float("nan"), topics=[], pulls={}, weight={}, khat={}))


def compare_files(paths, command: str) -> str:
    """A table of the runs recorded in ``paths`` (``--json`` files), one row per file, model and combination (the run's
    own, and each of :data:`OTHER_COMBINERS` the file recorded): coverage, mean z, mean se, the spread of log Ẑ across
    the runs, and their root-mean-square, median and largest absolute error against the exact log Z (each run's error
    is its z times its se), so that pools of different commits, and combinations of the same pulls, are compared on the
    same footing. A run without a finite z (a failed process) is left out of its row; the spread of one run is NaN.
    """
    lines = ["## Recorded runs compared (`bench_pool_hierarchies --from-json`)", "",
             f"- date: {utc_now()}; command: `{command}` (reads the files, runs nothing)",
             "- error of a run: log Ẑ - log Z = z x se; RMS error: the root of their mean square", "",
             "| run file | model | combination | runs | covered (abs z < 1.96) | mean z | mean se | sd of log Ẑ | "
             "RMS error | median abs error | largest abs error |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for path in paths:
        recorded = json.loads(Path(path).read_text())
        for name in dict.fromkeys(r["model"] for r in recorded):
            for label, z_key, se_key in (("own", "z", "se"), *((m, f"z_{m}", f"se_{m}") for m in OTHER_COMBINERS)):
                mine = [r for r in recorded if r["model"] == name and np.isfinite(r.get(z_key, math.nan))]
                if not mine:
                    continue
                z = np.array([r[z_key] for r in mine])
                se = np.array([r[se_key] for r in mine])
                err = z * se
                lines.append(
                    f"| `{Path(path).name}` | {name} | {label} | {len(mine)} | {int(np.sum(np.abs(z) < 1.96))}/{len(mine)} "
                    f"| {z.mean():+.2f} | {se.mean():.3g} | {err.std(ddof=1) if len(mine) > 1 else math.nan:.3g} | "
                    f"{np.sqrt(np.mean(err ** 2)):.3g} | {np.median(np.abs(err)):.3g} | {np.abs(err).max():.3g} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1, help="runs side by side, one process each")
    parser.add_argument("--no-warm", dest="warm", action="store_false",
                        help="skip the short run of each model that fills the compile caches before the timed runs")
    parser.add_argument("--json", type=Path, default=None, help="also write every run to this file")
    parser.add_argument("--models", default=",".join(BUDGETS), help="comma-separated subset of the models")
    parser.add_argument("--name", default="bench_pool_hierarchies", help="results file name (without .md)")
    parser.add_argument("--from-json", type=Path, nargs="+", default=None, metavar="FILE",
                        help="run nothing: compare the runs recorded in these files (written by --json)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        name, seed, *budget = args.worker.split(":")
        print(json.dumps(run(name, int(seed), float(budget[0]) if budget else None)))
        return ""
    command = "python -m benchmarks.bench_pool_hierarchies " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        md = compare_files(args.from_json, command)
        print(md)
        return md
    models = [m for m in args.models.split(",") if m]
    unknown = sorted(set(models) - set(BUDGETS))
    if unknown:
        parser.error(f"unknown models {unknown}; known: {sorted(BUDGETS)}")
    jobs = [(name, seed) for seed in range(args.seeds) for name in models]
    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        if args.warm:  # PyTensor's and numba's caches filled once, so no timed run waits on a compile lock
            list(pool.map(lambda name: _fresh(name, 0, WARM_SECONDS), models))
        runs = list(pool.map(lambda job: _fresh(*job), jobs))
    if args.json is not None:
        args.json.write_text(json.dumps(runs, indent=1))
    lines = [f"## The default evidence pool on hierarchical models (`{args.name}`)", "",
             f"- machine: {machine()}; {args.workers} run(s) side by side, each a fresh single-threaded process",
             f"- date: {utc_now()}; command: `{command}`",
             "- `estimate_evidence(model, budget=T)`, set-up inside the budget (compile caches filled by one "
             "untimed short run of each model first, unless `--no-warm`); z against the exact log Z",
             "- the other combiners' columns: the same runs' pulls read by `result.recombined(method)`, the "
             "plain average (`uniform`, Neufeld et al. 2014, Thm 1) and the inverse-variance combination with "
             "cross-fitted weights (`cross_fitted`, `pmcbandit.stats.combine`) beside the run's own inverse-variance "
             "combination, scored the same way (`log_z`, `log_z_se` of that reading; a file without these columns shows "
             "NaN)", "",
             "| model | budget | runs | mean se | largest se | largest abs z | covered (abs z < 1.96) | mean z | "
             + " | ".join(f"{m}: covered, mean z, mean se" for m in OTHER_COMBINERS) + " | statuses | warnings (runs) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|" + "---|" * len(OTHER_COMBINERS) + "---|---|"]
    for name in models:
        budget = BUDGETS[name]
        mine = [r for r in runs if r["model"] == name]
        se = np.array([r["se"] for r in mine])
        z = np.abs([r["z"] for r in mine])
        statuses = {s: sum(r["status"] == s for r in mine) for s in dict.fromkeys(r["status"] for r in mine)}
        topics = {t: sum(t in r["topics"] for r in mine) for t in dict.fromkeys(t for r in mine for t in r["topics"])}
        cells = []
        for method in OTHER_COMBINERS:
            zo = np.array([r.get(f"z_{method}", math.nan) for r in mine])
            seo = np.array([r.get(f"se_{method}", math.nan) for r in mine])
            cells.append(f"{int(np.sum(np.abs(zo) < 1.96))}/{len(mine)}, {np.mean(zo):+.2f}, {np.mean(seo):.3g}")
        lines.append(f"| {name} | {budget:g} s | {len(mine)} | {np.mean(se):.3g} | {np.max(se):.3g} | "
                     f"{np.max(z):.2f} | {int(np.sum(z < 1.96))}/{len(mine)} | "
                     f"{np.mean([r['z'] for r in mine]):+.2f} | {' | '.join(cells)} | {statuses} | {topics or 'none'} |")
    lines += ["", "The arm with the largest combination weight in each run, and the runs it carried:", "",
              "| model | arm | runs | its weight | its Pareto k-hat | covered (abs z < 1.96) | mean z | largest abs z |",
              "|---|---|---:|---|---|---:|---:|---:|"]
    for name in models:
        mine = [r for r in runs if r["model"] == name and r.get("weight")]
        lead = [max(r["weight"], key=r["weight"].get) for r in mine]
        for arm in dict.fromkeys(lead):
            rs = [r for r, a in zip(mine, lead) if a == arm]
            w = [r["weight"][arm] for r in rs]
            k = [r["khat"][arm] for r in rs]
            z = np.array([r["z"] for r in rs])
            lines.append(f"| {name} | {arm} | {len(rs)} | {min(w):.2f}-{max(w):.2f} | {np.nanmin(k):.2f}-{np.nanmax(k):.2f} | "
                         f"{int(np.sum(np.abs(z) < 1.96))}/{len(rs)} | {z.mean():+.2f} | {np.abs(z).max():.2f} |")
    lines += ["", "Pulls per arm, first run of each model: " + "; ".join(
        f"{r['model']}: {r['pulls']}" for r in runs if r["seed"] == 0)]
    md = "\n".join(lines) + "\n"
    write_section(args.name, md)
    print(md)
    return md


if __name__ == "__main__":
    main()
