"""What each warning of ``estimate_evidence`` is worth: its rate, and the coverage it predicts.

Run as ``.venv/bin/python -m benchmarks.bench_warnings`` (``--seconds``, ``--seeds``,
``--first-seed``, ``--models`` to choose; ``--rescore JSON ...`` to merge saved runs without
running anything). For every model of :data:`models.evidence_suite.SUITE`, budget and seed, one
FRESH Python process (held to one thread, one process at a time) runs
``estimate_evidence(model, budget=seconds, random_seed=seed)`` with every
:class:`~pmcbandit.exceptions.PmcBanditWarning` recorded and the ``pmcbandit`` logger at INFO.

Reported per budget:

* warnings per run (the issued ones, counted as the user sees them: a message issued twice counts
  twice) overall, per model, and on runs whose checks all pass (interval status ``ok``, the
  independent check ran where the pool has two estimator families, no arm quarantined);
* per warning kind (its ``topic``): the share of runs that carry it, and the coverage of the 95 %
  interval (``log_z_ci(0.95)``, the reference's own SE added in quadrature as in
  :mod:`benchmarks.bench_evidence_suite`; an interval not reported counts as not covering) among
  the runs with it and among those without it: a warning that does not predict a worse interval
  is a note, not a warning;
* whether the independent check ran (two families compared for consistency) on every model
  whose pool has two families.

The markdown is printed and written to ``benchmarks/results/bench_warnings.md``, the runs to
``benchmarks/out/bench_warnings.json`` (``--out``; not kept in the repository).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks._common import OUT, machine, utc_now, write_section

MARK = "RESULT "
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}


# --- one run (in its own process) ------------------------------------------------------------
def worker(model_name: str, seconds: float, seed: int) -> dict:
    import logging
    import warnings

    import pmcbandit  # noqa: F401  (configures PyTensor first)
    from models.evidence_suite import SUITE
    from pmcbandit.evidence.estimate import estimate_evidence
    from pmcbandit.exceptions import PmcBanditWarning

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    log = logging.getLogger("pmcbandit")
    log.setLevel(logging.INFO)
    log.addHandler(Keep())
    model = SUITE[model_name]().model
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = estimate_evidence(model, budget=seconds, random_seed=seed, progressbar=False)
    issued = [(w.category.__name__, str(w.message)) for w in caught if issubclass(w.category, PmcBanditWarning)]
    families = result.settings.get("families") or []
    compared = sorted({families[k] for k in result.consistency.compared if families[k] is not None})
    lo, hi = result.log_z_ci(0.95)
    return dict(
        log_z=result.log_z, log_z_se=result.log_z_se, ci=[lo, hi], status=result.interval_status,
        issued=issued, topics=[getattr(m, "topic", "") for m in result.warnings()],
        notes=list(result.notes), logged=records, pool_families=sorted(set(families) - {None}),
        compared_families=compared, quarantined=bool(result.quarantined.any()),
        pulls={str(a): int(n) for a, n in zip(result.arm_names, result.arm_table()["pulls"])},
        arm_status={str(a): str(s) for a, s in zip(result.arm_names, result.arm_status())},
    )


def in_fresh_process(model_name: str, seconds: float, seed: int) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.bench_warnings", "--worker", model_name, "--seconds", str(seconds),
           "--seed", str(seed)]
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, **SINGLE_THREAD)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=20 * seconds + 1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return dict(json.loads(lines[-1][len(MARK):]), model=model_name, seconds=seconds, seed=seed)


# --- the report ------------------------------------------------------------------------------
def _saved_runs(path: Path) -> list[dict]:
    """Runs saved by this benchmark (JSON with ``runs``) or the pool's runs of ``bench_evidence_suite``
    (its ``--jsonl`` file: one run a line, with ``method``; failed runs left out)."""
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [r for r in rows if r.get("method") == "pool" and "issued" in r]
    return json.loads(path.read_text())["runs"]


def covered(run: dict, references: dict) -> bool:
    log_z, ref_se = references[run["model"]]
    printed = run["status"] in ("ok", "random_effects")
    return bool(printed and run["ci"][0] - 1.96 * ref_se <= log_z <= run["ci"][1] + 1.96 * ref_se)


def check_ran(run: dict) -> bool | None:
    """Whether two families were compared (None: the pool has one family only)."""
    if len(run["pool_families"]) < 2:
        return None
    return len(run["compared_families"]) >= 2


def clean(run: dict) -> bool:
    """A run whose checks all pass: interval ``ok``, no quarantine, and the independent check ran (the
    default pool asks for two families: a pool the budget cut down to one has no check either)."""
    one_family_left = len(run["pool_families"]) < 2 and "independent_check" in run["topics"]
    return run["status"] == "ok" and check_ran(run) is not False and not one_family_left and not run["quarantined"]


def _rate(k: int, n: int) -> str:
    return f"{k}/{n}" if n else "-"


def markdown(runs: list[dict], references: dict, command: str, elapsed: float, caveat: str) -> str:
    budgets = sorted({r["seconds"] for r in runs})
    lines = [
        "## Warnings of `estimate_evidence`: their rate, and the coverage they predict",
        "",
        f"- machine: {machine()}; one run at a time, each a fresh process held to one thread",
        f"- date: {utc_now()}; this run took {elapsed / 60:.0f} min",
        f"- command: `{command}`",
        f"- {caveat}",
        "- coverage: the reference log Z inside `log_z_ci(0.95)` (widened by 1.96 x the reference's own SE); "
        "an interval not reported counts as not covering",
        "- goals: at 15 s at most 1 warning per run on average and 0 on runs whose checks all pass; at 60 s the "
        "independent check runs on every model whose pool has two families",
        "",
    ]
    for seconds in budgets:
        mine = [r for r in runs if r["seconds"] == seconds]
        seeds = sorted({r["seed"] for r in mine})
        n = len(mine)
        per_run = np.array([len(r["issued"]) for r in mine])
        clean_runs = [r for r in mine if clean(r)]
        clean_w = np.array([len(r["issued"]) for r in clean_runs])
        dup = sum(len(r["issued"]) - len({m for _, m in r["issued"]}) for r in mine)
        cov = sum(covered(r, references) for r in mine)
        lines += [
            f"### {seconds:g} s budget: {n} runs (seeds {seeds[0]}-{seeds[-1]}, {len(seeds)} per model)",
            "",
            f"- warnings per run: mean {per_run.mean():.2f}, max {per_run.max()}; runs with none: "
            f"{int(np.sum(per_run == 0))}/{n}; messages issued twice: {dup}",
            f"- runs whose checks all pass: {len(clean_runs)}/{n}, warnings on them: "
            f"{int(clean_w.sum()) if clean_w.size else 0} (mean {clean_w.mean() if clean_w.size else 0:.2f})",
            f"- notes per run (logged at INFO, never warned): mean {np.mean([len(r['notes']) for r in mine]):.2f}",
            f"- 95 % coverage of all runs: {cov}/{n}",
            "",
            "| model | runs | warnings / run | check ran (two families compared) | covered | statuses |",
            "|---|---|---|---|---|---|",
        ]
        for model in references:
            rows = [r for r in mine if r["model"] == model]
            if not rows:
                continue
            ran = [check_ran(r) for r in rows]
            ran_text = "one family" if all(x is None for x in ran) else _rate(sum(bool(x) for x in ran), len(ran))
            lines.append(f"| {model} | {len(rows)} | {np.mean([len(r['issued']) for r in rows]):.2f} | {ran_text} | "
                         f"{sum(covered(r, references) for r in rows)}/{len(rows)} | "
                         f"{dict(Counter(r['status'] for r in rows))} |")
        topics = sorted({t for r in mine for t in r["topics"]})
        lines += ["", "| warning kind (topic) | runs with it | covered with it | covered without it |",
                  "|---|---|---|---|"]
        if not topics:
            lines.append("| (none issued) | 0 | - | - |")
        for topic in topics:
            with_it = [r for r in mine if topic in r["topics"]]
            without = [r for r in mine if topic not in r["topics"]]
            hit = _rate(sum(covered(r, references) for r in with_it), len(with_it))
            miss = _rate(sum(covered(r, references) for r in without), len(without))
            lines.append(f"| {topic} | {len(with_it)}/{n} | {hit} | {miss} |")
        # A note's kind: its words before the first number or colon (the numbers differ from run to run).
        kinds = Counter(re.split(r"[0-9:(\[]", note, maxsplit=1)[0].strip()[:70] for r in mine for note in r["notes"])
        lines += ["", "Notes by kind (runs): " + "; ".join(f"{k} ({v})" for k, v in sorted(kinds.items())), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, nargs="+", default=[15.0, 60.0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--caveat", default="the machine was shared with other jobs while this ran: wall-time "
                                            "budgets buy fewer pulls than on an idle machine")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON file for the runs (default benchmarks/out/bench_warnings.json, not kept in the repository)")
    parser.add_argument("--rescore", type=Path, nargs="+", default=None, metavar="JSON",
                        help="summarise the runs saved in these JSON files (or bench_evidence_suite's --jsonl files) "
                             "without running anything")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(MARK + json.dumps(worker(args.worker, args.seconds[0], args.seed)))
        return 0
    from models.evidence_suite import SUITE

    names = args.models or list(SUITE)
    start = time.perf_counter()
    command = ".venv/bin/python -m benchmarks.bench_warnings " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.rescore:
        runs = [r for path in args.rescore for r in _saved_runs(path)]
        names = [m for m in SUITE if any(r["model"] == m for r in runs)]
    else:
        runs = []
        out = args.out or OUT / "bench_warnings.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for seconds in args.seconds:
                for name in names:
                    run = in_fresh_process(name, seconds, seed)
                    runs.append(run)
                    print(f"{name} {seconds:g} s seed {seed}: {run['status']}, {len(run['issued'])} warning(s) "
                          f"{run['topics']}", file=sys.stderr, flush=True)
                    out.write_text(json.dumps(dict(command=command.strip(), runs=runs), indent=1))
    references = {}
    for name in names:
        m = SUITE[name]()
        references[name] = (float(m.log_z), float(m.log_z_se))
    text = markdown(runs, references, command.strip(), time.perf_counter() - start, args.caveat)
    write_section("bench_warnings", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
