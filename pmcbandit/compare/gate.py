r"""The validity gate: a biased estimator's "efficiency" means nothing, so it is reported and not ranked.

Every arm of a comparison estimates the same quantity. An arm is *excluded* from the ranking when

1. its importance weights fail the reliability diagnostic (Pareto :math:`\hat k` above the threshold
   of Vehtari et al. 2024, eq. 13; :mod:`pmcbandit.stats.psis`) — the run's engine flags it and stops
   pulling it (``reason="khat"``);
2. its estimate disagrees with a ``reference`` value: :math:`|z_k| = |\hat\theta_k - \theta_{ref}| /
   se_k` beyond the two-sided Bonferroni threshold :math:`z_{1-\alpha/(2K)}` over the :math:`K` arms
   tested (``reason="reference"``); or, without a reference,
3. its estimate disagrees with most of the others (``reason="disagrees"``): arms :math:`j, k`
   *disagree* when :math:`|\hat\theta_j - \hat\theta_k| / \sqrt{se_j^2 + se_k^2}` exceeds the
   two-sided Bonferroni threshold :math:`z_{1-\alpha/(K(K-1))}` over the :math:`K(K-1)/2` pairs, so
   that under agreement no pair is flagged with probability at least :math:`1-\alpha`; an arm that
   disagrees with more than half of the other tested arms is excluded. Pairs, not a pooled
   reference: one precise biased arm would dominate any pooled (fixed-effect) reference and make
   the honest arms look outlying, and a random-effects reference is widened by chance
   disagreements among a few noisy arms until the biased one passes. With two arms that disagree,
   both leave the ranking (two arms cannot say which is wrong); when biased arms are the majority,
   only a ``reference`` can tell.

:math:`\hat\theta_k` is the arm's mean estimate (linear arms) or :math:`\log` of the mean of
:math:`e^{x}` (log-scale arms, with the delta-method :math:`se_k = SE(\bar{e^x})/\bar{e^x}`): the
quantity the arms agree on, unlike the mean of :math:`\log\hat Z`, which Jensen's inequality
biases by an amount that differs between arms of different variance.

Arms that report how their chains went (the NUTS backends of :mod:`pmcbandit.arms.samplers.backends`:
each pull's ``divergent_fraction`` and ``chain_variance``) are also excluded when (:func:`convergence`)

4. their divergences exceed :data:`DIVERGENCE_LIMIT` of their kept iterations, over all their pulls
   (``reason="divergences"``): a divergence marks a region the integrator cannot explore, so the
   chain's estimates are biased (Betancourt 2017, Sec. 6.2); or
5. the potential scale reduction across their pulls exceeds :data:`RHAT_LIMIT` (``reason="rhat"``):
   each pull is one chain, so with :math:`W` the mean of the chains' variances of the quantity and
   :math:`B/n` the variance of the chains' means, :math:`\hat R = \sqrt{1 + (B/n)/W}` (Gelman &
   Rubin 1992, with the :math:`(n-1)/n` factor taken as 1, which raises :math:`\hat R` by about
   :math:`1/(2n)`); the limit 1.01 is that of Vehtari et al. (2021, Sec. 4). Across i.i.d. chains
   :math:`\hat R^2 - 1` is about :math:`1/\mathrm{ESS}` of one chain, so the rule also rejects
   chains too short to have moved (an effective sample size below about 50).

Both are tests, not point readings: an arm is flagged only when a one-sided lower confidence bound at level
:data:`FLAG_ALPHA` exceeds the limit. Divergences cluster in the few chains that reach a funnel's neck, so the
per-pull shares are mostly 0 with a rare large one, and their average over a handful of pulls of a backend that
diverges well below the limit often reads above it; the bound is the one-sided Student-t bound on the mean of
the per-pull shares, which on right-skewed data errs low, on the safe side (the Edgeworth expansion of the
t statistic, Johnson 1978, JASA 73, 536-544). For :math:`\hat R`, both :math:`B/n` and
:math:`W` are estimated: the level is split between a lower bound of the variance of the chains' means,
Bonett's (:func:`pmcbandit.stats.dispersion.variance_lower_bound`), which reads their kurtosis (on heavy-tailed
means the normal-theory bound :math:`(m-1)s^2/\chi^2_{1-\alpha,\,m-1}` sits too high and rejects healthy arms
more often than :math:`\alpha`, the more so the more pulls), and the one-sided Student-t upper bound of
:math:`W` (the chains' variances are heavy-tailed too: a chain that stays in a funnel's neck has a small one,
so :math:`W` averaged over a few chains most often reads low and :math:`\hat R` high). On right-skewed data that
upper bound can itself fall short (the same expansion), so the level of rule 5 stays approximate; the tests
measure its false flags on heavy-tailed chains. An arm near a limit stays unflagged until its pulls show which
side of it the arm is on.

Rules 4–5 run first, so an arm excluded by them takes no part in the agreement test of rule 3. They need
:data:`MIN_PULLS` pulls of an arm; the comparison gives them to an arm short of them before it stops, and an arm
still short of them when the budget ends is not ranked (:class:`~pmcbandit.compare.learner.ComparisonLearner`).

The gate runs when the ranking rule is about to stop and at the end of the run; each run makes few
such checks, so false exclusions (rate at most :math:`\alpha` per check) stay rare, and an
excluded arm is named with its reason and :math:`z` in the result.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

from pmcbandit.stats.dispersion import MIN_SIZE, variance_lower_bound


__all__ = ["ArmEstimates", "GateResult", "MIN_PULLS", "DIVERGENCE_LIMIT", "RHAT_LIMIT", "FLAG_ALPHA", "arm_estimates",
           "gate", "convergence", "chain_readings"]

#: Pulls an arm needs before its estimate takes part in the gate: its variance must be estimable, and rule 5's bound
#: takes no fewer (:data:`pmcbandit.stats.dispersion.MIN_SIZE`).
MIN_PULLS = MIN_SIZE
#: Share of an arm's kept iterations that may diverge (rule 4 of the module docstring).
DIVERGENCE_LIMIT = 0.01
#: Largest potential scale reduction across an arm's pulls (rule 5 of the module docstring).
RHAT_LIMIT = 1.01
#: Level of the one-sided tests of rules 4 and 5: an arm is flagged when the lower confidence bound of its divergent
#: share or of its R-hat exceeds the limit.
FLAG_ALPHA = 0.01


class ArmEstimates(NamedTuple):
    """Per arm: the common quantity's estimate, its standard error and the pulls behind them."""

    estimate: np.ndarray
    se: np.ndarray
    n: np.ndarray


