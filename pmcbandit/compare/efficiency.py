r"""Which arms are the most efficient? A LUCB rule on confidence sequences for the log-efficiency.

**Statistic.** One decision of an arm is a *pair* of independent pulls :math:`X, X'` (each the
pull's estimate, :mod:`pmcbandit.arms.base`), so

.. math::

    V = \tfrac12 (X - X')^2, \qquad \mathbb E[V] = \sigma^2 = \mathrm{Var}(X),

is an unbiased observation of the arm's variance per pull, and the pulls' costs :math:`c` are
observations of its cost per pull :math:`\bar c`. The *efficiency* is
:math:`\eta = 1/(\sigma^2 \bar c)` (the inverse of the variance of an estimate that costs one unit
of budget, Hammersley & Handscomb 1964, Sec. 5.1; Neufeld et al. 2014, Sec. 5 allocate by the same
product :math:`V_k\delta_k`). Log-scale arms (evidence) are compared through the variance of their
log estimates, :math:`\mathrm{Var}(\log\hat Z) \approx \mathrm{Var}(\hat Z)/Z^2` (delta method), the
relative variance that their inverse-variance combination uses.

**Intervals.** Each arm has a confidence sequence (:mod:`pmcbandit.compare.confidence`) for
:math:`\sigma^2` and, unless its cost is declared, one for :math:`\bar c`, each at level
:math:`\delta/(N m)` (:math:`m` = 2 sequences per arm with measured costs, 1 with declared ones),
so by a union bound *all* of them hold at every time with probability :math:`1-\delta`; then

.. math::

    \log\eta \in \bigl[-\log U_{\sigma^2} - \log U_c,\; -\log L_{\sigma^2} - \log L_c\bigr]
    \quad\text{simultaneously for every arm and every time.}

With ``bounds=(a, b)`` on the estimates, :math:`V \in [0, (b-a)^2/2]` and the variance sequence is
the exact betting CS; with declared costs too the whole statement is exact (**δ-correct**).
Otherwise the asymptotic CS is used (**asymptotic**: the guarantee holds as the pair counts grow).

**Rule.** LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone 2012, Alg. 1) on these intervals: after
``min_pairs`` pairs of every arm, let :math:`J` be the ``k`` arms with the largest point
log-efficiency :math:`-\log\bar V - \log\bar c`, :math:`h = \arg\min_{i\in J} L_i` and
:math:`l = \arg\max_{i\notin J} U_i`; stop when :math:`L_h \ge U_l - \log(1+\epsilon)`, else draw a
pair of both. On the event that every interval holds, a stop returns ``k`` arms each at least
:math:`1/(1+\epsilon)` times as efficient as the ``k``-th best: the answer is wrong with probability
at most :math:`\delta`. Ties in the point estimates and the initial round are broken at random.

**Degenerate arms.** An arm whose pairs all agree exactly (:math:`\bar V = 0`, a deterministic
estimator) has point efficiency :math:`+\infty` and upper bound :math:`+\infty`; it is ranked on its
lower bound like any other arm (the validity gate, :mod:`pmcbandit.compare.gate`, is what
excludes a constant that is wrong).

The *fixed-allocation protocol* the benchmark compares against draws a pair of every arm per
round until :func:`all_separated` holds (every two arms' intervals are disjoint).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pmcbandit.compare.confidence import BettingCS, asymptotic_radius, betting_init, betting_update
from pmcbandit.identification.base import Selection

__all__ = ["EfficiencyRule", "EfficiencyState", "default_min_pairs", "init", "update", "log_efficiency", "select",
           "stop", "recommend",
           "unresolved", "all_separated"]


class EfficiencyRule(NamedTuple):
    """The settings of a comparison (see the module docstring).

    ``variance_bound``: :math:`(b-a)^2/2` when the estimates are bounded (exact betting CS), else
    ``None`` (asymptotic CS). ``costs``: declared cost per pull of each arm, or ``None`` (measured).
    ``min_pairs``: pairs of every arm before the rule starts; :func:`default_min_pairs` gives the
    defaults. ``width_scale`` multiplies every interval's half-width on the log scale (1 in use; tests
    shrink it to show that the error-rate check can fail).
    """

    k: int
    delta: float
    n_arms: int
    variance_bound: float | None = None
    costs: tuple | None = None
    epsilon: float = 0.0
    min_pairs: int = 10
    t_star: float = 100.0
    width_scale: float = 1.0

    @property
    def alpha(self) -> float:
        """Level of each arm's sequence: :math:`\\delta / (N m)`."""
        return self.delta / (self.n_arms * (1 if self.costs is not None else 2))

    @property
    def exact(self) -> bool:
        """Whether the guarantee is exact (bounded estimates and declared costs) rather than asymptotic."""
        return self.variance_bound is not None and self.costs is not None


