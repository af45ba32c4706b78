"""The QP -> densest-k-subgraph reduction (Alg. 1), greedy peeling, and the certified bounds the stops use."""

import itertools

import numpy as np
import pytest

from pmcbandit.full_bandit.allocation import uniform_allocation
from pmcbandit.full_bandit.dks import (dks_weights, eigen_bound, greedy_peeling, qp_greedy, qp_value, row_bound,
                                       subgraph_weight)
from pmcbandit.full_bandit.exhaustive import all_super_arms, exact_cem, exact_gap
from pmcbandit.full_bandit.sa_foa import approximate_gap, gap_bound


def random_pd(rng, n):
    B = rng.standard_normal((n, n + 2))
    return B @ B.T + 0.05 * np.eye(n)


def design_inverse(rng, n, k):
    alloc = uniform_allocation(n, k)
    X = alloc.support.astype(float)
    counts = rng.integers(1, 30, X.shape[0])
    return np.linalg.inv((X.T * counts) @ X)


def mask(members, n):
    m = np.zeros(n, dtype=bool)
    m[list(members)] = True
    return m


@pytest.mark.parametrize("n, k", [(5, 2), (6, 3), (7, 4), (8, 5)])
def test_subgraph_weight_is_half_the_quadratic_form_for_every_k_set(rng, n, k):
    for Q in (random_pd(rng, n), random_pd(rng, n) - np.diag(rng.uniform(0, 5, n))):  # definite and indefinite
        w, shift = dks_weights(Q, k)
        assert np.all(w >= 0) and np.all(np.diag(w) == 0)
        for S in itertools.combinations(range(n), k):
            m = mask(S, n)
            got = subgraph_weight(w, m) - shift * k * (k - 1) / 2
            np.testing.assert_allclose(got, 0.5 * qp_value(Q, m), rtol=1e-12, atol=1e-12)


def test_lemma_4_fails_for_k_above_two_and_the_shift_repairs_it():
    Q = np.array([[1.0, -0.9, 0.0], [-0.9, 1.0, 0.0], [0.0, 0.0, 1.0]])  # positive definite
    assert np.all(np.linalg.eigvalsh(Q) > 0)
    w, shift = dks_weights(Q, 3)
    assert shift == pytest.approx(0.9 - 1.0 / 2.0)  # the unshifted weight -0.9 + (1+1)/(2*2) = -0.4
    assert w.min() == pytest.approx(0.0)
    _, shift2 = dks_weights(Q, 2)
    assert shift2 == 0.0  # k = 2: Lemma 4 holds


def test_greedy_peeling_returns_k_vertices_and_finds_a_planted_dense_set():
    n, k = 9, 3
    w = np.ones((n, n)) - np.eye(n)
    for i, j in itertools.combinations([2, 5, 7], 2):
        w[i, j] = w[j, i] = 10.0
    assert np.flatnonzero(greedy_peeling(w, k)).tolist() == [2, 5, 7]


@pytest.mark.parametrize("seed", range(4))
def test_certified_cem_bounds_never_below_the_exact_maximum(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(4, 10))
        k = int(rng.integers(2, n))
        W = design_inverse(rng, n, k) if rng.random() < 0.5 else np.linalg.inv(random_pd(rng, n))
        exact = exact_cem(W, all_super_arms(n, k)) ** 2
        assert row_bound(W, k) >= exact * (1 - 1e-12)
        assert eigen_bound(W, k) >= exact * (1 - 1e-12)
        _, approx = qp_greedy(W, k)
        assert approx <= exact * (1 + 1e-12)


def test_row_bound_is_exact_for_a_balanced_design():
    n, k = 7, 3
    A = 40 * (2.0 * np.eye(n) + 0.5 * np.ones((n, n)))
    W = np.linalg.inv(A)
    assert row_bound(W, k) == pytest.approx(exact_cem(W, all_super_arms(n, k)) ** 2, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_gap_bound_never_below_exhaustive_and_approximation_never_above(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(60):
        n = int(rng.integers(4, 10))
        k = int(rng.integers(2, n))
        W = design_inverse(rng, n, k) if rng.random() < 0.5 else np.linalg.inv(random_pd(rng, n))
        theta_hat = rng.standard_normal(n) * rng.uniform(0.05, 1.0)
        C = float(rng.uniform(0.1, 4.0))
        exact = exact_gap(W, theta_hat, k, C, all_super_arms(n, k))
        assert gap_bound(W, theta_hat, k, C, 0.0, True) >= exact - 1e-12 * max(1.0, exact)
        assert approximate_gap(W, theta_hat, k, C) <= exact + 1e-12 * max(1.0, exact)
        # the early-exit variant only ever answers "above eps" correctly
        eps = 0.5 * exact
        if exact > 0:
            assert gap_bound(W, theta_hat, k, C, eps, False) > eps


def test_exact_gap_matches_a_python_enumeration(rng):
    n, k, C = 6, 3, 0.7
    W = np.linalg.inv(random_pd(rng, n))
    th = rng.standard_normal(n)
    m = mask(np.argsort(-th, kind="stable")[:k], n).astype(float)
    best = 0.0
    for S in itertools.combinations(range(n), k):
        y = mask(S, n).astype(float) - m
        if y.any():
            best = max(best, y @ th + C * np.sqrt(y @ W @ y))
    assert exact_gap(W, th, k, C, all_super_arms(n, k)) == pytest.approx(best, rel=1e-12)
