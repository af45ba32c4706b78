"""The HMC AIS arm's settings fitted to a posterior trace, in place of its annealing pilot.

The annealing pilot (:func:`~pmcbandit.arms.evidence.ais.tune_hmc`) runs a sequential Monte Carlo sampler from the
prior to the posterior to learn what the HMC transitions need at each inverse temperature :math:`\\beta`: a diagonal
inverse mass matrix, a step size, and adaptive temperatures. With posterior draws at hand, :func:`trace_pilot` fits
them instead, from the prior (exact draws, which the model gives) and the trace (draws at :math:`\\beta = 1`):

* each end is described by a Gaussian, its mean and covariance :math:`\\Sigma_0, \\Sigma_1` (robust standard
  deviations, the interquartile range over 1.349 as the pilot's, with the draws' correlations). The tempered
  posterior :math:`p(\\theta) L(\\theta)^\\beta \\propto p_0^{1-\\beta} p_1^\\beta` of two Gaussians is the Gaussian
  of precision :math:`(1-\\beta)\\Sigma_0^{-1} + \\beta\\Sigma_1^{-1}` (positive definite at every
  :math:`\\beta`), whose mean is the precision-weighted mean of the two; its variances are the inverse mass at
  :math:`\\beta`, shrunk as Stan's windowed adaptation shrinks its estimate (as the pilot's);
* the temperatures follow the pilot's rule (adaptive tempering, Jasra et al. 2011, "Inference for Lévy-driven
  stochastic volatility models via adaptive sequential Monte Carlo", Scand. J. Stat. 38, Sec. 3.1): the next
  :math:`\\beta'` keeps an effective sample size of :data:`~pmcbandit.arms.evidence.ais.PILOT_ESS` of the weights
  :math:`e^{(\\beta'-\\beta)\\ell}`, with :math:`\\ell` the log-likelihood at fresh draws of the Gaussian at
  :math:`\\beta` (no moves: one batch of likelihood evaluations per temperature);
* the step sizes come from dual averaging (Hoffman & Gelman 2014, Alg. 5, as the pilot's) at the two ends only, HMC
  chains started at exact prior draws and at trace draws; between them, the smaller of the two. With each
  temperature's mass matrix the Gaussian approximations are equally well scaled, so the step varies little along
  the path, and the smaller one is the cautious choice where it does.

Every setting is fixed before any pull, a function of the model, the trace and :data:`TRACE_PILOT_SEED`, so the AIS
weights stay unbiased whatever the trace (a poor trace makes slower-mixing transitions, not a biased estimate). The
result is an :class:`~pmcbandit.arms.evidence.ais.HMCPilot` whose posterior moments are the trace's, and whose
``log_z`` is NaN (it runs no sequential Monte Carlo).

May import: the arms (the AIS arm's pilot type and defaults, the HMC kernel); never a door.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

__all__ = ["TRACE_PILOT_SEED", "TRACE_PILOT_CHAINS", "TRACE_PILOT_MOVES", "PRIOR_DRAWS", "trace_pilot"]

#: Seed of the trace pilot's randomness (prior draws, Gaussian draws, the HMC moves of the step-size tuning).
TRACE_PILOT_SEED = 20_251_129
#: HMC chains and moves of the dual averaging at each end of the path.
TRACE_PILOT_CHAINS = 32
TRACE_PILOT_MOVES = 16
#: Exact prior draws that describe the path's start.
PRIOR_DRAWS = 1000
#: The pilot's draws per temperature for the adaptive schedule.
SCHEDULE_DRAWS = 128


def trace_pilot(density, x: np.ndarray, *, seed: int = TRACE_PILOT_SEED):
    """The :class:`~pmcbandit.arms.evidence.ais.HMCPilot` of the HMC transitions' defaults fitted to the unconstrained
    trace draws ``x`` ``(n, density.dim)`` (module docstring).
    """
    from pmcbandit.arms.evidence.ais import (HMC_LEAPFROG, HMC_PERSISTENCE, HMC_TARGET_ACCEPT, PILOT_ESS,
                                             PILOT_MAX_TEMPERATURES, HMCPilot)

    rng = np.random.default_rng(seed)
    prior = density.sample_prior(rng, PRIOR_DRAWS)
    prior = prior[np.isfinite(prior).all(axis=1)]
    m0, s0 = _gaussian(prior)
    m1, s1 = _gaussian(x)
    p0, p1 = np.linalg.inv(s0), np.linalg.inv(s1)
    h0, h1 = p0 @ m0, p1 @ m1
    # One generalised eigendecomposition, V' p0 V = I and V' p1 V = diag(lam), serves every temperature: the
    # precision (1 - beta) p0 + beta p1 is V^-T diag((1 - beta) + beta lam) V^-1.
    lam, vec = eigh(0.5 * (p1 + p1.T), 0.5 * (p0 + p0.T))

    def tempered(beta):
        """Mean, covariance's diagonal and a square root of the covariance of the Gaussian at ``beta``."""
        root = vec / np.sqrt((1.0 - beta) + beta * lam)
        mean = root @ (root.T @ ((1.0 - beta) * h0 + beta * h1))
        return mean, np.einsum("ij,ij->i", root, root), root

    betas, masses = [0.0], [_shrunk(np.diag(s0), prior.shape[0])]
    beta = 0.0
    while beta < 1.0:
        mean, _, root = tempered(beta)
        draws = mean + rng.standard_normal((SCHEDULE_DRAWS, mean.size)) @ root.T
        _, loglik = density.logp_terms_batch(draws)
        beta = 1.0 if len(betas) >= PILOT_MAX_TEMPERATURES - 1 else _next_beta(beta, loglik, PILOT_ESS)
        betas.append(beta)
        masses.append(_shrunk(tempered(beta)[1] if beta < 1.0 else np.diag(s1), x.shape[0]))
    eps0, acc0 = _tuned_step(density, prior, 0.0, masses[0], rng, HMC_LEAPFROG, HMC_TARGET_ACCEPT, HMC_PERSISTENCE)
    eps1, acc1 = _tuned_step(density, x, 1.0, masses[-1], rng, HMC_LEAPFROG, HMC_TARGET_ACCEPT, HMC_PERSISTENCE)
    k = len(betas)
    steps = np.full(k, min(eps0, eps1))
    steps[0], steps[-1] = eps0, eps1
    accept = np.full(k, np.nan)
    accept[0], accept[-1] = acc0, acc1
    cov = np.atleast_2d(np.cov(x, rowvar=False))
    return HMCPilot(np.array(betas), steps, np.ascontiguousarray(masses), accept, float("nan"), x.mean(axis=0),
                    0.5 * (cov + cov.T), int(x.shape[0]))


