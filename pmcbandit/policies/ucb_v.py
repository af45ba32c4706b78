"""UCB-V (Audibert, Munos & Szepesvári 2009; Neufeld et al. 2014, Sec. 2).

Index of arm ``j`` at decision ``t`` (the bound of Sec. 2 substituted into Alg. 1)::

    mean_j + sqrt(2 V_j E / T_j) + c * 3 * b * E / T_j,    E = zeta * log t

with ``mean_j`` and ``V_j`` the mean and the empirical (``1/T_j``) variance of
the arm's normalised rewards ``1 - loss/scale`` (:mod:`pmcbandit.policies.base`),
``b = 1`` their range and ``T_j`` the arm's pulls (pending included; a pending
pull adds to ``T_j`` before its reward changes ``mean_j`` or ``V_j``).

Defaults ``c = 1``, ``zeta = 1.2``, standing for "the same settings as
(Audibert et al., 2009)" of Neufeld et al.'s experiments (Sec. 6.1): Audibert,
Munos & Szepesvári (2009, Theoretical Computer Science 410, 1876-1902, Thm 1)
take ``c = 1`` and ``E = zeta log t`` with ``zeta > 1`` for logarithmic regret,
and ``zeta = 1.2`` is the value adopted here for ``zeta`` (Neufeld et al. do not
print it). Fed the rewards of Thm 2, the MSE-regret obeys bound (5) (Thm 4).
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit._validation import check_positive
from pmcbandit.policies.base import Policy, index_policy

__all__ = ["index", "policy"]


@numba.njit(cache=True)
def index(n, mean, var, t, params):
    """UCB-V index ``mean + sqrt(2 var E / n) + 3 c E / n``, ``E = zeta log t``; ``params = (zeta, c)``."""
    zeta = params[0]
    c = params[1]
    explore = zeta * np.log(max(t, 1))
    out = np.empty(n.shape[0])
    for i in range(n.shape[0]):
        if n[i] > 0:
            out[i] = mean[i] + np.sqrt(2.0 * var[i] * explore / n[i]) + 3.0 * c * explore / n[i]
        else:
            out[i] = np.inf
    return out


def policy(*, zeta: float = 1.2, c: float = 1.0, scale: float | None = None) -> Policy:
    """UCB-V as a :class:`~pmcbandit.policies.base.Policy`.

    Parameters
    ----------
    zeta : float, default 1.2
        Exploration constant of ``E = zeta log t`` (> 0; > 1 for the regret bound).
    c : float, default 1.0
        Weight of the range term ``3 b E / T`` (> 0).
    scale : float, optional
        Known loss range; by default the running maximum loss.
    """
    check_positive(zeta, "zeta", "ucb_v")
    check_positive(c, "c", "ucb_v")
    return index_policy("ucb_v", index, (zeta, c), scale=scale)
