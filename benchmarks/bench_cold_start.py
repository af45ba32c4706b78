"""The first run in a fresh environment: ``estimate_evidence`` with numba's cache empty.

Each run is a fresh single-threaded process with ``NUMBA_CACHE_DIR`` pointing at an empty folder, so every numba
kernel it calls is compiled inside the call (PyTensor's compile cache is left as it is: warm after the first run
of the model). Reported per run: the wall time of the call against its budget, the set-up seconds the run's note
reports, the pulls and the interval status. ``--src`` runs another checkout of the package beside this one, the
runs interleaved, for a side-by-side comparison of two versions in one run. ``--warm-up`` adds, per run, this
checkout's first call after ``pmcbandit warm-up`` (run in a process of its own on the same empty cache, as
``make install`` does): what a user's first run costs after installing with ``make``.

    .venv/bin/python -m benchmarks.bench_cold_start --runs 3
    .venv/bin/python -m benchmarks.bench_cold_start --runs 3 --src /tmp/previous   # a worktree of another commit
    .venv/bin/python -m benchmarks.bench_cold_start --runs 1 --src /tmp/previous --warm-up
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._common import machine, run_fresh, utc_now, write_section

ROOT = Path(__file__).resolve().parent.parent
MODEL = "conjugate"
BUDGET = 5.0


def _worker(src: str, warm_up: bool = False) -> None:
    import time
    import warnings

    sys.path.insert(0, src)  # the checkout under test, before this one
    import pmcbandit as pb

    if warm_up:  # what `pmcbandit warm-up` (make install) does, in a process of its own before this one
        return print(json.dumps(dict(warm_up=__import__("pmcbandit.evidence.warm_up", fromlist=["warm_up"]).warm_up())))
    from numba.core import event

    from models.evidence_suite import SUITE

    compiling = _compile_listener()
    event.register("numba:compile", compiling)
    model = SUITE[MODEL]().model
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pb.estimate_evidence(model, budget=BUDGET, random_seed=0, progressbar=False)
    wall = time.perf_counter() - start
    print(json.dumps(dict(wall=wall, setup=res.settings.get("setup_seconds", float("nan")), pulls=len(res.history),
                          status=res.interval_status, package=pb.__file__, compile_cpu=compiling.seconds,
                          kernels=compiling.kernels, per_kernel=compiling.per_kernel)))


def _compile_listener():
    """A numba event listener (``numba.core.event``) adding up the process CPU seconds of the outermost
    ``numba:compile`` events, and counting them: what compiling the kernels costs, whatever else the machine runs.
    """
    import time

    from numba.core import event

    class CompileCPU(event.Listener):
        def __init__(self):
            self.depth, self.seconds, self.kernels, self._start = 0, 0.0, 0, 0.0
            self.per_kernel = {}

        def on_start(self, ev) -> None:
            if self.depth == 0:
                self._start = time.process_time()
            self.depth += 1

        def on_end(self, ev) -> None:
            self.depth -= 1
            if self.depth == 0:
                took = time.process_time() - self._start
                self.seconds += took
                self.kernels += 1
                fn = ev.data["dispatcher"].py_func
                name = f"{fn.__module__}.{fn.__qualname__}"
                self.per_kernel[name] = self.per_kernel.get(name, 0.0) + took

    return CompileCPU()


def _one(src: Path, warm_up: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        before = {}
        if warm_up:
            before = run_fresh("benchmarks.bench_cold_start", ["--worker", str(src), "--warm-up"], {},
                               env=dict(NUMBA_CACHE_DIR=cache))
        return dict(run_fresh("benchmarks.bench_cold_start", ["--worker", str(src)], {},
                              env=dict(NUMBA_CACHE_DIR=cache)), **before)


def _commit(src: Path) -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=src)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                           cwd=src).stdout.strip()
    return (out.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--src", type=Path, default=None, help="another checkout, run beside this one")
    parser.add_argument("--warm-up", action="store_true",
                        help="also the first run after `pmcbandit warm-up` on the empty cache (this checkout only)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.worker, args.warm_up)
        return ""
    sources = [ROOT] + ([args.src.resolve()] if args.src else [])
    rows = []
    for i in range(args.runs):
        for src in sources:
            row = dict(_one(src), src=src, run=i)
            if "package" in row and not row["package"].startswith(str(src)):
                raise RuntimeError(f"the run of {src} imported pmcbandit from {row['package']}")
            rows.append(row)
        if args.warm_up:
            rows.append(dict(_one(ROOT, warm_up=True), src=ROOT, run=i))
    command = "python -m benchmarks.bench_cold_start " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["## The first run in a fresh environment (`bench_cold_start`)", "",
             f"- machine: {machine()}; one run at a time, each a fresh single-threaded process",
             f"- date: {utc_now()}; command: `{command}`",
             f"- `estimate_evidence(<{MODEL} model of the suite>, budget={BUDGET:g}, random_seed=0)` with numba's cache "
             "empty (`NUMBA_CACHE_DIR` a new empty folder per run); PyTensor's compile cache as it is", "",
             "- numba compile CPU: the process CPU seconds of the outermost `numba:compile` events in the call (a "
             "`numba.core.event` listener), and how many kernels they compiled: the part of the set-up that does not "
             "depend on what else the machine runs", "",
             "| version | run | wall of the call (s) | set-up the run reports (s) | numba compile CPU (s) | kernels | "
             "pulls | status |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        label = _commit(r["src"]) + (" (this checkout)" if r["src"] == ROOT else "")
        if "warm_up" in r:
            label += f", after `pmcbandit warm-up` ({r['warm_up']:.1f} s)"
        if "wall" in r:
            lines.append(f"| {label} | {r['run']} | {r['wall']:.1f} | {r['setup']:.1f} | {r['compile_cpu']:.1f} | "
                         f"{r['kernels']} | {r['pulls']} | {r['status']} |")
        else:
            lines.append(f"| {label} | {r['run']} | - | - | - | - | - | {r['status']} |")
    first = next((r for r in rows if r["src"] == ROOT and "per_kernel" in r), None)
    if first is not None:
        lines += ["", f"Numba compile CPU per kernel, this checkout's run {first['run']} (s): " + "; ".join(
            f"`{name.rsplit('.', 1)[-1]}` {sec:.2f}" for name, sec in sorted(first["per_kernel"].items(),
                                                                           key=lambda kv: -kv[1]))]
    md = "\n".join(lines) + "\n"
    write_section("bench_cold_start", md)
    print(md)
    return md


if __name__ == "__main__":
    main()
