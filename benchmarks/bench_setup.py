"""Set-up and time to an answer of ``estimate_evidence`` on warm caches, the working tree beside a git revision.

Two cases, each call in a fresh one-thread process (:func:`benchmarks._revision.call`):

``conjugate``  the suite's conjugate model (``models.evidence_suite``), ``budget=5`` (wall seconds from the call);
               the wall time of the call, the set-up seconds the result reports, the pulls;
``pima50``     Pima T = 50 (``models.pima``), ``budget=TargetSE(0.01)``: the wall time from the call to an answer
               with se <= 0.01 (set-up included), the set-up seconds, the pulls and the se reached;
``suite``      (``--suite``) every model of the evidence suite at ``budget=15`` (``--suite-seconds``): the set-up
               seconds of each, one run per package (its untimed first call at ``budget=2``).
``trace``      (``--trace``, instead of the cases above) the set-up of ``estimate_evidence(model, idata=trace,
               budget=15)`` beside the no-trace pool's on the suite's two hierarchies (``--trace-models``), with
               ``chains x draws`` NUTS traces (``pm.sample`` on the model as written, ``random_seed`` = run index,
               sampled once here and read by every process): :func:`measure_trace`.

With ``--trace`` each run is one process per package that first makes an untimed call with the trace and one without
(PyTensor's and numba's caches, and the package's own per-process caches: the no-trace pool's mode search, the trace
path's fits), then the timed calls with the same seed: ``same trace`` (the trace of the untimed call), ``new trace``
(the next run's trace, never seen by the process) and ``no trace``. Every call stops its pulls after their first batch
(a ``callback``), as set-up is what is read; the pool is built for the full budget all the same.

"Warm" is PyTensor's compile cache and numba's on-disk cache holding what the case compiles: each package (the
working tree's and the revision's, checked out in a temporary worktree whose numba cache starts empty) first runs
every case once untimed, then the timed runs alternate between the two packages, so drift in the load of a shared
machine hits both alike. Read the ratios: on a machine shared with other jobs the seconds are pessimistic.

    python -m benchmarks.bench_setup --against 4a41fb0 --runs 3
    python -m benchmarks.bench_setup --trace --against main --runs 3

The markdown section is printed and written to ``benchmarks/results/bench_setup.md`` (with ``--trace``:
``bench_setup_trace.md``).
"""

from __future__ import annotations

import argparse
import statistics
import sys

from benchmarks import _revision
from benchmarks._common import machine, utc_now, write_section

CASES = ("conjugate", "pima50")
TRACE_MODELS = ("hierarchical_normal_100", "hierarchical_logistic_50")
TRACE_LABELS = ("same trace", "new trace", "no trace")


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


