"""Laplace-t arms at the posterior mode nearest a trace's mean: one local Newton search beside the trace arms.

With a trace the pool runs no multi-start mode search (:func:`~pmcbandit.arms.evidence.modes.find_modes`): the
trace arms (:mod:`~pmcbandit.evidence.trace_arms`) take the Laplace arms' place. Their t sits at the draws' moments,
which on a hierarchy in non-centred coordinates carry the sampling noise of a trace's covariance; the Laplace arms'
t, moved to the importance-weighted moments of draws from the Laplace fit (:mod:`~pmcbandit.arms.evidence.refine`),
can be the more efficient proposal. So the trace pool adds them at the cost of one search:

* **One search, bounded.** A trust-region Newton search (:func:`~pmcbandit.arms.evidence.modes.local_mode`) from the
  mean of the trace's draws on the density's unconstrained (non-centred) space, at most :data:`LOCAL_MAX_ITER`
  iterations. Where it ends at an interior mode (the rule of :func:`~pmcbandit.arms.evidence.modes.find_modes`), one
  ``local-t`` arm per Laplace proposal (``"local-t"`` for df 5, ``"local-t20"``; the Laplace arms' settings) is
  built at that mode with the curvature there, and, where ``refine`` is on, moved to the refined moments as the
  Laplace arms are (:func:`~pmcbandit.arms.evidence.refine.refine_proposal`, seed
  :data:`~pmcbandit.evidence.importance.REFINE_SEED`). Otherwise none, and a note says why.
* **Kept where one passes.** The arms stay in the pool only where one of them passes the pool's set-up check
  (:func:`~pmcbandit.evidence.importance.setup_check_passes`: the Pareto k-hat of one batch of draws at seed
  :data:`~pmcbandit.evidence.importance.SETUP_CHECK_SEED`), the check every trace arm set gets: a local mode whose
  fit fails it (a funnel's neck, a mode away from the trace's mass) adds arms the trace arms already beat; a note
  says so.
* **Unbiased, reproducible.** The search, the refinement and the check are fixed functions of the trace and their
  seeds, made before any pull: every weight stays unbiased for Z, and the same trace and seed give the same estimate.

May import: the arms and the statistics layer; never a door.
"""

from __future__ import annotations

import numpy as np

from pmcbandit.arms.base import Arm

__all__ = ["LOCAL_MAX_ITER", "local_arms", "local_search"]

#: Most Newton iterations of the local search (each one Hessian: ``2 * dim`` gradient evaluations). Newton with
#: exact Hessians reaches an interior mode in a few to a few tens of iterations from inside its basin.
LOCAL_MAX_ITER = 30


def local_search(density, x: np.ndarray):
    """The :func:`~pmcbandit.arms.evidence.modes.local_mode` search from the mean of the draws ``x`` ``(n, dim)``, at
    most :data:`LOCAL_MAX_ITER` iterations (a fixed function of ``x``).
    """
    from pmcbandit.arms.evidence.modes import local_mode

    return local_mode(density, np.asarray(x, dtype=np.float64).mean(axis=0), max_iter=LOCAL_MAX_ITER)


def local_arms(density, x: np.ndarray, proposals, batch_size: int, cost: str, notes: list[str], refine: bool,
               passes=None, kept=None) -> list[Arm]:
    """The ``local-t`` arms (module docstring) from the draws ``x`` ``(n, dim)``, or none with a note.

    ``passes(arms)``, where given, is the pool's set-up check; the arms are left out where it fails. ``kept(key,
    build)``, where given, returns ``build()`` made once per trace and ``key`` (the pool's
    :func:`~pmcbandit.arms.evidence._cache.trace_fit_for`): the search (``("local search",)``) and the refinement
    (``("local refine", df, inflation, defensive)``), fixed functions of the draws, are then not made again for
    the same trace.
    """
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence.refine import refine_proposal
    from pmcbandit.evidence.importance import REFINE_SEED, arm_name

    if not proposals:
        return []
    if kept is None:
        def kept(key, build):
            return build()

    search = kept(("local search",), lambda: local_search(density, x))
    if not search.interior:
        notes.append(f"local-t arms left out: no interior mode from the trace's mean ({search.reason})")
        return []
    arms = [LaplaceISArm(density, df=df, inflation=inflation, defensive=defensive, batch_size=batch_size,
                         name=arm_name("local-t", df), modes=search, cost=cost)
            for df, inflation, defensive in proposals]
    how = f"the Laplace fit at the mode a Newton search from the trace's mean reached ({search.reason})"
    if refine:
        first = arms[0]
        done = kept(("local refine", first.df, first.inflation, first.defensive),
                    lambda: refine_proposal(first, np.random.default_rng(REFINE_SEED)))
        if done.modes is not None:
            arms = [arm.with_modes(done.modes) for arm in arms]
            fractions = " -> ".join(f"{f:.3g}" for f in done.ess_fractions)
            how += (f", moved to the importance-weighted moments of {done.draws} set-up draws (effective-sample "
                    f"fraction of each proposal tried: {fractions})")
    if passes is not None and not passes(arms):
        notes.append(f"local-t arms left out: none on {how} passed the Pareto k-hat check on one batch of set-up "
                     "draws")
        return []
    notes.append(f"local-t arms: {how}")
    return arms
