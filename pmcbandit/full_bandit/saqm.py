r"""SAQM: Static Allocation with Quadratic Maximisation (Kuroki et al. 2020, Alg. 2).

Each round pulls the tracked row of a static allocation, updates :math:`\hat\theta_t`, takes the
empirical best super-arm :math:`\hat M_t` (top-k of :math:`\hat\theta_t`) and bounds the confidence
ellipsoid maximum :math:`\max_M \|\chi_M\|_{A_t^{-1}}` (CEM, eq. (1)).

Stopping rule (eq. (4), with a certified bound)
-----------------------------------------------
On the event of Prop. 1 (:mod:`~pmcbandit.full_bandit.base`, :math:`|\mathcal X| = \binom nk`),
for every :math:`M`: :math:`|\theta(M) - \hat\theta(M)| \le C_t\|\chi_M\|_{A_t^{-1}} \le C_t U_t` with
:math:`U_t \ge \max_M\|\chi_M\|_{A_t^{-1}}`. Then for the optimal :math:`M^* \ne \hat M_t`,

.. math:: \theta(M^*) - \theta(\hat M_t) \le \hat\theta(M^*) - \hat\theta(\hat M_t) + 2C_tU_t
          \le -(\hat\theta_{(k)} - \hat\theta_{(k+1)}) + 2C_tU_t,

since the best super-arm other than :math:`\hat M_t` swaps its weakest member for the best
outsider. SAQM stops when the statistic :math:`2C_tU_t - (\hat\theta_{(k)} - \hat\theta_{(k+1)})
\le \epsilon`, and the answer is then :math:`\epsilon`-optimal (Lemma 8).

The paper uses :math:`U_t = Z_t/\alpha_t`, Alg. 1's value divided by Theorem 1's approximation
ratio (whose constants the extraction lost). We use instead the certified row bound
:math:`U_t^2 = \operatorname{top}_k(\rho)` of :func:`pmcbandit.full_bandit.dks.row_bound` (proved
there, never below the optimum, exact for balanced designs). Alg. 1 itself
(:func:`~pmcbandit.full_bandit.dks.qp_greedy`, greedy peeling on the shifted DkS graph) gives the
approximate CEM value :math:`Z_t` that the approximation-quality experiment reports
(:func:`approximate_norm`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmcbandit.full_bandit._build import build
from pmcbandit.full_bandit.dks import qp_greedy, row_bound
from pmcbandit.full_bandit.least_squares import DEFAULT_REFRESH_EVERY

__all__ = ["saqm", "saqm_statistic", "approximate_norm", "bound_norm"]


@numba.njit(cache=True)
def empirical_gap(theta_hat, k):
    r""":math:`\hat\theta_{(k)} - \hat\theta_{(k+1)}` (order statistics, largest first)."""
    s = np.sort(theta_hat)
    n = s.shape[0]
    return s[n - k] - s[n - k - 1]


@numba.njit(cache=True)
def bound_norm(W, k):
    r"""Certified :math:`U_t \ge \max_M \|\chi_M\|_W`: :math:`\sqrt{\operatorname{top}_k(\rho)}`."""
    return math.sqrt(max(row_bound(W, k), 0.0))


@numba.njit(cache=True)
def approximate_norm(W, k):
    r"""Alg. 1 (greedy peeling): :math:`Z_t = \|\chi_S\|_W` of the returned set (a lower bound on CEM)."""
    _, v = qp_greedy(W, k)
    return math.sqrt(max(v, 0.0))


@numba.njit(cache=True)
def saqm_statistic(W, theta_hat, k, C):
    r""":math:`2C_tU_t - (\hat\theta_{(k)} - \hat\theta_{(k+1)})`; stop when :math:`\le\epsilon`."""
    return 2.0 * C * bound_norm(W, k) - empirical_gap(theta_hat, k)


def saqm(n: int, k: int, delta: float = 0.05, epsilon: float = 0.0, sigma: float = 1.0, *, noise: str = "independent",
         allocation="uniform", refresh_every: int = DEFAULT_REFRESH_EVERY, width_scale: float = 1.0,
           width: str = "paper",
         allocation_kwargs: dict | None = None):
    r"""SAQM (Alg. 2) for ``n`` arms and super-arms of size ``k``.

    Parameters
    ----------
    n, k : int
        Arms and super-arm size, ``2 <= k < n``.
    delta : float
        Error probability in (0, 1).
    epsilon : float
        Tolerance >= 0: the answer is :math:`\epsilon`-optimal with probability :math:`\ge 1-\delta`.
    sigma : float
        Sub-Gaussian noise scale of a single arm (> 0; the paper's :math:`R`, Sec. 2); ``noise`` says how
        it enters the observed sum's scale (:func:`~pmcbandit.full_bandit.base.sum_noise_scale`).
    noise : {"independent", "dependent", "sum"}
    allocation : str or Allocation
        ``"uniform"``, ``"g"`` or an :class:`~pmcbandit.full_bandit.allocation.Allocation`.
    allocation_kwargs : dict, optional
        Settings of the named allocation's builder (``design`` of
        :func:`~pmcbandit.full_bandit.allocation.uniform_allocation`, those of
        :func:`~pmcbandit.full_bandit.g_allocation.g_allocation`).
    refresh_every : int
        Sherman–Morrison updates between direct inverses.
    width_scale : float
        Multiplies :math:`C_t`; 1 keeps the guarantee (other values exist for the mutation test).
    width : {"paper", "tight"}
        The width rule (:mod:`~pmcbandit.full_bandit.base`): Prop. 1's constant, or the tighter one
        derived there (same guarantee, fewer samples).

    Returns
    -------
    FullBanditIdentifier
    """
    return build("saqm", n, k, delta, epsilon, sigma, noise, allocation,
                 lambda W, th, C, full: saqm_statistic(W, th, k, C), refresh_every=refresh_every,
                 width_scale=width_scale, width=width, allocation_kwargs=allocation_kwargs)
