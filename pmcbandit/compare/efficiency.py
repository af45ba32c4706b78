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

**Vector estimates.** When the arms declare the components of a vector estimate
(:attr:`~pmcbandit.arms.base.Arm.components`, e.g. every scaled posterior mean of a sampler run,
:func:`pmcbandit.arms.samplers.sampler_arms`), a pair gives
:math:`V = \tfrac12\sum_j (X_j - X'_j)^2`, an unbiased observation of :math:`\sum_j \mathrm{Var}(X_j)`
with :math:`d` degrees of freedom instead of one (fewer when the components are correlated); the
efficiency is :math:`1/(\bar c\sum_j\mathrm{Var}(X_j))` and everything below applies unchanged.

**Intervals.** Each arm has confidence sequences (:mod:`pmcbandit.compare.confidence`) for
:math:`\sigma^2` and, unless its cost is declared, for :math:`\bar c`, each at level
:math:`\alpha = \delta/(N m)` (:math:`m` = 2 quantities per arm with measured costs, 1 with declared
ones), so by a union bound *all* of them hold at every time with probability :math:`1-\delta`; then

.. math::

    \log\eta \in \bigl[-\log U_{\sigma^2} - \log U_c,\; -\log L_{\sigma^2} - \log L_c\bigr]
    \quad\text{simultaneously for every arm and every time.}

* With ``bounds=(a, b)`` on the estimates, :math:`V \in [0, (b-a)^2/2]` and the variance sequence
  is the exact two-sided betting CS at level :math:`\alpha`.
* Otherwise (``lower="betting"``, the default) each quantity's *lower* bound is the exact lower
  betting CS for a non-negative mean at level :math:`\alpha/2` (:math:`V \ge 0` and costs
  :math:`> 0` need no upper bound), and its *upper* bound the upper side of the asymptotic CS at
  two-sided level :math:`\alpha` (about :math:`\alpha/2` on that side). Every arm's efficiency thus
  has a finite upper bound once a few of its pairs are in, however heavy the tails of its estimates,
  so a heavy-tailed arm can be shown to be worse. Such a sequence stakes nothing on the observation
  that sets its grid's scale; an arm without one takes another arm's (the first in order that has
  one), fixed before its own pairs, so only the run's first pair (and first cost) sets a scale
  without being staked. A measured cost's lower bound is the larger of two, each at level
  :math:`\alpha/4` (a union bound): that exact CS and the lower side of the asymptotic CS. A bound
  valid for every non-negative distribution cannot come closer to a mean than about a factor
  :math:`(1/\alpha)^{1/t}` after :math:`t` observations (the data could hold a rare zero not yet
  seen), which for steady costs (a chain's CPU time) would take most of a tolerance
  :math:`\epsilon = 1`; the asymptotic side follows the costs' own spread. It is used from the
  second pair on (:data:`STEADY_MIN_PULLS`): two costs that happen to agree say little about the
  spread. Like the asymptotic upper bounds, it can miss for a while when rare pulls are much cheaper
  than the rest and none has come yet.
  ``lower="asymptotic"`` uses the two-sided asymptotic CS for both bounds (a variance whose
  observations are heavy-tailed then often keeps the lower bound 0: an infinite efficiency bound).

With bounds and declared costs the whole statement is exact (**δ-correct**); otherwise the lower
efficiency bounds rest on the asymptotic CS (**asymptotic**: the guarantee holds as the pair
counts grow), and so do the upper ones through the measured costs; with declared costs the upper
efficiency bounds are exact for i.i.d. pulls. An arm with fewer than
``min_pairs`` pairs has lower bound :math:`-\infty`: an asymptotic upper variance bound from a few
pairs that happen to agree is not trusted.

**Stop rule.** After ``initial_pairs`` pairs of every arm, let :math:`J` be the ``k`` arms with the
largest point log-efficiency :math:`-\log\bar V - \log\bar c` (ties at random), :math:`h =
\arg\min_{i\in J} L_i`, and for every other arm :math:`j`, with :math:`e = \log(1+\epsilon)`:

* :math:`j` is *separated* when :math:`L_h \ge U_j` (proven less efficient than every arm of :math:`J`);
* :math:`j` is *tied* when it is not separated but :math:`U_j - L_h \le e`: it is proven at most
  :math:`1+\epsilon` times as efficient as :math:`h`, so at tolerance :math:`\epsilon` the run
  cannot, and need not, tell the two apart.

The run stops when every arm outside :math:`J` is separated or tied: the stopping rule of LUCB1
(Kalyanakrishnan, Tewari, Auer & Stone 2012, Alg. 1, stop when :math:`U_l - L_h < \epsilon`), here
on the log scale, so :math:`\epsilon` is a tolerance on the efficiency *ratio*. On the event that
every interval holds, each selected arm is at least :math:`1/(1+\epsilon)` times as efficient as
every other arm (:math:`\eta_j \le e^{U_j} \le (1+\epsilon) e^{L_h} \le (1+\epsilon)\eta_i`,
:math:`i \in J`), so the answer is wrong with probability at most :math:`\delta`. A tie is one-sided
on purpose: asking also for :math:`U_h - L_j \le e` (the ratio proven inside
:math:`[1/(1+\epsilon), 1+\epsilon]` both ways) adds nothing to that statement and, for an arm
behind the leader but not yet separated, costs many more pairs. With :math:`\epsilon = 0` only
separation ends a run.

**Sampling rule.** The critical arms are :math:`h` and :math:`l = \arg\max U_j` over the arms
outside :math:`J` neither separated nor tied. ``sampling="both"`` draws a pair of each (LUCB1).
``sampling="cost"`` (the default) draws a pair of the one whose next pair shrinks the deciding
gap most per unit of cost: a confidence width falls as :math:`n^{-1/2}`, so one more pair takes
about :math:`w_i/(2 n_i)` off arm :math:`i`'s log-efficiency width :math:`w_i = U_i - L_i` (both ends
enter the gap) at a cost :math:`2\bar c_i`; the rule draws
:math:`\arg\max_{i\in\{h,l\}} w_i / (n_i \bar c_i)` (an infinite width first, the cheaper pair of
two infinite ones; ties at random). The stop rule and its guarantee do not depend on how pairs are
allocated, since every sequence is time-uniform.

