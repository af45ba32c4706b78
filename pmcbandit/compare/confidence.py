r"""Confidence sequences for a mean: intervals valid at every time at once, so at any stopping time.

A *confidence sequence* (CS) at level :math:`1-\alpha` is a sequence of intervals :math:`C_t` with
:math:`P(\forall t: \mu \in C_t) \ge 1-\alpha`; a run may stop whenever its data say so and the
interval at the stop still covers with probability :math:`1-\alpha`. Three are used by
:func:`pmcbandit.compare_samplers`, each as a pure ``init`` / ``update`` / ``interval`` triple over an
immutable state that holds one sequence per arm.

**Betting CS (bounded observations, exact).** Waudby-Smith & Ramdas (2024), "Estimating means of
bounded random variables by betting", JRSS-B 86(1), Sec. 4 (hedged capital, Thm 3) with the
predictable plug-in bets of eq. (26). For :math:`x_i \in [0, 1]` and a candidate mean :math:`m`,

.. math::

    \mathcal K^{+}_t(m) = \prod_{i \le t} \bigl(1 + \lambda^{+}_i(m)(x_i - m)\bigr), \qquad
    \mathcal K^{-}_t(m) = \prod_{i \le t} \bigl(1 - \lambda^{-}_i(m)(x_i - m)\bigr),

    \lambda_i = \sqrt{\frac{2\log(2/\alpha)}{\hat\sigma^2_{i-1}\, i \log(1+i)}}, \quad
    \lambda^{+}_i(m) = \min(\lambda_i, c/m), \quad \lambda^{-}_i(m) = \min(\lambda_i, c/(1-m)),

with :math:`c = \tfrac12` and the plug-in variance
:math:`\hat\sigma^2_t = (\hat\mu_t^2 + \sum_{i \le t}(x_i - \hat\mu_i)^2)/(t+1)`,
:math:`\hat\mu_t = \frac1t\sum_{i\le t} x_i` (:math:`\hat\sigma^2_0 = \tfrac14`). The paper's
prior terms (:math:`\tfrac12` in the mean, :math:`\tfrac14` in the variance) suit means of order 1;
here the means are variances that may lie orders of magnitude below the bound, so the prior is
scaled to the data seen so far (:math:`\hat\mu_t^2`, the variance of a :math:`\chi^2_1`-like
observation of mean :math:`\hat\mu_t` is about :math:`2\hat\mu_t^2`). The bets stay predictable
(they use earlier observations only), which is all Thm 3's validity needs.
Under the true mean both capitals are non-negative martingales, so by Ville's inequality the
hedged capital :math:`\max(\tfrac12\mathcal K^+_t, \tfrac12\mathcal K^-_t)` exceeds :math:`1/\alpha`
with probability at most :math:`\alpha` at any time: :math:`C_t = \{m : \text{hedged capital} <
1/\alpha\}`, intersected over time (its running intersection is also a CS). The capital is tracked
on a log-spaced grid of :math:`m` (small variances need relative, not absolute, resolution); the
interval reported is widened to the neighbouring grid points, so it contains every :math:`m` the
grid could not reject.

**Lower betting CS (non-negative observations, no upper bound, exact).** The same capital
:math:`\mathcal K^{+}_t(m)` with bets :math:`0 \le \lambda_i(m) \le c/m` is non-negative whenever
every :math:`x_i \ge 0`, because :math:`1 + \lambda_i(m)(x_i - m) \ge 1 - \lambda_i(m)\,m \ge 1 - c > 0`:
no upper bound on the data is needed. Under the true mean :math:`\mu` it is a non-negative
martingale, and Ville's inequality bounds :math:`P(\exists t: \mathcal K^{+}_t(\mu) \ge 1/\alpha)` by
:math:`\alpha` (Waudby-Smith & Ramdas 2024, Sec. 4, the capital process on its own, hedging weight
:math:`\theta = 1`; the authors' ``confseq.betting.betting_lower_cs`` is this one-sided CS for
``[0, inf)``-valued data). The lower CS is :math:`\{m : \mathcal K^{+}_t(m) < 1/\alpha\}`. Bets are
the one-sided predictable plug-in
:math:`\lambda_i = \sqrt{2\log(1/\alpha) / (\hat\sigma^2_{i-1}\, i\log(1+i))}` truncated at
:math:`c/m`, :math:`c = \tfrac12`, with :math:`\hat\sigma^2_{i-1} = (s^2 + \sum_{j<i}(x_j -
\hat\mu_j)^2)/i` in the data's own units. The scale :math:`s` is the first positive observation:
that observation and any zeros before it only set the scale and the grid of candidate means
:math:`m_g = s\,r_g` (:data:`REL_GRID`, 24 decades); betting starts with the next observation, so
the grid and every bet are fixed before the observations they are staked on. A caller may instead
give a scale fixed before the first observation (``lower_update``'s ``scale``, e.g. another
sequence's): the grid and the bets are then still fixed before every observation, so the first one
is staked too, and the sequence is exactly the one that the default gives data led by an unstaked
point equal to that scale. A mean more than 12 decades from :math:`s` gets the lower bound 0 or
:math:`10^{12}s`, valid but loose. Every bet scales with :math:`1/s`, so the sequence is the same in
any units. The sequence tests the average of
four such capitals, one with the plug-in bets and three with the constant bets :math:`c_k/m`,
:math:`c_k \in` :data:`FIXED_BETS` (an average of martingales is one; it costs at most a factor 4 in
the threshold). A constant bet :math:`c_k/m` multiplies the capital by :math:`1 - c_k + c_k x/m` per
observation: the largest, :math:`0.99/m`, rejects a mean :math:`m` once the data's geometric mean
stands a factor of about :math:`(4/\alpha)^{1/t}` above it, which is what an expensive arm
with steady observations (a chain's CPU time) needs after a few of them; the smaller ones lose less
to an observation near 0 (a heavy-tailed variance observation); the plug-in bets give the
:math:`1/\sqrt t` width later. *Grid without gaps:* a grid point's
capital is computed with the bet cap of that point, :math:`c/m_g`, which is also a valid cap for
every :math:`m \le m_g`, and :math:`\prod_i (1 + \lambda_i(x_i - m))` decreases in :math:`m`; so
:math:`\mathcal K^{+}_t(m_g) \ge 1/\alpha` rejects the whole cell :math:`(m_{g-1}, m_g]`, each
:math:`m` of it by a martingale of its own. The lower bound is the left end of the first cell not
rejected, and its running maximum is reported (the running intersection of a CS is a CS).

**Asymptotic CS (any finite-variance observations).** Waudby-Smith, Arbour, Sinha, Kennedy &
Ramdas (2024), "Time-uniform central limit theory and asymptotic confidence sequences", Ann.
Statist., Thm 2.2 (Robbins' normal mixture with the empirical variance plugged in), applied to the
standardised observations :math:`x/\sigma` (the mixing variance :math:`\rho^2` is set on that scale,
so the width does not depend on the units of :math:`x`):

.. math::

    \hat\mu_t \pm \hat\sigma_t \sqrt{\frac{2(t\rho^2 + 1)}{t^2\rho^2}
    \log\Bigl(\frac{\sqrt{t\rho^2 + 1}}{\alpha}\Bigr)},
    \qquad \rho^2 = \frac{-2\log\alpha + \log(1 - 2\log\alpha)}{t^\star},

tightest near :math:`t = t^\star`. Its coverage holds as :math:`t \to \infty` (an *asymptotic*
guarantee), not at every finite sample size. Observations without spread (a constant cost) get a
zero radius.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["BettingCS", "betting_init", "betting_update", "LowerCS", "lower_init", "lower_update", "asymptotic_radius",
           "GRID", "REL_GRID", "FIXED_BETS"]

#: Candidate means of the betting CS: 0 and a log-spaced grid on [1e-12, 1] (relative step 1.6 %).
GRID = np.concatenate(([0.0], np.geomspace(1e-12, 1.0, 1700)))
_BET_CAP = 0.5  # c of eq. (26): bets stay within half the distance to the boundary
with np.errstate(divide="ignore"):
    _CAP_PLUS = _BET_CAP / GRID  # lambda^+(m) <= c/m (inf at m = 0: no cap)
    _CAP_MINUS = _BET_CAP / (1.0 - GRID)  # lambda^-(m) <= c/(1-m)


class BettingCS(NamedTuple):
    r"""Betting confidence sequences of several means of observations in [0, 1] (one row per sequence).

    Attributes
    ----------
    n : ndarray of int64, shape (S,)
    total : ndarray, shape (S,)
        Sum of the observations.
    dev2 : ndarray, shape (S,)
        :math:`\sum_i (x_i - \hat\mu_i)^2`.
    log_plus, log_minus : tuple of S ndarrays, shape (G,)
        Log capitals :math:`\log\mathcal K^\pm_t(m)` on :data:`GRID` (a tuple, so an update
        copies only the row it changes).
    lower, upper : ndarray, shape (S,)
        The running intersection of the intervals so far.
    log_alpha : ndarray, shape (S,)
        :math:`\log \alpha` of each sequence.
    """

    n: np.ndarray
    total: np.ndarray
    dev2: np.ndarray
    log_plus: np.ndarray
    log_minus: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    log_alpha: np.ndarray


def betting_init(alpha) -> BettingCS:
    """Empty sequences, one per entry of ``alpha`` (each its own level)."""
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    s = alpha.size
    zeros = tuple(np.zeros(GRID.size) for _ in range(s))
    return BettingCS(np.zeros(s, dtype=np.int64), np.zeros(s), np.zeros(s), zeros, zeros, np.zeros(s),
                     np.ones(s), np.log(alpha))


def betting_update(cs: BettingCS, row: int, x: float) -> BettingCS:
    """``cs`` after observation ``x`` (clipped to [0, 1]) of sequence ``row``."""
    x = min(max(float(x), 0.0), 1.0)
    t = int(cs.n[row]) + 1
    if t == 1:
        sigma2_prev = 0.25
    else:  # sigma-hat^2_{t-1}, from observations 1 .. t-1 only
        mean_prev = cs.total[row] / (t - 1)
        sigma2_prev = max((mean_prev * mean_prev + cs.dev2[row]) / t, 1e-300)
    alpha = math.exp(cs.log_alpha[row])
    lam = math.sqrt(2.0 * math.log(2.0 / alpha) / (sigma2_prev * t * math.log1p(t)))
    lam_plus = np.minimum(lam, _CAP_PLUS)
    lam_minus = np.minimum(lam, _CAP_MINUS)
    row_plus = cs.log_plus[row] + np.log1p(lam_plus * (x - GRID))
    row_minus = cs.log_minus[row] + np.log1p(-lam_minus * (x - GRID))
    log_plus = cs.log_plus[:row] + (row_plus,) + cs.log_plus[row + 1:]
    log_minus = cs.log_minus[:row] + (row_minus,) + cs.log_minus[row + 1:]
    total = cs.total.copy()
    total[row] += x
    mu_hat = total[row] / t
    dev2 = cs.dev2.copy()
    dev2[row] += (x - mu_hat) ** 2
    n = cs.n.copy()
    n[row] = t
    lower, upper = cs.lower.copy(), cs.upper.copy()
    lo, hi = _grid_interval(row_plus, row_minus, -cs.log_alpha[row])
    lower[row] = max(lower[row], lo)
    upper[row] = min(upper[row], hi)
    if lower[row] > upper[row]:  # the grid rejected every point between the two: keep the hull
        lower[row], upper[row] = min(lower[row], cs.lower[row]), max(upper[row], cs.upper[row])
    return BettingCS(n, total, dev2, log_plus, log_minus, lower, upper, cs.log_alpha)


def _grid_interval(log_plus: np.ndarray, log_minus: np.ndarray, log_threshold: float) -> tuple[float, float]:
    """The grid's non-rejected hull, widened to the neighbouring grid points."""
    hedged = np.maximum(log_plus, log_minus) + math.log(0.5)
    keep = np.flatnonzero(hedged < log_threshold)
    if keep.size == 0:
        return 0.0, 1.0
    lo = GRID[keep[0] - 1] if keep[0] > 0 else 0.0
    hi = GRID[keep[-1] + 1] if keep[-1] + 1 < GRID.size else 1.0
    return float(lo), float(hi)


