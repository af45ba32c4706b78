"""Per-pull overhead of the live loop, ``pmcbandit.run``, on a trivial arm.

Run as ``.venv/bin/python -m benchmarks.bench_run_loop`` (``--quick`` for a smoke run;
``--baseline DIR`` adds a column measured with the ``pmcbandit`` package found in ``DIR``,
e.g. an older version exported with ``git archive``).

Every configuration runs in a fresh process. Inside it, blocks of the two loops alternate:

* ``run``: ``pmcbandit.run(arms, policy, budget=Pulls(N), progressbar=False)`` with ``K``
  arms ``CallableArm(lambda rng: rng.random(), cost=1.0)`` (one uniform draw per pull, a
  declared cost), i.e. everything the loop does per pull: choose, derive the pull's random
  stream, pull through the arm protocol, check the values, record the history row, compute
  the reward and update the policy — plus the run's fixed set-up, amortised over ``N``;
* ``bare``: the same policy driven by hand, ``arm = policy.select(rng, state)`` then
  ``state = policy.update(rng, state, arm, -(x - c)**2, 1.0)`` with ``x = rng.random()``:
  the least any loop must spend per pull.

``run - bare`` is the overhead the live loop adds per pull. Blocks are timed in CPU time of the
process (``time.process_time``; the machine may be shared), after a warm-up (numba
compilation); the table gives the median block in µs per pull. ``Arm.pull`` alone (the arm
protocol, which measures CPU time around every draw) is listed for reference.

The markdown section is printed and written to ``benchmarks/results/bench_run_loop.md``.
"""

from __future__ import annotations

import argparse
import inspect
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path
from benchmarks._common import machine

ROOT = Path(__file__).resolve().parent.parent

# (label, policy, K, reward, budget kind)
CONFIGS = [
    ("uniform", "uniform", 4, "squared", "pulls"),
    ("ucb1", "ucb1", 4, "squared", "pulls"),
    ("thompson", "thompson", 4, "squared", "pulls"),
    ("ucb1", "ucb1", 16, "squared", "pulls"),
    ("thompson", "thompson", 16, "squared", "pulls"),
    ("ucb1, paired reward", "ucb1", 4, "paired", "pulls"),
    ("ucb1, paired, TargetSE", "ucb1", 4, "paired", "target_se"),
]
# Uniform(0, 1) draws have sd 12**-0.5: this target stops a run after about ``pulls`` pulls.
_TARGET_SE = lambda pulls: (1 / 12) ** 0.5 / pulls**0.5  # noqa: E731


def worker(policy: str, n_arms: int, reward: str, pulls: int, repeats: int, kind: str = "pulls") -> dict:
    """Median µs per pull of ``run`` and of the bare loop, in interleaved blocks (this process)."""
    import time

    import numpy as np

    import pmcbandit as pb
    from pmcbandit.policies import get_policy

    arms = [pb.CallableArm(lambda rng: rng.random(), name=f"arm{k}", cost=1.0) for k in range(n_arms)]

    budget = pb.Pulls(pulls) if kind == "pulls" else pb.TargetSE(_TARGET_SE(pulls))

    def time_run(seed: int) -> float:
        t0 = time.process_time()
        res = pb.run(arms, policy=policy, budget=budget, reward=reward, random_seed=seed, progressbar=False)
        return (time.process_time() - t0) / len(res.history) * 1e6

    def time_bare(seed: int) -> float:
        pol = get_policy(policy)
        rng = np.random.default_rng(seed)
        state = pol.init(n_arms)
        select, update, draw = pol.select, pol.update, rng.random
        if next(iter(inspect.signature(update).parameters)) == "state":  # a baseline whose update takes rng last
            update = (lambda f: lambda rng_, s, a, r, c: f(s, a, r, c, rng_))(update)
        c = draw()
        t0 = time.process_time()
        for _ in range(pulls):
            arm = select(rng, state)
            x = draw()
            state = update(rng, state, arm, -((x - c) ** 2), 1.0)
        return (time.process_time() - t0) / pulls * 1e6

    def time_pull() -> float:
        rng = np.random.default_rng(0)
        arm = arms[0]
        t0 = time.process_time()
        for _ in range(pulls):
            arm.pull(rng)
        return (time.process_time() - t0) / pulls * 1e6

    time_run(0)  # warm-up: numba compilation, imports
    time_bare(0)
    runs, bares, pull_alone = [], [], []
    for i in range(repeats):
        runs.append(time_run(i + 1))
        bares.append(time_bare(i + 1))
        pull_alone.append(time_pull())
    return {"run": float(np.median(runs)), "bare": float(np.median(bares)), "pull": float(np.median(pull_alone))}


