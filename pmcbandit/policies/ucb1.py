"""UCB1 (Auer, Cesa-Bianchi & Fischer 2002; Neufeld et al. 2014, Alg. 1).

Index of arm ``j`` at decision ``t``::

    mean_j + sqrt(2 log t / T_j)

with ``mean_j`` the mean normalised reward ``1 - (X - c)^2 / scale`` in ``[0, 1]``
and ``T_j`` the arm's pulls (pending included). Fed with the rewards of
Thm 2, its MSE-regret obeys bound (4) (Thm 4).
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.policies.base import Policy, index_policy

__all__ = ["index", "policy"]


@numba.njit(cache=True)
def index(n, mean, var, t, params):
    """UCB1 index ``mean + sqrt(2 log t / n)`` (``params`` unused)."""
    out = np.empty(n.shape[0])
    log_t = np.log(max(t, 1))
    for i in range(n.shape[0]):
        out[i] = mean[i] + np.sqrt(2.0 * log_t / n[i]) if n[i] > 0 else np.inf
    return out


def policy(*, scale: float | None = None) -> Policy:
    """UCB1 as a :class:`~pmcbandit.policies.base.Policy`."""
    return index_policy("ucb1", index, (), scale=scale)
