r"""Numba kernels shared by the identification algorithms and the stopping-time simulator.

One implementation of each rule: the algorithms' ``select``/``stop``/``recommend``
(:mod:`pmcbandit.identification`) and the simulator's loop
(:mod:`pmcbandit.identification.simulate`) call these functions on the same per-arm arrays
``n`` (rewards per arm) and ``total`` (their sums).

Radii come as tables indexed by an arm's reward count, ``radius_i = coef * table[n_i]``, so a round
costs a gather instead of a logarithm and a square root per arm: for the LIL radius
(:func:`~pmcbandit.identification.radii.lil`) ``table[t] = U(t, omega)`` and ``coef = 1``, one table
per confidence — ``omega_high`` for arms in the empirical top ``k`` and ``omega_low`` for the
others (LUCB++'s split, Simchowitz, Jamieson & Recht 2017; Jiang et al. 2017, Alg. 1); for LUCB1's
anytime radius (:func:`~pmcbandit.identification.radii.lucb_radius`, Kalyanakrishnan et al. 2012),
``table[t] = 1/sqrt(t)`` and ``coef = sigma sqrt(2 log(k1 N t^4/delta))`` at the current time.
:func:`grown` extends a table when a count outgrows it. Ties in the empirical means are broken by
arm index (the lower index ranks higher), so every kernel is a deterministic function of its arrays.

The ``*_kept`` variants serve the simulator's loop, where only the arms just pulled change: the
caller keeps the means (and lil'CLUCB's revised means) and the top-``k`` masks between rounds, and
:func:`top_k_repair` restores a mask after some values changed by swapping the lowest-ranked member
with the highest-ranked outsider while they are out of order. The order (value, then lower index)
is total, so the repaired mask is the one :func:`top_k_into` computes from scratch, and the kept
variants return what :func:`lucb_pair_into` and :func:`clucb_step_into` return.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmcbandit.identification.radii import LUCB_K1, lil

__all__ = ["LIL", "LUCB", "LUCB_BOTH", "LUCB_RANDOM", "CLUCB", "LIL_UCB", "top_k", "top_k_into", "top_k_repair",
           "grown", "lucb_coef", "lucb_pair", "lucb_pair_into", "lucb_pair_kept", "clucb_step", "clucb_step_into",
           "clucb_step_kept", "lil_ucb_index", "lil_ucb_stop"]

# radius kinds
LIL = 0
LUCB = 1
# rules (KernelSpec.rule)
LUCB_BOTH = 0
LUCB_RANDOM = 1
CLUCB = 2
LIL_UCB = 3


@numba.njit(cache=True)
def _kth_largest(values, k, scratch):
    """The ``k``-th largest of ``values`` by quickselect on ``scratch`` (overwritten), median-of-three pivots."""
    n = values.shape[0]
    for i in range(n):
        scratch[i] = values[i]
    lo, hi, target = 0, n - 1, k - 1  # the target-th position in descending order
    while lo < hi:
        mid = (lo + hi) // 2
        a, b, c = scratch[lo], scratch[mid], scratch[hi]
        pivot = max(min(a, b), min(max(a, b), c))
        i, j = lo, hi
        while i <= j:
            while scratch[i] > pivot:
                i += 1
            while scratch[j] < pivot:
                j -= 1
            if i <= j:
                scratch[i], scratch[j] = scratch[j], scratch[i]
                i += 1
                j -= 1
        if target <= j:
            hi = j
        elif target >= i:
            lo = i
        else:
            return scratch[target]
    return scratch[target]


@numba.njit(cache=True)
def top_k_into(values, k, mask, scratch):
    """Write to ``mask`` the ``k`` largest ``values`` (ties by lower index), in O(N) with no allocation."""
    n = values.shape[0]
    if k >= n:
        mask[:] = True
        return mask
    threshold = _kth_largest(values, k, scratch)
    count = 0
    for i in range(n):
        mask[i] = values[i] > threshold
        if mask[i]:
            count += 1
    for i in range(n):
        if count == k:
            break
        if values[i] == threshold and not mask[i]:
            mask[i] = True
            count += 1
    return mask


@numba.njit(cache=True)
def top_k_repair(values, mask):
    """Make ``mask`` the top of ``values`` again (ties by lower index), in place, keeping its size.

    While the lowest-ranked member (least value, then highest index) ranks below the
    highest-ranked outsider, the two swap: each swap fixes one changed value, so a round
    in which ``c`` values changed costs ``c + 1`` scans of the ``N`` arms and no allocation.
    """
    n = values.shape[0]
    while True:
        worst = -1
        best = -1
        for i in range(n):
            v = values[i]
            if mask[i]:
                if worst < 0 or v < values[worst] or (v == values[worst] and i > worst):
                    worst = i
            elif best < 0 or v > values[best] or (v == values[best] and i < best):
                best = i
        if worst < 0 or best < 0:
            return
        if values[best] > values[worst] or (values[best] == values[worst] and best < worst):
            mask[worst] = False
            mask[best] = True
        else:
            return


@numba.njit(cache=True)
def top_k(values, k):
    """Mask of the ``k`` largest ``values`` (the top-K maximisation oracle; ties by lower index)."""
    return top_k_into(values, k, np.zeros(values.shape[0], dtype=np.bool_), np.empty(values.shape[0]))


@numba.njit(cache=True)
def grown(table, needed, kind, omega, sigma, epsilon):
    """``table`` (radius by count) extended to cover counts up to ``needed`` (doubling its length)."""
    size = table.shape[0]
    if needed < size:
        return table
    new_size = max(2 * size, needed + 1, 64)
    out = np.empty(new_size)
    out[:size] = table
    for t in range(size, new_size):
        if t == 0:
            out[t] = np.inf
        elif kind == LIL:
            out[t] = lil(t, omega, sigma, epsilon)
        else:
            out[t] = 1.0 / math.sqrt(t)
    return out


@numba.njit(cache=True)
def lucb_coef(t, delta, n_arms, sigma):
    """LUCB1's radius times ``sqrt(n_i)`` at time ``t``: :math:`\\sigma\\sqrt{2\\log(k_1 N t^4/\\delta)}`."""
    return sigma * math.sqrt(2.0 * math.log(LUCB_K1 * n_arms * float(t) ** 4 / delta))


