"""Confidence sequences: coverage uniformly in time, widths that shrink, the documented edge cases."""

import numpy as np
import pytest

from pmcbandit.compare.confidence import asymptotic_radius, betting_init, betting_update, lower_init, lower_update
from tests.tolerance import error_rate_lower, error_rate_upper


def _paths_missed(update_interval, paths: int, horizon: int, truth: float, draw, seed: int) -> int:
    rng = np.random.default_rng(seed)
    missed = 0
    for _ in range(paths):
        x = draw(rng, horizon)
        if not all(lo <= truth <= hi for lo, hi in update_interval(x)):
            missed += 1
    return missed


def _betting_intervals(alpha):
    def run(x):
        cs = betting_init([alpha])
        for v in x:
            cs = betting_update(cs, 0, v)
            yield cs.lower[0], cs.upper[0]
    return run


def _chi2_pairs(rng, n):  # V = (X - X')^2 / 2 of uniform(-0.2, 0.2) estimates, scaled into [0, 1] by 0.08
    x = rng.uniform(-0.2, 0.2, (n, 2))
    return 0.5 * (x[:, 0] - x[:, 1]) ** 2 / 0.08


def test_betting_cs_covers_uniformly_in_time_at_its_level():
    truth = (0.2**2 / 3) / 0.08
    missed = _paths_missed(_betting_intervals(0.1), 300, 300, truth, _chi2_pairs, seed=1)
    assert error_rate_upper(missed, 300) <= 0.1


def test_betting_cs_with_a_wrong_truth_is_rejected_and_widths_shrink():
    rng = np.random.default_rng(2)
    cs = betting_init([0.05, 0.05])
    widths = []
    for t, v in enumerate(_chi2_pairs(rng, 400)):
        cs = betting_update(cs, 0, v)
        if t in (49, 399):
            widths.append(cs.upper[0] - cs.lower[0])
    truth = (0.2**2 / 3) / 0.08
    assert cs.lower[0] <= truth <= cs.upper[0]
    assert widths[1] < 0.6 * widths[0]
    assert not cs.lower[0] <= 2 * truth <= cs.upper[0]
    assert (cs.n[1], cs.lower[1], cs.upper[1]) == (0, 0.0, 1.0)  # the other sequence is untouched


def test_betting_cs_clips_observations_into_the_unit_interval():
    cs = betting_update(betting_init([0.05]), 0, 7.0)
    assert cs.total[0] == 1.0


def test_asymptotic_radius_is_scale_free_zero_without_spread_and_infinite_before_two_points():
    r = asymptotic_radius(np.array([1, 50, 50, 50]), np.array([1.0, 1.0, 100.0, 0.0]), 0.05)
    assert np.isinf(r[0])
    assert np.isclose(r[2], 10 * r[1])
    assert r[3] == 0.0


def test_asymptotic_cs_covers_gaussian_means_uniformly_at_large_times():
    rng = np.random.default_rng(3)
    alpha, horizon, paths = 0.1, 2000, 1000
    x = rng.standard_normal((paths, horizon)) * 3.0 + 1.0
    t = np.arange(1, horizon + 1)
    mean = np.cumsum(x, axis=1) / t
    var = (np.cumsum(x * x, axis=1) - t * mean**2) / np.maximum(t - 1, 1)
    r = asymptotic_radius(np.broadcast_to(t, x.shape), var, alpha)
    late = t >= 100  # an asymptotic guarantee: judged where the CLT has taken hold
    missed = int((np.abs(mean - 1.0) > r)[:, late].any(axis=1).sum())
    assert error_rate_upper(missed, paths) <= alpha


def _lower_path(x, alpha):
    cs = lower_init([alpha])
    out = []
    for v in x:
        cs = lower_update(cs, 0, v)
        out.append(cs.lower[0])
    return np.asarray(out)


def test_a_given_scale_stakes_the_first_observation_as_if_an_unstaked_point_had_set_it():
    # The sequence with a scale fixed in advance is the default one on data led by that scale, so the
    # coverage checks below cover it too; and the first observation then counts.
    rng = np.random.default_rng(7)
    x, s = rng.exponential(2.0, 30), 0.7
    cs, given = lower_init([0.05]), []
    for i, v in enumerate(x):
        cs = lower_update(cs, 0, v, scale=s if i == 0 else 0.0)
        given.append(cs.lower[0])
    np.testing.assert_array_equal(given, _lower_path(np.concatenate(([s], x)), 0.05)[1:])
    assert cs.bets[0] == x.size and cs.scale[0] == s
    later = lower_update(lower_update(lower_init([0.05]), 0, 1.0), 0, 2.0, scale=5.0)
    assert later.scale[0] == 1.0 and later.bets[0] == 1  # a row with a scale keeps it


@pytest.mark.slow
def test_lower_cs_for_nonnegative_means_covers_heavy_tailed_data_uniformly_in_time():
    rng = np.random.default_rng(4)
    alpha, paths, horizon = 0.1, 600, 200  # enough paths to confirm a rate of a few per cent below alpha
    truth = np.exp(1.5**2 / 2)  # mean of a log-normal(0, 1.5): no upper bound, heavy right tail
    missed = sum(bool((_lower_path(rng.lognormal(0.0, 1.5, horizon), alpha) > truth).any()) for _ in range(paths))
    assert error_rate_upper(missed, paths) <= alpha


def test_lower_cs_is_scale_free_positive_after_a_few_points_and_rejects_bad_input():
    rng = np.random.default_rng(5)
    x = rng.exponential(2.0, 50)
    a, b = _lower_path(x, 0.05), _lower_path(1e6 * x, 0.05)
    np.testing.assert_allclose(b, 1e6 * a, rtol=1e-9)
    assert a[0] == 0.0 and 0.0 < a[9] < a[-1] < 2.0  # the first point only sets the scale
    with pytest.raises(ValueError, match="'x'"):
        lower_update(lower_init([0.05]), 0, -1.0)


@pytest.mark.slow
def test_a_lower_cs_that_drops_its_threshold_misses_the_mean_too_often():
    rng = np.random.default_rng(6)
    truth, paths = np.exp(1.5**2 / 2), 200
    missed = sum(bool((_lower_path(rng.lognormal(0.0, 1.5, 200), 0.9) > truth).any()) for _ in range(paths))
    assert error_rate_lower(missed, paths) > 0.1  # level 0.9 instead of 0.1: the check above can fail


def test_lower_cs_on_steady_data_comes_within_its_largest_bets_factor():
    # Steady observations 1.0: the constant bet 0.99/m rejects m once (0.01 + 0.99/m)^t reaches 4/alpha
    # (four capitals averaged; sooner when the others add to it, never before it reaches 1/alpha), so
    # after t staked points the bound lies between 0.99/((k/alpha)^(1/t) - 0.01) for k = 4 and k = 1.
    # The single bet 0.5/m would stop near 0.5/((2/alpha)^(1/t) - 0.5), well below it.
    alpha, t = 0.001, 30
    lower = _lower_path(np.ones(t + 1), alpha)[-1]
    low, high = (0.99 / ((k / alpha) ** (1 / t) - 0.01) for k in (4, 1))
    single = 0.5 / ((2 / alpha) ** (1 / t) - 0.5)
    assert low / 1.03 <= lower <= high  # one grid step (2.3 %) of slack below
    assert lower > 1.1 * single
