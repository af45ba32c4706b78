"""Set-up and time to an answer of ``estimate_evidence`` on warm caches, the working tree beside a git revision.

Two cases, each call in a fresh one-thread process (:func:`benchmarks._revision.call`):

``conjugate``  the suite's conjugate model (``models.evidence_suite``), ``budget=5`` (wall seconds from the call);
               the wall time of the call, the set-up seconds the result reports, the pulls;
``pima50``     Pima T = 50 (``models.pima``), ``budget=TargetSE(0.01)``: the wall time from the call to an answer
               with se <= 0.01 (set-up included), the set-up seconds, the pulls and the se reached;
``suite``      (``--suite``) every model of the evidence suite at ``budget=15`` (``--suite-seconds``): the set-up
               seconds of each, one run per package (its untimed first call at ``budget=2``).

"Warm" is PyTensor's compile cache and numba's on-disk cache holding what the case compiles: each package (the
working tree's and the revision's, checked out in a temporary worktree whose numba cache starts empty) first runs
every case once untimed, then the timed runs alternate between the two packages, so drift in the load of a shared
machine hits both alike. Read the ratios: on a machine shared with other jobs the seconds are pessimistic.

    python -m benchmarks.bench_setup --against 4a41fb0 --runs 3

The markdown section is printed and written to ``benchmarks/results/bench_setup.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from benchmarks import _revision
from benchmarks._common import machine, utc_now, write_section

CASES = ("conjugate", "pima50")


def measure(case: str, seed: int = 0, seconds: float = 5.0) -> dict:
    """One timed ``estimate_evidence`` call of ``case`` in this process (module docstring); ``suite:<name>`` is the
    suite's model ``name`` at ``budget=seconds``.
    """
    import time
    import warnings

    import pmcbandit as pb

    if case == "conjugate":
        from models.evidence_suite import SUITE

        model, budget = SUITE["conjugate"]().model, 5.0
    elif case.startswith("suite:"):
        from models.evidence_suite import SUITE

        model, budget = SUITE[case.split(":", 1)[1]]().model, float(seconds)
    else:
        from models.pima import load_data, logistic_regression

        model, budget = logistic_regression(*load_data(50)), pb.TargetSE(0.01)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pb.estimate_evidence(model, budget=budget, random_seed=seed, progressbar=False)
    wall = time.perf_counter() - start
    return dict(wall=wall, setup=float(res.settings.get("setup_seconds", float("nan"))), pulls=len(res.history),
                se=float(res.log_z_se), package=_revision.package_revision())


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _revision.add_argument(parser)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per case and package")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--suite", action="store_true", help="also the set-up of every suite model")
    parser.add_argument("--suite-seconds", type=float, default=15.0)
    args = parser.parse_args(argv)
    rev = _revision.resolve(args.against)
    rows: dict = {}
    with _revision.checkout(rev) as old:
        sources = {"working tree": None, rev[:7]: old}
        for case in args.cases:
            for where in sources.values():  # untimed: fills numba's cache of each checkout and PyTensor's
                _revision.call(where, "benchmarks.bench_setup:measure", case=case, seed=0)
            for i in range(args.runs):
                for label, where in sources.items():
                    out = _revision.call(where, "benchmarks.bench_setup:measure", case=case, seed=i + 1)
                    rows.setdefault((case, label), []).append(out)
                    print(case, label, out, flush=True)
        if args.suite:
            from models.evidence_suite import SUITE

            for name in SUITE:
                for where in sources.values():
                    _revision.call(where, "benchmarks.bench_setup:measure", case=f"suite:{name}", seconds=2.0)
                for label, where in sources.items():
                    out = _revision.call(where, "benchmarks.bench_setup:measure", case=f"suite:{name}", seed=1,
                                         seconds=args.suite_seconds)
                    rows.setdefault((f"suite:{name}", label), []).append(out)
                    print(name, label, out, flush=True)
    command = "python -m benchmarks.bench_setup " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["## Set-up and time to an answer, warm caches (`bench_setup`)", "",
             f"- machine: {machine()}, shared with other jobs while it ran (the seconds are pessimistic and noisy; "
             "read the ratios of the two packages, measured alternately in one run)",
             f"- date: {utc_now()}; command: `{command}`",
             f"- each call a fresh one-thread process after an untimed call of the same case (warm PyTensor and "
             f"numba caches); median (min-max) of {args.runs} runs",
             "- conjugate: the suite's conjugate model, `budget=5`; pima50: Pima T = 50, `budget=TargetSE(0.01)`; "
             f"suite:<model>: `budget={args.suite_seconds:g}`, one run (set-up is what to read there)",
             "", "| case | package | call (s) | set-up (s) | pulls | se |", "|---|---|---:|---:|---:|---:|"]

    def cell(values, fmt="{:.2f}"):
        return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"

    for (case, label), outs in rows.items():
        lines.append(f"| {case} | {label} | {cell([o['wall'] for o in outs])} | {cell([o['setup'] for o in outs])} "
                     f"| {cell([o['pulls'] for o in outs], '{:.0f}')} | {cell([o['se'] for o in outs], '{:.4f}')} |")
    for case in [*args.cases, *sorted({c for c, _ in rows if c.startswith("suite:")})]:
        new, base = rows.get((case, "working tree")), rows.get((case, rev[:7]))
        if new and base:
            ratio = statistics.median(o["setup"] for o in base) / statistics.median(o["setup"] for o in new)
            wall = statistics.median(o["wall"] for o in base) / statistics.median(o["wall"] for o in new)
            lines.append(f"\n{case}: set-up {ratio:.2f}x shorter, call {wall:.2f}x shorter than at {rev[:7]} "
                         "(ratios of medians)")
    text = "\n".join(lines) + "\n"
    print(text)
    write_section("bench_setup", text)
    return text


if __name__ == "__main__":
    main()
