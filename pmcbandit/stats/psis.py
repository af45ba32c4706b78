r"""Pareto :math:`\hat k`: whether an arm's variance estimate is worth anything.

An importance-type arm (Laplace-t, prior IS, AIS) averages weights :math:`w_s = e^{\ell_s}`.
If the weight distribution has a generalized-Pareto upper tail of shape :math:`k`, only
moments of order :math:`< 1/k` exist: for :math:`k \ge 1/2` the variance is infinite, and the
sample variance the bandit and the combiner use is then small most of the time and a gross
underestimate (Vehtari, Simpson, Gelman, Yao & Gabry, "Pareto smoothed importance sampling",
JMLR 25(72), 2024; "PSIS" below).

The rule, as the run uses it
----------------------------
For each arm the run accumulates every log weight it produced in a :class:`WeightTails` and
estimates :math:`\hat k` from the :math:`S` weights seen so far. The arm's variance estimate is
**unreliable** when

.. math::  \hat k > k_{\max}(S) = \min\!\bigl(1 - 1/\log_{10} S,\; 0.7\bigr)

(PSIS Sec. 3.2.4, eq. 13: above it the probability of a large error is not small even after
Pareto smoothing; :math:`k_{\max}(100) = 0.5`, the cap 0.7 is reached at
:math:`S \approx 2154`). :func:`min_sample_size` gives the :math:`S = 10^{1/(1-k)}` needed for a
given :math:`k` (PSIS Sec. 3.2.3). While :math:`S <` ``min_weights`` (100 by default)
:math:`\hat k` is NaN and the arm counts as reliable: see :class:`WeightTails`.

An unreliable arm is **short of draws** while :math:`S <` :data:`KHAT_CAP_COUNT` (2155, where the
threshold reaches its cap 0.7) and :math:`\hat k < 1`: the run keeps it in play, gives it no weight
while :math:`\hat k` is above the threshold of its own :math:`S`, and judges it again on more draws.
It is **hopeless** (:meth:`WeightTails.hopeless`) once :math:`\hat k > 0.7` with at least
:data:`KHAT_CAP_COUNT` draws, or :math:`\hat k \ge 1` with any number: PSIS advises against
estimates with :math:`k > 0.7` at any practical sample size (Sec. 3.2.3: :math:`10^{1/(1-k)}` draws
needed, infinitely many for :math:`k \ge 1`), and the run takes it out of play for good.

Why not flag for good at the first fit above the threshold: :math:`\hat k` from a few hundred weights
is noisy, and the run refits it every time the count grows by 10 %, so over a run such a rule also
takes out proposals whose true :math:`k` is well below the threshold and that pass on their full
sample (``tests/test_psis.py``: Pareto weights of true :math:`k = 0.3` cross the threshold on the way
in some simulated runs, and are hopeless in none).

The estimate
------------
:func:`pareto_khat` reproduces ``arviz.psislw(log_weights, reff=1.0)[1]``: with the
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
and without it in more (``tests/test_reliability.py``). Below :math:`\hat k \approx 0.3` the fitted
moment and the sample's agree and the rule changes nothing.

An arm with too few weights for a :math:`\hat k` (an AIS arm of a few dozen pulls, one weight each)
has the same defect, and no tail to fit. Its log weights are sums of many small increments, one per
annealing step, so close to normal when the steps are many (the argument of Neal 2001, "Annealed
importance sampling", Sec. 4), and normal
log weights of variance :math:`s^2` have :math:`\mathrm{Var}(w) = (e^{s^2} - 1)\,E[w]^2`, which
rests on the spread of the logs, not on whether the rare large weights have come. Such an arm is
read at the larger of its sample variance and :math:`(e^{s^2} - 1)\bar w^2`, :math:`s^2` the
variance of its log weights with the lower tail winsorized (:meth:`WeightTails.log_weight_variance`);
an arm too spread for its number of weights (:func:`too_spread`) is left to its own rule
(:attr:`ArmReliability.undersampled`). :func:`variance_scale` applies both rules.
"""

from __future__ import annotations

import math
from typing import NamedTuple
import numbers

import numba
import numpy as np

from pmcbandit._validation import _msg, check_positive

