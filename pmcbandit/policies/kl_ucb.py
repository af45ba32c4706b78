"""KL-UCB (Cappé, Garivier, Maillard, Munos & Stoltz 2013; Neufeld et al. 2014, Sec. 2).

Index of arm ``j`` at decision ``t``::

    sup { q in [mean_j, 1] : T_j * KL(mean_j, q) <= f(t) },
    f(t) = log t + c log log t   (t >= 3),   f(1) = f(2) = f(3),

with ``KL`` the Bernoulli divergence, ``mean_j`` the mean normalised reward in
``[0, 1]`` and ``T_j`` the arm's pulls (pending included). ``c = 3`` is the
choice of the paper (Sec. 2, bound (6); Cappé et al. 2013, Cor. 1).

The index is reported on the grid of multiples of ``GRID = 2^-20`` (< 1e-6): it is
the smallest grid point ``q`` above ``mean_j`` with ``T_j * KL(mean_j, q) > f(t)``
(1.0 when there is none) -- never below the exact supremum, less than ``GRID``
above it. Snapping to the grid makes the index a function of ``(mean, d)`` alone,
``d = f(t)/T_j``, whatever point the search starts from: :func:`grid_index`
brackets the answer between a grid point known to be below it and one known to be
at or above it, tests a point and its lower neighbour at each step (a straddling
pair ends the search), and moves by Newton steps on ``q -> KL(mean, q) - d`` (convex and
increasing on ``[mean, 1]``, so a step from above lands above the root and one
from below overshoots it; KL's derivative in ``q`` is ``(q - mean)/(q(1 - q))``, no
logarithm), falling back to halving the bracket when a step leaves it or after
``MAX_NEWTON`` steps. The live policy starts at Pinsker's bound
``mean + sqrt(d/2)`` (``KL(p, q) >= 2 (q - p)^2`` puts the supremum below it); the
replicated-run simulator starts from the arm's previous index, which changes only
when the arm is pulled or ``d`` crosses the next grid point, so most rounds cost a
comparison (:mod:`pmcbandit.simulate.kernel`). Both give the same grid point (the
computed KL increases from one grid point to the next around the root: the
spacing is far above its rounding error), so the simulator replays the live
pulls exactly.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit._validation import check_positive
from pmcbandit.policies.base import Policy, index_policy

__all__ = ["GRID", "MAX_NEWTON", "kl_bernoulli", "grid_index", "kl_upper_bound", "exploration", "exploration_table",
           "index", "policy"]

#: Spacing of the grid the index is reported on (2^-20 < 1e-6; multiples are exact doubles).
GRID = 2.0**-20
#: Newton steps before the search falls back to halving its bracket.
MAX_NEWTON = 12
_N_GRID = 2**20
_EPS = 1e-15


@numba.njit(cache=True)
def kl_bernoulli(p, q):
    """Bernoulli divergence ``p log(p/q) + (1-p) log((1-p)/(1-q))`` with ``0 log 0 = 0``.

    ``q`` is clipped to ``[1e-15, 1 - 1e-15]`` so the value stays finite.

    Examples
    --------
    >>> round(kl_bernoulli(0.5, 0.5), 12)
    0.0
    >>> round(kl_bernoulli(0.1, 0.9), 6)  # 0.8 log 9
    1.75778
    """
    q = min(max(q, _EPS), 1.0 - _EPS)
    out = 0.0
    if p > 0.0:
        out += p * np.log(p / q)
    if p < 1.0:
        out += (1.0 - p) * np.log((1.0 - p) / (1.0 - q))
    return out


@numba.njit(cache=True)
def grid_index(p, d, start, known_below):
    """KL-UCB's grid index: the smallest ``j`` with ``j * GRID > p`` and ``KL(p, j * GRID) > d``.

    Parameters
    ----------
    p : float
        Mean normalised reward of the arm.
    d : float
        Exploration budget ``f(t) / T`` (> 0).
    start : int
        Grid point to evaluate first (any; clamped into the bracket).
    known_below : int
        A grid point already known not to satisfy the condition (-1 if none).

    Returns
    -------
    (int, float)
        ``j`` (``2^20``, i.e. ``q = 1``, when no grid point below 1 satisfies it) and
        ``KL(p, j * GRID)`` (``inf`` for ``j = 2^20`` unless evaluated there).

    Examples
    --------
    >>> j, _ = grid_index(0.5, 0.1, 0, -1)
    >>> q = j * GRID
    >>> kl_bernoulli(0.5, q) > 0.1 >= kl_bernoulli(0.5, q - GRID)
    True
    """
    hi = _N_GRID
    kl_hi = np.inf
    if p >= 1.0:
        return hi, kl_hi
    lo = max(int(np.floor(p * _N_GRID)), known_below, 0)
    j = start
    steps = 0
    while hi - lo > 1:
        if not lo < j < hi:
            j = (lo + hi) // 2
        # Each step tests a point and the one below it: the two evaluations are independent
        # (they overlap in the processor), and a pair that straddles the root ends the search.
        q = j * GRID
        g = kl_bernoulli(p, q)
        g_below = kl_bernoulli(p, q - GRID) if j - 1 > lo else -np.inf
        if g > d:
            hi = j
            kl_hi = g
            if g_below <= d:
                lo = j - 1
                break
            hi = j - 1
            kl_hi = g_below
            q = q - GRID
            g = g_below
        else:
            lo = j
        steps += 1
        slope = (q - p) / (q * (1.0 - q))
        if steps > MAX_NEWTON or not slope > 0.0:
            j = (lo + hi) // 2
            continue
        # Newton's point, kept finite and inside [0, 1] before it becomes a grid index; from
        # above it is at or above the root, so the answer is at most its ceiling.
        target = min(max(q - (g - d) / slope, 0.0), 1.0)
        j = int(np.ceil(target * _N_GRID))
        if j >= hi:
            j = hi - 1
    return hi, kl_hi


@numba.njit(cache=True)
def kl_upper_bound(p, d):
    """``sup {q in [p, 1] : KL(p, q) <= d}`` on the grid of :data:`GRID` (see the module docstring).

    Examples
    --------
    >>> kl_upper_bound(1.0, 0.3)
    1.0
    >>> q = kl_upper_bound(0.5, 0.1)
    >>> kl_bernoulli(0.5, q - GRID) <= 0.1 < kl_bernoulli(0.5, q)
    True
    """
    start = int(np.ceil(min(p + np.sqrt(0.5 * d), 1.0) * _N_GRID))
    return grid_index(p, d, start, -1)[0] * GRID


@numba.njit(cache=True)
def exploration(t, c):
    """``f(t) = log t + c log log t`` for ``t >= 3``, and ``f(3)`` below."""
    t = max(t, 3)
    log_t = np.log(t)
    return log_t + c * np.log(log_t)


@numba.njit(cache=True)
def exploration_table(t0, count, c):
    """``f(t)`` of :func:`exploration` for ``t = t0, ..., t0 + count - 1`` (the simulator's rounds)."""
    out = np.empty(count)
    for i in range(count):
        out[i] = exploration(t0 + i, c)
    return out


@numba.njit(cache=True)
def index(n, mean, var, t, params):
    """KL-UCB index of every arm; ``params = (c,)`` of ``f(t)`` (``var`` unused)."""
    f = exploration(t, params[0])
    out = np.empty(n.shape[0])
    for i in range(n.shape[0]):
        out[i] = kl_upper_bound(mean[i], f / n[i]) if n[i] > 0 else np.inf
    return out


def policy(*, c: float = 3.0, scale: float | None = None) -> Policy:
    """KL-UCB as a :class:`~pmcbandit.policies.base.Policy`.

    Parameters
    ----------
    c : float, default 3.0
        Weight of ``log log t`` in ``f(t)`` (>= 0; ``c = 0`` is the variant
        Cappé et al. recommend in practice).
    scale : float, optional
        Known loss range; by default the running maximum loss.
    """
    check_positive(c, "c", "kl_ucb", allow_zero=True)
    return index_policy("kl_ucb", index, (c,), scale=scale, ranges="per_arm")
