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
sample (``tests/stats/test_psis.py``: Pareto weights of true :math:`k = 0.3` cross the threshold on the way
in some simulated runs, and are hopeless in none).

How :math:`\hat k` is estimated, and the variance an arm's fitted tail implies for the
combination: :mod:`pmcbandit.stats.pareto_tail`.
"""

from __future__ import annotations

import math
from typing import NamedTuple
import numbers

import numba
import numpy as np

from pmcbandit._validation import param_message, check_positive
from pmcbandit.stats.pareto_tail import (_as_log_weights, _bad_value, _checked_log_weights, _excess_from_top,
                                         _first_bad, _khat_from_top, _top_sorted, _largest_ascending, tail_length,
                                         too_spread)

__all__ = [
    "ArmReliability", "KHAT_CAP", "KHAT_CAP_COUNT", "SPREAD_MIN_WEIGHTS", "WeightTails", "khat_threshold",
    "min_sample_size", "pareto_khat",
]

#: Fewest log weights of an unchecked arm for the spread rule of :attr:`ArmReliability.undersampled`
#: (below, the sample variance of log weights has a relative error above 1/2).
SPREAD_MIN_WEIGHTS = 10
#: The cap of :func:`khat_threshold` (PSIS Sec. 3.2.3: no practical sample size makes a larger k reliable).
KHAT_CAP = 0.7
#: The smallest count at which :func:`khat_threshold` is at its cap, :math:`\lceil 10^{1/(1-0.7)}\rceil = 2155`.
KHAT_CAP_COUNT = math.ceil(10.0 ** (1.0 / (1.0 - KHAT_CAP)))
#: Robust standard deviations below the median where :meth:`WeightTails.log_weight_variance`
#: winsorizes the log weights.
SPREAD_LOWER_MADS = 5.0
_NPZ_FIELDS = ("params", "counts", "fill", "floor", "fit_counts", "fit_khat", "kept")


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
                _largest_ascending(row, capacity, row)  # the top ``capacity``, ascending, at the front
                lo = row[0]
                f = capacity
                if not v > lo:
                    continue
            row[f] = v
            f += 1
    fill[arm] = f
    floor[arm] = lo
    counts[arm] += x.size
    return -1


def pareto_khat(log_weights) -> float:
    r"""Pareto :math:`\hat k` of the upper tail of the weights ``exp(log_weights)``.

    Equal to ``arviz.psislw(log_weights, reff=1.0)[1]`` (to rounding): tail length
    :math:`M = \lceil\min(S/5, 3\sqrt S)\rceil` of the :math:`S` weights, cutoff
    :math:`\ell_c = \max(\ell_{(S-M)} - \ell_{\max}, \log(\text{tiny}))` on the max-shifted log
    scale, tail = the weights strictly above it, exceedances :math:`e^{\ell-\ell_{\max}} - e^{\ell_c}`,
    Zhang & Stephens (2009) GPD fit with the prior :math:`\hat k \leftarrow (n\hat k + 5)/(n + 10)`
    (module docstring; Vehtari et al. 2024, PSIS). Costs :math:`O(S + M \log S)` (heap selection) plus the fit,
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
    door = "pareto_khat"
    x = _checked_log_weights(log_weights, door)
    if x.size == 0:
        raise ValueError(param_message("log_weights", door, "non-empty", log_weights))
    if x.size < 2:
        return math.inf
    return float(_khat_from_top(_top_sorted(x, tail_length(x.size) + 1)))


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
        raise ValueError(param_message("n_samples", "khat_threshold", "> 1", n_samples))
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
        raise TypeError(param_message("k", "min_sample_size", "a real number", k))
    if k != k:
        raise ValueError(param_message("k", "min_sample_size", "not NaN", k))
    if k >= 1:
        return math.inf
    return 10.0 ** (1.0 / (1.0 - float(k)))


