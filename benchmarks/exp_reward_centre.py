"""Experiment: how the centre ``c`` of the squared loss affects allocation on Fig. 2's CIR pool.

Run as ``.venv/bin/python -m benchmarks.exp_reward_centre [--reps R] [--strikes K ...]``; writes
``benchmarks/results/exp_reward_centre.md``.

The squared reward is ``-(X - c)^2`` with ``E[(X - c)^2] = V_k + (mu - c)^2`` (Thm 2, App. B).
Any constant ``c`` leaves the regret's target unchanged, but the offset ``(mu - c)^2`` and the
wider range of the losses slow every policy down (:mod:`pmcbandit.policies.centring`). At K = 0.06 most
paths finish out of the money, so a first observation is often 0 against a price near 18, an
offset of ~340 beside per-path variances from 1.4. On the pre-drawn paths of
``benchmarks.fig2_cir`` (its ``draw_paths`` and ``pilot``), every bandit runs 10^5 single-path
pulls with three centres:

* ``first``: the first observation for good (``centre="first"``, pmcbandit's rule before the
  running centre);
* ``running``: the running mean, re-applied after pull 2, 4, 8, ... (``centre="running"``, the
  default);
* ``price``: an oracle centre at the reference price, not available to a user: what a perfect
  centre would give.

For Thompson sampling a fourth row, ``running, coins kept``, runs the running centre through
``pmcbandit.run`` with a policy whose ``recentre`` leaves the Beta counts as they are (coins
drawn under earlier centres keep counting) instead of resetting them to their expectations,
the choice :mod:`pmcbandit.policies.thompson` makes. Reported: MSE x n over the best arm's by
Thm 1's identity (sum_k V_k T_k(n) / n with the pilot's variances), mean ± SE over repetitions;
every row of a repetition sees the same paths and policy stream.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from benchmarks._common import machine, utc_now, write_section
from benchmarks.fig2_cir import STRIKES, draw_paths, pilot

N_SAMPLES = 100_000
POLICIES = ("thompson", "kl_ucb", "ucb1", "ucb_v")
CENTRES = ("first", "running", "price")
KEPT = "running, coins kept"


def _coins_kept_pulls(matrix, seed) -> np.ndarray:
    """Thompson sampling with a running centre whose re-centrings leave the counts alone."""
    import pmcbandit
    from pmcbandit.policies import get_policy
    from pmcbandit.policies.base import recentre_state

    pol = get_policy("thompson")._replace(recentre=recentre_state)
    res = pmcbandit.run(
        matrix.to_arms(0),
        pol,
        budget=pmcbandit.Pulls(N_SAMPLES),
        combine="uniform",
        random_seed=seed,
        centre="running",
        progressbar=False,
    )
    return np.bincount(res.history.column("arm"), minlength=matrix.n_arms)


def one_repetition(strike: float, rep: int, price: float) -> dict:
    from pmcbandit.simulate import RewardMatrix, replication_generators, simulate

    values, *_ = draw_paths(strike, N_SAMPLES, 2014 + 7919 * rep)
    matrix = RewardMatrix(values)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in POLICIES:
            for c in CENTRES:
                out[p, c] = simulate(
                    p, matrix, N_SAMPLES, 1, 1000 + rep, checkpoints=[N_SAMPLES], centre=price if c == "price" else c
                ).pulls[0]
        # The replication's generator: the live run then uses the simulator's policy stream.
        out["thompson", KEPT] = _coins_kept_pulls(matrix, replication_generators(1000 + rep, 1)[0])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--strikes", type=float, nargs="+", default=list(STRIKES))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    command = "python -m benchmarks.exp_reward_centre " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        "## exp_reward_centre: centre of the squared loss, CIR caplet (Fig. 2's pool)",
        "",
        f"- machine: {machine()}; date: {utc_now()}; command: `{command.strip()}`",
        f"- {args.reps} repetitions x {N_SAMPLES:,} single-path pulls per strike (paths of benchmarks.fig2_cir); "
        "value: MSE × n over the best arm's, by Thm 1's identity; mean ± SE over repetitions",
        "",
    ]
    with ProcessPoolExecutor(args.jobs) as pool:
        pilots = {k: pool.submit(pilot, k, 200_000, 100_000, 7) for k in args.strikes}
        pilots = {k: f.result() for k, f in pilots.items()}
        futures = {
            (k, r): pool.submit(one_repetition, k, r, pilots[k]["price"])
            for k in args.strikes
            for r in range(args.reps)
        }
        for k in args.strikes:
            pil = pilots[k]
            v, best = pil["variances"], pil["best"]
            runs = [futures[k, r].result() for r in range(args.reps)]
            lines += [
                f"### K = {k}: reference price {pil['price']:.4f}; best arm θ = {best / 10:.1f}, V* = {v[best]:.3g}",
                "",
                "| policy | centre | MSE × n / best arm's | ± SE | worst repetition |",
                "|---|---|---:|---:|---:|",
            ]
            for key in runs[0]:
                ratio = np.array([r[key] @ v / N_SAMPLES for r in runs]) / v[best]
                se = ratio.std(ddof=1) / np.sqrt(args.reps) if args.reps > 1 else float("nan")
                lines.append(f"| {key[0]} | {key[1]} | {ratio.mean():.3f} | {se:.3f} | {ratio.max():.3f} |")
            lines.append("")
    text = "\n".join(lines)
    write_section("exp_reward_centre", text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
