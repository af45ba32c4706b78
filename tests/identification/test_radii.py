"""Confidence radii against values computed by hand (pmcbandit.identification.radii)."""

import math

import pytest

from pmcbandit.identification.radii import (
    LUCB_K1, c_epsilon, check_lil, empirical_bernstein, hoeffding, lil, lil_delta, lil_lemma, lucb_radius,
)


def test_hoeffding_by_hand():
    # sigma = 1/2 (rewards in [0, 1]), t = 100, delta = 0.05: 0.5 * sqrt(2 ln 20 / 100)
    assert hoeffding(100, 0.05, 0.5) == pytest.approx(0.5 * math.sqrt(2 * 2.995732273553991 / 100), rel=1e-14)
    assert hoeffding(0, 0.05, 0.5) == math.inf


def test_lucb_radius_is_the_papers_beta_for_unit_rewards():
    # KTAS12: beta(u, t) = sqrt(ln(k1 n t^4 / delta) / (2u)) for rewards in [0, 1] (sigma = 1/2)
    u, t, n, delta = 7, 50, 10, 0.1
    paper = math.sqrt(math.log(LUCB_K1 * n * t**4 / delta) / (2 * u))
    assert lucb_radius(u, t, delta, n, 0.5) == pytest.approx(paper, rel=1e-14)


def test_empirical_bernstein_by_hand():
    v, t, delta, width = 0.09, 40, 0.05, 1.0
    log3 = math.log(3 / delta)
    assert empirical_bernstein(t, delta, v, width) == pytest.approx(math.sqrt(2 * v * log3 / t) + 3 * width * log3 / t)
    assert empirical_bernstein(t, delta, -1.0, width) == pytest.approx(3 * width * log3 / t)  # variance floored at 0


def test_lil_radius_by_hand_with_the_plus_two_form():
    t, omega, sigma, eps = 25, 1e-3, 0.5, 0.01
    inner = math.log(math.log((1 + eps) * t + 2) / omega)
    by_hand = (1 + math.sqrt(eps)) * math.sqrt(2 * sigma**2 * (1 + eps) / t * inner)
    assert lil(t, omega, sigma, eps) == pytest.approx(by_hand, rel=1e-14)
    # epsilon = 0 (heuristic) is defined from t = 1 on thanks to the +2
    assert lil(1, 0.01, 0.5, 0.0) == pytest.approx(0.5 * math.sqrt(2 * math.log(math.log(3) / 0.01)))


def test_lemma_form_by_hand_and_the_plus_two_form_is_wider():
    t, omega, sigma, eps = 25, 1e-3, 0.5, 0.01
    by_hand = (1 + math.sqrt(eps)) * math.sqrt(2 * sigma**2 * (1 + eps) / t * math.log(math.log((1 + eps) * t) / omega))
    assert lil_lemma(t, omega, sigma, eps) == pytest.approx(by_hand, rel=1e-14)
    assert lil_lemma(1, 0.5, sigma, 0.0) == math.inf  # log log(1) is undefined: the bound says nothing
    assert all(lil(t, omega, sigma, eps) > lil_lemma(t, omega, sigma, eps) for t in (3, 10, 1000, 10**6))


def test_c_epsilon_and_the_faithful_deltas():
    eps = 0.01
    c = (2 + eps) / eps * (1 / math.log(1 + eps)) ** (1 + eps)
    assert c_epsilon(eps) == pytest.approx(c, rel=1e-14)
    assert lil_delta(0.01, eps, "randlucb") == pytest.approx(0.01 / c)  # c_eps delta = nu (Thm 3.1)
    n = 50
    d = lil_delta(0.01, eps, "clucb", n)
    assert c * d ** (1 + eps) / n**eps == pytest.approx(0.01, rel=1e-12)  # Thm 4.1's bound equals nu
    assert lil_delta(0.01, 0.0) == 0.01  # heuristic


def test_admissibility_is_checked_with_a_clear_error():
    check_lil(1e-4, 0.01, "x")  # 1e-4 < log(1.01)/e = 0.00366
    with pytest.raises(ValueError, match=r"'delta' parameter of x must be < log\(1 \+ epsilon\) / e"):
        check_lil(0.01, 0.01, "x")
    with pytest.raises(ValueError, match="'epsilon' parameter of x"):
        check_lil(1e-4, 1.0, "x")
