"""SMCArm: pm.sample_smc runs as pulls; log Z near the truth, seeding, scoped silence, bad input."""

import logging
import warnings

import numpy as np
import pymc as pm
import pytest

from tests.tolerance import assert_within_se

from pmcbandit.arms.evidence.smc import SMCArm, quiet_pymc
from tests.arms.evidence.test_laplace_is import beta_binomial, linear_regression, normal_normal


def _runs(arm, n, seed):
    rng = np.random.default_rng(seed)
    return np.array([arm.pull(rng).values[0] for _ in range(n)])


def test_log_z_close_to_truth_normal_normal():
    """Mean of 6 runs of log Z within 4 SE (spread of the runs) + the documented small bias."""
    model, log_z = normal_normal()
    arm = SMCArm(model, draws=500)
    values = _runs(arm, 6, seed=11)
    se = values.std(ddof=1) / np.sqrt(values.size)
    # A 1-D Gaussian posterior: the IMH kernel is near-exact and the adaptive-tempering
    # bias is far below 0.02 at 500 particles.
    assert_within_se(values.mean(), log_z, se, values, log_z, bias=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("build", [beta_binomial, linear_regression])
def test_log_z_close_to_truth_slow(build):
    model, log_z = build()
    arm = SMCArm(model, draws=2000)
    values = _runs(arm, 10, seed=12)
    se = values.std(ddof=1) / np.sqrt(values.size)
    assert_within_se(values.mean(), log_z, se, values, log_z, bias=0.02)


def test_pull_shape_name_and_flags():
    model, _ = normal_normal()
    arm = SMCArm(model, draws=200)
    assert arm.name == "smc-200" and arm.log_scale and arm.unbiased is False
    assert SMCArm(model, draws=300, kernel="MH").name == "smc-mh-300"
    assert SMCArm(model, draws=300, name="mine").name == "mine"
    pull = arm.pull(np.random.default_rng(0))
    assert pull.values.shape == (1,) and np.isfinite(pull.values[0])
    assert set(pull.info) == set(arm.diagnostics)
    assert pull.info["n_stages"] >= 1 and pull.cost > 0


def test_same_seed_same_value():
    model, _ = normal_normal()
    arm = SMCArm(model, draws=200)
    a = _runs(arm, 2, seed=3)
    b = _runs(arm, 2, seed=3)
    np.testing.assert_array_equal(a, b)
    assert a[0] != a[1]


def test_pull_is_silent_and_restores_logging(caplog, recwarn):
    model, _ = normal_normal()
    logger = logging.getLogger("pymc")
    level = logger.level
    with caplog.at_level(logging.INFO, logger="pymc"):
        SMCArm(model, draws=200).pull(np.random.default_rng(1))
    assert not [r for r in caplog.records if r.name.startswith("pymc")]
    assert logger.level == level
    assert not [w for w in recwarn if "pymc" in str(w.filename)]


def test_quiet_pymc_is_scoped():
    logger = logging.getLogger("pymc")
    level = logger.level
    filters = list(warnings.filters)
    with quiet_pymc():
        assert logger.getEffectiveLevel() >= logging.ERROR
        warnings.warn("hidden", UserWarning)
    assert logger.level == level and warnings.filters == filters


def test_bad_inputs_raise():
    model, _ = normal_normal()
    with pytest.raises(TypeError, match="'model' parameter of SMCArm must be a pymc.Model"):
        SMCArm("model")
    with pm.Model() as discrete:
        pm.Poisson("k", 2.0)
    with pytest.raises(ValueError, match="continuous free variables"):
        SMCArm(discrete)
    with pytest.raises(ValueError, match="'draws'"):
        SMCArm(model, draws=0)
    with pytest.raises(ValueError, match="'kernel'"):
        SMCArm(model, kernel="HMC")
    with pytest.raises(TypeError, match="'kernel'"):
        SMCArm(model, kernel=3)
    with pytest.raises(ValueError, match="'chains'"):
        SMCArm(model, chains=4)
