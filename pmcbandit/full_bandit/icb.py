r"""ICB: independent (diagonal) confidence bounds (Kuroki et al. 2020, App. A, Alg. 4).

Lemma 1 (App. A): Prop. 1 over the :math:`n` unit vectors (:math:`|\mathcal X| = n`) gives, with
probability :math:`\ge 1-\delta`, :math:`|\theta_i - \hat\theta_i| \le C_t s_i` for all :math:`i`
and :math:`t`, :math:`s_i = \sqrt{(A_t^{-1})_{ii}}`; by the triangle inequality
:math:`|\theta(M) - \hat\theta(M)| \le C_t\sum_{i\in M}s_i` for every set.

Stopping rule (eq. (2) of App. A). With :math:`\hat M_t` the empirical best set, on that event

.. math:: \theta(M) - \theta(\hat M_t) \le \sum_{i\in M\setminus\hat M_t}(\hat\theta_i + C_ts_i)
          - \sum_{i\in\hat M_t\setminus M}(\hat\theta_i - C_ts_i) = v(M) - v(\hat M_t),

with :math:`v_i = \hat\theta_i + C_ts_i` outside :math:`\hat M_t` and :math:`\hat\theta_i - C_ts_i`
inside (members of both sets cancel). The maximum over the decision class is one call of its
linear maximisation oracle on :math:`v` (top-k for the size-k class; the greedy algorithm for a
matroid's bases, App. B). ICB stops when :math:`\max_M v(M) - v(\hat M_t) \le \epsilon`; the answer
is then :math:`\epsilon`-optimal.
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

from pmcbandit.full_bandit._build import build
from pmcbandit.full_bandit.least_squares import DEFAULT_REFRESH_EVERY
from pmcbandit.identification.oracles import Oracle

__all__ = ["icb", "icb_statistic", "matroid_oracle", "icb_values"]


@numba.njit(cache=True)
def icb_values(W, theta_hat, mhat, C):
    """:math:`v_i = \\hat\\theta_i \\pm C_t\\sqrt{W_{ii}}` (+ outside ``mhat``, - inside)."""
    n = theta_hat.shape[0]
    v = np.empty(n)
    for i in range(n):
        s = C * np.sqrt(max(W[i, i], 0.0))
        v[i] = theta_hat[i] - s if mhat[i] else theta_hat[i] + s
    return v


@numba.njit(cache=True)
def icb_statistic(W, theta_hat, k, C):
    """:math:`\\max_{|M|=k} v(M) - v(\\hat M_t)` for the size-k class (top-k oracle)."""
    n = theta_hat.shape[0]
    order = np.argsort(-theta_hat, kind="mergesort")
    mhat = np.zeros(n, dtype=np.bool_)
    for a in range(k):
        mhat[order[a]] = True
    v = icb_values(W, theta_hat, mhat, C)
    vs = np.sort(v)
    best = 0.0
    cur = 0.0
    for a in range(k):
        best += vs[n - 1 - a]
        cur += v[order[a]]
    return best - cur


def matroid_oracle(n: int, is_independent: Callable[[np.ndarray], bool], name: str = "matroid") -> Oracle:
    """The bases of a matroid on ``n`` elements, by the greedy algorithm (App. B): scan elements by
    decreasing weight (ties: lower index) and keep each one whose addition stays independent
    (``is_independent(mask) -> bool``). Returns a maximum-weight basis as a bool mask.

    >>> partition = matroid_oracle(4, lambda m: m[:2].sum() <= 1 and m[2:].sum() <= 1, "partition")
    >>> partition.maximise(np.array([0.9, 0.8, 0.1, 0.2])).tolist()
    [True, False, False, True]
    """

    def maximise(weights):
        weights = np.asarray(weights, dtype=np.float64)
        mask = np.zeros(n, dtype=bool)
        for i in np.argsort(-weights, kind="stable"):
            mask[i] = True
            if not is_independent(mask):
                mask[i] = False
        return mask

    return Oracle(name, maximise)


def icb(n: int, k: int, delta: float = 0.05, epsilon: float = 0.0, sigma: float = 1.0, *, noise: str = "independent",
        allocation="uniform", oracle: Oracle | None = None, refresh_every: int = DEFAULT_REFRESH_EVERY,
        width_scale: float = 1.0, width: str = "paper", allocation_kwargs: dict | None = None):
    r"""ICB (Alg. 4) for ``n`` arms and super-arms of size ``k``.

    Parameters as :func:`~pmcbandit.full_bandit.saqm.saqm`, and:

    ``oracle``: a decision class given by its linear maximisation oracle
    (:class:`~pmcbandit.identification.oracles.Oracle`, e.g. :func:`matroid_oracle`), whose sets
    have ``k`` elements; ``None``: all k-sets (top-k). The union bound is over the ``n`` arms, so
    it holds for any class. Recommendation: ``oracle(theta_hat)``'s members, best first. The rows
    of ``allocation`` are what is pulled: pass one whose rows lie in the class and whose support has
    full rank (a partition matroid with fixed counts per part never does: the part-count vector is
    in the null space of every design).
    """
    if oracle is None:
        return build("icb", n, k, delta, epsilon, sigma, noise, allocation,
                     lambda W, th, C, full: icb_statistic(W, th, k, C), per_arm=True, refresh_every=refresh_every,
                     width_scale=width_scale, width=width, allocation_kwargs=allocation_kwargs)
    if not isinstance(oracle, Oracle):
        raise TypeError(f"The 'oracle' parameter of icb must be an Oracle or None. Got {oracle!r} instead.")

    def statistic(W, th, C, full):
        mhat = np.asarray(oracle.maximise(th), dtype=bool)
        v = icb_values(W, th, mhat, C)
        return float(v[np.asarray(oracle.maximise(v), dtype=bool)].sum() - v[mhat].sum())

    def recommend(th):
        members = np.flatnonzero(np.asarray(oracle.maximise(th), dtype=bool))
        return members[np.argsort(-th[members], kind="stable")]

    return build("icb", n, k, delta, epsilon, sigma, noise, allocation, statistic, per_arm=True, recommend=recommend,
                 refresh_every=refresh_every, width_scale=width_scale, width=width, allocation_kwargs=allocation_kwargs,
                 oracle=str(oracle.name))
