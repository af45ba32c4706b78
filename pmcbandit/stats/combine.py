r"""Combine the observations of all arms into one estimate with an honest standard error.

Three combiners: the two of Neufeld et al. 2014 (Sec. 3 and Sec. 6.3), and the second with cross-fitted weights:

``"uniform"``
    the plain average of all ``n`` observations, :math:`\hat\mu = \frac1n\sum_t Y_t`
    (the estimator :math:`\mathcal{A}^{avg}` of Thm 1). By Thm 1 (eq. 12),
    :math:`\mathrm{MSE} = \frac{1}{n^2}\sum_k \mathbb{E}[T_k]V_k`, so we report
    :math:`\widehat{SE}^2 = \frac{1}{n^2}\sum_k T_k \hat V_k`.
``"inverse_variance"``
    each observation weighted inversely to its arm's sample variance, i.e. the
    arm means weighted by :math:`w_k = T_k/\hat V_k`:
    :math:`\hat\mu = \sum_k w_k \bar Y_k / W`, :math:`W = \sum_k w_k`. The plug-in
    variance :math:`1/W` ignores that the weights are estimated; we use Meier's
    (1953, "Variance of a weighted mean", Biometrics 9) first-order correction
    :math:`\widehat{SE}^2 = \frac1W\bigl[1 + 4\sum_k \frac{1}{\nu_k}\frac{w_k}{W}(1-\frac{w_k}{W})\bigr]`
    with :math:`\nu_k` the degrees of freedom of :math:`\hat V_k`.

``"cross_fitted"``
    the inverse-variance combination with weights each estimated on pulls other than the ones they weight: each
    weighted arm's pulls are split into two halves by the order they came in (alternately), the arm means of one half
    are weighted by :math:`T_{k,h}/\hat V_{k,1-h}` (counts of the half, variance estimated on the other half), and
    the estimate is the average of the two halves' combinations,
    :math:`\hat\mu = \frac12\sum_h\sum_k c_{k,h}\bar Y_{k,h}` with :math:`c_{k,h}` the normalised weights.
    Given the other half the weights are fixed, so each half's combination is unbiased, and
    :math:`\widehat{SE}^2 = \frac14\sum_h\sum_k c_{k,h}^2\hat V_{k,h}/T_{k,h}` needs no correction for
    estimated weights (the cross-fitting of Chernozhukov et al. 2018, "Double/debiased machine learning", Sec. 3).
    With a single sample, an arm whose sample happened to miss its rare large values reads both low and with a
    small variance, and so takes more of the weight exactly when it is low; right-skewed values (importance
    weights) make the inverse-variance estimate lean low for that reason (``benchmarks/bench_combine_skew.py``),
    which the cross-fitted weights cannot. The price is robustness: weights from the other half cannot see a rare,
    very large value in the half they weight, so where one arrives (importance weights of near-infinite variance) the
    estimate takes it in at its arm's full share, with an SE that grows to match, where inverse-variance weights from
    the same pulls would all but drop it (``benchmarks/bench_pool_hierarchies.py``). It weights only arms whose
    variance estimates have :data:`MIN_WEIGHTED_DOF` dof in both halves; if none has, the inverse-variance
    combination is returned, flagged.

Intervals use Student-t quantiles with Satterthwaite's effective degrees of
freedom: :math:`\nu = (\sum_k a_k)^2 / \sum_k a_k^2/\nu_k` with
:math:`a_k = T_k\hat V_k/n^2` (uniform), :math:`a_k = w_k` normalised (inverse
variance), or one term :math:`\frac14 c_{k,h}^2\hat V_{k,h}/T_{k,h}` per arm and half
(cross-fitted), so small-sample runs get honest, wider intervals.

Per-arm variance rule (documented degenerate cases)
---------------------------------------------------
* every pull of the arm was a batch of ``m_i >= 2`` values: the average of the within-batch
  variances of the batch means, ``nu_k = sum_i (m_i - 1)`` (the values inside a pull are i.i.d.,
  so this is unbiased for the variance of an observation and has far more dof than the next);
* else ``T_k >= 2``: the sample variance of the arm's observations (``ddof=1``), ``nu_k = T_k - 1``.
* otherwise: the pooled variance of all observations, ``nu_k = n - 1`` (conservative when arm
  means agree, as unbiased arms' do). Under ``"inverse_variance"`` such arms get weight 0.
* under ``"inverse_variance"`` only arms whose variance estimate has at least
  :data:`MIN_WEIGHTED_DOF` degrees of freedom carry weight (the others' few observations are left out, which keeps the
  estimate
  unbiased); if no arm has that many, the uniform combination is returned, flagged.
* identical observations (``T_k >= 2`` pulls, all with the same value): such an arm is suspect (a
  stuck chain, a proposal that never moves: its zero variance would claim an exact answer). Under
  ``"inverse_variance"`` it is given no weight, like an excluded arm, and listed in ``suspect``
  (the run warns), unless it is declared exact (``exact``, from
  :attr:`pmcbandit.arms.Arm.deterministic`) or no other arm has observations.
* zero variance otherwise (an exact arm, or the uniform combination): flagged in ``degenerate``;
  the variance is floored at the smallest positive per-arm variance of the run, so a constant arm
  can never take all the weight on its own. If every arm has zero variance the SE is 0 and flagged.
* ``var_scale`` (per arm, at least 1): the arm's variance estimate is multiplied by it, e.g. the
  share of an importance arm's variance that lies in its weights' fitted tail
  (:mod:`pmcbandit.stats.pareto_tail`, "The tail's share of the variance"); its dof are unchanged.
* ``exclude`` (arms whose variance estimate is known to be unreliable, e.g. importance weights
  failing the Pareto :math:`\hat k` check of :mod:`pmcbandit.stats.psis`): their observations enter
  neither combination (their moments are still reported). If every arm with observations is
  excluded, all are combined and the result is flagged.

For positive targets (evidence) :func:`log_interval` gives the interval on the log scale from the
log-normal law with the estimate's mean and standard error.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from pmcbandit._validation import check_choice, check_open_unit

__all__ = ["Combined", "combine", "COMBINE_METHODS", "interval", "log_interval", "arm_moments"]

COMBINE_METHODS = ("uniform", "inverse_variance", "cross_fitted")

# Fewest degrees of freedom of an arm's variance estimate for it to carry an inverse-variance
# weight. A variance estimated from 2-3 draws can be tiny by chance and hand its arm almost
# all the weight; Meier's correction (first order in 1/nu) cannot repair that. Seeded runs
# (tests/stats/test_combine.py) under-covered (92%) with no minimum and are calibrated with this one.
MIN_WEIGHTED_DOF = 9


class Combined(NamedTuple):
    """A combined estimate.

    Attributes
    ----------
    estimate, se : float
        Combined estimate and its standard error (NaN when there is no valid observation).
    df : float
        Effective degrees of freedom for t intervals (inf for large samples).
    weights : ndarray, shape (K,)
        Share of each arm in the estimate (sums to 1).
    n, mean, var, nu : ndarray, shape (K,)
        Per-arm observation counts, means, variance estimates used, and their dof.
    degenerate : tuple of str
        Human-readable flags (zero variance, arms without a variance estimate).
    method : str
    own : ndarray of bool, shape (K,)
        Arms whose variance estimate is their own (not the pooled one).
    used : ndarray of bool, shape (K,)
        Arms whose observations entered the estimate.
    suspect : ndarray of bool, shape (K,)
        Arms left out because all their observations are identical (zero-variance rule).
    """

    estimate: float
    se: float
    df: float
    weights: np.ndarray
    n: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    nu: np.ndarray
    degenerate: tuple
    method: str
    own: np.ndarray = np.zeros(0, dtype=bool)
    used: np.ndarray = np.zeros(0, dtype=bool)
    suspect: np.ndarray = np.zeros(0, dtype=bool)


def arm_moments(values, arms, n_arms, within_var=None, batch_size=None):
    """Per-arm counts, means, variance estimates, their dof and a mask of arms whose
    variance is their own (not pooled), by the rule in the module docstring.
    """
    values = np.asarray(values, dtype=np.float64)
    arms = np.asarray(arms, dtype=np.int64)
    n = np.bincount(arms, minlength=n_arms).astype(np.int64)
    total = np.bincount(arms, weights=values, minlength=n_arms)
    mean = np.divide(total, n, out=np.full(n_arms, np.nan), where=n > 0)
    dev2 = np.bincount(arms, weights=(values - mean[arms]) ** 2, minlength=n_arms)
    var = np.divide(dev2, n - 1, out=np.full(n_arms, np.nan), where=n > 1)
    nu = np.where(n > 1, n - 1, 0).astype(np.float64)
    flags = []
    if within_var is not None:
        size = np.asarray(batch_size, dtype=np.float64)
        several = size >= 2  # a variance inside the pull has size - 1 >= 1 dof
        if several.any():
            within_var = np.asarray(within_var, dtype=np.float64)
            dof = size - 1
            batched = np.isfinite(within_var) & several
            # the arms all of whose pulls are batches: those whose count of batched pulls is their count
            n_batched = np.bincount(arms, weights=batched, minlength=n_arms)
            for k in np.flatnonzero((n > 0) & (n_batched == n)):
                mine = arms == k
                var[k] = within_var[mine].mean()
                nu[k] = dof[mine].sum()
    own = (n > 0) & np.isfinite(var)
    lacking = np.nonzero((n > 0) & ~own)[0]
    if lacking.size:
        pooled = np.var(values, ddof=1) if values.size > 1 else np.nan
        for k in lacking:
            var[k], nu[k] = pooled, max(values.size - 1, 1)
            flags.append(f"arm {k}: no variance estimate of its own (1 pull); pooled variance used")
    return n, mean, var, nu, own, flags


def combine(
    values, arms, n_arms: int, method: str = "inverse_variance", within_var=None, batch_size=None, exclude=None,
    exact=None, var_scale=None,
) -> Combined:
    """Combine observations ``values`` (one per pull) from arms ``arms``.

    Parameters
    ----------
    values : array_like of float
        Valid observations (batch means), one per pull.
    arms : array_like of int
        Arm of each observation, in ``range(n_arms)``.
    n_arms : int
    method : {"uniform", "inverse_variance"}
    within_var, batch_size : array_like, optional
        Per-observation within-batch variance of the batch mean, and batch size; an arm all
        of whose pulls are batches uses their average (per-arm variance rule above).
    exclude : array_like of bool, shape (n_arms,), optional
        Arms left out of the combination (rule above).
    exact : array_like of bool, shape (n_arms,), optional
        Arms declared exact (:attr:`pmcbandit.arms.Arm.deterministic`): identical observations are
        expected of them (zero-variance rule above).
    var_scale : array_like of float, shape (n_arms,), optional
        Factors (NaN or below 1: 1) on the arms' own variance estimates (rule above).

    Returns
    -------
    Combined
        Estimate, SE, effective dof, per-arm weights and moments, degenerate-case flags.

    Examples
    --------
    >>> c = combine([1.0, 3.0, 2.0, 2.2], [0, 0, 1, 1], 2, "uniform")
    >>> float(c.estimate), bool(c.se > 0)
    (2.05, True)
    """
    check_choice(method, COMBINE_METHODS, "combine", "combine")
    values = np.asarray(values, dtype=np.float64)
    arms = np.asarray(arms, dtype=np.int64)
    n, mean, var, nu, own, flags = arm_moments(values, arms, n_arms, within_var, batch_size)
    factor = np.ones(n_arms)  # on the arms' own variance estimates (rule above)
    if var_scale is not None:
        scale = np.asarray(var_scale, dtype=np.float64)
        if scale.shape != (n_arms,):
            raise ValueError(
                f"The 'var_scale' parameter of combine must have shape ({n_arms},). Got {scale.shape} instead.")
        factor = np.fmax(scale, 1.0)
        if (factor != 1.0).any():  # a factor of 1 leaves every variance as it is
            var = np.where(own, var * factor, var)
    out = np.zeros(n_arms, dtype=bool) if exclude is None else np.asarray(exclude, dtype=bool)
    if out.shape != (n_arms,):
        raise ValueError(f"The 'exclude' parameter of combine must have shape ({n_arms},). Got {out.shape} instead.")
    if (n > 0).any() and not ((n > 0) & ~out).any():
        flags.append("every arm with observations is excluded as unreliable: all are combined")
        out = np.zeros(n_arms, dtype=bool)
    suspect = np.zeros(n_arms, dtype=bool)
    if method != "uniform":
        suspect = _identical(values, arms, n) & ~out
        if exact is not None:
            suspect &= ~np.asarray(exact, dtype=bool)
        if suspect.any() and ((n > 0) & ~out & ~suspect).any():
            flags += [f"arm {k}: all {n[k]} observations identical: given no weight" for k in np.flatnonzero(suspect)]
            out = out | suspect
        else:
            suspect[:] = False
    used = (n > 0) & ~out
    weights = np.zeros(n_arms)
    total = int(n[used].sum())

    def result(estimate, se, df, w):
        return Combined(float(estimate), float(se), float(df), w, n, mean, var, nu, tuple(flags), method, own, used,
                        suspect)

    if total == 0:
        flags.append("no valid observation")
        return result(np.nan, np.nan, np.nan, weights)
    if not np.isfinite(var[used]).all():  # a single observation overall
        weights[used] = 1.0
        flags.append("a single observation: no standard error")
        return result(values[used[arms]].mean(), np.inf, np.nan, weights)
    positive = var[used & (var > 0)]
    zero = used & (n > 1) & (var <= 0)
    if zero.any():
        flags += [f"arm {k}: zero sample variance" for k in np.flatnonzero(zero)]
        if positive.size == 0:
            return result(values[used[arms]].mean(), 0.0, np.inf, np.where(used, n / total, 0.0))
        var = np.where(zero, positive.min(), var)
    if method == "uniform":
        a = np.where(used, n * var, 0.0) / total**2
        df = _satterthwaite(a[used], nu[used])
        return result(values[used[arms]].mean(), np.sqrt(a.sum()), df, np.where(used, n / total, 0.0))
    weighted = own & used & (nu >= MIN_WEIGHTED_DOF)
    if not weighted.any():
        flags.append(f"no arm has a variance estimate with {MIN_WEIGHTED_DOF} dof: uniform weights used")
        fallback = combine(values, arms, n_arms, "uniform", within_var, batch_size, out, var_scale=var_scale)
        return fallback._replace(degenerate=tuple(flags), method=method, suspect=suspect)
    if method == "cross_fitted":
        in_used = used[arms]
        fitted = _cross_fitted(values[in_used], arms[in_used], n_arms, weighted,
                               None if within_var is None else np.asarray(within_var, dtype=np.float64)[in_used],
                               None if batch_size is None else np.asarray(batch_size)[in_used], factor, positive)
        if fitted is not None:
            return result(*fitted)
        flags.append(f"no arm has variance estimates with {MIN_WEIGHTED_DOF} dof in both halves of its pulls: "
                     "inverse-variance weights used")
    w = np.where(weighted, n / np.where(weighted, var, 1.0), 0.0)
    share = w / w.sum()
    share_w, nu_w = share[weighted], nu[weighted]
    estimate = (share_w * mean[weighted]).sum()
    correction = 1.0 + 4.0 * (share_w * (1.0 - share_w) / nu_w).sum()
    df = _satterthwaite(share_w, nu_w)
    return result(estimate, np.sqrt(correction / w.sum()), df, share)


def _cross_fitted(values, arms, n_arms, weighted, within_var, batch_size, factor, positive):
    """Estimate, SE, dof and shares of the cross-fitted combination (module docstring), or None when no arm has
    variance estimates of :data:`MIN_WEIGHTED_DOF` dof in both halves of its pulls.
    """
    half = np.zeros(arms.size, dtype=np.int64)
    for k in np.flatnonzero(weighted):
        mine = np.flatnonzero(arms == k)
        half[mine] = np.arange(mine.size) % 2
    moments = []
    for h in (0, 1):
        sel = half == h
        n, mean, var, nu, own, _ = arm_moments(
            values[sel], arms[sel], n_arms, None if within_var is None else within_var[sel],
            None if batch_size is None else batch_size[sel])
        var = np.where(own, var * factor, var)
        var = np.where(own & (n > 1) & (var <= 0), positive.min() if positive.size else 0.0, var)
        moments.append((n, mean, var, nu, own))
    both = weighted.copy()
    for n, _, var, nu, own in moments:
        both &= own & (nu >= MIN_WEIGHTED_DOF) & (var > 0)
    if not both.any():
        return None
    estimate, variance, shares, terms, dofs = 0.0, 0.0, np.zeros(n_arms), [], []
    for h in (0, 1):
        n, mean, var, nu, _ = moments[h]
        other_var = moments[1 - h][2]
        w = np.where(both, n / np.where(both, other_var, 1.0), 0.0)  # weights from the other half's variances
        share = w / w.sum()
        a = 0.25 * share[both] ** 2 * var[both] / n[both]
        estimate += 0.5 * np.sum(share[both] * mean[both])
        variance += a.sum()
        shares += 0.5 * share
        terms.append(a)
        dofs.append(nu[both])
    return estimate, np.sqrt(variance), _satterthwaite(np.concatenate(terms), np.concatenate(dofs)), shares


def _identical(values: np.ndarray, arms: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Arms with at least 2 observations (``n``: the count per arm), all equal: no observation of the arm differs
    from one of them (``ref``, whichever the assignment leaves; NaN differs from everything, ``-0.0`` equals ``0.0``).
    """
    ref = np.zeros(n.size)
    ref[arms] = values
    varied = np.zeros(n.size, dtype=bool)
    varied[arms[values != ref[arms]]] = True
    return (n > 1) & ~varied


