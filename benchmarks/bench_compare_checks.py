"""compare_models: how often each model's evidence gets its cross-family check, against a git revision.

A comparison declares a best model only when every evidence interval is one to read, which needs a check of the
answer by a second estimator family (:mod:`pmcbandit.runtime.guards`, rule 4). The budget reaches each model in
slices, so the check's pulls must add up across them. This benchmark runs ``compare_models`` with its default
pools and a wall-time budget on the two regression pairs of :mod:`benchmarks.bench_compare_models` (exact log Bayes
factors), several seeds, with the working tree's package and with a revision's (:mod:`benchmarks._revision`), each
seed in a fresh one-thread process, the two packages alternating. Reported per pair and package: the evidences
whose interval status is ``"ok"``, the comparisons that declared a best model, the mean SE of the log Bayes factor
and the largest ``|z|`` of the log Bayes factor against the exact value.

Run: ``.venv/bin/python -m benchmarks.bench_compare_checks --against REV [--seeds 5] [--seconds 20]``.
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np

from benchmarks import _revision
from benchmarks._common import machine, utc_now, write_section


def measure(pair: str, seed: int, seconds: float, pulls: int | None = None) -> dict:
    """One ``compare_models`` call on ``pair`` (default pools, ``budget=seconds``, or ``Pulls(pulls)``): statuses,
    best, log BF, SE."""
    import pmcbandit as pb
    from benchmarks.bench_compare_models import _models

    models = _models(pair)
    budget = seconds if pulls is None else pb.Pulls(pulls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pb.compare_models({n: m for n, (m, _) in models.items()}, budget=budget, random_seed=seed,
                                progressbar=False)
    lbf, se = res.log_bf("b", "a")
    return dict(status=[res.results[n].interval_status for n in ("a", "b")], best=res.best, log_bf=float(lbf),
                se=float(se), exact=float(models["b"][1] - models["a"][1]))


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _revision.add_argument(parser)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--pulls", type=int, default=None, help="a Pulls budget instead of --seconds")
    parser.add_argument("--pairs", nargs="+", default=["costly", "equal"])
    args = parser.parse_args(argv)
    rev = _revision.resolve(args.against)
    rows: dict = {}
    with _revision.checkout(rev) as old:
        sources = {"working tree": None, rev[:7]: old}
        for pair in args.pairs:
            for seed in range(args.seeds):
                for label, where in sources.items():
                    out = _revision.call(where, "benchmarks.bench_compare_checks:measure", pair=pair, seed=seed,
                                         seconds=args.seconds, pulls=args.pulls)
                    rows.setdefault((pair, label), []).append(out)
                    print(pair, label, out, flush=True)
    command = "python -m benchmarks.bench_compare_checks " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = ["## compare_models: evidences checked and best models declared (`bench_compare_checks`)", "",
             f"- machine: {machine()}; date: {utc_now()}; command: `{command}`",
             "- `compare_models` with default pools, `budget="
             + (f"{args.seconds:g}` (wall seconds, set-up included), " if args.pulls is None else
                f"Pulls({args.pulls})` (reproducible: no decision reads a clock), ")
             + f"seeds 0-{args.seeds - 1}, each call a fresh one-thread process, the two packages alternating",
             "", "| pair | package | evidences `ok` | best declared | mean SE(log BF) | max abs z (log BF) |",
             "|---|---|---:|---:|---:|---:|"]
    for (pair, label), outs in rows.items():
        ok = sum(s == "ok" for o in outs for s in o["status"])
        best = sum(o["best"] is not None for o in outs)
        z = max(abs(o["log_bf"] - o["exact"]) / o["se"] for o in outs)
        lines.append(f"| {pair} | {label} | {ok}/{2 * len(outs)} | {best}/{len(outs)} | "
                     f"{np.mean([o['se'] for o in outs]):.4f} | {z:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    return text


if __name__ == "__main__":
    write_section("bench_compare_checks", main())