#: Candidate means of the lower CS relative to its scale s: 24 decades around s (relative step 2.3 %).
REL_GRID = np.geomspace(1e-12, 1e12, 2401)
_LOWER_CAP = _BET_CAP / REL_GRID  # lambda(m) <= c/m, in units of 1/s
#: The constant bets :math:`c_k/m` of the lower CS, one capital each (module docstring).
FIXED_BETS = (0.5, 0.9, 0.99)
_FIXED = np.asarray(FIXED_BETS)[:, None] / REL_GRID[None, :]  # shape (K, G), in units of 1/s


class LowerCS(NamedTuple):
    r"""Lower betting confidence sequences of several means of non-negative observations (module docstring).

    Attributes
    ----------
    n : ndarray of int64, shape (S,)
        Observations of each sequence, the scale-setting ones included.
    scale : ndarray, shape (S,)
        :math:`s`, the first positive observation or the scale given with the first observation (0
        until there is one).
    bets : ndarray of int64, shape (S,)
        Observations staked on (all but a scale-setting one).
    total, dev2 : ndarray, shape (S,)
        Sum of the staked observations and :math:`\sum (x_i - \hat\mu_i)^2` over them, in units of ``s``.
    log_plugin : tuple of S ndarrays, shape (G,)
        :math:`\log\mathcal K^{+}_t(s\,r_g)` on :data:`REL_GRID` with the plug-in bets.
    log_fixed : tuple of S ndarrays, shape (K, G)
        The same with each constant bet :math:`c_k/m` of :data:`FIXED_BETS`; the sequence tests the
        average of the ``K + 1`` capitals.
    lower : ndarray, shape (S,)
        The running maximum of the lower bounds.
    log_alpha : ndarray, shape (S,)
    """

    n: np.ndarray
    scale: np.ndarray
    bets: np.ndarray
    total: np.ndarray
    dev2: np.ndarray
    log_plugin: tuple
    log_fixed: tuple
    lower: np.ndarray
    log_alpha: np.ndarray