def _satterthwaite(a, nu) -> float:
    a = np.asarray(a, dtype=np.float64)
    nu = np.asarray(nu, dtype=np.float64)
    denom = (a**2 / nu).sum()
    return float(a.sum() ** 2 / denom) if denom > 0 else np.inf


def interval(estimate: float, se: float, df: float, level: float = 0.95) -> tuple[float, float]:
    """Two-sided ``level`` t interval ``estimate ± t_{df} se``."""
    check_open_unit(level, "level", "ci")
    if not np.isfinite(se):
        return (np.nan, np.nan) if np.isnan(se) else (-np.inf, np.inf)
    q = stats.t.ppf(0.5 + level / 2, df) if np.isfinite(df) else stats.norm.ppf(0.5 + level / 2)
    return float(estimate - q * se), float(estimate + q * se)


def log_interval(estimate: float, se: float, df: float, level: float = 0.95) -> tuple[float, float]:
    r"""Interval for :math:`\log\mu` of a positive target from an unbiased linear estimate and its SE.

    The estimate is read as log-normal with mean :math:`\mu` and coefficient of variation
    :math:`r = SE/\hat\mu`: its log is normal with variance :math:`s^2 = \log(1 + r^2)` and mean
    :math:`\log\mu - s^2/2` (the moments of the log-normal law; Aitchison & Brown, "The Lognormal
    Distribution", 1957), so

    .. math:: \log\hat\mu + s^2/2 \pm q\, s,

    ``q`` the t quantile of ``df`` degrees of freedom. An importance or AIS average of few heavy
    weights is skewed to the right: it lies below :math:`\mu` more often than above, and
    :math:`\hat\mu \pm q\,SE` misses mostly on its upper side, while its log is close to
    symmetric (the log weights of AIS are sums of one increment per annealing step, Neal 2001,
    "Annealed importance sampling", Sec. 4). For :math:`r \to 0` the interval is that of the
    delta method, :math:`\log\hat\mu \pm q\,r`; it is never empty nor unbounded below.
    """
    check_open_unit(level, "level", "ci")
    if not estimate > 0:
        return np.nan, np.nan
    if not np.isfinite(se):
        return (np.nan, np.nan) if np.isnan(se) else (-np.inf, np.inf)
    q = stats.t.ppf(0.5 + level / 2, df) if np.isfinite(df) else stats.norm.ppf(0.5 + level / 2)
    s2 = float(np.log1p((se / estimate) ** 2))
    centre = float(np.log(estimate)) + 0.5 * s2
    return centre - float(q * np.sqrt(s2)), centre + float(q * np.sqrt(s2))
