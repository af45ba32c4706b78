"""The one loop of every run: choose, pull, absorb, until the budget, the learner or the callback ends it.

:func:`pmcbandit.run` (allocation) and :func:`pmcbandit.identify` (best-K identification) build an
:class:`~pmcbandit.runtime.engine.Engine` around their learner and hand it to :func:`drive`:

1. resume from ``checkpoint`` if it exists (:mod:`pmcbandit.runtime.checkpoint`);
2. while the budget lasts and the learner has not stopped: open decisions while the executor has
   room (:meth:`Engine.plan`, :meth:`Engine.dispatch`; the policy chooses while earlier pulls may
   still be in flight), submit their pulls, each with its own stream, and absorb what comes back
   (:meth:`Engine.record`, :meth:`Engine.absorb`); an identification algorithm's ``stop`` is checked
   after every absorbed decision;
3. write the last checkpoint and say why the run ended: ``"confidence"`` (the identification
   algorithm stopped), ``"budget"`` (spent, or no decision fits in the time left),
   ``"callback"`` or ``"no_arm"`` (every arm out of play).

Every executor — :class:`~pmcbandit.runtime.executors.base.SerialExecutor` (pulls run inline at submit, the
default), a thread pool, worker processes or a Dask cluster (:mod:`pmcbandit.runtime.executors.local`) — is
driven through the same calls, so there is one loop. One shortcut: with one decision at a time on an executor
that offers ``pull_now`` (the serial one), the decision's pulls are made by that call, in order, instead of
going through ``submit`` and ``wait``; the outcomes, their order and everything after them are the same.

Cost per pull. The loop's own work per pull (the bookkeeping around the policy's choice and update, the pull's
stream, the history row and the checks) comes on top of the policy and the arm
(``benchmarks/results/bench_run_loop.md``): a pull budget is asked whether it is spent only once its pulls are in
(:attr:`pmcbandit.runtime.budget.Budget.pulls_to_exhaust`), the budget checks read the process clock only for a CPU
budget, the history's ``cpu`` column at most once per millisecond of wall time (:mod:`pmcbandit.runtime.history`),
an arm that reports its cost reads none (:attr:`pmcbandit.arms.base.Arm.reports_cost`), the plan is reused while
every arm is in play, a decision that closes before the next choice is counted pending by the policy's update
(:class:`pmcbandit.policies.learner.PolicyLearner`), a pull is recorded and folded in by one call
(:meth:`Engine.receive`), and the history extends one flat list per pull
(:class:`pmcbandit.runtime.history.History`). The pull's own Generator (NumPy's PCG64 construction) stays, fresh for
every pull: the streams are bit-identical to NumPy's, and re-seeding one Generator per arm in place saves nothing
measurable (the results).
"""

from __future__ import annotations

import math
import os
import time

from pmcbandit.runtime.checkpoint import resume, save_checkpoint
from pmcbandit.runtime.heap import frozen_heap

__all__ = ["drive"]


