r"""The first standard normal of a pull's own stream, computed inside numba.

A live run (:func:`~pmcbandit.full_bandit.identify.identify_full_bandit`) makes pull ``j`` of
support row ``r`` with the Generator :meth:`pmcbandit.runtime.streams.Streams.pull_rng` hands out,
``Generator(PCG64(SeedSequence(entropy, spawn_key=arm_key + (r, j))))``, and a
:class:`~pmcbandit.full_bandit.environment.FullBanditEnvironment` draws one
``rng.standard_normal()`` from it. The simulator (:mod:`~pmcbandit.full_bandit.simulate`) needs
the same number for every pull without building a Generator per pull, so this module reproduces
the three steps bit for bit:

1. the seed words: the hash of :mod:`pmcbandit.runtime.streams` (NumPy's
   ``SeedSequence.generate_state(4, uint64)``, from the row's pre-mixed pool and the word ``j``),
   written out for NumPy's pool of 4 words and a one-word ``j`` so that a pull allocates nothing;
2. PCG64 (O'Neill 2014; NumPy's ``pcg64.h``): the 128-bit LCG
   :math:`s \leftarrow s\,a + c \bmod 2^{128}` with the XSL-RR output, seeded as
   ``pcg_setseq_128_srandom_r`` does (``initstate`` from words 0-1, ``initseq`` from words 2-3,
   high word first; :math:`c = 2\,\mathrm{initseq} + 1`);
3. NumPy's ziggurat ``random_standard_normal`` (Marsaglia & Tsang 2000, with NumPy's 256-layer
   tables, which numba ships for its own ``Generator`` support).

The 128-bit products are assembled from 32-bit halves. :func:`pull_normal_matches_numpy` compares
a few pulls with NumPy's own Generator; the simulator calls it once per run and refuses to run
(``RuntimeError``) if it ever disagrees, rather than simulate different noise than the live run.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.np.random._constants import (fi_double, ki_double, wi_double, ziggurat_nor_inv_r,  # noqa: PLC2701
                                        ziggurat_nor_r)

from pmcbandit.runtime.streams import _INIT_B, _MIX_L, _MIX_R, _MULT_A, _MULT_B, _prefix_pool  # noqa: PLC2701

__all__ = ["arm_seed_sequence", "row_pools", "pull_normal", "pull_normal_into", "pull_normal_matches_numpy"]

_M32 = np.uint64(0xFFFFFFFF)
_MULT_HI = np.uint64(0x2360ED051FC65DA4)
_MULT_LO = np.uint64(0x4385DF649FCCF645)
_KI = np.ascontiguousarray(ki_double, dtype=np.uint64)
_WI = np.ascontiguousarray(wi_double, dtype=np.float64)
_FI = np.ascontiguousarray(fi_double, dtype=np.float64)
_NOR_R = float(ziggurat_nor_r)
_NOR_INV_R = float(ziggurat_nor_inv_r)


@numba.njit(cache=True)
def _mul_full(a, b):
    # the 128-bit product of two uint64 as (high, low), from 32-bit halves
    a_lo = a & _M32
    a_hi = a >> np.uint64(32)
    b_lo = b & _M32
    b_hi = b >> np.uint64(32)
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    carry = ((p0 >> np.uint64(32)) + (p1 & _M32) + (p2 & _M32)) >> np.uint64(32)
    lo = p0 + (p1 << np.uint64(32)) + (p2 << np.uint64(32))
    hi = p3 + (p1 >> np.uint64(32)) + (p2 >> np.uint64(32)) + carry
    return hi, lo


@numba.njit(cache=True)
def _step(s_hi, s_lo, inc_hi, inc_lo):
    # s * a + c mod 2^128
    hi, lo = _mul_full(s_lo, _MULT_LO)
    hi = hi + s_hi * _MULT_LO + s_lo * _MULT_HI
    new_lo = lo + inc_lo
    carry = np.uint64(1) if new_lo < lo else np.uint64(0)
    return hi + inc_hi + carry, new_lo


@numba.njit(cache=True)
def _output(s_hi, s_lo):
    # XSL-RR: rotate (high ^ low) right by the top 6 bits of the state
    x = s_hi ^ s_lo
    rot = s_hi >> np.uint64(58)
    return (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))


@numba.njit(cache=True)
def _next_double(state):
    state[0], state[1] = _step(state[0], state[1], state[2], state[3])
    return float(_output(state[0], state[1]) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(cache=True)
def _next_uint64(state):
    state[0], state[1] = _step(state[0], state[1], state[2], state[3])
    return _output(state[0], state[1])


@numba.njit(cache=True)
def _seed_into(state, w0, w1, w2, w3):
    # pcg_setseq_128_srandom_r: state 0, inc = 2 initseq + 1, step, add initstate, step
    inc_hi = (w2 << np.uint64(1)) | (w3 >> np.uint64(63))
    inc_lo = (w3 << np.uint64(1)) | np.uint64(1)
    s_hi, s_lo = _step(np.uint64(0), np.uint64(0), inc_hi, inc_lo)
    lo = s_lo + w1
    carry = np.uint64(1) if lo < s_lo else np.uint64(0)
    s_hi, s_lo = _step(s_hi + w0 + carry, lo, inc_hi, inc_lo)
    state[0], state[1], state[2], state[3] = s_hi, s_lo, inc_hi, inc_lo


@numba.njit(cache=True)
def _standard_normal(state):
    # NumPy's random_standard_normal (distributions.c), ziggurat with 256 layers
    while True:
        r = _next_uint64(state)
        idx = int(r & np.uint64(0xFF))
        r = r >> np.uint64(8)
        sign = r & np.uint64(1)
        rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
        x = float(rabs) * _WI[idx]
        if sign == np.uint64(1):
            x = -x
        if rabs < _KI[idx]:
            return x
        if idx == 0:
            while True:
                xx = -_NOR_INV_R * math.log1p(-_next_double(state))
                yy = -math.log1p(-_next_double(state))
                if yy + yy > xx * xx:
                    if (rabs >> np.uint64(8)) & np.uint64(1):
                        return -(_NOR_R + xx)
                    return _NOR_R + xx
        elif (_FI[idx - 1] - _FI[idx]) * _next_double(state) + _FI[idx] < math.exp(-0.5 * x * x):
            return x


@numba.njit(cache=True)
def _hashmix(value, h):
    value = value ^ h
    h = (h * np.uint64(_MULT_A)) & _M32
    value = (value * h) & _M32
    return value ^ (value >> np.uint64(16)), h


@numba.njit(cache=True)
def _mix(x, y):
    r = (np.uint64(_MIX_L) * x - np.uint64(_MIX_R) * y) & _M32
    return r ^ (r >> np.uint64(16))


@numba.njit(cache=True)
def _out_word(p, g):
    x = p ^ g
    g = (g * np.uint64(_MULT_B)) & _M32
    x = (x * g) & _M32
    return x ^ (x >> np.uint64(16)), g


@numba.njit(cache=True)
def _seed_words(pool, h, j):
    # mix the word j into the 4-word pool, hash out 8 words, join pairs into 4 uint64 (low word first)
    w = np.uint64(j)
    v, h = _hashmix(w, h)
    p0 = _mix(pool[0], v)
    v, h = _hashmix(w, h)
    p1 = _mix(pool[1], v)
    v, h = _hashmix(w, h)
    p2 = _mix(pool[2], v)
    v, h = _hashmix(w, h)
    p3 = _mix(pool[3], v)
    g = np.uint64(_INIT_B)
    a, g = _out_word(p0, g)
    b, g = _out_word(p1, g)
    c, g = _out_word(p2, g)
    d, g = _out_word(p3, g)
    e, g = _out_word(p0, g)
    f, g = _out_word(p1, g)
    x, g = _out_word(p2, g)
    y, g = _out_word(p3, g)
    shift = np.uint64(32)
    return a | (b << shift), c | (d << shift), e | (f << shift), x | (y << shift)


@numba.njit(cache=True)
def pull_normal_into(state, pools, hashes, row, j):
    """:func:`pull_normal` using ``state`` (a uint64 array of 4) as the generator's work space."""
    w0, w1, w2, w3 = _seed_words(pools[row], hashes[row], j)
    _seed_into(state, w0, w1, w2, w3)
    return _standard_normal(state)


