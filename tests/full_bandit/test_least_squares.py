"""Least-squares state: Sherman–Morrison updates against direct inverses, drift after 10^6 updates."""

import numba
import numpy as np
import pytest

from pmcbandit.full_bandit.allocation import track, uniform_allocation
from pmcbandit.full_bandit.least_squares import (accumulate, estimate, inverse_via_cholesky, ls_init, ls_update,
                                                 refresh, sherman_morrison)


def test_inverse_via_cholesky_matches_numpy(rng):
    B = rng.standard_normal((7, 9))
    A = B @ B.T
    np.testing.assert_allclose(inverse_via_cholesky(A), np.linalg.inv(A), rtol=1e-10, atol=1e-12)


def test_sherman_morrison_matches_direct_inverse(rng):
    alloc = uniform_allocation(8, 3)
    rows = [np.flatnonzero(r) for r in alloc.support]
    A = sum(np.outer(alloc.support[r], alloc.support[r]).astype(float) for r in range(len(rows)))
    A_inv = np.linalg.inv(A)
    u = np.empty(8)
    for _ in range(200):
        idx = rows[rng.integers(len(rows))]
        accumulate(A, np.zeros(8), idx, 0.0)
        sherman_morrison(A_inv, idx, u)
        np.testing.assert_allclose(A_inv, np.linalg.inv(A), rtol=1e-9, atol=1e-13)


def test_ls_update_is_pure_and_estimates_theta(rng):
    theta = np.array([0.3, -0.2, 0.5, 0.1, 0.0, 0.4])
    alloc = uniform_allocation(6, 3)
    rows = [np.flatnonzero(r) for r in alloc.support]
    state = ls_init(6, len(rows))
    first = state
    for t in range(600):
        r = track(state.counts, alloc.weights, t)
        state = ls_update(state, rows[r], theta[rows[r]].sum(), r, refresh_every=50)  # noiseless
    assert first.t == 0 and not first.A.any()  # the initial state was not mutated
    assert state.ready and state.t == 600
    np.testing.assert_allclose(state.theta_hat, theta, atol=1e-10)
    np.testing.assert_allclose(state.A_inv, np.linalg.inv(state.A), rtol=1e-10, atol=1e-14)


def test_state_before_full_rank_uses_least_norm_solution():
    alloc = uniform_allocation(5, 2)
    state = ls_init(5, alloc.support.shape[0])
    state = ls_update(state, np.flatnonzero(alloc.support[0]), 1.0, 0)
    assert not state.ready and np.all(np.isnan(state.A_inv)) and np.all(np.isnan(state.theta_hat))
    from pmcbandit.full_bandit.least_squares import least_norm_estimate

    assert np.all(np.isfinite(least_norm_estimate(state)))


@numba.njit(cache=True)
def _many_updates(rows, weights, n, steps, refresh_every):
    A = np.zeros((n, n))
    b = np.zeros(n)
    counts = np.zeros(rows.shape[0], dtype=np.int64)
    for t in range(rows.shape[0]):  # cover the support once: full rank
        counts[t] += 1
        accumulate(A, b, rows[t], 0.0)
    A_inv = inverse_via_cholesky(A)
    u = np.empty(n)
    since = 0
    for t in range(rows.shape[0], rows.shape[0] + steps):
        r = track(counts, weights, t)
        counts[r] += 1
        accumulate(A, b, rows[r], 0.0)
        since += 1
        if since >= refresh_every:
            refresh(A, A_inv)
            since = 0
        else:
            sherman_morrison(A_inv, rows[r], u)
    return A, A_inv


@pytest.mark.parametrize("n, k", [(10, 5), (12, 3)])
def test_drift_after_a_million_updates(n, k):
    """Relative Frobenius drift < 1e-10 after 10^6 updates with the default periodic Cholesky refresh
    (every 4096)."""
    alloc = uniform_allocation(n, k)
    rows = np.array([np.flatnonzero(r) for r in alloc.support], dtype=np.int64)
    A, A_inv = _many_updates(rows, alloc.weights, n, 1_000_000, 4096)
    direct = np.linalg.inv(A)
    drift = np.linalg.norm(A_inv - direct) / np.linalg.norm(direct)
    assert drift < 1e-10, drift


def test_estimate_is_matrix_vector_product(rng):
    W = rng.standard_normal((5, 5))
    b = rng.standard_normal(5)
    out = np.empty(5)
    estimate(W, b, out)
    np.testing.assert_allclose(out, W @ b)