**Degenerate arms.** An arm whose pairs all agree exactly (:math:`\bar V = 0`, a deterministic
estimator) has point efficiency :math:`+\infty` and upper bound :math:`+\infty`; it is ranked on its
lower bound like any other arm (the validity gate, :mod:`pmcbandit.compare.gate`, is what
excludes a constant that is wrong).

The *fixed-allocation protocol* the benchmark compares against draws a pair of every arm per
round until :func:`all_separated` holds (every two arms' intervals are disjoint).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np

from pmcbandit.compare.confidence import (BettingCS, LowerCS, asymptotic_radius, betting_init, betting_update,
                                          lower_init, lower_update)
from pmcbandit.base import Selection

__all__ = ["EfficiencyRule", "EfficiencyState", "ComparisonAlgorithm", "efficiency_lucb", "default_min_pairs", "init",
           "update", "log_efficiency", "select", "stop", "recommend", "unresolved", "tied", "proven_factor",
           "ratio_to_runner_up",
           "all_separated"]

LOWERS = ("betting", "asymptotic")
#: Pulls before a measured cost's lower bound may use the asymptotic sequence (module docstring).
STEADY_MIN_PULLS = 4
SAMPLINGS = ("cost", "both")


class EfficiencyRule(NamedTuple):
    """The settings of a comparison (see the module docstring).

    ``variance_bound``: :math:`(b-a)^2/2` when the estimates are bounded (exact two-sided betting
    CS), else ``None``. ``costs``: declared cost per pull of each arm, or ``None`` (measured).
    ``min_pairs``: pairs an arm needs before its lower efficiency bound is used
    (:func:`default_min_pairs`); ``initial_pairs``: pairs of every arm before the rule chooses.
    ``lower``: ``"betting"`` or ``"asymptotic"`` lower bounds without ``variance_bound``;
    ``sampling``: ``"cost"`` or ``"both"``. ``width_scale`` multiplies every interval's
    half-width on the log scale (1 in use; tests shrink it to show that the error-rate check can fail).
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
    initial_pairs: int = 2
    lower: str = "betting"
    sampling: str = "cost"

    @property
    def alpha(self) -> float:
        """Level of each quantity's sequence: :math:`\\delta / (N m)`."""
        return self.delta / (self.n_arms * (1 if self.costs is not None else 2))

    @property
    def exact(self) -> bool:
        """Whether the guarantee is exact (bounded estimates and declared costs) rather than asymptotic."""
        return self.variance_bound is not None and self.costs is not None

    @property
    def nonneg_lower(self) -> bool:
        """Whether lower bounds come from the lower betting CS for non-negative means."""
        return self.lower == "betting"


class EfficiencyState(NamedTuple):
    """Per-arm sums over pairs (``v``: :math:`V`) and pulls (``c``: costs), and the betting sequences
    (``betting``: two-sided, bounded :math:`V`; ``v_lower``, ``c_lower``: lower, non-negative).
    """

    pairs: np.ndarray
    v_sum: np.ndarray
    v_sq: np.ndarray
    pulls: np.ndarray
    c_sum: np.ndarray
    c_sq: np.ndarray
    betting: BettingCS | None
    v_lower: LowerCS | None = None
    c_lower: LowerCS | None = None


def default_min_pairs(exact: bool) -> int:
    """Pairs an arm needs before its lower efficiency bound is used: 3 with exact (betting)
    sequences, whose coverage holds from the first pair, and 10 with asymptotic ones, whose coverage
    needs the variance of :math:`V` to be estimated from enough pairs — with fewer, an arm whose few
    pairs happen to agree gets a narrow interval (``benchmarks/results/bench_compare.md`` measures both).
    """
    return 3 if exact else 10


def init(rule: EfficiencyRule) -> EfficiencyState:
    """Empty statistics and sequences for every arm of ``rule``."""
    n = rule.n_arms
    z = np.zeros(n)
    betting = betting_init(np.full(n, rule.alpha)) if rule.variance_bound is not None else None
    v_lower = lower_init(np.full(n, rule.alpha / 2)) if betting is None and rule.nonneg_lower else None
    c_lower = lower_init(np.full(n, rule.alpha / 4)) if rule.costs is None and rule.nonneg_lower else None
    return EfficiencyState(np.zeros(n, dtype=np.int64), z, z.copy(), np.zeros(n, dtype=np.int64), z.copy(), z.copy(),
                           betting, v_lower, c_lower)


def update(rule: EfficiencyRule, state: EfficiencyState, arm: int, x1, x2, c1: float,
           c2: float) -> EfficiencyState:
    """``state`` after one pair of ``arm``: estimates ``x1, x2`` at costs ``c1, c2``.

    Scalars give :math:`V = \\tfrac12(x_1 - x_2)^2`; vectors (the components of a vector estimate,
    :attr:`~pmcbandit.arms.base.Arm.components`) give :math:`V = \\tfrac12\\sum_j (x_{1j} - x_{2j})^2`.
    """
    v = 0.5 * float(np.sum((np.asarray(x1, dtype=np.float64) - np.asarray(x2, dtype=np.float64)) ** 2))
    pairs, v_sum, v_sq = state.pairs.copy(), state.v_sum.copy(), state.v_sq.copy()
    pulls, c_sum, c_sq = state.pulls.copy(), state.c_sum.copy(), state.c_sq.copy()
    pairs[arm] += 1
    v_sum[arm] += v
    v_sq[arm] += v * v
    pulls[arm] += 2
    c_sum[arm] += c1 + c2
    c_sq[arm] += c1 * c1 + c2 * c2
    betting, v_lower, c_lower = state.betting, state.v_lower, state.c_lower
    if betting is not None:
        betting = betting_update(betting, arm, v / rule.variance_bound)
    if v_lower is not None:
        v_lower = lower_update(v_lower, arm, v, _borrowed(v_lower, arm))
    if c_lower is not None:
        c_lower = lower_update(lower_update(c_lower, arm, c1, _borrowed(c_lower, arm)), arm, c2)
    return EfficiencyState(pairs, v_sum, v_sq, pulls, c_sum, c_sq, betting, v_lower, c_lower)


def _borrowed(cs: LowerCS, arm: int) -> float:
    """A scale for ``arm``'s lower sequence: the first other arm's scale, 0 if ``arm`` has its own or no
    other arm has one yet (module docstring).
    """
    if cs.scale[arm] > 0:  # the usual case: the sequence ignores a given scale once it has one
        return 0.0
    others = np.delete(cs.scale, arm)
    others = others[others > 0]
    return float(others[0]) if others.size else 0.0


def _mean_var(total, sq, n):
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
        var = np.where(n > 1, (sq - n * mean * mean) / np.maximum(n - 1, 1), np.nan)
    return mean, np.maximum(var, 0.0)


def _bounds(rule, mean, var, n, lower_cs):
    """Lower and upper bound of a non-negative mean: asymptotic, or betting below and asymptotic above."""
    r = asymptotic_radius(n, var, rule.alpha, rule.t_star)
    lo = np.maximum(mean - r, 0.0) if lower_cs is None else lower_cs.lower.copy()
    return np.where(n > 0, lo, 0.0), mean + r


def variance_bounds(rule: EfficiencyRule, state: EfficiencyState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and confidence bounds of each arm's variance per pull :math:`\\sigma^2`."""
    v_mean, v_var = _mean_var(state.v_sum, state.v_sq, state.pairs)
    if state.betting is not None:
        return v_mean, state.betting.lower * rule.variance_bound, state.betting.upper * rule.variance_bound
    lo, hi = _bounds(rule, v_mean, v_var, state.pairs, state.v_lower)
    return v_mean, lo, hi


def cost_bounds(rule: EfficiencyRule, state: EfficiencyState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate and confidence bounds of each arm's cost per pull (exact when declared)."""
    if rule.costs is not None:
        c = np.asarray(rule.costs, dtype=np.float64)
        return c, c, c
    c_mean, c_var = _mean_var(state.c_sum, state.c_sq, state.pulls)
    lo, hi = _bounds(rule, c_mean, c_var, state.pulls, state.c_lower)
    if state.c_lower is not None:  # the betting bound (at alpha/4) or the asymptotic one at alpha/4, the larger
        with np.errstate(invalid="ignore"):
            asymptotic = c_mean - asymptotic_radius(state.pulls, c_var, rule.alpha / 2, rule.t_star)
        lo = np.where(state.pulls >= STEADY_MIN_PULLS, np.fmax(lo, asymptotic), lo)
    return c_mean, lo, hi


def log_efficiency(rule: EfficiencyRule, state: EfficiencyState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate, lower and upper bound of each arm's :math:`\\log\\eta` (module docstring).

    Arms without a pair: NaN point, bounds :math:`(-\\infty, +\\infty)`; arms with fewer than
    ``min_pairs`` pairs: lower bound :math:`-\\infty`.
    """
    v, v_lo, v_hi = variance_bounds(rule, state)
    c, c_lo, c_hi = cost_bounds(rule, state)
    with np.errstate(divide="ignore", invalid="ignore"):
        point = -np.log(v) - np.log(c)
        lower = -np.log(v_hi) - np.log(c_hi)
        upper = -np.log(v_lo) - np.log(c_lo)
    lower = np.where(np.isnan(lower) | (state.pairs < rule.min_pairs), -np.inf, lower)
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


class _Verdict(NamedTuple):
    """The top ``k`` (best first), their weakest ``h``, the challenger ``l`` (-1: none left), and
    the arms outside separated from / tied with ``h``.
    """

    top: np.ndarray
    h: int
    l: int
    separated: np.ndarray
    tied: np.ndarray


def _verdict(rule, rng, eligible, bounds) -> _Verdict:
    point, lower, upper = bounds
    order = _ranking(rng, point, eligible)
    top, rest = order[:rule.k], order[rule.k:]
    h = int(top[np.argmin(lower[top])])
    e = math.log1p(rule.epsilon)
    separated = rest[lower[h] >= upper[rest]]
    close = (upper[rest] - lower[h] <= e) & (lower[h] < upper[rest])
    tied_arms = rest[close]
    open_ = rest[~np.isin(rest, separated) & ~close]
    l = int(open_[np.argmax(upper[open_])]) if open_.size else -1
    return _Verdict(top, h, l, separated, tied_arms)


def select(rule: EfficiencyRule, rng: np.random.Generator, state: EfficiencyState, eligible: np.ndarray) -> Selection:
    """The next decision: a pair of the least-sampled arm until each has ``initial_pairs``, then the
    sampling rule's pair(s) (module docstring).
    """
    idx = np.flatnonzero(eligible)
    young = idx[state.pairs[idx] < rule.initial_pairs]
    if young.size:
        fewest = young[state.pairs[young] == state.pairs[young].min()]
        return Selection.one(int(fewest[rng.integers(fewest.size)]), 2)
    bounds = log_efficiency(rule, state)
    v = _verdict(rule, rng, eligible, bounds)
    if v.l < 0:  # nothing left open (a stop the caller has not acted on yet): refine the leader
        return Selection.one(v.h, 2)
    if rule.sampling == "both":
        return Selection((v.h, v.l), (2, 2))
    return Selection.one(_cheapest_shrink(rng, rule, state, bounds, (v.h, v.l)), 2)


def _cheapest_shrink(rng, rule, state, bounds, arms) -> int:
    """Of ``arms``, the one maximising :math:`w_i / (n_i \\bar c_i)` (module docstring)."""
    arms = np.asarray(arms)
    c, _, _ = cost_bounds(rule, state)
    cost = np.where(np.isfinite(c[arms]) & (c[arms] > 0), c[arms], 1.0) * np.maximum(state.pairs[arms], 1)
    width = bounds[2][arms] - bounds[1][arms]
    infinite = ~np.isfinite(width)
    # An infinite width shrinks by an infinite amount: of such arms the cheaper pair goes first.
    score = np.where(infinite, -cost, -np.inf) if infinite.any() else width / cost
    best = np.flatnonzero(score == score.max())
    return int(arms[best[rng.integers(best.size)]])


def stop(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> bool:
    """Whether every arm outside the top ``k`` is separated from or tied with them (module docstring)."""
    idx = np.flatnonzero(eligible)
    if idx.size <= rule.k:
        return True
    if (state.pairs[idx] < rule.initial_pairs).any():
        return False
    return _verdict(rule, None, eligible, log_efficiency(rule, state)).l < 0


def recommend(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> np.ndarray:
    """The ``k`` eligible arms with the largest point log-efficiency, best first (fewer if fewer are eligible)."""
    point, _, _ = log_efficiency(rule, state)
    return _ranking(None, point, eligible)[:rule.k].astype(np.int64)


def tied(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> np.ndarray:
    """Arms outside the top ``k`` not separated from its weakest member but proven at most ``1 + epsilon``
    times as efficient as it (module docstring), sorted.
    """
    if np.flatnonzero(eligible).size <= rule.k:
        return np.zeros(0, dtype=np.int64)
    return np.sort(_verdict(rule, None, eligible, log_efficiency(rule, state)).tied).astype(np.int64)


def unresolved(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> np.ndarray:
    """Eligible arms the run could not place: arms outside the top ``k`` neither separated nor tied,
    and the top arms whose lower bound does not clear them.
    """
    if np.flatnonzero(eligible).size <= rule.k:
        return np.zeros(0, dtype=np.int64)
    _, lower, upper = bounds = log_efficiency(rule, state)
    v = _verdict(rule, None, eligible, bounds)
    rest = np.setdiff1d(np.flatnonzero(eligible), v.top)
    open_ = np.setdiff1d(rest, np.concatenate((v.separated, v.tied)))
    if open_.size == 0:
        return np.zeros(0, dtype=np.int64)
    out = [i for i in v.top if lower[i] < upper[open_].max()] + list(open_)
    return np.asarray(sorted(out), dtype=np.int64)


def proven_factor(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> float:
    """The smallest :math:`f \\ge 1` such that the intervals prove every eligible arm outside the top ``k`` at
    most :math:`f` times as efficient as each top arm: :math:`\\max(1, \\max_{j\\notin J} e^{U_j - L_h})`, with
    :math:`J` and :math:`h` of the stop rule (module docstring); ``inf`` while an arm's bound is open, NaN when
    at most ``k`` arms are eligible (no other arm to prove anything of).

    On the event that every interval holds, :math:`\\eta_j \\le e^{U_j} \\le f e^{L_h} \\le f\\,\\eta_i` for every
    top arm :math:`i`, so, the sequences being time-uniform, the statement holds with probability
    :math:`1-\\delta` at whatever time the run stops, a budget included. At a stop by the rule
    :math:`f \\le 1+\\epsilon`.
    """
    idx = np.flatnonzero(eligible)
    if idx.size <= rule.k:
        return math.nan
    _, lower, upper = bounds = log_efficiency(rule, state)
    v = _verdict(rule, None, eligible, bounds)
    rest = np.setdiff1d(idx, v.top)
    with np.errstate(invalid="ignore"):
        gap = float(np.max(upper[rest]) - lower[v.h])
    return math.inf if not gap < math.inf else math.exp(max(gap, 0.0))


def ratio_to_runner_up(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray):
    """``(leader, runner_up, lower, upper)``: the interval of :math:`\\eta_{leader}/\\eta_{runner-up}`,
    the runner-up being the best other arm by point estimate; ``None`` with fewer than two arms
    or before every arm has a pair.
    """
    idx = np.flatnonzero(eligible)
    if idx.size < 2 or (state.pairs[idx] == 0).any():
        return None
    point, lower, upper = log_efficiency(rule, state)
    a, b = (int(i) for i in _ranking(None, point, eligible)[:2])
    with np.errstate(over="ignore", invalid="ignore"):
        return a, b, float(np.exp(lower[a] - upper[b])), float(np.exp(upper[a] - lower[b]))


def all_separated(rule: EfficiencyRule, state: EfficiencyState, eligible: np.ndarray) -> bool:
    """Whether every two eligible arms' log-efficiency intervals are disjoint (the fixed-allocation
    protocol's stopping rule: the whole ranking is resolved).
    """
    idx = np.flatnonzero(eligible)
    _, lower, upper = log_efficiency(rule, state)
    order = idx[np.argsort(lower[idx])]
    return bool(np.all(upper[order[:-1]] < lower[order[1:]]))


class ComparisonAlgorithm(NamedTuple):
    """The efficiency rule as pure functions bound to its settings, the shape of every algorithm in the
    package (after BlackJAX): ``init() -> state``, ``select(rng, state, eligible) -> Selection`` (``rng``
    first: it draws tie-breaks), ``update(state, arm, x1, x2, c1, c2) -> state``,
    ``stop(state, eligible) -> bool`` and ``recommend(state, eligible) -> arm indices``; ``rule`` holds the
    settings (:class:`EfficiencyRule`).
    """

    rule: EfficiencyRule
    init: Callable[[], EfficiencyState]
    select: Callable[[np.random.Generator, EfficiencyState, np.ndarray], Selection]
    update: Callable[..., EfficiencyState]
    stop: Callable[[EfficiencyState, np.ndarray], bool]
    recommend: Callable[[EfficiencyState, np.ndarray], np.ndarray]


def efficiency_lucb(rule: EfficiencyRule) -> ComparisonAlgorithm:
    """The comparison rule of this module (:func:`select`, :func:`stop`, ...) bound to ``rule``."""

    def select_(rng: np.random.Generator, state: EfficiencyState, eligible: np.ndarray) -> Selection:
        return select(rule, rng, state, eligible)

    return ComparisonAlgorithm(rule, partial(init, rule), select_, partial(update, rule), partial(stop, rule),
                               partial(recommend, rule))