def lower_init(alpha) -> LowerCS:
    """Empty lower sequences, one per entry of ``alpha`` (each its own level)."""
    alpha = np.atleast_1d(np.asarray(alpha, dtype=np.float64))
    s = alpha.size
    zeros = tuple(np.zeros(REL_GRID.size) for _ in range(s))
    fixed = tuple(np.zeros(_FIXED.shape) for _ in range(s))
    return LowerCS(np.zeros(s, dtype=np.int64), np.zeros(s), np.zeros(s, dtype=np.int64), np.zeros(s), np.zeros(s),
                   zeros, fixed, np.zeros(s), np.log(alpha))


def lower_update(cs: LowerCS, row: int, x: float, scale: float = 0.0) -> LowerCS:
    """``cs`` after the non-negative observation ``x`` of sequence ``row``.

    ``scale``: a positive scale fixed before ``x`` (one that does not depend on ``x``, e.g. another
    sequence's), for a row that has none yet: ``x`` is then staked on that scale instead of setting
    the row's own (module docstring). Ignored once the row has a scale.

    A NaN or negative ``x`` is a caller's error (the observations are squares and costs): ValueError.
    ``+inf`` rejects every candidate mean (the capital of every grid point becomes infinite).
    """
    x = float(x)
    if not x >= 0.0:
        raise ValueError(f"The 'x' parameter of lower_update must be a non-negative number. Got {x!r} instead.")
    n = cs.n.copy()
    n[row] += 1
    s = float(cs.scale[row])
    if s == 0.0:
        own = cs.scale.copy()
        if scale > 0.0 and math.isfinite(scale):  # staked on a scale fixed before it
            own[row] = s = float(scale)
            cs = cs._replace(scale=own)
        else:  # no scale yet: this observation sets it (when positive) and is not staked on
            own[row] = x if math.isfinite(x) else 0.0
            return cs._replace(n=n, scale=own)
    y = x / s
    t = int(cs.bets[row]) + 1
    mean_prev = cs.total[row] / (t - 1) if t > 1 else 1.0
    sigma2_prev = max((1.0 + cs.dev2[row]) / t, 1e-300)  # s^2 = 1 in units of s: the prior term
    lam = math.sqrt(2.0 * (-cs.log_alpha[row]) / (sigma2_prev * t * math.log1p(t)))
    bet = np.minimum(lam, _LOWER_CAP)
    with np.errstate(over="ignore", invalid="ignore"):
        row_plugin = cs.log_plugin[row] + np.log1p(bet * (y - REL_GRID))
        row_fixed = cs.log_fixed[row] + np.log1p(_FIXED * (y - REL_GRID))
        row_plugin = np.where(np.isnan(row_plugin), np.inf, row_plugin)  # y = inf: every m rejected
        row_fixed = np.where(np.isnan(row_fixed), np.inf, row_fixed)
        row_capital = np.logaddexp(row_plugin, np.logaddexp.reduce(row_fixed, axis=0)) - math.log(1 + _FIXED.shape[0])
    log_plugin = cs.log_plugin[:row] + (row_plugin,) + cs.log_plugin[row + 1:]
    log_fixed = cs.log_fixed[:row] + (row_fixed,) + cs.log_fixed[row + 1:]
    bets = cs.bets.copy()
    bets[row] = t
    total, dev2 = cs.total.copy(), cs.dev2.copy()
    if math.isfinite(y):
        total[row] += y
        dev2[row] += (y - total[row] / t) ** 2
    else:
        total[row] += mean_prev
    lower = cs.lower.copy()
    kept = np.flatnonzero(row_capital < -cs.log_alpha[row])
    if kept.size == 0:
        lo = s * REL_GRID[-1]
    else:
        lo = s * REL_GRID[kept[0] - 1] if kept[0] > 0 else 0.0
    lower[row] = max(lower[row], lo)
    return LowerCS(n, cs.scale, bets, total, dev2, log_plugin, log_fixed, lower, cs.log_alpha)


def asymptotic_radius(n, var, alpha, t_star: float = 100.0) -> np.ndarray:
    """Half-width of the asymptotic CS (module docstring) after ``n`` observations of variance ``var``.

    ``inf`` where ``n < 2`` (no variance estimate yet).
    """
    n = np.asarray(n, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    log_alpha = np.log(np.asarray(alpha, dtype=np.float64))
    rho2 = (-2.0 * log_alpha + np.log1p(-2.0 * log_alpha)) / t_star
    a = n * rho2 + 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.sqrt(var * 2.0 * a / (n * n * rho2) * (0.5 * np.log(a) - log_alpha))
    return np.where(n >= 2, r, np.inf)