def _gaussian(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of draws ``x``: robust standard deviations (interquartile range / 1.349) with the draws'
    correlations, a small ridge keeping it positive definite.
    """
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75], axis=0)
    sd = np.maximum((q3 - q1) / 1.349, 1e-8)
    corr = np.atleast_2d(np.corrcoef(x, rowvar=False))
    corr = np.where(np.isfinite(corr), corr, 0.0)
    np.fill_diagonal(corr, 1.0)
    cov = sd[:, None] * corr * sd[None, :] + 1e-10 * np.diag(sd**2)
    return x.mean(axis=0), 0.5 * (cov + cov.T)


def _shrunk(var: np.ndarray, n: int) -> np.ndarray:
    """Stan's shrinkage of a variance estimate from ``n`` draws (the annealing pilot's rule)."""
    return n / (n + 5.0) * var + 1e-3 * 5.0 / (n + 5.0)


def _next_beta(beta: float, loglik: np.ndarray, ratio: float) -> float:
    """The largest :math:`\\beta' \\le 1` whose weights :math:`e^{(\\beta'-\\beta)\\ell}` over the finite ``loglik``
    keep an effective sample size of ``ratio`` times their number, by bisection to a relative ``1e-9`` (the
    annealing pilot's rule).
    """
    ll = loglik[np.isfinite(loglik)]
    if ll.size == 0:
        return 1.0
    ll = ll - ll.max()
    target = ratio * ll.size

    def ess(b):
        w = np.exp((b - beta) * ll)
        return w.sum() ** 2 / (w * w).sum()

    if ess(1.0) >= target:
        return 1.0
    lo, hi = beta, 1.0
    while hi - lo > 1e-9 * max(hi, 1e-3):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ess(mid) >= target else (lo, mid)
    return lo if lo > beta else hi


def _tuned_step(density, draws, beta, inv_mass, rng, n_leapfrog, target_accept, persistence) -> tuple[float, float]:
    """Step size by dual averaging of :data:`TRACE_PILOT_CHAINS` HMC chains at ``beta`` started at rows of ``draws``
    (``TRACE_PILOT_MOVES`` moves), and the mean acceptance of the later half of the moves.
    """
    from pmcbandit.arms.evidence._kernels import chain_seeds
    from pmcbandit.arms.evidence.ais import DualAveraging, dual_averaging_update
    from pmcbandit.arms.evidence.hmc_kernel import hmc_moves

    n = min(TRACE_PILOT_CHAINS, draws.shape[0])
    x = np.ascontiguousarray(draws[rng.choice(draws.shape[0], size=n, replace=False)], dtype=np.float64)
    z = rng.standard_normal(x.shape)
    seeds = chain_seeds(rng, n)
    acc = np.empty((n, 1))
    inv_mass = np.ascontiguousarray(inv_mass, dtype=np.float64)
    log_eps = float(np.log(0.5))
    adapt, recent = DualAveraging(log_eps, log_eps, log_eps), []
    for t in range(1, TRACE_PILOT_MOVES + 1):
        hmc_moves(density.grad_terms_fn, x, z, beta, float(np.exp(adapt.log_eps)), inv_mass, n_leapfrog, persistence, 1,
                  seeds, acc)
        a = float(acc.mean())
        adapt = dual_averaging_update(adapt, a, target_accept)
        if 2 * t > TRACE_PILOT_MOVES:
            recent.append(a)
    return float(np.exp(adapt.log_eps_bar)), float(np.mean(recent))
