"""Exact random variates for numba kernels on a counter-based stream (the Thompson sampler's draws).

The stream is a uint64 counter ``s``; each output is the SplitMix64 finaliser of ``s += 0x9E3779B97F4A7C15``
(Steele, Lea & Flood 2014), so a kernel carries its stream as one integer and never runs out of
random bits. Every function takes the counter and returns ``(value, s')``:

* :func:`std_normal`: standard normals by the 256-layer ziggurat (Marsaglia & Tsang 2000, "The
  ziggurat method for generating random variables"; 52-bit layout as in Doornik 2005; the tail beyond
  ``r`` by Marsaglia's exponential method, the wedges by one more uniform);
* :func:`std_gamma`: ``Gamma(shape, 1)`` for ``shape >= 1`` by Marsaglia & Tsang (2000), "A simple
  method for generating gamma variables", Sec. 4, on those normals; :func:`gamma_constants` and
  :func:`gamma_from_constants` split off the per-shape constants for callers that keep them.

All are exact samplers (no approximation of the law); the tests compare them with ``scipy.stats``.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["counter_key", "std_normal", "std_gamma", "gamma_constants", "gamma_from_constants"]

_U64 = np.uint64
_GOLDEN = _U64(0x9E3779B97F4A7C15)
_TWO_53 = 9007199254740992.0
_INV_2_53 = 1.0 / _TWO_53
# Ziggurat constants for 256 layers (Marsaglia & Tsang 2000): the base layer's right edge
# and the common area of every layer.
_ZIG_R = 3.6541528853610088
_ZIG_V = 4.92867323399e-3
_ZIG_INV_R = 1.0 / _ZIG_R
_MANTISSA = _U64(0x000FFFFFFFFFFFFF)


def _ziggurat_tables():
    """Layer tables ``(k, w, f)`` of the 256-layer ziggurat with 52-bit mantissas (Marsaglia & Tsang's
    ``zigset`` recursion: ``x_{i-1} = sqrt(-2 log(v / x_i + f(x_i)))``, ``f(x) = exp(-x^2 / 2)``).
    """
    m = 2.0**52
    k = np.zeros(256, dtype=np.uint64)
    w = np.zeros(256)
    f = np.zeros(256)
    dn = tn = _ZIG_R
    q = _ZIG_V / np.exp(-0.5 * dn * dn)
    k[0] = np.uint64(dn / q * m)
    w[0], w[255] = q / m, dn / m
    f[0], f[255] = 1.0, np.exp(-0.5 * dn * dn)
    for i in range(254, 0, -1):
        dn = np.sqrt(-2.0 * np.log(_ZIG_V / dn + np.exp(-0.5 * dn * dn)))
        k[i + 1] = np.uint64(dn / tn * m)
        tn = dn
        f[i] = np.exp(-0.5 * dn * dn)
        w[i] = dn / m
    return k, w, f


_ZIG_K, _ZIG_W, _ZIG_F = _ziggurat_tables()
_ZIG_K = _ZIG_K.astype(np.int64)  # compared with a signed 52-bit abscissa (cheap int -> float)


@numba.njit(cache=True, inline="always")
def _mix64(z):
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


@numba.njit(cache=True)
def counter_key(u1, u2):
    """A stream's starting counter from two Generator uniforms: their 53-bit integers, the second
    shifted over the first's top 11 bits, hashed by the SplitMix64 finaliser.
    """
    w1 = _U64(np.int64(u1 * _TWO_53))
    w2 = _U64(np.int64(u2 * _TWO_53))
    return _mix64(w1 ^ (w2 << _U64(11)))


@numba.njit(cache=True, inline="always")
def _uniform(s):
    """``(u, s')``: the next output's top 53 bits as a double in [0, 1)."""
    s = s + _GOLDEN
    return np.int64(_mix64(s) >> _U64(11)) * _INV_2_53, s  # signed: a cheap int -> float


@numba.njit(cache=True, inline="never")
def _normal_rest(idx, x, negative, s):
    """The ziggurat's rarer branches: layer ``idx``'s wedge or the tail, then fresh tries."""
    while True:
        if idx == 0:
            while True:
                u1, s = _uniform(s)
                u2, s = _uniform(s)
                xx = -_ZIG_INV_R * np.log1p(-u1)
                yy = -np.log1p(-u2)
                if yy + yy > xx * xx:
                    return (-(_ZIG_R + xx) if negative else _ZIG_R + xx), s
        else:
            u, s = _uniform(s)
            if (_ZIG_F[idx - 1] - _ZIG_F[idx]) * u + _ZIG_F[idx] < np.exp(-0.5 * x * x):
                return x, s
        s = s + _GOLDEN
        bits = _mix64(s)
        idx = np.int64(bits & _U64(0xFF))
        sign = 1.0 - 2.0 * np.int64((bits >> _U64(8)) & _U64(1))
        negative = sign < 0.0
        rabs = np.int64((bits >> _U64(9)) & _MANTISSA)
        x = sign * (rabs * _ZIG_W[idx])
        if rabs < _ZIG_K[idx]:
            return x, s


@numba.njit(cache=True, inline="always")
def std_normal(s):
    """``(z, s')``: a standard normal by the 256-layer ziggurat from the stream at counter ``s``.

    One output usually suffices (about 99% of the time): its low 8 bits pick the layer, the
    next bit the sign and 52 bits the abscissa; outside the layer's rectangle the wedge (one
    more uniform) or the tail beyond ``r`` (Marsaglia's method, two uniforms per try) decides,
    out of line.
    """
    s = s + _GOLDEN
    bits = _mix64(s)
    idx = np.int64(bits & _U64(0xFF))
    sign = 1.0 - 2.0 * np.int64((bits >> _U64(8)) & _U64(1))  # +-1 without a branch
    rabs = np.int64((bits >> _U64(9)) & _MANTISSA)
    x = sign * (rabs * _ZIG_W[idx])
    if rabs < _ZIG_K[idx]:
        return x, s
    return _normal_rest(idx, x, sign < 0.0, s)


@numba.njit(cache=True, inline="always")
def gamma_constants(shape):
    """Marsaglia & Tsang's ``d = shape - 1/3`` and ``c = 1/sqrt(9 d)`` of ``Gamma(shape, 1)``."""
    d = shape - 1.0 / 3.0
    return d, 1.0 / np.sqrt(9.0 * d)


@numba.njit(cache=True, inline="always")
def gamma_from_constants(d, c, s):
    """``(g, s')``: ``Gamma(shape, 1)`` for ``shape >= 1`` by Marsaglia & Tsang (2000), Sec. 4,
    given ``(d, c) = gamma_constants(shape)``.
    """
    while True:
        x, s = std_normal(s)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u, s = _uniform(s)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:  # squeeze: accepts ~98% without logs
            return d * v, s
        if np.log(u) < 0.5 * x2 + d * (1.0 - v + np.log(v)):
            return d * v, s


@numba.njit(cache=True)
def std_gamma(shape, s):
    """``(g, s')``: ``Gamma(shape, 1)`` for ``shape >= 1`` by Marsaglia & Tsang (2000), Sec. 4."""
    d, c = gamma_constants(shape)
    return gamma_from_constants(d, c, s)
