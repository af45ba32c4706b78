"""G-allocation (Kuroki et al. 2020, App. D): Kiefer–Wolfowitz optimum n, certificate, rank, rounding, bad input."""

import math
import warnings

import numpy as np
import pytest

from pmcbandit.exceptions import SettingsWarning
from pmcbandit.full_bandit.allocation import Allocation, check_allocation, uniform_allocation
from pmcbandit.full_bandit.g_allocation import efficient_apportionment, g_allocation, g_value


def _exact_g(alloc, n, k):
    """Independent enumeration of max_M chi_M' A^-1 chi_M (numpy only)."""
    import itertools

    A = (alloc.support.T.astype(float) * alloc.weights) @ alloc.support.astype(float)
    W = np.linalg.inv(A)
    return max(W[np.ix_(c, c)].sum() for c in itertools.combinations(range(n), k))


@pytest.mark.parametrize("n,k", [(6, 2), (8, 3), (10, 5), (12, 4)])
def test_g_value_near_kiefer_wolfowitz_optimum_and_below_uniform(n, k):
    alloc = g_allocation(n, k, tol=1e-3, max_iter=3000)
    check_allocation(alloc, n, k, "test")
    g = _exact_g(alloc, n, k)
    # Kiefer-Wolfowitz: every design has G >= n, the optimum is exactly n
    assert n - 1e-9 <= g <= n * (1 + 1e-3) + 1e-9
    assert g <= _exact_g(uniform_allocation(n, k), n, k) * (1 + 1e-12)
    lo, hi = g_value(alloc)
    assert lo == pytest.approx(g, rel=1e-10) and hi == pytest.approx(g, rel=1e-10)


def test_weights_sum_to_one_full_rank_and_rows_of_size_k():
    alloc = g_allocation(10, 5)
    assert alloc.name == "g"
    assert math.isclose(alloc.weights.sum(), 1.0, rel_tol=0, abs_tol=1e-12)
    assert np.all(alloc.weights > 0)
    assert np.linalg.matrix_rank(alloc.support.astype(float)) == 10
    assert np.all(alloc.support.sum(axis=1) == 5)
    assert alloc.support.shape[0] <= uniform_allocation(10, 5).support.shape[0] + 1000


def test_greedy_oracle_certificate_brackets_the_exact_value():
    # max_enumerate=0 forces Alg. 1 (greedy peeling) and the row bound; the bracket must hold the truth
    n, k = 10, 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SettingsWarning)
        alloc = g_allocation(n, k, max_enumerate=0, max_iter=300)
    lo, hi = g_value(alloc, max_enumerate=0)
    g = _exact_g(alloc, n, k)
    assert lo <= g + 1e-9 and g <= hi + 1e-9
    assert g <= _exact_g(uniform_allocation(n, k), n, k) * (1 + 1e-12)


def test_restricted_support_is_d_optimal_on_that_support():
    n, k = 10, 5
    support = uniform_allocation(n, k).support
    alloc = g_allocation(n, k, support=support, tol=1e-4, max_iter=5000, prune=0.0)
    A = (alloc.support.T.astype(float) * alloc.weights) @ alloc.support.astype(float)
    W = np.linalg.inv(A)
    g_rows = np.einsum("ij,jk,ik->i", support.astype(float), W, support.astype(float))
    # Kiefer-Wolfowitz on the restricted set: max over its rows -> n
    assert g_rows.max() <= n * (1 + 1e-4) + 1e-9


def test_warns_when_iterations_run_out():
    with pytest.warns(SettingsWarning, match="max_iter"):
        g_allocation(10, 5, max_iter=1, inner=0, tol=1e-6)


def test_efficient_apportionment_sums_to_budget_and_tracks_weights():
    w = np.array([0.5, 0.25, 0.125, 0.125, 0.0])
    for N in (4, 7, 10, 101, 1000):
        c = efficient_apportionment(w, N)
        assert c.sum() == N and c[-1] == 0
        # apportionment property: |n_i - N w_i| < m (Pukelsheim & Rieder 1992)
        assert np.all(np.abs(c - N * w / w.sum()) <= 4)
    assert efficient_apportionment([1, 1, 1], 3).tolist() == [1, 1, 1]


@pytest.mark.parametrize("kwargs,param", [
    (dict(n=10, k=1), "k"), (dict(n=10, k=10), "k"), (dict(n=10, k=5, tol=0.0), "tol"),
    (dict(n=10, k=5, max_iter=0), "max_iter"), (dict(n=10, k=5, prune=1.0), "prune"),
    (dict(n=10, k=5, support=np.ones((3, 9), bool)), "support"),
    (dict(n=10, k=5, support=np.eye(10, dtype=bool)), "support"),
])
def test_bad_input(kwargs, param):
    with pytest.raises(ValueError, match=f"'{param}' parameter of g_allocation"):
        g_allocation(**kwargs)


def test_singular_support_is_refused():
    # the cyclic windows for n = 10, k = 5 have rank 6 (allocation module docstring)
    windows = np.zeros((10, 10), bool)
    for i in range(10):
        windows[i, [(i + j) % 10 for j in range(5)]] = True
    with pytest.raises(ValueError, match="'support' parameter of g_allocation must be of full rank"):
        g_allocation(10, 5, support=windows)


def test_apportionment_bad_input():
    with pytest.raises(ValueError, match="'weights' parameter"):
        efficient_apportionment([-1.0, 2.0], 5)
    with pytest.raises(ValueError, match="'N' parameter"):
        efficient_apportionment([0.5, 0.5], 1)


def test_g_value_rejects_bad_allocation():
    bad = Allocation(np.ones((2, 4), bool), np.array([0.5, 0.5]), "x")
    with pytest.raises(ValueError):
        g_value(bad, 2)
