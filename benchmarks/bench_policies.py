"""Decision + update time per step of the allocation policies, K = 16 arms.

Run as ``.venv/bin/python -m benchmarks.bench_policies`` (``--quick`` for a short
smoke run). Every pmcbandit policy is timed side by side, in the same process
and interleaved block by block, with a per-step pure-Python policy written in the
style of SMPyBandits (:mod:`benchmarks._reference_policies`). One step is what
the live loop does per pull: ``arm = select(rng, state)`` then
``state = update(rng, state, arm, reward, cost)`` (pmcbandit, immutable state)
or ``arm = ref.choice()`` then ``ref.get_reward(arm, reward)`` (reference,
in-place). Rewards are pre-drawn (scaled-Bernoulli arms of Neufeld et al. 2014,
App. E, reward ``-X^2`` in the known range ``[-1, 0]``) so that only the policy
is timed. Each policy first runs a warm-up (numba compilation, PyTensor
compilation, a realistic non-initial state); then ``REPEATS`` blocks of each
implementation alternate and the table reports the median block (µs per step),
the fastest block, and the ratio of medians. Blocks are timed in CPU time of
the process (``time.process_time``): the machine is shared, and wall time would
count the time the process waits for a core; medians of interleaved blocks are
the figures to compare.

The markdown section is printed and written to ``benchmarks/results/bench_policies.md``.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
from pathlib import Path

import numpy as np

import pmcbandit  # noqa: F401  (configures PyTensor before anything imports it)
from benchmarks._reference_policies import REFERENCE
from pmcbandit.policies import get_policy, thompson
from benchmarks._common import machine

N_ARMS = 16
POOL = 4096
GOALS = {"uniform": 10.0, "ucb1": 10.0, "ucb_v": 10.0, "kl_ucb": 20.0, "thompson": 10.0}
# (row label, factory of our policy, reference key, steps per block)
ROWS = [
    ("uniform", lambda: get_policy("uniform", scale=1.0), None, 2000),
    ("ucb1", lambda: get_policy("ucb1", scale=1.0), "ucb1", 2000),
    ("ucb_v", lambda: get_policy("ucb_v", scale=1.0), "ucb_v", 2000),
    ("kl_ucb", lambda: get_policy("kl_ucb", scale=1.0), "kl_ucb", 1000),
    ("thompson", lambda: thompson.policy(sampler="numba", scale=1.0), "thompson", 2000),
    ("thompson (sampler='pymc')", lambda: thompson.policy(sampler="pymc", scale=1.0), "thompson", 200),
]


def _rewards(rng: np.random.Generator) -> list[list[float]]:
    """Pre-drawn rewards ``-X^2``, ``X = 1/2 + s_k (Z - 1/2)``, as Python floats (cheap to index)."""
    scales = np.linspace(0.1, 1.0, N_ARMS)
    x = 0.5 + scales[:, None] * ((rng.random((N_ARMS, POOL)) < 0.5) - 0.5)
    return (-(x * x)).tolist()


def _time_ours(policy, state, rng, rewards, start, steps):
    select, update = policy.select, policy.update
    t0 = time.process_time()
    for i in range(start, start + steps):
        arm = select(rng, state)
        state = update(rng, state, arm, rewards[arm][i % POOL], 0.0)
    return (time.process_time() - t0) / steps * 1e6, state


def _time_reference(ref, rewards, start, steps):
    choice, get_reward = ref.choice, ref.get_reward
    t0 = time.process_time()
    for i in range(start, start + steps):
        arm = choice()
        get_reward(arm, rewards[arm][i % POOL])
    return (time.process_time() - t0) / steps * 1e6


def _split(policy, state, rng, reward, steps):
    """Select and update alone, on a frozen state (fastest of 5 blocks)."""
    best_select = best_update = np.inf
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(steps):
            policy.select(rng, state)
        best_select = min(best_select, (time.process_time() - t0) / steps * 1e6)
        t0 = time.process_time()
        for _ in range(steps):
            policy.update(rng, state, 3, reward, 0.0)
        best_update = min(best_update, (time.process_time() - t0) / steps * 1e6)
    return best_select, best_update


def run(repeats: int, warmup: int, quick: bool) -> list[dict]:
    root = np.random.default_rng(20140621)
    rewards = _rewards(root)
    rows = []
    for label, factory, ref_key, block in ROWS:
        block = max(block // 10, 20) if quick else block
        ours_rng, ref_rng = root.spawn(2)
        policy = factory()
        state = policy.init(N_ARMS)
        ref = REFERENCE[ref_key](N_ARMS, ref_rng, scale=1.0) if ref_key else None
        n_warm = min(warmup, 10 * block)
        _, state = _time_ours(policy, state, ours_rng, rewards, 0, n_warm)
        if ref is not None:
            _time_reference(ref, rewards, 0, n_warm)
        ours, theirs = [], []
        pos = n_warm
        for _ in range(repeats):
            us, state = _time_ours(policy, state, ours_rng, rewards, pos, block)
            ours.append(us)
            if ref is not None:
                theirs.append(_time_reference(ref, rewards, pos, block))
            pos += block
        select_us, update_us = _split(policy, state, ours_rng, -0.3, max(block // 4, 20))
        rows.append(
            {
                "label": label,
                "ours": float(np.median(ours)),
                "ours_min": float(np.min(ours)),
                "ref": float(np.median(theirs)) if theirs else None,
                "ref_min": float(np.min(theirs)) if theirs else None,
                "select": select_us,
                "update": update_us,
                "steps": pos,
                "goal": GOALS.get(label),
            }
        )
    return rows


def markdown(rows: list[dict], command: str, repeats: int) -> str:
    import numba

    lines = [
        "## Policy decision + update time (K = 16 arms)",
        "",
        f"- machine: {machine()}; Python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- command: `{command}`",
        f"- method: one step = select + update (pmcbandit, immutable state) vs choice + getReward "
        f"(SMPyBandits-style per-step Python reference, `benchmarks/_reference_policies.py`), same "
        f"pre-drawn scaled-Bernoulli rewards, {repeats} interleaved blocks after a warm-up; "
        f"CPU time (`time.process_time`) per step, median block (fastest block in brackets). select/update columns: each alone on a frozen "
        f"state, fastest block.",
        "",
        "| policy | pmcbandit µs/step | reference µs/step | ours / reference | select µs | update µs | goal µs | meets goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ref = f"{r['ref']:.1f} ({r['ref_min']:.1f})" if r["ref"] is not None else "–"
        ratio = f"{r['ours'] / r['ref']:.2f}" if r["ref"] is not None else "–"
        goal = f"≤ {r['goal']:.0f}" if r["goal"] else "–"
        meets = ("yes" if r["ours"] <= r["goal"] else "no") if r["goal"] else "–"
        lines.append(
            f"| {r['label']} | {r['ours']:.1f} ({r['ours_min']:.1f}) | {ref} | {ratio} | "
            f"{r['select']:.1f} | {r['update']:.1f} | {goal} | {meets} |"
        )
    lines += [
        "",
        "SMPyBandits reference figures for this kind of machine (quoted, not measured here): UCB1 ≈ 22 µs, UCB-V ≈ 30 µs, "
        "Thompson ≈ 30 µs, KL-UCB ≈ 260 µs per choice + update. The pymc Thompson backend is the "
        "reference implementation of the posterior (a compiled PyTensor call per decision), not "
        "the default.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    rows = run(repeats, warmup=5000, quick=args.quick)
    command = ".venv/bin/python -m benchmarks.bench_policies" + (" --quick" if args.quick else "")
    if not args.quick and args.repeats != 15:
        command += f" --repeats {args.repeats}"
    text = markdown(rows, command, repeats)
    print(text)
    if not args.quick:
        out = Path(__file__).resolve().parent / "results" / "bench_policies.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text(text)
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
