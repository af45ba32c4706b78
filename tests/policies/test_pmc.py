"""d-kernel PMC allocation: hand-computed updates, floor, fallback, sampling, arguments."""

import warnings

import numpy as np
import pytest

from tests.tolerance import assert_within_se

import pmcbandit  # noqa: F401
from pmcbandit.policies import get_policy
from pmcbandit.policies.pmc import PMCExtra, policy

COEF = np.array([[0.0, 0.0], [0.1, 0.02], [0.2, 0.08]])


def _info(h, stat):
    return {"pmc_h": np.asarray(h, float), "pmc_stat": np.asarray(stat, float), "pmc_coef": COEF}


def _omega_by_hand(alpha, h, stat):
    """Σ_i |h_i| / Σ_j α_j exp(a_j S_i − b_j), written out with plain loops."""
    total = 0.0
    for hi, si in zip(h, stat):
        mix = sum(alpha[j] * np.exp(COEF[j, 0] * si - COEF[j, 1]) for j in range(3))
        total += abs(hi) / mix
    return total


HISTORY = [(0, [1.0, 0.0, 2.5], [0.3, -1.0, 2.0]), (2, [4.0, 1.0], [5.0, 3.0]), (2, [0.5], [-2.0])]


def test_indicator_update_matches_hand_computation():
    pol = policy(population_size=3, alpha_min=0.01)
    state = pol.init(3)
    alpha0 = np.full(3, 1 / 3)
    sums = np.zeros(3)
    for arm, h, s in HISTORY:
        sums[arm] += _omega_by_hand(alpha0, h, s)
        state = pol.update(None, state, arm, -1.0, 1.0, value=1.0, info=_info(h, s))
    expected = (1 - 3 * 0.01) * sums / sums.sum() + 0.01
    np.testing.assert_allclose(state.extra.alpha, expected, rtol=1e-12)
    assert state.extra.populations == 1 and state.extra.filled == 0
    assert np.all(np.isneginf(state.extra.log_acc))
    np.testing.assert_array_equal(state.n, [1, 0, 2])


def test_rao_blackwellised_update_matches_hand_computation():
    pol = policy(population_size=3, alpha_min=0.0, rao_blackwellised=True)
    state = pol.init(3)
    alpha0 = np.full(3, 1 / 3)
    sums = np.zeros(3)
    for arm, h, s in HISTORY:
        for hi, si in zip(h, s):
            q = alpha0 * np.exp(COEF[:, 0] * si - COEF[:, 1])  # α_j q_j/p at this path
            sums += abs(hi) / q.sum() * q / q.sum()
        state = pol.update(None, state, arm, -1.0, 1.0, value=1.0, info=_info(h, s))
    np.testing.assert_allclose(state.extra.alpha, sums / sums.sum(), rtol=1e-12)


def test_second_population_uses_updated_alpha_and_state_is_immutable():
    pol = policy(population_size=1, alpha_min=0.0)
    s0 = pol.init(3)
    s1 = pol.update(None, s0, 1, -1.0, 1.0, info=_info([2.0], [0.5]))
    np.testing.assert_allclose(s1.extra.alpha, [0, 1, 0])
    np.testing.assert_allclose(s0.extra.alpha, np.full(3, 1 / 3))  # untouched
    assert s0.n.sum() == 0
    s2 = pol.update(None, s1, 1, -1.0, 1.0, info=_info([2.0], [0.5]))
    np.testing.assert_allclose(s2.extra.alpha, [0, 1, 0])


def test_floor_keeps_every_component_and_zero_weights_keep_alpha():
    pol = policy(population_size=2)  # alpha_min = 1e-3 / K
    state = pol.init(3)
    state = pol.update(None, state, 2, -1.0, 1.0, info=_info([5.0], [1.0]))
    state = pol.update(None, state, 2, -1.0, 1.0, info=_info([3.0], [0.0]))
    a = state.extra.alpha
    np.testing.assert_allclose(a, [1e-3 / 3, 1e-3 / 3, 1 - 2 * 1e-3 / 3], rtol=1e-12)
    assert a.sum() == pytest.approx(1.0, abs=1e-15)
    before = a.copy()
    for _ in range(2):
        state = pol.update(None, state, 0, -1.0, 1.0, info=_info([0.0, 0.0], [1.0, 2.0]))
    np.testing.assert_array_equal(state.extra.alpha, before)
    assert state.extra.populations == 2


