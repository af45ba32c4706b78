"""The Gaussian full-bandit environment."""

import numpy as np
import pytest

from pmcbandit.full_bandit import FullBanditEnvironment
from tests.tolerance import assert_within_se


def test_pull_mean_and_scale(rng):
    env = FullBanditEnvironment([0.1, 0.5, 0.9, -0.3], noise_sd=0.5)
    draws = np.array([env.pull([0, 2], rng) for _ in range(4000)])
    assert_within_se(draws.mean(), 1.0, env.scale(2) / np.sqrt(draws.size))
    # sample variance of a normal: se = sigma^2 sqrt(2 / (m - 1))
    assert_within_se(draws.var(ddof=1), 0.5, 0.5 * np.sqrt(2 / (draws.size - 1)))
    assert env.scale(2) == pytest.approx(0.5 * np.sqrt(2))
    assert FullBanditEnvironment([0, 1, 2], 0.5, noise="sum").scale(2) == 0.5


def test_same_seed_same_observations():
    env = FullBanditEnvironment(np.arange(5.0))
    a = [env.pull([1, 3], np.random.default_rng(3)) for _ in range(1)]
    b = [env.pull([1, 3], np.random.default_rng(3)) for _ in range(1)]
    assert a == b
    assert env.best(2).tolist() == [4, 3] and env.mean([0, 4]) == 4.0


@pytest.mark.parametrize("kwargs, param", [
    (dict(theta=[0.0, 1.0]), "'theta'"), (dict(theta=[0.0, np.nan, 1.0]), "'theta'"),
    (dict(theta=[0, 1, 2], noise_sd=0.0), "'noise_sd'"), (dict(theta=[0, 1, 2], noise="dependent"), "'noise'"),
])
def test_bad_input(kwargs, param):
    with pytest.raises(ValueError, match=param):
        FullBanditEnvironment(**kwargs)
