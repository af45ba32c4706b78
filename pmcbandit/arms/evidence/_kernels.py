"""Numba kernels of the evidence arms: per-chain RNG streams and batched density evaluation.

Every chain owns a xoshiro256** stream (Blackman & Vigna 2021) whose 256-bit
state is drawn from the arm's :class:`numpy.random.Generator` at each pull, so
results are bit-identical for equal seeds whatever the thread schedule, and
numba's global RNG (shared per thread) is never used. The log densities are
called through the model's NUMBA dispatcher ``jit_fn(x) -> (logprior, loglik)``
(see :mod:`pmcbandit.arms.evidence.model_density`), passed as an argument so one
kernel serves every model (numba specialises it per dispatcher).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["chain_seeds", "eval_rows", "next_u64", "uniform", "std_normal"]

_TWO_M53 = 2.0**-53


def chain_seeds(rng: np.random.Generator, n_chains: int) -> np.ndarray:
    """Draw ``(n_chains, 4)`` non-zero xoshiro256** states from ``rng``."""
    seeds = rng.integers(0, np.iinfo(np.uint64).max, size=(n_chains, 4), dtype=np.uint64, endpoint=True)
    # An all-zero state is the generator's only fixed point.
    seeds[~seeds.any(axis=1), 0] = np.uint64(0x9E3779B97F4A7C15)
    return seeds


@numba.njit(inline="always")
def _rotl(x, k):
    return (x << numba.uint64(k)) | (x >> numba.uint64(64 - k))


@numba.njit
def next_u64(s):
    """Advance the state ``s`` (uint64[4], in place) and return the next 64-bit output."""
    result = _rotl(s[1] * numba.uint64(5), 7) * numba.uint64(9)
    t = s[1] << numba.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@numba.njit
def uniform(s):
    """A uniform double in the open interval (0, 1): 53 random bits, offset by half a step."""
    return ((next_u64(s) >> numba.uint64(11)) + 0.5) * _TWO_M53


@numba.njit
def std_normal(s):
    """A standard normal variate by the Box-Muller transform (one of the pair is discarded)."""
    u1 = uniform(s)
    u2 = uniform(s)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


@numba.njit(parallel=False)
def eval_rows(jit_fn, x):
    """``out[i] = (logprior(x[i]), loglik(x[i]))`` for every row of ``x``."""
    n = x.shape[0]
    out = np.empty((n, 2))
    for i in range(n):
        lp, ll = jit_fn(x[i])
        out[i, 0] = lp.item()
        out[i, 1] = ll.item()
    return out
