"""Decision + update time per step of the allocation policies, K = 16 arms.

Run as ``.venv/bin/python -m benchmarks.bench_policies`` (``--quick`` for a short
smoke run). Every pmcbandit policy is timed with the working tree's package and with the package of the
revision ``--against REV`` (:mod:`benchmarks._revision`; default: the merge base of ``HEAD`` and ``main``),
each in a fresh process. One step is what the live loop does per pull: ``arm = select(rng, state)`` then
``state = update(rng, state, arm, reward, cost)`` (immutable state). The comparison with a per-step
pure-Python policy in the style of SMPyBandits, which no revision of the package contains, is recorded in the
results table of 2026-11-22 and not rerun. Rewards are pre-drawn (scaled-Bernoulli arms of Neufeld et al. 2014,
App. E, reward ``-X^2`` in the known range ``[-1, 0]``) so that only the policy
is timed. Each policy first runs a warm-up (numba compilation, PyTensor
compilation, a realistic non-initial state); then ``--repeats`` blocks, and the table reports the median
block (µs per step), the fastest block, and the ratio of the two revisions' medians. Blocks are timed in CPU time of
the process (``time.process_time``): the machine is shared, and wall time would
count the time the process waits for a core; medians of blocks are the figures to compare.

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

from benchmarks import _revision
from benchmarks._common import machine

N_ARMS = 16
POOL = 4096
GOALS = {"uniform": 10.0, "ucb1": 10.0, "ucb_v": 10.0, "kl_ucb": 20.0, "thompson": 10.0}
# (row label, policy name, keyword arguments of ``get_policy``, steps per block)
ROWS = [
    ("uniform", "uniform", {}, 2000),
    ("ucb1", "ucb1", {}, 2000),
    ("ucb_v", "ucb_v", {}, 2000),
    ("kl_ucb", "kl_ucb", {}, 1000),
    ("thompson", "thompson", {"sampler": "numba"}, 2000),
    ("thompson (sampler='pymc')", "thompson", {"sampler": "pymc"}, 200),
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


def timings(repeats: int, warmup: int, quick: bool) -> list[dict]:
    """Every row of :data:`ROWS` timed in this process's :mod:`pmcbandit` (:mod:`benchmarks._revision`); a
    policy the package cannot build gets ``"ours": None``."""
    import pmcbandit  # noqa: F401  (configures PyTensor before anything imports it)
    from pmcbandit.policies import get_policy

    root = np.random.default_rng(20140621)
    rewards = _rewards(root)
    rows = []
    for label, name, kwargs, block in ROWS:
        block = max(block // 10, 20) if quick else block
        rng = root.spawn(1)[0]
        try:
            policy = get_policy(name, scale=1.0, **kwargs)
        except (TypeError, ValueError) as exc:
            rows.append({"label": label, "ours": None, "error": str(exc)[:200]})
            continue
        state = policy.init(N_ARMS)
        _, state = _time_ours(policy, state, rng, rewards, 0, min(warmup, 10 * block))
        ours = []
        pos = min(warmup, 10 * block)
        for _ in range(repeats):
            us, state = _time_ours(policy, state, rng, rewards, pos, block)
            ours.append(us)
            pos += block
        select_us, update_us = _split(policy, state, rng, -0.3, max(block // 4, 20))
        rows.append({"label": label, "ours": float(np.median(ours)), "ours_min": float(np.min(ours)),
                     "select": select_us, "update": update_us, "steps": pos, "goal": GOALS.get(label)})
    return rows


def run(repeats: int, warmup: int, quick: bool, against: str | None = None) -> tuple[list[dict], str]:
    """:func:`timings` with the working tree's package, then with the package at ``against``; the rows (the
    revision's median and fastest block under ``"ref"`` and ``"ref_min"``) and the revision's commit."""
    commit = _revision.resolve(against)
    kw = dict(repeats=repeats, warmup=warmup, quick=quick)
    rows = _revision.call(None, "benchmarks.bench_policies:timings", **kw)
    with _revision.checkout(commit) as previous:
        theirs = {r["label"]: r for r in _revision.call(previous, "benchmarks.bench_policies:timings", **kw)}
    for r in rows:
        other = theirs.get(r["label"], {})
        r["ref"], r["ref_min"] = other.get("ours"), other.get("ours_min")
    return rows, commit


def markdown(rows: list[dict], command: str, repeats: int, commit: str) -> str:
    import numba

    lines = [
        "## Policy decision + update time (K = 16 arms)",
        "",
        f"- machine: {machine()}; Python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- command: `{command}`",
        f"- method: one step = select + update (immutable state), the working tree's package beside the package "
        f"at `{commit[:12]}` (`--against`), a fresh process each, same "
        f"pre-drawn scaled-Bernoulli rewards, {repeats} blocks after a warm-up; "
        f"CPU time (`time.process_time`) per step, median block (fastest block in brackets). select/update columns: each alone on a frozen "
        f"state, fastest block.",
        "",
        "| policy | working tree µs/step | revision µs/step | working tree / revision | select µs | update µs "
        "| goal µs | meets goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["ours"] is None:
            lines.append(f"| {r['label']} | failed: {r['error']} | | | | | | |")
            continue
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
    _revision.add_argument(parser, what="policies")
    args = parser.parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    rows, commit = run(repeats, warmup=5000, quick=args.quick, against=args.against)
    command = ".venv/bin/python -m benchmarks.bench_policies" + (" --quick" if args.quick else "")
    if args.against:
        command += f" --against {args.against}"
    if not args.quick and args.repeats != 15:
        command += f" --repeats {args.repeats}"
    text = markdown(rows, command, repeats, commit)
    print(text)
    if not args.quick:
        out = Path(__file__).resolve().parent / "results" / "bench_policies.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text(text)
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
