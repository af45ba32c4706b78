"""Where ``budget`` travels from a door: the modules it passes through and the floors it climbs.

:func:`pmcbandit.compare_models` and :func:`pmcbandit.estimate_evidence` are run on a tiny normal model
(one parameter, three observations) with a ``Pulls`` budget and pools built beforehand (so the trace
holds the doors and the run loop, not the pools' set-up), each once untraced (imports, numba
compilation) and once under :func:`sys.setprofile`. Recorded is every call of a pmcbandit function
whose frame has a local named ``budget`` (an argument or an assigned name): its module, and its
nearest pmcbandit caller's module. Reported:

* the distinct modules ``budget`` enters (goal: at most 8 per door);
* the *climbs*: calls from a module of a lower layer to one of a higher layer, layers as in
  ``tests/test_layers.py`` (helpers 0, ``stats``/``arms``/``policies`` 1, ``runtime`` 2,
  ``identification``/``compare``/``full_bandit``/``simulate`` 3, the doors 4, ``diagnostics``/``cli`` 5),
  with their height in floors (goal: none higher than two).

Run: ``.venv/bin/python -m benchmarks.profile_budget_walk`` (prints the figures and writes
``benchmarks/results/profile_budget_walk.md``).
"""

from __future__ import annotations

import sys
import warnings
from collections import Counter

import numpy as np

from benchmarks._common import machine, utc_now, write_section
from tests.test_layers import LAYER, _part

PULLS = 24


def _layer(module: str) -> int:
    return LAYER[_part(module.removeprefix("pmcbandit").lstrip("."))]


def _trace(fn) -> tuple[Counter, Counter]:
    """(module -> calls with a local ``budget``, (caller module, module) -> such calls that climb)."""
    entered: Counter = Counter()
    climbs: Counter = Counter()

    def profiler(frame, event, arg):
        if event != "call" or "budget" not in frame.f_code.co_varnames:
            return
        mod = frame.f_globals.get("__name__", "")
        if not mod.startswith("pmcbandit"):
            return
        entered[mod] += 1
        caller = frame.f_back
        while caller is not None and not caller.f_globals.get("__name__", "").startswith("pmcbandit"):
            caller = caller.f_back
        if caller is not None:
            cmod = caller.f_globals["__name__"]
            if _layer(cmod) < _layer(mod):
                climbs[(cmod, mod)] += 1

    sys.setprofile(profiler)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return entered, climbs


def _doors():
    import pymc as pm

    import pmcbandit as pb

    def model(shift):
        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, 1.0)
            pm.Normal("y", mu, 1.0, observed=np.array([0.1, -0.3, 0.4]) + shift)
        return m

    models = {"near": model(0.0), "far": model(2.0)}
    pools = {name: pb.evidence_arms(m, ais_steps=(20,), batch_size=100) for name, m in models.items()}
    return {
        "estimate_evidence": lambda: pb.estimate_evidence(models["near"], arms=pools["near"], budget=pb.Pulls(PULLS),
                                                          random_seed=1, progressbar=False),
        "compare_models": lambda: pb.compare_models(models, arms=pools, budget=pb.Pulls(PULLS), slices=4,
                                                    random_seed=1, progressbar=False),
    }


def measure() -> list[dict]:
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for door, call in _doors().items():
            call()  # warm-up: imports, numba compilation
            entered, climbs = _trace(call)
            rows.append(dict(door=door, modules=sorted(entered), climbs=climbs,
                             highest=max((_layer(b) - _layer(a) for a, b in climbs), default=0)))
    return rows


def main() -> None:
    np.seterr(all="ignore")
    rows = measure()
    lines = [
        "## Where `budget` travels from a door",
        "",
        f"Machine: {machine()}; {utc_now()}; command: `.venv/bin/python -m benchmarks.profile_budget_walk`.",
        f"Tiny normal model, `Pulls({PULLS})`, pools built beforehand; pmcbandit calls whose frame has a local",
        "named `budget`, traced with `sys.setprofile`. Goal: ≤ 8 modules, no climb higher than two floors.",
        "",
        "| door | modules entered | climbs (calls) | highest climb (floors) |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| `{r['door']}` | {len(r['modules'])} | {len(r['climbs'])} ({sum(r['climbs'].values())}) | "
                     f"{r['highest']} |")
    lines.append("")
    for r in rows:
        lines.append(f"Modules of `{r['door']}`: " + ", ".join(m.removeprefix("pmcbandit.") for m in r["modules"]))
        lines.append("")
        for (a, b), n in sorted(r["climbs"].items()):
            lines.append(f"* climb {a} (layer {_layer(a)}) → {b} (layer {_layer(b)}): "
                         f"{_layer(b) - _layer(a)} floor(s), {n} call(s)")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    write_section("profile_budget_walk", text)


if __name__ == "__main__":
    main()