@numba.njit(cache=True)
def lucb_pair_into(n, total, k, table_high, table_low, coef, means, high, lower, upper, scratch):
    """LUCB's critical pair and stopping test (Kalyanakrishnan et al. 2012; Jiang et al. 2017, Alg. 1).

    ``High`` is the empirical top ``k``; ``h = argmin_{High} (mean - u)``, ``l = argmax_{Low} (mean + u)``
    with ``u_i = coef * table_high[n_i]`` in High and ``coef * table_low[n_i]`` outside; stop when
    ``mean_h - u_h >= mean_l + u_l``. Writes the means, the High mask and every arm's bounds to the
    given work arrays (no allocation: the simulator's inner loop) and returns ``(h, l, stop)``.
    """
    size = n.shape[0]
    for i in range(size):
        means[i] = total[i] / n[i]
    top_k_into(means, k, high, scratch)
    h = -1
    l = -1
    for i in range(size):
        r = coef * (table_high[n[i]] if high[i] else table_low[n[i]])
        lower[i] = means[i] - r
        upper[i] = means[i] + r
        if high[i]:
            if h < 0 or lower[i] < lower[h]:
                h = i
        elif l < 0 or upper[i] > upper[l]:
            l = i
    return h, l, l < 0 or lower[h] >= upper[l]


@numba.njit(cache=True)
def lucb_pair_kept(n, k, table_high, table_low, coef, means, high):
    """:func:`lucb_pair_into`'s ``(h, l, stop)`` from kept ``means`` and top-``k`` mask ``high``
    (:func:`top_k_repair` after the means of the pulled arms were updated).
    """
    size = n.shape[0]
    top_k_repair(means, high)
    h = -1
    l = -1
    lower_h = 0.0
    upper_l = 0.0
    for i in range(size):
        if high[i]:
            lower = means[i] - coef * table_high[n[i]]
            if h < 0 or lower < lower_h:
                h = i
                lower_h = lower
        else:
            upper = means[i] + coef * table_low[n[i]]
            if l < 0 or upper > upper_l:
                l = i
                upper_l = upper
    return h, l, l < 0 or lower_h >= upper_l


