"""The identification rules on hand-made states (pmcbandit.identification): critical pairs, stops,
sampling rules, the top-K oracle, bad arguments."""

import itertools

import numpy as np
import pytest

from pmcbandit.identification import (
    ArmStats, get_identifier, lil_clucb, lil_lucb, lil_rand_lucb, lil_ucb, lucb1, lucb_pp, top_k_oracle,
)
from pmcbandit.identification.base import Selection
from pmcbandit.identification.kernels import LIL, grown, lucb_pair
from pmcbandit.identification.radii import lil, lucb_radius
from tests.tolerance import assert_within_se


def _state(n, means):
    n = np.asarray(n, dtype=np.int64)
    total = np.asarray(means, dtype=np.float64) * n
    return ArmStats(n, total, total * np.asarray(means), int(n.sum()))


def test_every_algorithm_samples_each_arm_once_first():
    for name in ("lucb1", "lil_lucb", "lucb_pp", "lil_rand_lucb", "lil_clucb"):
        algo = get_identifier(name, k=2, delta=0.1)
        state = algo.init(5)
        assert algo.select(np.random.default_rng(0), state) == Selection((0, 1, 2, 3, 4), (1,) * 5)
        assert not algo.stop(state)
    state = lil_ucb(delta=0.1).init(4)
    assert lil_ucb(delta=0.1).select(np.random.default_rng(0), state).arms == (0, 1, 2, 3)


def test_lucb_pair_matches_its_definition():
    n = np.array([10, 40, 25, 7, 12])
    means = np.array([0.9, 0.8, 0.3, 0.5, 0.2])
    state = _state(n, means)
    k, hi, lo, sigma, eps = 2, 1e-3, 2e-3, 0.5, 0.01
    tables = [grown(np.empty(0), 100, LIL, omega, sigma, eps) for omega in (hi, lo)]
    h, l, stop, lower, upper = lucb_pair(state.n, state.total, k, tables[0], tables[1], 1.0)
    high = {0, 1}
    r = np.array([lil(n[i], hi if i in high else lo, sigma, eps) for i in range(5)])
    assert h == min(high, key=lambda i: means[i] - r[i])
    assert l == max(set(range(5)) - high, key=lambda i: means[i] + r[i])
    assert stop == (means[h] - r[h] >= means[l] + r[l])
    np.testing.assert_allclose(lower, means - r)
    np.testing.assert_allclose(upper, means + r)


def test_lucb_family_radii_and_sampling_rules():
    state = _state([30, 10, 20, 5], [0.6, 0.55, 0.1, 0.5])
    rng = np.random.default_rng(0)
    for algo in (lucb_pp(k=1, delta=0.1), lil_lucb(k=1, delta=0.1), lucb1(k=1, delta=0.1)):
        sel = algo.select(rng, state)
        assert len(sel.arms) == 2 and sel.pulls == (1, 1) and 0 in sel.arms  # h (arm 0) and l both sampled
    # lil'LUCB's radius is U(T, delta/N) for every arm; LUCB++ splits delta/2(N-K) and delta/2K
    d = lil_lucb(k=1, delta=0.1).params
    algo_delta = dict(d)["algorithm_delta"]
    lower, upper = lil_lucb(k=1, delta=0.1).confidence(state)
    np.testing.assert_allclose(upper - lower, [2 * lil(n, algo_delta / 4, 0.5, 0.01) for n in state.n])
    lower, upper = lucb1(k=1, delta=0.1).confidence(state)
    np.testing.assert_allclose(upper - lower, [2 * lucb_radius(n, state.t, 0.1, 4, 0.5) for n in state.n])


def test_lil_rand_lucb_samples_h_with_probability_t_l_over_t_h_plus_t_l():
    state = _state([30, 10, 20, 5], [0.6, 0.55, 0.1, 0.52])
    algo = lil_rand_lucb(k=1, delta=0.1, mode="heuristic")
    tables = [grown(np.empty(0), 40, LIL, omega, 0.5, 0.0) for omega in (0.1 / 6, 0.1 / 2)]
    h, l, *_ = lucb_pair(state.n, state.total, 1, tables[0], tables[1], 1.0)
    rng = np.random.default_rng(11)
    draws = 4000
    picks = np.array([algo.select(rng, state).arms[0] for _ in range(draws)])
    assert set(np.unique(picks)) <= {h, l}
    p = state.n[l] / (state.n[h] + state.n[l])
    assert_within_se(np.mean(picks == h), p, np.sqrt(p * (1 - p) / draws))


def test_lil_clucb_samples_the_widest_arm_of_the_symmetric_difference_and_stops_when_sets_agree():
    algo = lil_clucb(k=2, delta=0.1, mode="heuristic")
    close = _state([5, 50, 8, 60], [0.55, 0.5, 0.45, 0.1])
    sel = algo.select(np.random.default_rng(0), close)
    assert sel.arms in ((0,), (2,))  # the two least-sampled arms near the boundary
    apart = _state([4000, 4000, 4000, 4000], [0.9, 0.8, 0.1, 0.0])
    assert algo.stop(apart) and sorted(algo.recommend(apart).tolist()) == [0, 1]


def test_top_k_oracle_equals_brute_force_on_small_instances():
    rng = np.random.default_rng(3)
    for n, k in [(5, 2), (6, 3), (7, 1)]:
        for _ in range(20):
            w = rng.normal(size=n)
            best = max(itertools.combinations(range(n), k), key=lambda s: w[list(s)].sum())
            assert sorted(np.flatnonzero(top_k_oracle(k).maximise(w)).tolist()) == sorted(best)


def test_lil_ucb_stops_on_the_pull_count_rule():
    algo = lil_ucb(delta=0.1, mode="heuristic")  # lambda = 1 + 10/N
    n_arms = 4
    lam = 1 + 10 / n_arms
    others = 30
    stop_at = int(np.ceil(1 + lam * others))
    assert algo.stop(_state([stop_at, 10, 10, 10], [0.9, 0.1, 0.1, 0.1]))
    assert not algo.stop(_state([stop_at - 1, 10, 10, 10], [0.9, 0.1, 0.1, 0.1]))
    assert algo.recommend(_state([stop_at, 10, 10, 10], [0.9, 0.1, 0.1, 0.1])).tolist() == [0]


@pytest.mark.parametrize("factory, kwargs, words", [
    (lil_rand_lucb, dict(k=0), "'k'"),
    (lil_rand_lucb, dict(delta=1.0), "'delta'"),
    (lil_rand_lucb, dict(delta=0.0), "'delta'"),
    (lil_rand_lucb, dict(sigma=0.0), "'sigma'"),
    (lil_rand_lucb, dict(epsilon=1.5), "'epsilon'"),
    (lil_rand_lucb, dict(mode="exact"), "'mode'"),
    (lil_rand_lucb, dict(mode="heuristic", epsilon=0.1), "'epsilon'"),
    (lucb_pp, dict(epsilon=0.0), "'epsilon'"),
    (lil_clucb, dict(k=2.5), "'k'"),
    (lil_ucb, dict(mode="faithful", epsilon=2.0), "'epsilon'"),
    (lucb1, dict(delta=-0.1), "'delta'"),
])
def test_bad_arguments_name_the_parameter(factory, kwargs, words):
    with pytest.raises(ValueError, match=words):
        factory(**kwargs)


def test_k_must_be_below_the_number_of_arms():
    with pytest.raises(ValueError, match=r"'k' parameter of lucb_pp must be < the number of arms \(3\)"):
        lucb_pp(k=3, delta=0.1).init(3)
