"""Tempered SMC with HMC moves on the pilot's ladder: unbiased Z-hat, determinism, the ladder, inputs, pickling."""

from __future__ import annotations

import numpy as np
import pytest

from tests.analytic_models import independent_normal_means
from tests.tolerance import assert_within_se

import pmcbandit  # noqa: F401  (configures PyTensor before pymc is imported)
from pmcbandit.arms.evidence import ModelDensity, TemperedSMCArm
from pmcbandit.arms.evidence.ais import HMC_LEAPFROG, HMC_PERSISTENCE, HMC_TARGET_ACCEPT, tune_hmc
from pmcbandit.arms.evidence.tempered_smc import pilot_ladder

DIM, M0, S0, S = 10, 0.5, 1.0, 0.5


def _normal_model():
    """:func:`tests.analytic_models.independent_normal_means` in ``DIM`` dimensions: ``(model, log Z)``."""
    model, _, log_z, _, _ = independent_normal_means(DIM, M0, S0, S)
    return model, log_z


@pytest.fixture(scope="module")
def normal():
    model, log_z = _normal_model()
    density = ModelDensity(model)
    pilot = tune_hmc(density, HMC_LEAPFROG, HMC_TARGET_ACCEPT, HMC_PERSISTENCE)
    return density, pilot, log_z


def _ratios(arm, log_z, pulls, seed):
    rng = np.random.default_rng(seed)
    return np.exp(np.array([arm.pull(rng).values[0] for _ in range(pulls)]) - log_z)


@pytest.mark.slow
@pytest.mark.parametrize(("kwargs", "seed"), [({"ess_threshold": 0.5}, 11),
                                              ({"ess_threshold": 1.0, "n_temperatures": 12}, 12)])
def test_z_hat_is_unbiased(normal, kwargs, seed):
    density, pilot, log_z = normal
    arm = TemperedSMCArm(density, n_particles=32, n_moves=1, hmc_pilot=pilot, **kwargs)
    ratio = _ratios(arm, log_z, 400, seed)
    se = ratio.std(ddof=1) / np.sqrt(ratio.size)
    assert 0 < se < 0.05  # precise enough for the check to fail on a biased estimator
    assert_within_se(ratio.mean(), 1.0, se, kwargs)


def test_same_seed_same_values_and_pull_info(normal):
    density, pilot, _ = normal
    arm = TemperedSMCArm(density, n_particles=16, n_moves=2, ess_threshold=1.0, hmc_pilot=pilot)
    a = arm.pull(np.random.default_rng(5))
    np.testing.assert_array_equal(a.values, arm.pull(np.random.default_rng(5)).values)
    assert a.values.shape == (1,)
    assert not np.array_equal(a.values, arm.pull(np.random.default_rng(6)).values)
    assert set(a.info) == set(arm.diagnostics) and arm.name == "smc-hmc-16x2"
    assert a.info["n_resamples"] == arm.n_steps - 1  # ess_threshold = 1: every step but the last
    assert 0.3 < a.info["accept_rate"] < 1.0 and 0.0 < a.info["min_ess"] <= 1.0
    # every particle makes n_moves moves at each inner temperature, each of hmc_leapfrog evaluations at most
    assert 16 < a.info["logp_evals"] <= 16 * (1 + 2 * (arm.n_steps - 1) * HMC_LEAPFROG)
    assert arm.log_scale and arm.unbiased and arm.family == "annealing" and not arm.importance_weights
    assert np.isfinite(arm.expected_seconds) and arm.expected_seconds > 0
    counted = TemperedSMCArm(density, n_particles=16, n_moves=2, ess_threshold=1.0, hmc_pilot=pilot, cost="logp_evals")
    pull = counted.pull(np.random.default_rng(5))
    assert counted.cost_unit == "logp_evals" and pull.cost == pull.info["logp_evals"]
    np.testing.assert_array_equal(pull.values, a.values)


