"""UCB1 (Auer, Cesa-Bianchi & Fischer 2002; Neufeld et al. 2014, Alg. 1).

Index of arm ``j`` at decision ``t``::

    mean_j + sqrt(2 log t / T_j)

with ``mean_j`` the mean normalised reward ``1 - (X - c)^2 / scale`` in ``[0, 1]``
and ``T_j`` the arm's pulls (pending included). Fed with the rewards of
Thm 2, its MSE-regret obeys bound (4) (Thm 4).

Ranges default to *shared* for UCB1 and UCB-V (``Policy.ranges``), per arm for
KL-UCB and Thompson sampling. Under per-arm ranges (App. B) UCB1's bonus on the
loss scale is ``scale_k * sqrt(2 log t / T_j)``, blind to the arm's variance, so
the arms with the widest range are explored most, and UCB-V's ``3 c zeta scale_k
log t / T_j`` term keeps a wide-range arm's index high for many pulls (App. B warns
about both). On the Fig. 2 CIR pool (16 arms, 10^5 single-path pulls, 20 repetitions,
running-mean centre; ``benchmarks/results/fig2_cir.md`` has both rows per policy) per-arm
ranges made UCB1's MSE x n 2.7-3.4x larger at every strike, and UCB-V's 3.7x larger at
K = 0.06 though 1.9x and 1.4x smaller at K = 0.07 and 0.08; Thompson sampling gained at
every strike (2.3x at K = 0.06), KL-UCB too (7.1x at K = 0.06).
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
