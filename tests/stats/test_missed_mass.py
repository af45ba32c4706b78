"""The one-sided test that shows an arm's estimate of the evidence too low (:mod:`pmcbandit.stats.missed_mass`)."""

import math

import numpy as np

from pmcbandit.stats.missed_mass import ALPHA, UPPER_Z, log_evidence_against, missed_mass
from tests.tolerance import error_rate_lower, error_rate_upper


def _lognormal(rng, mean, sigma, size):
    """Positive values of the given mean, their logs normal with sd ``sigma`` (importance weights)."""
    return mean * np.exp(rng.normal(-0.5 * sigma**2, sigma, size))


def test_the_wealth_against_the_true_mean_is_an_e_value():
    """Ville's inequality: values of mean exactly the bound reach a wealth of 1/alpha with probability at most
    alpha, however heavy their tail."""
    rng = np.random.default_rng(11)
    alpha, runs = 0.05, 3000
    for sigma, n in ((0.5, 30), (1.5, 200), (2.5, 50)):
        hits = sum(log_evidence_against(_lognormal(rng, 1.0, sigma, n), 1.0) >= math.log(1 / alpha)
                   for _ in range(runs))
        assert error_rate_upper(hits, runs) <= alpha, (sigma, n, hits)


def _pair(rng, witness_mean, b_mean, b_sd=0.2, n_b=200, n_witness=400, witness_sigma=1.0):
    """A witness of lognormal values (batch means of importance weights) and an arm of normal values, as missed_mass
    reads them."""
    x = np.concatenate([_lognormal(rng, witness_mean, witness_sigma, n_witness), rng.normal(b_mean, b_sd, n_b)])
    arm = np.repeat([0, 1], [n_witness, n_b])
    mean = np.array([x[arm == k].mean() for k in (0, 1)])
    se = np.array([x[arm == k].std(ddof=1) / math.sqrt((arm == k).sum()) for k in (0, 1)])
    return x, arm, mean, se


def test_a_correct_arm_is_flagged_at_most_at_the_stated_rate():
    """Both arms estimate Z = 1: an arm is flagged with probability at most ALPHA + P(Z > its upper limit), about
    0.002; 2000 runs bound the rate below 0.01 (one-sided 95 % Clopper-Pearson). A precise witness (batch means of
    relative sd 0.05) makes the test sensitive to the bound: testing against the arm's mean instead of its upper
    limit (a mutation) flags the arm whenever its mean reads a few SEs low."""
    rng = np.random.default_rng(12)
    runs, errors, mutated = 2000, 0, 0
    for _ in range(runs):
        x, arm, mean, se = _pair(rng, 1.0, 1.0, witness_sigma=0.05)
        errors += bool(missed_mass(x, arm, 2, mean, se, [True, False]).low[1])
        mutated += bool(missed_mass(x, arm, 2, mean, np.zeros(2), [True, False]).low[1])
    assert error_rate_upper(errors, runs) <= 0.01, errors
    assert error_rate_lower(mutated, runs) > 0.01, mutated


def test_an_arm_that_missed_half_the_mass_is_flagged_by_the_arm_that_found_it():
    rng = np.random.default_rng(13)
    x, arm, mean, se = _pair(rng, 2.0, 1.0, b_sd=0.05)
    found = missed_mass(x, arm, 2, mean, se, [True, True])
    assert found.low.tolist() == [False, True]
    assert found.witness.tolist() == [-1, 0]
    assert found.log_evidence[1] >= found.threshold == math.log(2 / ALPHA)
    # The arm's upper limit is what the witness bets against: an SE wide enough to reach the witness's mean clears it.
    wide = se.copy()
    wide[1] = (mean[0] - mean[1]) / UPPER_Z
    assert not missed_mass(x, arm, 2, mean, wide, [True, True]).low.any()


def test_only_importance_weights_bet_and_an_arm_above_its_witness_is_never_tested():
    rng = np.random.default_rng(14)
    x, arm, mean, se = _pair(rng, 2.0, 1.0, b_sd=0.05)
    assert not missed_mass(x, arm, 2, mean, se, [False, False]).low.any()  # no witness
    assert not missed_mass(x, arm, 2, mean, se, [False, True]).low.any()  # the low arm cannot show the high one low
    assert not missed_mass(x, arm, 2, mean, np.array([se[0], np.nan]), [True, True]).low.any()  # no SE: not tested


def test_a_witness_with_too_few_pulls_is_asked_for_the_pulls_its_bets_need():
    """Three pulls above the other arm's upper limit are not yet a verdict: the witness is asked for the pulls at which
    its wealth, growing as so far, reaches the threshold; with them the arm is flagged and nothing is asked."""
    rng = np.random.default_rng(15)
    x, arm, mean, se = _pair(rng, 2.0, 1.0, b_sd=0.05, n_witness=3, witness_sigma=0.3)
    few = missed_mass(x, arm, 2, mean, se, [True, False])
    assert not few.low.any() and few.wanted[0] > 3 and few.wanted[1] == 0
    x, arm, mean, se = _pair(rng, 2.0, 1.0, b_sd=0.05, n_witness=int(few.wanted[0]), witness_sigma=0.3)
    enough = missed_mass(x, arm, 2, mean, se, [True, False])
    assert enough.low.tolist() == [False, True] and not enough.wanted.any()
