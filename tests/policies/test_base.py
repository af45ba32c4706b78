"""The shared policy machinery: state updates, normalisation, argmax, UCB1, uniform, oracle."""

import math

import numpy as np
import pytest

from pmcbandit.policies import get_policy
from pmcbandit.policies import oracle, ucb1, uniform
from pmcbandit.policies.base import (
    BanditState,
    add_pending,
    argmax_random,
    init_state,
    normalised_moments,
    record_loss,
    to_loss_scale,
)


def _feed(state, history):
    for arm, reward in history:
        state = record_loss(state, arm, reward, 1.0)
    return state


# --- record_loss / add_pending ------------------------------------------------------


def test_record_loss_sums_counts_and_leaves_input_untouched():
    s0 = init_state(3)
    s1 = _feed(s0, [(0, -0.5), (0, -1.5), (2, -2.0)])
    np.testing.assert_array_equal(s1.n, [2, 0, 1])
    np.testing.assert_allclose(s1.loss_sum, [2.0, 0.0, 2.0])
    np.testing.assert_allclose(s1.loss_sq_sum, [0.25 + 2.25, 0.0, 4.0])
    np.testing.assert_allclose(s1.cost_sum, [2.0, 0.0, 1.0])
    assert s1.t == 3 and not s1.fixed_scale and not s1.per_arm
    np.testing.assert_array_equal(s1.scale, [2.0, 2.0, 2.0])
    for field in ("n", "pending", "loss_sum", "loss_sq_sum", "cost_sum"):
        assert not np.any(getattr(s0, field)), field  # immutable semantics
    assert s0.t == 0 and not np.any(s0.scale)


def test_record_loss_replaces_extra_only_when_given():
    s = init_state(2, extra="old")
    assert record_loss(s, 0, -0.1, 0.0).extra == "old"
    assert record_loss(s, 0, -0.1, 0.0, extra=None).extra is None


def test_pending_decisions_count_once():
    s = add_pending(add_pending(init_state(2), 1), 1)
    np.testing.assert_array_equal(s.pending, [0, 2])
    assert s.t == 2
    s = record_loss(s, 1, -0.3, 0.0)
    np.testing.assert_array_equal(s.pending, [0, 1])
    np.testing.assert_array_equal(s.n, [0, 1])
    assert s.t == 2  # the decision was counted when dispatched
    s = record_loss(s, 0, -0.3, 0.0)  # a synchronous update counts its own decision
    assert s.t == 3


def test_pending_arm_is_not_forced_again():
    # Arm 0 has a pull in flight: the initial round robin goes to arms 1 and 2 first.
    policy = ucb1.policy(scale=1.0)
    state = add_pending(policy.init(3), 0)
    rng = np.random.default_rng(0)
    picks = {policy.select(rng, state) for _ in range(50)}
    assert picks == {1, 2}


# --- normalisation (App. B) ---------------------------------------------------------


def test_normalised_moments_by_hand():
    # losses 1 and 3 on arm 0, 2 on arm 1; adaptive scale = 3
    s = _feed(init_state(3), [(0, -1.0), (0, -3.0), (1, -2.0)])
    mean, var = normalised_moments(s.n, s.loss_sum, s.loss_sq_sum, s.scale)
    # arm 0: r = 1 - 1/3, 1 - 3/3 = 2/3, 0 -> mean 1/3, 1/n variance 1/9
    np.testing.assert_allclose(mean, [1 / 3, 1 / 3, 1.0])
    np.testing.assert_allclose(var, [1 / 9, 0.0, 0.0], atol=1e-15)


def test_scale_growth_rescales_past_rewards():
    s = _feed(init_state(2), [(0, -1.0), (1, -0.5)])
    mean_before, _ = normalised_moments(s.n, s.loss_sum, s.loss_sq_sum, s.scale)
    np.testing.assert_allclose(mean_before, [0.0, 0.5])
    s = record_loss(s, 1, -4.0, 0.0)
    np.testing.assert_array_equal(s.scale, [4.0, 4.0])
    mean_after, _ = normalised_moments(s.n, s.loss_sum, s.loss_sq_sum, s.scale)
    np.testing.assert_allclose(mean_after, [0.75, 1 - 4.5 / 2 / 4])


