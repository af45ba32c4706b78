"""FullBanditResult: summary, warnings, InferenceData (and its netCDF round trip)."""

import json

import numpy as np
import pytest

from pmcbandit.exceptions import NoGuaranteeWarning
from pmcbandit.full_bandit import FullBanditEnvironment, FullBanditResult, identify_full_bandit
from pmcbandit.runtime.budget import Pulls

THETA = np.array([1.0, 0.8, 0.2, 0.1, 0.0])


@pytest.fixture(scope="module")
def result():
    env = FullBanditEnvironment(THETA, noise_sd=0.2)
    return identify_full_bandit(env, "sa_foa", k=2, delta=0.05, random_seed=3, arm_names=list("abcde"),
                                progressbar=False)


def test_result_fields(result):
    assert isinstance(result, FullBanditResult)
    assert result.stopped_by == "confidence" and result.confident and result.warnings() == []
    assert sorted(result.selected) == ["a", "b"]
    assert result.samples == result.rewards.shape[0] == result.super_arms.shape[0] == result.statistics.shape[0]
    assert result.statistic <= 0.0 == result.settings["epsilon"]
    assert np.all(np.isinf(result.statistics[:4]))  # before the 5-row support is covered
    assert result.arm_pulls.sum() == 2 * result.samples
    assert np.all(result.width > 0) and result.settings["algorithm"] == "sa_foa"


def test_summary_names_the_selection_and_the_stop(result):
    text = result.summary()
    assert "stopped by confidence" in text and "'sa_foa'" in text and "theta_hat" in text
    assert text.count("*") == 2


def test_budget_stop_warns_without_guarantee():
    env = FullBanditEnvironment(THETA, noise_sd=5.0)
    with pytest.warns(NoGuaranteeWarning, match="raise the budget"):
        res = identify_full_bandit(env, "icb", k=2, random_seed=1, budget=Pulls(50), progressbar=False)
    assert res.stopped_by == "budget" and res.samples == 50 and not res.confident
    category, message = res.warnings()[0]
    assert category is NoGuaranteeWarning and "without the 1 - delta guarantee" in message
    assert "warning:" in res.summary()


def test_same_seed_same_run():
    env = FullBanditEnvironment(THETA, noise_sd=0.2)
    a = identify_full_bandit(env, "icb", k=2, random_seed=7, progressbar=False)
    b = identify_full_bandit(env, "icb", k=2, random_seed=7, progressbar=False)
    assert a.samples == b.samples and np.array_equal(a.rewards, b.rewards)


def test_inference_data_round_trips_through_netcdf(result, tmp_path):
    import arviz as az

    from pmcbandit import _compat

    idata = result.to_inference_data()
    assert set(_compat.group_names(idata)) >= {"sample_stats", "arm_summary"}
    ss = idata.sample_stats
    assert ss["super_arm"].shape == (result.samples, 2)
    np.testing.assert_array_equal(ss["reward"].values, result.rewards)
    assert idata.attrs["stopped_by"] == "confidence" and idata.attrs["samples"] == result.samples
    assert idata.arm_summary["selected"].values.sum() == 2
    path = tmp_path / "run.nc"
    _compat.write_netcdf(idata, path)
    back = az.from_netcdf(str(path))
    np.testing.assert_array_equal(back.arm_summary["theta_hat"].values, result.theta_hat)
    assert back.attrs["algorithm"] == "sa_foa"


def test_settings_and_attrs_are_plain_json(result):
    # every setting (the width rule included) is a plain value: JSON writes it without a fallback,
    # and nothing in the InferenceData attrs is the repr of a Python object
    settings = json.loads(json.dumps(result.settings))
    assert settings["width"] == "paper" and settings["sigma"] == 0.2 and settings["stopped_by"] == "confidence"
    assert settings["arm_names"] == list("abcde") and settings["door"] == "identify_full_bandit"
    for key, value in result.to_inference_data().attrs.items():
        text = value if isinstance(value, str) else json.dumps(np.asarray(value).tolist())
        assert "<" not in text and "object at 0x" not in text, (key, text)
