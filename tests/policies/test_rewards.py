"""Rewards of the two reductions (Neufeld et al. 2014, Thm 2 and Sec. 5)."""

import numpy as np
import pytest

from tests.tolerance import assert_within_se

from pmcbandit.policies import get_policy
from pmcbandit.policies.rewards import make_reward_rule


def test_paired_reward_mean_is_minus_delta_times_variance(rng):
    """E[-1/4 (D1 + D2)(X1 - X2)^2] = -delta V for independent costs and values (Sec. 5)."""
    rule = make_reward_rule("paired", None, False)
    assert rule.pulls_per_decision == 2
    for sd, delta in [(0.5, 2.0), (3.0, 0.1)]:
        n = 20000
        x = rng.normal(7.0, sd, size=(n, 2))
        d = rng.exponential(delta, size=(n, 2))
        r = np.array([rule.reward(x[i], d[i]) for i in range(n)])
        se = r.std(ddof=1) / np.sqrt(n)
        assert_within_se(r.mean(), (-delta * sd**2), se)


def test_squared_reward_centre_and_bounds():
    rule = make_reward_rule("squared", None, True)
    assert rule.reward([3.0], [1.0]) == 0.0  # the first observation becomes the centre
    assert rule.reward([5.0], [1.0]) == -4.0
    rule = make_reward_rule("squared", (0.0, 1.0), True)
    assert rule.centre == 0.0 and rule.fixed_scale == 1.0
    assert rule.reward([0.5], [1.0]) == -0.25  # App. B: 1 - X^2 after normalising by (b-a)^2


def test_squared_reward_regret_ordering_is_independent_of_centre(rng):
    """E[(X_k - c)^2] - E[(X_j - c)^2] = V_k - V_j for any centre c (App. B)."""
    x1 = rng.normal(1.0, 1.0, 200000)
    x2 = rng.normal(1.0, 2.0, 200000)
    for c in (0.0, 1.0, 5.0):
        diff = np.mean((x2 - c) ** 2) - np.mean((x1 - c) ** 2)
        assert diff == pytest.approx(3.0, abs=0.1)


def test_auto_reward_follows_the_budget():
    assert make_reward_rule("auto", None, True).name == "squared"
    assert make_reward_rule("auto", None, False).name == "paired"
    with pytest.raises(ValueError, match="'reward'"):
        make_reward_rule("l1", None, True)


def test_ranges_default_from_bounds_and_policy():
    """App. B: known bounds give one shared range; otherwise the policy's default applies."""
    assert not make_reward_rule("squared", (0.0, 1.0), True).per_arm
    assert make_reward_rule("squared", None, True, "auto", get_policy("thompson"), n_arms=2).per_arm
    assert not make_reward_rule("squared", None, True, "auto", get_policy("ucb1"), n_arms=2).per_arm
    assert make_reward_rule("squared", None, True, "per_arm", get_policy("ucb1"), n_arms=2).per_arm
    with pytest.raises(ValueError, match="The 'ranges' parameter of run must be 'shared' or 'auto' when bounds"):
        make_reward_rule("squared", (0.0, 1.0), True, "per_arm")
    with pytest.raises(ValueError, match="'ranges'"):
        make_reward_rule("squared", None, True, "each")