__all__ = [
    "ArmReliability", "KHAT_CAP", "KHAT_CAP_COUNT", "SPREAD_MIN_WEIGHTS", "TAIL_SHAPE_CAP", "WeightTails",
    "khat_threshold", "min_sample_size", "pareto_khat", "tail_excess", "tail_length", "too_spread", "variance_scale",
]

#: Fewest log weights of an unchecked arm for the spread rule of :attr:`ArmReliability.undersampled`
#: (below, the sample variance of log weights has a relative error above 1/2).
SPREAD_MIN_WEIGHTS = 10
#: The cap of :func:`khat_threshold` (PSIS Sec. 3.2.3: no practical sample size makes a larger k reliable).
KHAT_CAP = 0.7
#: The smallest count at which :func:`khat_threshold` is at its cap, :math:`\lceil 10^{1/(1-0.7)}\rceil = 2155`.
KHAT_CAP_COUNT = math.ceil(10.0 ** (1.0 / (1.0 - KHAT_CAP)))
#: The largest generalized-Pareto shape at which :func:`tail_excess` evaluates the fitted tail's second moment
#: (module docstring, "The tail's share of the variance").
TAIL_SHAPE_CAP = 0.45
#: Robust standard deviations below the median where :meth:`WeightTails.log_weight_variance`
#: winsorizes the log weights.
SPREAD_LOWER_MADS = 5.0
#: ``log`` of the smallest normal double: a cutoff below it is raised to it (as in ArviZ).
_CUTOFF_MIN = float(np.log(np.finfo(float).tiny))
#: Zhang & Stephens grid weights below this are dropped before normalising (as in ArviZ).
_NEGLIGIBLE = 10.0 * float(np.finfo(float).eps)
_NPZ_FIELDS = ("params", "counts", "fill", "floor", "fit_counts", "fit_khat", "kept")


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
    mx = float(top[-1])
    excess = n * m2 - float(np.exp(2.0 * (top[top.size - n:] - mx)).sum())
    return math.log(excess) + 2.0 * mx if excess > 0 else -math.inf


