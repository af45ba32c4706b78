"""Spike-and-slab likelihoods (a phase transition on the annealing path): the pool with and without its
nested-sampling family, and dynesty and nautilus, at equal wall time.

Run as ``.venv/bin/python -m benchmarks.bench_phase_transition`` (``--cases``, ``--seconds``, ``--seeds``,
``--methods``). The targets are :data:`models.spike_slab.SPIKE_SLAB_CASES` (exact ``log Z``; default the 5-, 10-
and 20-dimensional cases, where annealing can find one component). Every run is a FRESH single-threaded Python process
(:func:`benchmarks._common.run_fresh`) given ``seconds`` of wall time from the call to the answer:

``pool``            ``estimate_evidence(model, budget=seconds, random_seed=seed)`` (the default pool, nested
                    family included);
``pool_no_nested``  the same with ``build_pool(..., nested=False)``: the pool without its nested-sampling arm;
``dynesty``, ``nautilus``  the peers with their defaults (:mod:`benchmarks._peers`), on the same likelihood and
                    the prior's transform of the unit cube; they need the ``bench`` extra, and a run where they
                    do not import is recorded with status ``"unavailable"``.

Reported per dimension and method: runs, the MSE of ``log Ẑ`` (finite estimates), how many runs of status
``"ok"`` have ``|z| < 4`` (``z = (log Ẑ - log Z) / se``), the largest ``|z|`` among them, the status counts, the
pools' mean set-up seconds, and the nested arm's mean pulls and its arm statuses (``"unchecked"``: fewer importance
weights than a Pareto k-hat needs while another arm passed, so no weight in the answer).
The markdown goes to ``benchmarks/results/bench_phase_transition.md``; every run to
``bench_phase_transition.json`` in ``--runs-dir``, rewritten after each run, so a measurement stopped part way keeps
the runs it finished: ``--rescore FILE`` writes the markdown from such a file (its command line says so).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._common import add_runs_dir, machine, run_file, run_fresh, utc_now, write_section

METHODS = ("pool", "pool_no_nested", "dynesty", "nautilus")


def _target(args):
    from models.spike_slab import case

    return case(args["case"])


def _peer_problem(args):
    from scipy import special

    from models.evidence_suite_peers import PeerProblem

    from models.spike_slab import SPIKE_SLAB_CASES, log_likelihood, spike_weight

    dim, s1, s2, mass = SPIKE_SLAB_CASES[args["case"]]
    w = spike_weight(dim, s1, s2, mass)
    return PeerProblem(args["case"], dim, special.ndtri, lambda x: log_likelihood(x, s1, s2, w))


def run_task(args: dict) -> dict:
    """One run in this process: ``args`` holds the method, the target's settings, seconds and seed."""
    method, seconds, seed = args["method"], args["seconds"], args["seed"]
    if method in ("dynesty", "nautilus"):
        from benchmarks import _peers

        try:
            runner = _peers.run_dynesty if method == "dynesty" else _peers.run_nautilus
            __import__("dynesty" if method == "dynesty" else "nautilus")
        except ImportError as err:
            return dict(status="unavailable", error=str(err), log_z=float("nan"), log_z_se=float("nan"))
        return runner(args["case"], seconds, seed, spec=_peer_problem(args))
    model = _target(args).model
    if method == "pool_no_nested":
        import functools

        import pmcbandit.evidence.estimate as ev

        ev.build_pool = functools.partial(ev.build_pool, nested=False)  # this process only
    from benchmarks.bench_evidence_suite import run_pool

    out = run_pool(model, seconds, seed)
    return {k: out[k] for k in ("log_z", "log_z_se", "ci", "status", "setup", "wall", "pulls", "cost_share", "khat",
                                "arm_status", "warnings", "pool_families", "compared_families")}