def arm_estimates(values, arms, n_arms: int, log_scale: bool) -> ArmEstimates:
    """Each arm's estimate of the common quantity (module docstring) from its pulls' observations."""
    values = np.asarray(values, dtype=np.float64)
    arms = np.asarray(arms, dtype=np.int64)
    est = np.full(n_arms, np.nan)
    se = np.full(n_arms, np.nan)
    n = np.bincount(arms, minlength=n_arms)
    for k in np.flatnonzero(n > 1):
        x = values[arms == k]
        if log_scale:
            top = x.max()
            w = np.exp(x - top)
            mean = w.mean()
            est[k] = top + math.log(mean)
            se[k] = w.std(ddof=1) / math.sqrt(x.size) / mean
        else:
            est[k] = x.mean()
            se[k] = x.std(ddof=1) / math.sqrt(x.size)
    return ArmEstimates(est, se, n)


class GateResult(NamedTuple):
    """Arms the gate excludes (``reasons[k]`` is ``""`` for an arm it keeps) and each tested arm's z."""

    excluded: np.ndarray
    reasons: tuple
    z: np.ndarray


def gate(estimates: ArmEstimates, candidates: np.ndarray, reference: float | None, alpha: float) -> GateResult:
    """Apply rules 2–3 of the module docstring to the ``candidates`` (bool mask) with enough pulls."""
    k = estimates.estimate.size
    tested = candidates & (estimates.n >= MIN_PULLS) & np.isfinite(estimates.estimate)
    excluded = np.zeros(k, dtype=bool)
    reasons = [""] * k
    z = np.full(k, np.nan)
    idx = np.flatnonzero(tested)
    if reference is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            z[idx] = (estimates.estimate[idx] - reference) / estimates.se[idx]
        # A zero se (a constant arm) makes any miss infinitely significant and a hit 0/0: exact.
        z[idx] = np.where(np.isnan(z[idx]), 0.0, z[idx])
        limit = stats.norm.isf(alpha / (2 * max(idx.size, 1)))
        for i in idx[np.abs(z[idx]) > limit]:
            excluded[i] = True
            reasons[i] = f"reference: estimate {estimates.estimate[i]:.6g} is {z[i]:+.1f} se from {reference:.6g}"
        return GateResult(excluded, tuple(reasons), z)
    if idx.size < 2:
        return GateResult(excluded, tuple(reasons), z)
    y, se = estimates.estimate[idx], estimates.se[idx]
    with np.errstate(divide="ignore", invalid="ignore"):
        pair_z = (y[:, None] - y[None, :]) / np.sqrt(se[:, None] ** 2 + se[None, :] ** 2)
    pair_z = np.where(np.isnan(pair_z), 0.0, pair_z)  # two exact constants that agree
    limit = stats.norm.isf(alpha / (idx.size * (idx.size - 1)))
    disagree = np.abs(pair_z) > limit
    np.fill_diagonal(disagree, False)
    votes = disagree.sum(axis=1)
    # The arm's deviation from the others' inverse-variance mean, reported with the verdict.
    for n, i in enumerate(idx):
        others = np.arange(idx.size) != n
        w = 1.0 / se[others] ** 2
        if np.all(np.isfinite(w)):
            ref = float(np.sum(w * y[others]) / w.sum())
            z[i] = (y[n] - ref) / math.sqrt(se[n] ** 2 + 1.0 / w.sum())
        if 2 * votes[n] > idx.size - 1:
            excluded[i] = True
            reasons[i] = (f"disagrees: estimate {y[n]:.6g} disagrees with {votes[n]} of the {idx.size - 1} other arms "
                          f"(|z| > {limit:.2f} for each)")
    return GateResult(excluded, tuple(reasons), z)


