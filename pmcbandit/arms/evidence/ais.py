"""The annealed importance sampling arm (Neal 2001; Neufeld et al. 2014, Sec. 6.3 and App. G).

One pull runs ``n_chains`` independent AIS chains from the exactly sampled
prior to the posterior along the geometric path
:math:`\\pi_\\beta \\propto p(x)\\,L(x)^{\\beta}` and returns their log weights
:math:`\\log w_c`, each the log of an unbiased estimate of the evidence
:math:`Z` (``log_scale = True``: pmcbandit averages :math:`w_c`, not
:math:`\\log w_c`).
"""

from __future__ import annotations

import math
import numbers
import time
from typing import NamedTuple

import numpy as np

from pmcbandit._validation import check_choice, check_open_unit, check_positive
from pmcbandit.arms.base import Arm
from pmcbandit.stats.posterior_check import weighted_loglik
from pmcbandit.arms.evidence._kernels import chain_seeds
from pmcbandit.arms.evidence.model_density import ModelDensity

__all__ = ["AISArm", "annealing_schedule", "pilot_schedule", "PROBE_STEPS", "HMCPilot", "HMCSettings",
           "PilotTimeout", "check_hmc_settings", "hmc_pilot_for", "tune_hmc"]

SCHEDULES = ("power4", "linear")
#: The named schedules of :class:`AISArm`: :data:`SCHEDULES`, and ``"pilot"`` (:func:`pilot_schedule`, HMC only).
ARM_SCHEDULES = (*SCHEDULES, "pilot")
TRANSITIONS = ("slice", "imh", "hmc")
COSTS = ("cpu_seconds", "logp_evals")
#: Annealing steps of the short timed run that predicts a pull's duration (``AISArm.step_seconds``).
PROBE_STEPS = 32
#: The HMC pilot run (:func:`tune_hmc`): chains, moves per temperature, seed, and the cap on its temperatures.
PILOT_CHAINS = 128
PILOT_MOVES = 12
PILOT_SEED = 20010901
PILOT_ESS = 0.9
PILOT_MAX_TEMPERATURES = 1000
#: Posterior draws the pilot collects at beta = 1 per coordinate, for its moments (:attr:`HMCPilot.posterior_cov`),
#: and the fewest and most moves at beta = 1 that collect them.
PILOT_DRAWS_PER_DIM = 200
PILOT_DRAW_MOVES = (20, 400)
#: The HMC transitions' defaults (:class:`AISArm`): leapfrog steps per move, target acceptance, momentum persistence.
HMC_LEAPFROG, HMC_TARGET_ACCEPT, HMC_PERSISTENCE = 5, 0.8, 0.9


class HMCPilot(NamedTuple):
    """What the pilot run of :func:`tune_hmc` fixed for the HMC transitions of every later pull.

    Attributes
    ----------
    betas : ndarray of shape (K,)
        The pilot's inverse temperatures, increasing from 0 to 1.
    step_size : ndarray of shape (K,)
        Leapfrog step size adapted at each.
    inv_mass : ndarray of shape (K, dim)
        Diagonal inverse mass matrix (the robust, regularised variance of the pilot's chains) at each.
    accept : ndarray of shape (K,)
        Mean acceptance probability of the pilot's last moves at each (diagnostic).
    log_z : float
        The pilot's own (SMC) estimate of log Z (diagnostic only; it enters no pull).
    posterior_mean, posterior_cov : ndarray of shape (dim,) and (dim, dim)
        Mean and covariance of the pilot's draws at beta = 1 (its chains' states after each of
        its last moves): the moments the importance-sampling arms of
        :func:`~pmcbandit.arms.evidence.laplace_is.moment_fit` are centred and scaled on.
    n_draws : int
        How many states those moments average (correlated: chains times moves).
    """

    betas: np.ndarray
    step_size: np.ndarray
    inv_mass: np.ndarray
    accept: np.ndarray
    log_z: float
    posterior_mean: np.ndarray
    posterior_cov: np.ndarray
    n_draws: int


def annealing_schedule(n_steps: int, kind: str = "power4") -> np.ndarray:
    """Inverse temperatures :math:`0 = \\beta_0 < \\dots < \\beta_n = 1` (``n_steps + 1`` values).

    ``"power4"``: :math:`\\beta_j = (j/n)^4`, the *power of 4* heuristic of
    Kuss & Rasmussen (2005) used by Neufeld et al. (2014), App. G (whose
    :math:`n` counts temperatures, ours counts increments, so ``ais-n`` has
    :math:`n+1` temperatures); ``"linear"``: :math:`\\beta_j = j/n`. The
    endpoints are exactly 0 and 1.
    """
    check_positive(n_steps, "n_steps", "annealing_schedule", integer=True)
    check_choice(kind, SCHEDULES, "kind", "annealing_schedule")
    betas = np.arange(n_steps + 1, dtype=np.float64) / n_steps
    if kind == "power4":
        betas = betas**4
    betas[0], betas[-1] = 0.0, 1.0
    return betas