@numba.njit(cache=True)
def pull_normal(pools, hashes, row, j):
    """The first ``standard_normal()`` of pull ``j`` of row ``row``'s stream (``pools``/``hashes`` from
    :func:`row_pools`; ``0 <= j < 2**32``).
    """
    return pull_normal_into(np.empty(4, dtype=np.uint64), pools, hashes, row, j)


def arm_seed_sequence(root: np.random.Generator) -> np.random.SeedSequence:
    """The arms' parent seed of a run seeded by ``root``, as
    :meth:`Streams.from_generator <pmcbandit.runtime.streams.Streams.from_generator>` derives it (the
    second of ``root.spawn(2)``), without building the run's streams.
    """
    return root.spawn(2)[1].bit_generator.seed_seq


def row_pools(arm_seq: np.random.SeedSequence, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's seed pool after ``entropy, arm_key, row`` (:mod:`pmcbandit.runtime.streams`), as
    ``(pools (rows, 4) uint64, hashes (rows,) uint64)`` for :func:`pull_normal`.
    """
    if arm_seq.pool_size != 4:
        raise ValueError(f"The 'arm_seq' parameter of row_pools must use NumPy's pool of 4 words. "
                         f"Got pool_size={arm_seq.pool_size!r} instead.")
    pools = np.empty((rows, 4), dtype=np.uint64)
    hashes = np.empty(rows, dtype=np.uint64)
    for r in range(rows):
        pool, h = _prefix_pool(arm_seq.entropy, (*arm_seq.spawn_key, r), 4)
        pools[r] = pool
        hashes[r] = h
    return pools, hashes


def pull_normal_matches_numpy(arm_seq: np.random.SeedSequence, pools, hashes, pulls=((0, 0), (-1, 1))) -> bool:
    """Whether :func:`pull_normal` equals the first normal of NumPy's own
    ``Generator(PCG64(SeedSequence(entropy, spawn_key=arm_key + (r, j))))`` for ``pulls`` (``r = -1``:
    the last row).
    """
    for r, j in pulls:
        r = r % pools.shape[0]
        seq = np.random.SeedSequence(arm_seq.entropy, spawn_key=(*arm_seq.spawn_key, r, j))
        if pull_normal(pools, hashes, r, j) != np.random.Generator(np.random.PCG64(seq)).standard_normal():
            return False
    return True
