"""The default pool's nested-sampling arm (:class:`~pmcbandit.arms.evidence.nested.NestedArm`), sized for a budget.

A run's cost grows with its live points about linearly (the removals to reach a depth are ``n_live`` per nat),
so one timed run with :data:`PROBE_LIVE` live points predicts the others; the arm gets the most live points, up to
:data:`~pmcbandit.arms.evidence.nested.DEFAULT_LIVE`, whose pull is predicted to fit the cross-check share the way
the AIS check arm is sized (:func:`~pmcbandit.evidence.pool.evidence_arms`, ``budget_seconds``), or at least the
run's decision cap. A probe run shorter than :data:`PROBE_REPEAT_SECONDS` is run again, the same run from the same
seed, up to :data:`PROBE_RUNS` times, and the fastest is kept, as
:attr:`~pmcbandit.arms.evidence.model_density.ModelDensity.eval_seconds` keeps the fastest of its passes: a run of a
few milliseconds is easily doubled by another thread holding the core (a BLAS worker still spinning after the
set-up's linear algebra, another process), and the repeats cost at most a tenth of a second.

A model of more than :data:`NESTED_MAX_DIM` unconstrained dimensions gets no nested arm: its slice moves take about
``dim`` steps per replacement and its runs ``dim`` times more removals, and on such models a run would not fit a
decision.

May import: the arms and the runtime's guards (as :mod:`~pmcbandit.evidence.pool`).
"""

from __future__ import annotations

import time

import numpy as np

from pmcbandit.arms.base import Arm

__all__ = ["nested_arm", "NESTED_MAX_DIM", "PROBE_LIVE", "PROBE_RUNS", "PROBE_REPEAT_SECONDS", "MIN_LIVE",
           "NESTED_MAX_LIVE", "NATS_PER_LIVE", "laplace_information"]

#: Most unconstrained dimensions of a model the default pool adds a nested-sampling arm to.
NESTED_MAX_DIM = 30
#: Live points of the timed run that sizes the arm.
PROBE_LIVE = 4
#: Most timed runs of the probe (module docstring).
PROBE_RUNS = 3
#: Wall seconds below which a timed probe run is repeated.
PROBE_REPEAT_SECONDS = 0.05
#: Fewest live points of the pool's nested arm; below, it is left out.
MIN_LIVE = 8
#: Most live points the pool gives its nested arm where the posterior's information asks for more than the budget's
#: sizing gives (:func:`nested_arm`).
NESTED_MAX_LIVE = 256
#: Information per live point (nats) above which the pool grows its nested arm's live points, where a check still
#: fits (:func:`nested_arm`).
NATS_PER_LIVE = 1.0


def laplace_information(density, mode) -> float:
    r"""The information :math:`H = \mathrm{KL}(\pi \,\|\, p)` of the posterior relative to the prior, from a Gaussian
    at an interior ``mode`` (:class:`~pmcbandit.arms.evidence.modes.Mode`) whose precision :math:`P` the likelihood
    dominates: :math:`H = -\mathrm{entropy}(\pi) - E_\pi[\log p] \approx \tfrac12\log\det P - \tfrac d2
    \log(2\pi e) - \log p(\hat x)`, with :math:`\log p` the prior density on the unconstrained space; NaN where
    that is not finite.
    """
    import math

    log_prior = density.logp_terms(mode.location)[0]
    sign, log_det = np.linalg.slogdet(mode.precision)
    h = 0.5 * log_det - 0.5 * density.dim * math.log(2.0 * math.pi * math.e) - log_prior
    return float(h) if sign > 0 and math.isfinite(h) else math.nan