def summarise(runs: list[dict]) -> list[dict]:
    rows = []
    for (dim, method), group in sorted(_groups(runs).items()):
        truth = group[0]["true_log_z"]
        est = np.array([r["log_z"] for r in group], dtype=float)
        se = np.array([r["log_z_se"] for r in group], dtype=float)
        finite = np.isfinite(est)
        z = (est - truth) / se
        ok = np.array([r["status"] == "ok" for r in group])
        good = ok & np.isfinite(z) & (np.abs(z) < 4)
        nested = [(n, r["arm_status"][a]) for r in group for a, n in r.get("pulls", {}).items()
                  if a.startswith("nested")]
        rows.append(dict(dim=dim, method=method, runs=len(group),
                         setup=float(np.nanmean([r.get("setup", np.nan) for r in group])),
                         nested=(f"{np.mean([n for n, _ in nested]):.0f}; "
                                 + ", ".join(f"{k} {v}" for k, v in sorted(collections.Counter(s for _, s in nested).items()))
                                 if nested else ""),
                         mse=float(np.mean((est[finite] - truth) ** 2)) if finite.any() else float("nan"),
                         ok_within=f"{int(good.sum())} / {int(ok.sum())}",
                         max_abs_z_ok=float(np.max(np.abs(z[ok]))) if ok.any() else float("nan"),
                         statuses=dict(collections.Counter(r["status"] for r in group))))
    return rows


def _groups(runs):
    out = collections.defaultdict(list)
    for r in runs:
        out[(r["dim"], r["method"])].append(r)
    return out


def markdown(rows, settings, command) -> str:
    lines = [
        "## Spike-and-slab targets: the pool with and without its nested family, and the peers",
        "",
        f"{utc_now()}, {machine()}; `{command}`.",
        "Targets: theta ~ N(0, I_d), likelihood w N(0, s_spike^2 I) + (1 - w) N(0, s_slab^2 I) with w set so the "
        "spike carries the given share of the posterior (`models.spike_slab`, exact log Z); cases (d, s_spike, "
        "s_slab, spike share): " + "; ".join(f"{k} {v}" for k, v in settings.items()) + ". z = (log Ẑ - log Z) / se.",
        "",
        "| dim | method | runs | MSE log Ẑ | abs z < 4 / status ok | max abs z (ok) | statuses | mean set-up s | "
        "nested arm: mean pulls; arm statuses |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items()))
        lines.append(f"| {r['dim']} | {r['method']} | {r['runs']} | {r['mse']:.3g} | {r['ok_within']} | "
                     f"{r['max_abs_z_ok']:.3g} | {statuses} | {r['setup']:.3g} | {r['nested']} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--cases", nargs="+", default=["spike_slab_d5", "spike_slab_d10", "spike_slab_d20"],
                        help="models.spike_slab.SPIKE_SLAB_CASES to run (default: 5, 10 and 20 dimensions)")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--rescore", metavar="FILE", help="write the markdown from the runs of an earlier "
                        "measurement's bench_phase_transition.json (finished or stopped part way)")
    add_runs_dir(parser)
    args = parser.parse_args(argv)
    if args.task:
        print(json.dumps(run_task(json.loads(args.task)), default=float))
        return
    from models.spike_slab import SPIKE_SLAB_CASES, spike_slab_log_z, spike_weight

    settings = {name: SPIKE_SLAB_CASES[name] for name in args.cases}
    command = "python -m benchmarks.bench_phase_transition " + " ".join(sys.argv[1:] if argv is None else argv)
    if args.rescore:
        runs = json.loads(Path(args.rescore).read_text())
        settings = {name: value for name, value in settings.items() if any(r["case"] == name for r in runs)}
        write_section("bench_phase_transition", markdown(summarise(runs), settings, command))
        return
    runs = []
    saved = run_file(args.runs_dir, "bench_phase_transition.json")
    for seed in range(args.seeds):
        for name, (dim, s1, s2, mass) in settings.items():
            truth = spike_slab_log_z(dim, s1, s2, spike_weight(dim, s1, s2, mass))
            for method in args.methods:
                task = dict(case=name, dim=dim, method=method, seconds=args.seconds, seed=seed)
                start = time.perf_counter()
                out = run_fresh("benchmarks.bench_phase_transition", ["--task", json.dumps(task)],
                                dict(log_z=float("nan"), log_z_se=float("nan")))
                run = dict(task, **out, true_log_z=truth, process_seconds=time.perf_counter() - start)
                runs.append(run)
                print(json.dumps({k: run.get(k) for k in ("dim", "method", "seed", "log_z", "log_z_se", "status")},
                                 default=float), flush=True)
                saved.write_text(json.dumps(runs, default=float, indent=1))
    text = markdown(summarise(runs), settings, command)
    print(text)
    write_section("bench_phase_transition", text)


if __name__ == "__main__":
    main()
