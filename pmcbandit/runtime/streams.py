"""Random streams of a run, derived from one seed (PyMC style: convert once, then spawn).

``root.spawn(2)`` gives the policy's stream and a parent for the arms. Pull ``j`` of arm
``k`` draws from the stream of ``SeedSequence(entropy, spawn_key=arm_key + (k, j))``, which is
what ``arm_parent.spawn`` would hand out, but addressable: a resumed run re-creates the stream
of any pull without replaying the ones before it, and a pull's stream does not depend on
which other pulls ran, in which order or in which thread.

Cheap construction
------------------
Building that ``SeedSequence`` and seeding a bit generator from it in NumPy costs more than the
rest of a live-loop step (``benchmarks/results/bench_run_loop.md``). The words NumPy derives from the seed
(``SeedSequence.generate_state``) are a fixed hash (O'Neill's ``seed_seq`` as NumPy
implements it, NEP 19) of the words ``entropy, arm_key, k, j``; ``j`` comes last and its words
are mixed into the 4-word pool one at a time, so the pool after ``entropy, arm_key, k`` is
computed once per arm and each pull only mixes in ``j`` and hashes the pool out.
:class:`PullSeed` does that and is handed to the bit generator in place of the
``SeedSequence`` (both are :class:`numpy.random.bit_generator.ISpawnableSeedSequence`). The
words are the same as NumPy's, so the streams are bit-identical to
``Generator(PCG64(SeedSequence(entropy, spawn_key=arm_key + (k, j))))``; ``rng.spawn(n)``
returns the same children (real ``SeedSequence`` objects). :class:`Streams` checks the hash
against NumPy's own ``SeedSequence`` when it is built and falls back to it on any mismatch.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numpy.random.bit_generator import ISpawnableSeedSequence

__all__ = ["Streams", "PullSeed", "ArmSeed"]

_Generator = np.random.Generator

# Constants of NumPy's SeedSequence (numpy/random/bit_generator.pyx).
_INIT_A = 0x43B0D7E5
_MULT_A = 0x931E8875
_INIT_B = 0x8B51F9DD
_MULT_B = 0x58F38DED
_MIX_L = 0xCA01F9DD
_MIX_R = 0x4973F715
_M32 = 0xFFFFFFFF
# 64-bit seed words computed ahead per pull (PCG64 asks for 4), in blocks of _BLOCK pulls.
_CACHED_WORDS64 = 4
_BLOCK = 64


def _words(value) -> list[int]:
    """32-bit little-endian words of a non-negative int or a sequence of them (NumPy's rule)."""
    if isinstance(value, (list, tuple)):
        return [w for v in value for w in _words(v)]
    value = int(value)
    if value < 0:
        raise ValueError(f"seed words must be non-negative. Got {value!r} instead.")
    out = [value & _M32]
    value >>= 32
    while value:
        out.append(value & _M32)
        value >>= 32
    return out


def _hashmix(value: int, h: int) -> tuple[int, int]:
    value ^= h
    h = (h * _MULT_A) & _M32
    value = (value * h) & _M32
    return value ^ (value >> 16), h


def _mix(x: int, y: int) -> int:
    r = (_MIX_L * x - _MIX_R * y) & _M32
    return r ^ (r >> 16)


def _mix_tail(pool: list[int], h: int, words) -> tuple[list[int], int]:
    """Mix entropy words past the pool size into ``pool`` (the last loop of NumPy's mix_entropy)."""
    pool = list(pool)
    for w in words:
        for i in range(len(pool)):
            hw, h = _hashmix(w, h)
            pool[i] = _mix(pool[i], hw)
    return pool, h


def _prefix_pool(entropy: int, spawn_key: tuple, pool_size: int) -> tuple[list[int], int]:
    """Pool and hash constant of NumPy's SeedSequence after the entropy and ``spawn_key`` words.

    Only valid with a non-empty spawn key, when NumPy pads the run entropy to the pool size
    so that every spawn-key word is mixed in by the final loop.
    """
    run = _words(entropy)
    run += [0] * max(0, pool_size - len(run))
    h = _INIT_A
    pool = []
    for w in run[:pool_size]:
        hw, h = _hashmix(w, h)
        pool.append(hw)
    for src in range(pool_size):
        for dst in range(pool_size):
            if src != dst:
                hw, h = _hashmix(pool[src], h)
                pool[dst] = _mix(pool[dst], hw)
    return _mix_tail(pool, h, run[pool_size:] + _words(tuple(spawn_key)))


@numba.njit(cache=True)
def _seed_words(pool, h, tail, n32, as64):
    """Mix the words ``tail`` into a copy of ``pool`` (continuing the hash constant ``h``), then
    hash out ``n32`` 32-bit words: the end of NumPy's ``mix_entropy`` and its ``generate_state``.
    With ``as64`` consecutive pairs are joined low word first (NumPy's little-endian view).
    """
    m32 = np.uint64(0xFFFFFFFF)
    p = pool.copy()
    size = p.shape[0]
    for w in tail:
        for i in range(size):
            v = w ^ h
            h = (h * np.uint64(_MULT_A)) & m32
            v = (v * h) & m32
            v = v ^ (v >> np.uint64(16))
            r = (np.uint64(_MIX_L) * p[i] - np.uint64(_MIX_R) * v) & m32
            p[i] = r ^ (r >> np.uint64(16))
    out = np.empty(n32, dtype=np.uint64)
    g = np.uint64(_INIT_B)
    for i in range(n32):
        v = p[i % size] ^ g
        g = (g * np.uint64(_MULT_B)) & m32
        v = (v * g) & m32
        out[i] = v ^ (v >> np.uint64(16))
    if as64:  # element-wise: array expressions compile numba's ufunc machinery, the costliest part of this kernel
        joined = np.empty(n32 // 2, dtype=np.uint64)
        for i in range(n32 // 2):
            joined[i] = out[2 * i] | (out[2 * i + 1] << np.uint64(32))
        return joined
    return out


@numba.njit(cache=True)
def _seed_block(pool, h, j0, count):
    """``_seed_words(pool, h, [j], 8, True)`` for ``j = j0 .. j0 + count - 1`` (one-word ``j``)."""
    out = np.empty((count, _CACHED_WORDS64), dtype=np.uint64)
    tail = np.empty(1, dtype=np.uint64)
    for r in range(count):
        tail[0] = j0 + np.uint64(r)
        words = _seed_words(pool, h, tail, 2 * _CACHED_WORDS64, True)
        for c in range(_CACHED_WORDS64):  # element-wise: a row assignment compiles numba's shape-error formatting
            out[r, c] = words[c]
    return out


class ArmSeed(NamedTuple):
    """What every pull seed of one arm shares: NumPy's ``SeedSequence`` arguments but the pull counter, and the
    pool and hash constant after them (:func:`_prefix_pool`).
    """

    entropy: object
    key: tuple  # the spawn key without the pull counter: the arms' parent's key and the arm
    pool_size: int
    pool: np.ndarray
    h: np.uint64


class PullSeed(ISpawnableSeedSequence):
    """The seed of pull ``j`` of one arm: NumPy's ``SeedSequence(entropy, spawn_key=arm.key + (j,))``, fast.

    ``generate_state`` returns exactly the words the ``SeedSequence`` would (served from a
    block computed ahead for the arm when at most 4 64-bit words are asked, as every NumPy bit
    generator but MT19937 does: ``words64``; then a read-only view of that block, where NumPy returns a fresh
    array: the bit generator only reads it); ``spawn`` returns real ``SeedSequence`` children with the
    keys it would hand out; ``entropy``, ``spawn_key`` and ``pool_size`` are the ``SeedSequence``'s. Built by
    :meth:`Streams.pull_seed` from the arm's :class:`ArmSeed` (one per arm: a pull's seed holds three fields).
    """

    __slots__ = ("arm", "j", "_words64", "n_children_spawned")

    def __init__(self, arm: ArmSeed, j: int, words64: np.ndarray | None = None):
        self.arm = arm
        self.j = j
        self._words64 = words64
        self.n_children_spawned = 0

    @property
    def entropy(self):
        return self.arm.entropy

    @property
    def spawn_key(self) -> tuple:
        return (*self.arm.key, self.j)

    @property
    def pool_size(self) -> int:
        return self.arm.pool_size

    def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
        if dtype is np.uint64 or np.dtype(dtype) == np.uint64:
            if self._words64 is not None and n_words <= _CACHED_WORDS64:  # read-only: shared, never copied
                return self._words64 if n_words == _CACHED_WORDS64 else self._words64[:n_words]
            return _seed_words(self.arm.pool, self.arm.h, self._tail(), 2 * n_words, True)
        if np.dtype(dtype) == np.uint32:
            return _seed_words(self.arm.pool, self.arm.h, self._tail(), n_words, False).astype(np.uint32)
        raise ValueError(f"The 'dtype' parameter of generate_state must be uint32 or uint64. Got {dtype!r} instead.")

    def _tail(self) -> np.ndarray:
        """The words of the pull counter ``j`` (the last spawn-key entry)."""
        return np.asarray(_words(self.j), dtype=np.uint64)

    def spawn(self, n_children: int) -> list[np.random.SeedSequence]:
        first = self.n_children_spawned
        self.n_children_spawned += n_children
        return [
            np.random.SeedSequence(self.entropy, spawn_key=self.spawn_key + (i,), pool_size=self.pool_size)
            for i in range(first, first + n_children)
        ]

    def __repr__(self) -> str:
        return f"PullSeed(entropy={self.entropy!r}, spawn_key={self.spawn_key!r})"


class Streams:
    """The policy's Generator and the addressable per-pull Generators of one run.

    Parameters
    ----------
    policy_seq, arm_seq : numpy.random.SeedSequence
        Seeds of the policy's stream and of the arms' parent.
    bitgen_type : type
        Bit generator class of every stream (the root Generator's, PCG64 by default).
    """

    def __init__(self, policy_seq: np.random.SeedSequence, arm_seq: np.random.SeedSequence,
                 bitgen_type=np.random.PCG64):
        self._bitgen_type = bitgen_type
        self.policy_seq = policy_seq
        self.arm_seq = arm_seq
        self.policy = np.random.Generator(bitgen_type(policy_seq))
        # arm -> [its ArmSeed, first pull of the block of seed words computed ahead, the block's rows]
        self._arm_pools: dict[int, list] = {}
        self._fast = self._fast_path_agrees()

    @classmethod
    def from_generator(cls, root: np.random.Generator) -> "Streams":
        policy_gen, arm_gen = root.spawn(2)
        return cls(policy_gen.bit_generator.seed_seq, arm_gen.bit_generator.seed_seq, type(root.bit_generator))

    def _arm_seed(self, arm: int) -> ArmSeed:
        seq = self.arm_seq
        key = (*seq.spawn_key, arm)
        pool, h = _prefix_pool(seq.entropy, key, seq.pool_size)
        return ArmSeed(seq.entropy, key, seq.pool_size, np.asarray(pool, dtype=np.uint64), np.uint64(h))

    def pull_seed(self, arm: int, j: int):
        """Seed of pull ``j`` of arm ``arm`` (a :class:`PullSeed`, or a SeedSequence on fallback)."""
        entry = self._arm_pools.get(arm)  # only on the fast path
        if entry is not None and 0 <= j and entry[1] <= j < entry[1] + _BLOCK:  # its seed words are computed
            return PullSeed(entry[0], j, entry[2][j - entry[1]])
        seq = self.arm_seq
        if not self._fast:
            return np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, arm, j), pool_size=seq.pool_size)
        if entry is None:
            entry = self._arm_pools[arm] = [self._arm_seed(arm), -2 * _BLOCK, None]
        arm_seed, start, rows = entry
        if 0 <= j <= _M32 - _BLOCK:
            if not start <= j < start + _BLOCK:
                start = j - j % _BLOCK
                # its rows, made once: no view per pull; read-only, as PullSeed hands them out uncopied
                block = _seed_block(arm_seed.pool, arm_seed.h, np.uint64(start), _BLOCK)
                block.flags.writeable = False
                rows = list(block)
                entry[1:] = start, rows
            return PullSeed(arm_seed, j, rows[j - start])
        return PullSeed(arm_seed, j)

    def pull_rng(self, arm: int, j: int) -> np.random.Generator:
        """A fresh Generator for pull ``j`` of arm ``arm`` (the same one on every call)."""
        return _Generator(self._bitgen_type(self.pull_seed(arm, j)))

    def _fast_path_agrees(self) -> bool:
        """Whether :class:`PullSeed` reproduces NumPy's SeedSequence for this seed (else fall back)."""
        seq = self.arm_seq
        if not isinstance(seq, np.random.SeedSequence) or not isinstance(seq.entropy, (int, np.integer, list, tuple)):
            return False
        try:
            for arm, j in ((0, 0), (3, 2**40 + 5)):
                ref = np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, arm, j), pool_size=seq.pool_size)
                fast = PullSeed(self._arm_seed(arm), j)
                for n, dtype in ((4, np.uint64), (5, np.uint32)):
                    if not np.array_equal(fast.generate_state(n, dtype), ref.generate_state(n, dtype)):
                        return False
        except (ValueError, TypeError, OverflowError):
            return False
        return True

    def to_json(self) -> dict:
        return {
            "entropy": str(self.policy_seq.entropy),
            "policy_key": list(self.policy_seq.spawn_key),
            "arm_key": list(self.arm_seq.spawn_key),
            "bit_generator": self._bitgen_type.__name__,
        }

    @classmethod
    def from_json(cls, d: dict) -> "Streams":
        bitgen = getattr(np.random, d["bit_generator"])
        entropy = int(d["entropy"])
        return cls(
            np.random.SeedSequence(entropy, spawn_key=tuple(d["policy_key"])),
            np.random.SeedSequence(entropy, spawn_key=tuple(d["arm_key"])),
            bitgen,
        )
