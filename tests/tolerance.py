"""The one tolerance rule of the statistical tests, and the suite's failure budget.

Every statistical check compares an estimate with an analytic (or independently computed)
truth in units of the estimator's own standard error, after BlackJAX's tests:
``|estimate - truth| <= Z_TOLERANCE * se``. For an honest, approximately normal estimator one
check fails with probability ``P(|Z| > 4) = 6.3e-5``; checks use fixed seeds, so each is
deterministic, and the budget below bounds how often a correct implementation would have
drawn a failing seed: at most :data:`MAX_CHECKS` such checks in the whole suite keep the
family-wise chance of a false failure under ``MAX_CHECKS * 6.3e-5`` (1.3 % for 200).
Never re-run with another seed to make a check pass.

Error *rates* (how often an identification algorithm is wrong) are judged by exact one-sided
95 % Clopper–Pearson bounds (:func:`error_rate_upper`, :func:`error_rate_lower`): a guarantee
"wrong with probability at most delta" passes when the upper bound is at most delta, and a
mutation shows the check can fail when its lower bound is above delta.
"""

from __future__ import annotations

import math

from scipy import stats

Z_TOLERANCE = 4.0
#: Upper bound on the number of SE-based checks in the suite (the failure budget above).
MAX_CHECKS = 200
FALSE_FAILURE_PER_CHECK = 2.0 * stats.norm.sf(Z_TOLERANCE)


def within_se(estimate: float, truth: float, se: float, k: float = Z_TOLERANCE, bias: float = 0.0) -> bool:
    """Whether ``|estimate - truth| <= k * se + bias`` (``se`` must be a finite positive number).

    ``bias`` is a documented bound on the estimator's bias, for the few biased-but-consistent
    estimators checked (SMC's adaptive tempering); 0 for unbiased ones.
    """
    if not (math.isfinite(se) and se > 0):
        return False
    return abs(estimate - truth) <= k * se + bias


def assert_within_se(estimate: float, truth: float, se: float, *context, k: float = Z_TOLERANCE,
                     bias: float = 0.0) -> None:
    """Assert :func:`within_se`, reporting the z-score and any ``context`` on failure."""
    z = (estimate - truth) / se if se else math.inf
    assert within_se(estimate, truth, se, k, bias), (
        f"|estimate - truth| = {abs(estimate - truth):.4g} > {k} se + {bias} (se = {se:.4g}, z = {z:.2f})", *context
    )


def error_rate_upper(errors: int, runs: int, confidence: float = 0.95) -> float:
    """One-sided Clopper–Pearson upper bound on an error rate from ``errors`` in ``runs``."""
    return float(stats.beta.ppf(confidence, errors + 1, runs - errors)) if errors < runs else 1.0


def error_rate_lower(errors: int, runs: int, confidence: float = 0.95) -> float:
    """One-sided Clopper–Pearson lower bound on an error rate from ``errors`` in ``runs``."""
    return float(stats.beta.ppf(1.0 - confidence, errors, runs - errors + 1)) if errors > 0 else 0.0