def test_fallback_to_observation_warns_and_missing_data_raises():
    pol = policy(population_size=2, alpha_min=0.0)
    state = pol.init(2)
    with pytest.warns(UserWarning, match="does not adapt"):
        state = pol.update(None, state, 0, -1.0, 1.0, value=3.0, info={"mean_weight": 1.0})
        state = pol.update(None, state, 1, -1.0, 1.0, value=-1.0)
    np.testing.assert_allclose(state.extra.alpha, [0.75, 0.25])
    with pytest.raises(ValueError, match="needs the pull's info"):
        pol.update(None, state, 0, -1.0, 1.0)
    with pytest.raises(ValueError, match="pmc_coef"):
        pol.update(None, pol.init(2), 0, -1.0, 1.0, info=_info([1.0], [1.0]))


def test_select_follows_alpha_and_is_reproducible():
    pol = policy()
    state = pol.init(3)
    state = state._replace(extra=PMCExtra(np.array([0.2, 0.8, 0.0]), np.full(3, -np.inf), 0, 0))
    rng = np.random.default_rng(4)
    picks = np.array([pol.select(rng, state) for _ in range(4000)])
    assert not np.any(picks == 2)
    p_hat = np.mean(picks == 0)
    assert_within_se(p_hat, 0.2, np.sqrt(0.2 * 0.8 / picks.size))
    again = [pol.select(np.random.default_rng(4), state) for _ in range(1)]
    assert again[0] == picks[0]


def test_factory_and_bad_arguments():
    pol = get_policy("pmc", population_size=5)
    assert pol.name == "pmc" and pol.params == (5.0,)
    with pytest.raises(ValueError, match="'population_size' parameter of pmc"):
        policy(population_size=0)
    with pytest.raises(ValueError, match="'population_size' parameter of pmc"):
        policy(population_size=2.5)
    with pytest.raises(ValueError, match="'alpha_min' parameter of pmc"):
        policy(alpha_min=1.5)
    with pytest.raises(ValueError, match="'alpha_min' parameter of pmc must be < 1/K"):
        policy(alpha_min=0.4).init(3)


def test_adapts_towards_the_money_on_cir_arms():
    # At the money (K = 0.08) the payoff mass lies at high rates: PMC must move α to large θ.
    from models.cir import caplet_arms

    arms = caplet_arms(0.08, thetas=np.arange(0, 16, 3) / 10, paths_per_pull=200)
    pol = policy(population_size=12)
    state = pol.init(len(arms))
    prng, arng = np.random.default_rng(0), np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(10 * 12):
            k = pol.select(prng, state)
            p = arms[k].pull(arng)
            state = pol.update(prng, state, k, -1.0, p.cost, value=p.values.mean(), info=p.info)
    alpha = state.extra.alpha
    assert alpha[0] < 0.05 and alpha[3:].sum() > 0.9, alpha


def test_runs_under_pmcbandit_run_with_per_path_fields():
    # The run loop must hand the arms' undeclared PMC arrays to update (else PMC warns).
    from models.cir import caplet_arms
    from pmcbandit import Pulls, run

    arms = caplet_arms(0.08, thetas=[0.0, 0.6, 1.2], paths_per_pull=100, cost="paths")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = run(arms, "pmc", budget=Pulls(30), random_seed=3, progressbar=False, policy_kwargs={"population_size": 5})
    b = run(arms, "pmc", budget=Pulls(30), random_seed=3, progressbar=False, policy_kwargs={"population_size": 5})
    assert a.policy_state.extra.populations == 6
    assert a.estimate == b.estimate
    np.testing.assert_array_equal(a.policy_state.extra.alpha, b.policy_state.extra.alpha)
    assert a.policy_state.extra.alpha[0] < 1 / 3
