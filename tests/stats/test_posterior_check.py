"""The posterior mean of the log likelihood per arm (pmcbandit.stats.posterior_check): the weighted means, the ratio
estimate across pulls with its standard error and spread, and the rule that reads two arms as seeing different
posteriors."""

from __future__ import annotations

import numpy as np
import pytest

from pmcbandit.stats.posterior_check import (MISMATCH_NATS, MISMATCH_SPREADS, MISMATCH_Z, differ, loglik_means,
                                             weighted_loglik)
from tests.tolerance import assert_within_se


def test_weighted_loglik_is_the_self_normalised_mean_and_sd_over_finite_points():
    log_w = np.array([0.0, np.log(3.0), -np.inf, 1.0])
    ell = np.array([1.0, 2.0, 50.0, np.nan])
    out = weighted_loglik(log_w, ell)  # the last two points carry no finite pair
    assert out["post_loglik"] == pytest.approx((1.0 + 3.0 * 2.0) / 4.0)
    assert out["post_loglik_sd"] == pytest.approx(np.sqrt((1.0 * 0.75**2 + 3.0 * 0.25**2) / 4.0))
    none = weighted_loglik([-np.inf], [1.0])
    assert np.isnan(none["post_loglik"]) and np.isnan(none["post_loglik_sd"])


def test_loglik_means_of_importance_pulls_estimate_the_posterior_mean_within_their_se():
    """Prior N(0, 1) as proposal, likelihood N(y=1 | theta, 1): the posterior is N(1/2, 1/2), and the posterior mean
    of log L = -(1/2) log 2 pi - (y - theta)^2 / 2 is -(1/2) log 2 pi - (1/4 + 1/2) / 2 exactly."""
    rng = np.random.default_rng(7)
    pulls, size = 200, 500
    weights, post, sd = [], [], []
    for _ in range(pulls):
        theta = rng.standard_normal(size)
        ell = -0.5 * np.log(2 * np.pi) - 0.5 * (1.0 - theta) ** 2
        r = weighted_loglik(ell, ell)
        weights.append(np.mean(np.exp(ell)) * size)
        post.append(r["post_loglik"])
        sd.append(r["post_loglik_sd"])
    est, se, spread = loglik_means(weights, np.zeros(pulls, int), post, sd, 1)
    exact = -0.5 * np.log(2 * np.pi) - 0.5 * (0.25 + 0.5)
    assert_within_se(est[0], exact, se[0])
    # u = 1 - theta ~ N(1/2, 1/2) at posterior draws: Var(u^2) = 2 s^4 + 4 m^2 s^2 = 1, so log L has sd 1/2.
    assert spread[0] == pytest.approx(0.5, rel=0.05)


def test_loglik_means_need_two_reported_pulls_per_arm():
    est, se, spread = loglik_means([1.0, 1.0, 1.0], [0, 1, 1], [2.0, 3.0, np.nan], [1.0, 1.0, 1.0], 3)
    assert np.isnan(est).all() and np.isnan(se).all() and np.isnan(spread).all()


@pytest.mark.parametrize("gap, se, spread, expected", [
    (30.0, 0.1, 3.0, True),  # a spike and a slab: many nats, many SEs, many spreads apart
    (4.0, 0.1, 3.0, False),  # within the posterior spread: the noise of an AIS arm's final states
    (30.0, 10.0, 3.0, False),  # within the estimates' own error
    (0.9, 0.001, 0.01, False),  # below the smallest gap in nats
])
def test_differ_needs_the_gap_beyond_nats_errors_and_spreads(gap, se, spread, expected):
    assert differ((0.0, se, spread), (gap, se, spread)) is expected
    assert differ((np.nan, se, spread), (gap, se, spread)) is False
    assert MISMATCH_NATS == 1.0 and MISMATCH_Z == 5.0 and MISMATCH_SPREADS == 5.0