def test_ladder_is_the_pilots_or_an_interpolation_of_it(normal):
    _, pilot, _ = normal
    betas, eps, inv_mass = pilot_ladder(pilot)
    np.testing.assert_array_equal(betas, pilot.betas)
    np.testing.assert_array_equal(eps, pilot.step_size)
    np.testing.assert_array_equal(inv_mass, pilot.inv_mass)
    for n in (2, 7, 3 * pilot.betas.size):
        betas, eps, inv_mass = pilot_ladder(pilot, n)
        assert betas.shape == (n,) and betas[0] == 0.0 and betas[-1] == 1.0 and np.all(np.diff(betas) > 0)
        assert eps.shape == (n,) and inv_mass.shape == (n, DIM)
        assert eps.min() >= pilot.step_size.min() * (1 - 1e-12) and eps.max() <= pilot.step_size.max() * (1 + 1e-12)
        assert np.all(inv_mass > 0)
    same = pilot_ladder(pilot, pilot.betas.size)
    np.testing.assert_allclose(same[0], pilot.betas)


def test_pickled_arm_gives_the_same_values(normal):
    import cloudpickle  # how the process and Dask executors ship arms to their workers

    density, pilot, _ = normal
    arm = TemperedSMCArm(density, n_particles=8, n_moves=1, n_temperatures=6, hmc_pilot=pilot)
    again = cloudpickle.loads(cloudpickle.dumps(arm))
    first, second = (a.pull(np.random.default_rng(3)).values for a in (arm, again))
    np.testing.assert_array_equal(first, second)


def test_pilot_of_another_dimension_is_refused(normal):
    density, pilot, _ = normal
    other = pilot._replace(inv_mass=pilot.inv_mass[:, :3])
    with pytest.raises(ValueError, match="The 'hmc_pilot' parameter of TemperedSMCArm must be the HMCPilot of a "
                                         f"density of dimension {DIM}"):
        TemperedSMCArm(density, hmc_pilot=other)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_particles": 0}, ValueError, "The 'n_particles' parameter of TemperedSMCArm must be > 0. Got 0 instead."),
        ({"n_particles": 8.0}, TypeError, "The 'n_particles' parameter of TemperedSMCArm must be an int"),
        ({"n_moves": 0}, ValueError, "The 'n_moves' parameter of TemperedSMCArm must be > 0. Got 0 instead."),
        ({"n_temperatures": 1}, ValueError, "The 'n_temperatures' parameter of TemperedSMCArm must be None or an "
                                            "int >= 2. Got 1 instead."),
        ({"n_temperatures": "many"}, TypeError, "The 'n_temperatures' parameter of TemperedSMCArm must be an int"),
        ({"ess_threshold": 1.5}, ValueError, r"The 'ess_threshold' parameter of TemperedSMCArm must be in \[0, 1\]"),
        ({"ess_threshold": None}, TypeError, "The 'ess_threshold' parameter of TemperedSMCArm must be a real"),
        ({"hmc_leapfrog": 0}, ValueError, "The 'hmc_leapfrog' parameter of TemperedSMCArm must be > 0"),
        ({"hmc_target_accept": 1.0}, ValueError, "The 'hmc_target_accept' parameter of TemperedSMCArm must be in"),
        ({"hmc_persistence": 1.0}, ValueError, r"The 'hmc_persistence' parameter of TemperedSMCArm must be in "
                                               r"\[0, 1\)"),
        ({"hmc_pilot": (0.0, 1.0)}, TypeError, "The 'hmc_pilot' parameter of TemperedSMCArm must be None or an "
                                               "HMCPilot"),
        ({"cost": "wall"}, ValueError, "The 'cost' parameter of TemperedSMCArm must be one of"),
        ({"name": ""}, TypeError, "The 'name' parameter of TemperedSMCArm must be None or a non-empty str"),
    ],
)
def test_bad_arguments_raise_before_compiling(kwargs, error, match, monkeypatch):
    import pmcbandit.arms.evidence.tempered_smc as module

    class NoCompiling:
        def __init__(self, *args, **kwargs):
            raise AssertionError("the model was compiled before the arguments were checked")

    monkeypatch.setattr(module, "ModelDensity", NoCompiling)
    model = _normal_model()[0]
    with pytest.raises(error, match=match):
        TemperedSMCArm(model, **kwargs)
