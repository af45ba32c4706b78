"""Thompson sampling's Beta-draw kernels before the counter-based sampler (frozen copy, timed side by side
by ``benchmarks.bench_simulator``): ``1 + 4K + 8`` Generator uniforms per decision, Box-Muller normals,
Marsaglia-Tsang Gammas. Not part of the package.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pmcbandit.policies.base import (
    argmax_random,
    to_loss_scale,
)

__all__ = [
    "BetaCounts",
    "SLACK_UNIFORMS",
    "UNIFORMS_PER_ARM",
    "n_select_uniforms",
    "beta_draws_kernel",
    "select_kernel",
    "scaled_select_kernel",
    "coin",
    "resample_kernel",
    "expected_counts_kernel",

]

#: Uniforms one arm consumes when no Gamma draw is rejected (2 Gammas x (1 normal + 1 uniform)).
UNIFORMS_PER_ARM = 4
#: Extra buffer slots per decision that absorb the first rejections.
SLACK_UNIFORMS = 8

_SAMPLERS = ("numba", "pymc")
_TWO_PI = 2.0 * np.pi
_INV_2_53 = 1.0 / 9007199254740992.0
_U64 = np.uint64


class BetaCounts(NamedTuple):
    """Thompson's extra state: per-arm resampled successes and failures (float64: whole numbers
    until a re-centring replaces them by their expectations)."""

    successes: np.ndarray
    failures: np.ndarray


def n_select_uniforms(n_arms: int) -> int:
    """Length of the uniform buffer one decision takes: ``1 + 4 K + 8``."""
    return 1 + UNIFORMS_PER_ARM * int(n_arms) + SLACK_UNIFORMS


# --- uniform source: the buffer, then a SplitMix64 fallback ---------------------------
# stream[0]: next buffer position; stream[1]: SplitMix64 state; stream[2]: 1 once seeded;
# stream[3]: 1 while a Box-Muller normal is cached (its value lives in cache[0]).


@numba.njit(cache=True, inline="always")
def _splitmix64(stream):
    stream[1] += _U64(0x9E3779B97F4A7C15)
    z = stream[1]
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


@numba.njit(cache=True)
def _next_uniform(uniforms, stream):
    pos = stream[0]
    if pos < uniforms.shape[0]:
        stream[0] = pos + _U64(1)
        return uniforms[pos]
    if stream[2] == _U64(0):
        # Seed from every slot: a deterministic function of what the Generator gave.
        h = _U64(0x6A09E667F3BCC909)
        for i in range(uniforms.shape[0]):
            stream[1] = h ^ _U64(uniforms[i] * 9007199254740992.0)
            h = _splitmix64(stream)
        stream[1] = h
        stream[2] = _U64(1)
    return (_splitmix64(stream) >> _U64(11)) * _INV_2_53


@numba.njit(cache=True)
def _next_normal(uniforms, stream, cache):
    if stream[3] == _U64(1):
        stream[3] = _U64(0)
        return cache[0]
    # 1 - u lies in (0, 1], so the log is finite.
    radius = np.sqrt(-2.0 * np.log(1.0 - _next_uniform(uniforms, stream)))
    angle = _TWO_PI * _next_uniform(uniforms, stream)
    cache[0] = radius * np.sin(angle)
    stream[3] = _U64(1)
    return radius * np.cos(angle)


@numba.njit(cache=True)
def _gamma(shape, uniforms, stream, cache):
    """Gamma(shape, 1) for shape >= 1 by Marsaglia & Tsang (2000), Sec. 4."""
    d = shape - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        x = _next_normal(uniforms, stream, cache)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = _next_uniform(uniforms, stream)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:  # squeeze: accepts ~98% without logs
            return d * v
        if np.log(u) < 0.5 * x2 + d * (1.0 - v + np.log(v)):
            return d * v


@numba.njit(cache=True)
def beta_draws_kernel(successes, failures, uniforms):
    """``theta_k ~ Beta(S_k + 1, F_k + 1)`` for every arm from one uniform buffer.

    Parameters
    ----------
    successes, failures : ndarray of float64, shape (K,)
    uniforms : ndarray of float64, shape (n_select_uniforms(K),)
        Uniforms in [0, 1); slot 0 is left for the tie-break of :func:`select_kernel`.

    Returns
    -------
    ndarray of float64, shape (K,)
    """
    stream = np.zeros(4, dtype=np.uint64)
    stream[0] = 1
    cache = np.zeros(1)
    k = successes.shape[0]
    theta = np.empty(k)
    for i in range(k):
        ga = _gamma(successes[i] + 1.0, uniforms, stream, cache)
        gb = _gamma(failures[i] + 1.0, uniforms, stream, cache)
        theta[i] = ga / (ga + gb)
    return theta


@numba.njit(cache=True)
def select_kernel(successes, failures, uniforms):
    """Thompson decision: argmax of posterior draws, ties by ``uniforms[0]`` (Alg. 2).

    ``uniforms`` must hold ``n_select_uniforms(K)`` values from
    ``Generator.random``; the result is a pure function of the three arrays.
    """
    return argmax_random(beta_draws_kernel(successes, failures, uniforms), uniforms[0])


@numba.njit(cache=True)
def scaled_select_kernel(successes, failures, scale, uniforms):
    """Thompson decision under per-arm ranges (App. B): argmax of ``scale[k] * (theta_k - 1)``.

    ``theta_k`` is a draw of arm ``k``'s mean normalised reward ``1 - loss/scale[k]``, so
    ``scale[k] * (theta_k - 1)`` is a draw of ``-E[loss_k]`` on the scale common to all arms
    (:func:`~pmcbandit.policies.base.to_loss_scale`, which also says what an arm whose range is
    still 0 gets). Same buffer and consumption as :func:`select_kernel`.
    """
    theta = beta_draws_kernel(successes, failures, uniforms)
    return argmax_random(to_loss_scale(theta, scale, theta.shape[0]), uniforms[0])


@numba.njit(cache=True)
def coin(r, u):
    """Resampled Bernoulli(``r``) outcome from the uniform ``u``: success iff ``u < r``."""
    return u < r


@numba.njit(cache=True)
def resample_kernel(successes, failures, arm, r, u):
    """In-place Alg. 2 update of the counts (for the simulator): coin, then ``S`` or ``F`` += 1."""
    if u < r:
        successes[arm] += 1
    else:
        failures[arm] += 1


@numba.njit(cache=True)
def expected_counts_kernel(n, loss_sum, scale, successes, failures):
    """Counts after a re-centring, in place: ``F_k = L_k / s_k``, ``S_k = n_k - F_k``.

    The expectation of Alg. 2's counts given the arm's losses under the new centre and
    scale (``E[coin] = 1 - loss/s``); an arm whose scale is 0 has only zero losses: all
    successes. ``F_k`` is capped at ``n_k`` against rounding.
    """
    for i in range(n.shape[0]):
        f = min(loss_sum[i] / scale[i], float(n[i])) if scale[i] > 0.0 else 0.0
        failures[i] = f
        successes[i] = float(n[i]) - f
