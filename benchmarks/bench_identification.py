"""Best-K identification: Jiang, Li & Qiao (2017) Figs. 1-2 at scale, and the speed of the rules.

Run as ``.venv/bin/python -m benchmarks.bench_identification`` (``--quick`` for a smoke run;
``--reps``, ``--ns`` to choose). Everything runs in the stopping-time simulator
(:func:`pmcbandit.identification.simulate.simulate_stopping`), which shares the algorithms' kernels
with the live loop and replays it pull for pull (``tests/identification/test_simulate.py``).

1. **Samples to stop** (mean over ``--reps`` seeded runs, 95 % t interval) of LUCB1, lil'LUCB,
   LUCB++, lil'RandLUCB, lil'CLUCB (and lil'UCB for K = 1), faithful and heuristic (LUCB1 has one
   form), at N in ``--ns`` (default 10, 20, 50, 100, 200), on the paper's instances with Gaussian
   rewards of variance 1/4 (sigma = 1/2) and target error nu = 0.01: Fig. 1, 1-sparse and
   0.3-exponential with K = 2 and K = N/2; Fig. 2, K = 1, 1-sparse and lil-exponential with
   alpha = 0.3 and 0.6. Faithful parameters use epsilon = 0.01 (the paper does not state its epsilon).
   Errors of each cell are counted.
2. **Heuristic lil'UCB against an independent implementation**: a plain-NumPy transcription of the
   published pseudo-code (Jamieson et al. 2014, Alg. 1 with their heuristic beta = 1/2,
   lambda = 1 + 10/N, delta = nu/5, epsilon = 0; the radius with sigma and the "+2" of Jiang et al.
   Sec. 5, as pmcbandit's), on the same instances; ratio of mean samples (goal within [0.8, 1.25]).
3. **Per-round select + update at N = 1000** of the live Identifier functions (lil'RandLUCB,
   LUCB++), beside a plain per-round NumPy implementation of the same rule (goal <= 30 us).
4. **Simulator throughput at N = 10** (samples per CPU second), beside the package of the revision
   ``--against REV`` (:mod:`benchmarks._revision`; default: the merge base of ``HEAD`` and ``main``; a fresh
   process per revision, best of three) and a plain-NumPy loop
   (goal >= 5 M), and with ``parallel=True`` on ``--threads`` numba threads (default: every core;
   samples per wall second, the all-core column). ``--throughput`` runs only this item and writes
   ``benchmarks/results/bench_identification_throughput.md`` (``--throughput-reps`` replications).
5. **A halved radius**: error rates of the faithful algorithms built with sigma / 2 (rewards keep
   sigma) on the delta-correctness instance of ``tests/identification/test_delta_correctness.py``.

Writes ``benchmarks/results/bench_identification.md``, and every cell to ``bench_identification.json`` in
``--runs-dir`` (default ``benchmarks/out/``, not kept in the repository).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from scipy import stats

from benchmarks import _revision
from benchmarks._common import add_runs_dir, machine, run_file, utc_now, write_section

NU = 0.01
SIGMA = 0.5
EPSILON = 0.01
#: No revision holds the simulator before its rewrite in a form that imports (the parent of the rewrite's commit,
#: d2072d7, fails on import): its comparison with the rewrite (top k by quickselect every round, a Generator
#: spawned per replication, Box-Muller rewards) is recorded in ``results/bench_identification_throughput.md``,
#: and item 4 compares with the merge base by default.
PREVIOUS_SIMULATOR = None
ALGOS = ("lucb1", "lil_lucb", "lucb_pp", "lil_rand_lucb", "lil_clucb")


# --- the paper's panels -----------------------------------------------------------------------------
def panels(ns):
    from pmcbandit.identification.instances import exponential, lil_exponential, one_sparse

    out = []
    for n in ns:
        for k in (2, n // 2):
            out.append(("Fig. 1", "1-sparse", n, k, one_sparse(n, k)))
            out.append(("Fig. 1", "0.3-exponential", n, k, exponential(n, k, 0.3)))
        out.append(("Fig. 2", "1-sparse", n, 1, one_sparse(n, 1)))
        for alpha in (0.3, 0.6):
            out.append(("Fig. 2", f"lil-exp a={alpha}", n, 1, lil_exponential(n, alpha)))
    return out


def build(name: str, mode: str, k: int):
    from pmcbandit.identification import get_identifier

    kw = dict(delta=NU, sigma=SIGMA)
    if name != "lil_ucb":
        kw["k"] = k
    if name != "lucb1":
        kw["mode"] = mode
        if mode == "faithful":
            kw["epsilon"] = EPSILON
    return get_identifier(name, **kw)


def cell(name, mode, k, means, reps, seed, max_samples):
    from pmcbandit.identification.simulate import simulate_stopping

    res = simulate_stopping(
        build(name, mode, k), means, reps=reps, scale=SIGMA, random_seed=seed, max_samples=max_samples
    )
    s = res.samples.astype(float)
    half = stats.t.ppf(0.975, reps - 1) * s.std(ddof=1) / np.sqrt(reps) if reps > 1 else np.nan
    return dict(
        mean=float(s.mean()),
        half=float(half),
        errors=int((~res.correct).sum()),
        unstopped=int((~res.stopped).sum()),
        reps=reps,
    )


# --- independent lil'UCB heuristic --------------------------------------------------------------
def plain_lil_ucb(means, rng, max_samples):
    """Jamieson et al. (2014) Alg. 1, heuristic parameters, in plain NumPy (independent of pmcbandit)."""
    n_arms = means.size
    beta, lam, delta, eps = 0.5, 1.0 + 10.0 / n_arms, NU / 5.0, 0.0
    counts = np.ones(n_arms)
    sums = rng.normal(means, SIGMA)
    t = n_arms
    while t < max_samples:
        if np.any(counts >= 1.0 + lam * (t - counts)):
            break
        radius = (
            (1 + beta)
            * (1 + np.sqrt(eps))
            * np.sqrt(2 * SIGMA**2 * (1 + eps) / counts * np.log(np.log((1 + eps) * counts + 2) / delta))
        )
        arm = int(np.argmax(sums / counts + radius))
        sums[arm] += rng.normal(means[arm], SIGMA)
        counts[arm] += 1
        t += 1
    return t, int(np.argmax(counts)) == int(np.argmax(means))


# --- plain per-round NumPy LUCB++ / lil'RandLUCB ------------------------------------------------------
def plain_round(n, total, k, omega_high, omega_low, rng, randomised):
    means = total / n
    high = np.zeros(n.size, dtype=bool)
    high[np.argsort(-means, kind="mergesort")[:k]] = True
    omega = np.where(high, omega_high, omega_low)
    r = np.sqrt(2 * SIGMA**2 / n * np.log(np.log(n + 2.0) / omega))
    lower, upper = means - r, means + r
    h = np.flatnonzero(high)[np.argmin(lower[high])]
    l = np.flatnonzero(~high)[np.argmax(upper[~high])]
    if lower[h] >= upper[l]:
        return None
    if randomised:
        return (h if rng.random() < n[l] / (n[h] + n[l]) else l,)
    return (h, l)


def per_round_times(n_arms=1000, rounds=3000):
    from pmcbandit.identification import lil_rand_lucb, lucb_pp
    from pmcbandit.identification.base import ArmStats

    out = {}
    for factory, randomised in ((lil_rand_lucb, True), (lucb_pp, False)):
        algo = factory(k=2, delta=NU, sigma=SIGMA, mode="heuristic")
        rng = np.random.default_rng(0)
        n = rng.integers(20, 200, n_arms)
        total = rng.normal(0.0, 0.05, n_arms) * n
        state = ArmStats(n.astype(np.int64), total, total * 0.0, int(n.sum()))
        for _ in range(20):  # compile, fill the radius tables
            algo.stop(state)
            state = algo.update(state, algo.select(rng, state).arms[0], 0.0)
        start = time.process_time()
        for _ in range(rounds):
            algo.stop(state)
            for arm in algo.select(rng, state).arms:
                state = algo.update(state, arm, rng.normal(0.0, SIGMA))
        ours = (time.process_time() - start) / rounds * 1e6
        n2, t2 = n.astype(float), total.copy()
        high_o, low_o = NU / (2 * (n_arms - 2)), NU / 4
        start = time.process_time()
        for _ in range(rounds):
            arms = plain_round(n2, t2, 2, high_o, low_o, rng, randomised) or (0,)
            for arm in arms:
                n2[arm] += 1
                t2[arm] += rng.normal(0.0, SIGMA)
        plain = (time.process_time() - start) / rounds * 1e6
        out[algo.name] = dict(ours_us=ours, plain_us=plain)
    return out


def simulator_runs(name: str, reps: int, seed: int) -> dict:
    """Samples per CPU second at N = 10 of ``name`` (heuristic, K = 2, 1-sparse) in this process's
    :mod:`pmcbandit` (:mod:`benchmarks._revision`), compiled by a short run, best of three; a SHA-256 of the
    runs' arrays."""
    import hashlib

    from benchmarks._revision import package_revision
    from pmcbandit.identification.instances import one_sparse
    from pmcbandit.identification.simulate import simulate_stopping

    means = one_sparse(10, 2)
    algo = build(name, "heuristic", 2)
    simulate_stopping(algo, means, reps=2, random_seed=0)  # compile
    best = 0.0
    for _ in range(3):
        start = time.process_time()
        res = simulate_stopping(algo, means, reps=reps, random_seed=seed)
        best = max(best, res.samples.sum() / (time.process_time() - start))
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in res)).hexdigest()
    return dict(rate=float(best), digest=digest, package=package_revision())


