"""A tempered sequential Monte Carlo evidence arm on a temperature ladder fixed by the HMC pilot.

One pull is one run of an SMC sampler (Del Moral, Doucet & Jasra 2006, Sec. 3.1-3.3) over the
geometric path :math:`\\pi_\\beta \\propto p(x)\\,L(x)^{\\beta}` from the prior to the posterior, whose
temperatures :math:`0 = \\beta_0 < \\dots < \\beta_S = 1`, leapfrog step sizes and diagonal inverse
masses come from an :class:`~pmcbandit.arms.evidence.ais.HMCPilot` (:func:`~pmcbandit.arms.evidence.ais.tune_hmc`)
before any pull. ``n_particles`` exact prior draws; at each temperature :math:`s = 1..S`:

1. reweight: :math:`\\log w_i \\mathrel{+}= (\\beta_s - \\beta_{s-1})\\,\\ell(x_i)` (the incremental weight
   :math:`\\gamma_s(x)/\\gamma_{s-1}(x)` of an MCMC move with its time reversal as backward kernel,
   Del Moral et al. 2006, Sec. 3.3.2, for an MCMC move invariant for :math:`\\pi_{\\beta_s}`);
2. resample (systematic, Kitagawa 1996) when the effective sample size
   :math:`(\\sum_i w_i)^2/\\sum_i w_i^2` is at most ``ess_threshold`` times the particles, adding
   :math:`\\log\\frac1N\\sum_i w_i` to :math:`\\log\\hat Z` and resetting the weights to 1;
3. move every particle by ``n_moves`` HMC moves at :math:`\\beta_s`
   (the move of the AIS arm's HMC transitions, :mod:`~pmcbandit.arms.evidence.hmc_kernel`, momentum
   persistence included), each particle on its own xoshiro256** stream.

After the last reweighting :math:`\\log\\frac1N\\sum_i w_i` is added once more, so
:math:`\\hat Z = \\prod_{r}\\frac1N\\sum_i w^{(r)}_i` over the resampling times and the end, the
product of the mean incremental weights when every step resamples.
"""

from __future__ import annotations

import numbers
import time

import numba
import numpy as np

from pmcbandit._validation import check_choice, check_positive
from pmcbandit.arms.base import Arm
from pmcbandit.arms.evidence._kernels import chain_seeds
from pmcbandit.arms.evidence.ais import (
    COSTS,
    HMC_LEAPFROG,
    HMC_PERSISTENCE,
    HMC_TARGET_ACCEPT,
    HMCPilot,
    check_hmc_settings,
    hmc_pilot_for,
)
from pmcbandit.arms.evidence.hmc_kernel import _eval, _hmc_move
from pmcbandit.arms.evidence.model_density import ModelDensity

__all__ = ["TemperedSMCArm", "pilot_ladder", "smc_pass"]

#: Temperatures and particles of the timed probe runs that predict a pull's duration (``expected_seconds``).
PROBE_TEMPERATURES = 17
PROBE_PARTICLES = 16
#: Indices of the pull's statistics (:func:`smc_pass`'s ``stats``).
_EVALS, _ACCEPTED, _MOVES, _RESAMPLES, _MIN_ESS = range(5)


