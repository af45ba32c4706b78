"""Experiment: how the centre ``c`` of the squared loss affects allocation on Fig. 2's CIR pool.

Run as ``.venv/bin/python -m benchmarks.exp_reward_centre [--reps R] [--strike K]``; writes
``benchmarks/results/exp_reward_centre.md``.

The squared reward is ``-(X - c)^2`` with ``E[(X - c)^2] = V_k + (mu - c)^2`` (Thm 2, App. B).
Any constant ``c`` leaves the regret's target unchanged, but ``pmcbandit.run`` takes ``c`` = the
run's first observation. At K = 0.06 most paths finish out of the money, so that observation is
often 0, against a price near 18: every arm's mean loss then carries an offset of ~340 beside
per-path variances from 1.4 (best arm) upwards, and the policy must see through it. This compares,
on the same pre-drawn paths as ``benchmarks.fig2_cir`` (its ``draw_paths`` and ``pilot``), the
default centre with an *oracle* centre at the reference price (``simulate(centre=...)``), for
Thompson sampling and KL-UCB under their default (per-arm) ranges. The oracle centre is not
available to a user; it measures how much a better centre (e.g. a running mean) could gain.
Reported: MSE x n over the best arm's by Thm 1's identity, mean ± SE over repetitions.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from benchmarks._common import machine, utc_now
from benchmarks.fig2_cir import RESULTS, draw_paths, pilot

N_SAMPLES = 100_000
POLICIES = ("thompson", "kl_ucb")


def one_repetition(strike: float, rep: int, price: float) -> dict:
    from pmcbandit.simulate import RewardMatrix, simulate

    values, *_ = draw_paths(strike, N_SAMPLES, 2014 + 7919 * rep)
    matrix = RewardMatrix(values)
    return {(p, centre): simulate(p, matrix, N_SAMPLES, 1, 1000 + rep, checkpoints=[N_SAMPLES],
                                  centre=None if centre == "first observation" else price).pulls[0]
            for p in POLICIES for centre in ("first observation", "reference price")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--strike", type=float, default=0.06)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    pil = pilot(args.strike, 200_000, 100_000, 7)
    v, best = pil["variances"], pil["best"]
    with ProcessPoolExecutor(args.jobs) as pool:
        runs = list(pool.map(one_repetition, [args.strike] * args.reps, range(args.reps), [pil["price"]] * args.reps))
    command = "python -m benchmarks.exp_reward_centre " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        f"## exp_reward_centre: centre of the squared loss, CIR caplet K = {args.strike}",
        "",
        f"- machine: {machine()}; date: {utc_now()}; command: `{command.strip()}`",
        f"- {args.reps} repetitions x {N_SAMPLES:,} single-path pulls (paths of benchmarks.fig2_cir); "
        f"reference price {pil['price']:.4f}; best arm θ = {best / 10:.1f}, V* = {v[best]:.3g}",
        "",
        "| policy | centre | MSE × n / best arm's (Thm 1 identity) | ± SE |",
        "|---|---|---:|---:|",
    ]
    for key in runs[0]:
        ratio = np.array([r[key] @ v / N_SAMPLES for r in runs]) / v[best]
        lines.append(f"| {key[0]} | {key[1]} | {ratio.mean():.3f} | {ratio.std(ddof=1) / np.sqrt(args.reps):.3f} |")
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "exp_reward_centre.md").write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
