"""Stream states of the stopping-time simulator's replications, without a Generator per replication.

Replication ``r`` owns the words that ``chain_seeds`` (:mod:`pmcbandit.arms.evidence._kernels`) draws
from ``rng.spawn(reps)[r]``: the first ``4 (N + 1)`` outputs of the PCG64 bit generator seeded by the
``r``-th child of the seed's SeedSequence (a full-range ``integers`` call returns the raw outputs),
an all-zero state replaced as ``chain_seeds`` does. Building those Generators cost more than a
short replication, so :func:`replication_words` computes the same words in numba: the children's
seed words by the SeedSequence hash of :mod:`pmcbandit.runtime.streams` (the pool after the
parent's entropy and spawn key is computed once, each child only mixes in its index), then PCG64's
seeding and XSL-RR outputs (O'Neill 2014; NumPy's ``pcg64.c``) in 128-bit arithmetic on 64-bit
halves. The result is checked against NumPy on the first replication; any mismatch, or another
bit generator, falls back to NumPy's own objects.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.runtime.streams import _prefix_pool, _seed_block

__all__ = ["replication_words"]

_U64 = np.uint64
_M32 = _U64(0xFFFFFFFF)
# PCG64's 128-bit multiplier (NumPy's PCG_DEFAULT_MULTIPLIER_HIGH / _LOW).
_MUL_HI = _U64(2549297995355413924)
_MUL_LO = _U64(4865540595714422341)
_NONZERO = _U64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, inline="always")
def _mul_64x64(a, b):
    """``(high, low)`` words of the 128-bit product of two uint64."""
    a_lo, a_hi = a & _M32, a >> _U64(32)
    b_lo, b_hi = b & _M32, b >> _U64(32)
    p0, p1, p2, p3 = a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi
    mid = (p0 >> _U64(32)) + (p1 & _M32) + (p2 & _M32)
    return p3 + (p1 >> _U64(32)) + (p2 >> _U64(32)) + (mid >> _U64(32)), (p0 & _M32) | (mid << _U64(32))


@numba.njit(cache=True, inline="always")
def _step(s_hi, s_lo, i_hi, i_lo):
    """PCG's LCG step ``s * multiplier + inc`` modulo 2^128."""
    hi, lo = _mul_64x64(s_lo, _MUL_LO)
    hi = hi + s_hi * _MUL_LO + s_lo * _MUL_HI
    new_lo = lo + i_lo
    return hi + i_hi + (_U64(1) if new_lo < lo else _U64(0)), new_lo


@numba.njit(cache=True)
def _pcg64_words(seed, count, out):
    """The first ``count`` outputs of PCG64 seeded with the 4 words ``seed`` (NumPy's ``pcg64_set_seed``)."""
    i_hi = (seed[2] << _U64(1)) | (seed[3] >> _U64(63))
    i_lo = (seed[3] << _U64(1)) | _U64(1)
    s_hi, s_lo = _step(_U64(0), _U64(0), i_hi, i_lo)
    lo = s_lo + seed[1]
    s_hi = s_hi + seed[0] + (_U64(1) if lo < s_lo else _U64(0))
    s_lo = lo
    s_hi, s_lo = _step(s_hi, s_lo, i_hi, i_lo)
    for j in range(count):
        s_hi, s_lo = _step(s_hi, s_lo, i_hi, i_lo)
        x = s_hi ^ s_lo
        rot = s_hi >> _U64(58)
        out[j] = (x >> rot) | (x << ((_U64(64) - rot) & _U64(63)))


@numba.njit(cache=True)
def _fill(seeds, words):
    flat = words.reshape(words.shape[0], -1)
    for r in range(seeds.shape[0]):
        _pcg64_words(seeds[r], flat.shape[1], flat[r])


def _numpy_words(seq, bit_generator, n_words):
    return bit_generator(seq).random_raw(n_words)


def replication_words(rng: np.random.Generator, reps: int, n_arms: int, *, private: bool) -> np.ndarray:
    """``(reps, N + 1, 4)`` uint64 words: the arms' states then the uniform stream's, per replication.

    The words of ``rng``'s next ``reps`` SeedSequence children. A ``private`` Generator (built by the
    caller and discarded) takes the numba path; a caller's Generator spawns its children through
    NumPy, so that its SeedSequence advances as ``rng.spawn(reps)`` would advance it.
    """
    seq = rng.bit_generator.seed_seq
    n_words = 4 * (n_arms + 1)
    words = np.empty((reps, n_arms + 1, 4), dtype=np.uint64)
    first = seq.n_children_spawned
    fast = (private and reps > 0 and isinstance(rng.bit_generator, np.random.PCG64)
            and isinstance(seq, np.random.SeedSequence))
    if fast:
        try:
            pool, h = _prefix_pool(seq.entropy, tuple(seq.spawn_key), seq.pool_size)
            seeds = _seed_block(np.asarray(pool, dtype=np.uint64), _U64(h), _U64(first), reps)
            _fill(seeds, words)
        except (ValueError, TypeError, OverflowError):
            fast = False
    if fast:
        check = np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, first), pool_size=seq.pool_size)
        fast = np.array_equal(words[0].ravel(), _numpy_words(check, np.random.PCG64, n_words))
    if not fast:
        children = seq.spawn(reps)
        for r, child in enumerate(children):
            words[r] = _numpy_words(child, type(rng.bit_generator), n_words).reshape(n_arms + 1, 4)
    # An all-zero state is the xoshiro generator's only fixed point (chain_seeds' rule).
    words[..., 0][~words.any(axis=2)] = _NONZERO
    return words
