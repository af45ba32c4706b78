"""FullBanditResult: summary, warnings, InferenceData (and its netCDF round trip)."""

import numpy as np
import pytest

from pmcbandit.full_bandit import FullBanditEnvironment, FullBanditResult, identify_full_bandit

THETA = np.array([1.0, 0.8, 0.2, 0.1, 0.0])


@pytest.fixture(scope="module")
def result():
    env = FullBanditEnvironment(THETA, noise_sd=0.2)
    return identify_full_bandit(env, 2, "sa_foa", delta=0.05, random_seed=3, arm_names=list("abcde"))


def test_result_fields(result):
    assert isinstance(result, FullBanditResult)
    assert result.stopped_by == "confidence" and result.confident and result.warnings() == []
    assert sorted(result.selected) == ["a", "b"]
    assert result.rounds == result.rewards.shape[0] == result.super_arms.shape[0] == result.statistics.shape[0]
    assert result.statistic <= 0.0 == result.settings["epsilon"]
    assert np.all(np.isinf(result.statistics[:4]))  # before the 5-row support is covered
    assert result.arm_pulls.sum() == 2 * result.rounds
    assert np.all(result.width > 0) and result.settings["algorithm"] == "sa_foa"


def test_summary_names_the_selection_and_the_stop(result):
    text = result.summary()
    assert "stopped by confidence" in text and "'sa_foa'" in text and "theta_hat" in text
    assert text.count("*") == 2


def test_max_rounds_stop_warns():
    env = FullBanditEnvironment(THETA, noise_sd=5.0)
    res = identify_full_bandit(env, 2, "icb", random_seed=1, max_rounds=50)
    assert res.stopped_by == "max_rounds" and res.rounds == 50 and not res.confident
    assert "without the 1 - delta guarantee" in res.warnings()[0] and "warning:" in res.summary()


def test_same_seed_same_run():
    env = FullBanditEnvironment(THETA, noise_sd=0.2)
    a = identify_full_bandit(env, 2, "icb", random_seed=7)
    b = identify_full_bandit(env, 2, "icb", random_seed=7)
    assert a.rounds == b.rounds and np.array_equal(a.rewards, b.rewards)


def test_inference_data_round_trips_through_netcdf(result, tmp_path):
    import arviz as az

    idata = result.to_inference_data()
    assert set(idata.groups()) >= {"sample_stats", "arm_summary"}
    ss = idata.sample_stats
    assert ss["super_arm"].shape == (result.rounds, 2)
    np.testing.assert_array_equal(ss["reward"].values, result.rewards)
    assert idata.attrs["stopped_by"] == "confidence" and idata.attrs["rounds"] == result.rounds
    assert idata.arm_summary["selected"].values.sum() == 2
    path = tmp_path / "run.nc"
    idata.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    np.testing.assert_array_equal(back.arm_summary["theta_hat"].values, result.theta_hat)
    assert back.attrs["algorithm"] == "sa_foa"
