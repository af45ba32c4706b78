"""compare_samplers on real evidence pools: decisions within a time budget, cost to a decision vs the previous rule.

For each model (Pima T = 50, centred eight schools, Student-t with unknown nu, two-component
mixture) the default evidence pool (:func:`pmcbandit.evidence_arms` sized for a 60 s run) is
pulled into a *bank*: up to ``--bank-pulls`` pulls per arm, at most ``--bank-seconds`` of CPU per
arm, each pull's log-evidence estimate and CPU cost recorded. The bank gives the long-run
efficiency of every arm, :math:`1/(\\widehat{\\mathrm{Var}}\\,\\bar c)`, and the long-run ranking.

Each seed then replays a comparison on pairs of two different pulls drawn from the bank
(the loop of :func:`pmcbandit.compare.simulate.simulate_comparison`, recorded costs, a cap of 60 CPU seconds of
pulls), side by side on the same seeds:

``new``
    the current rule: lower betting sequences for the non-negative variance and cost
    observations, cost-aware sampling, ``epsilon`` = :data:`pmcbandit.compare.compare.DEFAULT_EPSILON`;
``previous``
    the rule before them: asymptotic two-sided sequences, a pair of both LUCB arms, ``epsilon = 0``,
    10 pairs of every arm first.

Reported per model: decisions (confident stop, a tie at tolerance epsilon included) within the cap,
agreement with the long-run ranking (what the rule guarantees: the selection's long-run efficiency is
at least 1/(1 + epsilon) times the long-run best's, with each rule's own epsilon), and the mean cost
to a decision of each rule on the seeds where both decide. The replay leaves out the validity gate
and the Pareto k-hat check (they exclude arms; they do not change the sequences) and draws from a
finite bank, so a tail the bank did not see is not replayed either.

    .venv/bin/python -m benchmarks.bench_compare_real                 # 10 seeds, banks of <= 200 pulls
    .venv/bin/python -m benchmarks.bench_compare_real --quick         # 5 seeds, small banks
    .venv/bin/python -m benchmarks.bench_compare_real --reuse-banks   # replay the saved banks (and live runs) again
    .venv/bin/python -m benchmarks.bench_compare_real --live-seeds 1  # also one live 60 s run per model
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from benchmarks._common import add_runs_dir, machine, run_file, utc_now, write_section
from pmcbandit.compare.efficiency import EfficiencyRule

CAP_SECONDS = 60.0
LIVE_TITLE = ("Live runs (fresh processes, two side by side on the machine of the header, "
              "`compare_samplers(evidence_arms(model, budget_seconds=60), budget=60)`)")
SAMPLER_LIVE_TITLE = ("Live sampler runs (fresh processes, two side by side on the machine of the header, "
                      "`compare_samplers(sampler_arms(model, samplers=...), budget=300)`, every coordinate; the pilot "
                      "run before it not counted)")
DELTA = 0.05
MODELS = ("pima_t50", "eight_schools_centred", "student_t_unknown_nu", "mixture_label_switching")


def _model(name):
    from models import evidence_suite, pima

    if name == "pima_t50":
        return pima.logistic_regression(*pima.load_data(50))
    return getattr(evidence_suite, name)().model


def bank(name: str, pulls: int, seconds: float, seed: int):
    """Names, and per arm the arrays of log-evidence estimates and CPU costs of its bank pulls."""
    import pmcbandit as pb
    from pmcbandit.runtime.engine import _reduce

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arms = pb.evidence_arms(_model(name), budget_seconds=CAP_SECONDS)
    rngs = np.random.default_rng(seed).spawn(len(arms))
    out = []
    for arm, rng in zip(arms, rngs):
        arm.warm_up()
        xs, cs = [], []
        start = time.process_time()
        while len(xs) < pulls and time.process_time() - start < seconds:
            p = arm.pull(rng)
            obs, _ = _reduce(p.values, arm.log_scale)
            if np.isfinite(obs):
                xs.append(float(obs))
                cs.append(float(p.cost))
        out.append((np.asarray(xs), np.asarray(cs)))
    return [a.name for a in arms], out


def rules(n: int, epsilon: float) -> dict[str, EfficiencyRule]:
    base = EfficiencyRule(k=1, delta=DELTA, n_arms=n)
    return {"new": base._replace(epsilon=epsilon),
            "previous": base._replace(lower="asymptotic", sampling="both", initial_pairs=10, min_pairs=10)}


def _tied_after(banked, rule, seed, cap=CAP_SECONDS):
    """One replayed comparison on pairs drawn from the bank: (decided, cost, selection, tied arms)."""
    from pmcbandit.compare import efficiency

    def draw(rng, arm):
        x, c = banked[arm]
        i, j = rng.choice(len(x), size=2, replace=False)  # two different runs: a pair of independent pulls
        return x[i], x[j], c[i], c[j]

    rng = np.random.default_rng(seed)
    state = efficiency.init(rule)
    every = np.ones(rule.n_arms, dtype=bool)
    cost = 0.0
    while cost < cap:
        if efficiency.stop(rule, state, every):
            return True, cost, efficiency.recommend(rule, state, every), efficiency.tied(rule, state, every)
        for arm in efficiency.select(rule, rng, state, every).arms:
            x1, x2, c1, c2 = draw(rng, arm)
            state = efficiency.update(rule, state, arm, x1, x2, c1, c2)
            cost += c1 + c2
    return False, cost, efficiency.recommend(rule, state, every), efficiency.tied(rule, state, every)


def model_section(name, names, banked, seeds, epsilon):
    """Replays of both rules on one model's evidence banks. Returns the markdown and the long-run efficiency of each
    arm (name -> efficiency; NaN for a bank of fewer than three pulls)."""
    eff = np.array([1.0 / (np.var(x, ddof=1) * c.mean()) if x.size > 2 else np.nan for x, c in banked])
    best = int(np.nanargmax(eff))
    lines = [f"### {name}", "",
             "| arm | bank pulls | mean cost (s) | variance of log Z-hat | long-run efficiency |",
             "|---|---:|---:|---:|---:|"]
    for i, (x, c) in enumerate(banked):
        lines.append(f"| {names[i]}{' (best)' if i == best else ''} | {x.size} | {c.mean():.3g} | "
                     f"{np.var(x, ddof=1):.3g} | {eff[i]:.3g} |")
    lines.append("")
    out = {}
    for label, rule in rules(len(banked), epsilon).items():
        runs = [_tied_after(banked, rule, s) for s in seeds]
        decided = [r for r in runs if r[0]]
        agree = sum(1 for r in decided if _acceptable(eff, int(r[2][0]), rule.epsilon))
        ties = sum(1 for r in decided if r[3].size)
        out[label] = dict(decided=len(decided), agree=agree, ties=ties,
                          cost=np.array([r[1] if r[0] else np.nan for r in runs]))
    both = ~np.isnan(out["new"]["cost"]) & ~np.isnan(out["previous"]["cost"])
    lines += ["| rule | decided within 60 s | of which ended by a tie | agree with long run | "
              "mean cost to decision (s) |", "|---|---:|---:|---:|---:|"]
    for label, o in out.items():
        c = o["cost"][~np.isnan(o["cost"])]
        lines.append(f"| {label} | {o['decided']}/{len(seeds)} | {o['ties']} | {o['agree']}/{o['decided']} | "
                     f"{c.mean() if c.size else float('nan'):.3g} |")
    if both.any():
        ratio = out["new"]["cost"][both].mean() / out["previous"]["cost"][both].mean()
        lines.append(f"\nCost to a decision, new / previous, on the {int(both.sum())} seeds where both decide: "
                     f"**{ratio:.2f}**.")
    else:
        lines.append("\nThe previous rule decided on no seed within the cap: no cost ratio.")
    return "\n".join(lines) + "\n", dict(zip(names, eff.tolist()))


def _acceptable(eff, i, epsilon: float) -> bool:
    """Whether arm ``i``'s long-run efficiency is at least 1/(1 + epsilon) times the best's (the rule's guarantee)."""
    eff = np.asarray(eff, dtype=np.float64)
    return bool(eff[i] * (1.0 + epsilon) >= np.nanmax(eff))


def live(name: str, seed: int, sampler: bool = False) -> dict:
    """One compare_samplers run on the default pool of ``name`` with a 60 s wall budget (run in a fresh process);
    with ``sampler``, on ``sampler_arms``' default quantity (every coordinate) with a 300 s budget (the pilot
    run that sets the scales is reported apart, as ``setup``)."""
    import pmcbandit as pb

    if sampler:
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arms = pb.sampler_arms(_sampler_model(name)[0], samplers=list(SAMPLERS))
            setup = time.time() - t0
            t0 = time.time()
            res = pb.compare_samplers(arms, budget=SAMPLER_CAP, random_seed=seed, progressbar=False)
        return dict(model=name, seed=seed, wall=time.time() - t0, setup=setup, stopped_by=res.stopped_by,
                    selected=[n.split("-")[0] for n in res.selected], tied=[n.split("-")[0] for n in res.tied],
                    excluded=sorted(res.excluded), pulls=len(res.history), cost=res.cost)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arms = pb.evidence_arms(_model(name), budget_seconds=CAP_SECONDS)
        t0 = time.time()
        res = pb.compare_samplers(arms, budget=CAP_SECONDS, random_seed=seed, progressbar=False)
    return dict(model=name, seed=seed, wall=time.time() - t0, stopped_by=res.stopped_by, selected=res.selected,
                tied=res.tied, excluded=sorted(res.excluded), pulls=len(res.history), cost=res.cost)


def _live_process(name: str, seed: int, slot: int, sampler: bool = False) -> dict:
    """:func:`live` in a fresh single-threaded process; ``slot`` picks a PyTensor compile cache of its own, so that
    processes side by side do not wait on one another's compile lock."""
    import os
    import tempfile

    from benchmarks._common import run_fresh

    out = run_fresh("benchmarks.bench_compare_real", ["--live-worker", f"{name}:{seed}:{int(sampler)}"],
                    dict(model=name, seed=seed, wall=float("nan"), selected=[], tied=[], excluded=[], pulls=0,
                         cost=float("nan")),
                    os.path.join(tempfile.gettempdir(), f"pmcbandit-bench-compiledir-{slot}"))
    if "status" in out and "stopped_by" not in out:
        out["stopped_by"] = out.pop("status")  # a failed run, reported where a run says why it stopped
    return out


def _live_runs(jobs, store, workers: int, reuse: bool, sampler: bool = False) -> list[dict]:
    """The saved live runs of ``store`` when ``reuse`` (and no job is asked for), else ``jobs`` (model, seed) run in
    fresh processes, ``workers`` side by side, each saved to ``store`` as it ends."""
    runs = json.loads(store.read_text()) if reuse and store.exists() else []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for run in pool.map(lambda job: _live_process(*job[1], slot=job[0] % max(1, workers), sampler=sampler),
                            enumerate(jobs)):
            runs.append(run)
            print(run, flush=True)
            store.write_text(json.dumps(runs))
    return runs


def live_section(runs, best: dict, title: str = LIVE_TITLE, budget: float = CAP_SECONDS) -> str:
    """The live runs, and per model how many decided (a confident stop, a tie included) within the budget and how
    many of those agree with the bank's long-run ranking (``best``: model -> {arm name: long-run efficiency}; absent
    when not banked): the selection's efficiency is at least 1/(1 + epsilon) times the best's (the default epsilon).
    """
    from pmcbandit.compare.compare import DEFAULT_EPSILON

    lines = [f"### {title}", "", f"| model | runs | decided within {budget:g} s | of which ended by a tie | agree with the "
             "long run | median wall s to a decision | median pulls |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in dict.fromkeys(r["model"] for r in runs):
        mine = [r for r in runs if r["model"] == name]
        decided = [r for r in mine if r["stopped_by"] == "confidence"]
        long_run = best.get(name)
        if long_run is None:
            agree = "–"
        else:
            eff, arms = list(long_run.values()), list(long_run)
            good = sum(1 for r in decided
                       if r["selected"][0] in arms and _acceptable(eff, arms.index(r["selected"][0]), DEFAULT_EPSILON))
            agree = f"{good}/{len(decided)}"
        wall = np.median([r["wall"] for r in decided]) if decided else float("nan")
        lines.append(f"| {name} | {len(mine)} | {len(decided)}/{len(mine)} | {sum(1 for r in decided if r['tied'])} | "
                     f"{agree} | {wall:.0f} | {np.median([r['pulls'] for r in mine]):.0f} |")
    lines += ["", "| model | seed | wall s | stopped by | selected | tied | excluded | pulls | CPU s of pulls |",
              "|---|---:|---:|---|---|---|---|---:|---:|"]
    for r in runs:
        lines.append(f"| {r['model']} | {r['seed']} | {r['wall']:.0f} | {r['stopped_by']} | {r['selected']} | "
                     f"{r['tied']} | {r['excluded']} | {r['pulls']} | {r['cost']:.3g} |")
    return "\n".join(lines) + "\n"


SAMPLER_MODELS = ("eight_schools_noncentred", "pima_t50", "gaussian_20d")
SHORT = dict(tune=300, draws=300)
LONG = dict(tune=1000, draws=2000)  # Metropolis needs more steps per run
SAMPLERS = (("nuts", SHORT), ("metropolis", LONG), ("slice", SHORT))
SAMPLER_CAP = 300.0


def _sampler_model(name):
    """The model and the quantity (variable, element) whose posterior mean the samplers estimate."""
    import pymc as pm

    from models import pima

    if name == "pima_t50":
        return pima.logistic_regression(*pima.load_data(50)), ("theta", 1)
    with pm.Model() as model:
        if name == "eight_schools_noncentred":
            mu = pm.Normal("mu", 0, 5)
            tau = pm.HalfCauchy("tau", 5)
            z = pm.Normal("z", 0, 1, shape=8)
            pm.Normal("y", mu + tau * z, np.array([15.0, 10, 16, 11, 9, 11, 10, 18]),
                      observed=np.array([28.0, 8, -3, 7, -1, 1, 18, 12]))
            return model, ("mu", None)
        d = 20  # correlated Gaussian: AR(1) covariance, correlation 0.9 between neighbours
        cov = 0.9 ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
        pm.MvNormal("x", mu=np.zeros(d), cov=cov)
        return model, ("x", 0)


_ARMS: dict = {}  # per process: the compiled arms, built once


def _sampler_run(name: str, s: int, index: int, seed: int) -> list[float]:
    """Pull ``index`` of the arm of sampler ``s`` (an :class:`~pmcbandit.arms.samplers.MCMCArm`, as
    ``sampler_arms`` builds it, compiled once per process): [estimate of the model's scalar quantity,
    CPU seconds of the run, its az.ess, the smallest az.ess over the unconstrained coordinates, then
    every unconstrained coordinate's posterior mean (in the order of ``model.value_vars``)].
    """
    import arviz as az

    from pmcbandit.arms.samplers import MCMCArm
    from pmcbandit.arms.samplers._quantity import Quantity

    if (name, s) not in _ARMS:
        model, (var, elem) = _sampler_model(name)
        label = var if elem is None else f"{var}[{elem}]"
        kind, kw = SAMPLERS[s]
        _ARMS[name, s] = MCMCArm(model, Quantity(model, label), kind, **kw)
    arm = _ARMS[name, s]
    start = time.process_time()
    X, _ = arm.chain(np.random.default_rng([seed, s, index]))
    cost = time.process_time() - start
    x = arm.quantity(X)
    min_ess = min(float(az.ess(X[None, :, j])) for j in range(X.shape[1]))
    return [float(x.mean()), cost, float(az.ess(x[None, :])), min_ess, *X.mean(axis=0).tolist()]


def sampler_bank(name: str, runs: int, seconds: float, seed: int, workers: int = 1):
    """Per sampler: arrays of the rows of :func:`_sampler_run` of repeated pulls (one-chain runs).

    One process: up to ``runs`` per sampler within ``seconds`` of CPU time each. ``workers > 1``:
    exactly ``runs`` per sampler on that many single-threaded processes (the same runs: each is
    seeded by its sampler and index).
    """
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        tasks = [(name, s, i, seed) for s in range(len(SAMPLERS)) for i in range(runs)]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(_sampler_run, *zip(*tasks), chunksize=1))
        out = [np.asarray(done[s * runs:(s + 1) * runs]) for s in range(len(SAMPLERS))]
        return [k for k, _ in SAMPLERS], out
    out = []
    for s in range(len(SAMPLERS)):
        rows = []
        start = time.process_time()
        while len(rows) < runs and time.process_time() - start < seconds:
            rows.append(_sampler_run(name, s, len(rows), seed))
        out.append(np.asarray(rows))
    return [k for k, _ in SAMPLERS], out


def sampler_section(name, names, rows, seeds, epsilon):
    """Replays on one model's sampler banks: the scalar quantity (one degree of freedom per pair) and every
    coordinate scaled by :func:`pmcbandit.arms.samplers.pilot_scales` (``sampler_arms``' default). Returns the
    markdown and the long-run efficiency of each sampler on every coordinate (name -> efficiency)."""
    from pmcbandit.arms.samplers import pilot_scales

    scales = pilot_scales(_sampler_model(name)[0])
    lines = [f"### {name} (sampler arms)", ""]
    n_runs = min(len(r) for r in rows)
    rule = rules(len(rows), epsilon)["new"]
    spent = [sum(r[i % n_runs, 1] for r in rows) for i in seeds]
    for label, banked, ess_col in (
        ("scalar quantity", [(r[:, 0], r[:, 1]) for r in rows], 2),
        (f"every coordinate ({scales.size}, scaled by the pilot's posterior sds)",
         [(r[:, 4:] / scales, r[:, 1]) for r in rows], 3),
    ):
        var = [float(np.sum(np.var(x, axis=0, ddof=1))) for x, _ in banked]
        eff = np.array([1.0 / (v * c.mean()) for v, (_, c) in zip(var, banked)])
        best = int(np.argmax(eff))
        ess = "az.ess" if ess_col == 2 else "smallest az.ess over the coordinates"
        lines += [f"**{label}**", "", f"| sampler | runs | mean s | variance of the estimate | long-run efficiency | "
                  f"mean {ess} per s |", "|---|---:|---:|---:|---:|---:|"]
        for i, r in enumerate(rows):
            lines.append(f"| {names[i]}{' (best)' if i == best else ''} | {len(r)} | {r[:, 1].mean():.3g} | "
                         f"{var[i]:.3g} | {eff[i]:.3g} | {np.mean(r[:, ess_col] / r[:, 1]):.3g} |")
        users = [int(np.argmax([r[i % n_runs, ess_col] / r[i % n_runs, 1] for r in rows])) for i in seeds]
        outcome = [_tied_after(banked, rule, i, cap=t) for i, t in zip(seeds, spent)]
        long_cap = [_tied_after(banked, rule, i, cap=SAMPLER_CAP) for i in seeds]

        def _summary(res, best=best):
            decided = [r for r in res if r[0]]
            agree = sum(1 for r in decided if _acceptable(eff, int(r[2][0]), rule.epsilon))
            picks = sum(1 for r in res if int(r[2][0]) == best)
            return len(decided), agree, picks

        d_eq, a_eq, p_eq = _summary(outcome)
        d_cap, a_cap, p_cap = _summary(long_cap)
        costs = [r[1] for r in long_cap if r[0]]
        right = sum(u == best for u in users)
        lines += ["", f"Users' practice (one run each, rank by {ess} per second): right on {right}/{len(seeds)} "
                  f"seeds (mean time spent {np.mean(spent):.3g} s). compare_samplers replayed at the same total time: "
                  f"confident decision or tie on {d_eq}/{len(seeds)}, of which {a_eq} agree with the long run; "
                  f"its best guess is the long-run best on {p_eq}/{len(seeds)}. With {SAMPLER_CAP:g} s: decided on "
                  f"{d_cap}/{len(seeds)} (agree {a_cap}), best guess right on {p_cap}/{len(seeds)}"
                  + (f", mean cost to a decision {np.mean(costs):.3g} s." if costs else "."), ""]
    return "\n".join(lines) + "\n", dict(zip(names, eff.tolist()))


CAVEATS = """**Read with care.** (1) The replays resample one bank per model: the 10 seeds vary the replay,
not the bank, so they are not 10 independent live runs; arms whose pulls are slow got fewer bank
pulls than the 200 asked for (table column), and their long-run efficiency is correspondingly
rough. (2) Sampler banks are pulls of the arms `sampler_arms` builds (`MCMCArm`: NUTS and slice 300 + 300,
Metropolis 1000 + 2000), 200 per sampler, made on 16 cores of the lent machine (`--bank-workers 16`,
one single-threaded process each; the costs are CPU seconds of the runs). Each model is replayed twice:
on the scalar quantity named in the table (one degree of freedom per pair), and on every coordinate
scaled by `pilot_scales` (`sampler_arms`' default). Users' practice is scored on run i of every
sampler for seed i: az.ess per second of the scalar, the smallest az.ess over the coordinates per
second for every coordinate.
(3) The live runs use a wall-time budget: their machine, and how many ran side by side, are stated
with their table.
"""


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--bank-pulls", type=int, default=None)
    parser.add_argument("--bank-seconds", type=float, default=None)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--reuse-banks", action="store_true", help="replay the banks saved by an earlier run")
    parser.add_argument("--banks-only", action="store_true", help="build and save the banks, replay nothing")
    parser.add_argument("--samplers", default=None, help="sampler-arm models (default: all of SAMPLER_MODELS)")
    parser.add_argument("--sampler-runs", type=int, default=None)
    parser.add_argument("--bank-workers", type=int, default=1,
                        help="sampler banks: runs side by side, each a single-threaded process")
    parser.add_argument("--live-seeds", type=int, default=0, help="live 60 s runs per evidence model")
    parser.add_argument("--live-sampler-seeds", type=int, default=0,
                        help="live 300 s compare_samplers(sampler_arms(model)) runs per sampler model")
    parser.add_argument("--live-workers", type=int, default=1,
                        help="live runs side by side, each a single-threaded process with its own compile cache")
    parser.add_argument("--live-worker", default=None, help=argparse.SUPPRESS)
    add_runs_dir(parser)
    args = parser.parse_args(argv)
    if args.live_worker:
        name, seed, sampler = args.live_worker.split(":")
        print(json.dumps(live(name, int(seed), sampler=bool(int(sampler)))))
        return ""
    seeds = range(args.seeds or (5 if args.quick else 10))
    pulls = args.bank_pulls or (60 if args.quick else 200)
    seconds = args.bank_seconds or (10.0 if args.quick else 60.0)
    command = "python -m benchmarks.bench_compare_real " + " ".join(sys.argv[1:] if argv is None else argv)
    t0 = time.time()
    sections = []
    best: dict[str, dict] = {}
    sampler_best: dict[str, dict] = {}
    if not args.banks_only:
        from pmcbandit.compare.compare import DEFAULT_EPSILON
    store = run_file(args.runs_dir, "bench_compare_real_banks.json")
    saved = json.loads(store.read_text()) if args.reuse_banks and store.exists() else {}
    sampler_store = run_file(args.runs_dir, "bench_compare_real_sampler_banks.json")
    sampler_saved = json.loads(sampler_store.read_text()) if args.reuse_banks and sampler_store.exists() else {}
    for name in args.models.split(","):
        if not name:
            continue
        if name in saved:
            names, banked = saved[name]["names"], [(np.asarray(x), np.asarray(c)) for x, c in saved[name]["banks"]]
        else:
            names, banked = bank(name, pulls, seconds, seed=2026)
            saved[name] = dict(names=names, banks=[(x.tolist(), c.tolist()) for x, c in banked])
            store.write_text(json.dumps(saved))
        if args.banks_only:
            print(name, [x.size for x, _ in banked], flush=True)
            continue
        text, best[name] = model_section(name, names, banked, seeds, DEFAULT_EPSILON)
        sections.append(text)
        print(text, flush=True)
    for name in (args.samplers.split(",") if args.samplers is not None else SAMPLER_MODELS):
        if not name:
            continue
        if name in sampler_saved:
            names, rows = sampler_saved[name]["names"], [np.asarray(r) for r in sampler_saved[name]["rows"]]
        else:
            names, rows = sampler_bank(name, args.sampler_runs or (8 if args.quick else 30), 4 * seconds, seed=2026,
                                       workers=args.bank_workers)
            sampler_saved[name] = dict(names=names, rows=[r.tolist() for r in rows])
            sampler_store.write_text(json.dumps(sampler_saved))
        if args.banks_only:
            print(name, [len(r) for r in rows], flush=True)
            continue
        text, sampler_best[name] = sampler_section(name, names, rows, seeds, DEFAULT_EPSILON)
        sections.append(text)
        print(text, flush=True)
    if args.banks_only:
        return ""
    tasks = [(name, seed) for seed in range(args.live_seeds) for name in args.models.split(",") if name]
    runs = _live_runs(tasks, run_file(args.runs_dir, "bench_compare_real_live.json"), args.live_workers,
                      reuse=args.reuse_banks and not args.live_seeds)
    if runs:
        sections.append(live_section(runs, best))
    jobs = [(name, seed) for seed in range(args.live_sampler_seeds) for name in SAMPLER_MODELS]
    sampler_runs = _live_runs(jobs, run_file(args.runs_dir, "bench_compare_real_sampler_live.json"), args.live_workers,
                              reuse=not args.live_sampler_seeds, sampler=True)
    if sampler_runs:
        sections.append(live_section(sampler_runs, sampler_best, SAMPLER_LIVE_TITLE, SAMPLER_CAP))
    head = (f"## compare_samplers on real evidence pools (`bench_compare_real`)\n\n"
            f"Machine: {machine()}; {utc_now()}; command `{command}`; wall {time.time() - t0:.0f} s. "
            f"Both rules are replayed on the same banks and seeds (the evidence banks' CPU costs were recorded on a "
            f"2-core VM shared with other jobs, so they are inflated by contention alike for both; the sampler banks' "
            f"on 16 cores of the lent machine, see (2) below). Evidence banks: at most {pulls} pulls and {seconds:g} "
            f"CPU s per arm; "
            f"{len(seeds)} seeds; delta = {DELTA}; epsilon (new rule) = {DEFAULT_EPSILON}; cap "
            f"{CAP_SECONDS:g} s of pull cost.\n\n" + (__doc__.split("\n\n", 1)[1].split("    .venv")[0]))
    md = head + "\n" + CAVEATS + "\n" + "\n".join(sections)
    write_section("bench_compare_real", md)
    return md


if __name__ == "__main__":
    main()
