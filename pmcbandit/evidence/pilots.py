"""The pilots of the default evidence pool: where the moments of its pilot-t arms (and its HMC arm's settings) come
from, and how much of a timed run's set-up each may take.

:func:`annealing_pilot` runs the HMC pilot of :func:`~pmcbandit.arms.evidence.ais.tune_hmc` (an annealing run over
the HMC arm's temperatures, whose draws at the posterior give the moments as a by-product);
:func:`run_posterior_pilot` runs :func:`~pmcbandit.arms.evidence.posterior_pilot.posterior_pilot` (HMC at the
posterior from a mode), its draws stopped once a pilot-t arm on their moments passes the set-up check
(:class:`~pmcbandit.evidence.importance.PilotCheck`); :func:`pilot_t_at_mode` is the rule between them where the pool
has no HMC arm and the mode search found an interior mode. :func:`pmcbandit.evidence.pool.evidence_arms` decides when
a pool needs a pilot at all. Each pilot is a fixed function of the model and its seed, drawn before any pull and
independently of them, so the arms built on it stay unbiased.

May import: the arms and the importance-arm builders (:mod:`pmcbandit.evidence.importance`); never a door.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pmcbandit.evidence.importance import PilotCheck, pilot_arms

__all__ = ["PILOT_MIN_RUN_SECONDS", "PILOT_MAX_SHARE", "POSTERIOR_PILOT_MIN_RUN_SECONDS", "POSTERIOR_PILOT_MAX_SHARE",
           "TRACE_PILOT_WARMUP", "TRACE_PILOT_FIRST_CHECK", "annealing_pilot", "covariance_draws", "pilot_t_at_mode",
           "run_posterior_pilot", "trace_start"]

#: Least time left to the pulls (after the set-up so far) for a timed default pool to run the HMC pilot for its
#: pilot-t arms alone (no HMC AIS arm), where no Laplace arm passes the k-hat check at set-up.
PILOT_MIN_RUN_SECONDS = 15.0
#: Share of the time left to the pulls the HMC pilot may take (after the gradient's compilation) before it is given up.
PILOT_MAX_SHARE = 0.5
#: Least time left to the pulls (after the set-up so far) for a timed default pool to run the posterior pilot for its
#: pilot-t arms (no HMC AIS arm; an interior mode found; no Laplace arm passing the k-hat check at set-up), and the
#: share of that time it may take before it is given up. The share is most of the time: the pilot runs only where every
#: Laplace arm failed its check, so without its moments the pool's importance arms carry no reliable answer, and its
#: draws stop as soon as one of its arms passes (the share binds only on a machine too slow for the budget).
POSTERIOR_PILOT_MIN_RUN_SECONDS = 5.0
POSTERIOR_PILOT_MAX_SHARE = 0.8
#: Warm-up moves of the posterior pilot started at a trace's draws (:func:`trace_start`; one re-estimate of the
#: diagonal mass, after 25 moves, where the pilot from a mode makes three in 100), and the draw moves after which its
#: draws are first checked (then at each doubling). Its chains start in the typical set and its first mass is the
#: trace's variances, so the warm-up has only the step size and the trace's misses (a funnel's neck) to adapt to
#: (the gradient calls it saves are measured in ``benchmarks/results/bench_setup_trace.md``).
TRACE_PILOT_WARMUP = 50
TRACE_PILOT_FIRST_CHECK = 25


def annealing_pilot(density, budget_seconds, notes: list[str], served: str):
    """The HMC pilot (:func:`~pmcbandit.arms.evidence.ais.tune_hmc`) at the HMC transitions' defaults, given
    :data:`PILOT_MAX_SHARE` of ``budget_seconds`` after compiling the gradient when timed; ``None`` with a note when
    it could not be run.
    """
    from pmcbandit.arms.evidence.ais import HMC_LEAPFROG, HMC_PERSISTENCE, HMC_TARGET_ACCEPT, PilotTimeout, tune_hmc

    try:
        density.grad_jit_fn  # compiled before the pilot's clock starts
        deadline = None if budget_seconds is None else time.perf_counter() + PILOT_MAX_SHARE * budget_seconds
        return tune_hmc(density, HMC_LEAPFROG, HMC_TARGET_ACCEPT, HMC_PERSISTENCE, deadline=deadline)
    except PilotTimeout as err:
        notes.append(f"{served} left out: {err} ({PILOT_MAX_SHARE:g} of the {budget_seconds:g} s the pulls had "
                     "left)")
    except Exception as err:  # noqa: BLE001 (a graph without a gradient, one numba cannot compile, chains lost)
        notes.append(f"{served} left out: the HMC pilot could not be run ({type(err).__name__}: {err})")
    return None


def pilot_t_at_mode(density, mode, proposals, batch_size, cost, notes: list[str], budget_seconds,
                    left: Callable[[], float | None], start: dict | None = None):
    """The pilot-t arms over an interior mode without an HMC arm, and the pilot they came from: the posterior pilot's
    (:func:`run_posterior_pilot`); where none of them passes the set-up k-hat check
    (:func:`~pmcbandit.evidence.importance.setup_check_passes`) and the time left allows the annealing pilot
    (:data:`PILOT_MIN_RUN_SECONDS`; always when untimed), that pilot's, unless it could not be run.
    ``budget_seconds``: the time left to the pulls when the pilot starts (``None``: untimed); ``left()``: the time
    left after the set-up so far, read after the posterior pilot; ``start``: the posterior pilot's start from a
    trace (:func:`trace_start`), where there is one.
    """
    check = PilotCheck(density, proposals, batch_size, cost)
    pilot = run_posterior_pilot(density, mode, budget_seconds, notes, check, start)
    arms, passed = ([], False) if pilot is None else check.arms_for(pilot, notes)
    if passed:
        return pilot, arms
    seconds = left()
    if seconds is not None and seconds < PILOT_MIN_RUN_SECONDS:
        return pilot, arms
    notes.append("no pilot-t arm from the posterior pilot passed the Pareto k-hat check on its set-up draws, so the "
                 "annealing HMC pilot was run for them" if pilot is not None else
                 "the posterior pilot gave no moments, so the annealing HMC pilot was run for the pilot-t arms")
    annealed = annealing_pilot(density, seconds, notes, "annealing pilot's pilot-t arms")
    if annealed is None:
        return pilot, arms
    return annealed, pilot_arms(density, annealed, proposals, batch_size, cost, notes)


def covariance_draws(dim: int) -> int:
    """The draws, :math:`d(d+1)` in ``dim`` :math:`= d` dimensions, below which a t on their sample covariance makes
    importance weights that a check on one batch of set-up draws may pass and the run's own Pareto :math:`\\hat k`
    later rejects.

    Where a t is fitted to the covariance :math:`\\hat\\Sigma = \\Sigma^{1/2}(I + E)\\Sigma^{1/2}` of :math:`n` draws
    from a near-Gaussian posterior, the log weights are
    :math:`-\\tfrac12 z^\\top E z + \\tfrac12 \\mathrm{tr}\\,E + O(E^2)`
    (:math:`z` whitened), whose variance is :math:`\\tfrac12 \\mathrm{tr}(E^2) \\approx d(d+1)/(2n)` for the sample
    covariance of independent draws (:math:`E_{ii}` of variance :math:`2/n`, :math:`E_{ij}` of :math:`1/n`): above
    1/2 below :math:`n = d(d+1)`. Autocorrelated draws count for fewer.
    """
    return int(dim) * (int(dim) + 1)


def trace_start(x, n_chains: int | None = None) -> dict:
    """The posterior pilot's start from a trace's unconstrained draws ``x`` ``(n, dim)``: its chains at ``n_chains``
    (:data:`~pmcbandit.arms.evidence.posterior_pilot.POSTERIOR_PILOT_CHAINS` unless given) draws evenly spaced
    through them (so across the trace's chains), its first inverse mass their variances, :data:`TRACE_PILOT_WARMUP`
    warm-up moves and its first check after :data:`TRACE_PILOT_FIRST_CHECK` draw moves, or after the moves that make
    :math:`d(d+1)` draws over its chains where that is more: keyword arguments of
    :func:`~pmcbandit.arms.evidence.posterior_pilot.posterior_pilot`, a fixed function of ``x``.

    The first check waits for :func:`covariance_draws`: the pilot from a mode checks first after
    :data:`~pmcbandit.arms.evidence.posterior_pilot.POSTERIOR_PILOT_DRAWS` moves, which that count exceeds only above
    56 dimensions. The pilot checks no later than its last draw move
    (:func:`~pmcbandit.arms.evidence.posterior_pilot.draw_moves`), which this count passes from 179 dimensions on.
    """
    import numpy as np

    from pmcbandit.arms.evidence.posterior_pilot import POSTERIOR_PILOT_CHAINS

    n_chains = POSTERIOR_PILOT_CHAINS if n_chains is None else int(n_chains)
    rows = np.linspace(0, x.shape[0] - 1, min(n_chains, x.shape[0])).round().astype(int)
    covariance_moves = -(-covariance_draws(x.shape[1]) // rows.size)
    return dict(starts=x[rows], inv_mass=x.var(axis=0, ddof=1), n_warmup=TRACE_PILOT_WARMUP,
                first_check=max(TRACE_PILOT_FIRST_CHECK, covariance_moves))


def run_posterior_pilot(density, mode, budget_seconds, notes: list[str], enough=None, start: dict | None = None):
    """The posterior pilot (:func:`~pmcbandit.arms.evidence.posterior_pilot.posterior_pilot`) from ``mode`` (or
    from a trace's draws: ``start``, :func:`trace_start`), given :data:`POSTERIOR_PILOT_MAX_SHARE` of
    ``budget_seconds`` when timed, its draws stopped once ``enough`` holds; ``None`` with a note when it could not be
    run.
    Its gradient is the one the mode search compiled (:meth:`ModelDensity.log_density_and_grad`): compiling the
    NUMBA one for it costs more set-up than its faster calls save on some models
    (``benchmarks/results/bench_posterior_pilot.md``).
    """
    from pmcbandit.arms.evidence.ais import PilotTimeout
    from pmcbandit.arms.evidence.posterior_pilot import posterior_pilot

    deadline = None if budget_seconds is None else time.perf_counter() + POSTERIOR_PILOT_MAX_SHARE * budget_seconds
    try:
        pilot = posterior_pilot(density, mode.location, mode.precision, deadline=deadline, enough=enough,
                                **(start or {}))
    except PilotTimeout as err:
        notes.append(f"pilot-t arms left out: {err} ({POSTERIOR_PILOT_MAX_SHARE:g} of the {budget_seconds:g} s the "
                     "pulls had left)")
        return None
    except Exception as err:  # noqa: BLE001 (a gradient that cannot be compiled or evaluated at the mode)
        notes.append(f"pilot-t arms left out: the posterior pilot could not be run ({type(err).__name__}: {err})")
        return None
    cut = (f", the draws cut short by its limit of {POSTERIOR_PILOT_MAX_SHARE:g} of the time left"
           if pilot.timed_out else "")
    where = ("the Laplace arms' mode" if start is None else
             f"{len(start['starts'])} of the trace's draws, its first mass their variances")
    notes.append(f"pilot-t arms' moments from {pilot.n_draws} draws of HMC at the posterior started at {where} "
                 f"({pilot.seconds:.3g} s of set-up{cut}; step size {pilot.step_size:.3g}, acceptance "
                 f"{pilot.accept:.2f}), not from an annealing pilot: the pool has no HMC AIS arm")
    return pilot
