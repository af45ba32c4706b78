"""How many modules one serial pull passes through: the readability of the run loop, measured.

For :func:`pmcbandit.run` and :func:`pmcbandit.identify` on callable arms with a ``Pulls`` budget,
a run of ``N`` pulls and a run of ``N + D`` pulls are traced with :func:`sys.setprofile`; the
difference of their counts divided by ``D`` is the cost of one more serial pull, set-up excluded.
Counted are Python-level ``call`` events of functions defined in ``pmcbandit`` (the package's own
code), the distinct modules and functions they belong to, and the *module transitions*: calls whose
caller is a pmcbandit function in another module (a hop from one file to another).

Run: ``.venv/bin/python -m benchmarks.profile_transitions`` (writes
``benchmarks/results/profile_transitions.md``).
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np

from benchmarks._common import machine, utc_now, write_section

N, D = 200, 200


def _trace(fn) -> tuple[int, Counter, set, set]:
    calls = 0
    transitions: Counter = Counter()
    modules: set = set()
    functions: set = set()

    def profiler(frame, event, arg):
        nonlocal calls
        if event != "call":
            return
        mod = frame.f_globals.get("__name__", "")
        if not mod.startswith("pmcbandit"):
            return
        calls += 1
        modules.add(mod)
        functions.add((mod, frame.f_code.co_name))
        caller = frame.f_back
        if caller is not None:
            cmod = caller.f_globals.get("__name__", "")
            if cmod.startswith("pmcbandit") and cmod != mod:
                transitions[(cmod, mod)] += 1

    sys.setprofile(profiler)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls, transitions, modules, functions


def _doors():
    import pmcbandit as pb

    arms = [pb.CallableArm(lambda rng, m=m: rng.normal(m, 1.0), name=f"m{m}", cost=1.0) for m in (0.0, 0.5, 1.0)]

    def run(n):
        return lambda: pb.run(arms, "ucb_v", budget=pb.Pulls(n), random_seed=1, progressbar=False)

    def identify(n):
        return lambda: pb.identify(
            arms, "lucb1", k=1, delta=1e-12, sigma=1.0, budget=pb.Pulls(n), random_seed=1, progressbar=False
        )

    return {"run": run, "identify": identify}


def measure() -> list[dict]:
    rows = []
    for door, make in _doors().items():
        make(N)()  # warm-up: imports, numba compilation
        c1, t1, m1, f1 = _trace(make(N))
        c2, t2, m2, f2 = _trace(make(N + D))
        transitions = (sum(t2.values()) - sum(t1.values())) / D
        per_pull_pairs = {pair: (t2[pair] - t1.get(pair, 0)) / D for pair in t2}
        busiest = sorted(((v, p) for p, v in per_pull_pairs.items() if v > 0), reverse=True)[:8]
        rows.append(
            dict(
                door=door,
                calls=(c2 - c1) / D,
                transitions=transitions,
                modules=len(m2),
                functions=len(f2),
                busiest=busiest,
            )
        )
    return rows


def main() -> None:
    np.seterr(all="ignore")
    rows = measure()
    lines = [
        "## Module transitions per serial pull",
        "",
        f"Machine: {machine()}; {utc_now()}; command: `.venv/bin/python -m benchmarks.profile_transitions`.",
        f"Per pull = (trace of a {N + D}-pull run − trace of an {N}-pull run) / {D}; callable arms, `Pulls` budget,",
        "serial executor. Goal: ≤ 20 module transitions per pull for `run` and `identify`.",
        "",
        "| door | pmcbandit calls / pull | module transitions / pull | modules touched | functions touched |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| `{r['door']}` | {r['calls']:.1f} | {r['transitions']:.1f} | {r['modules']} | {r['functions']} |"
        )
    lines.append("")
    for r in rows:
        lines.append(
            f"Busiest hops of `{r['door']}` (per pull): "
            + "; ".join(
                f"{a.removeprefix('pmcbandit.')} → {b.removeprefix('pmcbandit.')} {v:.1f}" for v, (a, b) in r["busiest"]
            )
        )
        lines.append("")
    text = "\n".join(lines)
    print(text)
    write_section("profile_transitions", text)


if __name__ == "__main__":
    main()
