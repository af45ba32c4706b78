"""The efficiency rule on simulated arms: intervals, the LUCB choice, stopping, and the fixed protocol."""

import numpy as np
import pytest

from pmcbandit.compare import efficiency as eff
from pmcbandit.compare.simulate import simulate_comparison
from tests.compare.helpers import uniform_pair
from tests.tolerance import error_rate_lower, error_rate_upper


def _rule(n=3, **kw):
    base = dict(k=1, delta=0.1, n_arms=n, variance_bound=0.32, costs=(1.0,) * n)
    base.update(kw)
    return eff.EfficiencyRule(**base)


def test_intervals_contain_the_point_and_log_efficiency_is_minus_log_variance_times_cost():
    rule = _rule(2, costs=(2.0, 0.5))
    state = eff.init(rule)
    rng = np.random.default_rng(0)
    for _ in range(200):
        for arm in (0, 1):
            x = rng.uniform(-0.3, 0.3, 2)
            state = eff.update(rule, state, arm, x[0], x[1], 9.0, 9.0)  # declared costs win over reported
    point, lo, hi = eff.log_efficiency(rule, state)
    v = state.v_sum / state.pairs
    np.testing.assert_allclose(point, -np.log(v) - np.log([2.0, 0.5]))
    assert np.all(lo <= point) and np.all(point <= hi)


def test_measured_costs_get_intervals_and_an_arm_without_pairs_is_unbounded():
    rule = _rule(2, costs=None, variance_bound=None)
    state = eff.init(rule)
    rng = np.random.default_rng(1)
    for _ in range(50):
        x = rng.normal(size=2)
        state = eff.update(rule, state, 0, x[0], x[1], *rng.uniform(0.9, 1.1, 2))
    c, c_lo, c_hi = eff.cost_bounds(rule, state)
    assert c_lo[0] < c[0] < c_hi[0]
    point, lo, hi = eff.log_efficiency(rule, state)
    assert np.isnan(point[1]) and lo[1] == -np.inf and hi[1] == np.inf
    assert not rule.exact and _rule().exact


def test_select_fills_the_initial_pairs_then_pulls_the_critical_arms():
    rule = _rule(3, min_pairs=2, sampling="both")
    state = eff.init(rule)
    rng = np.random.default_rng(2)
    every = np.ones(3, dtype=bool)
    draw = uniform_pair([0.1, 0.2, 0.4])
    seen = []
    for _ in range(6):
        sel = eff.select(rule, rng, state, every)
        assert len(sel.arms) == 1 and sel.pulls == (2,)
        seen.append(sel.arms[0])
        state = eff.update(rule, state, sel.arms[0], *draw(rng, sel.arms[0]))
    assert sorted(seen) == [0, 0, 1, 1, 2, 2]
    for _ in range(30):
        for arm in range(3):
            state = eff.update(rule, state, arm, *draw(rng, arm))
    sel = eff.select(rule, rng, state, every)
    assert sel.pulls == (2, 2) and sel.arms[0] == 0 and sel.arms[1] != 0
    one = eff.select(rule._replace(sampling="cost"), rng, state, every)
    assert one.pulls == (2,) and one.arms[0] in sel.arms
    restricted = eff.select(rule, rng, state, np.array([False, True, True]))
    assert 0 not in restricted.arms


def test_cost_aware_sampling_draws_the_arm_whose_pair_shrinks_the_gap_most_per_cost():
    # Equal widths and pair counts: the rule w / (n c) draws the cheaper arm; a 100 times wider
    # interval outweighs a 10 times higher cost.
    draw = uniform_pair([0.2, 0.2])
    rng = np.random.default_rng(6)
    rule = _rule(2, costs=(1.0, 10.0), min_pairs=2)
    state = eff.init(rule)
    for _ in range(40):
        for arm in (0, 1):
            state = eff.update(rule, state, arm, *draw(rng, arm))
    bounds = eff.log_efficiency(rule, state)
    assert eff._cheapest_shrink(rng, rule, state, bounds, (0, 1)) == 0
    point, lower, upper = bounds
    wide = (point, np.array([lower[0], point[1] - 100 * (point[1] - lower[1])]),
            np.array([upper[0], point[1] + 100 * (upper[1] - point[1])]))
    assert eff._cheapest_shrink(rng, rule, state, wide, (0, 1)) == 1
    infinite = (point, lower, np.array([upper[0], np.inf]))
    assert eff._cheapest_shrink(rng, rule, state, infinite, (0, 1)) == 1


def test_a_heavy_tailed_arm_gets_a_finite_upper_bound_only_from_the_nonnegative_lower_sequence():
    rng = np.random.default_rng(7)
    rule = _rule(2, costs=None, variance_bound=None)
    old = rule._replace(lower="asymptotic")
    new_state, old_state = eff.init(rule), eff.init(old)
    for _ in range(15):
        x = rng.lognormal(0.0, 3.0, 2)
        c = rng.uniform(0.9, 1.1, 2)
        new_state = eff.update(rule, new_state, 0, x[0], x[1], *c)
        old_state = eff.update(old, old_state, 0, x[0], x[1], *c)
    assert np.isfinite(eff.log_efficiency(rule, new_state)[2][0])
    assert eff.log_efficiency(old, old_state)[2][0] == np.inf


def test_only_the_runs_first_pair_and_cost_set_a_scale_unstaked():
    rule = _rule(3, variance_bound=None, costs=None)
    state = eff.init(rule)
    for arm in (0, 1, 2):
        state = eff.update(rule, state, arm, np.array([0.1, 0.3]), np.array([0.2, -0.1]), 1.0 + arm, 1.5 + arm)
    assert list(state.v_lower.bets) == [0, 1, 1]  # arms 1 and 2 bet on arm 0's scale
    assert list(state.c_lower.bets) == [1, 2, 2]
    assert state.v_lower.lower[1] > 0.0 and state.v_lower.lower[0] == 0.0


