r"""Moment refinement of a Laplace proposal at set-up: the t moved to the posterior's weighted moments.

The Laplace fit puts the t at the mode with the curvature there as its covariance. Where the posterior is
skewed (a hierarchy's shape and rate, a scale near 0), the mass sits away from the mode with a spread the
curvature misses, and the weights :math:`\tilde p/q` get a heavy tail: a Pareto :math:`\hat k` above 1/2,
where the variance of the weights is infinite and the sample variance of the pulls understates the error
(:mod:`pmcbandit.stats.psis`). :func:`refine_proposal` moves the proposal to the importance-weighted mean
and covariance of draws from it, the moment update of population Monte Carlo (Cappé, Guillin, Marin &
Robert, "Population Monte Carlo", J. Comput. Graph. Stat. 13, 2004, Sec. 3) and of moment-matching
importance sampling (Paananen, Piironen, Bürkner & Vehtari, "Implicitly adaptive importance sampling",
Stat. Comput. 31, 2021, Sec. 3), and repeats it while it helps.

Rules.

- **Only at set-up, draws discarded.** Every draw made here serves the fit and is then dropped; the
  proposal the arm pulls from is fixed before its first pull, so every weight of every pull is still an
  unbiased estimate of Z (as for :func:`~pmcbandit.arms.evidence.laplace_is.moment_fit` from a pilot).
- **One mode.** A search that found several modes keeps its mixture: one moment fit would average the
  modes into a component between them.
- **Already good.** When the first chunk of :data:`REFINE_CHUNK` draws from the Laplace fit has an
  effective-sample fraction of at least :data:`REFINE_GOOD`, the fit is kept without more draws (a
  near-Gaussian posterior: at most a factor 2 to gain, and the set-up counts in a time budget).
- **Enough effective draws.** A round draws from the current proposal in chunks of
  :data:`REFINE_CHUNK` (at least :data:`REFINE_MIN_DRAWS`, at most :data:`REFINE_MAX_DRAWS`) until Kish's
  effective sample size :math:`(\sum w)^2/\sum w^2` reaches :func:`refine_target` (a covariance in
  :math:`d` dimensions from fewer effective draws is mostly noise), or until its rate so far, with a
  slack of :data:`REFINE_SLACK`, cannot reach it within :data:`REFINE_MAX_DRAWS` (a proposal far off,
  as on a funnel, costs :data:`REFINE_MIN_DRAWS` draws); short of the target, no fit is made.
- **Never narrower than the Laplace fit.** The fitted covariance is raised to at least the Laplace
  covariance in every direction (in the Laplace fit's whitened coordinates, every eigenvalue below 1
  is set to 1): weighted moments of a heavy-tailed sample understate the spread where the large
  weights are missing, and a proposal narrower than the target in some direction gives weights with
  a heavy tail there.
- **Kept only when better.** The fitted proposal replaces the current one only when its own draws
  have an effective-sample fraction at least :data:`REFINE_GAIN` times the current's; at most
  :data:`REFINE_ROUNDS` fits. On a near-Gaussian posterior the Laplace fit is already as good and is
  kept. Heavy-tailed weights make a poor proposal's fraction look better than it is (its rare large
  weights are mostly missing), which only makes the rule keep the Laplace fit more often.
- **Deterministic.** The draws use their own stream (the pool seeds it with a fixed seed), so the
  refined proposal is a function of the model, the same in every run and process.

Imports: NumPy and this package's evidence arms.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Refinement", "refine_proposal", "refine_target", "REFINE_CHUNK", "REFINE_GAIN", "REFINE_MAX_DRAWS",
           "REFINE_GOOD", "REFINE_MIN_DRAWS", "REFINE_ROUNDS", "REFINE_SLACK"]

#: Most moment fits made (each after one round of draws).
REFINE_ROUNDS = 2
#: Draws of one round are made in chunks of this many.
REFINE_CHUNK = 2048
#: Fewest draws of a round: an effective-sample fraction from fewer is too noisy to compare two proposals by.
REFINE_MIN_DRAWS = 4096
#: Most draws of a round.
REFINE_MAX_DRAWS = 32768
#: A round stops short of the target when :data:`REFINE_MAX_DRAWS` draws at its rate so far, times this factor, would
#: not reach it: heavy-tailed weights make the first chunks' rate look low (the effective sample size of a few
#: thousand draws is set by their largest weights and grows faster than the count at first).
REFINE_SLACK = 4.0
#: Effective-sample fraction of the Laplace fit's first chunk of draws at which it is kept without a fit.
REFINE_GOOD = 0.5
#: Factor by which a fitted proposal's effective-sample fraction must exceed the current one's to replace it.
REFINE_GAIN = 1.25


def refine_target(dim: int) -> float:
    """Effective draws a round needs before a moment fit in ``dim`` dimensions: :math:`\\max(200, 20d)`."""
    return float(max(200, 20 * dim))


class Refinement(NamedTuple):
    """What :func:`refine_proposal` did.

    Attributes
    ----------
    modes : ModeSearch or None
        The refined proposal's one component (a :func:`~pmcbandit.arms.evidence.laplace_is.moment_fit`), or
        ``None`` when the arm's own proposal is kept.
    ess_fractions : tuple of float
        Effective-sample fraction of the draws of each proposal tried, the arm's own first.
    draws : int
        Draws made, all rounds together.
    reason : str
        Why it stopped, in words.
    """

    modes: object
    ess_fractions: tuple
    draws: int
    reason: str


def _ess(log_w: np.ndarray) -> float:
    top = np.max(log_w)
    if not np.isfinite(top):
        return 0.0
    w = np.exp(log_w - top)
    return float(w.sum() ** 2 / np.dot(w, w))


def _round(arm, rng: np.random.Generator, target: float, first: bool):
    """Draws from ``arm`` until their effective sample size reaches ``target``, or cannot within
    :data:`REFINE_MAX_DRAWS`, or (``first``) shows the proposal already good (rules of the module).
    """
    xs, lws = [], []
    n = 0
    while True:
        x, log_w = arm.weighted_draws(rng, REFINE_CHUNK)
        xs.append(x)
        lws.append(log_w)
        n += REFINE_CHUNK
        log_w = np.concatenate(lws)
        ess = _ess(log_w)
        good = first and ess >= REFINE_GOOD * n
        out_of_reach = REFINE_SLACK * ess * REFINE_MAX_DRAWS < target * n
        if good or n >= REFINE_MAX_DRAWS or (n >= REFINE_MIN_DRAWS and (ess >= target or out_of_reach)):
            return np.concatenate(xs), log_w, ess


def _weighted_moments(x: np.ndarray, log_w: np.ndarray, floor: np.ndarray):
    """Self-normalised weighted mean and covariance of the draws, the covariance raised to at least ``floor`` in
    every direction (module rules).
    """
    keep = np.isfinite(log_w)  # a point outside the float range has weight 0 and may have infinite coordinates
    x, log_w = x[keep], log_w[keep]
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    mean = w @ x
    dev = x - mean
    cov = (dev * w[:, None]).T @ dev
    # In the floor's whitened coordinates, no eigenvalue below 1: cov >= floor in the Loewner order.
    chol = np.linalg.cholesky(floor)
    inv = np.linalg.inv(chol)
    white = inv @ (0.5 * (cov + cov.T)) @ inv.T
    eigval, eigvec = np.linalg.eigh(0.5 * (white + white.T))
    white = (eigvec * np.maximum(eigval, 1.0)) @ eigvec.T
    cov = chol @ white @ chol.T
    return mean, 0.5 * (cov + cov.T)


def refine_proposal(arm, rng: np.random.Generator) -> Refinement:
    """Refine a :class:`~pmcbandit.arms.evidence.LaplaceISArm`'s proposal by importance-weighted moments (module
    rules). The arm is not changed: apply the result with :meth:`~pmcbandit.arms.evidence.LaplaceISArm.with_modes`.
    """
    from pmcbandit.arms.evidence.laplace_is import moment_fit

    if len(arm.modes.modes) != 1:
        return Refinement(None, (), 0, f"{len(arm.modes.modes)} modes: a moment fit would merge them")
    target = refine_target(arm.dim)
    current = arm
    x, log_w, ess = _round(current, rng, target, first=True)
    draws = x.shape[0]
    fractions = [ess / x.shape[0]]
    if fractions[0] >= REFINE_GOOD:
        return Refinement(None, tuple(fractions), draws,
                          f"effective-sample fraction {fractions[0]:.3g} of the Laplace fit: already good")
    best = None
    reason = f"{REFINE_ROUNDS} moment fits made"
    for _ in range(REFINE_ROUNDS):
        if ess < target:
            reason = f"{ess:.0f} effective draws in {x.shape[0]}, short of the {target:.0f} a moment fit needs"
            break
        try:
            fit = moment_fit(*_weighted_moments(x, log_w, arm.covariance), x.shape[0], "weighted set-up draws")
        except ValueError as err:
            reason = str(err)
            break
        candidate = current.with_modes(fit)
        x_new, log_w_new, ess_new = _round(candidate, rng, target, first=False)
        draws += x_new.shape[0]
        fractions.append(ess_new / x_new.shape[0])
        if fractions[-1] < REFINE_GAIN * fractions[-2]:
            reason = f"the last fit raised the effective-sample fraction less than {REFINE_GAIN:g}x"
            break
        current, best, x, log_w, ess = candidate, fit, x_new, log_w_new, ess_new
    return Refinement(best, tuple(fractions), draws, reason)
