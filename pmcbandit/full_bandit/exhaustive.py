r"""Exhaustive: eq. (5) evaluated exactly over all :math:`\binom nk` super-arms (Kuroki et al. 2020, App. E, Alg. 5).

The reference algorithm: the stopping statistic of SA-FOA (:mod:`~pmcbandit.full_bandit.sa_foa`),
:math:`Z^*_t = \max_M (\chi_M - \chi_{\hat M_t})^\top\hat\theta_t + C_t\|\chi_M - \chi_{\hat M_t}\|_{A_t^{-1}}`,
by enumeration in :math:`O(\binom nk k^2)` per round (the paper: exponential time). It stops when
:math:`Z^*_t \le \epsilon`. Enumeration is refused above :data:`MAX_SUPER_ARMS` super-arms
(``max_super_arms`` raises the cap): a ``ValueError`` naming ``k``.
"""

from __future__ import annotations

import itertools
import math

import numba
import numpy as np

from pmcbandit.full_bandit._build import build
from pmcbandit.full_bandit.base import check_common
from pmcbandit.full_bandit.dks import argmax_quadratic
from pmcbandit.full_bandit.least_squares import DEFAULT_REFRESH_EVERY
from pmcbandit.full_bandit.sa_foa import empirical_best_mask

__all__ = ["exhaustive", "MAX_SUPER_ARMS", "all_super_arms", "exact_gap", "exact_cem"]

#: Default cap on :math:`\binom nk` for enumeration (C(24, 6) = 134,596 fits; C(25, 6) = 177,100 fits;
#: C(20, 10) = 184,756 fits; C(26, 6) = 230,230 does not).
MAX_SUPER_ARMS = 200_000


def all_super_arms(n: int, k: int, max_super_arms: int = MAX_SUPER_ARMS, door: str = "exhaustive") -> np.ndarray:
    """Every k-subset of ``range(n)`` as rows of a (C(n, k), k) int64 array (lexicographic)."""
    count = math.comb(int(n), int(k))
    if count > max_super_arms:
        raise ValueError(f"The 'k' parameter of {door} must keep C(n, k) <= max_super_arms = {max_super_arms} "
                         f"for enumeration. Got k={k!r} with n={n} (C(n, k) = {count}) instead.")
    return np.array(list(itertools.combinations(range(int(n)), int(k))), dtype=np.int64).reshape(count, int(k))


@numba.njit(cache=True)
def exact_gap(W, theta_hat, k, C, combos):
    """:math:`Z^*_t` by enumeration (0 for :math:`\\hat M_t` itself)."""
    n = W.shape[0]
    mhat = empirical_best_mask(theta_hat, k)
    m_idx = np.empty(k, dtype=np.int64)
    c = 0
    for i in range(n):
        if mhat[i]:
            m_idx[c] = i
            c += 1
    wm = np.zeros(n)
    mwm = 0.0
    th_m = 0.0
    for i in range(n):
        s = 0.0
        for a in range(k):
            s += W[i, m_idx[a]]
        wm[i] = s
    for a in range(k):
        mwm += wm[m_idx[a]]
        th_m += theta_hat[m_idx[a]]
    best = 0.0
    for r in range(combos.shape[0]):
        same = True
        for a in range(k):
            same = same and mhat[combos[r, a]]
        if same:  # the empirical best itself: exactly 0 (the formula would leave rounding noise)
            continue
        xwx = 0.0
        lin = 0.0
        cross = 0.0
        for a in range(k):
            i = combos[r, a]
            lin += theta_hat[i]
            cross += wm[i]
            for b in range(k):
                xwx += W[i, combos[r, b]]
        v = lin - th_m + C * math.sqrt(max(xwx - 2.0 * cross + mwm, 0.0))
        if v > best:
            best = v
    return best


@numba.njit(cache=True)
def exact_cem(W, combos):
    """:math:`\\max_M \\|\\chi_M\\|_W` by enumeration."""
    return math.sqrt(max(argmax_quadratic(W, combos)[1], 0.0))


def exhaustive(
    n: int,
    k: int,
    delta: float = 0.05,
    epsilon: float = 0.0,
    sigma: float = 1.0,
    *,
    noise: str = "independent",
    allocation="uniform",
    max_super_arms: int = MAX_SUPER_ARMS,
    refresh_every: int = DEFAULT_REFRESH_EVERY,
    width_scale: float = 1.0,
    width: str = "paper",
    allocation_kwargs: dict | None = None,
):
    """Exhaustive (Alg. 5) (parameters as :func:`~pmcbandit.full_bandit.saqm.saqm`); ``ValueError`` naming ``k``
    when :math:`\\binom nk` exceeds ``max_super_arms``.
    """
    check_common(k, n, delta, epsilon, sigma, noise, "exhaustive")
    combos = all_super_arms(n, k, max_super_arms)
    return build(
        "exhaustive",
        n,
        k,
        delta,
        epsilon,
        sigma,
        noise,
        allocation,
        lambda W, th, C, full: exact_gap(W, th, k, C, combos),
        refresh_every=refresh_every,
        width_scale=width_scale,
        width=width,
        allocation_kwargs=allocation_kwargs,
        max_super_arms=int(max_super_arms),
    )