def test_a_zero_variance_arm_ranks_first_on_its_bounds():
    rule = _rule(2)
    state = eff.init(rule)
    rng = np.random.default_rng(3)
    for _ in range(60):
        state = eff.update(rule, state, 0, 0.5, 0.5, 1.0, 1.0)
        state = eff.update(rule, state, 1, *uniform_pair([0.3, 0.3])(rng, 1))
    point, lo, hi = eff.log_efficiency(rule, state)
    assert point[0] == np.inf and hi[0] == np.inf and np.isfinite(lo[0])
    assert list(eff.recommend(rule, state, np.ones(2, dtype=bool))) == [0]


@pytest.mark.parametrize("protocol", ["lucb", "fixed"])
def test_both_protocols_stop_on_the_most_efficient_arm_and_lucb_needs_fewer_pulls(protocol):
    rule = _rule(4, variance_bound=None)
    draw = uniform_pair([0.2, 0.3, 0.5, 0.6])
    res = [simulate_comparison(rule, draw, np.random.default_rng(s), protocol=protocol) for s in range(5)]
    assert all(r.stopped and r.recommended[0] == 0 for r in res)
    if protocol == "fixed":
        lucb = [simulate_comparison(rule, draw, np.random.default_rng(s)).pulls for s in range(5)]
        assert np.median(lucb) < np.median([r.pulls for r in res])


def test_unresolved_names_the_arms_straddling_the_boundary_and_epsilon_ends_in_a_proven_tie():
    rule = _rule(3, variance_bound=None, min_pairs=2)
    draw = uniform_pair([0.2, 0.2, 0.6])
    capped = simulate_comparison(rule, draw, np.random.default_rng(4), max_pairs=200)
    assert not capped.stopped
    tolerant = rule._replace(epsilon=1.0)
    res = simulate_comparison(tolerant, draw, np.random.default_rng(4), max_pairs=20000)
    assert res.stopped and res.recommended[0] in (0, 1)
    state = eff.init(rule)
    rng = np.random.default_rng(5)
    for _ in range(100):
        for arm in range(3):
            state = eff.update(rule, state, arm, *draw(rng, arm))
    every = np.ones(3, dtype=bool)
    assert set(eff.unresolved(rule, state, every)) == {0, 1}
    assert eff.tied(rule, state, every).size == 0  # epsilon = 0: no tie
    for _ in range(2000):
        for arm in range(2):
            state = eff.update(rule, state, arm, *draw(rng, arm))
    assert eff.stop(tolerant, state, every) and not eff.stop(rule, state, every)
    assert list(eff.tied(tolerant, state, every)) == [1 - int(eff.recommend(tolerant, state, every)[0])]
    leader, runner_up, lo, hi = eff.ratio_to_runner_up(tolerant, state, every)
    assert {leader, runner_up} == {0, 1} and 1 / 2 <= lo <= 1 <= hi <= 2


def test_simulate_rejects_an_unknown_protocol():
    with pytest.raises(ValueError, match="'protocol'"):
        simulate_comparison(_rule(), uniform_pair([0.1, 0.2, 0.3]), np.random.default_rng(0), protocol="adaptive")


def _cost_lower_path(rng, costs, pairs):
    """The measured cost's lower bound after each pair of one arm (estimates irrelevant)."""
    rule = eff.EfficiencyRule(k=1, delta=0.2, n_arms=2)  # alpha 0.05: the lower side at level 0.025
    state, out = eff.init(rule), []
    for _ in range(pairs):
        c = costs(rng, 2)
        state = eff.update(rule, state, 0, 0.0, 1.0, c[0], c[1])
        out.append(eff.cost_bounds(rule, state)[1][0])
    return np.asarray(out)


def test_a_steady_cost_is_bounded_below_within_a_few_per_cent_after_a_few_pairs():
    # CPU seconds of a chain vary by a few per cent; the exact sequence alone stays a factor
    # (1/alpha)^(1/t) away whatever the spread.
    rng = np.random.default_rng(3)
    lower = _cost_lower_path(rng, lambda r, n: 1.0 + 0.03 * r.standard_normal(n), 10)
    assert lower[0] < 0.5  # one pair: the exact sequence only
    assert 0.93 < lower[-1] < 1.0


COSTS = {"gamma2": (lambda r, n: r.gamma(2.0, 0.5, n), 1.0),
         "lognormal1": (lambda r, n: r.lognormal(0.0, 1.0, n), np.exp(0.5))}


def _cost_misses(name, paths, seed):
    costs, truth = COSTS[name]
    return sum(bool((_cost_lower_path(np.random.default_rng([seed, p]), costs, 40) > truth).any())
               for p in range(paths))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COSTS))
def test_a_measured_cost_lower_bound_covers_at_its_level_uniformly_in_time(name):
    # Costs with a spread (CV 0.7) and with a heavy right tail; the lower side's level is 0.025.
    missed = _cost_misses(name, 600, 11)
    assert error_rate_upper(missed, 600) <= 0.025, missed


@pytest.mark.slow
def test_an_asymptotic_cost_side_cut_to_a_tenth_fails_the_same_check(monkeypatch):
    honest = eff.asymptotic_radius
    monkeypatch.setattr(eff, "asymptotic_radius", lambda *a, **k: 0.1 * honest(*a, **k))
    missed = _cost_misses("gamma2", 300, 11)
    assert error_rate_lower(missed, 300) > 0.025, missed
