"""The default pool of evidence arms for a PyMC model, built within a time budget.

:func:`evidence_arms` builds it (Neufeld et al. 2014, Sec. 6.3 and App. G: AIS arms of 400 / 2000 / 8000
annealing steps, Laplace-centred Student-t importance sampling and prior importance sampling; and a nested-sampling
arm, :mod:`~pmcbandit.evidence.nested_pool`); the door
:func:`pmcbandit.evidence.estimate_evidence` builds it with the set-up counted in its budget: the Laplace arms' mode
search, the HMC pilot and the other arms' set-up first, the AIS arms last, sized for what is left
(:func:`seconds_after_setup`). What the pool leaves out or shrinks, and why, goes into the run's notes.

May import: the arms, the runtime's guards, the statistics layer, the exception types and the logging helpers;
never a door.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from pmcbandit.arms.base import Arm
from pmcbandit.arms.evidence._cache import density_for, modes_for, trace_digest, trace_fit_for
from pmcbandit.evidence.importance import (DEFAULT_LAPLACE_PROPOSALS, check_proposals, laplace_arms, pilot_arms,
                                           scale_ladder_arms, scale_mix_arms, setup_check_passes)
from pmcbandit.evidence.nested_pool import laplace_information, nested_arm
from pmcbandit.evidence.pilots import (PILOT_MIN_RUN_SECONDS, POSTERIOR_PILOT_MIN_RUN_SECONDS, annealing_pilot,
                                       covariance_draws, pilot_t_at_mode, trace_start)
from pmcbandit.exceptions import NoGuaranteeWarning, PmcBanditWarning, WarningText, log_notes
from pmcbandit.runtime.guards import CHECK_PULLS, CROSS_CHECK_SHARE, MAX_CHECK_SHARE, MAX_DECISION_SHARE

__all__ = ["evidence_arms", "resolve_model", "seconds_after_setup", "DEFAULT_AIS_STEPS", "DEFAULT_LAPLACE_PROPOSALS",
           "MIN_AIS_STEPS", "MIN_RUN_SHARE"]

DEFAULT_AIS_STEPS = (400, 2000, 8000)
#: Least time left to the pulls (after the set-up so far) for the default pool to add its HMC AIS arm (whose pilot
#: also serves the pilot-t arms).
HMC_MIN_RUN_SECONDS = 30.0
#: Share of the time left to the pulls (after the density's compilation) the Laplace arms' mode search may take before
#: it starts no further search (:func:`~pmcbandit.arms.evidence.modes.find_modes`' ``max_seconds``), when timed.
MODE_SEARCH_SHARE = 0.1
#: Least share of a wall-time budget left to the pulls when building the default pool took longer.
MIN_RUN_SHARE = 0.1
#: Fewest annealing steps an AIS arm is shrunk to by ``budget_seconds``; below, the arm is left out.
MIN_AIS_STEPS = 20
#: Share of the cross-check share's seconds the check arm's pulls are sized to fill (the rest is the
#: margin between the wall budget and the costs the run records).
CHECK_FILL = 0.6
#: Leapfrog steps per move of the HMC AIS arm sized for the independent check (``evidence_arms``' ``hmc_arm``).
CHECK_LEAPFROG = 2


def evidence_arms(
    model=None,
    *,
    ais_steps: Sequence[int] = DEFAULT_AIS_STEPS,
    n_chains: int = 1,
    transition: str = "slice",
    laplace: bool = True,
    laplace_proposals: Sequence[tuple[float, ...]] = DEFAULT_LAPLACE_PROPOSALS,
    prior: bool = True,
    smc: bool = False,
    nested: bool = True,
    batch_size: int = 1000,
    cost: str = "cpu_seconds",
    budget_seconds: float | None = None,
    non_centre: bool = True,
    hmc_arm: bool | None = None,
    pilot_is: bool | None = None,
    refine: bool = True,
    idata=None,
) -> list[Arm]:
    """The default pool of evidence arms for ``model``.

    The pool lists the importance samplers first (Laplace or trace arms, pilot-t and scale-mix arms, prior
    importance sampling), then the AIS arms, then SMC and nested sampling: about cheapest pull first, the order
    in which a run whose budget has no time horizon tries its arms (:mod:`pmcbandit.runtime.guards`, rule 3).

    Parameters
    ----------
    model : pymc.Model, optional
        Continuous free variables with a forward-sampleable prior; ``None`` takes it from the
        ``with pm.Model():`` context, as PyMC does.
    ais_steps : sequence of int
        One AIS arm per number of annealing steps (the paper's 400 / 2000 / 8000).
    n_chains : int
        Independent AIS chains (estimates) per pull, evaluated together by one kernel call.
        The default 1 keeps the bandit's unit of decision small: with the paired reward a
        decision is two pulls, and every chain of a long AIS arm multiplies its duration.
    transition : {"slice", "imh", "hmc"}
        AIS transition (slice sampling as the paper, independence Metropolis from the
        Laplace Student-t, for near-Gaussian posteriors, or HMC with a step size and mass matrix
        per temperature from a pilot run, :class:`~pmcbandit.arms.evidence.AISArm`).
    laplace, prior, smc, nested : bool
        Include Laplace-t importance sampling, prior importance sampling, PyMC's SMC
        (one ``pm.sample_smc`` run per pull; biased-consistent, see
        :class:`~pmcbandit.arms.evidence.SMCArm`; two runs at construction, the second timed
        for its ``expected_seconds``), and nested sampling (one run per pull, an estimator family of
        its own that does not temper, :class:`~pmcbandit.arms.evidence.NestedArm`; last in the pool, sized
        for the budget and left out above 30 dimensions, :func:`~pmcbandit.evidence.nested_pool.nested_arm`).
    laplace_proposals : sequence of (df, inflation) or (df, inflation, defensive)
        One Laplace-centred Student-t mixture arm per tuple (see
        :class:`~pmcbandit.arms.evidence.LaplaceISArm`; ``defensive`` is the share of its draws
        from the prior, 0.1 when not given), named ``"laplace-t"`` for df = 5 and
        ``"laplace-t{df}"`` otherwise. The default pairs a heavy-tailed proposal (ν = 5,
        covariance × 1.2, 10 % defensive: safe when the posterior is skewed or heavier-tailed
        than a Gaussian) with a light-tailed one (ν = 20, × 1.1, 2 % defensive: a lower variance
        per draw on near-Gaussian posteriors, ``benchmarks/results/bench_laplace_smc.md``);
        which one is better depends on the model, so the bandit decides. Both share one
        multi-start mode search. When the search finds no interior mode (e.g. the density grows
        without bound towards a boundary, as in a centred hierarchical model's funnel), the
        Laplace arms are left out and a note says why (logged at INFO on the ``pmcbandit`` logger).
    batch_size : int
        Draws per pull of the importance-sampling arms.
    cost : {"cpu_seconds", "logp_evals"}
        Cost of an AIS/prior-IS pull: CPU seconds (default) or log-density evaluations.
    budget_seconds : float, optional
        Size the AIS arms for a run of this many seconds (:func:`estimate_evidence` passes its
        time budget). AIS pull durations are predicted from a timed short run on the model
        (:attr:`~pmcbandit.arms.evidence.AISArm.step_seconds`), one per transition, which also predicts
        the pulls of the arms it sized (their ``step_seconds``); every AIS arm gets
        at most the steps of a pull predicted to take 0.8 x ``MAX_DECISION_SHARE / 2`` of the budget
        (a paired decision is two pulls, :mod:`pmcbandit.runtime.guards` rule 1), and the arm with the
        fewest steps at most those of a pull of which :data:`~pmcbandit.runtime.guards.CHECK_PULLS`
        (the 30 pulls the consistency test needs) fit in :data:`CHECK_FILL` x the ``CROSS_CHECK_SHARE`` of
        the budget, so the cross-check family reaches the observations the consistency test needs
        (the *independent check*, :mod:`pmcbandit.runtime.guards` rule 4); the fewest steps asked for stay beside
        that arm as one more, under the first cap only, when the check arm was shrunk below them (fewer runs of less
        variance, for a check the guards' widened share can bring to its resolution). Shrunk arms keep at least
        :data:`MIN_AIS_STEPS` steps (an arm that cannot get that many is left out, and of two counts
        less than 1.5x apart the smaller is kept); a note, logged at INFO on the ``pmcbandit``
        logger, reports the new counts. When even :data:`MIN_AIS_STEPS` steps are too many for the
        check, a :class:`~pmcbandit.exceptions.NoGuaranteeWarning` says so with the budget that would
        let it run. The Laplace arms' mode search starts no further Newton search after
        :data:`MODE_SEARCH_SHARE` of the time left (:func:`~pmcbandit.arms.evidence.modes.find_modes`'
        ``max_seconds``; a note says how many ran).
    non_centre : bool
        Estimate the evidence on the model non-centred
        (:func:`~pmcbandit.arms.evidence.reparam.non_centred`): every free ``Normal``/``LogNormal``
        variable whose parameters depend on other free variables is drawn as ``mu + sigma * z``
        with ``z ~ Normal(0, 1)``. It is the same model (the same prior of every variable, so the
        same evidence, exactly) without the funnel of a centred hierarchy, so the Laplace arms find
        a mode and the annealing mixes; a note names the variables, and the posterior draws hold
        each ``z`` (named ``<name>_z``) and the original variable as a deterministic. ``False``
        keeps the model as written.
    hmc_arm : bool, optional
        Add one AIS arm with HMC transitions (5 leapfrog steps per temperature; the middle count of
        ``ais_steps``, capped by the HMC step's own predicted duration so a pull is predicted to take
        at most 0.8 x ``MAX_DECISION_SHARE / 2`` of ``budget_seconds``) beside the ``transition`` arms.
        Under a time budget, when an HMC arm sized for the independent check (see ``budget_seconds``)
        gets more annealing steps than the ``transition`` arm sized for it, and at least
        :data:`MIN_AIS_STEPS`, one more HMC arm is sized for the check the same way, named
        ``"ais-hmc2-<n>"``: :data:`CHECK_LEAPFROG` leapfrog steps per move along the HMC pilot's
        adaptive temperatures (:func:`~pmcbandit.arms.evidence.ais.pilot_schedule`), so the check's share
        holds more temperatures, where the model needs them; the longer HMC arm is then left out unless
        its pulls take at least 1.5x the check arm's. A note says so, and no warning that the check cannot
        run is issued. At equal evaluations, shorter moves over the pilot's temperatures gave log weights of
        a lower variance per second than 5-leapfrog moves on the power-4 schedule on the suite's two
        logistic models and its 100-group hierarchy, and about the same on a Gamma-Poisson hierarchy
        (``benchmarks/results/bench_check_arm.md``); the longer arm keeps 5-leapfrog moves.
        ``None`` (default): added when the model has at least 20 unconstrained dimensions,
        ``transition`` is not ``"hmc"``, and the run is not timed or has at least
        :data:`HMC_MIN_RUN_SECONDS` (what the budget leaves after the set-up so far): its gradient
        compilation and pilot are set-up a short run cannot pay back. The rule comes from
        ``benchmarks/results/bench_ais_hmc.md``:
        a slice sweep costs several evaluations per coordinate, an HMC move a few gradient
        evaluations whatever the dimension, and on a 22-dimensional Gamma-Poisson hierarchy the HMC
        arm's variance x cost was several times the slice arms' smaller. The HMC arm compiles the
        model's gradient and runs a pilot (:func:`~pmcbandit.arms.evidence.ais.tune_hmc`), both part
        of the set-up; a model whose gradient cannot be compiled gets no HMC arm, and a note says why.
    pilot_is : bool, optional
        Add one importance-sampling arm per ``laplace_proposals`` tuple whose t is centred at the
        posterior mean and scaled by the posterior covariance of the HMC pilot's draws
        (:func:`~pmcbandit.arms.evidence.laplace_is.moment_fit`: moment-matched importance
        sampling), named ``"pilot-t"`` for df = 5 and ``"pilot-t{df}"`` otherwise (none when
        ``laplace=False``: the proposals are the Laplace arms'). Where the
        posterior is skewed or its mode sits away from its mass (a hierarchy's group scale, a
        probability near 0 or 1), the moments describe the spread that the curvature at the mode
        misses, and the arm can pass the Pareto k-hat check where the Laplace arms fail; the
        proposal is fixed by the pilot before any pull, so the weights stay unbiased. ``None``
        (default): added with the Laplace arms (``laplace=True``) when the run is timed and has at
        least :data:`~pmcbandit.evidence.pilots.PILOT_MIN_RUN_SECONDS` left after the set-up so far, or is not
        timed and the model has at least 20 dimensions; where the pilot would run for them alone (no HMC arm),
        only when no Laplace arm passes the Pareto k-hat check on one batch of draws at set-up
        (seed :data:`~pmcbandit.evidence.importance.SETUP_CHECK_SEED`; or none was built), as the pilot's
        gradient compilation is set-up that pays only then. The pilot then runs on the model whatever its
        dimension, given at most :data:`~pmcbandit.evidence.pilots.PILOT_MAX_SHARE` of the time left (after
        compiling the gradient) when timed; a pilot that runs past it, or cannot be run, leaves out the HMC and
        pilot-t arms, and a note says why. With the pilot-t arms comes a ``"scale-mix"`` arm where the Laplace fit
        and the pilot's moments differ in scale (:func:`~pmcbandit.evidence.importance.scale_mix_arms`). Where the
        pilot-t arms come without an HMC arm and the mode search
        found an interior mode, their moments come instead from HMC at the posterior started around that mode
        (:func:`~pmcbandit.arms.evidence.posterior_pilot.posterior_pilot`: no annealing and no compiled move
        kernel, so a timed run needs only :data:`~pmcbandit.evidence.pilots.POSTERIOR_PILOT_MIN_RUN_SECONDS` left
        for it, and gives it at most :data:`~pmcbandit.evidence.pilots.POSTERIOR_PILOT_MAX_SHARE` of them; its
        draws grow with the dimension and stop as soon as a pilot-t arm on their moments passes the Pareto k-hat
        check on one batch of set-up draws, and its limit may cut them short once the fewest are made). In
        non-centred coordinates a hierarchy's mode sits at a larger group scale than the posterior's mass, and
        the Laplace proposal misses it; the chains move to the mass during their warm-up. Where none of its
        pilot-t arms passes the Pareto k-hat check on one batch of set-up draws (too few draws to describe the
        covariance, or a posterior the moments describe poorly) and
        :data:`~pmcbandit.evidence.pilots.PILOT_MIN_RUN_SECONDS` are still left (or the run is not timed), the
        annealing pilot runs for them, and its moments replace the posterior pilot's
        (:func:`~pmcbandit.evidence.pilots.pilot_t_at_mode`).
    refine : bool
        Move the Laplace arms' t, when the search found one mode, to the importance-weighted posterior mean
        and covariance of draws from it, for up to two rounds, each kept only where it raises the draws'
        effective-sample fraction (:func:`~pmcbandit.arms.evidence.refine.refine_proposal`, seed
        :data:`~pmcbandit.evidence.importance.REFINE_SEED`: a fixed function of the model). Where the posterior
        is skewed the curvature at the mode misses its spread and the Laplace weights are heavy-tailed; the
        refined proposal is fixed at set-up, so the weights stay unbiased. The arms keep their names and a note
        reports the refinement. ``False`` keeps the Laplace fit.
    idata : InferenceData, DataTree or mapping, optional
        Posterior draws of ``model`` the user already has: what ``pm.sample`` returns, or a mapping
        ``{variable: array (chain, draw, *shape)}`` (:func:`~pmcbandit.evidence.trace.read_trace`). With it, importance
        arms fitted to the draws (``"trace-t"``, ``"trace-t20"`` and, for a multimodal or multi-scale posterior,
        ``"trace-mix"``: :mod:`~pmcbandit.evidence.trace_arms`) replace the Laplace arms and the pilot-t
        arms' pilots (unless ``pilot_is=True``; where no trace or local-t arm passes the Pareto k-hat check on one
        batch of set-up draws, or the trace holds fewer draws than a covariance in its dimension needs
        (:func:`~pmcbandit.evidence.pilots.covariance_draws`), the posterior pilot runs for the pilot-t arms, its
        chains started at trace draws with their variances as the first mass:
        :func:`~pmcbandit.evidence.pilots.trace_start`); beside them come
        ``"local-t"`` and ``"local-t20"``, Laplace-t arms at the mode one Newton search from the draws' mean reaches
        (at most :data:`~pmcbandit.evidence.trace_local.LOCAL_MAX_ITER` iterations, below
        :data:`~pmcbandit.evidence.trace_local.LOCAL_DIM_LIMIT` dimensions; refined as the Laplace arms where
        ``refine``), kept where they pass that check (:mod:`~pmcbandit.evidence.trace_local`), and, below those
        dimensions too, the Laplace arms over every mode the pool's mode search finds where it finds more than one
        (a warning says so where some lie outside the region the draws fill); the AIS
        arms stay as the second family, and the HMC AIS arm's mass matrices, step sizes and temperatures are fitted
        to the draws and the prior (:func:`~pmcbandit.evidence.trace_pilot.trace_pilot`) in place of its annealing
        pilot (so are all AIS arms' with ``transition="hmc"``). The draws only fit the proposals and settings: every
        pull draws fresh points, so the weights stay unbiased. What the set-up fits to a trace (the trace arms' fits,
        the local search and its refinement, the set-up checks, the pilots, the AIS probes' timings) is kept for later
        runs on the same density and trace in the process (:func:`~pmcbandit.arms.evidence._cache.trace_fit_for`,
        keyed by a digest of the draws; a pilot cut short by the time left is not kept), so they skip that set-up and
        get the same proposals; the AIS slice probe's timing serves any trace of the model. A trace of another
        model raises ``ValueError``; a doubtful one (non-finite draws, fewer than 100 draws, R-hat above 1.01,
        divergences, modes the draws do not visit) warns (:class:`~pmcbandit.exceptions.PmcBanditWarning`,
        ``docs/guide/evidence_from_fits.md``).
    """
    from pmcbandit.arms.evidence import check_model
    from pmcbandit.evidence.trace import read_trace

    model = resolve_model(model, "evidence_arms")
    if hmc_arm is not None and not isinstance(hmc_arm, bool):
        raise TypeError(f"The 'hmc_arm' parameter of evidence_arms must be None or a bool. Got {hmc_arm!r} instead.")
    if pilot_is is not None and not isinstance(pilot_is, bool):
        raise TypeError(f"The 'pilot_is' parameter of evidence_arms must be None or a bool. Got {pilot_is!r} instead.")
    if not isinstance(refine, bool):
        raise TypeError(f"The 'refine' parameter of evidence_arms must be a bool. Got {refine!r} instead.")
    if not isinstance(nested, bool):
        raise TypeError(f"The 'nested' parameter of evidence_arms must be a bool. Got {nested!r} instead.")
    if not isinstance(non_centre, bool):
        raise TypeError(f"The 'non_centre' parameter of evidence_arms must be a bool. Got {non_centre!r} instead.")
    trace = None if idata is None else read_trace(idata, check_model(model, "evidence_arms"), "evidence_arms")
    arms, notes, alerts = build_pool(model, ais_steps=ais_steps, n_chains=n_chains, transition=transition,
                                laplace=laplace, laplace_proposals=laplace_proposals, prior=prior, smc=smc,
                                batch_size=batch_size, cost=cost, budget_seconds=budget_seconds, non_centre=non_centre,
                                hmc_arm=hmc_arm, pilot_is=pilot_is, refine=refine, trace=trace, nested=nested)
    for alert in alerts:
        warnings.warn(str(alert), alert.category, stacklevel=2)
    log_notes(notes)
    return arms


def build_pool(model, *, ais_steps, n_chains, transition, laplace, laplace_proposals, prior, smc, batch_size, cost,
          budget_seconds, decision_share=MAX_DECISION_SHARE, check_share=CROSS_CHECK_SHARE, started=None,
          non_centre=True, hmc_arm=None, pilot_is=None, refine=True, trace=None, nested=True, pieces=1
          ) -> tuple[list[Arm], list[str], list[WarningText]]:
    """:func:`evidence_arms`'s pool, the notes on what it left out or shrank and why (adapted
    settings, ``docs/guide/warnings.md``), and the warning, when the budget is too short for the
    independent check, with the budget that would do.

    ``trace`` (a :class:`~pmcbandit.evidence.trace.TraceDraws` of the model) puts the trace arms
    (:func:`~pmcbandit.evidence.trace_arms.trace_arms`) in place of the Laplace arms' mode search and of the pilot-t
    arms' pilots, and the HMC AIS arm's settings fitted to its draws
    (:func:`~pmcbandit.evidence.trace_pilot.trace_pilot`) in place of the annealing pilot, and the ``local-t``
    arms of one local search from the draws' mean (:mod:`~pmcbandit.evidence.trace_local`); the Laplace arms come
    back where no trace arm could be fitted (a note says why), and beside them where the mode search finds more than
    one mode (:func:`_search_laplace`). Its warning texts lead the returned ones.

    ``started`` (a :func:`time.perf_counter` reading) is when the door was called, for a budget that
    counts the set-up (:func:`estimate_evidence`): the Laplace arms' mode search, the HMC pilot and the
    other arms' set-up run first, and the AIS arms are sized last, for what is left of ``budget_seconds``
    after the set-up so far (at least :data:`MIN_RUN_SHARE` of it); the budget the warning names then
    includes that set-up.

    ``pieces`` is the number of runs of ``budget_seconds`` each whose pulls of the check arm add up (the slices
    of :func:`pmcbandit.compare_models` a model can expect, whose guards carry the check across them,
    :class:`~pmcbandit.runtime.guards.CheckCarry`): the check arm's pulls are sized to fit in the cross-check share
    of all of them, each pull still under the decision cap of one.
    """
    from pmcbandit.arms.evidence import AISArm, PriorISArm

    proposals = check_proposals(laplace_proposals) if laplace else []
    if budget_seconds is not None and not (budget_seconds > 0):
        raise ValueError(
            f"The 'budget_seconds' parameter of evidence_arms must be None or > 0. Got {budget_seconds!r} instead."
        )
    notes: list[str] = []
    # compiled once, shared by every AIS, Laplace-t and prior-IS arm (and by later calls on the same model)
    density = density_for(model, non_centre, notes)
    total = budget_seconds

    def time_left():
        """The seconds the budget leaves to the pulls after the set-up so far (``None``: untimed)."""
        return total if total is None or started is None else seconds_after_setup(total, time.perf_counter() - started)

    # Where HMC transitions will run (the hmc_arm rule, on the time left so far), their NUMBA gradient is compiled
    # first, so the mode search's Hessians use it too (ModelDensity._laplace_functions).
    if laplace and (transition == "hmc" or _wants_hmc(density, hmc_arm, transition, ais_steps, time_left())):
        try:
            density.grad_jit_fn
        except Exception:  # noqa: BLE001 (no NUMBA gradient: the pilot says why, the search uses PyTensor's)
            pass
    # The Laplace arms (mode search) first, so the AIS arms can be sized for the time the set-up leaves; with a trace,
    # the arms fitted to its draws instead.
    trace_alerts: list[WarningText] = []
    laplace_set, trace_x, digest, trace_passed = (_trace_set(model, density, trace, proposals, batch_size, cost, notes,
                                                             refine, time_left(), trace_alerts)
                                                  if trace is not None and laplace else ([], None, None, None))
    # The trace arms' fits, set-up check, pilots and AIS probes are kept for later runs given the same trace
    # (_cache.trace_fit_for); the Laplace arms' set-up is the no-trace pool's.
    reuse = digest if laplace_set else None
    checked_set: dict = {} if trace_passed is None else {"passed": trace_passed}

    def check_passes() -> bool:
        """The set-up k-hat check of the Laplace arms, made once (the trace arms' was made with them)."""
        if "passed" not in checked_set:
            checked_set["passed"] = setup_check_passes(laplace_set)
        return checked_set["passed"]

    if laplace and not laplace_set:
        laplace_set = _laplace_arms(density, proposals, batch_size, cost, notes, refine, time_left())
    # Where the Laplace arms' draws miss a wider part of the posterior around their modes (a slab about a spike).
    ladder_set = [] if trace is not None else scale_ladder_arms(density, laplace_set, proposals, batch_size, cost,
                                                                notes)
    spent = 0.0 if started is None else time.perf_counter() - started
    if budget_seconds is not None and started is not None:
        budget_seconds = seconds_after_setup(total, spent)
    # The HMC pilot serves the HMC AIS arm and the pilot-t arms (the rules of evidence_arms' hmc_arm and pilot_is);
    # it runs before the AIS arms are sized, so they are sized for the time it leaves.
    timed = budget_seconds is not None
    want_hmc = _wants_hmc(density, hmc_arm, transition, ais_steps, budget_seconds)
    # Pilot-t arms alone over an interior mode: their moments from the posterior pilot (no annealing).
    at_mode = not want_hmc and bool(laplace_set)
    least = POSTERIOR_PILOT_MIN_RUN_SECONDS if at_mode else PILOT_MIN_RUN_SECONDS
    auto_pilot = laplace and (budget_seconds >= least if timed else density.dim >= 20)
    want_pilot_arms = bool(proposals) and (auto_pilot if pilot_is is None else pilot_is)
    if want_pilot_arms and pilot_is is None and trace is not None:
        # The trace's draws describe the posterior the pilots would; the posterior pilot runs, its chains started at
        # trace draws, only where no trace arm passes the set-up k-hat check (a trace that missed part of the
        # posterior) or the trace has too few draws for a covariance in its dimension (covariance_draws: its arms
        # may pass that check and fail the run's).
        needed = covariance_draws(density.dim)
        few = trace_x is not None and trace_x.shape[0] < needed
        want_pilot_arms = not want_hmc and bool(laplace_set) and (few or not check_passes())
        if want_pilot_arms:
            why = (f"the trace's {trace_x.shape[0]} draws are fewer than the {needed} a covariance in {density.dim} "
                   "dimensions needs" if few else
                   "no trace arm passed the Pareto k-hat check on one batch of set-up draws")
            notes.append(f"{why}, so the posterior pilot ran from the trace's draws for the pilot-t arms")
    elif want_pilot_arms and pilot_is is None and not want_hmc and check_passes():
        # A pilot run for the pilot-t arms alone (its gradient compiled) is set-up that pays only where the
        # Laplace proposals fail.
        want_pilot_arms = False
        notes.append("pilot-t arms left out: a Laplace arm's set-up draws passed the Pareto k-hat check, so no HMC "
                     "pilot was run for them (evidence_arms(model, pilot_is=True) runs it)")
    served = " and ".join(w for w, on in (("HMC AIS arm", want_hmc), ("pilot-t arms", want_pilot_arms)) if on)
    pilot_set: list[Arm] | None = None  # the pilot-t arms, when built before the AIS arms' sizing
    trace_moves = None  # the HMC settings fitted to the trace, when the HMC AIS arm moves by them
    if want_pilot_arms and at_mode and reuse is not None:
        pilot, pilot_set = _trace_pilot_t(density, laplace_set[0].modes.modes[0], proposals, batch_size, cost, notes,
                                          budget_seconds, time_left, reuse, trace_x)
    elif want_pilot_arms and at_mode:
        pilot, pilot_set = pilot_t_at_mode(density, laplace_set[0].modes.modes[0], proposals, batch_size, cost,
                                           notes, budget_seconds, time_left)
    elif want_hmc and not want_pilot_arms and trace_x is not None:
        pilot = trace_moves = _trace_hmc_pilot(density, trace_x, digest, notes)
    else:
        pilot = annealing_pilot(density, budget_seconds, notes, served) if served else None
    hmc_probe = None
    if want_hmc and pilot is not None:
        hmc_probe = _probe(density, digest if pilot is trace_moves else None, reuse, n_chains=n_chains,
                           transition="hmc", cost=cost, hmc_pilot=pilot)
    # The other arms' set-up (the prior sampler's compilation, a timed SMC run) before the AIS arms are sized, so
    # that they are sized for the time the whole set-up leaves: an arm sized for more is over the run's decision cap.
    prior_set = [PriorISArm(density, batch_size=batch_size, cost=cost)] if prior else []
    smc_set = [_timed_smc_arm(model)] if smc else []
    # The nested-sampling arm is built with the other arms' set-up but goes last in the pool (the others' streams).
    room = check_share * pieces  # the check's share, in units of one run's budget
    information = (laplace_information(density, laplace_set[0].modes.modes[0])
                   if nested and laplace_set and laplace_set[0].modes is not None else math.nan)
    nested_set = [] if not nested else [a for a in [nested_arm(density, cost, budget_seconds, decision_share,
                                                                room, CHECK_PULLS, CHECK_FILL, notes, information,
                                                                MAX_CHECK_SHARE * pieces)] if a]
    if (served or prior_set or smc_set or nested_set) and budget_seconds is not None and started is not None:
        spent = time.perf_counter() - started
        budget_seconds = seconds_after_setup(total, spent)
    steps = sorted(int(n) for n in ais_steps)
    asked = steps
    # With a trace, AIS arms that move by HMC (transition="hmc") take their settings from it, not an annealing pilot.
    moves_pilot = (_trace_hmc_pilot(density, trace_x, digest, notes)
                   if transition == "hmc" and trace_x is not None and steps else None)
    # The check arm (fewest steps) must reach the pulls the consistency test needs within its share.
    need = CHECK_PULLS
    check_budget = None
    check_cap = None
    probe = None
    if budget_seconds is not None and steps:
        probe = _probe(density, digest if moves_pilot is not None else None, reuse, n_chains=n_chains,
                       transition=transition, cost=cost, hmc_pilot=moves_pilot)
        if started is not None:
            # The probe compiled the annealing kernel for this model: set-up the pulls will not have.
            spent = time.perf_counter() - started
            budget_seconds = seconds_after_setup(total, spent)
        decision_cap = decision_share * budget_seconds / 2  # a paired decision is two pulls (rule 1)
        caps = [decision_cap] * len(steps)
        if check_share > 0:
            caps[0] = check_cap = min(caps[0], room * budget_seconds / need)
        # 0.8: a predicted duration right at the cap would be over it half of the time (rule 1); the
        # check arm's CHECK_FILL: the costs a run records add up to less than its wall budget (the
        # loop's own work, a busy machine), and its share is of those costs.
        fill = [0.8] * len(steps)
        if check_share > 0:
            fill[0] = CHECK_FILL
        sized = [min(n, int(f * cap / probe.step_seconds)) for n, f, cap in zip(steps, fill, caps)]
        if check_share > 0:
            # The smallest count asked for stays beside a check rung shrunk below it: its runs are fewer but of
            # less variance, and a check the shrunk rung cannot bring to a check's resolution in the share, this
            # one may bring in a widened share (pmcbandit.runtime.guards, rule 4).
            sized.append(min(steps[0], int(0.8 * decision_cap / probe.step_seconds)))
        capped = _distinct_steps(sized)
        if check_share > 0 and int(CHECK_FILL * caps[0] / probe.step_seconds) < MIN_AIS_STEPS:
            check_budget = need * MIN_AIS_STEPS * probe.step_seconds / (CHECK_FILL * room)
        if capped != steps:
            notes.append(
                f"AIS step counts {steps} sized for a {budget_seconds:g} s budget (one annealing step takes "
                f"{probe.step_seconds:.3g} s on this model; the fewest steps so {need} pulls fit in the cross-check "
                f"share {check_share:g}{_pieces_words(pieces)}, each arm's pull at most {decision_share / 2:g} of the "
                f"budget): "
                f"{capped or 'no AIS arm left'}"
            )
        steps = capped
    # Each arm is predicted by the probe it was sized by (AISArm's step_seconds), not by a reading of its own.
    sized_step = probe.step_seconds if probe is not None else None
    arms: list[Arm] = [
        AISArm(density, n_steps=n, n_chains=n_chains, transition=transition, cost=cost, step_seconds=sized_step,
               hmc_pilot=moves_pilot)
        for n in steps
    ]
    check_step = probe.step_seconds if check_budget is not None else math.nan
    if hmc_probe is not None:
        # The middle count asked for, capped by the HMC step's own cost (not by the other arms' caps).
        n_hmc = asked[len(asked) // 2] if asked else 0
        if budget_seconds is not None:
            n_hmc = min(n_hmc, int(0.8 * decision_share * budget_seconds / 2 / hmc_probe.step_seconds))
        hmc_steps = _distinct_steps([n_hmc])
        check_arm = None
        if check_cap is not None:
            # An HMC arm sized for the check, where it gets more steps in the check's share than the slice check
            # arm: fewer steps make an arm whose estimates are more skewed, which the consistency test, comparing
            # it before it has the weights of a k-hat, would read as a disagreement. Its moves are shorter
            # (CHECK_LEAPFROG) along the pilot's temperatures, so the share holds more, better-placed temperatures.
            check_probe = _probe(density, digest if pilot is trace_moves else None, reuse, n_chains=n_chains,
                                 transition="hmc", cost=cost, hmc_pilot=pilot, hmc_leapfrog=CHECK_LEAPFROG,
                                 schedule="pilot")
            n_check = min(int(CHECK_FILL * check_cap / check_probe.step_seconds), max(asked))
            slice_check = int(CHECK_FILL * check_cap / probe.step_seconds)
            if n_check >= MIN_AIS_STEPS and n_check > slice_check:
                check_arm = AISArm(density, n_steps=n_check, n_chains=n_chains, transition="hmc", cost=cost,
                                   hmc_pilot=pilot, hmc_leapfrog=CHECK_LEAPFROG, schedule="pilot",
                                   name=f"ais-hmc{CHECK_LEAPFROG}-{n_check}", step_seconds=check_probe.step_seconds)
                # The longer HMC arm stays where its pulls take at least 1.5x the check arm's (as _distinct_steps).
                short = hmc_steps and hmc_steps[0] * hmc_probe.step_seconds < 1.5 * check_arm.expected_seconds
                dropped = hmc_steps.pop() if short else None
                check_budget = None
                notes.append(
                    f"AIS arm with HMC transitions ({CHECK_LEAPFROG} leapfrog steps per move, along the HMC pilot's "
                    f"temperatures) of {n_check} steps sized for the independent check (one annealing step takes "
                    f"{check_probe.step_seconds:.3g} s with these moves on this model, {probe.step_seconds:.3g} s "
                    f"with {transition} moves): {need} pulls fit in the cross-check share {check_share:g}"
                    + (f"; the HMC arm of {dropped} steps left out, its pulls predicted to take less than 1.5x the "
                       "check arm's" if short else "")
                )
            elif check_budget is not None and check_probe.step_seconds < check_step:
                check_step = check_probe.step_seconds
                check_budget = need * MIN_AIS_STEPS * check_step / (CHECK_FILL * room)
        if check_arm is not None:
            arms.append(check_arm)
        hmc_step = hmc_probe.step_seconds if timed else None
        arms += [AISArm(density, n_steps=n, n_chains=n_chains, transition="hmc", cost=cost, hmc_pilot=pilot,
                        step_seconds=hmc_step) for n in hmc_steps]
    annealing = arms
    # The pool's order (evidence_arms' docstring): importance samplers, then the AIS arms, then SMC and nested sampling.
    arms = list(laplace_set) + ladder_set
    if pilot_set is None and want_pilot_arms and pilot is not None:
        pilot_set = pilot_arms(density, pilot, proposals, batch_size, cost, notes)
    if pilot_set is not None:
        arms += pilot_set
        arms += scale_mix_arms(density, laplace_set, pilot_set, proposals, batch_size, cost, notes)
    arms += prior_set + annealing + smc_set + nested_set
    if not arms:
        raise ValueError("evidence_arms: the pool is empty (every arm family was switched off or left out)")
    alerts: list[WarningText] = (list(trace.alerts) if trace is not None else []) + trace_alerts
    families = {a.family for a in arms} - {None}
    # check_budget is set only when AIS arms were asked for: with them the pool spans two families,
    # even when the budget left none of them in it.
    if check_budget is not None and len(families | {"annealing"}) >= 2:
        if pieces > 1:
            advice = (f"only in slices of at least {math.ceil(check_budget):d} s: give each model at least "
                      f"{math.ceil(check_budget * pieces):d} s of the comparison's budget (estimated from a timed AIS "
                      f"probe on this model)")
        else:
            advice = (f"only in a budget of at least {math.ceil(check_budget):d} s: run with budget >= "
                      f"{math.ceil(check_budget + spent):d} s (estimated from a timed AIS probe on this model"
                      f"{_setup_words(spent)})")
        alerts.append(WarningText(
            f"no independent check within {_budget_words(budget_seconds, pieces)}: an AIS arm of {MIN_AIS_STEPS} "
            f"annealing steps ({check_step:.3g} s each on this model) reaches the {need} pulls the consistency test "
            f"needs within the cross-check share {check_share:g}{_pieces_words(pieces)} {advice} for an answer a "
            "second estimator family checks",
            NoGuaranteeWarning, "independent_check"))
    return arms, notes, alerts


def _wants_hmc(density, hmc_arm, transition, ais_steps, seconds_left) -> bool:
    """The ``hmc_arm`` rule of :func:`evidence_arms` on ``seconds_left`` to the pulls after the set-up so far (``None``:
    an untimed run).
    """
    auto = density.dim >= 20 and (seconds_left is None or seconds_left >= HMC_MIN_RUN_SECONDS)
    return bool((auto if hmc_arm is None else hmc_arm) and transition != "hmc" and len(ais_steps))


def _pieces_words(pieces: int) -> str:
    return f" of {pieces} slices" if pieces > 1 else ""


def _budget_words(budget_seconds: float, pieces: int) -> str:
    return f"{pieces} slices of {budget_seconds:g} s" if pieces > 1 else f"a {budget_seconds:g} s budget"


def _setup_words(spent: float) -> str:
    return f", with the {spent:.3g} s of set-up the budget counts" if spent else ""


def _laplace_arms(density, proposals, batch_size, cost, notes: list[str], refine: bool, left) -> list[Arm]:
    """The Laplace-t arms (:func:`~pmcbandit.evidence.importance.laplace_arms`) over one shared mode search, given
    :data:`MODE_SEARCH_SHARE` of the ``left`` seconds to the pulls when timed (``find_modes``' ``max_seconds``); a
    search cut short by its time is not kept for later calls on the model, and a note says how many searches ran.
    """
    from pmcbandit.arms.evidence.modes import find_modes

    search_seconds = None if left is None else MODE_SEARCH_SHARE * left
    search = modes_for(density, find_modes, search_seconds)
    if search.timed_out:
        notes.append(f"mode search cut to {search.n_starts} Newton searches by its share {MODE_SEARCH_SHARE:g} of the "
                     f"time left ({search_seconds:.3g} s; evidence_arms(model) without a budget runs every start)")
    return laplace_arms(density, search, proposals, batch_size, cost, notes, refine)


def _trace_set(model, density, trace, proposals, batch_size, cost, notes: list[str], refine: bool, left,
               alerts: list):
    """The trace arms fitted to ``trace``'s draws mapped to ``density``'s space (or none, with a note) followed by the
    ``local-t`` arms where they pass the set-up check (:func:`~pmcbandit.evidence.trace_local.local_arms`, their
    refinement as ``refine`` says) and the Laplace arms where the mode search finds more than one mode
    (:func:`_search_laplace`, its time share of ``left`` seconds, its warning appended to ``alerts``), those draws
    (``None`` when fewer than two map to finite points), their :func:`~pmcbandit.arms.evidence._cache.trace_digest`
    (``None`` with them) and whether the arms passed the set-up k-hat check (``None`` without arms). The fits and
    each check are made once per density and trace (:func:`trace_fit_for`).
    """
    from pmcbandit.evidence.trace import unconstrained_draws
    from pmcbandit.evidence.trace_arms import trace_arms, trace_fits
    from pmcbandit.evidence.trace_local import local_arms

    x = unconstrained_draws(model, density, trace.values)
    if x.shape[0] < 2:
        notes.append(f"trace arms left out: {x.shape[0]} of the trace's draws map to finite points; the Laplace arms' "
                     "mode search runs instead")
        return [], None, None, None
    digest = trace_digest(x)
    fits = trace_fit_for(density, ("trace fits", digest, bool(proposals)), lambda: trace_fits(x, bool(proposals)))
    verdict: list[bool] = []

    def passes(arms, covariance: str) -> bool:
        verdict.append(trace_fit_for(density, ("setup check", digest, covariance, tuple(proposals), batch_size, cost),
                                     lambda: setup_check_passes(arms)))
        return verdict[-1]

    arms = trace_arms(density, x, proposals, batch_size, cost, notes, fits, passes)
    if not arms:
        notes.append("the Laplace arms' mode search runs in place of the trace arms")
        return arms, x, digest, None
    # The local-t arms: one Newton search from the trace's mean, kept where they pass the same check.
    local = local_arms(density, x, arms[:len(proposals)], notes, refine, passes=setup_check_passes,
                       kept=lambda key, build: trace_fit_for(density, key + (digest, tuple(proposals), batch_size,
                                                                        cost), build))
    found = _search_laplace(density, x, proposals, batch_size, cost, notes, refine, left, alerts)
    # Kept local-t arms passed; otherwise the trace arms' verdict, or None where none was made (build_pool checks the
    # arms only if a rule asks).
    return arms + local + found, x, digest, True if local else (verdict[-1] if verdict else None)


def _search_laplace(density, x, proposals, batch_size, cost, notes: list[str], refine: bool, left,
                    alerts: list) -> list[Arm]:
    """Below :data:`~pmcbandit.evidence.trace_local.LOCAL_DIM_LIMIT` dimensions, the no-trace pool's multi-start mode
    search (its :data:`MODE_SEARCH_SHARE` of the ``left`` seconds; one search per model and process) runs beside a
    trace too: chains may stay in one of several modes (a mixture's labellings), and a trace alone cannot show it.
    Where the search finds more than one mode, the Laplace arms over every mode it found join the trace arms, with a
    note: a t mixture over the modes themselves fits a multimodal posterior better than one fitted to the draws'
    clusters (``trace-mix``), whose draws also fill the valleys between the modes (the label-switching mixture in
    ``benchmarks/results/bench_evidence_trace.md``). Where some of the modes lie where
    the draws do not go (:func:`~pmcbandit.evidence.trace_local.unvisited_modes`) and hold at least
    :data:`~pmcbandit.evidence.trace_local.UNVISITED_WARN_SHARE` of the search's Laplace evidence, a
    :class:`~pmcbandit.exceptions.PmcBanditWarning` says so. Where it finds one mode, no arm is added.
    """
    from pmcbandit.arms.evidence.modes import find_modes
    from pmcbandit.evidence.trace_local import LOCAL_DIM_LIMIT, UNVISITED_WARN_SHARE, unvisited_modes

    if density.dim >= LOCAL_DIM_LIMIT or not proposals:
        return []
    search = modes_for(density, find_modes, None if left is None else MODE_SEARCH_SHARE * left)
    if not search.interior or len(search.modes) < 2:
        return []
    far, share = unvisited_modes(search, x)
    arms = laplace_arms(density, search, proposals, batch_size, cost, notes, refine)
    where = (f"{len(far)} of them outside the region the trace's draws fill ({share:.3g} of the modes' Laplace "
             "evidence)" if far else "each inside the region the trace's draws fill")
    notes.append(f"the mode search found {len(search.modes)} modes, {where}; the Laplace arms over every mode "
                 f"({', '.join(a.name for a in arms) or 'none built'}) joined the trace arms")
    if arms and share >= UNVISITED_WARN_SHARE:
        alerts.append(WarningText(
            f"the trace's draws do not visit {len(far)} of the {len(search.modes)} posterior modes the mode search "
            f"found, which hold about {share:.2g} of the posterior mass by their Laplace fits: the chains stayed in "
            "part of the posterior (as a mixture's chains in one labelling). The evidence counts every mode (Laplace "
            "arms over all of them joined the pool); summaries of this trace describe only the modes it visits: run "
            "chains started in each mode (pm.sample's initvals) for a trace of the whole posterior",
            PmcBanditWarning, "trace_modes"))
    return arms


def _trace_hmc_pilot(density, x, digest: str, notes: list[str]):
    """The HMC AIS arm's settings fitted to the trace's draws ``x`` (digest ``digest``)
    (:func:`~pmcbandit.evidence.trace_pilot.trace_pilot`, no annealing pilot; made once per density and trace), or
    ``None`` with a note when they cannot be fitted.
    """
    from pmcbandit.evidence.trace_pilot import trace_pilot

    start = time.perf_counter()
    fitted = []

    def fit():
        fitted.append(True)
        try:
            return trace_pilot(density, x)
        except Exception as err:  # noqa: BLE001 (a gradient that cannot be compiled, a degenerate trace)
            return err

    pilot = trace_fit_for(density, ("trace pilot", digest), fit, keep=lambda p: not isinstance(p, Exception))
    if isinstance(pilot, Exception):
        notes.append(f"HMC AIS arm left out: its settings could not be fitted to the trace ({type(pilot).__name__}: "
                     f"{pilot})")
        return None
    how = (f"in {time.perf_counter() - start:.3g} s" if fitted else
           "earlier in this process (the same trace on this model; not fitted again)")
    notes.append(f"HMC AIS arm's mass matrices, step sizes and {pilot.betas.size} temperatures fitted to the trace "
                 f"and the prior {how}, in place of the annealing pilot")
    return pilot


def _trace_pilot_t(density, mode, proposals, batch_size, cost, notes: list[str], budget_seconds, left, digest: str,
                   x):
    """:func:`~pmcbandit.evidence.pilots.pilot_t_at_mode` from the trace arms' moment fit ``mode``, the posterior
    pilot's chains started at the trace's draws ``x`` (:func:`~pmcbandit.evidence.pilots.trace_start`), its pilot made
    once per density, trace and proposals where it is a fixed function of them (it ran to its end, and its arms passed
    the set-up check or the annealing pilot gave them: not cut short by the time left); the pilot-t arms are built
    anew on it each run.
    """
    from pmcbandit.arms.evidence.posterior_pilot import PosteriorPilot
    from pmcbandit.evidence.importance import pilot_arms

    ran: list[str] = []
    said: list[str] = []

    def run():
        ran.append("ran")
        pilot, arms = pilot_t_at_mode(density, mode, proposals, batch_size, cost, said, budget_seconds, left,
                                      trace_start(x))
        return pilot, arms, list(said)

    def fixed(value) -> bool:
        pilot, arms, _ = value
        if pilot is None:
            return False
        if isinstance(pilot, PosteriorPilot):  # kept where it ran to its end and its arms passed
            return not pilot.timed_out and setup_check_passes(arms)
        return True  # the annealing pilot, run to its end

    key = ("pilot-t", digest, tuple(proposals), batch_size, cost)
    pilot, arms, told = trace_fit_for(density, key, run, keep=fixed)
    notes.extend(told)
    if not ran:  # kept from an earlier run
        source = "the posterior pilot" if isinstance(pilot, PosteriorPilot) else "the HMC pilot"
        arms = pilot_arms(density, pilot, proposals, batch_size, cost, notes, source)
        notes.append("pilot-t arms' pilot not run again: its moments are those it gave for the same trace on this "
                     "model earlier in this process (a fixed function of both)")
    return pilot, arms


class _Probe(NamedTuple):
    """The timing of an AIS probe kept from an earlier run (:func:`_probe`)."""

    step_seconds: float


def _probe(density, pilot_digest: str | None, reuse: str | None, **settings):
    """A timed :class:`~pmcbandit.arms.evidence.AISArm` probe of
    :data:`~pmcbandit.arms.evidence.ais.PROBE_STEPS` annealing steps with ``settings``, whose ``step_seconds`` sizes
    the AIS arms. With the trace arms (``reuse``, their digest), the seconds the same probe measured on this density
    earlier in this process (:func:`trace_fit_for`): a slice or IMH probe's on any trace, an HMC probe's on the
    same trace's settings (``pilot_digest``; one on another pilot is timed anew).
    """
    from pmcbandit.arms.evidence import AISArm
    from pmcbandit.arms.evidence.ais import PROBE_STEPS

    def timed():
        return AISArm(density, n_steps=PROBE_STEPS, **settings)

    if reuse is None or (settings.get("hmc_pilot") is not None and pilot_digest is None):
        return timed()
    key = ("probe", pilot_digest, tuple(sorted((k, v) for k, v in settings.items() if k != "hmc_pilot")))
    return _Probe(trace_fit_for(density, key, lambda: timed().step_seconds))


def _distinct_steps(steps: list[int]) -> list[int]:
    """Step counts of at least :data:`MIN_AIS_STEPS`, each at least 1.5x the next smaller one: of
    two counts closer than that (a ladder cut down by a cap), the smaller is kept, as the smallest
    is the one sized for the independent check.
    """
    kept: list[int] = []
    for n in sorted(n for n in steps if n >= MIN_AIS_STEPS):
        if not kept or n >= 1.5 * kept[-1]:
            kept.append(n)
    return kept


def _timed_smc_arm(model):
    """PyMC's SMC as an arm, with a pull's predicted duration from a timed run (an untimed one compiles first)."""
    from pmcbandit.arms.evidence import SMCArm

    smc_arm = SMCArm(model)
    smc_arm.draw(np.random.default_rng(0))
    start = time.perf_counter()
    smc_arm.draw(np.random.default_rng(1))
    smc_arm.expected_seconds = time.perf_counter() - start
    return smc_arm


def seconds_after_setup(seconds: float, setup: float) -> float:
    """What a wall-time budget of ``seconds`` leaves to the pulls after ``setup`` seconds of set-up: the rest, but at
    least :data:`MIN_RUN_SHARE` of it (the one rule of :func:`estimate_evidence` and :func:`pmcbandit.compare_models`).
    """
    return max(seconds - setup, MIN_RUN_SHARE * seconds)


def resolve_model(model, door: str):
    """``model``, or the model of the enclosing ``with pm.Model():`` block when ``None`` (PyMC's
    ``modelcontext``); a ``TypeError`` naming ``door`` when there is neither.
    """
    import pymc as pm

    if model is None:
        try:
            return pm.modelcontext(None)
        except TypeError:
            raise TypeError(
                f"The 'model' parameter of {door} must be a pymc.Model, or the call must be inside a "
                "`with pm.Model():` block. Got None outside any model context instead."
            ) from None
    if not isinstance(model, pm.Model):
        raise TypeError(f"The 'model' parameter of {door} must be a pymc.Model. Got {model!r} instead.")
    return model