class EfficiencyState(NamedTuple):
    """Per-arm sums over pairs (``v``: :math:`V`) and pulls (``c``: costs), and the betting CS."""

    pairs: np.ndarray
    v_sum: np.ndarray
    v_sq: np.ndarray
    pulls: np.ndarray
    c_sum: np.ndarray
    c_sq: np.ndarray
    betting: BettingCS | None


def default_min_pairs(exact: bool) -> int:
    """Pairs of every arm before the rule starts: 3 with exact (betting) sequences, whose coverage
    holds from the first pair, and 10 with asymptotic ones, whose coverage needs the variance of
    :math:`V` to be estimated from enough pairs — with fewer, an arm whose few pairs happen to
    agree gets a narrow interval that can drop it from the top ``k`` for good
    (``benchmarks/results/bench_compare.md`` measures both)."""
    return 3 if exact else 10


def init(rule: EfficiencyRule) -> EfficiencyState:
    n = rule.n_arms
    z = np.zeros(n)
    betting = betting_init(np.full(n, rule.alpha)) if rule.variance_bound is not None else None
    return EfficiencyState(np.zeros(n, dtype=np.int64), z, z.copy(), np.zeros(n, dtype=np.int64), z.copy(), z.copy(),
                           betting)


def update(rule: EfficiencyRule, state: EfficiencyState, arm: int, x1: float, x2: float, c1: float,
           c2: float) -> EfficiencyState:
    """``state`` after one pair of ``arm``: estimates ``x1, x2`` at costs ``c1, c2``."""
    v = 0.5 * (x1 - x2) ** 2
    pairs, v_sum, v_sq = state.pairs.copy(), state.v_sum.copy(), state.v_sq.copy()
    pulls, c_sum, c_sq = state.pulls.copy(), state.c_sum.copy(), state.c_sq.copy()
    pairs[arm] += 1
    v_sum[arm] += v
    v_sq[arm] += v * v
    pulls[arm] += 2
    c_sum[arm] += c1 + c2
    c_sq[arm] += c1 * c1 + c2 * c2
    betting = state.betting
    if betting is not None:
        betting = betting_update(betting, arm, v / rule.variance_bound)
    return EfficiencyState(pairs, v_sum, v_sq, pulls, c_sum, c_sq, betting)


def _mean_var(total, sq, n):
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
        var = np.where(n > 1, (sq - n * mean * mean) / np.maximum(n - 1, 1), np.nan)
    return mean, np.maximum(var, 0.0)


