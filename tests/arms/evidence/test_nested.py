"""NestedArm: exp(log Z-hat) unbiased on models with exact evidence, intervals that cover, determinism, inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests import analytic_models
from tests.tolerance import error_rate_lower

from pmcbandit.arms.evidence import ModelDensity, NestedArm
from tests.arms.evidence.helpers import assert_seeded_and_thread_free, pulled_values


@pytest.mark.parametrize("name", ["beta_binomial", "normal_normal", "linear_regression", "half_normal_scale",
                                  "uniform_support"])
def test_nested_is_unbiased(evidence_models, check_unbiased, name):
    density, log_z = evidence_models(name)
    arm = NestedArm(density, n_live=16)
    check_unbiased(pulled_values(arm, 23, 200), log_z)


@pytest.fixture(scope="module")
def gaussian_4d():
    model, _, log_z, _, _ = analytic_models.independent_normal_means(4, m0=0.5, s0=2.0, s=0.4)
    return ModelDensity(model), log_z


@pytest.mark.slow
def test_nested_is_unbiased_on_the_suites_conjugate_model(check_unbiased):
    from models.evidence_suite import conjugate

    suite = conjugate()
    arm = NestedArm(suite.model, n_live=16)
    check_unbiased(pulled_values(arm, 29, 300), suite.log_z)


@pytest.mark.slow
def test_nested_is_unbiased_on_a_4d_gaussian(gaussian_4d, check_unbiased):
    density, log_z = gaussian_4d
    arm = NestedArm(density, n_live=16)
    check_unbiased(pulled_values(arm, 31, 400), log_z)


@pytest.mark.slow
def test_nested_log_z_intervals_cover(gaussian_4d):
    """Runs of 25 pulls: log of the mean of Z-hat, with the delta-method SE of the pool's combination
    (sd(Z-hat) / (mean sqrt(n)) on the log scale); the 95 % intervals must not miss significantly more
    often than 5 % (one-sided Clopper-Pearson lower bound of the miss rate at most 0.05).
    """
    density, log_z = gaussian_4d
    arm = NestedArm(density, n_live=16)
    rng = np.random.default_rng(37)
    runs, pulls, misses = 60, 25, 0
    for _ in range(runs):
        v = np.concatenate([arm.pull(rng).values for _ in range(pulls)])
        top = v.max()
        w = np.exp(v - top)
        est = top + np.log(w.mean())
        se = w.std(ddof=1) / (w.mean() * np.sqrt(pulls))
        misses += abs(est - log_z) > 1.96 * se
    assert error_rate_lower(misses, runs) <= 0.05, (misses, runs)


def test_same_seed_same_pulls_and_threads_change_nothing(evidence_models):
    density, _ = evidence_models("linear_regression")
    serial = NestedArm(density, n_live=12, n_replace=3)
    parallel = NestedArm(density, n_live=12, n_replace=3, parallel=True)
    assert_seeded_and_thread_free(serial, parallel, 5, 3)


def test_pull_reports_its_run(evidence_models):
    density, _ = evidence_models("normal_normal")
    arm = NestedArm(density, n_live=8, runs=3, cost="logp_evals", max_kills=40)
    pull = arm.pull(np.random.default_rng(0))
    assert pull.values.shape == (3,)
    assert set(pull.info) == set(arm.diagnostics)
    assert pull.cost == pull.info["logp_evals"] > 3 * 8
    assert pull.info["kills"] == 40 and pull.info["stopped"] == 0.0  # the cap stopped every run
    assert arm.family == "nested" and arm.log_scale and not arm.importance_weights and arm.expected_seconds > 0


def test_a_capped_run_stays_unbiased(evidence_models, check_unbiased):
    """A fixed bound on the removals is a stopping time: the remainder term keeps the estimate unbiased."""
    density, log_z = evidence_models("normal_normal")
    arm = NestedArm(density, n_live=8, max_kills=24)
    check_unbiased(pulled_values(arm, 41, 400), log_z)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_live": 3}, ValueError, "'n_live' parameter of NestedArm must be an int >= 4"),
        ({"n_live": 8.0}, TypeError, "'n_live'"),
        ({"n_live": 8, "n_replace": 7}, ValueError, "'n_replace' parameter of NestedArm must be an int in"),
        ({"n_moves": 0}, ValueError, "'n_moves'"),
        ({"depth": -1.0}, ValueError, "'depth'"),
        ({"cost": "wall"}, ValueError, "'cost'"),
        ({"parallel": 1}, TypeError, "'parallel' parameter of NestedArm must be a bool"),
        ({"name": 3}, TypeError, "'name' parameter of NestedArm"),
    ],
)
def test_bad_arguments(evidence_models, kwargs, error, match):
    density, _ = evidence_models("normal_normal")
    with pytest.raises(error, match=match):
        NestedArm(density, **kwargs)