def convergence(values, arms, divergent_fraction, chain_variance, n_arms: int,
                candidates: np.ndarray) -> GateResult:
    """Rules 4–5 of the module docstring on the ``candidates`` (bool mask) with :data:`MIN_PULLS` pulls
    that report both diagnostics (NaN: not reported, not tested).

    Parameters
    ----------
    values, arms : sequence
        Each valid pull's estimate and arm.
    divergent_fraction, chain_variance : sequence of float
        Each valid pull's share of divergent kept iterations and variance of the quantity over its chain.
    n_arms : int
    candidates : array of bool
    """
    values, arms = np.asarray(values, dtype=np.float64), np.asarray(arms, dtype=np.int64)
    frac, var = np.asarray(divergent_fraction, dtype=np.float64), np.asarray(chain_variance, dtype=np.float64)
    share, point = chain_readings(values, arms, frac, var, n_arms)
    excluded = np.zeros(n_arms, dtype=bool)
    reasons = [""] * n_arms
    rhat = np.full(n_arms, np.nan)
    for k in np.flatnonzero(candidates):
        mine = (arms == k) & np.isfinite(frac) & np.isfinite(var)
        m = int(mine.sum())
        if m < MIN_PULLS:
            continue
        rhat[k] = point[k]
        share_lower = share[k] - _t_half_width(frac[mine], FLAG_ALPHA)
        within_upper = var[mine].mean() + _t_half_width(var[mine], FLAG_ALPHA / 2)
        rhat_lower = _rhat(variance_lower_bound(values[mine], FLAG_ALPHA / 2), within_upper)
        if share_lower > DIVERGENCE_LIMIT:
            excluded[k] = True
            reasons[k] = (f"divergences: {100 * share[k]:.3g}% of the kept iterations diverged over {m} pulls, above "
                          f"{100 * DIVERGENCE_LIMIT:g}% at level {FLAG_ALPHA:g} (lower bound {100 * share_lower:.3g}%)")
        elif rhat_lower > RHAT_LIMIT:
            excluded[k] = True
            reasons[k] = (f"rhat: potential scale reduction {rhat[k]:.4g} across {m} pulls, above {RHAT_LIMIT:g} "
                          f"at level {FLAG_ALPHA:g} (lower bound {rhat_lower:.4g})")
    return GateResult(excluded, tuple(reasons), rhat)


def chain_readings(values, arms, divergent_fraction, chain_variance, n_arms: int) -> tuple[np.ndarray, np.ndarray]:
    """Per arm, over its pulls that report both diagnostics (arguments as for :func:`convergence`): the share of
    kept iterations that diverged (the mean of the pulls' shares) and the potential scale reduction across the
    pulls (rule 5 of the module docstring): the point readings that rules 4 and 5 test. NaN for an arm without
    such pulls (R-hat: with fewer than 2).
    """
    values, arms = np.asarray(values, dtype=np.float64), np.asarray(arms, dtype=np.int64)
    frac, var = np.asarray(divergent_fraction, dtype=np.float64), np.asarray(chain_variance, dtype=np.float64)
    share, rhat = np.full(n_arms, np.nan), np.full(n_arms, np.nan)
    for k in range(n_arms):
        mine = (arms == k) & np.isfinite(frac) & np.isfinite(var)
        if mine.any():
            share[k] = frac[mine].mean()
        if mine.sum() >= 2:
            rhat[k] = _rhat(float(values[mine].var(ddof=1)), float(var[mine].mean()))
    return share, rhat


def _rhat(between: float, within: float) -> float:
    """:math:`\\sqrt{1 + (B/n)/W}` (rule 5 of the module docstring); infinite without within-chain variance."""
    return math.sqrt(1.0 + between / within) if within > 0 else math.inf


def _t_half_width(x: np.ndarray, alpha: float) -> float:
    """Half-width of the one-sided Student-t confidence bound at level ``alpha`` of the mean of ``x`` (at least 2
    values).
    """
    return float(stats.t.ppf(1.0 - alpha, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