def variance_bounds(rule: EfficiencyRule, state: EfficiencyState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and confidence bounds of each arm's variance per pull :math:`\\sigma^2`."""
    v_mean, v_var = _mean_var(state.v_sum, state.v_sq, state.pairs)
    if state.betting is not None:
        lo = state.betting.lower * rule.variance_bound
        hi = state.betting.upper * rule.variance_bound
    else:
        r = asymptotic_radius(state.pairs, v_var, rule.alpha, rule.t_star)
        lo, hi = np.maximum(v_mean - r, 0.0), v_mean + r
    return v_mean, lo, hi


def cost_bounds(rule: EfficiencyRule, state: EfficiencyState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and confidence bounds of each arm's cost per pull (exact when declared)."""
    if rule.costs is not None:
        c = np.asarray(rule.costs, dtype=np.float64)
        return c, c, c
    c_mean, c_var = _mean_var(state.c_sum, state.c_sq, state.pulls)
    r = asymptotic_radius(state.pulls, c_var, rule.alpha, rule.t_star)
    return c_mean, np.maximum(c_mean - r, 0.0), c_mean + r


def log_efficiency(rule: EfficiencyRule, state: EfficiencyState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate, lower and upper bound of each arm's :math:`\\log\\eta` (module docstring).

    Arms without a pair: NaN point, bounds :math:`(-\\infty, +\\infty)`.
    """
    v, v_lo, v_hi = variance_bounds(rule, state)
    c, c_lo, c_hi = cost_bounds(rule, state)
    with np.errstate(divide="ignore", invalid="ignore"):
        point = -np.log(v) - np.log(c)
        lower = -np.log(v_hi) - np.log(c_hi)
        upper = -np.log(v_lo) - np.log(c_lo)
    lower = np.where(np.isnan(lower), -np.inf, lower)
    upper = np.where(np.isnan(upper), np.inf, upper)
    if rule.width_scale != 1.0:
        finite = np.isfinite(point)
        lower = np.where(finite, point - rule.width_scale * (point - lower), lower)
        upper = np.where(finite, point + rule.width_scale * (upper - point), upper)
    return point, lower, upper


def _ranking(rng, point: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Eligible arms, largest point log-efficiency first, ties (and NaNs, last) in random order."""
    idx = np.flatnonzero(eligible)
    noise = rng.random(idx.size) if rng is not None else np.arange(idx.size)[::-1] / (idx.size + 1.0)
    key = np.where(np.isnan(point[idx]), -np.inf, point[idx])
    return idx[np.lexsort((-noise, -key))]


def select(rule: EfficiencyRule, rng: np.random.Generator, state: EfficiencyState, eligible: np.ndarray) -> Selection:
    """The next decision: a pair of the least-sampled arm until each has ``min_pairs``, then a pair of
    each of the two LUCB arms (module docstring)."""
    idx = np.flatnonzero(eligible)
    young = idx[state.pairs[idx] < rule.min_pairs]
    if young.size:
        fewest = young[state.pairs[young] == state.pairs[young].min()]
        return Selection.one(int(fewest[rng.integers(fewest.size)]), 2)
    h, low = _critical_pair(rule, rng, state, eligible)
    if low is None:
        return Selection.one(h, 2)
    return Selection((h, low), (2, 2))


def _critical_pair(rule, rng, state, eligible, bounds=None):
    """LUCB's two arms ``(h, l)`` (``l`` is None when no arm is outside the top ``k``), from the
    log-efficiency ``bounds`` (computed when not given)."""
    point, lower, upper = log_efficiency(rule, state) if bounds is None else bounds
    order = _ranking(rng, point, eligible)
    top, rest = order[:rule.k], order[rule.k:]
    h = int(top[np.argmin(lower[top])])
    if rest.size == 0:
        return h, None
    return h, int(rest[np.argmax(upper[rest])])


def stop(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> bool:
    """Whether the ``k`` leaders' lower bounds clear every other arm's upper bound (module docstring)."""
    idx = np.flatnonzero(eligible)
    if idx.size <= rule.k:
        return True
    if (state.pairs[idx] < rule.min_pairs).any():
        return False
    bounds = log_efficiency(rule, state)
    h, low = _critical_pair(rule, None, state, eligible, bounds)
    return bool(bounds[1][h] >= bounds[2][low] - math.log1p(rule.epsilon))


def recommend(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> np.ndarray:
    """The ``k`` eligible arms with the largest point log-efficiency, best first (fewer if fewer are eligible)."""
    point, _, _ = log_efficiency(rule, state)
    return _ranking(None, point, eligible)[:rule.k].astype(np.int64)


def unresolved(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> np.ndarray:
    """Eligible arms whose interval still straddles the boundary between the top ``k`` and the rest:
    a leader whose lower bound does not clear the best upper bound outside, or an outsider whose upper
    bound reaches the lowest lower bound inside."""
    point, lower, upper = log_efficiency(rule, state)
    top = _ranking(None, point, eligible)[:rule.k]
    rest = np.setdiff1d(np.flatnonzero(eligible), top)
    if rest.size == 0 or top.size == 0:
        return np.zeros(0, dtype=np.int64)
    slack = math.log1p(rule.epsilon)
    out = [i for i in top if lower[i] < upper[rest].max() - slack]
    out += [j for j in rest if upper[j] - slack > lower[top].min()]
    return np.asarray(sorted(out), dtype=np.int64)


def all_separated(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> bool:
    """Whether every two eligible arms' log-efficiency intervals are disjoint (the fixed-allocation
    protocol's stopping rule: the whole ranking is resolved)."""
    idx = np.flatnonzero(eligible)
    _, lower, upper = log_efficiency(rule, state)
    order = idx[np.argsort(lower[idx])]
    return bool(np.all(upper[order[:-1]] < lower[order[1:]]))
