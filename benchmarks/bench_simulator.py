"""Throughput of the replicated-run simulator (rounds per second per core), per policy.

Run as ``.venv/bin/python -m benchmarks.bench_simulator`` (``--quick`` for a smoke run,
written to the git-ignored ``benchmarks/out/``).
Each policy is measured in a fresh process (``--worker NAME``): a small run first
compiles the numba loop, then ``R`` replications of ``N`` rounds of the Fig. 1
problem (two scaled-Bernoulli arms of Neufeld et al. 2014, App. E, ``bounds=(0, 1)``)
run on one thread (``n_jobs=1``), then on two (``n_jobs=2``), then with ``parallel=True`` on
``--threads`` numba threads (default: every core; the all-core column, rounds per wall-second). Rates are rounds
(one decision + one observation + one update of one replication) per CPU-second of the
process (``time.process_time``: the machine is shared, and wall time would count
the time the process waits for a core) and per wall-second. The same process times
the live loop, ``pmcbandit.run`` with a ``Pulls`` budget, on the same problem, so the
speed-up of the simulator is measured side by side. For KL-UCB and Thompson sampling the
simulator is also timed with the package of the revision ``--against REV`` (:mod:`benchmarks._revision`;
default :data:`PREVIOUS_KERNELS`, the replication-at-a-time loop before its uniforms were drawn inside it,
before the one-evaluation KL-UCB search and before the Gammas' second squeeze), a fresh process per revision,
best of three, and its runs compared with the working tree's. The earlier kernels (bisection of every index
every round, Box-Muller Beta draws; the lock-step loop) are compared in the results table of that time. Goals: >= 20M rounds/s/core for the cheap
policies, >= 10M for KL-UCB and Thompson sampling.

The markdown section is printed and written to ``benchmarks/results/bench_simulator.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from benchmarks import _revision
from benchmarks._common import machine

RESULTS = Path(__file__).resolve().parent / "results"
POLICIES = ("uniform", "oracle", "ucb1", "ucb_v", "kl_ucb", "thompson")
# Rounds per replication: the per-round cost of KL-UCB and Thompson is ~50x that of UCB1.
ROUNDS = {"kl_ucb": 20_000, "thompson": 20_000}
#: The last commit with the previous replication-at-a-time kernels (the parent of the commit that draws the
#: uniforms inside the loop); KL-UCB and Thompson sampling, whose goals are below, are timed against it.
PREVIOUS_KERNELS = "7c193f2"
# Goals of the policies timed against a previous revision (M rounds / CPU-s).
GOALS = {"kl_ucb": 10.0, "thompson": 10.0}
DEFAULT_ROUNDS, REPS = 200_000, 256


def kernel_rates(name: str, quick: bool) -> dict:
    """Rounds per CPU second of ``simulate`` for ``name`` in this process's :mod:`pmcbandit`
    (:mod:`benchmarks._revision`), after a compile run, best of three, one thread; a SHA-256 of the runs' arrays
    (pulls, pulls over time, estimates, estimates over time, arm sums)."""
    import hashlib

    import numpy as np

    from benchmarks._revision import package_revision
    from pmcbandit.simulate import ScaledBernoulli, simulate

    arms = ScaledBernoulli(0.5, [0.4, 0.8])
    n = ROUNDS.get(name, DEFAULT_ROUNDS) // (20 if quick else 1)
    reps = REPS // (4 if quick else 1)
    simulate(name, arms, 1000, 4, 0, bounds=(0, 1))  # compile
    best = 0.0
    for _ in range(3):
        c0 = time.process_time()
        res = simulate(name, arms, n, reps, 1, bounds=(0, 1), checkpoints=20)
        best = max(best, n * reps / (time.process_time() - c0))
    fields = ("pulls", "pulls_at", "estimate", "estimate_at", "arm_sum")
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(getattr(res, f)).tobytes() for f in fields)).hexdigest()
    return dict(rate=float(best), digest=digest, package=package_revision())


def worker(name: str, quick: bool, threads: int) -> dict:
    import numba
    import numpy as np

    import pmcbandit
    from pmcbandit.simulate import ScaledBernoulli, simulate

    arms = ScaledBernoulli(0.5, [0.4, 0.8])
    kwargs = {"arm": 0} if name == "oracle" else {}
    n = ROUNDS.get(name, DEFAULT_ROUNDS) // (20 if quick else 1)
    reps = REPS // (4 if quick else 1)
    simulate(name, arms, 1000, 4, 0, bounds=(0, 1), policy_params=kwargs)  # compile
    out = {"policy": name, "rounds": n, "reps": reps}
    for jobs in (1, 2):
        c0, w0 = time.process_time(), time.perf_counter()
        res = simulate(name, arms, n, reps, 1, bounds=(0, 1), policy_params=kwargs, n_jobs=jobs, checkpoints=20)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        out[f"cpu_rate_{jobs}"] = n * reps / cpu
        out[f"wall_rate_{jobs}"] = n * reps / wall
    # All cores: numba threads over the replications (parallel=True). Its runs equal the 1-thread ones;
    # it is timed on the full-size rounds and threads / 4 times the replications (also with --quick: the
    # all-core run must last long enough to time), total rounds / wall seconds, best of two.
    numba.set_num_threads(threads)
    par = simulate(name, arms, n, reps, 1, bounds=(0, 1), policy_params=kwargs, checkpoints=20, parallel=True)
    fields = ("pulls", "pulls_at", "estimate", "estimate_at", "arm_sum", "arm_sum_sq")
    out["parallel_identical"] = all(np.array_equal(getattr(res, f), getattr(par, f)) for f in fields)
    par_n, par_reps = ROUNDS.get(name, DEFAULT_ROUNDS), REPS * max(1, threads // 4)
    best_wall = 0.0
    for _ in range(2):
        w0 = time.perf_counter()
        simulate(name, arms, par_n, par_reps, 1, bounds=(0, 1), policy_params=kwargs, checkpoints=20, parallel=True)
        best_wall = max(best_wall, par_n * par_reps / (time.perf_counter() - w0))
    out["wall_rate_parallel"] = best_wall
    out["threads"], out["par_reps"], out["par_rounds"] = threads, par_reps, par_n
    out["mean_suboptimal"] = float(res.pulls[:, 1].mean())
    # The live loop on the same problem, for the side-by-side ratio.
    live_n = 300 if quick else 3000
    live_arms = arms.to_arms()
    pmcbandit.run(
        live_arms,
        name,
        budget=pmcbandit.Pulls(50),
        combine="uniform",
        random_seed=0,
        bounds=(0, 1),
        policy_kwargs=kwargs,
        progressbar=False,
    )
    c0 = time.process_time()
    pmcbandit.run(
        live_arms,
        name,
        budget=pmcbandit.Pulls(live_n),
        combine="uniform",
        random_seed=np.random.default_rng(2),
        bounds=(0, 1),
        policy_kwargs=kwargs,
        progressbar=False,
    )
    out["live_cpu_rate"] = live_n / (time.process_time() - c0)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="numba threads of the all-core column (default: every core)")
    _revision.add_argument(parser, PREVIOUS_KERNELS, "simulator kernels")
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.quick, args.threads)))
        return 0
    rows, load = [], []
    for name in POLICIES:
        cmd = [sys.executable, "-m", "benchmarks.bench_simulator", "--worker", name, "--threads",
               str(args.threads)] + (["--quick"] if args.quick else [])
        load.append(os.getloadavg()[0])
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return done.returncode
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    commit = _revision.resolve(args.against)
    with _revision.checkout(commit) as previous:
        kernels = {name: {tag: _revision.call(where, "benchmarks.bench_simulator:kernel_rates", name=name,
                                              quick=args.quick) for tag, where in (("new", None), ("previous", previous))}
                   for name in GOALS}
    command = (f"python -m benchmarks.bench_simulator --threads {args.threads} --against {commit[:12]}"
               + (" --quick" if args.quick else ""))
    lines = [
        "## Replicated-run simulator throughput",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. Command: `{command}`. "
        f"1-minute load average while measuring: {min(load):.1f}-{max(load):.1f} on {os.cpu_count()} cores "
        "(a machine shared with other agents: the CPU-time rates are the ones to read; wall-time rates, "
        "2-thread ones included, are not meaningful under that load).",
        "",
        "Problem: Fig. 1's two scaled-Bernoulli arms (s = 0.4, 0.8), `bounds=(0, 1)`. A round = one decision, "
        "one observation, one update, of one replication. Each policy in a fresh process, after a compile run.",
        "",
        "| policy | R x N | M rounds / CPU-s, 1 thread | M rounds / wall-s, 1 thread | M rounds / wall-s, 2 threads "
        f"| all cores: M rounds / wall-s, {args.threads} numba threads | all cores / (1 thread, CPU-s) "
        "| same runs | live loop, rounds / CPU-s | simulator / live |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['policy']} | {r['reps']} x {r['rounds']:,} | {r['cpu_rate_1'] / 1e6:.1f} | "
            f"{r['wall_rate_1'] / 1e6:.1f} | {r['wall_rate_2'] / 1e6:.1f} | {r['wall_rate_parallel'] / 1e6:.1f} "
            f"({r['par_reps']} x {r['par_rounds']:,}) | "
            f"{r['wall_rate_parallel'] / r['cpu_rate_1']:.1f}x | {'yes' if r['parallel_identical'] else 'NO'} | "
            f"{r['live_cpu_rate']:,.0f} | {r['cpu_rate_1'] / r['live_cpu_rate']:,.0f}x |"
        )
    lines += [
        "",
        f"All cores: `simulate(..., parallel=True)` with `numba.set_num_threads({args.threads})` (numba.prange over "
        "parts of a block of replications; the chunks' randomness drawn on as many Python threads), best of two, "
        "total rounds / wall seconds, on the R x N in brackets (full-size rounds, max(1, threads / 4) x 256 "
        "replications, also with --quick); 'same runs': its result arrays on the first R x N equal the 1-thread "
        "run's. Per core: the "
        "1-thread column, rounds / CPU second. The 2-thread column is `n_jobs=2` (Python threads over blocks).",
    ]
    ok = [r["policy"] for r in rows if r["policy"] not in GOALS and r["cpu_rate_1"] >= 20e6]
    lines += [
        "",
        f"Goal >= 20M rounds/s/core: met by {', '.join(ok) if ok else 'none'}.",
        "",
        f"### New kernels beside the package at `{commit[:12]}` (a fresh process each, best of three, 1 thread)",
        "",
        "| policy | previous, M rounds / CPU-s | new, M rounds / CPU-s | new / previous | same runs as previous "
        "| goal | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in kernels.items():
        new, prev = r["new"]["rate"] / 1e6, r["previous"]["rate"] / 1e6
        goal = GOALS[name]
        lines.append(f"| {name} | {prev:.2f} | {new:.2f} | {new / prev:.2f}x "
                     f"| {'yes' if r['new']['digest'] == r['previous']['digest'] else 'no'} "
                     f"| >= {goal:.0f} | {'yes' if new >= goal else 'no'} |")
    lines += [
        "",
        "Previous: the package at `--against` (default :data:`PREVIOUS_KERNELS`, "
        "the package loop before the changes below (uniforms pre-drawn by the Generators, every pulled "
        "KL-UCB index searched from a testing pair, Gammas without the second squeeze). New: KL-UCB, Thompson sampling, uniform and oracle run one "
        "replication at a time over a chunk (`pmcbandit.simulate.kernel.run_replications`), each replication's "
        "state on its own cache lines; the policy's uniforms (and the scaled-Bernoulli arm draws) are drawn "
        "inside the loop from the replications' numpy PCG64 states, the same doubles the Generators give "
        "(other bit generators, and the Gaussian arms' normals, are pre-drawn in per-replication rows); "
        "KL-UCB's f(t) tabulated once per chunk and its grid points kept across chunks, Thompson's "
        "select inlined into the loop and only the changed count's Gamma constants refreshed. "
        "KL-UCB: each arm's index is a grid point (2^-20) found from the arm's previous point, moved first by a "
        "second-order prediction when the arm was pulled (its d/dp KL kept from the last search, no logarithm); "
        "the predicted point's KL is computed exactly and the point below it is shown to be under f(t)/n by a "
        "Taylor bound with a rounding margin (else safeguarded Newton steps on pairs of points decide); a point "
        "is kept while the arm's count, loss sum and scale are unchanged and f(t) stays below KL * n * (1 - 1e-14); "
        "the pulled arm is not searched at all when a bound without logarithms shows its index strictly above every "
        "other arm's value or upper bound (then it is the only maximum, whatever the tie-break uniform): KL's "
        "second-order expansion in the mean about the arm's last searched point bounds KL there, and the chord "
        "and the tangent of the convex KL in q bound it at the grid point below the other arm's value, with a "
        "rounding slack (tests/simulate/test_kl_ucb_fast.py); in a replay of this problem about 2% of rounds "
        "still search the pulled arm. "
        "Thompson: two Generator uniforms per decision key a counter-based SplitMix64 stream; "
        "Gammas by Marsaglia-Tsang on ziggurat normals, with each arm's Gamma constants refreshed "
        "only when its counts change, and a second squeeze (u < 1 - 1.5 d c^4 x^4 - margin, |c x| <= 1/2) that "
        "accepts only pairs the logarithmic test accepts, so that about one pair in 10^5 instead of one in ten "
        "reaches the logarithms at the large shapes of a long run. Both replay the live policy pull for pull (tests/simulate/test_simulate.py).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = RESULTS.parent / "out" if args.quick else RESULTS  # smoke runs stay out of results/
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_simulator.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