def nested_arm(density, cost: str, budget_seconds: float | None, decision_share: float, check_share: float,
               check_pulls: int, check_fill: float, notes: list[str], information: float = float("nan"),
               wide_share: float = 0.0) -> Arm | None:
    r"""The pool's nested-sampling arm on ``density``, or ``None`` with a note saying why it was left out.

    A pull's duration is predicted from a timed run with :data:`PROBE_LIVE` live points (the fastest of up to
    :data:`PROBE_RUNS` when short, module docstring), scaled by the live points. Untimed (``budget_seconds=None``):
    :data:`~pmcbandit.arms.evidence.nested.DEFAULT_LIVE` live points. Timed: the most live points (halving from the
    default, at least :data:`MIN_LIVE`) whose pull lets ``check_pulls`` pulls fit in ``check_fill`` of the
    ``check_share`` of the budget, else one whose pull fits 0.8 of ``decision_share / 2`` of it (a paired decision
    is two pulls, :mod:`pmcbandit.runtime.guards` rule 1), else none.

    Then, where the posterior's ``information`` :math:`H` (nats, :func:`laplace_information`; NaN: unknown) exceeds
    :data:`NATS_PER_LIVE` per live point, the live points grow (doubling, up to the fewest with :math:`H/N` at most
    that, and at most :data:`NESTED_MAX_LIVE`) while ``check_pulls`` pulls still fit in ``check_fill`` of the
    ``wide_share`` of the budget (the share a check may widen to, :mod:`pmcbandit.runtime.guards` rule 4) and a pull
    in the decision's. A run's :math:`\log\hat Z` has a variance of about :math:`H/N` (Skilling 2006), so
    the relative variance of its :math:`\hat Z` is about :math:`e^{H/N} - 1`, and the cost of a check of a given
    resolution, :math:`N (e^{H/N} - 1)` in live-point runs, falls steeply with :math:`N` until :math:`H/N` is below
    about one: on a spike inside a slab (:mod:`models.spike_slab`, :math:`H` near 30 nats) runs of 8 live points
    are too noisy for any check a budget of a minute holds. The rule stops at one nat per live point, not where
    that cost is least, as :math:`H` from the curvature at the mode overstates the information of a posterior with
    mass away from the mode (on that spike and slab, about 41 nats where the runs' spread says about 30).
    """
    from pmcbandit.arms.evidence.nested import DEFAULT_LIVE, NestedArm

    if density.dim > NESTED_MAX_DIM:
        notes.append(f"nested-sampling arm left out: the model has {density.dim} unconstrained dimensions, more than "
                     f"the {NESTED_MAX_DIM} the default pool runs it on")
        return None
    probe = NestedArm(density, n_live=PROBE_LIVE, cost=cost)
    seconds = probe.expected_seconds  # the run from default_rng(1), timed at construction
    for _ in range(PROBE_RUNS - 1):
        if seconds >= PROBE_REPEAT_SECONDS:
            break
        start = time.perf_counter()
        probe.draw(np.random.default_rng(1))
        seconds = min(seconds, time.perf_counter() - start)
    per_live = seconds / PROBE_LIVE
    if budget_seconds is None:
        return NestedArm(density, n_live=DEFAULT_LIVE, cost=cost, expected_seconds=DEFAULT_LIVE * per_live)
    check_cap = check_fill * check_share * budget_seconds / check_pulls
    decision_cap = 0.8 * decision_share * budget_seconds / 2
    sizes = []
    n = DEFAULT_LIVE
    while n >= MIN_LIVE:
        sizes.append(n)
        n //= 2
    for cap in (check_cap, decision_cap):
        fits = [n for n in sizes if n * per_live <= cap]
        if fits:
            n_live = fits[0]
            wide_cap = min(check_fill * wide_share * budget_seconds / check_pulls, decision_cap)
            grown = n_live
            while (information / grown > NATS_PER_LIVE and 2 * grown <= NESTED_MAX_LIVE
                   and 2 * grown * per_live <= wide_cap):
                grown *= 2
            if grown > n_live:
                notes.append(f"nested-sampling arm sized to {grown} live points for a posterior of about "
                             f"{information:.3g} nats of information (a run's log Z has a variance of about "
                             f"information / live points; {n_live} would fit the check's share of the "
                             f"{budget_seconds:g} s budget, {grown} its widened share; a run takes about "
                             f"{per_live:.3g} s per live point on this model)")
                return NestedArm(density, n_live=grown, cost=cost, expected_seconds=grown * per_live)
            if n_live != DEFAULT_LIVE:
                notes.append(f"nested-sampling arm sized to {n_live} live points for a {budget_seconds:g} s budget "
                             f"(a run takes about {per_live:.3g} s per live point on this model)")
            return NestedArm(density, n_live=n_live, cost=cost, expected_seconds=n_live * per_live)
    notes.append(f"nested-sampling arm left out: a run with {MIN_LIVE} live points takes about "
                 f"{MIN_LIVE * per_live:.3g} s on this model, more than {decision_share / 2:g} of the "
                 f"{budget_seconds:g} s budget")
    return None
