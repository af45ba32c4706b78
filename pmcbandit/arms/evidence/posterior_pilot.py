"""A short HMC run at the posterior from a Laplace fit: posterior moments without an annealing pilot.

Moment-matched importance proposals (:func:`~pmcbandit.arms.evidence.laplace_is.moment_fit`) need the posterior
mean and covariance. The annealing pilot of :func:`~pmcbandit.arms.evidence.ais.tune_hmc` gives them as a by-product,
at the price of a compiled HMC kernel and a run over every temperature from the prior. Where a mode search found an
interior mode, :func:`posterior_pilot` gets them more cheaply: chains start at Gaussian draws around the mode (its
precision as the inverse covariance) and make Hamiltonian Monte Carlo moves at the posterior itself (Neal 2011, "MCMC
using Hamiltonian dynamics", Handbook of MCMC, ch. 5), in NumPy, one gradient call per chain and leapfrog step.
During a warm-up the step size is adapted by dual averaging towards a target acceptance (Hoffman & Gelman 2014,
"The No-U-Turn sampler", JMLR 15, Alg. 5) and the diagonal inverse mass matrix is re-estimated from the chains'
states over windows (regularised as in Stan); the draws that follow, at the last step size and mass, give the
moments. Where the mode sits away from the posterior's mass (a hierarchy's group scale seen in non-centred
coordinates), the chains move to it during the warm-up, and the moments describe the mass the curvature at the
mode misses.

Given posterior draws already (a trace, ``starts``), the chains start at them instead, with their variances as the
first mass (``inv_mass``): already in the typical set, they need a shorter warm-up.

The run's randomness comes from ``seed`` alone: the moments are a fixed function of the model, the mode and the
settings, drawn before any pull and independently of them, so an importance arm built on them stays unbiased.

May import: NumPy and the evidence arms' own modules.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pmcbandit.arms.evidence.ais import (HMC_LEAPFROG, HMC_TARGET_ACCEPT, PILOT_DRAWS_PER_DIM, DualAveraging,
                                        PilotTimeout, dual_averaging_update)

__all__ = ["POSTERIOR_PILOT_CHAINS", "POSTERIOR_PILOT_DRAWS", "POSTERIOR_PILOT_MAX_DRAWS", "POSTERIOR_PILOT_SEED",
           "POSTERIOR_PILOT_WARMUP", "PosteriorPilot", "draw_moves", "posterior_pilot"]

#: Chains of :func:`posterior_pilot`.
POSTERIOR_PILOT_CHAINS = 32
#: Warm-up moves (step size and mass adapted) of each chain, and the fewest and most draw moves (states kept):
#: between them, enough for the annealing pilot's :data:`~pmcbandit.arms.evidence.ais.PILOT_DRAWS_PER_DIM` draws
#: per coordinate (:func:`draw_moves`).
POSTERIOR_PILOT_WARMUP = 100
POSTERIOR_PILOT_DRAWS = 100
POSTERIOR_PILOT_MAX_DRAWS = 1000
#: Moves after which the warm-up re-estimates the diagonal mass from the states since the last estimate.
MASS_WINDOWS = (25, 50, 75)
#: Seed of the pilot's randomness when none is given.
POSTERIOR_PILOT_SEED = 20_171_103


class PosteriorPilot(NamedTuple):
    """What :func:`posterior_pilot` measured: the moments of its draws and the HMC settings it adapted.

    Attributes
    ----------
    posterior_mean, posterior_cov : ndarray of shape (dim,) and (dim, dim)
        Mean and covariance of the draws (every chain's state after each draw move).
    n_draws : int
        How many states those moments average (correlated: chains times moves).
    step_size : float
        The leapfrog step size of the draw moves.
    accept : float
        Mean acceptance probability of the draw moves (diagnostic).
    seconds : float
        Wall time of the run.
    timed_out : bool
        Whether the deadline ended the draw moves before all of them were made.
    """

    posterior_mean: np.ndarray
    posterior_cov: np.ndarray
    n_draws: int
    step_size: float
    accept: float
    seconds: float
    timed_out: bool


def draw_moves(dim: int, n_chains: int) -> int:
    """Draw moves of :func:`posterior_pilot` in ``dim`` dimensions: enough for
    :data:`~pmcbandit.arms.evidence.ais.PILOT_DRAWS_PER_DIM` states per coordinate over ``n_chains`` chains,
    at least :data:`POSTERIOR_PILOT_DRAWS` and at most :data:`POSTERIOR_PILOT_MAX_DRAWS`. A sample covariance's
    error grows with the dimension over the draw count, and a t proposal on it fails the Pareto k-hat check once
    that error is large (``benchmarks/results/bench_posterior_pilot.md``).
    """
    want = -(-PILOT_DRAWS_PER_DIM * int(dim) // int(n_chains))
    return int(min(max(want, POSTERIOR_PILOT_DRAWS), POSTERIOR_PILOT_MAX_DRAWS))


def _windowed_variance(states: list[np.ndarray]) -> np.ndarray:
    """Per-coordinate variance of the states of one window, shrunk towards 1e-3 as Stan's windowed adaptation does."""
    x = np.concatenate(states)
    n = x.shape[0]
    return (n / (n + 5.0)) * x.var(axis=0) + 1e-3 * (5.0 / (n + 5.0))


def posterior_pilot(density, location, precision, *, n_chains: int = POSTERIOR_PILOT_CHAINS,
                    n_warmup: int = POSTERIOR_PILOT_WARMUP, n_draws: int | None = None,
                    n_leapfrog: int = HMC_LEAPFROG, target_accept: float = HMC_TARGET_ACCEPT,
                    seed: int = POSTERIOR_PILOT_SEED, deadline: float | None = None,
                    enough: Callable[[PosteriorPilot], bool] | None = None, starts: np.ndarray | None = None,
                    inv_mass: np.ndarray | None = None, first_check: int = POSTERIOR_PILOT_DRAWS) -> PosteriorPilot:
    """Posterior moments from HMC at the posterior, started around a mode.

    Parameters
    ----------
    density : ModelDensity
        The model; its :meth:`~pmcbandit.arms.evidence.model_density.ModelDensity.log_density_and_grad` gives the
        target and its gradient.
    location, precision : ndarray
        A mode and its precision (negative Hessian): the chains start at draws of the Gaussian they define; a
        start whose density is not finite starts at ``location``.
    n_chains, n_warmup, n_draws, n_leapfrog, target_accept
        Chains, warm-up moves, draw moves (``None``: :func:`draw_moves`), leapfrog steps per move, and the dual
        averaging's target acceptance.
    seed : int
        Seed of every random number of the run.
    deadline : float, optional
        A :func:`time.perf_counter` reading. A move that ends after it ends the run: before the first
        :data:`POSTERIOR_PILOT_DRAWS` draw moves are made (or ``n_draws``, if fewer), with
        :class:`~pmcbandit.arms.evidence.ais.PilotTimeout`; after them, with the moments of the draws so far
        (``timed_out``). ``None``: no limit, and the moments are a function of the seed alone.
    enough : callable, optional
        Called with the :class:`PosteriorPilot` of the draws so far after the first ``first_check`` draw moves and at
        each doubling of them below ``n_draws``; where it returns True the draws stop there (e.g. once an importance
        proposal on the moments passes a check: more draws are set-up it does not need).
    starts : ndarray of shape (n_chains, dim), optional
        The chains' first states (e.g. posterior draws the caller has, already in the typical set) in place of the
        Gaussian draws around ``location``; a start whose density is not finite starts at ``location``.
    inv_mass : ndarray of shape (dim,), optional
        The diagonal inverse mass of the first warm-up window (e.g. those draws' variances) in place of the
        diagonal of ``precision``'s inverse.
    first_check : int
        Draw moves before ``enough`` is first called (:data:`POSTERIOR_PILOT_DRAWS` unless given).

    Returns
    -------
    PosteriorPilot

    Raises
    ------
    ValueError
        When ``location`` itself has no finite density and gradient.
    """
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    location = np.asarray(location, dtype=np.float64)
    if starts is not None:
        starts = np.array(starts, dtype=np.float64).reshape(-1, location.size)
        n_chains = starts.shape[0]
    n_draws = draw_moves(location.size, n_chains) if n_draws is None else int(n_draws)
    fewest = min(n_draws, POSTERIOR_PILOT_DRAWS)
    checkpoint = min(n_draws, int(first_check))
    cov = np.linalg.inv(np.asarray(precision, dtype=np.float64))
    if starts is None:
        chol = np.linalg.cholesky(0.5 * (cov + cov.T))
        x = location + rng.standard_normal((n_chains, location.size)) @ chol.T
    else:
        x = starts.copy()
    lp0, g0 = density.log_density_and_grad(location)
    if not (np.isfinite(lp0) and np.isfinite(g0).all()):
        raise ValueError("no posterior pilot: the mode it starts from has no finite log density and gradient")
    lp, grad = _evaluate(density, x)
    bad = ~np.isfinite(lp)
    x[bad], lp[bad], grad[bad] = location, lp0, g0
    inv_mass = np.diag(cov).copy() if inv_mass is None else np.array(inv_mass, dtype=np.float64).reshape(-1)
    # Dual averaging, centred on 10 times the initial step (Hoffman & Gelman 2014, Alg. 5), restarted at each new mass
    # matrix from the averaged step so far.
    log_eps = float(np.log(0.5 * location.size ** -0.25))  # scaled by the mass already; adapted from here
    adapt = DualAveraging(log_eps, log_eps, float(np.log(10.0) + log_eps))
    window: list[np.ndarray] = []
    kept: list[np.ndarray] = []
    accepts: list[float] = []
    for move in range(1, n_warmup + n_draws + 1):
        warm = move <= n_warmup
        eps = float(np.exp(adapt.log_eps if warm else adapt.log_eps_bar))
        x, lp, grad, a = _hmc_move(density, rng, x, lp, grad, eps, inv_mass, n_leapfrog)
        if warm:
            adapt = dual_averaging_update(adapt, float(a.mean()), target_accept)
            window.append(x.copy())
            if move in MASS_WINDOWS and move < n_warmup:
                inv_mass = _windowed_variance(window)
                window = []
                bar = adapt.log_eps_bar
                adapt = DualAveraging(bar, bar, float(np.log(10.0) + bar))
        else:
            kept.append(x.copy())
            accepts.append(float(a.mean()))
            if enough is not None and len(kept) == checkpoint < n_draws:
                so_far = _moments(kept, accepts, adapt, started, False)
                if enough(so_far):
                    return so_far
                checkpoint *= 2
        if deadline is not None and move < n_warmup + n_draws and time.perf_counter() > deadline:
            if move < n_warmup + fewest:
                raise PilotTimeout(f"the posterior pilot passed its time limit after {move} of its "
                                   f"{n_warmup + n_draws} moves")
            return _moments(kept, accepts, adapt, started, True)
    return _moments(kept, accepts, adapt, started, False)


def _moments(kept: list[np.ndarray], accepts: list[float], adapt: DualAveraging, started: float,
             timed_out: bool) -> PosteriorPilot:
    """The :class:`PosteriorPilot` of the states ``kept`` so far."""
    states = np.concatenate(kept)
    cov = np.atleast_2d(np.cov(states, rowvar=False))
    return PosteriorPilot(states.mean(axis=0), 0.5 * (cov + cov.T), int(states.shape[0]),
                          float(np.exp(adapt.log_eps_bar)), float(np.mean(accepts)), time.perf_counter() - started,
                          timed_out)


def _evaluate(density, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log density and gradient of every row of ``x`` (``-inf`` and zeros where not finite)."""
    lp = np.empty(x.shape[0])
    grad = np.zeros_like(x)
    for i, row in enumerate(x):
        value, g = density.log_density_and_grad(row)
        ok = np.isfinite(value) and np.isfinite(g).all()
        lp[i] = value if ok else -np.inf
        if ok:
            grad[i] = g
    return lp, grad


def _hmc_move(density, rng, x, lp, grad, eps, inv_mass, n_leapfrog):
    """One HMC move of every chain (fresh momenta, ``n_leapfrog`` leapfrog steps, a Metropolis test); a trajectory
    that leaves the support or overflows is rejected.
    """
    p = rng.standard_normal(x.shape) / np.sqrt(inv_mass)
    h0 = lp - 0.5 * np.sum(p * p * inv_mass, axis=1)
    xn, gn = x, grad
    pn = p + 0.5 * eps * grad
    with np.errstate(over="ignore", invalid="ignore"):
        for step in range(n_leapfrog):
            xn = xn + eps * inv_mass * pn
            lpn, gn = _evaluate(density, xn)
            pn = pn + (eps if step < n_leapfrog - 1 else 0.5 * eps) * gn
        h1 = lpn - 0.5 * np.sum(pn * pn * inv_mass, axis=1)
    log_a = np.where(np.isfinite(h1), np.minimum(h1 - h0, 0.0), -np.inf)
    a = np.exp(log_a)
    take = rng.uniform(size=x.shape[0]) < a
    x, lp, grad = x.copy(), lp.copy(), grad.copy()
    x[take], lp[take], grad[take] = xn[take], lpn[take], gn[take]
    return x, lp, grad, a
