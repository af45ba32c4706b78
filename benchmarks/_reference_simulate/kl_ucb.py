"""KL-UCB's index by bisection of the bracket ``[mean, mean + sqrt(d/2)]`` to width 1e-6, every arm every
round (frozen copy, timed side by side by ``benchmarks.bench_simulator``). Not part of the package.
"""

from __future__ import annotations

import numba
import numpy as np


__all__ = ["PRECISION", "MAX_ITER", "kl_bernoulli", "kl_upper_bound", "exploration", "index"]

#: Width of the final bisection bracket.
PRECISION = 1e-6
#: Cap on the number of bisection steps (the Pinsker bracket needs at most ~20).
MAX_ITER = 50
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
def kl_upper_bound(p, d, precision, max_iter):
    """``sup {q in [p, 1] : KL(p, q) <= d}`` by bisection (see the module docstring).

    Examples
    --------
    >>> kl_upper_bound(1.0, 0.3, 1e-6, 50)
    1.0
    >>> abs(kl_bernoulli(0.5, kl_upper_bound(0.5, 0.1, 1e-9, 60)) - 0.1) < 1e-7
    True
    """
    if p >= 1.0:
        return 1.0
    lo = p
    hi = min(1.0, p + np.sqrt(0.5 * d))
    if hi >= 1.0 and kl_bernoulli(p, 1.0) <= d:
        return 1.0
    i = 0
    while hi - lo > precision and i < max_iter:
        mid = 0.5 * (lo + hi)
        if kl_bernoulli(p, mid) > d:
            hi = mid
        else:
            lo = mid
        i += 1
    return hi


@numba.njit(cache=True)
def exploration(t, c):
    """``f(t) = log t + c log log t`` for ``t >= 3``, and ``f(3)`` below."""
    t = max(t, 3)
    log_t = np.log(t)
    return log_t + c * np.log(log_t)


@numba.njit(cache=True)
def index(n, mean, var, t, params):
    """KL-UCB index of every arm; ``params = (c,)`` of ``f(t)`` (``var`` unused)."""
    f = exploration(t, params[0])
    out = np.empty(n.shape[0])
    for i in range(n.shape[0]):
        out[i] = kl_upper_bound(mean[i], f / n[i], PRECISION, MAX_ITER) if n[i] > 0 else np.inf
    return out