def pilot_ladder(pilot: HMCPilot, n_temperatures: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(betas, step sizes, inverse masses)`` of the SMC ladder: the pilot's own, or interpolated.

    ``None``: the pilot's temperatures with the step size and inverse mass it adapted at each. An int
    :math:`n \\ge 2`: :math:`n` temperatures at evenly spaced fractional positions
    :math:`u_j = j\\,(K-1)/(n-1)` of the pilot's :math:`K`, with :math:`\\beta`, :math:`\\log\\epsilon`
    and :math:`\\log` of each inverse mass interpolated linearly in :math:`u` (a finer or coarser
    ladder with the same spacing profile). Either way a fixed function of the pilot.
    """
    betas = np.asarray(pilot.betas, dtype=np.float64)
    steps = np.asarray(pilot.step_size, dtype=np.float64)
    masses = np.asarray(pilot.inv_mass, dtype=np.float64)
    if n_temperatures is None or n_temperatures == betas.size:
        return betas.copy(), steps.copy(), np.ascontiguousarray(masses)
    k = np.arange(betas.size, dtype=np.float64)
    u = np.linspace(0.0, betas.size - 1.0, int(n_temperatures))
    new = np.interp(u, k, betas)
    new[0], new[-1] = 0.0, 1.0
    eps = np.exp(np.interp(u, k, np.log(steps)))
    log_mass = np.log(masses)
    inv_mass = np.exp(np.stack([np.interp(u, k, log_mass[:, i]) for i in range(masses.shape[1])], axis=1))
    return new, eps, np.ascontiguousarray(inv_mass)


@numba.njit(cache=True)
def _copy_rows(dst, src, idx):
    for j in range(idx.shape[0]):
        dst[j, :] = src[idx[j], :]


@numba.njit(cache=True)
def smc_pass(grad_fn, x, z, betas, eps, inv_mass, n_leapfrog, persistence, n_moves, threshold, seeds, u, stats):
    """One SMC run (module docstring) from the prior draws ``x`` and whitened momenta ``z``; returns
    :math:`\\log\\hat Z`.

    ``x``, ``z`` (``(N, dim)``) and ``seeds`` (``(N, 4)``) are updated in place; a resampled particle
    takes its ancestor's state and momentum but keeps its own stream. ``eps[s]`` and ``inv_mass[s]``
    are the HMC settings at ``betas[s]``; ``u[s - 1]`` in (0, 1] is the uniform of a resampling at
    step ``s``. ``stats`` receives the density evaluations, accepted and proposed moves,
    resamplings and the smallest effective sample size met. Particles of weight zero are not moved
    (they can only be dropped). ``NaN`` when a log weight is NaN.
    """
    n, d = x.shape
    n_steps = betas.shape[0] - 1
    cur = np.empty((n, 2))
    g_lp = np.empty((n, d))
    g_ll = np.empty((n, d))
    for i in range(n):
        cur[i, 0], cur[i, 1], _ = _eval(grad_fn, x[i], 1.0, g_lp[i], g_ll[i])
    x2, z2, cur2, g_lp2, g_ll2 = np.empty_like(x), np.empty_like(z), np.empty_like(cur), np.empty_like(g_lp), \
        np.empty_like(g_ll)
    work = np.empty((4, d))
    lw = np.zeros(n)
    w = np.empty(n)
    idx = np.empty(n, dtype=np.int64)
    evals, accepted, moves, resamples = n, 0, 0, 0
    min_ess = float(n)
    log_z = 0.0
    for s in range(1, n_steps + 1):
        db = betas[s] - betas[s - 1]
        top = -np.inf
        for i in range(n):
            if db != 0.0 and lw[i] != -np.inf:
                lw[i] += db * cur[i, 1]
            if lw[i] != lw[i]:
                log_z = np.nan
                break
            if lw[i] > top:
                top = lw[i]
        if log_z != log_z:
            break
        if top == -np.inf:
            log_z = -np.inf
            break
        sw = 0.0
        sw2 = 0.0
        last = 0
        for i in range(n):
            w[i] = np.exp(lw[i] - top)
            sw += w[i]
            sw2 += w[i] * w[i]
            if w[i] > 0.0:
                last = i
        ess = sw * sw / sw2
        if ess < min_ess:
            min_ess = ess
        if s == n_steps:
            log_z += top + np.log(sw / n)
            break
        if ess <= threshold * n:
            log_z += top + np.log(sw / n)
            # Systematic resampling: the j-th pointer (u + j) / N on the cumulative normalised weights.
            k = 0
            cum = w[0] / sw
            for j in range(n):
                pos = (u[s - 1] + j) / n
                while cum < pos and k < last:
                    k += 1
                    cum += w[k] / sw
                idx[j] = k
            _copy_rows(x2, x, idx)
            _copy_rows(z2, z, idx)
            _copy_rows(cur2, cur, idx)
            _copy_rows(g_lp2, g_lp, idx)
            _copy_rows(g_ll2, g_ll, idx)
            x[:, :] = x2
            z[:, :] = z2
            cur[:, :] = cur2
            g_lp[:, :] = g_lp2
            g_ll[:, :] = g_ll2
            lw[:] = 0.0
            resamples += 1
        for i in range(n):
            if lw[i] == -np.inf:
                continue
            for _ in range(n_moves):
                _, moved, used = _hmc_move(grad_fn, x[i], cur[i], g_lp[i], g_ll[i], z[i], betas[s], eps[s],
                                           inv_mass[s], n_leapfrog, persistence, seeds[i], work)
                evals += used
                accepted += moved
                moves += 1
    stats[_EVALS] = evals
    stats[_ACCEPTED] = accepted
    stats[_MOVES] = moves
    stats[_RESAMPLES] = resamples
    stats[_MIN_ESS] = min_ess
    return log_z


class TemperedSMCArm(Arm):
    """Tempered SMC estimates of the evidence with HMC moves on the pilot's fixed ladder: one :math:`\\log\\hat Z`
    per pull.

    Parameters
    ----------
    model : pymc.Model or ModelDensity
        The model (continuous free variables, forward-sampleable prior); pass a
        :class:`ModelDensity` to share one compiled density among arms.
    n_particles : int
        Particles :math:`N` per run (exact prior draws).
    n_moves : int
        HMC moves per particle at each temperature after the first.
    n_temperatures : int, optional
        Temperatures of the ladder, endpoints included (:func:`pilot_ladder`); ``None``: the pilot's own.
    ess_threshold : float
        Resample at a step when the effective sample size of the weights is at most this share of
        :math:`N`, in [0, 1]: 1 resamples at every step, 0 never (then :math:`\\hat Z` is the mean of
        :math:`N` AIS weights). The default 0.5 is the customary rule (the threshold :math:`N/2` of
        Del Moral, Doucet & Jasra 2006); the pilot's ladder keeps each step's effective sample size
        near :data:`~pmcbandit.arms.evidence.ais.PILOT_ESS` of its chains, so the weights accumulate
        over a few steps between resamplings. The rule keeps :math:`\\hat Z` unbiased (Notes).
    hmc_leapfrog, hmc_target_accept, hmc_persistence
        As for :class:`~pmcbandit.arms.evidence.AISArm` (and their defaults): leapfrog steps per
        move, the pilot's target acceptance, the momentum persistence :math:`\\alpha \\in [0, 1)`.
    hmc_pilot : HMCPilot, optional
        The pilot of another HMC arm on the same density with the same ``hmc_*`` settings (the evidence
        pool's), instead of running :func:`~pmcbandit.arms.evidence.ais.tune_hmc` again.
    cost : {"cpu_seconds", "logp_evals"}
        Measured CPU seconds (default) or the evaluations of the densities with their gradients.
    name : str, optional
        Defaults to ``f"smc-hmc-{n_particles}x{n_moves}"``.

    Notes
    -----
    **Unbiasedness.** With the temperatures, the HMC step sizes and masses, the move counts and the
    resampling rule fixed before the run, :math:`\\hat Z` is an unbiased estimate of :math:`Z` for any
    :math:`N` (Del Moral 2004, *Feynman-Kac Formulae*, Ch. 7; Del Moral, Doucet & Jasra 2006, Sec. 3):
    every move leaves :math:`\\pi_{\\beta_s}` invariant for fixed settings (as in the AIS arm,
    :mod:`~pmcbandit.arms.evidence.hmc_kernel`), systematic resampling gives each particle
    :math:`N W_i` offspring in expectation (the condition on a resampling scheme of Andrieu, Doucet &
    Holenstein 2010, Sec. 4.1), and :math:`\\hat Z` is then the end value of a martingale of mean
    :math:`Z`. Deciding *whether* to resample from the current weights (``0 < ess_threshold < 1``) keeps it
    unbiased: Whiteley, Lee & Heine (2016, Bernoulli 22(1)) prove the lack of bias of
    :math:`\\alpha`-SMC, whose resampling may be chosen from the particle system so far, with
    ESS-triggered resampling as an instance; Del Moral, Doucet & Jasra (2012, Bernoulli 18(1)) give
    its convergence. Choosing the next *temperature* or the HMC settings from the current particles
    (as the pilot run and :class:`~pmcbandit.arms.evidence.SMCArm` do) would not: the ladder would
    depend on the very particles whose weights it defines, :math:`\\hat Z` would no longer be the
    particle estimate of a fixed Feynman-Kac model's normalising constant, and only consistency as
    :math:`N \\to \\infty` is known (Beskos, Jasra, Kantas & Thiery 2016, Ann. Appl. Probab. 26(2)).
    Here every adaptive choice is made once, by the pilot, a fixed function of the model, so the
    pulls are also independent and identically distributed, as the bandit's statistics assume. The
    value of a pull is :math:`\\log\\hat Z` (``log_scale``): the bandit averages :math:`\\hat Z`, not
    its log, whose mean lies below :math:`\\log Z` (Jensen).

    ``importance_weights`` is ``False``: a value is the log of a product of particle averages, not of
    one importance weight, so the Pareto :math:`\\hat k` of a batch of weights does not apply to it.
    ``expected_seconds`` is ``n_particles * S * pair_seconds`` with ``pair_seconds`` the wall time per
    particle and temperature of timed runs of :data:`PROBE_PARTICLES` particles on
    :data:`PROBE_TEMPERATURES` temperatures of the arm's ladder (:func:`pilot_ladder` of the ladder;
    mean of three). Diagnostics per pull: ``logp_evals``, ``accept_rate`` (accepted over proposed HMC
    moves), ``n_resamples`` and ``min_ess`` (the smallest effective sample size over the steps, as a
    share of :math:`N`). A ``NaN`` :math:`\\log\\hat Z` raises ``FloatingPointError``; ``-inf`` (every
    particle of weight zero) is a valid value.
    """

    log_scale = True
    unbiased = True
    diagnostics = ("logp_evals", "accept_rate", "n_resamples", "min_ess")
    family = "annealing"
    importance_weights = False
    thread_safe = False  # the density's prior sampler reseeds shared random states per call

    def __init__(
        self,
        model,
        n_particles: int = 128,
        n_moves: int = 2,
        n_temperatures: int | None = None,
        ess_threshold: float = 0.5,
        hmc_leapfrog: int = HMC_LEAPFROG,
        hmc_target_accept: float = HMC_TARGET_ACCEPT,
        hmc_persistence: float = HMC_PERSISTENCE,
        hmc_pilot: HMCPilot | None = None,
        cost: str = "cpu_seconds",
        name: str | None = None,
    ):
        door = "TemperedSMCArm"
        self.n_particles = int(check_positive(n_particles, "n_particles", door, integer=True))
        self.n_moves = int(check_positive(n_moves, "n_moves", door, integer=True))
        if n_temperatures is not None:
            check_positive(n_temperatures, "n_temperatures", door, integer=True)
            if n_temperatures < 2:
                raise ValueError(f"The 'n_temperatures' parameter of {door} must be None or an int >= 2. "
                                 f"Got {n_temperatures!r} instead.")
            n_temperatures = int(n_temperatures)
        self.n_temperatures = n_temperatures
        if isinstance(ess_threshold, bool) or not isinstance(ess_threshold, numbers.Real):
            raise TypeError(f"The 'ess_threshold' parameter of {door} must be a real number in [0, 1]. "
                            f"Got {ess_threshold!r} instead.")
        if not 0.0 <= float(ess_threshold) <= 1.0:
            raise ValueError(f"The 'ess_threshold' parameter of {door} must be in [0, 1]. Got {ess_threshold!r} "
                             "instead.")
        self.ess_threshold = float(ess_threshold)
        hmc = check_hmc_settings(hmc_leapfrog, hmc_target_accept, hmc_persistence, hmc_pilot, door)
        self.hmc_leapfrog, self.hmc_target_accept, self.hmc_persistence = hmc
        self.cost = check_choice(cost, COSTS, "cost", door)
        self.cost_unit = "logp_evals" if self.cost == "logp_evals" else "cpu_seconds"
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"The 'name' parameter of {door} must be None or a non-empty str. Got {name!r} instead.")
        self.name = f"smc-hmc-{self.n_particles}x{self.n_moves}" if name is None else name
        # Cheap arguments are checked first: compiling the model takes seconds.
        self.density = model if isinstance(model, ModelDensity) else ModelDensity(model)
        self.pilot = hmc_pilot_for(self.density, hmc_pilot, hmc, door)
        self.betas, self.step_size, self.inv_mass = pilot_ladder(self.pilot, n_temperatures)
        self.n_steps = self.betas.size - 1
        self._warm_up()
        self.pair_seconds = self._probe_pair_seconds()
        self.expected_seconds = self.n_particles * self.n_steps * self.pair_seconds

    def __setstate__(self, state):
        # Unpickled on a worker (pmcbandit.runtime.executors.worker): the density is rebuilt from its model;
        # compile the kernel here so that no pull pays numba's compile time.
        self.__dict__.update(state)
        self._warm_up()

    def _run(self, x, z, seeds, u, ladder):
        betas, eps, inv_mass = ladder
        stats = np.zeros(5)
        log_z = smc_pass(self.density.grad_terms_fn, x, z, betas, eps, inv_mass, self.hmc_leapfrog,
                         self.hmc_persistence, self.n_moves, self.ess_threshold, seeds, u, stats)
        return float(log_z), stats

    def _start(self, rng: np.random.Generator, n: int, n_steps: int):
        """Prior draws, momenta, streams and resampling uniforms of one run, all from ``rng``."""
        x = np.ascontiguousarray(self.density.sample_prior(rng, n), dtype=np.float64)
        z = rng.standard_normal(x.shape)
        seeds = chain_seeds(rng, n)
        u = 1.0 - rng.random(max(n_steps, 1))  # in (0, 1]
        return x, z, seeds, u

    def _warm_up(self) -> None:
        """Compile the kernel on a 3-temperature run of two particles so pulls never pay numba's compile time."""
        rng = np.random.default_rng(0)
        ladder = pilot_ladder(self.pilot, 3)
        self._run(*self._start(rng, 2, 2), ladder)

    def _probe_pair_seconds(self) -> float:
        """Wall seconds per particle and temperature of timed runs (mean of three)."""
        rng = np.random.default_rng(1)
        k = min(PROBE_TEMPERATURES, self.betas.size)
        pos = np.linspace(0, self.betas.size - 1, k).round().astype(np.int64)
        ladder = (self.betas[pos].copy(), self.step_size[pos].copy(), self.inv_mass[pos].copy())
        n = min(PROBE_PARTICLES, self.n_particles)
        total = 0.0
        for _ in range(3):
            start_args = self._start(rng, n, k - 1)
            start = time.perf_counter()
            self._run(*start_args, ladder)
            total += time.perf_counter() - start
        return total / (3 * n * (k - 1))

    def draw(self, rng: np.random.Generator):
        x, z, seeds, u = self._start(rng, self.n_particles, self.n_steps)
        log_z, stats = self._run(x, z, seeds, u, (self.betas, self.step_size, self.inv_mass))
        if np.isnan(log_z):
            raise FloatingPointError(
                f"arm {self.name!r} produced a NaN log evidence: the model's log density is NaN "
                "somewhere on the tempering path."
            )
        moves = stats[_MOVES]
        info = {
            "logp_evals": float(stats[_EVALS]),
            "accept_rate": float(stats[_ACCEPTED] / moves) if moves else float("nan"),
            "n_resamples": float(stats[_RESAMPLES]),
            "min_ess": float(stats[_MIN_ESS] / self.n_particles),
        }
        return np.array([log_z]), info, (float(stats[_EVALS]) if self.cost == "logp_evals" else None)
