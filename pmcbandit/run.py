"""``pmcbandit.run``: allocate a compute budget among arms and combine their estimates.

The flow of a run (Neufeld et al. 2014, Alg. 1 with the reductions of Thm 2 / Sec. 5):

1. check the arguments and freeze them into a :class:`~pmcbandit.runtime.config.RunConfig`; derive the
   policy's stream and the addressable per-pull streams from ``random_seed``
   (:mod:`pmcbandit.runtime.streams`);
2. drive the run (:func:`pmcbandit.runtime.loop.drive`): resume from ``checkpoint`` if it exists; until
   the budget is spent, let the policy choose (while earlier pulls may still be in flight), pull
   the chosen arm with the pull's own stream, reduce the pull to one observation, record it
   (:mod:`pmcbandit.runtime.history`), and when a decision's pulls are all back feed its reward to the
   policy (:mod:`pmcbandit.policies.learner`);
3. combine the valid observations (:mod:`pmcbandit.stats.combine`) into a :class:`RunResult`.

Reproducibility: with ``max_in_flight=1`` a run is a deterministic function of its seed,
arms and budget for :class:`~pmcbandit.Pulls` and :class:`~pmcbandit.TargetSE` budgets (time
budgets stop at a time-dependent pull); the global ``np.random`` state is never touched.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from pmcbandit._validation import check_choice
from pmcbandit.arms.base import Arm, check_arms
from pmcbandit.policies import get_policy
from pmcbandit.policies.learner import PolicyLearner
from pmcbandit.policies.rewards import RANGE_NAMES, REWARD_NAMES, make_reward_rule
from pmcbandit.result import RunResult
from pmcbandit.runtime.budget import Budget, Pulls, TargetSE
from pmcbandit.runtime.door import drive_run, emit_warnings, loop_options
from pmcbandit.runtime.guards import CROSS_CHECK_SHARE, MAX_DECISION_SHARE, Guards
from pmcbandit.stats.combine import COMBINE_METHODS

__all__ = ["run"]


def run(
    arms: Sequence[Arm],
    policy="thompson",
    *,
    budget: float | Budget = 30.0,
    combine: str = "inverse_variance",
    random_seed=None,
    reward: str = "auto",
    bounds: tuple[float, float] | None = None,
    ranges: str = "auto",
    centre="auto",
    policy_kwargs: dict | None = None,
    max_in_flight: int | None = None,
    pull_timeout: float | None = None,
    executor=None,
    max_faults: int = 1,
    cross_check_share: float = CROSS_CHECK_SHARE,
    max_decision_share: float = MAX_DECISION_SHARE,
    progressbar: bool = True,
    callback: Callable | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: float = 30.0,
) -> RunResult:
    r"""Allocate ``budget`` among ``arms`` with a bandit ``policy`` and combine the estimates.

    Neufeld et al. (2014): each arm is an unbiased estimator of the same target; the bandit
    sees the reward :math:`-(X - c)^2` (uniform costs, Thm 2) or the paired
    :math:`-\tfrac14 (D_1 + D_2)(X_1 - X_2)^2` (non-uniform costs, Sec. 5), whose means are
    :math:`-V_k` (up to a constant) and :math:`-\delta_k V_k`, so it learns to pull the arm
    with the smallest variance (times cost); the observations are then combined uniformly or
    by inverse variance (:mod:`pmcbandit.stats.combine`).

    Parameters
    ----------
    arms : sequence of Arm
        The estimators (all of the same target; all ``log_scale`` or none; unique names).
    policy : str or Policy
        One of ``pmcbandit.POLICY_NAMES`` or a :class:`~pmcbandit.policies.Policy`. A policy
        whose ``update`` accepts ``value=`` and ``info=`` keywords also gets the decision's mean
        observation (on the working scale of :mod:`pmcbandit.runtime.engine`) and the ``info`` of its
        last pull. A checkpoint replays only the declared float diagnostics: a run whose
        policy got other info (PMC's per-path arrays) cannot be resumed (``ValueError``).
    budget : float or Budget
        A float is seconds of wall time; or ``Pulls(n)``, ``CpuSeconds(s)``, ``WallSeconds(s)``,
        ``TargetSE(se, relative=False, min_pulls=2, max_seconds=None)``.
    combine : {"inverse_variance", "uniform", "cross_fitted"}
        How the arms' observations are combined (:mod:`pmcbandit.stats.combine`); ``result.recombined(method)``
        reads the same run through another.
    random_seed : int, Generator or None
        Converted once; the policy and every pull get their own spawned stream.
    reward : {"auto", "squared", "paired"}
        ``"auto"``: squared for ``Pulls`` budgets, paired (cost-aware) otherwise.
    bounds : (a, b), optional
        Known range of every observation (App. B): squared rewards then use centre ``a`` and
        the fixed scale ``(b - a)^2``; an observation outside is a fault. Linear-scale arms only.
    ranges : {"auto", "per_arm", "shared"}
        How losses are normalised for the policy when ``bounds`` are unknown (App. B):
        ``"per_arm"`` by each arm's own running maximum loss, with indices mapped back to the
        loss scale before arms are compared; ``"shared"`` by the maximum over all arms.
        ``"auto"``: ``"shared"`` with ``bounds``, else the policy's ``ranges`` attribute
        (``"per_arm"`` for Thompson sampling and KL-UCB, ``"shared"`` for the others). A custom policy that
        does not declare ``per_arm_ranges`` runs with shared ranges under ``"auto"``.
    centre : {"auto", "running", "first"} or float
        Centre ``c`` of the squared reward :math:`-(X - c)^2` (:mod:`pmcbandit.policies.centring`).
        ``"running"``: the first observation, moved to the mean of all observations after the
        2nd, 4th, 8th, ... reward, every past loss re-scored; ``"first"``: the first
        observation for good; a float: a known centre. ``"auto"``: ``a`` with ``bounds``, else
        ``"running"`` for a policy with a ``recentre`` function (every built-in one) and
        ``"first"`` for others. Ignored by the paired reward, whose losses are differences.
    policy_kwargs : dict, optional
        Parameters of the policy factory (e.g. ``{"zeta": 1.2}``, ``{"arm": 2}`` for oracle).
    max_in_flight : int, optional
        Pulls that may run at once; the policy chooses while others are pending (pending pulls
        count in the indices, :mod:`pmcbandit.policies.base`). Default: 1 without ``executor``,
        else the executor's capacity (its total worker threads). Above 1, completion order
        (hence allocation) depends on timing: per-arm counts are no longer reproducible, but the
        estimate is a function of the seed and the counts (observations are combined in (arm,
        pull index) order; ``docs/scale_out.md``). With ``executor=None`` or ``"threads"`` an arm
        may be pulled from several threads at once: its ``draw`` must be thread-safe (arms that
        declare ``thread_safe = False``, as the evidence arms do, are refused).
    pull_timeout : float, optional
        Seconds after which a pull counts as a fault (in-process its thread is abandoned, not
        killed; a worker process or Dask worker running it is restarted, freeing its slot).
    executor : None, "threads", "processes", dask.distributed.Client or executor object
        Where pulls run (:func:`pmcbandit.runtime.executors.local.make_executor`). ``None``: in this process
        (inline, or threads when ``max_in_flight > 1`` or ``pull_timeout`` is set).
        ``"processes"``: spawned worker processes on this machine
        (:class:`~pmcbandit.runtime.executors.processes.ProcessExecutor`); a ``Client``: the workers of its Dask
        cluster (:class:`~pmcbandit.runtime.executors.dask_cluster.DaskExecutor`). Out-of-process executors ship the
        arms once (cloudpickled; evidence arms as their ``pm.Model``, compiled once per worker),
        measure each pull's CPU on its worker thread (``CpuSeconds`` budgets count it), retry a
        pull lost with its worker with the same stream (status ``"lost"`` after the retries,
        not counted towards quarantine). ``settings["executor"]`` and ``settings["workers"]``
        record the kind and worker count. Starting workers and installing the arms on them happen
        before the budget's clock starts. An executor object passed in is not closed by the run
        (reuse it); one the run built from a name is. See ``docs/scale_out.md`` for the
        reproducibility levels.
    max_faults : int
        Faulty pulls (exception, NaN/+inf, every log-weight ``-inf``, timeout, out of bounds,
        bad cost) after which an arm is quarantined: never selected again; its earlier valid
        observations are kept; a decision with a faulty pull gets no reward. Every fault is in
        ``result.faults`` and the InferenceData, and quarantines raise a
        :class:`PmcBanditWarning`. An oracle policy whose arm is quarantined ends the run.
    cross_check_share : float
        Smallest share of the spending kept on estimator families other than the leading one
        when the arms declare two or more ``family`` values (:mod:`pmcbandit.runtime.guards`, rule 4;
        0 switches it off). Under a wall or CPU budget the check arm's share widens, up to
        :data:`~pmcbandit.runtime.guards.MAX_CHECK_SHARE` of the budget, while the answer lacks only a check
        its pulls can bring to the resolution a check needs.
    max_decision_share : float
        Under a time budget, the largest share of its horizon one decision may be predicted to
        take (:mod:`pmcbandit.runtime.guards`, rule 1); time budgets also get the fit and initial rules
        (no decision starts that cannot end in time; every arm tried once, cheapest first).
    progressbar : bool
        A tqdm bar of the budget's fraction spent.
    callback : callable, optional
        ``callback(progress, history)`` after each batch of completed pulls, with ``progress``
        a :class:`~pmcbandit.runtime.budget.Progress` (pulls, wall, cpu, se) and the live
        :class:`~pmcbandit.runtime.history.History`; return ``True`` to stop the run early (a
        checkpoint is still written).
    checkpoint : path, optional
        An ``.npz`` file (no pickle) written every ``checkpoint_every`` seconds and at the end.
        If it exists when the run starts, the run resumes from it: the recorded pulls are
        replayed through the policy (consuming its stream exactly as before, faults and
        quarantines included) and pulls that were in flight are redone with their original
        streams, so a resumed run with the same seed gives the same result as an uninterrupted
        one (for ``Pulls`` and ``TargetSE`` budgets with ``max_in_flight=1``). Arms, policy,
        reward, bounds and seed must match the checkpoint's (else ``ValueError``).
    checkpoint_every : float
        Seconds between checkpoint writes.

    Returns
    -------
    RunResult
        ``estimate``, ``se``, ``ci(level)``, ``log_estimate``/``log_se``/``log_ci`` for
        positive targets, ``arm_table()``, ``faults``, the full ``history``,
        ``to_inference_data()``; ``reliability`` (per-arm Pareto :math:`\hat k` of importance
        weights), ``consistency`` (do the arms agree?) and ``interval_status``
        (:mod:`pmcbandit.result`). ``settings["stopped_by"]`` says why the run ended:
        ``"budget"`` (spent, or no decision fits in the time left), ``"callback"`` or
        ``"no_arm"`` (every arm quarantined or unreliable).

    Warns
    -----
    PmcBanditWarning
        When arms were quarantined or flagged unreliable, when the arms disagree, when the
        interval rests on too few observations, or when the cross-check share could not be
        kept.

    Raises
    ------
    ValueError, TypeError
        For invalid arguments, naming the parameter and the value given.

    Examples
    --------
    >>> import pmcbandit as pb
    >>> arms = [pb.CallableArm(lambda rng, s=s: rng.normal(2.0, s), name=f"sd{s}") for s in (0.5, 1.0, 3.0)]
    >>> res = pb.run(arms, policy="ucb_v", budget=pb.Pulls(300), random_seed=0, progressbar=False)
    >>> int(res.arm_table()["pulls"].argmax())
    0
    """
    result = allocate("run", arms, policy, budget=budget, combine=combine, random_seed=random_seed, reward=reward,
                      bounds=bounds, ranges=ranges, centre=centre, policy_kwargs=policy_kwargs,
                      max_in_flight=max_in_flight, pull_timeout=pull_timeout, executor=executor,
                      max_faults=max_faults, cross_check_share=cross_check_share,
                      max_decision_share=max_decision_share, progressbar=progressbar, callback=callback,
                      checkpoint=checkpoint, checkpoint_every=checkpoint_every)
    emit_warnings(result)
    return result


def check_allocation(door: str, arms, policy, *, budget, combine, random_seed, reward, bounds, ranges, centre,
                     policy_kwargs, max_in_flight, pull_timeout, executor, max_faults, cross_check_share,
                     max_decision_share, progressbar, callback, checkpoint, checkpoint_every):
    """Check every argument of an allocation door (``arms`` may be ``None``: built later by the door).

    Returns the :class:`~pmcbandit.policies.Policy` and the :class:`~pmcbandit.runtime.door.LoopOptions`.
    """
    pol = get_policy(policy, door=door, **_check_kwargs(policy_kwargs, "policy_kwargs", door))
    options = loop_options(door, budget=budget, random_seed=random_seed, max_faults=max_faults,
                           max_in_flight=max_in_flight, pull_timeout=pull_timeout, executor=executor,
                           progressbar=progressbar, callback=callback, checkpoint=checkpoint,
                           checkpoint_every=checkpoint_every)
    check_choice(combine, COMBINE_METHODS, "combine", door)
    check_choice(reward, REWARD_NAMES, "reward", door)
    check_choice(ranges, RANGE_NAMES, "ranges", door)
    _check_share(cross_check_share, "cross_check_share", door, allow_zero=True)
    _check_share(max_decision_share, "max_decision_share", door, allow_zero=False)
    return pol, options


def allocate(door: str, arms, policy, *, budget, combine, random_seed, reward, bounds, ranges, centre,
             policy_kwargs, max_in_flight, pull_timeout, executor, max_faults, cross_check_share,
             max_decision_share, progressbar, callback, checkpoint, checkpoint_every, notes=(),
             checked=None, carry=None) -> RunResult:
    """The allocation run behind :func:`run` and :func:`pmcbandit.estimate_evidence`: build the policy's
    learner and guards, drive the one loop (:func:`pmcbandit.runtime.door.drive_run`), combine. Emits
    no warning (the door does, once).

    ``checked`` is what :func:`check_allocation` returned for these arguments when the door already
    checked them (before building its arms); they are then not checked again. ``carry`` is what earlier runs on
    the same arms leave the cross-family check (:class:`~pmcbandit.runtime.guards.CheckCarry`; the slices of
    :func:`pmcbandit.compare_models`).
    """
    arms = check_arms(arms, door)
    if checked is None:
        checked = check_allocation(
            door, arms, policy, budget=budget, combine=combine, random_seed=random_seed, reward=reward,
            bounds=bounds, ranges=ranges, centre=centre, policy_kwargs=policy_kwargs, max_in_flight=max_in_flight,
            pull_timeout=pull_timeout, executor=executor, max_faults=max_faults,
            cross_check_share=cross_check_share, max_decision_share=max_decision_share, progressbar=progressbar,
            callback=callback, checkpoint=checkpoint, checkpoint_every=checkpoint_every)
    pol, options = checked
    budget = options.budget
    if bounds is not None and arms[0].log_scale:
        raise ValueError(
            f"The 'bounds' parameter of {door} must be None for log-scale arms (App. B bounds the linear "
            f"observations, which a log-scale run never forms). Got {bounds!r} instead."
        )
    rule = make_reward_rule(reward, bounds, isinstance(budget, Pulls), ranges, pol, centre, len(arms), door=door)
    learner = PolicyLearner(pol, rule, len(arms), log_scale=arms[0].log_scale)
    if ranges == "per_arm" and not learner.state.per_arm:
        raise ValueError(
            f"The 'ranges' parameter of {door} must be 'shared' or 'auto' for policy {pol.name!r}, which declares "
            f"no per_arm_ranges. Got {ranges!r} instead."
        )
    guards = Guards(arms, budget.horizon, rule.pulls_per_decision, count_pulls=isinstance(budget, Pulls),
                    cross_check_share=cross_check_share, max_decision_share=max_decision_share,
                    pinned=pol.pinned_arm is not None, adaptive=pol.adaptive, carry=carry,
                    try_every_arm=isinstance(budget, TargetSE))
    if isinstance(budget, TargetSE):
        watch = _SEWatch(combine, budget)
    else:
        watch = _CheckWatch(combine, budget) if budget.horizon is not None and guards.checks else None
    config = dict(kind="allocation", policy=pol.name, policy_params=tuple(pol.params), combine=combine,
                  reward=rule.name, ranges="per_arm" if learner.state.per_arm else "shared", centre=rule.centre_rule,
                  cross_check_share=cross_check_share, max_decision_share=max_decision_share)
    done = drive_run(door, arms, learner, random_seed, options, config=config, guards=guards, bounds=rule.bounds,
                     watch=watch)
    engine = done.engine
    return RunResult(
        arm_names=[a.name for a in arms], history=engine.history, combine=combine, log_scale=engine.log_scale,
        quarantined=engine.quarantined.copy(), settings=dict(done.settings, stopped_by=done.stopped_by),
        policy_state=engine.state, reliability=engine.reliability(final=True),
        notes=tuple(notes),
    )


def _check_kwargs(value, name: str, door: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"The '{name}' parameter of {door} must be a dict or None. Got {value!r} instead.")
    return dict(value)


def _check_share(value, name: str, door: str, allow_zero: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"The '{name}' parameter of {door} must be a real number in [0, 1]. Got {value!r} instead.")
    lower_ok = value >= 0 if allow_zero else value > 0
    if not (lower_ok and value <= 1):
        bound = "[0, 1]" if allow_zero else "(0, 1]"
        raise ValueError(f"The '{name}' parameter of {door} must be in {bound}. Got {value!r} instead.")


def _interim_result(engine, combine: str) -> RunResult:
    """The run's result so far, as a watch reads it (its interval, the arms' SEs and families)."""
    return RunResult(
        arm_names=[a.name for a in engine.arms], history=engine.history, combine=combine,
        log_scale=engine.log_scale, quarantined=engine.quarantined,
        settings={"families": [a.family for a in engine.arms]}, policy_state=None,
        reliability=engine.reliability(),
    )


class _SEWatch:
    """The SE a :class:`TargetSE` budget compares, evaluated on a deterministic schedule.

    From ``min_pulls`` on, once the pull count has grown by 2 % (at every pull up to 100), or, while the interval
    is ``"ok"`` and its SE above the target, halfway to the count where an SE falling as :math:`n^{-1/2}` would meet
    it (at most a quarter more pulls; not under ``"random_effects"``, whose between-arm spread does not fall so): an
    evaluation combines all observations (O(n)), so this keeps its amortised cost O(1) per pull, and far from the
    target few evaluations are made. An evaluation reads the interim
    result's status and SE: its consistency test leaves out the per-arm leave-one-out deviations, which only a
    warning names (:attr:`RunResult.consistency` computes them when read), and the history converts only the columns
    it reads. An SE counts only while the run's interval is one to read (:attr:`RunResult.interval_reliable`);
    otherwise it is ``inf``: a target met by an SE of too few observations, or of one estimator family with no
    cross-family check, would stop the run with an interval the result itself does not vouch for. When the interval
    lacks only the cross-family check (``"no_cross_check"``) and its SE meets the target, the guards finish the
    check (:meth:`~pmcbandit.runtime.guards.Guards.finish_check`, rule 4) and the next evaluation comes once the
    check arm has its pulls (then, or with the check arm out of play, the schedule goes on). ``next_n`` is saved in
    checkpoints (the guards' ``finish_from`` too) so a resumed run evaluates (and stops) where the uninterrupted one
    does.
    """

    def __init__(self, combine: str, budget: TargetSE):
        self.combine = combine
        self.relative = budget.relative
        self.target = budget.se
        self.next_n = budget.min_pulls  # the budget ignores the SE before min_pulls
        self.value = math.nan

    def se(self, engine) -> float:
        n = len(engine.history)
        if n >= self.next_n:
            res = _interim_result(engine, self.combine)
            status = res.interval_status
            value = self._value(res) if status in ("ok", "random_effects", "no_cross_check") else math.inf
            self.value = value if res.interval_reliable else math.inf
            guards = engine.guards
            step = max(1, n // 50)
            if status == "ok" and self.target < self.value < math.inf:  # halfway to where n^(-1/2) meets the target
                step = max(step, min(n // 4, int(n * ((self.value / self.target) ** 2 - 1.0) / 2.0)))
            if status == "no_cross_check" and value <= self.target and guards is not None:
                guards.finish_check(engine.selected, res.check_pulls_needed(), res.answer_arm)
                step = guards.check_pulls_needed(engine.blocked()) or step
            self.next_n = n + step
        return self.value

    def _value(self, res: RunResult) -> float:
        """The SE the budget compares, read from ``res`` as if its interval were reliable."""
        if res.log_scale:
            return res.log_se
        if self.relative:
            est = abs(res.estimate)
            return res.se / est if est > 0 else math.inf
        return res.se


class _CheckWatch:
    """Widens the cross-family check's share under a wall or CPU budget (:mod:`pmcbandit.runtime.guards`, rule 4).

    It evaluates the run's interval when the budget's fraction spent (wall or CPU seconds) passes each of
    :data:`WIDEN_AT`, and once
    the arm the widened share went to has the pulls it needed: while the interval lacks only the check
    (``"no_cross_check"``), the guards get the pulls each arm needs to count as a check
    (:meth:`~pmcbandit.result_messages.RunMessages.widen_pulls`); otherwise the widening ends. It reads the clock
    only when the pull count has grown by 2 %, and compares no SE (``se`` is NaN, as without a watch).
    """

    def __init__(self, combine: str, budget: Budget):
        self.combine = combine
        self.budget = budget
        self.next_n = 1
        self.value = math.nan
        self._due = 0  # the next of WIDEN_AT to pass

    def se(self, engine) -> float:
        n = len(engine.history)
        if n < self.next_n:
            return math.nan
        self.next_n = n + max(1, n // 50)
        guards = engine.guards
        # the widened arm, or the arms settling a bet, have their pulls
        done = (guards.widen_arm >= 0 and not guards.widen_pending()) or (
            guards.settle_pulls is not None and not guards.settle_pending())
        spent = self.budget.fraction(engine.progress(cpu=self.budget.uses_cpu))
        passed = self._due
        while passed < len(WIDEN_AT) and spent >= WIDEN_AT[passed]:
            passed += 1
        if not done and passed == self._due:
            return math.nan
        self._due = passed
        res = _interim_result(engine, self.combine)
        pulls = res.widen_pulls() if res.interval_status == "no_cross_check" else None
        missed = res.missed_mass
        guards.widen_check(pulls, res.answer_arm, missed.low, missed.wanted)
        return math.nan


#: Fractions of a time budget spent at which :class:`_CheckWatch` evaluates the run's interval: early enough
#: that a widened check still fits in the time left, late enough that the arms have the pulls it is judged on.
WIDEN_AT = (0.1, 0.2, 0.35, 0.5, 0.65)