def variance_scale(count, total, squares, tail_excess, log_w_var) -> np.ndarray:
    r"""Per arm, the factor (at least 1) on the variance of its weights from what they say of their upper tail
    (module docstring, "The tail's share of the variance").

    ``count``, ``total``, ``squares``: per arm :math:`S`, :math:`\sum w` and :math:`\sum w^2`, the weights in any
    common unit; ``tail_excess``: :meth:`WeightTails.tail_excess` in the log of that unit (NaN for an arm without
    a :math:`\hat k`); ``log_w_var``: the variance of the log weights of an arm without a :math:`\hat k`
    (:attr:`ArmReliability.log_w_var`; NaN otherwise). Arrays of one shape; an arm with neither gets 1.
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
def _add(buf, fill, floor, counts, arm, x, capacity):
    """Append the values of ``x`` above the arm's floor; compact to the top ``capacity`` when the
    buffer is full. Returns the index of the first NaN/+inf value (nothing changed) or -1.
    """
    bad = _first_bad(x)
    if bad >= 0:
        return bad
    row = buf[arm]
    f = fill[arm]
    lo = floor[arm]
    for i in range(x.size):
        v = x[i]
        if v > lo:
            if f == row.size:
                part = np.partition(row, f - capacity)
                row[:capacity] = part[f - capacity :]
                lo = part[f - capacity]
                f = capacity
                if not v > lo:
                    continue
            row[f] = v
            f += 1
    fill[arm] = f
    floor[arm] = lo
    counts[arm] += x.size
    return -1


@numba.njit(cache=True)
def _top_sorted(values, size):
    """The ``size`` largest of ``values``, ascending, padded below with -inf (zero weights)."""
    out = np.full(size, -np.inf)
    if values.size >= size:
        out[:] = np.sort(np.partition(values, values.size - size)[values.size - size :])
    else:
        out[size - values.size :] = np.sort(values)
    return out


def _as_log_weights(log_weights, param: str, owner: str, ndim: tuple[int, ...]) -> np.ndarray:
    x = np.asarray(log_weights)
    if x.dtype.kind not in "iuf":
        raise TypeError(_msg(param, owner, "an array of real numbers", log_weights))
    if x.ndim not in ndim:
        raise ValueError(_msg(param, owner, f"an array with ndim in {ndim}", f"ndim={x.ndim}"))
    return np.ascontiguousarray(x, dtype=np.float64).reshape(-1)


def _checked_log_weights(log_weights, owner: str) -> np.ndarray:
    """1-D log weights of ``owner`` with no NaN or ``+inf`` (ValueError naming the first one)."""
    x = _as_log_weights(log_weights, "log_weights", owner, (1,))
    bad = _first_bad(x)
    if bad >= 0:
        raise _bad_value(x, bad, "log_weights", owner)
    return x


def _bad_value(x: np.ndarray, bad: int, param: str, owner: str) -> ValueError:
    return ValueError(
        _msg(param, owner, "free of NaN and +inf (-inf is a zero weight)", f"{float(x[bad])!r} at index {bad}")
    )


def pareto_khat(log_weights) -> float:
    r"""Pareto :math:`\hat k` of the upper tail of the weights ``exp(log_weights)``.

    Equal to ``arviz.psislw(log_weights, reff=1.0)[1]`` (to rounding): tail length
    :math:`M = \lceil\min(S/5, 3\sqrt S)\rceil` of the :math:`S` weights, cutoff
    :math:`\ell_c = \max(\ell_{(S-M)} - \ell_{\max}, \log(\text{tiny}))` on the max-shifted log
    scale, tail = the weights strictly above it, exceedances :math:`e^{\ell-\ell_{\max}} - e^{\ell_c}`,
    Zhang & Stephens (2009) GPD fit with the prior :math:`\hat k \leftarrow (n\hat k + 5)/(n + 10)`
    (module docstring; Vehtari et al. 2024, PSIS). Costs :math:`O(S)` (a partial sort) plus the fit,
    :math:`O(M\sqrt M)`.

    Parameters
    ----------
    log_weights : array_like, shape (S,)
        Log importance weights, up to a common constant. ``-inf`` is a zero weight: it counts
        towards :math:`S` but never enters the tail.

    Returns
    -------
    float
        :math:`\hat k`; ``inf`` when the tail has at most 4 points (too few to fit, as in ArviZ:
        e.g. :math:`S = 1`, where ArviZ fails, or fewer than 5 positive weights).

    Raises
    ------
    ValueError
        If ``log_weights`` is empty, not one-dimensional, or holds NaN or ``+inf``.
    """
    owner = "pareto_khat"
    x = _checked_log_weights(log_weights, owner)
    if x.size == 0:
        raise ValueError(_msg("log_weights", owner, "non-empty", log_weights))
    if x.size < 2:
        return math.inf
    return float(_khat_from_top(_top_sorted(x, tail_length(x.size) + 1)))


def too_spread(log_w_var, n_weights) -> np.ndarray:
    r"""Whether :math:`S` weights whose log weights have variance :math:`s^2` are too few for their spread:
    :math:`S < e^{s^2/2}` (elementwise; NaN variances give False). The rule and its source:
    :attr:`ArmReliability.undersampled`.
    """
    n = np.asarray(n_weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(log_w_var, dtype=np.float64) / 2.0 > np.log(np.maximum(n, 1.0))


def khat_threshold(n_samples) -> float:
    r"""Sample-size-dependent :math:`\hat k` threshold :math:`\min(1 - 1/\log_{10} S, 0.7)`.

    Vehtari et al. (2024), PSIS Sec. 3.2.4, eq. (13): above it a Pareto-smoothed (and a
    fortiori a plain) importance-sampling estimate from :math:`S` draws has a non-negligible
    probability of a large error. E.g. 0.5 at :math:`S = 100`, 0.7 from :math:`S \approx 2154`.

    Parameters
    ----------
    n_samples : real, > 1
        The number of weights :math:`S`.

    Returns
    -------
    float
    """
    check_positive(n_samples, "n_samples", "khat_threshold")
    if n_samples <= 1:
        raise ValueError(_msg("n_samples", "khat_threshold", "> 1", n_samples))
    return min(1.0 - 1.0 / math.log10(n_samples), KHAT_CAP)


def min_sample_size(k) -> float:
    r"""Sample size :math:`S = 10^{1/(1-k)}` that makes :math:`k` reliable (``inf`` for :math:`k \ge 1`).

    Vehtari et al. (2024), PSIS Sec. 3.2.3; the inverse of :func:`khat_threshold` below its cap.

    Parameters
    ----------
    k : real, not NaN
        A Pareto shape (e.g. an estimate :math:`\hat k`).

    Returns
    -------
    float
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Real):
        raise TypeError(_msg("k", "min_sample_size", "a real number", k))
    if k != k:
        raise ValueError(_msg("k", "min_sample_size", "not NaN", k))
    if k >= 1:
        return math.inf
    return 10.0 ** (1.0 / (1.0 - float(k)))