class WeightTails:
    r"""Per-arm running Pareto :math:`\hat k` of all the log weights a run has produced.

    :meth:`add` is called after every pull with the pull's log weights; it keeps the count
    :math:`S` of all values (``-inf`` included) and the ``capacity`` largest values ever added, in a
    buffer of ``2 * capacity`` slots per arm. Once a compaction has happened, only values above the
    current floor (the smallest value kept at the last compaction) are appended, so an ``add``
    costs :math:`O(\text{batch})`; when the buffer is full it is cut down to its
    ``capacity`` largest values by heap selection (:math:`O(\text{capacity} \log \text{capacity})`, at most once
    per ``capacity`` appended values, hence amortised :math:`O(\log \text{capacity})` per value).

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
        door = "WeightTails"
        check_positive(n_arms, "n_arms", door, integer=True)
        check_positive(capacity, "capacity", door, integer=True)
        if capacity < 6:
            raise ValueError(param_message("capacity", door, ">= 6 (a fit needs 5 tail points)", capacity))
        check_positive(min_weights, "min_weights", door, integer=True)
        check_positive(refit_growth, "refit_growth", door, allow_zero=True)
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

    def _arm(self, arm, door: str) -> int:
        if isinstance(arm, bool) or not isinstance(arm, numbers.Integral):
            raise TypeError(param_message("arm", door, "an int", arm))
        if not 0 <= arm < self.n_arms:
            raise ValueError(param_message("arm", door, f"in [0, {self.n_arms})", arm))
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
        door = "WeightTails.add"
        arm = self._arm(arm, door)
        x = _as_log_weights(log_weights, "log_weights", door, (0, 1))
        bad = _add(self._buf, self._fill, self._floor, self._counts, arm, x, self.capacity)
        if bad >= 0:
            raise _bad_value(x, bad, "log_weights", door)

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
        r""":func:`~pmcbandit.stats.pareto_tail.tail_excess` of the arm's weights, fitted afresh on all of them (not
        cached: the result depends only on the weights added, so a resumed run computes the same); NaN while
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
        for their number (:func:`~pmcbandit.stats.pareto_tail.too_spread`, the rule of
        :attr:`ArmReliability.undersampled`).
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
            raise TypeError(param_message("prefix", "WeightTails.to_npz_dict", "a str", prefix))
        kept = np.concatenate([self._buf[a, : self._fill[a]] for a in range(self.n_arms)])
        params = np.array([self.n_arms, self.capacity, self.min_weights, self.refit_growth])
        arrays = (params, self._counts, self._fill, self._floor, self._fit_counts, self._fit_khat, kept)
        return {prefix + name: np.array(a, copy=True) for name, a in zip(_NPZ_FIELDS, arrays)}

    @classmethod
    def from_npz_dict(cls, data, prefix: str = "weight_tails_") -> WeightTails:
        """Rebuild the accumulator saved by :meth:`to_npz_dict` (``data``: a mapping, e.g. ``np.load``)."""
        door = "WeightTails.from_npz_dict"
        missing = [prefix + n for n in _NPZ_FIELDS if prefix + n not in data]
        if missing:
            raise ValueError(param_message("data", door, f"a mapping with the keys {missing}", sorted(data)))
        params, counts, fill, floor, fit_counts, fit_khat, kept = (np.asarray(data[prefix + n]) for n in _NPZ_FIELDS)
        n_arms, capacity, min_weights = (int(v) for v in params[:3])
        out = cls(n_arms, capacity, min_weights, float(params[3]))
        if fill.shape != (n_arms,) or kept.shape != (int(fill.sum()),) or np.any(fill > 2 * capacity):
            raise ValueError(param_message("data", door, "consistent arrays from WeightTails.to_npz_dict",
                                           "mismatched shapes"))
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
    recorded), read by the combination (:mod:`pmcbandit.stats.pareto_tail`, "The tail's share of the variance");
    ``failed`` holds, per arm flagged ``unreliable``, the k-hat, threshold and weight count at which it failed the
    check (shape ``(n_arms, 3)``, NaN rows for the others; ``None`` when not recorded): an arm taken out during
    the run is judged on the weights it had then, and its final k-hat, on all of them, may be lower.
    """

    khat: np.ndarray
    threshold: np.ndarray
    n_weights: np.ndarray
    unreliable: np.ndarray
    log_w_var: np.ndarray | None = None
    tail_excess: np.ndarray | None = None
    failed: np.ndarray | None = None

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
        if self.log_w_var is None or not self.n_weights.any():  # no arm has weights: none is unchecked
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
        return self.excluded_with(None)

    def excluded_with(self, out) -> np.ndarray:
        """:attr:`excluded` when the arms of the mask ``out`` (or None) are left out for a reason of their own (an
        estimate shown too low, :mod:`pmcbandit.stats.missed_mass`): they are excluded too, and count neither as
        an arm that passed nor as one kept.
        """
        other = np.zeros(self.unreliable.shape, dtype=bool) if out is None else np.asarray(out, dtype=bool)
        if not self.n_weights.any():  # no importance-weight arm: only the unreliable ones (none passed, none spread)
            return self.unreliable | other
        passed = (self.n_weights > 0) & ~np.isnan(self.khat) & ~self.unreliable & ~other
        out = self.unreliable | other | (self.unchecked if passed.any() else False)
        spread = self.undersampled
        sound = (self.n_weights >= SPREAD_MIN_WEIGHTS) & ~out & ~spread
        return out | (spread if sound.any() else False)

    @classmethod
    def empty(cls, n_arms: int) -> "ArmReliability":
        nan = np.full(n_arms, np.nan)
        return cls(nan, nan.copy(), np.zeros(n_arms, dtype=np.int64), np.zeros(n_arms, dtype=bool), nan.copy(),
                   nan.copy(), np.full((n_arms, 3), np.nan))