def test_fixed_scale_is_kept_and_enforced():
    s = record_loss(init_state(2, scale=2.0), 0, -1.0, 0.0)
    assert s.fixed_scale
    np.testing.assert_array_equal(s.scale, [2.0, 2.0])
    with pytest.raises(ValueError, match="outside the declared range"):
        record_loss(s, 0, -2.5, 0.0)


def test_per_arm_scales_are_each_arms_own_running_maximum():
    s = _feed(init_state(3, per_arm=True), [(0, -1.0), (0, -3.0), (1, -2.0), (1, -0.5)])
    assert s.per_arm
    np.testing.assert_array_equal(s.scale, [3.0, 2.0, 0.0])
    mean, var = normalised_moments(s.n, s.loss_sum, s.loss_sq_sum, s.scale)
    # arm 0: 1 - 1/3, 1 - 3/3; arm 1: 1 - 2/2, 1 - 0.5/2
    np.testing.assert_allclose(mean, [1 / 3, 0.375, 1.0])
    np.testing.assert_allclose(var, [1 / 9, 0.375**2, 0.0], atol=1e-15)


def test_to_loss_scale_maps_bounds_back_and_borrows_the_widest_range_while_zero():
    """App. B: B' = r_k^2 (B - 1); an arm whose range is still 0 gets the widest one; +inf stays."""
    values = np.array([1.2, 0.5, 1.0, np.inf,   0.9, 0.9, 0.9, 0.9])
    scale = np.array([2.0, 4.0, 0.0, 0.0,       1.0, 0.0, 0.0, 0.0])
    to_loss_scale(values, scale, 4)  # two bandits of 4 arms back to back
    np.testing.assert_allclose(values, [0.4, -2.0, 0.0, np.inf, -0.1, -0.1, -0.1, -0.1])


def test_per_arm_ucb_v_prefers_the_arm_with_the_smaller_mean_loss():
    """Per-arm normalisation alone would make both arms look alike (each arm's losses span its own
    range); the back-transform compares them on the loss scale, so the quiet arm wins."""
    from pmcbandit.policies import ucb_v

    policy = ucb_v.policy()
    rng = np.random.default_rng(0)
    state = policy.init(2, per_arm=True)
    for _ in range(400):
        state = policy.update(None, state, 0, -0.01 * rng.random(), 0.0)
        state = policy.update(None, state, 1, -1.0 * rng.random(), 0.0)
    mean, _ = normalised_moments(state.n, state.loss_sum, state.loss_sq_sum, state.scale)
    assert abs(mean[0] - mean[1]) < 0.1
    assert {policy.select(rng, state) for _ in range(20)} == {0}


def test_per_arm_state_rejects_a_fixed_scale_and_non_bool():
    with pytest.raises(ValueError, match="The 'scale' parameter of init must be None when per_arm=True"):
        init_state(2, 1.0, per_arm=True)
    with pytest.raises(TypeError, match="The 'per_arm' parameter of init must be a bool"):
        init_state(2, per_arm=1)


# --- argmax_random ------------------------------------------------------------------


def test_argmax_random_breaks_ties_uniformly():
    values = np.array([1.0, 3.0, 3.0, 0.0, 3.0])
    # A grid of 300 uniforms: each of the 3 maximisers must get exactly 100.
    picks = [argmax_random(values, (i + 0.5) / 300) for i in range(300)]
    assert np.bincount(picks, minlength=5).tolist() == [0, 100, 100, 0, 100]


def test_argmax_random_single_max_ignores_u_and_nan():
    values = np.array([np.nan, 0.2, 0.9, np.nan])
    assert {argmax_random(values, u) for u in (0.0, 0.5, 0.999)} == {2}
    assert argmax_random(np.array([np.nan, np.nan]), 0.7) == 1  # all-NaN: floor(u K)
    assert argmax_random(np.array([-np.inf, np.inf, np.inf]), 0.6) == 2


# --- UCB1 ---------------------------------------------------------------------------