class WeightTails:
    r"""Per-arm running Pareto :math:`\hat k` of all the log weights a run has produced.

    :meth:`add` is called after every pull with the pull's log weights; it keeps the count
    :math:`S` of all values (``-inf`` included) and the ``capacity`` largest values ever added, in a
    buffer of ``2 * capacity`` slots per arm. Once a compaction has happened, only values above the
    current floor (the smallest value kept at the last compaction) are appended, so an ``add``
    costs :math:`O(\text{batch})`; when the buffer is full it is partitioned down to its
    ``capacity`` largest values (:math:`O(\text{capacity})`, at most once per ``capacity``
    appended values, hence amortised :math:`O(1)` per value).

    **What is kept is exactly the top ``capacity`` values** (as a multiset) of everything added.
    Invariant: every value not in the buffer is :math:`\le` at least ``capacity`` values in the
    buffer. A value dropped at a compaction has the ``capacity`` kept values above it (:math:`\ge`)
    then; a value rejected by the floor is :math:`\le` the ``capacity`` values kept at the last
    compaction, all still in the buffer (nothing leaves between compactions). A later compaction
    keeps the buffer's top ``capacity``: either it keeps all the values above a given dropped
    value, or it drops one of them, :math:`w`, and then all ``capacity`` kept values are
    :math:`\ge w`; so the invariant holds always after, and the top ``capacity`` of all values is
    the top ``capacity`` of the buffer. ``-inf`` (zero weights) are counted, never stored: when
    fewer finite values than needed are kept, the missing order statistics are ``-inf``.

    :meth:`khat` is exactly :func:`pareto_khat` of the concatenation of everything added to the arm
    as long as :math:`M + 1 \le` ``capacity`` (:math:`S \le 1.19\cdot 10^8` for the default
    :math:`2^{15}`), since the fit only reads the :math:`M+1` largest values. Beyond that the cutoff
    is the ``capacity``-th largest value and the tail is capped at ``capacity - 1`` points: the
    estimate then looks further out into the tail than PSIS's :math:`3\sqrt S` points, with the
    variance of a ``capacity - 1`` point fit.

    Amortised refits: the fit is deterministic, lazy and cached. It is redone on a request when the
    count has grown since the cached fit by a factor of at least ``1 + refit_growth``, so
    :meth:`khat` may describe the first ``fit_counts[arm]`` values, :math:`S/(1+g) < S_{fit} \le S`.
    ``refresh=True`` forces a fit on the current count.

    Parameters
    ----------
    n_arms : int, > 0
    capacity : int, >= 6
        Largest values kept per arm (memory: ``16 * capacity`` bytes per arm).
    min_weights : int, >= 1
        Below this many weights :meth:`khat` is NaN and :meth:`unreliable` False: with
        :math:`S < 100` the tail has :math:`M \le 20` points, so the fit is dominated by its prior
        (10 pseudo-observations at 1/2), and the threshold :math:`1 - 1/\log_{10} S` falls below
        0.5, flagging even a finite-variance proposal; PSIS's own guidance needs :math:`S\ge 100`.
    refit_growth : float, >= 0
        Relative growth of :math:`S` that triggers a refit (0: refit whenever :math:`S` changed).
    """

    def __init__(self, n_arms: int, capacity: int = 2**15, min_weights: int = 100, refit_growth: float = 0.1):
        owner = "WeightTails"
        check_positive(n_arms, "n_arms", owner, integer=True)
        check_positive(capacity, "capacity", owner, integer=True)
        if capacity < 6:
            raise ValueError(_msg("capacity", owner, ">= 6 (a fit needs 5 tail points)", capacity))
        check_positive(min_weights, "min_weights", owner, integer=True)
        check_positive(refit_growth, "refit_growth", owner, allow_zero=True)
        self.n_arms = int(n_arms)
        self.capacity = int(capacity)
        self.min_weights = int(min_weights)
        self.refit_growth = float(refit_growth)
        self._buf = np.empty((self.n_arms, 2 * self.capacity))
        self._fill = np.zeros(self.n_arms, dtype=np.int64)
        self._floor = np.full(self.n_arms, -np.inf)
        self._counts = np.zeros(self.n_arms, dtype=np.int64)
        self._fit_counts = np.zeros(self.n_arms, dtype=np.int64)
        self._fit_khat = np.full(self.n_arms, np.nan)

    def _arm(self, arm, owner: str) -> int:
        if isinstance(arm, bool) or not isinstance(arm, numbers.Integral):
            raise TypeError(_msg("arm", owner, "an int", arm))
        if not 0 <= arm < self.n_arms:
            raise ValueError(_msg("arm", owner, f"in [0, {self.n_arms})", arm))
        return int(arm)

    @property
    def counts(self) -> np.ndarray:
        """Number of log weights added per arm, ``-inf`` included (a copy)."""
        return self._counts.copy()

    @property
    def fit_counts(self) -> np.ndarray:
        """Per arm, the count :math:`S` the cached :math:`\\hat k` was fitted at (0: never)."""
        return self._fit_counts.copy()

    def add(self, arm: int, log_weights) -> None:
        """Add a batch of log weights (scalar or 1-D; ``-inf`` = zero weight) to ``arm``.

        Raises ValueError, leaving the state unchanged, if a value is NaN or ``+inf``.
        """
        owner = "WeightTails.add"
        arm = self._arm(arm, owner)
        x = _as_log_weights(log_weights, "log_weights", owner, (0, 1))
        bad = _add(self._buf, self._fill, self._floor, self._counts, arm, x, self.capacity)
        if bad >= 0:
            raise _bad_value(x, bad, "log_weights", owner)

    def khat(self, arm: int, refresh: bool = False) -> float:
        r"""Pareto :math:`\hat k` of the arm's weights (cached; NaN while :math:`S <` ``min_weights``)."""
        arm = self._arm(arm, "WeightTails.khat")
        s = int(self._counts[arm])
        if s < self.min_weights:
            return math.nan
        last = int(self._fit_counts[arm])
        if s != last and (refresh or last == 0 or s >= last * (1.0 + self.refit_growth)):
            size = min(tail_length(s) + 1, self.capacity)
            top = _top_sorted(self._buf[arm, : self._fill[arm]], size)
            self._fit_khat[arm] = math.inf if s < 2 else _khat_from_top(top)
            self._fit_counts[arm] = s
        return float(self._fit_khat[arm])

    def khats(self) -> np.ndarray:
        """:meth:`khat` of every arm, as an array of shape ``(n_arms,)``."""
        return np.array([self.khat(a) for a in range(self.n_arms)])

    def tail_excess(self, arm: int) -> float:
        r""":func:`tail_excess` of the arm's weights, fitted afresh on all of them (not cached: the result
        depends only on the weights added, so a resumed run computes the same); NaN while
        :math:`S <` ``min_weights``. Exact while :math:`M + 1 \le` ``capacity``, as :meth:`khat`.
        """
        arm = self._arm(arm, "WeightTails.tail_excess")
        s = int(self._counts[arm])
        if s < self.min_weights:
            return math.nan
        size = min(tail_length(s) + 1, self.capacity)
        return _excess_from_top(_top_sorted(self._buf[arm, : self._fill[arm]], size))

    def threshold(self, arm: int) -> float:
        """:func:`khat_threshold` at the arm's current count (NaN while :math:`S \\le 1`)."""
        s = int(self._counts[self._arm(arm, "WeightTails.threshold")])
        return khat_threshold(s) if s > 1 else math.nan

    def log_weight_variance(self, arm: int) -> float:
        r"""Sample variance (``ddof=1``) of the arm's finite log weights, their lower tail winsorized.

        Values more than :data:`SPREAD_LOWER_MADS` robust standard deviations (1.4826 x the median
        absolute deviation) below the median are raised to that point first: a weight far below
        the bulk adds almost nothing to the average, and its distance says nothing about the upper
        tail, which is what decides whether the average has converged (a chain stuck far from the
        posterior in one pull of an AIS arm). Computed while every value is kept (no compaction
        yet, :math:`S \le 2\,` ``capacity``); NaN after one, or with fewer than two finite values.
        Zero weights (``-inf``) are left out.
        """
        arm = self._arm(arm, "WeightTails.log_weight_variance")
        n = int(self._fill[arm])
        if n < 2 or self._floor[arm] > -math.inf:
            return math.nan
        x = self._buf[arm, :n]
        median = float(np.median(x))
        scale = 1.4826 * float(np.median(np.abs(x - median)))
        return float(np.var(np.maximum(x, median - SPREAD_LOWER_MADS * scale), ddof=1))

    def unreliable(self, arm: int) -> bool:
        r"""Whether :math:`\hat k >` :meth:`threshold` (False while :math:`\hat k` is NaN)."""
        k = self.khat(arm)
        return bool(k == k and k > self.threshold(arm))

    def untrusted(self, arm: int) -> bool:
        r"""Whether the arm's variance estimate cannot be trusted on its weights so far: :meth:`unreliable`, or,
        with too few weights for a :math:`\hat k` (at least :data:`SPREAD_MIN_WEIGHTS`), log weights too spread
        for their number (:func:`too_spread`, the rule of :attr:`ArmReliability.undersampled`).
        """
        arm = self._arm(arm, "WeightTails.untrusted")
        if self.unreliable(arm):
            return True
        s = int(self._counts[arm])
        return SPREAD_MIN_WEIGHTS <= s < self.min_weights and bool(too_spread(self.log_weight_variance(arm), s))

    def hopeless(self, arm: int) -> bool:
        r"""Whether no practical number of draws makes the arm reliable: :math:`\hat k > 0.7` from
        :data:`KHAT_CAP_COUNT` weights on, or :math:`\hat k \ge 1` (module docstring; False while
        :math:`\hat k` is NaN).
        """
        k = self.khat(arm)
        if k != k:
            return False
        return bool(k >= 1.0 or (k > KHAT_CAP and self._counts[arm] >= KHAT_CAP_COUNT))

    def to_npz_dict(self, prefix: str = "weight_tails_") -> dict[str, np.ndarray]:
        """Plain numpy arrays (keys ``prefix + name``) that :meth:`from_npz_dict` restores exactly."""
        if not isinstance(prefix, str):
            raise TypeError(_msg("prefix", "WeightTails.to_npz_dict", "a str", prefix))
        kept = np.concatenate([self._buf[a, : self._fill[a]] for a in range(self.n_arms)])
        params = np.array([self.n_arms, self.capacity, self.min_weights, self.refit_growth])
        arrays = (params, self._counts, self._fill, self._floor, self._fit_counts, self._fit_khat, kept)
        return {prefix + name: np.array(a, copy=True) for name, a in zip(_NPZ_FIELDS, arrays)}

    @classmethod
    def from_npz_dict(cls, data, prefix: str = "weight_tails_") -> WeightTails:
        """Rebuild the accumulator saved by :meth:`to_npz_dict` (``data``: a mapping, e.g. ``np.load``)."""
        owner = "WeightTails.from_npz_dict"
        missing = [prefix + n for n in _NPZ_FIELDS if prefix + n not in data]
        if missing:
            raise ValueError(_msg("data", owner, f"a mapping with the keys {missing}", sorted(data)))
        params, counts, fill, floor, fit_counts, fit_khat, kept = (np.asarray(data[prefix + n]) for n in _NPZ_FIELDS)
        n_arms, capacity, min_weights = (int(v) for v in params[:3])
        out = cls(n_arms, capacity, min_weights, float(params[3]))
        if fill.shape != (n_arms,) or kept.shape != (int(fill.sum()),) or np.any(fill > 2 * capacity):
            raise ValueError(_msg("data", owner, "consistent arrays from WeightTails.to_npz_dict", "mismatched shapes"))
        ends = np.cumsum(fill)
        for a in range(n_arms):
            out._buf[a, : fill[a]] = kept[ends[a] - fill[a] : ends[a]]
        out._fill[:] = fill
        out._floor[:] = floor
        out._counts[:] = counts
        out._fit_counts[:] = fit_counts
        out._fit_khat[:] = fit_khat
        return out


