r"""The upper tail of importance weights: its generalized-Pareto fit, and the variance it implies.

:mod:`pmcbandit.stats.psis` judges an arm by the shape :math:`\hat k` of this fit; the combination
(:mod:`pmcbandit.result`) reads each arm's variance from it. Everything here is a function of the
weights alone.

The estimate
------------
:func:`~pmcbandit.stats.psis.pareto_khat` reproduces ``arviz.psislw(log_weights, reff=1.0)[1]``: with the
:math:`M = \lceil\min(S/5,\, 3\sqrt S)\rceil` largest weights as the tail and the
:math:`(M+1)`-th largest as the cutoff :math:`u`, it fits a generalized Pareto distribution to
the exceedances :math:`w - u` of the weights strictly above :math:`u` by the empirical-Bayes
estimator of Zhang & Stephens ("A new and efficient estimation method for the generalized Pareto
distribution", Technometrics 51, 2009, Sec. 3, with :math:`m = 30 + \lfloor\sqrt n\rfloor` grid
points), then shrinks it towards 1/2 with the weakly informative prior of ArviZ and ``loo``,
:math:`\hat k \leftarrow (n\hat k + 10 \cdot 0.5)/(n + 10)` for :math:`n` tail points.

The tail's share of the variance
--------------------------------
As :math:`\hat k` nears 1/2, most of the second moment :math:`E[w^2]` lies in weights too rare to
have been drawn (for a tail of shape :math:`k` the part above a level :math:`x` falls only as
:math:`x^{2-1/k}`), so the sample variance is small most of the time, and smallest when the
average is low: the interval is then too short exactly when it is needed. For every arm with a
:math:`\hat k`, the combination (:mod:`pmcbandit.result`) takes the larger of the arm's variance
estimate and that estimate scaled by the variance of the weights with the :math:`M` tail weights'
second moment read from the fit, :math:`M m_2` in place of :math:`\sum w_{(i)}^2`, where

.. math::  m_2 = E[w^2 \mid w > u] = u^2 + \frac{2u\sigma}{1-k} + \frac{2\sigma^2}{(1-k)(1-2k)}

for the generalized Pareto tail of shape :math:`k` and scale :math:`\sigma` above the cutoff
:math:`u` (Zhang & Stephens' scale, as PSIS smooths with; the moment is the Pareto-smoothed
weights' in the limit of a long tail, PSIS Sec. 3). The shape is
:math:`\min(\hat k,` :data:`TAIL_SHAPE_CAP` :math:`)`: at :math:`k \ge 1/2` the moment is
infinite and no finite rule is exact; the cap is how far the rule extrapolates. With it, the 95 %
intervals of a run of two arms of Pareto weights of shape 0.55 miss in at most 10 % of seeded runs,
and without it in more (``tests/test_result.py``). Below :math:`\hat k \approx 0.3` the fitted
moment and the sample's agree and the rule changes nothing.

Shapes above the cap
--------------------
For :math:`1/2 < \hat k \le 0.7` (the arms the :math:`\hat k` rule still keeps at large :math:`S`) the
weights' variance is infinite, and the error of their mean shrinks as :math:`S^{\hat k - 1}`, slower than
:math:`S^{-1/2}` (the generalized central limit theorem; Vehtari et al. 2024, Sec. 3.2). PSIS's own answer is
the Pareto-smoothed estimate with the Monte Carlo error of the smoothed weights: the :math:`M` largest weights
replaced by the fitted tail's quantiles at :math:`(z - 1/2)/M` (:func:`smoothed_second_moment`), a finite
moment that grows with :math:`M` as the generalized CLT's rate says. Above the cap the rule takes the larger of
that moment at the fitted shape :math:`\hat k` and the capped shape's moment, so the variance reads the
shape the fit found, not the cap's; below the cap nothing changes. The estimate itself stays the raw
(unbiased) average: smoothing would bias it, and the combination needs unbiased arms.

An arm with too few weights for a :math:`\hat k` (an AIS arm of a few dozen pulls, one weight each)
has the same defect, and no tail to fit. Its log weights are sums of many small increments, one per
annealing step, so close to normal when the steps are many (the argument of Neal 2001, "Annealed
importance sampling", Sec. 4), and normal
log weights of variance :math:`s^2` have :math:`\mathrm{Var}(w) = (e^{s^2} - 1)\,E[w]^2`, which
rests on the spread of the logs, not on whether the rare large weights have come. Such an arm is
read at the larger of its sample variance and :math:`(e^{s^2} - 1)\bar w^2`, :math:`s^2` the
variance of its log weights with the lower tail winsorized
(:meth:`~pmcbandit.stats.psis.WeightTails.log_weight_variance`);
an arm too spread for its number of weights (:func:`too_spread`) is left to its own rule
(:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`). :func:`variance_scale` applies both rules.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmcbandit._validation import param_message

__all__ = ["TAIL_SHAPE_CAP", "smoothed_second_moment", "tail_excess", "tail_length", "too_spread", "variance_scale"]

#: The largest generalized-Pareto shape at which :func:`tail_excess` evaluates the fitted tail's second moment
#: (module docstring, "The tail's share of the variance").
TAIL_SHAPE_CAP = 0.45
#: ``log`` of the smallest normal double: a cutoff below it is raised to it (as in ArviZ).
_CUTOFF_MIN = float(np.log(np.finfo(float).tiny))
#: Zhang & Stephens grid weights below this are dropped before normalising (as in ArviZ).
_NEGLIGIBLE = 10.0 * float(np.finfo(float).eps)


def tail_excess(log_weights) -> float:
    r"""Log of the second moment the fitted tail adds to the observed one, :math:`\log(M\,m_2 - \sum w_{(i)}^2)`
    (module docstring, "The tail's share of the variance"), in the units of the weights; ``-inf`` when it adds none,
    NaN with fewer than 100 weights or no tail fit. ``log_weights``: 1-D, ``-inf`` allowed (zero weights).
    """
    x = _checked_log_weights(log_weights, "tail_excess")
    if x.size < 100:
        return math.nan
    return _excess_from_top(_top_sorted(x, tail_length(x.size) + 1))


def _excess_from_top(top: np.ndarray) -> float:
    k, sigma, cut, n = _tail_fit(top)
    if not (math.isfinite(k) and sigma > 0):
        return math.nan
    shape = min(float(k), TAIL_SHAPE_CAP)
    m2 = cut * cut + 2.0 * cut * sigma / (1.0 - shape) + 2.0 * sigma * sigma / ((1.0 - shape) * (1.0 - 2.0 * shape))
    if k > TAIL_SHAPE_CAP:
        m2 = max(m2, smoothed_second_moment(float(k), float(sigma), float(cut), int(n)))
    mx = float(top[-1])
    excess = n * m2 - float(np.exp(2.0 * (top[top.size - n:] - mx)).sum())
    return math.log(excess) + 2.0 * mx if excess > 0 else -math.inf


def smoothed_second_moment(k: float, sigma: float, cutoff: float, n: int) -> float:
    r"""Mean square of the ``n`` Pareto-smoothed tail weights: the fitted generalized Pareto's quantiles
    :math:`u + \frac{\sigma}{k}\big((1 - p_z)^{-k} - 1\big)` at :math:`p_z = (z - 1/2)/n`, :math:`z = 1..n`,
    which PSIS puts in place of the ``n`` largest weights (Vehtari et al. 2024, Sec. 3) and from whose variance it
    computes its Monte Carlo standard error (module docstring, "Shapes above the cap"). Finite for every
    :math:`k < 1`; ``k`` must be nonzero.
    """
    p = (np.arange(1, n + 1) - 0.5) / n
    q = cutoff + sigma / k * np.expm1(-k * np.log1p(-p))
    return float(np.mean(q * q))


def variance_scale(count, total, squares, tail_excess, log_w_var) -> np.ndarray:
    r"""Per arm, the factor (at least 1) on the variance of its weights from what they say of their upper tail
    (module docstring, "The tail's share of the variance").

    ``count``, ``total``, ``squares``: per arm :math:`S`, :math:`\sum w` and :math:`\sum w^2`, the weights in any
    common unit; ``tail_excess``: :meth:`~pmcbandit.stats.psis.WeightTails.tail_excess` in the log of that unit
    (NaN for an arm without a :math:`\hat k`); ``log_w_var``: the variance of the log weights of an arm without a
    :math:`\hat k` (:attr:`~pmcbandit.stats.psis.ArmReliability.log_w_var`; NaN otherwise). Arrays of one shape;
    an arm with neither gets 1.
    """
    count = np.asarray(count, dtype=np.float64)
    total = np.asarray(total, dtype=np.float64)
    excess = np.asarray(tail_excess, dtype=np.float64)
    s2 = np.asarray(log_w_var, dtype=np.float64)
    out = np.ones(count.shape)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        var = (np.asarray(squares, dtype=np.float64) - total**2 / count) / (count - 1.0)
        usable = (count > 1) & (var > 0)
        fitted = usable & np.isfinite(excess)
        out[fitted] = 1.0 + np.exp(excess[fitted]) / (count[fitted] - 1.0) / var[fitted]
        normal = usable & np.isnan(excess) & np.isfinite(s2) & ~too_spread(s2, count)
        out[normal] = np.expm1(s2[normal]) * (total[normal] / count[normal]) ** 2 / var[normal]
    return np.fmax(out, 1.0)


def too_spread(log_w_var, n_weights) -> np.ndarray:
    r"""Whether :math:`S` weights whose log weights have variance :math:`s^2` are too few for their spread:
    :math:`S < e^{s^2/2}` (elementwise; NaN variances give False). The rule and its source:
    :attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`.
    """
    n = np.asarray(n_weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(log_w_var, dtype=np.float64) / 2.0 > np.log(np.maximum(n, 1.0))


def tail_length(n_samples: int) -> int:
    r"""PSIS tail length :math:`M = \lceil\min(S/5, 3\sqrt{S})\rceil` (ArviZ ``psislw``, ``reff=1``)."""
    return int(np.ceil(min(n_samples / 5.0, 3 * (n_samples / 1.0) ** 0.5)))


@numba.njit(cache=True, error_model="numpy")
def _gpd_shape(ary):
    """Zhang-Stephens posterior-mean shape of a GPD fitted to sorted exceedances ``ary`` (n >= 5),
    with the prior adjustment, and its scale; the same operations, in the same order, as ArviZ's
    ``_gpdfit`` (whose scale, too, is computed from the shape before the adjustment).
    """
    n = ary.size
    m = 30 + int(n**0.5)
    quartile = ary[int(n / 4 + 0.5) - 1]
    b = np.empty(m)
    for j in range(m):
        b[j] = (1.0 - np.sqrt(m / (j + 1.0 - 0.5))) / (3.0 * quartile) + 1.0 / ary[n - 1]
    len_scale = np.empty(m)
    for j in range(m):
        acc = 0.0
        for i in range(n):
            acc += np.log1p(-b[j] * ary[i])
        k = acc / n
        len_scale[j] = n * (np.log(-(b[j] / k)) - k - 1.0)
    w_sum = 0.0
    bw_sum = 0.0
    w = np.empty(m)
    for i in range(m):
        acc = 0.0
        for j in range(m):
            acc += np.exp(len_scale[j] - len_scale[i])
        w[i] = 1.0 / acc
        # NaN weights fail this test and are dropped, as ArviZ's boolean mask does.
        if w[i] >= _NEGLIGIBLE:
            w_sum += w[i]
    for i in range(m):
        if w[i] >= _NEGLIGIBLE:
            bw_sum += b[i] * (w[i] / w_sum)
    acc = 0.0
    for i in range(n):
        acc += np.log1p(-bw_sum * ary[i])
    k_post = acc / n
    return (n * k_post + 10 * 0.5) / (n + 10), -k_post / bw_sum


@numba.njit(cache=True, error_model="numpy")
def _khat_from_top(top):
    """k-hat from the sorted (ascending) top ``M + 1`` log weights: ``top[0]`` is the cutoff."""
    return _tail_fit(top)[0]


@numba.njit(cache=True, error_model="numpy")
def _tail_fit(top):
    """``(k-hat, scale, cutoff, n)`` of the GPD fit to the sorted (ascending) top ``M + 1`` log weights, the
    scale and the cutoff in units of the largest weight, ``n`` the tail points; k-hat ``inf`` when there is none.
    """
    mx = top[top.size - 1]
    if mx == -np.inf:
        return np.inf, np.nan, np.nan, 0
    cut = top[0] - mx
    if _CUTOFF_MIN > cut:
        cut = _CUTOFF_MIN
    start = 0
    while start < top.size and not (top[start] - mx > cut):
        start += 1
    n = top.size - start
    exp_cut = np.exp(cut)
    if n <= 4:
        return np.inf, np.nan, exp_cut, n
    ary = np.empty(n)
    for i in range(n):
        ary[i] = np.exp(top[start + i] - mx) - exp_cut
    k, sigma = _gpd_shape(ary)
    return k, sigma, exp_cut, n


@numba.njit(cache=True)
def _first_bad(x):
    for i in range(x.size):
        if not x[i] < np.inf:
            return i
    return -1


@numba.njit(cache=True)
def _sift_down(heap, root, end):
    """Restore the max-heap order of ``heap[:end]`` below ``root``."""
    while True:
        child = 2 * root + 1
        if child >= end:
            return
        if child + 1 < end and heap[child] < heap[child + 1]:
            child += 1
        if not heap[root] < heap[child]:
            return
        heap[root], heap[child] = heap[child], heap[root]
        root = child


@numba.njit(cache=True)
def _largest_ascending(values, size, out):
    """Write the ``min(size, values.size)`` largest of ``values`` ascending into the end of ``out[:size]``
    (``values`` is left as it was).

    Heap selection (Williams 1964, "Algorithm 232: Heapsort", Comm. ACM 7): build a max-heap of a copy in
    :math:`O(n)`, then take its top ``size`` times in :math:`O(\\log n)` each. Written out instead of numba's
    ``np.partition`` and ``np.sort``, whose generic implementations (and their argument checks) are the costliest
    part of the kernels a first run compiles; the selected values are the same.
    """
    heap = values.copy()
    n = heap.size
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(heap, root, n)
    take = min(size, n)
    for i in range(take):
        out[size - 1 - i] = heap[0]
        n -= 1
        heap[0] = heap[n]
        _sift_down(heap, 0, n)


@numba.njit(cache=True)
def _top_sorted(values, size):
    """The ``size`` largest of ``values``, ascending, padded below with -inf (zero weights)."""
    out = np.full(size, -np.inf)
    _largest_ascending(values, size, out)
    return out


def _as_log_weights(log_weights, param: str, door: str, ndim: tuple[int, ...]) -> np.ndarray:
    x = np.asarray(log_weights)
    if x.dtype.kind not in "iuf":
        raise TypeError(param_message(param, door, "an array of real numbers", log_weights))
    if x.ndim not in ndim:
        raise ValueError(param_message(param, door, f"an array with ndim in {ndim}", f"ndim={x.ndim}"))
    return np.ascontiguousarray(x, dtype=np.float64).reshape(-1)


def _checked_log_weights(log_weights, door: str) -> np.ndarray:
    """1-D log weights of ``door`` with no NaN or ``+inf`` (ValueError naming the first one)."""
    x = _as_log_weights(log_weights, "log_weights", door, (1,))
    bad = _first_bad(x)
    if bad >= 0:
        raise _bad_value(x, bad, "log_weights", door)
    return x


def _bad_value(x: np.ndarray, bad: int, param: str, door: str) -> ValueError:
    return ValueError(
        param_message(param, door, "free of NaN and +inf (-inf is a zero weight)", f"{float(x[bad])!r} at index {bad}")
    )
