r"""Least-squares state of a full-bandit run with incremental inverses.

Kuroki et al. (2020), Sec. 2: after pulls :math:`M_1..M_t` with rewards :math:`r_s`,
:math:`A_t = \sum_s \chi_{M_s}\chi_{M_s}^\top`, :math:`b_t = \sum_s \chi_{M_s} r_s` and
:math:`\hat\theta_t = A_t^{-1} b_t`.

Updates
-------
* Until :math:`A_t` has full rank only :math:`A_t` and :math:`b_t` are accumulated, and each pulled
  indicator is Gram–Schmidt-orthogonalised against the span so far (:math:`O(n\,\mathrm{rank})`):
  the rank is known exactly at every pull (``check_allocation`` guarantees it reaches ``n`` once
  the support is covered).
* When the rank reaches ``n``,
  :math:`A_t^{-1}` is computed directly through the Cholesky factor :math:`A_t = LL^\top`
  (:math:`A^{-1} = L^{-\top}L^{-1}`, :func:`refresh`).
* Afterwards each pull is a rank-one update, by Sherman–Morrison
  (:func:`sherman_morrison`): with :math:`u = A^{-1}x`,
  :math:`(A + xx^\top)^{-1} = A^{-1} - uu^\top/(1 + x^\top u)`; :math:`x` has ``k`` ones, so
  :math:`u` is a sum of ``k`` columns and the update costs :math:`O(n^2)`.
* Rounding errors of the rank-one updates accumulate (each update is backward stable, but their
  composition is not), so every ``refresh_every`` updates (default 4096; the
  :math:`O(n^3)` refresh then costs :math:`O(n^3/4096)` per pull) :math:`A_t^{-1}` is recomputed
  from the exact integer matrix :math:`A_t` by :func:`refresh`. The test suite checks the relative
  drift :math:`\|A^{-1}_{SM} - A^{-1}_{direct}\|_F / \|A^{-1}_{direct}\|_F < 10^{-10}` after
  :math:`10^6` updates.

:math:`\hat\theta_t = A_t^{-1}b_t` is recomputed from :math:`b_t` every pull (:math:`O(n^2)`, as the
update), so its error is that of :math:`A_t^{-1}`, never an accumulated one.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.full_bandit.design import _orthogonalise_into
from pmcbandit.full_bandit.base import FullBanditState

__all__ = ["DEFAULT_REFRESH_EVERY", "accumulate", "sherman_morrison", "refresh", "estimate", "ls_init",
           "ls_update", "inverse_via_cholesky", "least_norm_estimate"]

DEFAULT_REFRESH_EVERY = 4096


@numba.njit(cache=True)
def accumulate(A, b, idx, reward):
    """In place: :math:`A \\mathrel{+}= xx^\\top`, :math:`b \\mathrel{+}= x r` for the super-arm ``idx``."""
    for a in range(idx.shape[0]):
        i = idx[a]
        b[i] += reward
        for c in range(idx.shape[0]):
            A[i, idx[c]] += 1.0


@numba.njit(cache=True)
def sherman_morrison(A_inv, idx, u):
    """In place: :math:`A^{-1} \\leftarrow A^{-1} - uu^\\top/(1+x^\\top u)`, :math:`u = A^{-1}x`
    (``u`` is a work array of length n).
    """
    n = A_inv.shape[0]
    for i in range(n):
        s = 0.0
        for a in range(idx.shape[0]):
            s += A_inv[i, idx[a]]
        u[i] = s
    denom = 1.0
    for a in range(idx.shape[0]):
        denom += u[idx[a]]
    inv = 1.0 / denom
    for i in range(n):
        ui = u[i] * inv
        for j in range(n):
            A_inv[i, j] -= ui * u[j]


@numba.njit(cache=True)
def inverse_via_cholesky(A):
    """:math:`A^{-1} = L^{-\\top}L^{-1}` from the Cholesky factor of a symmetric positive definite ``A``."""
    n = A.shape[0]
    L = np.linalg.cholesky(A)
    Li = np.zeros((n, n))
    for j in range(n):
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            s = 0.0
            for m in range(j, i):
                s += L[i, m] * Li[m, j]
            Li[i, j] = -s / L[i, i]
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            s = 0.0
            for m in range(i, n):
                s += Li[m, i] * Li[m, j]
            out[i, j] = s
            out[j, i] = s
    return out


@numba.njit(cache=True)
def refresh(A, A_inv):
    """In place: ``A_inv`` recomputed from ``A`` (Cholesky)."""
    A_inv[:, :] = inverse_via_cholesky(A)


@numba.njit(cache=True)
def estimate(A_inv, b, theta_hat):
    """In place: :math:`\\hat\\theta = A^{-1}b`."""
    n = b.shape[0]
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += A_inv[i, j] * b[j]
        theta_hat[i] = s


def least_norm_estimate(state: FullBanditState) -> np.ndarray:
    r""":math:`\hat\theta_t` once ready, else the minimum-norm least-squares solution (computed on demand:
    a run that ends before :math:`A_t` has full rank still gets an answer, without a guarantee).
    """
    if state.ready:
        return state.theta_hat
    return np.linalg.lstsq(state.A, state.b, rcond=None)[0]


def ls_init(n: int, m: int) -> FullBanditState:
    """Empty state for ``n`` arms and an allocation support of ``m`` rows."""
    return FullBanditState(np.zeros((n, n)), np.full((n, n), np.nan), np.zeros(n), np.full(n, np.nan),
                           np.zeros(m, dtype=np.int64), 0, 0, False, np.zeros((n, n)), 0)


def ls_update(state: FullBanditState, idx: np.ndarray, reward: float, row: int,
              refresh_every: int = DEFAULT_REFRESH_EVERY) -> FullBanditState:
    """``state`` after pulling the super-arm ``idx`` (support row ``row``, -1 if off the support) and
    observing ``reward``. Copies the arrays it changes (the state is immutable).
    """
    A, b = state.A.copy(), state.b.copy()
    idx = np.asarray(idx, dtype=np.int64)
    accumulate(A, b, idx, float(reward))
    counts = state.counts.copy()
    if row >= 0:
        counts[row] += 1
    t = state.t + 1
    basis, rank = state.basis, state.rank
    if state.ready:
        A_inv = state.A_inv.copy()
        since = state.since_refresh + 1
        if since >= refresh_every:
            refresh(A, A_inv)
            since = 0
        else:
            sherman_morrison(A_inv, idx, np.empty(A.shape[0]))
        ready = True
    else:
        basis = basis.copy()
        rank += _orthogonalise_into(basis, rank, idx, idx.shape[0])
        ready = rank == A.shape[0]
        A_inv = inverse_via_cholesky(A) if ready else state.A_inv
        since = 0
    theta_hat = np.full(A.shape[0], np.nan)
    if ready:
        estimate(A_inv, b, theta_hat)
    return FullBanditState(A, A_inv, b, theta_hat, counts, t, since, ready, basis, rank)
