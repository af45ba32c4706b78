"""Laplace-t arms at the posterior mode nearest a trace's mean: one local Newton search beside the trace arms.

With a trace the trace arms (:mod:`~pmcbandit.evidence.trace_arms`) take the Laplace arms' place; the pool's
multi-start mode search (:func:`~pmcbandit.arms.evidence.modes.find_modes`) runs beside them below
:data:`LOCAL_DIM_LIMIT` dimensions only to find modes the draws do not visit (:func:`unvisited_modes`). Their t sits
at the draws' moments, which on a hierarchy in non-centred coordinates carry the sampling noise of a trace's
covariance; the Laplace arms' t, moved to the importance-weighted moments of draws from the Laplace fit
(:mod:`~pmcbandit.arms.evidence.refine`), can be the more efficient proposal. So the trace pool adds them at the
cost of one search:

* **One search, bounded.** A trust-region Newton search (:func:`~pmcbandit.arms.evidence.modes.local_mode`) from the
  mean of the trace's draws on the density's unconstrained (non-centred) space, at most :data:`LOCAL_MAX_ITER`
  iterations. Where it ends at an interior mode (the rule of :func:`~pmcbandit.arms.evidence.modes.find_modes`), one
  ``local-t`` arm per Laplace proposal (``"local-t"`` for df 5, ``"local-t20"``; the Laplace arms' settings) is
  made at that mode with the curvature there, a copy of the ``trace-t`` arm of its setting with the t moved
  (no compilation, no timing pull). Otherwise none, and a note says why.
* **Below 20 dimensions.** The search runs where the density has fewer than :data:`LOCAL_DIM_LIMIT` dimensions (the
  threshold from which the pool adds its HMC AIS arm); above, the arms are left out with a note. Each Newton step
  costs a Hessian of ``2 * dim`` gradient evaluations, and on the suite's two hierarchies (53 and 102 dimensions)
  the search and the check of its arm took the pool's set-up with a new trace past a tenth of the no-trace pool's,
  while the arm failed the check on both (``benchmarks/results/bench_setup_trace.md``): set-up that the trace
  exists to save.
* **Checked before it is refined.** The arm of the first proposal (the heavy-tailed one, df 5, of the default
  proposals) on the Laplace fit gets the pool's set-up check first
  (:func:`~pmcbandit.evidence.importance.setup_check_passes`: the Pareto k-hat of one batch of draws at seed
  :data:`~pmcbandit.evidence.importance.SETUP_CHECK_SEED`, the check every trace arm set gets). Where it fails, the
  mode sits away from the posterior's mass (a hierarchy's mode at a larger group scale than its mass, in non-centred
  coordinates) and the arms are left out, with a note, before the refinement's thousands of draws: the set-up they
  would cost is what the trace saves. Where it passes, the arms are moved to the refined moments as the Laplace
  arms are, where ``refine`` is on (:func:`~pmcbandit.arms.evidence.refine.refine_proposal`, seed
  :data:`~pmcbandit.evidence.importance.REFINE_SEED`; on centred eight schools the refinement is what makes the arm
  as efficient as the no-trace pool's Laplace arms, ``benchmarks/results/bench_evidence_trace_arms.md``), and kept
  where one of the refined arms passes the check too.
* **Unbiased, reproducible.** The search, the refinement and the checks are fixed functions of the trace and their
  seeds, made before any pull: every weight stays unbiased for Z, and the same trace and seed give the same estimate.

May import: the arms and the statistics layer; never a door.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pmcbandit.arms.base import Arm

__all__ = ["LOCAL_DIM_LIMIT", "LOCAL_MAX_ITER", "UNVISITED_WARN_SHARE", "LocalFit", "local_arms", "local_search",
           "unvisited_modes"]

#: Most Newton iterations of the local search (each one Hessian: ``2 * dim`` gradient evaluations). Newton with
#: exact Hessians reaches an interior mode in a few to a few tens of iterations from inside its basin.
LOCAL_MAX_ITER = 30
#: The local search runs on densities of fewer dimensions than this (module docstring).
LOCAL_DIM_LIMIT = 20
#: Share of the Laplace evidence of a search's modes from which modes the trace does not visit are warned about.
UNVISITED_WARN_SHARE = 0.01


def local_search(density, x: np.ndarray):
    """The :func:`~pmcbandit.arms.evidence.modes.local_mode` search from the mean of the draws ``x`` ``(n, dim)``, at
    most :data:`LOCAL_MAX_ITER` iterations (a fixed function of ``x``).
    """
    from pmcbandit.arms.evidence.modes import local_mode

    return local_mode(density, np.asarray(x, dtype=np.float64).mean(axis=0), max_iter=LOCAL_MAX_ITER)


def unvisited_modes(search, x: np.ndarray) -> tuple[list[int], float]:
    """The indices of ``search``'s modes that the draws ``x`` ``(n, dim)`` do not visit, and their share of the
    search's Laplace evidence.

    A mode is unvisited where its Mahalanobis distance from the draws' mean, in the draws' covariance, exceeds every
    draw's: it lies outside the ellipsoid the trace fills (the second labelling of a mixture whose chains stayed in
    one). A mode inside it may still be one the chains never reached, so the rule errs towards "visited"; the
    Laplace arms it adds cost only their pulls, and the pool's checks judge them as any arm.
    """
    x = np.asarray(x, dtype=np.float64)
    if not search.modes or x.shape[0] < 2:
        return [], 0.0
    mean = x.mean(axis=0)
    cov = np.atleast_2d(np.cov(x, rowvar=False))
    cov = cov + 1e-12 * np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return [], 0.0

    def distance(points):
        z = np.linalg.solve(chol, (np.atleast_2d(points) - mean).T)
        return np.einsum("ij,ij->j", z, z)

    reach = float(distance(x).max())
    far = [i for i, mode in enumerate(search.modes) if distance(mode.location)[0] > reach]
    logs = np.array([mode.log_laplace for mode in search.modes], dtype=np.float64)
    weights = np.exp(logs - logs.max())
    return far, float(weights[far].sum() / weights.sum()) if far else 0.0


class LocalFit(NamedTuple):
    """What :func:`local_arms` fitted to a trace: the search, the proposal the arms use (the search itself, or its
    refinement's moment fit), whether they passed the set-up check, and the note that says so.
    """

    search: object
    modes: object
    passed: bool
    note: str


def local_arms(density, x: np.ndarray, templates, notes: list[str], refine: bool, passes, kept=None) -> list[Arm]:
    """The ``local-t`` arms (module docstring) from the draws ``x`` ``(n, dim)``, or none with a note.

    ``templates`` are the ``trace-t`` arms (one per proposal setting): each ``local-t`` arm is a copy of one with its
    t moved to the local fit (:meth:`~pmcbandit.arms.evidence.LaplaceISArm.with_modes`, no compilation or timing
    pull: a pull draws and evaluates as many points). ``passes(arms)`` is the pool's set-up check. The
    first template's arm on the Laplace fit (the heavy-tailed one, df 5, of the default proposals) is checked
    first, and where it fails the arms are left out without the refinement's draws (a Laplace fit whose weights
    fail on their own sits away from the mass, as a hierarchy's mode in non-centred coordinates); otherwise the
    arms, refined where ``refine``, are kept where they pass. ``kept(key, build)``, where given, returns ``build()``
    made once per trace and ``key`` (the pool's :func:`~pmcbandit.arms.evidence._cache.trace_fit_for`): the fit
    (``("local fit", refine)``, a :class:`LocalFit`,
    a fixed function of the draws) is then not made again for the same trace.
    """
    if not templates:
        return []
    if density.dim >= LOCAL_DIM_LIMIT:
        notes.append(f"local-t arms left out: no local mode search on {density.dim} dimensions (it runs below "
                     f"{LOCAL_DIM_LIMIT}: its Hessians cost 2 x dim gradient evaluations each)")
        return []
    if kept is None:
        def kept(key, build):
            return build()
    def copies(modes):
        from pmcbandit.evidence.importance import arm_name

        return [arm.with_modes(modes, name=arm_name("local-t", arm.df)) for arm in templates]

    def fit() -> LocalFit:
        from pmcbandit.arms.evidence.refine import refine_proposal
        from pmcbandit.evidence.importance import REFINE_SEED

        search = local_search(density, x)
        if not search.interior:
            return LocalFit(search, None, False, f"local-t arms left out: no interior mode from the trace's mean "
                                                 f"({search.reason})")
        how = f"the Laplace fit at the mode a Newton search from the trace's mean reached ({search.reason})"
        arms = copies(search)
        if not passes(arms[:1]):
            return LocalFit(search, None, False, f"local-t arms left out: the heavy-tailed one on {how} failed the "
                                                 "Pareto k-hat check on one batch of set-up draws (not refined)")
        modes = search
        if refine:
            done = refine_proposal(arms[0], np.random.default_rng(REFINE_SEED))
            if done.modes is not None:
                modes = done.modes
                fractions = " -> ".join(f"{f:.3g}" for f in done.ess_fractions)
                how += (f", moved to the importance-weighted moments of {done.draws} set-up draws (effective-sample "
                        f"fraction of each proposal tried: {fractions})")
        if modes is not search and not passes(copies(modes)):
            return LocalFit(search, None, False, f"local-t arms left out: none on {how} passed the Pareto k-hat "
                                                 "check on one batch of set-up draws")
        return LocalFit(search, modes, True, f"local-t arms: {how}")

    local = kept(("local fit", refine), fit)
    notes.append(local.note)
    return copies(local.modes) if local.passed else []