def simulator_throughput(reps=400, threads=None, against=PREVIOUS_SIMULATOR):
    """Samples per CPU second at N = 10 of the simulator with the working tree's package and with the package of
    the revision ``against`` (:func:`simulator_runs`, a fresh process each), and of a plain NumPy loop.
    With ``threads``, also samples per wall second of ``parallel=True`` on that many numba threads (all cores),
    best of two, and whether its runs equal the serial ones."""
    import numba

    from pmcbandit.identification.instances import one_sparse
    from pmcbandit.identification.simulate import simulate_stopping

    means = one_sparse(10, 2)
    out = {}
    commit = _revision.resolve(against)
    with _revision.checkout(commit) as previous:
        runs = {name: {tag: _revision.call(where, "benchmarks.bench_identification:simulator_runs", name=name,
                                           reps=reps, seed=1) for tag, where in (("ours", None), ("previous", previous))}
                for name in ("lucb_pp", "lil_rand_lucb", "lil_clucb")}
    for name in runs:
        algo = build(name, "heuristic", 2)
        best = {tag: r["rate"] for tag, r in runs[name].items()}
        rng = np.random.default_rng(1)
        start = time.process_time()
        samples = 0
        for _ in range(max(reps // 20, 2)):
            n = np.ones(10)
            total = rng.normal(means, SIGMA)
            t = 10
            while True:
                arms = plain_round(n, total, 2, NU / 16, NU / 4, rng, name == "lil_rand_lucb")
                if arms is None:
                    break
                for arm in arms:
                    n[arm] += 1
                    total[arm] += rng.normal(means[arm], SIGMA)
                    t += 1
            samples += t
        plain = samples / (time.process_time() - start)
        out[name] = dict(ours=float(best["ours"]), previous=float(best["previous"]), plain=float(plain), reps=reps,
                         previous_commit=commit[:12],
                         same_as_previous=runs[name]["ours"]["digest"] == runs[name]["previous"]["digest"])
        if threads:
            serial = simulate_stopping(algo, means, reps=reps, random_seed=1)
            before = numba.get_num_threads()
            numba.set_num_threads(threads)
            same = simulate_stopping(algo, means, reps=reps, random_seed=1, parallel=True)
            all_reps = reps * max(1, threads // 2)  # long enough to time on many threads
            wall = 0.0
            for _ in range(2):
                start = time.perf_counter()
                res = simulate_stopping(algo, means, reps=all_reps, random_seed=2, parallel=True)
                wall = max(wall, res.samples.sum() / (time.perf_counter() - start))
            numba.set_num_threads(before)
            out[name].update(all_cores=float(wall), threads=threads, all_reps=all_reps,
                             identical=all(np.array_equal(a, b) for a, b in zip(serial, same)))
    return out


def throughput_markdown(sim, command):
    parallel = next(iter(sim.values())).get("threads")
    lines = [
        "## Identification simulator throughput, N = 10 (new kernels beside the previous ones)",
        "",
        f"- machine: {machine()}; date: {utc_now()}; a machine shared with other agents during the run "
        f"(1-minute load average {os.getloadavg()[0]:.1f} at the end; CPU-time rates, best of three "
        "runs in a fresh process per revision)",
        f"- previous: the package at `{next(iter(sim.values()))['previous_commit']}` (`--against`); new: the "
        "working tree",
        f"- command: `{command}`",
        "- 1-sparse instance, K = 2, heuristic parameters, Gaussian rewards sigma = 1/2, "
        f"{next(iter(sim.values()))['reps']} replications; "
        "one core (the simulator runs its replications in sequence)"
        + (f"; all-core column: {parallel} numba threads" if parallel else ""),
        "",
        "| algorithm | previous, M samples / CPU s | new, M samples / CPU s | speed-up | plain NumPy, M / CPU s "
        "| goal >= 5 M | same runs as previous |" + (" all cores, M samples / wall s | all cores / (1 thread, CPU s) | same runs |"
                              if parallel else ""),
        "|---|---|---|---|---|---|---|" + ("---|---|---|" if parallel else ""),
    ]
    for name, r in sim.items():
        lines.append(
            f"| {name} | {r['previous'] / 1e6:.2f} | {r['ours'] / 1e6:.2f} | "
            f"{r['ours'] / r['previous']:.1f}x | {r['plain'] / 1e6:.3f} | "
            f"{'met' if r['ours'] >= 5e6 else 'not met'} | {'yes' if r['same_as_previous'] else 'no'} |"
            + (f" {r['all_cores'] / 1e6:.2f} | {r['all_cores'] / r['ours']:.1f}x | "
               f"{'yes' if r['identical'] else 'NO'} |" if parallel else "")
        )
    if parallel:
        lines += [
            "",
            f"All cores: `simulate_stopping(..., parallel=True)` with `numba.set_num_threads({parallel})` "
            "(numba.prange over parts of the replications), best of two, total samples / wall seconds on "
            f"{next(iter(sim.values()))['all_reps']} replications (seed 2); 'same runs': on the serial run's "
            "replications (seed 1) its arrays equal the serial ones. Per core: the 'new' column (one thread, "
            "CPU seconds).",
        ]
    lines += [
        "",
        "New: the means and the top-k masks are kept between rounds and repaired for the pulled arms "
        "(`kernels.top_k_repair`, equal to the from-scratch top k, ties included); the replications' stream "
        "states (the words a Generator spawned per replication would give, unchanged) computed in numba "
        "(`identification/_seeds.py`); Gaussian rewards by the ziggurat on a counter-based stream instead of "
        "Box-Muller (other streams unchanged); radius tables shared by the replications.",
    ]
    return "\n".join(lines)


def halved_radius(reps=1000):
    from pmcbandit.identification import get_identifier
    from pmcbandit.identification.simulate import simulate_stopping

    means = np.array([0.5, 0.4, 0.3])
    out = {}
    for name in ("lucb1", "lil_lucb", "lucb_pp", "lil_rand_lucb", "lil_clucb", "lil_ucb"):
        kw = dict(delta=0.1, sigma=SIGMA / 2)
        if name != "lil_ucb":
            kw["k"] = 1
        res = simulate_stopping(get_identifier(name, **kw), means, reps=reps, scale=SIGMA, random_seed=2017)
        out[name] = int((~res.correct).sum())
    return out


# --- report -------------------------------------------------------------------------------------
def markdown(rows, lil, rounds, sim, halved, args, command, elapsed):
    lines = [
        "## Best-K identification: Jiang, Li & Qiao (2017) Figs. 1-2 and the speed of the rules",
        "",
        f"- machine: {machine()}; date: {utc_now()}; this run took {elapsed / 60:.0f} min",
        f"- command: `{command}`",
        f"- Gaussian rewards, sigma = {SIGMA} (variance 1/4), nu = {NU}, faithful epsilon = {EPSILON}; "
        f"{args.reps} runs per cell (fewer where stated); mean samples to stop with a 95 % t half-width",
        "",
    ]
    for fig in ("Fig. 1", "Fig. 2"):
        for mode in ("faithful", "heuristic"):
            mine = [r for r in rows if r["fig"] == fig and r["mode"] == mode]
            if not mine:
                continue
            algos = [a for a in (*ALGOS, "lil_ucb") if any(r["algo"] == a for r in mine)]
            lines += [
                f"### {fig}, {mode}",
                "",
                "| instance | N | K | " + " | ".join(algos) + " | RandLUCB / LUCB++ |",
                "|---|---|---|" + "---|" * (len(algos) + 1),
            ]
            keys = sorted({(r["instance"], r["n"], r["k"]) for r in mine}, key=lambda x: (x[0], x[2] != 2, x[1]))
            for inst, n, k in keys:
                cells, by = [], {}
                for a in algos:
                    r = next((r for r in mine if (r["instance"], r["n"], r["k"], r["algo"]) == (inst, n, k, a)), None)
                    by[a] = r
                    cells.append(
                        "-"
                        if r is None
                        else f"{r['mean']:.4g} ± {r['half']:.2g}"
                        + (f" ({r['errors']} err)" if r["errors"] else "")
                        + (f" ({r['unstopped']} cut)" if r["unstopped"] else "")
                    )
                ratio = (
                    f"{by['lil_rand_lucb']['mean'] / by['lucb_pp']['mean']:.3f}"
                    if by.get("lil_rand_lucb") and by.get("lucb_pp")
                    else "-"
                )
                lines.append(f"| {inst} | {n} | {k} | " + " | ".join(cells) + f" | {ratio} |")
            lines.append("")
    lines += [
        "### Heuristic lil'UCB against a plain-NumPy transcription (same instances, K = 1)",
        "",
        "| instance | N | pmcbandit | transcription | ratio | errors (ours / theirs) |",
        "|---|---|---|---|---|---|",
    ]
    for r in lil:
        lines.append(
            f"| {r['instance']} | {r['n']} | {r['ours']:.4g} | {r['plain']:.4g} | {r['ours'] / r['plain']:.3f} | "
            f"{r['ours_errors']} / {r['plain_errors']} |"
        )
    lines += [
        "",
        "### Speed (CPU time, measured side by side)",
        "",
        "| what | pmcbandit | plain NumPy | ratio |",
        "|---|---|---|---|",
    ]
    for name, r in rounds.items():
        lines.append(
            f"| {name}: select + update per round, N = 1000 (us) | {r['ours_us']:.1f} | {r['plain_us']:.1f} | "
            f"{r['ours_us'] / r['plain_us']:.3f} |"
        )
    for name, r in sim.items():
        lines.append(
            f"| {name}: simulator samples per CPU second, N = 10 | {r['ours'] / 1e6:.2f} M | {r['plain'] / 1e6:.3f} M "
            f"| {r['ours'] / r['plain']:.0f}x |"
        )
    lines += [
        "",
        "### A halved radius (faithful, built with sigma / 2; delta = 0.1; instance 0.5 / 0.4 / 0.3; "
        f"{args.halved_reps} runs)",
        "",
        "| algorithm | errors |",
        "|---|---|",
    ]
    lines += [f"| {name} | {e} |" for name, e in halved.items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    import pmcbandit  # noqa: F401

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[10, 20, 50, 100, 200])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--lil-reps", type=int, default=200)
    parser.add_argument("--halved-reps", type=int, default=1000)
    parser.add_argument("--max-samples", type=int, default=10**8)
    parser.add_argument("--quick", action="store_true", help="N = 10, 20; 10 runs")
    parser.add_argument(
        "--throughput", action="store_true", help="only item 4, written to results/bench_identification_throughput.md"
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="numba threads of the all-core throughput column (default: every core; 0: none)")
    parser.add_argument("--throughput-reps", type=int, default=400, help="replications of the throughput item")
    _revision.add_argument(parser, PREVIOUS_SIMULATOR, "identification simulator")
    add_runs_dir(parser)
    args = parser.parse_args(argv)
    if args.throughput:
        sim = simulator_throughput(args.throughput_reps, args.threads, args.against)
        text = throughput_markdown(
            sim, " ".join([".venv/bin/python -m benchmarks.bench_identification",
                           *(argv if argv is not None else sys.argv[1:])])
        )
        print(text)
        write_section("bench_identification_throughput", text)
        return 0
    if args.quick:
        args.ns, args.reps, args.lil_reps, args.halved_reps = [10, 20], 10, 20, 100
    start = time.perf_counter()
    rows = []
    for fig, inst, n, k, means in panels(args.ns):
        algos = (*ALGOS, "lil_ucb") if k == 1 else ALGOS
        for algo in algos:
            for mode in ("faithful", "heuristic"):
                if algo == "lucb1" and mode == "heuristic":
                    continue
                r = cell(algo, mode, k, means, args.reps, 1000 + n, args.max_samples)
                rows.append(dict(fig=fig, instance=inst, n=n, k=k, algo=algo, mode=mode, **r))
                print(
                    f"{fig} {inst} N={n} K={k} {algo} {mode}: {r['mean']:.4g} ± {r['half']:.2g}",
                    file=sys.stderr,
                    flush=True,
                )
    lil = []
    for fig, inst, n, k, means in panels(args.ns):
        if k != 1:
            continue
        sim = cell("lil_ucb", "heuristic", 1, means, args.lil_reps, 7, args.max_samples)
        rng = np.random.default_rng(7)
        plain = [plain_lil_ucb(means, rng, args.max_samples) for _ in range(args.lil_reps)]
        lil.append(
            dict(
                instance=inst,
                n=n,
                ours=sim["mean"],
                ours_errors=sim["errors"],
                plain=float(np.mean([p[0] for p in plain])),
                plain_errors=int(sum(not p[1] for p in plain)),
            )
        )
    rounds = per_round_times()
    sim = simulator_throughput(args.throughput_reps, args.threads, args.against)
    halved = halved_radius(args.halved_reps)
    command = ".venv/bin/python -m benchmarks.bench_identification " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = markdown(rows, lil, rounds, sim, halved, args, command.strip(), time.perf_counter() - start)
    print(text)
    if not args.quick:
        write_section("bench_identification", text)
        run_file(args.runs_dir, "bench_identification.json").write_text(
            json.dumps(dict(rows=rows, lil_ucb=lil, rounds=rounds, simulator=sim, halved=halved), indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
