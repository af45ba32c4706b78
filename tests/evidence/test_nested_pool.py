"""The default pool's nested-sampling arm: last in the pool, its own family, sized for a budget, optional."""

from __future__ import annotations

import numpy as np
import pytest

from tests import analytic_models

from pmcbandit.arms.evidence import ModelDensity, NestedArm
from pmcbandit.evidence import evidence_arms
from pmcbandit.evidence.nested_pool import MIN_LIVE, NESTED_MAX_DIM, nested_arm
from pmcbandit.runtime.guards import CHECK_PULLS, CROSS_CHECK_SHARE, MAX_DECISION_SHARE


@pytest.fixture(scope="module")
def model():
    return analytic_models.normal_normal(0.5, 1.5, 0.8, (1.2, 0.4, 2.0, 1.1))[0]


def test_the_pool_ends_with_a_nested_arm_and_nested_false_leaves_only_it_out(model):
    arms = evidence_arms(model, ais_steps=(20, 40), laplace=False)
    without = evidence_arms(model, ais_steps=(20, 40), laplace=False, nested=False)
    assert isinstance(arms[-1], NestedArm) and arms[-1].family == "nested"
    assert [a.name for a in arms[:-1]] == [a.name for a in without]
    assert not any(isinstance(a, NestedArm) for a in without)
    # The arms before it draw the same values from the same streams: adding it changed no other arm.
    for a, b in zip(arms[:-1], without):
        np.testing.assert_array_equal(a.pull(np.random.default_rng(3)).values, b.pull(np.random.default_rng(3)).values)


def test_nested_must_be_a_bool(model):
    with pytest.raises(TypeError, match="The 'nested' parameter of evidence_arms must be a bool"):
        evidence_arms(model, nested=1)


def _sized(density, budget):
    notes = []
    arm = nested_arm(density, "cpu_seconds", budget, MAX_DECISION_SHARE, CROSS_CHECK_SHARE, CHECK_PULLS, 0.6, notes)
    return arm, notes


def test_the_budget_sizes_the_live_points_or_leaves_the_arm_out(model):
    density = ModelDensity(model)
    big, notes = _sized(density, 1e6)
    assert big.n_live == 32 and notes == []
    none, notes = _sized(density, 1e-6)
    assert none is None and "nested-sampling arm left out" in notes[0] and f"{MIN_LIVE} live points" in notes[0]
    untimed, notes = _sized(density, None)
    assert untimed.n_live == 32 and notes == []


def test_no_nested_arm_above_its_dimension_cap():
    import pymc as pm

    with pm.Model() as wide:
        x = pm.Normal("x", 0.0, 1.0, shape=NESTED_MAX_DIM + 1)
        pm.Normal("y", x.sum(), 1.0, observed=0.3)
    arm, notes = _sized(ModelDensity(wide), 1e6)
    assert arm is None and f"{NESTED_MAX_DIM + 1} unconstrained dimensions" in notes[0]
