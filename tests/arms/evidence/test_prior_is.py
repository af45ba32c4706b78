"""PriorISArm: unbiased estimates of Z, reproducibility, diagnostics and inputs."""

from __future__ import annotations

import numpy as np
import pytest

from pmcbandit.arms.evidence import PriorISArm


@pytest.mark.parametrize(
    "name", ["beta_binomial", "normal_normal", "linear_regression", "half_normal_scale", "uniform_support"]
)
def test_prior_is_is_unbiased(evidence_models, check_unbiased, name):
    density, log_z = evidence_models(name)
    arm = PriorISArm(density, batch_size=20_000)
    rng = np.random.default_rng(21)
    check_unbiased(np.concatenate([arm.pull(rng).values for _ in range(5)]), log_z)


def test_values_are_log_likelihoods_of_prior_draws(evidence_models):
    density, _ = evidence_models("normal_normal")
    arm = PriorISArm(density, batch_size=8)
    values = arm.pull(np.random.default_rng(3)).values
    draws = density.sample_prior(np.random.default_rng(3), 8)
    np.testing.assert_array_equal(values, density.logp_terms_batch(draws)[1])


def test_zero_likelihood_draws_are_minus_inf(evidence_models):
    density, _ = evidence_models("uniform_support")
    pull = PriorISArm(density, batch_size=500).pull(np.random.default_rng(4))
    assert np.isneginf(pull.values).any() and np.isfinite(pull.values).any()
    assert np.isfinite(pull.info["log_w_var"])


def test_reproducible_and_declared_diagnostics(evidence_models):
    density, _ = evidence_models("beta_binomial")
    arm = PriorISArm(density, batch_size=50, cost="logp_evals")
    a = arm.pull(np.random.default_rng(8))
    b = arm.pull(np.random.default_rng(8))
    np.testing.assert_array_equal(a.values, b.values)
    assert set(a.info) == set(arm.diagnostics) and a.cost == 50.0
    assert arm.name == "prior-is" and arm.log_scale


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"batch_size": 0}, ValueError), ({"batch_size": 1.5}, TypeError), ({"cost": "wall"}, ValueError)],
)
def test_bad_arguments_raise(evidence_models, kwargs, error):
    density, _ = evidence_models("beta_binomial")
    with pytest.raises(error, match="parameter of PriorISArm"):
        PriorISArm(density, **kwargs)


def test_bad_model_raises():
    with pytest.raises(TypeError, match="must be a pymc.Model"):
        PriorISArm(3.0)
