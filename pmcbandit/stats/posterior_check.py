r"""Do two estimators of the evidence see the same posterior? The posterior mean of the log likelihood, per arm.

Two estimators of :math:`Z` that agree check each other only if they integrate over the same posterior. Where
each misses a different part of it, they may agree by chance: on a spike inside a slab, annealing that stays in
the slab and an importance proposal fitted at the spike's mode each find one component, and when the two carry
equal shares of the posterior both read :math:`Z/2`. Their posteriors still differ, and the posterior mean of the
log likelihood, :math:`\bar\ell = E_{\pi}[\log L(\theta)]`, shows it: in :math:`d` dimensions a spike of width
:math:`s_1` inside a slab of width :math:`s_2` differ in it by about :math:`d\log(s_2/s_1)` nats.

Every pull of an importance or annealing arm weighs points that stand for the posterior: an importance arm's draws
:math:`x_i` with their weights :math:`w_i`, an AIS arm's chains' final states with their AIS weights (properly
weighted for the posterior, Neal 2001, Sec. 3). The pull reports the self-normalised mean
:math:`\bar\ell_p = \sum_i w_i \ell(x_i) / \sum_i w_i` (:func:`weighted_loglik`), and across an arm's pulls, whose
weight totals are :math:`b_p = n_p \bar w_p` (batch size times the pull's mean weight on the run's working scale),
:math:`\hat{\bar\ell} = \sum_p b_p \bar\ell_p / \sum_p b_p`, a ratio estimator with the delta-method variance
:math:`\sum_p b_p^2 (\bar\ell_p - \hat{\bar\ell})^2 / (\sum_p b_p)^2` (Cochran 1977, Sec. 6.3;
:func:`loglik_means`). Two arms *see different posteriors* (:func:`differ`) when their estimates differ by more
than :data:`MISMATCH_NATS`, by more than :data:`MISMATCH_Z` standard errors of the difference, and by more than
:data:`MISMATCH_SPREADS` times the posterior standard deviation of the log likelihood (each pull reports the
weighted one of its points; the larger of the two arms'). All three must hold. Self-normalised estimates of
heavy-tailed weights understate their error, and an AIS arm of few annealing steps weights final states that are
still far from the posterior, which shifts :math:`\bar\ell` by about one posterior standard deviation of
:math:`\ell` (about :math:`\sqrt{d/2}` nats for a near-Gaussian posterior in :math:`d` dimensions, where
:math:`\ell` at posterior draws varies as :math:`\chi^2_d/2`): noise of the weights, not another posterior. An
estimator that misses a part of the posterior shifts it by many such deviations.

May import: NumPy only.
"""

from __future__ import annotations

import numpy as np

__all__ = ["weighted_loglik", "loglik_means", "differ", "MISMATCH_NATS", "MISMATCH_Z", "MISMATCH_SPREADS",
           "MISMATCH_SHARE", "MIN_PULLS"]

#: Smallest difference in the posterior mean of the log likelihood (nats) read as two different posteriors.
MISMATCH_NATS = 1.0
#: Smallest difference, in standard errors of the difference, read as two different posteriors.
MISMATCH_Z = 5.0
#: Smallest difference, in posterior standard deviations of the log likelihood (the larger of the two arms'), read
#: as two different posteriors.
MISMATCH_SPREADS = 5.0
#: Smallest share of the answer's evidence an arm outside the check must estimate for its other posterior to count.
MISMATCH_SHARE = 0.1
#: Pulls with a weighted mean an arm needs for an estimate (its variance must be estimable).
MIN_PULLS = 2


def weighted_loglik(log_w, loglik) -> dict[str, float]:
    """A pull's report: ``post_loglik``, :math:`\\sum_i w_i \\ell_i / \\sum_i w_i`, and ``post_loglik_sd``, the
    weighted standard deviation of the :math:`\\ell_i`, over the points of finite log weight and log likelihood (NaN
    when there are none).
    """
    log_w = np.asarray(log_w, dtype=np.float64).ravel()
    loglik = np.asarray(loglik, dtype=np.float64).ravel()
    ok = np.isfinite(log_w) & np.isfinite(loglik)
    if not ok.any():
        return {"post_loglik": float("nan"), "post_loglik_sd": float("nan")}
    w = np.exp(log_w[ok] - log_w[ok].max())
    w /= w.sum()
    mean = float(np.dot(w, loglik[ok]))
    return {"post_loglik": mean, "post_loglik_sd": float(np.sqrt(np.dot(w, (loglik[ok] - mean) ** 2)))}


def loglik_means(weights, arms, post, post_sd, n_arms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per arm, the ratio estimate of the posterior mean of the log likelihood, its standard error and the posterior
    spread of the log likelihood (module docstring) from each pull's weight total ``weights`` (on a scale common to
    all pulls), arm, weighted mean ``post`` and weighted standard deviation ``post_sd``; NaN for arms with fewer than
    :data:`MIN_PULLS` pulls that report one.
    """
    weights = np.asarray(weights, dtype=np.float64)
    arms = np.asarray(arms, dtype=np.int64)
    post = np.asarray(post, dtype=np.float64)
    post_sd = np.asarray(post_sd, dtype=np.float64)
    est = np.full(n_arms, np.nan)
    se = np.full(n_arms, np.nan)
    spread = np.full(n_arms, np.nan)
    ok = np.isfinite(post) & np.isfinite(weights) & (weights > 0)
    for k in np.unique(arms[ok]):
        mine = ok & (arms == k)
        if mine.sum() < MIN_PULLS:
            continue
        b, ell, sd = weights[mine], post[mine], post_sd[mine]
        total = b.sum()
        r = float(np.dot(b, ell) / total)
        m = b.size
        est[k] = r
        se[k] = float(np.sqrt(m / (m - 1) * np.sum((b * (ell - r)) ** 2)) / total)
        # The mixture of the pulls' weighted laws: within-pull variances plus the spread of their means.
        spread[k] = float(np.sqrt(np.dot(b, np.nan_to_num(sd) ** 2 + (ell - r) ** 2) / total))
    return est, se, spread


def differ(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """Whether two arms' ``(mean, standard error, spread)`` of the posterior log likelihood say they see different
    posteriors (module docstring); False when either is unknown.
    """
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return False
    gap = abs(a[0] - b[0])
    return bool(gap > MISMATCH_NATS and gap > MISMATCH_SPREADS * max(a[2], b[2])
                and gap > MISMATCH_Z * np.hypot(a[1], b[1]))