def pilot_schedule(pilot_betas, n_steps: int) -> np.ndarray:
    r"""``n_steps + 1`` inverse temperatures spread evenly over the index of a pilot's adaptive temperatures.

    The pilot of :func:`tune_hmc` chooses each next temperature so that its chains keep the same share
    of their effective sample size (:func:`_next_beta`), i.e. so that every step's log-likelihood
    increment :math:`(\beta_{k+1}-\beta_k)\,\ell` has about the same variance: its temperatures are
    about equally spaced in thermodynamic length
    :math:`\int \sqrt{\operatorname{Var}_{\pi_\beta}(\ell)}\,d\beta`.
    With transitions that mix, the variance of an AIS log weight is about
    :math:`\sum_j (\beta_j-\beta_{j-1})^2 \operatorname{Var}_{\pi_{\beta_j}}(\ell)`, smallest for a
    given number of steps when the steps are of equal length, where it is the squared length over the
    number of steps (Grosse, Maddison & Salakhutdinov 2013, "Annealing between distributions by averaging
    moments", Sec. 3; Gelman & Meng 1998, Sec. 4 on path sampling). The schedule takes
    :math:`n/(K-1)` steps per step of the pilot's :math:`K` temperatures, interpolating
    :math:`\beta^{1/4}` linearly in the index: within each of the pilot's steps the temperatures follow the
    power of 4 of :func:`annealing_schedule`, so the first steps out of the prior start as small as that
    schedule's. The pilot's particles are resampled between its temperatures, an AIS chain is not: one
    drawn far in a heavy-tailed prior's tail, where the log-likelihood is very large and negative, must be
    able to move in before the increments grow. The schedule is a fixed function of the pilot, itself a
    fixed function of the model, so every pull's weights stay unbiased (Neal 2001, Sec. 2).
    """
    betas = np.asarray(pilot_betas, dtype=np.float64)
    check_positive(n_steps, "n_steps", "pilot_schedule", integer=True)
    if betas.ndim != 1 or betas.size < 2 or betas[0] != 0.0 or betas[-1] != 1.0 or np.any(np.diff(betas) < 0):
        raise ValueError("The 'pilot_betas' parameter of pilot_schedule must be a non-decreasing 1-D array from "
                         f"exactly 0 to exactly 1. Got {pilot_betas!r} instead.")
    roots = np.interp(np.linspace(0.0, betas.size - 1.0, int(n_steps) + 1), np.arange(betas.size), betas**0.25)
    out = roots**4
    out[0], out[-1] = 0.0, 1.0
    return out


def _check_schedule(schedule, n_steps, transition):
    door = "AISArm"
    if isinstance(schedule, str):
        check_choice(schedule, ARM_SCHEDULES, "schedule", door)
        n = 2000 if n_steps is None else check_positive(n_steps, "n_steps", door, integer=True)
        if schedule == "pilot":
            if transition != "hmc":
                raise ValueError(f"The 'schedule' parameter of AISArm must be 'power4', 'linear' or an array with "
                                 f"transition={transition!r} (only HMC transitions have a pilot). Got 'pilot' instead.")
            return np.linspace(0.0, 1.0, int(n) + 1)  # replaced by the pilot's once it has run
        return annealing_schedule(int(n), schedule)
    betas = np.asarray(schedule, dtype=np.float64)
    ok = (
        betas.ndim == 1
        and betas.size >= 2
        and np.all(np.isfinite(betas))
        and betas[0] == 0.0
        and betas[-1] == 1.0
        and np.all(np.diff(betas) >= 0.0)
    )
    if not ok:
        raise ValueError(
            "The 'schedule' parameter of AISArm must be 'power4', 'linear' or a non-decreasing "
            f"1-D array starting at exactly 0 and ending at exactly 1. Got {schedule!r} instead."
        )
    if n_steps is not None and n_steps != betas.size - 1:
        raise ValueError(
            "The 'n_steps' parameter of AISArm must be None or len(schedule) - 1 = "
            f"{betas.size - 1} when a schedule array is given. Got {n_steps!r} instead."
        )
    return np.ascontiguousarray(betas)


def _next_beta(beta: float, loglik: np.ndarray, ratio: float) -> float:
    """The largest :math:`\\beta' \\le 1` at which the incremental weights
    :math:`e^{(\\beta'-\\beta)\\ell}` keep an effective sample size of ``ratio`` times the chains with a finite
    likelihood (adaptive tempering, Jasra et al. 2011, Sec. 3.1), by bisection.
    """
    finite = np.isfinite(loglik)
    ll = loglik[finite]
    target = ratio * ll.size

    def ess(b):
        lw = (b - beta) * (ll - ll.max())
        w = np.exp(lw)
        return w.sum() ** 2 / (w * w).sum()

    if ess(1.0) >= target:
        return 1.0
    lo, hi = beta, 1.0
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if ess(mid) >= target:
            lo = mid
        else:
            hi = mid
    return lo if lo > beta else hi


