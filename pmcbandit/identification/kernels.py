r"""Numba kernels shared by the identification algorithms and the stopping-time simulator.

One implementation of each rule: the algorithms' ``select``/``stop``/``recommend``
(:mod:`pmcbandit.identification`) and the simulator's loop
(:mod:`pmcbandit.identification.simulate`) call these functions on the same per-arm arrays
``n`` (rewards per arm) and ``total`` (their sums).

Radii (``kind``): :data:`LIL` is :func:`~pmcbandit.identification.radii.lil` with the confidence
``omega_high`` for arms in the empirical top ``k`` and ``omega_low`` for the others (LUCB++'s split,
Simchowitz, Jamieson & Recht 2017; Jiang et al. 2017, Alg. 1); :data:`LUCB` is LUCB1's anytime
radius :func:`~pmcbandit.identification.radii.lucb_radius` at time ``t`` (Kalyanakrishnan et al.
2012). Ties in the empirical means are broken by arm index (the lower index ranks higher), so
every kernel is a deterministic function of its arrays.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.identification.radii import lil, lucb_radius

__all__ = ["LIL", "LUCB", "LUCB_BOTH", "LUCB_RANDOM", "CLUCB", "LIL_UCB", "top_k", "radii", "lucb_pair",
           "clucb_step", "lil_ucb_index", "lil_ucb_stop"]

# radius kinds
LIL = 0
LUCB = 1
# rules (KernelSpec.rule)
LUCB_BOTH = 0
LUCB_RANDOM = 1
CLUCB = 2
LIL_UCB = 3


@numba.njit(cache=True)
def top_k(values, k):
    """Mask of the ``k`` largest ``values`` (the top-K maximisation oracle; ties by lower index)."""
    order = np.argsort(-values, kind="mergesort")
    mask = np.zeros(values.shape[0], dtype=np.bool_)
    for j in range(k):
        mask[order[j]] = True
    return mask


@numba.njit(cache=True)
def radii(n, high, kind, omega_high, omega_low, sigma, epsilon, t, delta):
    """Per-arm confidence radii (module docstring)."""
    out = np.empty(n.shape[0])
    for i in range(n.shape[0]):
        if kind == LIL:
            out[i] = lil(n[i], omega_high if high[i] else omega_low, sigma, epsilon)
        else:
            out[i] = lucb_radius(n[i], t, delta, n.shape[0], sigma)
    return out


@numba.njit(cache=True)
def lucb_pair(n, total, k, kind, omega_high, omega_low, sigma, epsilon, t, delta):
    """LUCB's critical pair and stopping test (Kalyanakrishnan et al. 2012; Jiang et al. 2017, Alg. 1).

    ``High`` is the empirical top ``k``; ``h = argmin_{High} (mean - u)``, ``l = argmax_{Low} (mean + u)``;
    stop when ``mean_h - u_h >= mean_l + u_l``. Returns ``(h, l, stop, lower, upper)`` with every
    arm's confidence bounds.
    """
    means = total / n
    high = top_k(means, k)
    r = radii(n, high, kind, omega_high, omega_low, sigma, epsilon, t, delta)
    lower = means - r
    upper = means + r
    h = -1
    l = -1
    for i in range(n.shape[0]):
        if high[i]:
            if h < 0 or lower[i] < lower[h]:
                h = i
        else:
            if l < 0 or upper[i] > upper[l]:
                l = i
    stop = l < 0 or lower[h] >= upper[l]
    return h, l, stop, lower, upper


@numba.njit(cache=True)
def clucb_step(n, total, k, omega, sigma, epsilon):
    """lil'CLUCB's test and choice (Jiang et al. 2017, Sec. 4.1, Alg. 2; Chen et al. 2014's CLUCB).

    ``M`` = empirical top ``k`` (the oracle on the means); revised means are ``mean - u`` in ``M`` and
    ``mean + u`` outside; ``M~`` = top ``k`` of the revised means. Stop when ``M == M~``; otherwise the
    arm of largest radius in the symmetric difference is sampled. Returns ``(arm, stop, lower, upper)``
    (``arm = -1`` when stopping).
    """
    means = total / n
    m = top_k(means, k)
    r = np.empty(n.shape[0])
    for i in range(n.shape[0]):
        r[i] = lil(n[i], omega, sigma, epsilon)
    revised = np.where(m, means - r, means + r)
    m_tilde = top_k(revised, k)
    arm = -1
    for i in range(n.shape[0]):
        if m[i] != m_tilde[i] and (arm < 0 or r[i] > r[arm]):
            arm = i
    return arm, arm < 0, means - r, means + r


@numba.njit(cache=True)
def lil_ucb_index(n, total, beta, omega, sigma, epsilon):
    """lil'UCB's index ``mean + (1 + beta) U(T_i, delta)`` (Jamieson et al. 2014, Alg. 1; the "+2" radius)."""
    out = np.empty(n.shape[0])
    for i in range(n.shape[0]):
        out[i] = total[i] / n[i] + (1.0 + beta) * lil(n[i], omega, sigma, epsilon)
    return out


@numba.njit(cache=True)
def lil_ucb_stop(n, lam):
    """lil'UCB's stopping time: some arm has ``T_i >= 1 + lambda * sum_{j != i} T_j``; returns that arm or -1."""
    t = 0
    for i in range(n.shape[0]):
        t += n[i]
    for i in range(n.shape[0]):
        if n[i] >= 1.0 + lam * (t - n[i]):
            return i
    return -1