def test_ucb1_index_by_hand():
    # fixed scale 1: arm 0 rewards -0.2, -0.4 (r = 0.8, 0.6); arm 1 reward -0.5 (r = 0.5)
    s = _feed(init_state(3, scale=1.0), [(0, -0.2), (0, -0.4), (1, -0.5)])
    mean, var = normalised_moments(s.n, s.loss_sum, s.loss_sq_sum, s.scale)
    t = s.t + 1  # the decision being made
    got = ucb1.index(s.n, mean, var, t, ())
    expected = [0.7 + math.sqrt(2 * math.log(4) / 2), 0.5 + math.sqrt(2 * math.log(4) / 1), math.inf]
    np.testing.assert_allclose(got, expected, rtol=1e-14)


def test_ucb1_select_is_the_argmax_of_the_index():
    policy = ucb1.policy(scale=1.0)
    s = _feed(policy.init(3), [(0, -0.2), (0, -0.4), (1, -0.5), (2, -0.05)])
    # t = 5: arm 0: 0.7 + sqrt(log 5) = 1.9686; arm 1: 0.5 + sqrt(2 log 5) = 2.2941;
    # arm 2: 0.95 + sqrt(2 log 5) = 2.7441 -> arm 2
    assert policy.select(np.random.default_rng(1), s) == 2


def test_ucb1_plays_every_arm_once_first():
    policy = ucb1.policy(scale=1.0)
    rng = np.random.default_rng(3)
    s = policy.init(4)
    first = []
    for _ in range(4):
        arm = policy.select(rng, s)
        first.append(arm)
        s = policy.update(rng, s, arm, -0.5, 0.0)
    assert sorted(first) == [0, 1, 2, 3]


# --- uniform and oracle -------------------------------------------------------------


def test_uniform_round_robin_balances_counts():
    policy = uniform.policy()
    rng = np.random.default_rng(0)
    s = policy.init(3)
    for i in range(10):
        arm = policy.select(rng, s)
        s = policy.update(rng, s, arm, -float(i % 3), 0.0)
    np.testing.assert_array_equal(s.n, [4, 3, 3])


def test_oracle_always_pulls_its_arm():
    policy = oracle.policy(2)
    rng = np.random.default_rng(0)
    s = policy.init(3)
    for _ in range(5):
        arm = policy.select(rng, s)
        assert arm == 2
        s = policy.update(rng, s, arm, -1.0, 0.0)
    assert policy.name == "oracle-2"


# --- bad arguments ------------------------------------------------------------------


@pytest.mark.parametrize("n_arms", [0, -1, 2.5, True, "3"])
def test_init_state_rejects_bad_n_arms(n_arms):
    with pytest.raises(ValueError, match="The 'n_arms' parameter of init must be"):
        init_state(n_arms)


@pytest.mark.parametrize("scale", [0.0, -1.0, np.inf, np.nan])
def test_init_state_rejects_bad_scale(scale):
    with pytest.raises(ValueError, match="The 'scale' parameter of init must be"):
        init_state(2, scale)


@pytest.mark.parametrize("reward", [0.5, np.nan, -np.inf])
def test_record_loss_rejects_bad_reward(reward):
    with pytest.raises(ValueError, match="The 'reward' parameter of update must be finite and <= 0"):
        record_loss(init_state(2), 0, reward, 0.0)


def test_oracle_rejects_bad_arm():
    with pytest.raises(ValueError, match="The 'arm' parameter of oracle"):
        oracle.policy(-1)
    with pytest.raises(ValueError, match="must be < n_arms=2"):
        oracle.policy(2).init(2)


def test_get_policy_rejects_bad_names():
    with pytest.raises(ValueError, match="The 'policy' parameter of get_policy must be one of"):
        get_policy("ucb2")
    with pytest.raises(TypeError, match="The 'policy' parameter of get_policy must be a str"):
        get_policy(3)
    with pytest.raises(ValueError, match="must be a name when parameters are given"):
        get_policy(ucb1.policy(), scale=1.0)


def test_get_policy_resolves_every_name_of_this_module_set():
    for name in ("uniform", "ucb1", "ucb_v", "kl_ucb", "thompson"):
        assert get_policy(name).name == name
    assert get_policy("oracle", arm=1).name == "oracle-1"
    assert isinstance(get_policy("ucb_v", zeta=2.0).init(2), BanditState)
