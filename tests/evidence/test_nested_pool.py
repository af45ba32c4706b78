"""The default pool's nested-sampling arm: last in the pool, its own family, sized for a budget, optional."""

from __future__ import annotations

import numpy as np
import pytest

from tests import analytic_models

from pmcbandit.arms.evidence import ModelDensity, NestedArm
from pmcbandit.evidence import evidence_arms
from pmcbandit.evidence.nested_pool import MIN_LIVE, NESTED_MAX_DIM, NESTED_MAX_LIVE, nested_arm
from pmcbandit.runtime.guards import CHECK_PULLS, CROSS_CHECK_SHARE, MAX_CHECK_SHARE, MAX_DECISION_SHARE


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


@pytest.mark.parametrize("information, live", [(float("nan"), 32), (20.0, 32), (50.0, 64), (100.0, 128),
                                               (1000.0, NESTED_MAX_LIVE)])
def test_the_posterior_information_grows_the_live_points_up_to_a_nat_each(model, information, live):
    """A run's log Z has a variance of about H / N: the live points double while H / N > NATS_PER_LIVE (1), up to
    NESTED_MAX_LIVE, where the widened share still holds a check's pulls (a budget that holds any)."""
    notes = []
    arm = nested_arm(ModelDensity(model), "cpu_seconds", 1e6, MAX_DECISION_SHARE, CROSS_CHECK_SHARE, CHECK_PULLS,
                     0.6, notes, information, MAX_CHECK_SHARE)
    assert arm.n_live == live
    assert bool(notes) == (live != 32)
    if notes:
        assert f"sized to {live} live points for a posterior of about {information:.3g} nats" in notes[0]
    # No room in a widened share: the budget's sizing stands.
    assert nested_arm(ModelDensity(model), "cpu_seconds", 1e6, MAX_DECISION_SHARE, CROSS_CHECK_SHARE, CHECK_PULLS,
                      0.6, [], information, 0.0).n_live == 32


def test_the_laplace_information_is_the_gaussian_kl_from_the_prior():
    """For independent normal means the posterior is Gaussian: the formula is KL(posterior || prior) less the
    prior's share v / (2 s0^2) per coordinate that a likelihood-dominated curvature leaves out."""
    from pmcbandit.evidence.nested_pool import laplace_information
    from pmcbandit.evidence.pool import density_for

    dim, m0, s0 = 4, 0.5, 1.0
    model, _, _, means, v = analytic_models.independent_normal_means(dim, m0, s0)
    density = density_for(model, True, [])
    mode = evidence_arms(model, ais_steps=(), prior=False, nested=False, pilot_is=False)[0].modes.modes[0]
    kl = float(np.sum(np.log(s0 / np.sqrt(v)) + (v + (means - m0) ** 2) / (2 * s0**2) - 0.5))
    assert laplace_information(density, mode) == pytest.approx(kl - dim * v / (2 * s0**2), rel=1e-6)