class ArmReliability(NamedTuple):
    """Per-arm reliability of importance weights (Vehtari et al. 2024).

    ``khat`` is NaN for arms whose values are not importance weights and while an arm has fewer
    weights than the diagnostic needs; ``threshold`` is :math:`\\min(1 - 1/\\log_{10} S, 0.7)`
    for the arm's ``n_weights`` = S; ``unreliable`` marks arms whose k-hat is above it, or that were
    taken out of play during the run (:meth:`WeightTails.hopeless`);
    ``log_w_var`` is the sample variance :math:`s^2` of an unchecked arm's log weights (NaN for
    other arms, ``None`` when not recorded), read by :attr:`undersampled`; ``tail_excess`` is
    :meth:`WeightTails.tail_excess` of an arm with a k-hat (NaN for other arms, ``None`` when not
    recorded), read by the combination (module docstring, "The tail's share of the variance").
    """

    khat: np.ndarray
    threshold: np.ndarray
    n_weights: np.ndarray
    unreliable: np.ndarray
    log_w_var: np.ndarray | None = None
    tail_excess: np.ndarray | None = None

    @property
    def undersampled(self) -> np.ndarray:
        r"""Unchecked arms with at least :data:`SPREAD_MIN_WEIGHTS` weights whose log weights are too
        spread for their number: :math:`S < e^{s^2/2}`, :math:`s^2` their variance with the lower
        tail winsorized (:meth:`WeightTails.log_weight_variance`).

        The rule: an importance average of :math:`S` weights is accurate only when :math:`S` exceeds
        about :math:`e^{D}`, :math:`D = \mathrm{KL}(\pi\,\|\,q)` the divergence of the target from
        the proposal (Chatterjee & Diaconis, "The sample size required in importance sampling",
        Ann. Appl. Probab. 28(2), 2018, Thm 1.1); for log-normal weights :math:`D = \sigma^2/2`, the
        half variance of the log weights under the proposal, estimated by :math:`s^2/2`. Below, the
        average misses the rare large weights that make up the target's mass, so it is most often
        too low, by more than its standard error (the sample variance misses them too). This is the
        small-sample counterpart of the Pareto :math:`\hat k` (needs :math:`S \ge 100`) for arms of
        one weight per pull, e.g. AIS with few annealing steps (Neal 2001, Sec. 4: the log weights'
        variance falls as the steps grow).
        """
        if self.log_w_var is None:
            return np.zeros(self.n_weights.shape, dtype=bool)
        return self.unchecked & (self.n_weights >= SPREAD_MIN_WEIGHTS) & too_spread(self.log_w_var, self.n_weights)

    @property
    def unchecked(self) -> np.ndarray:
        """Arms with importance weights but too few of them for a k-hat (NaN)."""
        return (self.n_weights > 0) & np.isnan(self.khat)

    @property
    def excluded(self) -> np.ndarray:
        """Arms the combination gives no weight (:mod:`pmcbandit.result`, rule 1): the unreliable ones; the
        unchecked ones while a checked importance-weight arm passed; and the :attr:`undersampled` ones while
        another importance-weight arm kept, with at least :data:`SPREAD_MIN_WEIGHTS` weights, is not.
        """
        passed = (self.n_weights > 0) & ~np.isnan(self.khat) & ~self.unreliable
        out = self.unreliable | (self.unchecked if passed.any() else False)
        spread = self.undersampled
        sound = (self.n_weights >= SPREAD_MIN_WEIGHTS) & ~out & ~spread
        return out | (spread if sound.any() else False)

    @classmethod
    def empty(cls, n_arms: int) -> "ArmReliability":
        nan = np.full(n_arms, np.nan)
        return cls(nan, nan.copy(), np.zeros(n_arms, dtype=np.int64), np.zeros(n_arms, dtype=bool), nan.copy(),
                   nan.copy())
