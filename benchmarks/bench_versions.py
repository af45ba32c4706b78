"""The evidence suite on two installs side by side: PyMC 6 / PyTensor 3 / ArviZ 1 beside PyMC 5 / PyTensor 2 /
ArviZ 0.x, in one table (coverage, MSE of log Z-hat, mean set-up seconds, largest |z|).

Run as::

    .venv/bin/python -m benchmarks.bench_versions --python .venv/bin/python .venv-oldest/bin/python \\
        --seconds 15 --seeds 10

Each interpreter (a virtual environment with pmcbandit installed, e.g. the two that ``.ci/run`` builds) runs
:mod:`benchmarks.bench_evidence_suite` with ``--methods pool --workers 1`` at the same time as the others, one
core each, so drift in the machine's speed hits every install alike; every run is a fresh process timed from
the call to the answer (set-up, i.e. PyTensor's compile, numba's kernels and the mode search, counted). The run
logs go to ``--runs-dir`` (one ``.jsonl`` per install, resumable); the table is written to
``benchmarks/results/bench_versions.md`` with machine, date, command and commit. ``--from-runs`` rebuilds the
table from logs already there.

``--cold MODEL ...`` adds the set-up of a first call on an empty cache: for each install, side by side, one run
per model in a fresh process whose PyTensor compiledir and numba cache (``NUMBA_CACHE_DIR``) are new, empty
folders, so PyTensor's compile of the model and every numba kernel the run uses are paid in it, as on a fresh
install. (The suite's own runs share a compiledir warmed before them, as a user's second call would.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._common import add_runs_dir, machine, run_file, utc_now, write_section
from benchmarks.bench_evidence_suite import MARK, read_runs, summarise

VERSIONS = ("import sys, pymc, pytensor, arviz, numba; print(f'Python {sys.version.split()[0]}, PyMC {pymc.__version__}, "
            "PyTensor {pytensor.__version__}, ArviZ {arviz.__version__}, numba {numba.__version__}')")


def versions(python: str) -> str:
    """The library versions of an interpreter, as ``make test`` prints them."""
    return subprocess.run([python, "-c", VERSIONS], capture_output=True, text=True, check=True).stdout.strip()


def log_path(runs_dir: Path, python: str) -> Path:
    """The run log of one install, in a folder of its own named by its interpreter's path (the suite's own
    table and run file go beside it)."""
    return run_file(runs_dir / ("bench_versions_" + python.strip("/").replace("/", "_").replace(".", "_")),
                    "runs.jsonl")


def cold_setup(pythons: list[str], models: list[str], seconds: float) -> dict[str, dict[str, float]]:
    """Set-up seconds of one ``estimate_evidence`` run per model on empty caches, each install in its own
    process at the same time as the others (one core each)."""
    out: dict[str, dict[str, float]] = {python: {} for python in pythons}
    for model in models:
        with tempfile.TemporaryDirectory() as tmp:
            procs = {}
            for i, python in enumerate(pythons):
                env = dict(os.environ, NUMBA_CACHE_DIR=f"{tmp}/numba{i}", PYTENSOR_FLAGS=f"compiledir={tmp}/pt{i}",
                           OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
                procs[python] = subprocess.Popen(
                    [python, "-m", "benchmarks.bench_evidence_suite", "--worker", model, "pool", "--seconds",
                     str(seconds), "--seed", "0"], env=env, stdout=subprocess.PIPE, text=True)
            for python, proc in procs.items():
                lines = [ln for ln in proc.communicate()[0].splitlines() if ln.startswith(MARK)]
                out[python][model] = json.loads(lines[-1][len(MARK):])["setup"] if lines else float("nan")
    return out


def table(rows_by_install: dict[str, list[dict]]) -> str:
    """One row per model, each install's coverage, MSE, mean set-up and largest |z| side by side."""
    installs = list(rows_by_install)
    head = "| model | " + " | ".join(f"{k}: covered | MSE | set-up s | max \\|z\\|" for k in installs) + " |"
    lines = [head, "|---|" + "---|---|---|---|" * len(installs)]
    models = [r["model"] for r in next(iter(rows_by_install.values()))]
    for model in models:
        cells = []
        for k in installs:
            row = next((r for r in rows_by_install[k] if r["model"] == model), None)
            pool = (row or {}).get("pool")
            if pool is None:
                cells.append("- | - | - | -")
                continue
            cells.append(f"{pool['covered']}/{pool['n']} | {pool['mse']:.2e} | {pool['setup']:.2f} | "
                         f"{pool['max_abs_z']:.2f}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", nargs="+", required=True, help="the interpreters of the installs to compare")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--from-runs", action="store_true", help="only rebuild the table from the run logs")
    parser.add_argument("--cold", nargs="*", default=None, metavar="MODEL",
                        help="also the set-up of a first run on empty caches, per model")
    add_runs_dir(parser)
    args = parser.parse_args(argv)
    from models.evidence_suite import SUITE

    names = args.models or list(SUITE)
    references = {n: (float(SUITE[n]().log_z), float(SUITE[n]().log_z_se)) for n in names}
    logs = {python: log_path(args.runs_dir, python) for python in args.python}
    if not args.from_runs:
        procs = [subprocess.Popen([python, "-m", "benchmarks.bench_evidence_suite", "--methods", "pool", "--workers",
                                   "1", "--seconds", str(args.seconds), "--seeds", str(args.seeds), "--models", *names,
                                   "--jsonl", str(log), "--out", str(log.parent), "--runs-dir", str(log.parent)])
                 for python, log in logs.items()]
        if any(p.wait() for p in procs):
            print("an install's suite failed; the table reads what its log holds", file=sys.stderr)
    rows = {}
    for python, log in logs.items():
        runs = [r for r in read_runs(log) if r["model"] in references and r["method"] == "pool"]
        rows[versions(python)] = summarise(runs, {n: references[n] for n in names if any(r["model"] == n
                                                                                          for r in runs)})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    command = "python -m benchmarks.bench_versions " + " ".join(sys.argv[1:] if argv is None else argv)
    text = (f"# The evidence suite on PyMC 6 beside PyMC 5\n\nDate: {utc_now()}; machine: {machine()}; commit "
            f"{commit}; command: `{command}`. Each install ran `bench_evidence_suite --methods pool --workers 1` "
            f"({args.seconds:g} s from the call to the answer, set-up counted, a fresh process per run) at the "
            "same time as the other, one core each. Covered: 95 % intervals printed and covering the reference; "
            "MSE of log Z-hat against the suite's reference; set-up: mean seconds before the first pull.\n\n"
            + table(rows) + "\n")
    if args.cold:
        cold = cold_setup(args.python, args.cold, args.seconds)
        names_by_python = {python: versions(python) for python in args.python}
        text += ("\nSet-up seconds of a first run on empty caches (a new PyTensor compiledir and numba cache; "
                 f"`--cold`, one run per model, {args.seconds:g} s budget, the installs side by side):\n\n"
                 "| model | " + " | ".join(names_by_python[p] for p in args.python) + " |\n"
                 "|---|" + "---|" * len(args.python) + "\n"
                 + "".join(f"| {m} | " + " | ".join(f"{cold[p][m]:.2f}" for p in args.python) + " |\n"
                           for m in args.cold))
    print(text)
    write_section("bench_versions", text)
    print(json.dumps({k: len(v) for k, v in rows.items()}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
