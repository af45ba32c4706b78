"""One door contract: the same mistake gets the same exception type and names the door it was made in.

Every public entry point goes through :mod:`pmcbandit.runtime.door`; these tests run the same bad
arguments through every door and check the exception type, the parameter named and the door named,
before any pull (the arms here would fail the test if pulled).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pmcbandit as pb


def _never(rng):
    raise AssertionError("an argument error must be raised before any pull")


def _arms(n=3):
    return [pb.CallableArm(_never, name=f"a{i}", cost=1.0) for i in range(n)]


@pytest.fixture(scope="module")
def model():
    import pymc as pm

    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.1, -0.3, 0.4]))
    return m


def _full_bandit_env():
    from pmcbandit.full_bandit import FullBanditEnvironment

    return FullBanditEnvironment([1.0, 0.8, 0.3, 0.1], noise_sd=0.1)


def _doors(model):
    """door name -> call(**overrides) with valid defaults for everything else."""
    return {
        "run": lambda **kw: pb.run(_arms(), "ucb1", **{"budget": pb.Pulls(10), "progressbar": False, **kw}),
        "estimate_evidence": lambda **kw: pb.estimate_evidence(
            model, **{"arms": _evidence_arms(), "budget": pb.Pulls(10), "progressbar": False, **kw}),
        "identify": lambda **kw: pb.identify(_arms(), "lucb1", **{"sigma": 1.0, "budget": pb.Pulls(10),
                                                                   "progressbar": False, **kw}),
        "compare_samplers": lambda **kw: pb.compare_samplers(_arms(), **{"budget": pb.Pulls(10), "progressbar": False,
                                                                          **kw}),
        "identify_full_bandit": lambda **kw: pb.identify_full_bandit(
            _full_bandit_env(), "sa_foa", **{"k": 2, "budget": pb.Pulls(10), "progressbar": False, **kw}),
    }


class _LogArm(pb.Arm):
    """A log-scale arm (as evidence arms are) that must never be pulled here."""

    log_scale = True

    def __init__(self, name):
        self.name = name

    def draw(self, rng):
        raise AssertionError("an argument error must be raised before any pull")


def _evidence_arms():
    return [_LogArm("e0"), _LogArm("e1")]


COMMON = [
    ({"budget": -1.0}, ValueError, "budget"),
    ({"budget": "10"}, TypeError, "budget"),
    ({"random_seed": -1}, ValueError, "random_seed"),
    ({"random_seed": 1.5}, TypeError, "random_seed"),
    ({"max_faults": 0}, ValueError, "max_faults"),
    ({"max_faults": "2"}, TypeError, "max_faults"),
    ({"progressbar": "yes"}, TypeError, "progressbar"),
    ({"callback": 3}, TypeError, "callback"),
    ({"checkpoint": 3}, TypeError, "checkpoint"),
    ({"max_in_flight": 0}, ValueError, "max_in_flight"),
    ({"pull_timeout": -1.0}, ValueError, "pull_timeout"),
    ({"checkpoint_every": 0.0}, ValueError, "checkpoint_every"),
]
SELECTING = [
    ({"delta": "0.1"}, TypeError, "delta"),
    ({"delta": 1.5}, ValueError, "delta"),
    ({"k": "1"}, TypeError, "k"),
    ({"k": 0}, ValueError, "k"),
]
DOORS = ["run", "estimate_evidence", "identify", "compare_samplers", "identify_full_bandit"]
CASES = [(door, kw, exc, param) for door in DOORS for kw, exc, param in COMMON] + [
    (door, kw, exc, param) for door in ("identify", "compare_samplers", "identify_full_bandit")
    for kw, exc, param in SELECTING
]


@pytest.mark.parametrize("door, kwargs, exc, param", CASES,
                         ids=[f"{d}-{next(iter(k))}={k[next(iter(k))]!r}" for d, k, _, _ in CASES])
def test_the_same_mistake_gets_the_same_error_in_every_door(model, door, kwargs, exc, param):
    call = _doors(model)[door]
    with pytest.raises(exc) as info:
        call(**kwargs)
    text = str(info.value)
    assert f"The '{param}' parameter of {door} must be" in text and "Got" in text, text


@pytest.mark.parametrize("door", DOORS + ["compare_models"])
def test_only_the_subject_and_the_algorithm_are_positional(door):
    sig = inspect.signature(getattr(pb, door))
    positional = [p.name for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(positional) <= 2, positional
    shared = {"budget", "random_seed", "progressbar", "callback", "max_faults", "k", "delta", "epsilon", "executor",
              "checkpoint", "sigma"}
    assert not shared & set(positional), positional


def test_shared_keywords_have_one_spelling():
    names = {door: set(inspect.signature(getattr(pb, door)).parameters) for door in DOORS + ["compare_models"]}
    for door, params in names.items():
        assert not params & {"max_rounds", "n_rounds", "max_samples", "R", "policy_params", "allocation_kwargs"}, door
        assert "budget" in params and "random_seed" in params and "progressbar" in params, door


def test_every_door_records_plain_json_settings_and_attrs(model):
    """Settings and InferenceData attrs hold plain JSON values (no reprs of functions or objects)."""
    import json

    from pmcbandit.full_bandit import FullBanditEnvironment

    arms = [pb.CallableArm(lambda rng, m=m: rng.normal(m, 0.3), name=f"m{m}", cost=1.0) for m in (0.0, 1.0, 2.0)]
    results = [
        pb.run(arms, "ucb1", budget=pb.Pulls(30), random_seed=0, progressbar=False),
        pb.identify(arms, "lucb1", sigma=0.3, budget=pb.Pulls(200), random_seed=0, progressbar=False),
        pb.compare_samplers(arms, budget=pb.Pulls(60), random_seed=0, progressbar=False),
        pb.identify_full_bandit(FullBanditEnvironment([1.0, 0.5, 0.1], noise_sd=0.1), k=2, budget=pb.Pulls(300),
                                random_seed=0, progressbar=False),
    ]
    for res in results:
        text = json.dumps(res.settings)
        assert "<function" not in text and " object at 0x" not in text, text
        attrs = res.to_inference_data().attrs
        for key, value in attrs.items():
            assert "<function" not in str(value) and " object at 0x" not in str(value), (key, value)