def measure_trace(name: str, traces: str, run: int, seconds: float = 15.0) -> dict:
    """The set-up seconds of ``estimate_evidence`` on the suite model ``name`` at ``budget=seconds`` in this process,
    per :data:`TRACE_LABELS` (module docstring); ``traces`` is the ``.npz`` of :func:`_sample_traces`, whose traces
    ``run`` and ``run + 1`` are the same and the new trace.
    """
    import warnings

    import numpy as np

    import pmcbandit as pb
    from models.evidence_suite import SUITE

    model = SUITE[name]().model
    data = np.load(traces)

    def trace(i):
        return {k.split(":", 1)[1]: data[k] for k in data.files if k.startswith(f"{i}:")}

    def stop_early(progress, history):
        return True

    def setup(idata, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pb.estimate_evidence(model, idata=idata, budget=float(seconds), random_seed=seed,
                                       progressbar=False, callback=stop_early)
        return float(res.settings["setup_seconds"])

    same, new = trace(run), trace(run + 1)
    setup(same, 0)  # untimed: the caches of a process that already ran on this model and trace
    setup(None, 0)
    out = {label: setup(idata, run + 1) for label, idata in zip(TRACE_LABELS, (same, new, None))}
    return dict(out, package=_revision.package_revision())


def _sample_traces(names, n_traces: int, chains: int, draws: int, folder) -> dict:
    """``{model name: path of an .npz}`` of ``n_traces`` NUTS traces per suite model (keys ``"<i>:<variable>"``,
    arrays ``(chain, draw, *shape)``; ``pm.sample`` with ``random_seed=i``), and the mean sampling seconds."""
    import time
    import warnings
    from pathlib import Path

    import numpy as np
    import pymc as pm

    from models.evidence_suite import SUITE

    paths, took = {}, []
    for name in names:
        model = SUITE[name]().model
        arrays = {}
        for i in range(n_traces):
            start = time.perf_counter()
            with model, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = pm.sample(draws=draws, tune=draws, chains=chains, cores=1, random_seed=i, progressbar=False,
                                  compute_convergence_checks=False)
            took.append(time.perf_counter() - start)
            arrays.update({f"{i}:{rv.name}": np.asarray(idata.posterior[rv.name]) for rv in model.free_RVs})
        paths[name] = str(Path(folder) / f"{name}.npz")
        np.savez(paths[name], **arrays)
    return dict(paths=paths, seconds=float(np.mean(took)))


def main_trace(args, argv) -> str:
    """The ``--trace`` measurement (module docstring)."""
    import tempfile

    rev = _revision.resolve(args.against)
    rows: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-setup-traces-") as folder, _revision.checkout(rev) as old:
        sampled = _sample_traces(args.trace_models, args.runs + 1, args.chains, args.draws, folder)
        sources = {"working tree": None, rev[:7]: old}
        for run in range(args.runs):
            for name in args.trace_models:
                for label, where in sources.items():
                    out = _revision.call(where, "benchmarks.bench_setup:measure_trace", name=name,
                                         traces=sampled["paths"][name], run=run, seconds=args.suite_seconds)
                    rows.setdefault((name, label), []).append(out)
                    print(name, label, out, flush=True)
    command = "python -m benchmarks.bench_setup " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["## Set-up with a posterior trace beside the no-trace pool's, warm process (`bench_setup --trace`)", "",
             f"- machine: {machine()}, shared with other jobs while it ran (the seconds are pessimistic and noisy; "
             "read the ratios, each measured within one process)",
             f"- date: {utc_now()}; command: `{command}`; working tree at commit {_revision._git('rev-parse', '--short', 'HEAD')} "
             f"against {rev[:7]}",
             f"- `estimate_evidence(model, idata=..., budget={args.suite_seconds:g})`, {args.chains} x {args.draws} NUTS "
             f"traces ({sampled['seconds']:.1f} s each, not counted); per run and package one fresh one-thread process: "
             "an untimed call with the trace and one without, then the timed calls (seed = run + 1)",
             "- same trace: the trace of the untimed call; new trace: one the process has not seen; no trace: the "
             "default pool (its mode search kept from the untimed call where it ran to its end)",
             f"- median (min-max) of {args.runs} runs; ratio = set-up with the trace / set-up without, per run",
             "", "| model | package | same trace (s) | new trace (s) | no trace (s) | same / no trace | new / no trace |",
             "|---|---|---:|---:|---:|---:|---:|"]

    def cell(values, fmt="{:.3f}"):
        return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"

    for (name, label), outs in rows.items():
        cols = [cell([o[k] for o in outs]) for k in TRACE_LABELS]
        ratios = [cell([o[k] / o["no trace"] for o in outs], "{:.1%}") for k in TRACE_LABELS[:2]]
        lines.append(f"| {name} | {label} | " + " | ".join(cols + ratios) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    write_section("bench_setup_trace", text)
    return text


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _revision.add_argument(parser)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per case and package")
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--suite", action="store_true", help="also the set-up of every suite model")
    parser.add_argument("--suite-seconds", type=float, default=15.0)
    parser.add_argument("--trace", action="store_true", help="the set-up with a posterior trace, instead of the cases")
    parser.add_argument("--trace-models", nargs="+", default=list(TRACE_MODELS))
    parser.add_argument("--chains", type=int, default=4, help="chains of each --trace NUTS trace")
    parser.add_argument("--draws", type=int, default=1000, help="draws (and tuning steps) of each chain")
    args = parser.parse_args(argv)
    if args.trace:
        return main_trace(args, argv)
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