def _variance(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Robust weighted variance per coordinate: the squared weighted interquartile range over
    1.349 (the variance for a Gaussian, not inflated by heavy tails, e.g. a HalfCauchy scale's prior),
    shrunk towards 1e-3 as Stan's windowed adaptation shrinks its variance estimate (Stan
    Reference Manual, "HMC algorithm parameters": ``n/(n+5) var + 1e-3 * 5/(n+5)``).
    """
    order = np.argsort(x, axis=0)
    cum = np.cumsum(w[order], axis=0)
    cols = np.arange(x.shape[1])
    q1 = x[order[np.argmax(cum >= 0.25, axis=0), cols], cols]
    q3 = x[order[np.argmax(cum >= 0.75, axis=0), cols], cols]
    var = ((q3 - q1) / 1.349) ** 2
    n = x.shape[0]
    return n / (n + 5.0) * var + 1e-3 * 5.0 / (n + 5.0)


def _systematic(rng: np.random.Generator, w: np.ndarray) -> np.ndarray:
    """Systematic resampling indices (Kitagawa 1996) of normalised weights ``w``."""
    n = w.size
    u = (rng.random() + np.arange(n)) / n
    return np.minimum(np.searchsorted(np.cumsum(w), u), n - 1)


class DualAveraging(NamedTuple):
    """State of dual-averaging step-size adaptation (Hoffman & Gelman 2014, "The No-U-Turn sampler", JMLR 15, Alg. 5,
    with their gamma = 0.05, t0 = 10, kappa = 0.75 of Sec. 3.2): :func:`dual_averaging_update` after each move.

    Attributes
    ----------
    log_eps : float
        The log step size of the next move.
    log_eps_bar : float
        The averaged log step size, the one to keep once adaptation ends.
    mu : float
        The log step size the iterates shrink towards.
    h_bar : float
        The running mean of ``target - acceptance``.
    t : int
        Moves adapted so far.
    """

    log_eps: float
    log_eps_bar: float
    mu: float
    h_bar: float = 0.0
    t: int = 0


def dual_averaging_update(state: DualAveraging, accept: float, target: float) -> DualAveraging:
    """The state after a move whose mean acceptance probability was ``accept``, towards ``target``."""
    gamma, t0, kappa = 0.05, 10.0, 0.75
    t = state.t + 1
    h_bar = state.h_bar + (target - accept - state.h_bar) / (t + t0)
    log_eps = state.mu - np.sqrt(t) / gamma * h_bar
    eta = t**-kappa
    return DualAveraging(log_eps, eta * log_eps + (1.0 - eta) * state.log_eps_bar, state.mu, h_bar, t)


class PilotTimeout(RuntimeError):
    """:func:`tune_hmc` passed its ``deadline``; the message says how far it got."""


def _check_deadline(deadline: float | None, done: str) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise PilotTimeout(f"the HMC pilot passed its time limit after {done}")


class HMCSettings(NamedTuple):
    """The ``hmc_*`` settings of an arm that moves by HMC (:class:`AISArm` with ``transition="hmc"``,
    :class:`~pmcbandit.arms.evidence.tempered_smc.TemperedSMCArm`), checked by :func:`check_hmc_settings`.
    """

    leapfrog: int
    target_accept: float
    persistence: float


def check_hmc_settings(leapfrog, target_accept, persistence, pilot, door: str) -> HMCSettings:
    """Check an HMC arm's ``hmc_*`` arguments before anything is compiled: ``hmc_leapfrog`` an int > 0,
    ``hmc_target_accept`` in (0, 1), ``hmc_persistence`` in [0, 1), ``hmc_pilot`` None or an :class:`HMCPilot`
    (its dimension is checked by :func:`hmc_pilot_for`, once the density is built).
    """
    leapfrog = int(check_positive(leapfrog, "hmc_leapfrog", door, integer=True))
    target_accept = check_open_unit(target_accept, "hmc_target_accept", door)
    rho = float(check_positive(persistence, "hmc_persistence", door, allow_zero=True))
    if not rho < 1.0:
        raise ValueError(f"The 'hmc_persistence' parameter of {door} must be in [0, 1). Got {persistence!r} instead.")
    if pilot is not None and not isinstance(pilot, HMCPilot):
        raise TypeError(f"The 'hmc_pilot' parameter of {door} must be None or an HMCPilot. Got {pilot!r} instead.")
    return HMCSettings(leapfrog, target_accept, rho)


def hmc_pilot_for(density: ModelDensity, pilot: HMCPilot | None, settings: HMCSettings, door: str) -> HMCPilot:
    """``pilot`` when it was tuned on a density of ``density``'s dimension (else ValueError), or a new pilot run
    (:func:`tune_hmc`) with ``settings``.
    """
    if pilot is None:
        return tune_hmc(density, settings.leapfrog, settings.target_accept, settings.persistence)
    if pilot.inv_mass.shape[1:] != (density.dim,):
        raise ValueError(f"The 'hmc_pilot' parameter of {door} must be the HMCPilot of a density of dimension "
                         f"{density.dim}. Got one of dimension {pilot.inv_mass.shape[1:]} instead.")
    return pilot


def tune_hmc(density: ModelDensity, n_leapfrog: int, target_accept: float, persistence: float, *,
             n_chains: int = PILOT_CHAINS, n_moves: int = PILOT_MOVES, ess_ratio: float = PILOT_ESS,
             seed: int = PILOT_SEED, deadline: float | None = None) -> HMCPilot:
    """Step sizes and diagonal mass matrices of the HMC transitions, from one pilot run.

    The pilot is a sequential Monte Carlo sampler (Del Moral, Doucet & Jasra 2006) over the same
    geometric path: ``n_chains`` exact prior draws; at each temperature, ``n_moves`` HMC moves
    with the step size adapted by dual averaging towards ``target_accept`` (Hoffman & Gelman
    2014, Alg. 5, started from the previous temperature's step size; the chains' mean
    acceptance probability is the statistic); the next temperature is chosen adaptively
    (:func:`_next_beta`); the chains are reweighted by their likelihood increments, the robust
    weighted variance per coordinate (:func:`_variance`) becomes the next inverse mass matrix,
    and they are resampled (:func:`_systematic`), their momenta with them. At beta = 1 the chains
    then make enough further moves (last step size and mass) to hold
    :data:`PILOT_DRAWS_PER_DIM` states per coordinate (within :data:`PILOT_DRAW_MOVES`), whose
    mean and covariance are the pilot's posterior moments; these extra moves come after every
    adapted setting, so they change none of them. Its randomness comes from ``seed`` alone, so the
    result is a fixed function of the model and the settings.

    Parameters
    ----------
    density : ModelDensity
        The model (its :attr:`~ModelDensity.grad_jit_fn` is compiled here if it was not).
    n_leapfrog, target_accept, persistence
        As ``hmc_leapfrog``, ``hmc_target_accept``, ``hmc_persistence`` of :class:`AISArm`.
    n_chains, n_moves, ess_ratio, seed
        Pilot chains, moves per temperature, the share of the chains' effective sample size
        kept from one temperature to the next, and the seed of the pilot's randomness.
    deadline : float, optional
        A :func:`time.perf_counter` reading: the pilot stops with :class:`PilotTimeout` at the
        first temperature (or posterior move) that ends after it, moved later by the time the
        compilation of the move kernel for the model takes at the start. ``None``: no limit.

    Returns
    -------
    HMCPilot
    """
    from pmcbandit.arms.evidence.hmc_kernel import hmc_moves

    rng = np.random.default_rng(seed)
    density.grad_jit_fn  # the model's gradient, compiled before the deadline's clock (as by the pool)
    x = density.sample_prior(rng, n_chains)
    seeds = chain_seeds(rng, n_chains)
    z = rng.standard_normal(x.shape)
    uniform = np.full(n_chains, 1.0 / n_chains)
    inv_mass = _variance(x, uniform)
    beta, log_eps, log_z = 0.0, float(np.log(0.5)), 0.0
    betas, steps, masses, accepts = [], [], [], []
    acc = np.empty((n_chains, 1))
    # The move kernel is compiled for this model's gradient on its first call (no chains: nothing moves);
    # a fixed cost of any pilot, so the deadline moves by it.
    started = time.perf_counter()
    fn = density.grad_terms_fn
    hmc_moves(fn, x[:0], z[:0], beta, 0.5, inv_mass, n_leapfrog, persistence, 1, seeds[:0], acc[:0])
    if deadline is not None:
        deadline += time.perf_counter() - started
    while True:
        adapt, recent = DualAveraging(log_eps, log_eps, log_eps), []
        for t in range(1, n_moves + 1):
            hmc_moves(fn, x, z, beta, float(np.exp(adapt.log_eps)), inv_mass, n_leapfrog, persistence, 1, seeds, acc)
            a = float(acc.mean())
            adapt = dual_averaging_update(adapt, a, target_accept)
            if 2 * t > n_moves:
                recent.append(a)
        log_eps = adapt.log_eps_bar
        betas.append(beta)
        steps.append(float(np.exp(log_eps)))
        masses.append(inv_mass)
        accepts.append(float(np.mean(recent)))
        if beta == 1.0:
            break
        _check_deadline(deadline, f"{len(betas)} temperatures")
        _, loglik = density.logp_terms_batch(x)
        if not np.isfinite(loglik).any():
            raise ValueError(
                "The 'transition' parameter of AISArm must be 'slice' or 'imh' for a model whose HMC pilot "
                f"chains all left the likelihood's support. Got 'hmc' instead (at beta={beta!r})."
            )
        new = 1.0 if len(betas) >= PILOT_MAX_TEMPERATURES - 1 else _next_beta(beta, loglik, ess_ratio)
        lw = np.where(np.isfinite(loglik), (new - beta) * loglik, -np.inf)
        top = lw.max()
        w = np.exp(lw - top)
        log_z += top + float(np.log(w.mean()))
        w /= w.sum()
        inv_mass = _variance(x, w)
        keep = _systematic(rng, w)
        x, z = np.ascontiguousarray(x[keep]), np.ascontiguousarray(z[keep])
        beta = new
    # Posterior moments: the chains at beta = 1 moved on with the last step size and mass, every state kept.
    lo, hi = PILOT_DRAW_MOVES
    n_draw_moves = int(min(max(math.ceil(PILOT_DRAWS_PER_DIM * x.shape[1] / n_chains), lo), hi))
    states = np.empty((n_draw_moves + 1, *x.shape))
    states[0] = x
    for k in range(1, n_draw_moves + 1):
        hmc_moves(fn, x, z, 1.0, steps[-1], inv_mass, n_leapfrog, persistence, 1, seeds, acc)
        states[k] = x
        _check_deadline(deadline, f"{len(betas)} temperatures and {k} posterior moves")
    states = states.reshape(-1, x.shape[1])
    cov = np.atleast_2d(np.cov(states, rowvar=False))
    return HMCPilot(np.array(betas), np.array(steps), np.ascontiguousarray(masses), np.array(accepts), log_z,
                    states.mean(axis=0), 0.5 * (cov + cov.T), int(states.shape[0]))


class AISArm(Arm):
    """Annealed importance sampling estimates of the evidence of a PyMC model.

    Parameters
    ----------
    model : pymc.Model or ModelDensity
        The model (continuous free variables, forward-sampleable prior); pass a
        :class:`ModelDensity` to share one compiled density among arms.
    n_steps : int, optional
        Number of annealing increments :math:`n` (default 2000 for a named
        schedule; ``len(schedule) - 1`` for an array).
    n_chains : int
        Independent chains (log weights) per pull.
    schedule : {"power4", "linear", "pilot"} or array_like
        Inverse temperatures, see :func:`annealing_schedule`; ``"pilot"`` (HMC transitions only): the
        pilot's adaptive temperatures, interpolated to ``n_steps`` (:func:`pilot_schedule`).
    transition : {"slice", "imh", "hmc"}
        ``"slice"``: one coordinate-wise slice-sampling sweep per temperature
        (Neal 2003; the paper's choice). ``"imh"``: one independence Metropolis
        move from the interpolated Laplace Student-t proposal
        (:mod:`~pmcbandit.arms.evidence.imh_kernel`), for near-Gaussian posteriors.
        ``"hmc"``: one Hamiltonian Monte Carlo move of ``hmc_leapfrog`` leapfrog steps
        (:mod:`~pmcbandit.arms.evidence.hmc_kernel`) with a step size and diagonal mass
        matrix per temperature fixed by a pilot run at construction (Notes), for
        high-dimensional models with a differentiable density.
    slice_width : float or array_like
        Initial bracket width ``w`` of the slice sampler, per coordinate if an array.
    max_stepout : int
        Neal's (2003) limit ``m`` on stepping-out steps.
    hmc_leapfrog : int
        Leapfrog steps per HMC move (1: MALA). Each costs one evaluation of the
        densities and their gradients (``logp_evals`` counts these).
    hmc_target_accept : float
        Mean acceptance probability the pilot's step sizes are adapted to, in (0, 1).
    hmc_persistence : float
        Partial momentum refreshment :math:`\\alpha \\in [0, 1)` of the HMC moves
        (:mod:`~pmcbandit.arms.evidence.hmc_kernel`; 0: full refreshment, standard HMC). Above 0
        the momentum persists across temperatures, so a chain started in the prior's tails keeps
        moving towards a contracting target; on a centred hierarchical model this brings the typical
        chain's weight much closer to the evidence, at no cost elsewhere that matters
        (``benchmarks/results/bench_ais_hmc.md``).
    hmc_pilot : HMCPilot, optional
        The ``pilot`` of another HMC arm on the same density with the same ``hmc_*`` settings,
        reused instead of running :func:`tune_hmc` again (it does not depend on the schedule).
    imh_df : int
        Degrees of freedom of the IMH Student-t proposal (0: Gaussian). On Pima
        T=50 (``benchmarks/bench_ais.py``) the variance x cost per estimate was
        0.040 / 0.059 / 0.080 for df = 0 / 10 / 5 (acceptance 0.97 / 0.80 / 0.69);
        10 keeps heavier tails than the Laplace fit for non-Gaussian posteriors
        at a small price.
    cost : {"cpu_seconds", "logp_evals"}
        Measured CPU seconds (default, as the paper) or the number of log-density
        evaluations (deterministic, for reproducible benchmarks).
    parallel : bool
        Run the chains on numba threads (``prange``): the same values (each chain
        has its own stream), similar CPU cost, lower wall time when
        ``n_chains`` is a multiple of the thread count. Do not pull a parallel
        arm from several Python threads at once under numba's default
        ``workqueue`` threading layer, which is not thread-safe.
    name : str, optional
        Defaults to ``f"ais-{n_steps}"`` (``f"ais-imh-{n_steps}"`` for IMH,
        ``f"ais-hmc-{n_steps}"`` for HMC).
    step_seconds : float, optional
        Wall seconds per annealing step that predict a pull's duration (``expected_seconds``, Notes),
        as measured by another arm on the same density with the same transition, settings and kind
        of schedule (its ``step_seconds``). The default pool passes the one probe it sizes its arms
        by (:func:`pmcbandit.evidence_arms`), so an arm is predicted at the duration it was sized for:
        each arm timing itself would read the machine's load at another moment, and a reading above the
        sizing one can put the arm over the run's decision cap before its first pull
        (:mod:`pmcbandit.runtime.guards`, rule 1). ``None`` (default): measured at construction.

    Notes
    -----
    Per chain: :math:`x_0 \\sim p`, :math:`\\log w = \\sum_{j=1}^{n}
    (\\beta_j-\\beta_{j-1})\\,\\ell(x_{j-1})` with :math:`x_j \\sim T_j(x_{j-1},\\cdot)`
    (Neal 2001, Sec. 2; Neufeld et al. 2014, App. G); with ``n_steps = 1`` this
    is prior importance sampling. Diagnostics per pull: ``logp_evals`` (total
    density evaluations; for HMC, evaluations of the densities with their gradients),
    ``evals_per_update`` (per coordinate update for slice, per move for IMH and HMC),
    ``accept_rate`` (IMH and HMC; 1 for slice) and
    ``log_w_var`` (variance of the chains' log weights; NaN for one chain).
    A ``NaN`` log weight (a model whose density is NaN somewhere on the path)
    raises ``FloatingPointError``; ``-inf`` (zero weight) is a valid value.

    ``expected_seconds`` (the predicted wall time of one pull, for the run's guards,
    :mod:`pmcbandit.runtime.guards`) is ``n_steps * step_seconds``, with ``step_seconds`` the wall time
    per annealing step of timed runs of :data:`PROBE_STEPS` steps on the same kind of schedule
    at construction unless given (the mean of three; the steps of a power-of-4 schedule of any length spread
    over the temperatures alike, so the per-step cost carries over). It includes what a model
    evaluation alone does not: the sampler's own work and how many evaluations a step takes
    on this model.

    **HMC adaptation.** The step sizes and mass matrices are adapted once, on a pilot run at
    construction (:func:`tune_hmc`: an adaptive-tempering SMC pass with dual averaging per
    temperature, from a fixed internal seed), and frozen: temperature :math:`\\beta_j` of the
    schedule uses the pilot's settings at the smallest pilot temperature :math:`\\ge\\beta_j`.
    Nothing is adapted within a pull or between pulls. Each transition :math:`T_j` is then an
    HMC kernel with fixed parameters, which leaves :math:`\\pi_{\\beta_j}` invariant, so every
    chain's weight is an unbiased estimate of :math:`Z` (Neal 2001, Sec. 2-3: the argument needs
    only that each :math:`T_j` leaves :math:`\\pi_j` invariant and does not depend on the chain's
    own states), and the pulls of one arm stay independent and identically distributed, as the
    bandit's statistics assume (adapting between pulls would make later pulls depend on earlier
    ones; adapting within a pull from its own states would bias the weights).
    """

    log_scale = True
    diagnostics = ("logp_evals", "evals_per_update", "accept_rate", "log_w_var", "post_loglik",
                   "post_loglik_sd")
    family = "annealing"
    importance_weights = True
    thread_safe = False  # the density's prior sampler reseeds shared random states per call

    def __init__(
        self,
        model,
        n_steps: int | None = None,
        n_chains: int = 4,
        schedule="power4",
        transition: str = "slice",
        slice_width=0.5,
        max_stepout: int = 100,
        hmc_leapfrog: int = HMC_LEAPFROG,
        hmc_target_accept: float = HMC_TARGET_ACCEPT,
        hmc_persistence: float = HMC_PERSISTENCE,
        hmc_pilot: HMCPilot | None = None,
        imh_df: int = 10,
        cost: str = "cpu_seconds",
        parallel: bool = False,
        name: str | None = None,
        step_seconds: float | None = None,
    ):
        door = "AISArm"
        if step_seconds is not None:
            step_seconds = float(check_positive(step_seconds, "step_seconds", door))
        self.transition = check_choice(transition, TRANSITIONS, "transition", door)
        self.betas = _check_schedule(schedule, n_steps, self.transition)
        on_pilot = isinstance(schedule, str) and schedule == "pilot"  # the betas are the pilot's, once it has run
        self.n_steps = self.betas.size - 1
        self.n_chains = int(check_positive(n_chains, "n_chains", door, integer=True))
        self.cost = check_choice(cost, COSTS, "cost", door)
        self.cost_unit = "logp_evals" if self.cost == "logp_evals" else "cpu_seconds"
        self.max_stepout = int(check_positive(max_stepout, "max_stepout", door, integer=True))
        hmc = check_hmc_settings(hmc_leapfrog, hmc_target_accept, hmc_persistence, hmc_pilot, door)
        self.hmc_leapfrog, self.hmc_target_accept, self.hmc_persistence = hmc
        if not isinstance(parallel, bool):
            raise TypeError(f"The 'parallel' parameter of {door} must be a bool. Got {parallel!r} instead.")
        self.parallel = parallel
        if isinstance(imh_df, bool) or not isinstance(imh_df, numbers.Integral) or imh_df < 0:
            raise ValueError(f"The 'imh_df' parameter of {door} must be an int >= 0. Got {imh_df!r} instead.")
        self.imh_df = int(imh_df)
        # Cheap arguments are checked first: compiling the model takes seconds.
        self.density = model if isinstance(model, ModelDensity) else ModelDensity(model)
        try:
            width = np.asarray(slice_width, dtype=np.float64)
        except (TypeError, ValueError):
            width = np.full(0, np.nan)
        if width.ndim == 0:
            width = np.full(self.density.dim, float(width))
        if width.shape != (self.density.dim,) or not (np.all(np.isfinite(width)) and np.all(width > 0)):
            raise ValueError(
                f"The 'slice_width' parameter of {door} must be > 0 and finite (a float or one "
                f"per coordinate, {self.density.dim}). Got {slice_width!r} instead."
            )
        self.slice_width = np.ascontiguousarray(width)
        if self.transition == "imh":
            self._proposal = self._fit_proposal()
        elif self.transition == "hmc":
            self.pilot = hmc_pilot_for(self.density, hmc_pilot, hmc, door)
            if on_pilot:
                self.betas = pilot_schedule(self.pilot.betas, self.n_steps)
            self._proposal = self._hmc_params(self.betas)
        default = f"ais-{self.n_steps}" if self.transition == "slice" else f"ais-{self.transition}-{self.n_steps}"
        self.name = default if name is None else str(name)
        self._warm_up()
        if step_seconds is None:
            probe = (pilot_schedule(self.pilot.betas, PROBE_STEPS) if on_pilot
                     else annealing_schedule(PROBE_STEPS, schedule if isinstance(schedule, str) else "linear"))
            step_seconds = self._probe_step_seconds(probe)
        self.step_seconds = step_seconds
        self.expected_seconds = self.n_steps * self.step_seconds

    def __setstate__(self, state):
        # Unpickled on a worker (pmcbandit.runtime.executors.worker): the density is rebuilt from its model;
        # compile the kernel here so that no pull pays numba's compile time.
        self.__dict__.update(state)
        self._warm_up()

    def _fit_proposal(self):
        from pmcbandit.arms.evidence.imh_kernel import interpolated_laplace

        density = self.density
        try:
            prior_fit = density.laplace(beta=0.0)
        except ValueError:
            # Priors without an interior mode (in x) get a moment-matched Gaussian.
            draws = density.sample_prior(np.random.default_rng(20140621), max(4096, 64 * density.dim))
            prior_fit = (draws.mean(axis=0), np.linalg.inv(np.atleast_2d(np.cov(draws, rowvar=False))))
        try:
            posterior_fit = density.laplace(beta=1.0, x0=prior_fit[0])
        except ValueError as err:
            raise ValueError(
                "The 'transition' parameter of AISArm must be 'slice' for a model without a "
                f"posterior mode of positive-definite curvature. Got 'imh' instead ({err})"
            ) from err
        return interpolated_laplace(prior_fit, posterior_fit, self.betas)

    def _hmc_params(self, betas):
        """``(step size per temperature, pilot index per temperature, inverse masses)`` for ``betas``."""
        pilot = self.pilot
        index = np.minimum(np.searchsorted(pilot.betas, betas, side="left"), pilot.betas.size - 1)
        return np.ascontiguousarray(pilot.step_size[index]), index.astype(np.int64), pilot.inv_mass

    def _kernel(self):
        if self.transition == "slice":
            from pmcbandit.arms.evidence.slice_kernel import ais_slice_parallel, ais_slice_serial

            return ais_slice_parallel if self.parallel else ais_slice_serial
        if self.transition == "hmc":
            from pmcbandit.arms.evidence.hmc_kernel import ais_hmc_parallel, ais_hmc_serial

            return ais_hmc_parallel if self.parallel else ais_hmc_serial
        from pmcbandit.arms.evidence.imh_kernel import ais_imh_parallel, ais_imh_serial

        return ais_imh_parallel if self.parallel else ais_imh_serial

    def _run(self, x0, betas, seeds, proposal):
        """``(log_w, evals, accepts, ll_end)`` of chains started at ``x0``: log weights, density evaluations, accepted
        moves and the log likelihood at each chain's final state.
        """
        c = x0.shape[0]
        log_w = np.empty(c)
        evals = np.empty(c, dtype=np.int64)
        accepts = np.zeros(c, dtype=np.int64)
        ll_end = np.empty(c)
        if self.transition == "slice":
            self._kernel()(self.density.terms_fn, x0, betas, self.slice_width, self.max_stepout, seeds,
                           log_w, evals, ll_end)
        elif self.transition == "hmc":
            eps, index, inv_mass = proposal
            self._kernel()(self.density.grad_terms_fn, x0, betas, eps, index, inv_mass, self.hmc_leapfrog,
                           self.hmc_persistence, seeds, log_w, evals, accepts, ll_end)
        else:
            a, b, mu, prec = proposal
            self._kernel()(self.density.jit_fn, x0, betas, a, b, mu, prec, self.imh_df, seeds,
                           log_w, evals, accepts, ll_end)
        return log_w, evals, accepts, ll_end

    def _warm_up(self) -> None:
        """Compile the kernel on a 3-temperature run so pulls never pay numba's compile time."""
        rng = np.random.default_rng(0)
        x0 = self.density.sample_prior(rng, 1)
        betas = np.array([0.0, 0.5, 1.0])
        proposal = None
        if self.transition == "imh":
            a, b, mu, prec = self._proposal
            proposal = (a, b, mu[[0, self.n_steps // 2, -1]].copy(), prec[[0, self.n_steps // 2, -1]].copy())
        elif self.transition == "hmc":
            proposal = self._hmc_params(betas)
        self._run(x0, betas, chain_seeds(rng, 1), proposal)

    def _probe_step_seconds(self, betas: np.ndarray) -> float:
        """Wall seconds per annealing step of timed runs along ``betas`` (:data:`PROBE_STEPS` steps of the arm's
        kind of schedule; mean of three: a step's cost varies from chain to chain, and the mean is what a budget
        pays).
        """
        rng = np.random.default_rng(1)
        proposal = None
        if self.transition == "imh":
            a, b, mu, prec = self._proposal
            idx = np.linspace(0, self.n_steps, PROBE_STEPS + 1).round().astype(np.int64)
            proposal = (a, b, mu[idx].copy(), prec[idx].copy())
        elif self.transition == "hmc":
            proposal = self._hmc_params(betas)
        total = 0.0
        for _ in range(3):
            x0 = self.density.sample_prior(rng, self.n_chains)
            seeds = chain_seeds(rng, self.n_chains)
            start = time.perf_counter()
            self._run(x0, betas, seeds, proposal)
            total += time.perf_counter() - start
        return total / (3 * PROBE_STEPS)

    def draw(self, rng: np.random.Generator):
        x0 = self.density.sample_prior(rng, self.n_chains)
        seeds = chain_seeds(rng, self.n_chains)
        log_w, evals, accepts, ll_end = self._run(x0, self.betas, seeds, getattr(self, "_proposal", None))
        if np.isnan(log_w).any():
            raise FloatingPointError(
                f"arm {self.name!r} produced a NaN log weight: the model's log density is NaN "
                "somewhere on the annealing path."
            )
        total = int(evals.sum())
        moves = self.n_chains * max(self.n_steps - 1, 0)
        if self.transition == "slice":
            per_update = (total - self.n_chains) / (moves * self.density.dim) if moves else float("nan")
            accept = 1.0
        else:
            per_update = (total - self.n_chains) / moves if moves else float("nan")
            accept = float(accepts.sum() / moves) if moves else float("nan")
        info = {
            "logp_evals": float(total),
            "evals_per_update": float(per_update),
            "accept_rate": accept,
            "log_w_var": float(np.var(log_w)) if log_w.size > 1 and np.isfinite(log_w).all() else float("nan"),
        }
        # The chains' final states, weighted: the posterior this pull saw.
        info.update(weighted_loglik(log_w, ll_end))
        return log_w, info, (float(total) if self.cost == "logp_evals" else None)