def drive(engine, budget, executor, settings: dict, *, watch=None, progressbar: bool = True, callback=None,
          checkpoint=None, checkpoint_every: float = 30.0, max_in_flight: int | None = None) -> str:
    """Run ``engine`` until the budget, its learner or ``callback`` ends it; return ``stopped_by``.

    Parameters
    ----------
    engine : Engine
        With its streams set.
    budget : Budget
    executor : executor object
        Bound to the run's arms and streams here; shut down on the way out, whatever happens
        (:mod:`pmcbandit.runtime.executors.local`).
    settings : dict
        The run's settings (:meth:`pmcbandit.runtime.config.RunConfig.settings`): a checkpoint stores them
        and checks their fingerprint on resume.
    watch : object, optional
        The standard error a ``TargetSE`` budget compares (``watch.se(engine)``).
    progressbar, callback, checkpoint, checkpoint_every
        As in :func:`pmcbandit.run`.
    max_in_flight : int, optional
        Pulls in flight at most (``None``: the executor's capacity).
    """
    executor.bind(engine.arms, engine.streams)
    if not len(engine.history):
        # Starting workers and installing the arms on them (compilation included) is set-up, not the
        # budget's, as building the arms is; a resumed run restarts its clock in resume().
        engine.restart_clock()
    if checkpoint is not None and os.path.exists(checkpoint):
        # Identification and comparison rules read no clock: their choices always replay exactly.
        exact = budget.horizon is None or engine.learner.replays_exactly
        resume(engine, checkpoint, settings, executor, watch, exact=exact)
    learner = engine.learner
    need_cpu = budget.uses_cpu
    timed = budget.horizon is not None
    last_pull = learner.pulls_per_decision - 1
    capacity = executor.capacity if max_in_flight is None else max_in_flight
    pending = executor.in_flight()  # pulls a resumed run re-submitted; counted here from now on
    # An executor that hands its pulls back in the order they were submitted (``in_order``) needs no sort
    # of a single decision's pulls.
    in_order = bool(getattr(executor, "in_order", False))
    # One decision at a time on an executor that pulls inline (``pull_now``): the decision's pulls are made
    # here, in order, and absorbed at once, as submit and wait would hand them back.
    pull_now = getattr(executor, "pull_now", None) if capacity == 1 and in_order else None
    # The calls made at every pull, looked up once.
    submit, wait, receive = executor.submit, executor.wait, engine.receive
    plan_of, dispatch = engine.plan, engine.dispatch
    progress_of, exhausted, may_dispatch = engine.progress, budget.exhausted, budget.may_dispatch
    se_of = watch.se if watch else None
    # Below this many pulls the budget is not exhausted: no progress record is built before those pulls.
    floor = budget.pulls_to_exhaust if se_of is None else None
    nan = math.nan
    saved_at = time.perf_counter()
    stopped_by = "budget"
    bar = _progress_bar(progressbar, len(engine.arms))
    try:
        with frozen_heap():  # a collection's walk of the set-up's objects is not charged to a pull (runtime.heap)
            while True:
                progress = None
                if floor is None or engine.rows >= floor:
                    progress = progress_of(se_of(engine) if se_of else nan, need_cpu)
                    if exhausted(progress):
                        stopped_by = budget.stop_reason(progress)
                        break
                if engine.stopped:
                    stopped_by = "confidence"
                    break
                outcomes = None
                while pending < capacity and may_dispatch(engine.pulls_dispatched + last_pull):
                    plan = plan_of(budget.seconds_left(progress_of(cpu=need_cpu)) if timed else None)
                    if plan is None:
                        break
                    tickets = dispatch(plan)
                    if pull_now is not None:  # capacity 1: this decision is the only one
                        outcomes = [pull_now(ticket) for ticket in tickets]
                        break
                    for ticket in tickets:
                        submit(ticket)
                    pending += len(tickets)
                if outcomes is None:
                    if pending == 0:  # nothing left to wait for
                        if engine.stopped:
                            stopped_by = "confidence"
                        elif engine.blocked().all() or (learner.halts_on_quarantine and engine.quarantined.any()):
                            stopped_by = "no_arm"
                        break
                    outcomes = wait()
                    pending -= len(outcomes)
                    while capacity == 1 and pending:
                        # One decision at a time: its pulls (two for a paired reward) are absorbed together
                        # before the budget and the callback look, as when they run inline, so that a run
                        # stops at the same pull on every executor (docs/scale_out.md, level 2).
                        more = wait()
                        pending -= len(more)
                        outcomes += more
                    if capacity == 1 and len(outcomes) > 1 and not (
                        in_order and outcomes[0].ticket.decision == outcomes[-1].ticket.decision
                    ):  # in the order they were dispatched, as inline (one decision's pulls handed back in order are)
                        outcomes.sort(key=lambda o: engine.decisions[o.ticket.decision].tickets.index(o.ticket))
                for outcome in outcomes:
                    receive(outcome)
                if progress is None and (bar is not None or callback is not None):
                    progress = progress_of(nan, need_cpu)
                if bar is not None:
                    _advance(bar, budget.fraction(progress), getattr(learner, "progress_text", None))
                if callback is not None and callback(engine.progress(progress.se), engine.history):
                    stopped_by = "callback"
                    break
                if checkpoint is not None and time.perf_counter() - saved_at >= checkpoint_every:
                    save_checkpoint(checkpoint, engine, settings, watch)
                    saved_at = time.perf_counter()
    finally:
        executor.shutdown()
        if bar is not None:
            bar.close()
    if checkpoint is not None:
        save_checkpoint(checkpoint, engine, dict(settings, stopped_by=stopped_by), watch)
    return stopped_by


def _advance(bar, fraction: float, text=None) -> None:
    """Move the bar to ``fraction`` (redrawn only when the whole percent changes: tqdm is slow), with
    the learner's ``progress_text()``, when it has one, as the bar's postfix.
    """
    n = int(100 * min(1.0, max(0.0, fraction)))
    if n != bar.n:
        bar.n = n
        if text is not None:
            bar.set_postfix_str(text(), refresh=False)
        bar.refresh()


def _progress_bar(enabled: bool, n_arms: int):
    if not enabled:
        return None
    from tqdm.std import tqdm

    return tqdm(total=100, desc=f"pmcbandit ({n_arms} arms)", unit="%", leave=False,
                bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f}% [{elapsed}<{remaining}{postfix}]")