def _measure(src: Path, cfg, pulls: int, repeats: int) -> dict:
    _, policy, n_arms, reward, kind = cfg
    code = (
        "import sys, json; "
        f"sys.path[:0] = [{str(src)!r}, {str(ROOT)!r}]; "
        "from benchmarks.bench_run_loop import worker; "
        f"print(json.dumps(worker({policy!r}, {n_arms}, {reward!r}, {pulls}, {repeats}, {kind!r})))"
    )
    env = dict(os.environ, PYTHONPATH="")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])



def markdown(rows, command: str, pulls: int, repeats: int, baseline: Path | None, note: str = "") -> str:
    import numpy as np

    lines = [
        "## Live-loop overhead per pull (`pmcbandit.run`, trivial arm)",
        "",
        f"- machine: {machine()}; Python {platform.python_version()}, numpy {np.__version__}",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- command: `{command}`",
        f"- method: each row in a fresh process; {repeats} interleaved blocks of `run` (Pulls({pulls}), "
        "K arms `CallableArm(lambda rng: rng.random(), cost=1.0)`) and of a bare `policy.select`/`update` "
        "loop on the same draws; median block, CPU µs per pull (see the module docstring). "
        f"The TargetSE row stops at SE {_TARGET_SE(pulls):.2g} (about {pulls} pulls) and is divided by its pulls.",
    ]
    if baseline is not None:
        lines.append(f"- baseline: the same measurement with the `pmcbandit` package in `{baseline}`{note}.")
    lines.append("")
    head = "| policy | K | bare loop | `run` | overhead (`run` − bare) | `Arm.pull` alone |"
    sep = "|---|---:|---:|---:|---:|---:|"
    if baseline is not None:
        head += " baseline `run` | baseline overhead | speed-up of `run` |"
        sep += "---:|---:|---:|"
    lines += [head, sep]
    for cfg, new, old in rows:
        label, _, k, _, _ = cfg
        line = (
            f"| {label} | {k} | {new['bare']:.1f} | {new['run']:.1f} | {new['run'] - new['bare']:.1f} "
            f"| {new['pull']:.1f} |"
        )
        if old is not None:
            line += f" {old['run']:.1f} | {old['run'] - old['bare']:.1f} | {old['run'] / new['run']:.2f}× |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short blocks (smoke run)")
    parser.add_argument("--baseline", type=Path, default=None, help="directory holding another pmcbandit package")
    parser.add_argument("--baseline-note", default="", help="how the baseline was made (printed)")
    parser.add_argument("--pulls", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    args = parser.parse_args(argv)
    pulls = args.pulls or (500 if args.quick else 5000)
    repeats = args.repeats or (3 if args.quick else 7)
    rows = []
    for cfg in CONFIGS[: 2 if args.quick else None]:
        new = _measure(ROOT, cfg, pulls, repeats)
        old = _measure(args.baseline.resolve(), cfg, pulls, repeats) if args.baseline is not None else None
        rows.append((cfg, new, old))
    command = ".venv/bin/python -m benchmarks.bench_run_loop " + shlex.join(argv if argv is not None else sys.argv[1:])
    note = f" ({args.baseline_note})" if args.baseline_note else ""
    text = markdown(rows, command.strip(), pulls, repeats, args.baseline, note)
    print(text)
    if not args.quick:
        out = ROOT / "benchmarks" / "results" / "bench_run_loop.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    return text


if __name__ == "__main__":
    main()