@numba.njit(cache=True)
def lucb_pair(n, total, k, table_high, table_low, coef):
    """:func:`lucb_pair_into` with fresh arrays: ``(h, l, stop, lower, upper)``."""
    size = n.shape[0]
    lower = np.empty(size)
    upper = np.empty(size)
    h, l, stop = lucb_pair_into(n, total, k, table_high, table_low, coef, np.empty(size),
                                np.zeros(size, dtype=np.bool_), lower, upper, np.empty(size))
    return h, l, stop, lower, upper


@numba.njit(cache=True)
def clucb_step_into(n, total, k, table, means, m, m_tilde, revised, radius, scratch):
    """Lil'CLUCB's test and choice (Jiang et al. 2017, Sec. 4.1, Alg. 2; Chen et al. 2014's CLUCB).

    ``M`` = empirical top ``k`` (the oracle on the means); revised means are ``mean - u`` in ``M`` and
    ``mean + u`` outside (``u_i = table[n_i]``); ``M~`` = top ``k`` of the revised means. Stop when
    ``M == M~``; otherwise the arm of largest radius in the symmetric difference is sampled. Writes to
    the work arrays and returns ``(arm, stop)`` (``arm = -1`` when stopping).
    """
    size = n.shape[0]
    for i in range(size):
        means[i] = total[i] / n[i]
        radius[i] = table[n[i]]
    top_k_into(means, k, m, scratch)
    for i in range(size):
        revised[i] = means[i] - radius[i] if m[i] else means[i] + radius[i]
    top_k_into(revised, k, m_tilde, scratch)
    arm = -1
    for i in range(size):
        if m[i] != m_tilde[i] and (arm < 0 or radius[i] > radius[arm]):
            arm = i
    return arm, arm < 0


@numba.njit(cache=True)
def clucb_step_kept(n, table, means, m, m_tilde, revised, before, changed):
    """:func:`clucb_step_into`'s ``(arm, stop)`` from kept means, masks and revised means.

    ``changed`` is the arm whose mean and count changed since the last call (-1: none). ``M`` is
    repaired first; the revised means of ``changed`` and of every arm that entered or left ``M``
    are recomputed (``mean - u`` in ``M``, ``mean + u`` outside, ``u_i = table[n_i]``), then ``M~``
    is repaired. ``before`` is a work mask.
    """
    size = n.shape[0]
    for i in range(size):
        before[i] = m[i]
    top_k_repair(means, m)
    for i in range(size):
        if i == changed or m[i] != before[i]:
            revised[i] = means[i] - table[n[i]] if m[i] else means[i] + table[n[i]]
    top_k_repair(revised, m_tilde)
    arm = -1
    radius_arm = 0.0
    for i in range(size):
        if m[i] != m_tilde[i]:
            radius = table[n[i]]
            if arm < 0 or radius > radius_arm:
                arm = i
                radius_arm = radius
    return arm, arm < 0


@numba.njit(cache=True)
def clucb_step(n, total, k, table):
    """:func:`clucb_step_into` with fresh arrays: ``(arm, stop, lower, upper)``."""
    size = n.shape[0]
    means = np.empty(size)
    radius = np.empty(size)
    arm, stop = clucb_step_into(n, total, k, table, means, np.zeros(size, dtype=np.bool_),
                                np.zeros(size, dtype=np.bool_), np.empty(size), radius, np.empty(size))
    return arm, stop, means - radius, means + radius


@numba.njit(cache=True)
def lil_ucb_index(n, total, beta, table):
    """Lil'UCB's index ``mean + (1 + beta) U(T_i, delta)`` (Jamieson et al. 2014, Alg. 1;
    ``table[t] = U(t, delta)``).
    """
    out = np.empty(n.shape[0])
    for i in range(n.shape[0]):
        out[i] = total[i] / n[i] + (1.0 + beta) * table[n[i]]
    return out


@numba.njit(cache=True)
def lil_ucb_stop(n, lam):
    """Lil'UCB's stopping time: some arm has ``T_i >= 1 + lambda * sum_{j != i} T_j``; returns that arm or -1."""
    t = 0
    for i in range(n.shape[0]):
        t += n[i]
    for i in range(n.shape[0]):
        if n[i] >= 1.0 + lam * (t - n[i]):
            return i
    return -1
