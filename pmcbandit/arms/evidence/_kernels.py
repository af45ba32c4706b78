"""Numba kernels of the evidence arms: per-chain RNG streams and batched density evaluation.

Every chain owns a xoshiro256** stream (Blackman & Vigna 2021) whose 256-bit
state is drawn from the arm's :class:`numpy.random.Generator` at each pull, so
results are bit-identical for equal seeds whatever the thread schedule, and
numba's global RNG (shared per thread) is never used. The log densities are
called through the model's NUMBA dispatcher ``jit_fn(x) -> (logprior, loglik)``
(see :mod:`pmcbandit.arms.evidence.model_density`), passed as an argument so one
kernel serves every model (numba specialises it per dispatcher).

A kernel that takes the dispatcher is compiled anew for every model in every process
(each dispatcher is a type of its own, and one holding the model's data as constants
cannot be cached on disk). The kernels the default pool runs take the model's density
as a C function of one fixed signature instead, :data:`TERMS_SIG` (a numba
first-class function, built per model by :func:`terms_cfunc`, a small compilation):
they are compiled once for all models and cached on disk (``cache=True``), and call the
density through a pointer, with the same arithmetic. The C functions themselves are cached on disk too, per model
graph, where PyTensor caches the graph's dispatcher (:func:`pmcbandit._compat.numba_src_function`): a later process
loads them instead of compiling them again.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
from numba import types
from numba.core.errors import NumbaWarning
from numba.extending import intrinsic

__all__ = ["chain_seeds", "eval_rows", "eval_terms_rows", "eval_terms", "terms_cfunc", "grad_terms_cfunc", "TERMS_SIG",
           "next_u64", "uniform", "std_normal"]

#: ``terms(x, out)``: writes ``(logprior, loglik)`` of the point ``x`` (``dim`` doubles) to ``out[0], out[1]`` (and,
#: for :func:`grad_terms_cfunc`, their gradients after them).
TERMS_SIG = types.void(types.CPointer(types.float64), types.CPointer(types.float64))

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


_TERMS_SRC = """
def terms(x_ptr, out_ptr):
    lp, ll = jit_fn(carray(x_ptr, ({dim},)))
    out_ptr[0] = lp.item()
    out_ptr[1] = ll.item()
"""

_GRAD_TERMS_SRC = """
def grad_terms(x_ptr, out_ptr):
    lp, ll, g_lp, g_ll = jit_fn(carray(x_ptr, ({dim},)))
    out_ptr[0] = lp.item()
    out_ptr[1] = ll.item()
    for i in range({dim}):
        out_ptr[2 + i] = g_lp[i]
        out_ptr[2 + {dim} + i] = g_ll[i]
"""


def _cfunc(jit_fn, src: str, name: str):
    """The function ``name`` of ``src`` (calling ``jit_fn``) as a ``numba.cfunc`` of :data:`TERMS_SIG`: kept in
    PyTensor's numba cache beside ``jit_fn``'s own entry (:func:`pmcbandit._compat.numba_src_function`), so a later
    process loads it; compiled in this process only where ``jit_fn`` has no entry there. The one source serves both.
    """
    from pmcbandit._compat import numba_src_function

    env = {"jit_fn": jit_fn, "carray": numba.carray}
    fn = numba_src_function(src, name, env, jit_fn, f"_kernels.{name}")
    if fn is None:
        exec(compile(src, f"<pmcbandit._kernels.{name}>", "exec"), env)  # this module's own source, and an int
        return numba.cfunc(TERMS_SIG)(env[name])
    with warnings.catch_warnings():
        # A dispatcher that holds data numba cannot write to disk makes its C function uncacheable too: numba
        # compiles it, warns and keeps it in memory.
        warnings.filterwarnings("ignore", message="Cannot cache compiled function", category=NumbaWarning)
        return numba.cfunc(TERMS_SIG, cache=True)(fn)


def grad_terms_cfunc(grad_jit_fn, dim: int):
    """``grad_jit_fn(x) -> (logprior, loglik, grad logprior, grad loglik)`` of a ``dim``-vector as a C function of
    :data:`TERMS_SIG`: ``out`` receives the two values, then the ``dim`` entries of each gradient (``2 + 2 dim``
    doubles). What the cached HMC kernels call (:mod:`pmcbandit.arms.evidence.hmc_kernel`). Cached on disk where
    PyTensor caches ``grad_jit_fn`` (:func:`_cfunc`).
    """
    return _cfunc(grad_jit_fn, _GRAD_TERMS_SRC.format(dim=int(dim)), "grad_terms")


def terms_cfunc(jit_fn, dim: int):
    """``jit_fn(x) -> (logprior, loglik)`` (0-d arrays) of a ``dim``-vector as a C function of :data:`TERMS_SIG`.

    The returned ``numba.cfunc`` object is passed to the cached kernels (:func:`eval_terms_rows`, the slice AIS
    kernel), which call it through :func:`eval_terms`. Cached on disk where PyTensor caches ``jit_fn``
    (:func:`_cfunc`); compiled in every process otherwise.
    """
    return _cfunc(jit_fn, _TERMS_SRC.format(dim=int(dim)), "terms")


@intrinsic
def _data_pointer(typingctx, arr):
    """The data pointer of a C-contiguous float64 array (a typing error for any other)."""
    if not (isinstance(arr, types.Array) and arr.layout == "C" and arr.dtype == types.float64):
        return None
    sig = types.CPointer(types.float64)(arr)

    def codegen(context, builder, signature, args):
        return context.make_array(arr)(context, builder, args[0]).data

    return sig, codegen


@numba.njit(inline="always")
def eval_terms(terms, x, out):
    """``out[:2] = (logprior(x), loglik(x))`` through a :data:`TERMS_SIG` function; ``x`` and ``out`` C-contiguous."""
    terms(_data_pointer(x), _data_pointer(out))


@numba.njit(cache=True)
def eval_terms_rows(terms, x):
    """:func:`eval_rows` through a :data:`TERMS_SIG` function (:func:`terms_cfunc`): compiled once for all models."""
    n = x.shape[0]
    out = np.empty((n, 2))
    for i in range(n):
        eval_terms(terms, x[i], out[i])
    return out
