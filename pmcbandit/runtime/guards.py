r"""Guards: the rules the run loop applies around a bandit policy.

A policy (:mod:`pmcbandit.policies`) is a pure bandit: it learns which arm has the smallest
:math:`\delta_k V_k` and pulls it. Four ways a run fails that no bandit policy protects against:

* **A decision that eats the budget.** Under a time budget the first decision on an expensive
  arm (an AIS arm of 8000 steps on a large data set) can take longer than the whole budget, and
  an interval from its two observations is no interval at all.
* **An arm never tried.** Thompson sampling with per-arm ranges can keep playing its first arm,
  whose normalised rewards are near 1, and never look at the others.
* **One family of estimators only.** Arms of one family share a failure mode (importance
  samplers whose proposal misses a mode of the posterior all agree on the wrong value, with
  tiny standard errors), so a run that spends everything on one family has no independent
  check of its error bar.
* **A variance estimate that looks small because it is wrong.** A cheap arm with heavy-tailed
  weights shows a small sample variance until its rare large weights come, so the policy keeps
  choosing it, for draws the combination then gives no weight.

Rules
-----
Durations are predicted from each arm's mean measured wall seconds per pull
(:attr:`pmcbandit.runtime.executors.local.Outcome.seconds`), and before its first pull from its declared
:attr:`~pmcbandit.arms.base.Arm.expected_seconds` (``None``: unknown). A decision is
``m`` pulls (2 under the paired reward). For a budget with a time horizon ``H`` (``WallSeconds``,
``CpuSeconds``, ``TargetSE(max_seconds=H)``):

1. **cap** — an arm whose predicted decision takes more than :data:`MAX_DECISION_SHARE` of ``H``
   is not chosen, unless no arm of known duration is under the cap (then only the quickest
   arms are allowed, so a run with only slow arms still makes progress). For this rule an arm's
   declared duration counts as :data:`CAP_PRIOR_PULLS` pulls beside its measured ones: a
   decision's pulls vary in duration (a slice sampler's stepping-out, a busy machine), and an arm
   sized by a timed probe to fit the cap is not excluded for good by one slow first decision,
   while an arm that keeps running over leaves once its measured pulls outweigh the declaration;
2. **fit** — no decision starts whose predicted duration exceeds the seconds left; the run ends
   when none fits, so a wall budget ends within about one pull's prediction error of ``H``;
3. **initial** — until every arm allowed by the cap has had a decision, the next decision goes to
   the untried arm with the smallest predicted duration (unknown durations last, in pool
   order): cheapest first, every arm seen before the policy chooses freely. Finishing the check
   (rule 4) comes first: once a ``TargetSE`` run's SE meets its target, the stop waits for the
   check's observations, not for the untried arms, which are the costliest (cheapest first), so
   trying them would only delay an answer the run already has.

A ``TargetSE`` budget without ``max_seconds`` has no horizon, so rules 1 and 2 do not apply, but rule 3 does,
with the untried arms taken in pool order instead of by predicted duration (no rule reads a clock there, see
*Determinism*; :func:`~pmcbandit.evidence.evidence_arms` lists its arms about cheapest first). Without it an arm
may never be tried: Thompson sampling's draw for an untried arm is uniform, and against an arm whose rewards are
near 1 it may lose every decision until the target is met, on the arms tried so far, at many times the cost the
untried arms would have needed. A ``Pulls`` budget keeps the policy's own choice (the bandit of the papers, whose
pull sequences the replicated-run simulator reproduces).

For every budget, when the arms still in play declare at least two
:attr:`~pmcbandit.arms.base.Arm.family` values:

4. **cross-check** — the *check arm* is the best arm of the families other than the leading one
   (the family with the most spending): the smallest mean loss, i.e. estimated
   :math:`\delta_k V_k` under the paired reward (untried arms by predicted duration), among the
   arms rules 1–2 allow and, under a time budget, whose :data:`CHECK_PULLS` pulls are predicted
   to fit in the share :data:`CHECK_MARGIN` times over (else in the share once; else the quickest
   arm): a check arm must reach the observations a consistency test needs within the share, and
   the prediction, made from the first pulls, and the share, of the spending rather than of the
   horizon, both err on the short side. The check arm keeps the share while it stays a candidate
   (and, under a time budget, its pulls still fit in the share once) and its mean loss is at most
   :data:`CHECK_SWITCH` times the smallest candidate's: the share is not spread over arms whose mean
   losses take turns at the minimum, but it leaves an arm first chosen unseen (by pool order or
   duration) that proves far costlier than another. While the spending on the check arm is below
   :data:`CROSS_CHECK_SHARE`
   of all spending, the next decision goes to it. One arm, not a whole family, gets the share,
   so the check accumulates the observations a consistency test needs
   (:mod:`pmcbandit.stats.consistency`) instead of spreading them over arms that never reach a
   variance estimate. Spending is counted in the budget's own currency: pulls for a
   :class:`~pmcbandit.runtime.budget.Pulls` budget (so such runs stay bit-reproducible), else the pulls'
   costs. Its price in accuracy is bounded: the check arm's observations are combined too, and
   if a fraction ``s`` of the budget goes to an arm with ``b = δV`` while the best arm has
   ``a <= b``, the inverse-variance combination's variance is at most
   :math:`1/((1-s) + s\,a/b) \le 1/(1-s)` times the best arm's alone (1.11 for ``s = 0.1``).

   *Finishing the check.* A :class:`~pmcbandit.runtime.budget.TargetSE` run stops only on an interval its
   result vouches for; once its SE, computed as if the interval were reliable, meets the target while the
   interval lacks only the cross-family check (interval status ``"no_cross_check"``, :mod:`pmcbandit.result`,
   step 4), the run's SE watch calls :meth:`Guards.finish_check`. From that decision on, every decision goes to
   a check arm while it has fewer valid pulls than it needs to count as a check (:data:`CHECK_PULLS`, or more for
   an arm whose relative SE would still exceed the result's resolution, as the watch estimates from the run so
   far and raises at each evaluation), whatever its share. That check arm is
   chosen as above, but against the family the answer rests on (the family of the arm with the largest weight in
   the combination, as the watch reads it; of the arm with the most valid pulls when the caller names none)
   rather than the family with the most spending, which may be one of costly arms that carry no weight. Pull
   counts alone do not name that family early: when the watch first meets its target, every arm may still have
   only its first pulls. At the share alone the answering arm would take nine pulls in ten that the
   stop no longer needs while the check arm collects the observations the consistency test waits for. The
   watch evaluates again when the check arm has them, and the run stops if the interval is reliable and its
   SE still meets the target; if it is not, the share rule goes on as before. The decision the finish started
   at, the family the answer rested on then (kept while the check arm's pulls overtake it) and the pulls each
   arm needs are the only new state (``finish_from``, ``finish_family``, ``finish_pulls``); a checkpoint stores
   them, so a resumed run makes the same decisions. These decisions are recorded with the reason ``cross_check``.

   *Widening the share.* Under a wall or CPU budget the share can be too small for a check arm to reach the
   resolution a check needs (:data:`pmcbandit.result_messages.CHECK_RESOLUTION`): a few annealing runs of high
   variance each, though many runs of a costlier arm would reach it in a larger share. While the interval lacks
   only the check (``"no_cross_check"``), the run's check watch (:mod:`pmcbandit.run`) calls
   :meth:`Guards.widen_check` with the valid pulls each arm needs to count as a check. The decisions then go to the
   arm of a family other than the answer's that completes those pulls at the smallest predicted cost, where that
   cost, with what the arm already spent, fits in :data:`MAX_CHECK_SHARE` of the horizon (or the cross-check share
   when it is larger) and in the seconds left, until it has them; the watch then evaluates again. While an arm holds
   the widened share, the share rule above sends nothing to the other family: the family the widening made the
   one with the most spending is the answer's, which needs no check of its own. No arm fits: the
   run goes on as before, and the result says ``"no_cross_check"`` with the budget a check needs. The price: the
   check arm takes up to :data:`MAX_CHECK_SHARE` of the budget from the answer's arm (the bound above with
   ``s = 0.4``: 1.67), besides what the share rule and the other arms' first pulls took before, paid only where the
   answer would otherwise have no check. These decisions are recorded with the reason ``cross_check``; wall-clock
   rules do not replay exactly, and a checkpoint does not store the widening (a resumed run's watch evaluates
   again).

   *Settling a bet.* An arm that misses part of the posterior can look the most efficient (its weights never
   reach the mass it misses), and the policy may give it nearly every pull while an arm whose importance weights
   sit above its upper limit has too few pulls for its bets to show it too low
   (:mod:`pmcbandit.stats.missed_mass`). At each evaluation, whatever the interval's status, the watch hands
   :meth:`Guards.widen_check` the pulls such an arm needs for a verdict at its bets' growth so far
   (:attr:`~pmcbandit.stats.missed_mass.MissedMass.wanted`); the decisions go to it, of any family, before the
   widened share, where its remaining pulls fit in the same room, and the watch evaluates again once it has them.

For every budget, when some arms' values are importance weights
(:attr:`~pmcbandit.arms.base.Arm.importance_weights`):

5. **untrusted** — an arm whose variance estimate its weights do not support yet
   (:meth:`pmcbandit.stats.psis.WeightTails.untrusted`: a Pareto :math:`\hat k` above the threshold of
   its count while it is still in play, short of draws; or, with too few weights for a
   :math:`\hat k`, log weights too spread for their number) is left to the policy only while the
   spending on such arms is below :data:`UNTRUSTED_SHARE` of all spending, and only when an arm
   whose estimate is trusted is also allowed. The policy ranks arms by their estimated
   :math:`\delta_k V_k`, and for such an arm that estimate is most often far too small: its sample
   variance misses the rare large weights that carry the target's mass (Vehtari et al. 2024,
   PSIS Sec. 3; Chatterjee & Diaconis 2018). Without the rule a cheap arm of this kind (an AIS arm
   of few annealing steps on a hard model) can take most of the budget for draws the combination
   gives no weight. Within the share it still gathers the draws on which it is judged again. The
   rule narrows the policy's choice only; forced decisions (rules 3–4) are unchanged, and the
   spending is counted as in rule 4.

Determinism. Only a time budget's rules (1–3 and the quick-check filter of rule 4) read measured
durations. Without a time horizon (``Pulls``, ``TargetSE`` without ``max_seconds``) no rule reads a
clock: rule 4 counts pulls unless every arm declares its cost (``cost_unit`` other than
``"cpu_seconds"``), and among untried check arms it takes the first in pool order. Durations
play no part there: a pull budget charges every pull alike, and an arm's ``expected_seconds`` may
itself come from a timed probe when the arm is built (the AIS arms'), so ordering by it would
make the decisions depend on the machine's load. The same seed therefore makes the same
decisions on an idle and on a loaded machine, and a checkpoint replays them exactly.

Runs in pieces. A run spent in pieces whose pulls are combined as one (the slices of
:func:`pmcbandit.compare_models`) passes each piece a :class:`CheckCarry` of the earlier ones: rule 4's share
counts their spending, the arm that held the share keeps it, and durations are predicted from their pulls too, so
the check accumulates across the pieces as in one run instead of restarting in each (where a 10 % share of a
quarter of the budget may never reach the pulls a check needs). The valid pulls the finish and the widened share
count stay the piece's own, as do the widened share's room (against the piece's horizon): the watch that asks for
them reads the piece's interval. Rules 3 and 5 and the policy start afresh in each piece.

Rule 4 prefers a check arm whose variance estimate is trusted (rule 5's mask, or ``suspect`` in the carry: too
spread for its number of weights, or failing :math:`\hat k`; or an arm whose estimate the run's check watch found
too low, :attr:`pmcbandit.RunResult.missed_mass`) when another family's arm is: the consistency test leaves out
such an arm (:mod:`pmcbandit.result`), so a share spent on it checks nothing.

Forced decisions (rules 3–4) do not consult the policy; the policy still receives their rewards.
A policy pinned to one arm (the oracle) is never overridden. Which rule chose each decision is
recorded in the history's ``reason`` column (:data:`pmcbandit.runtime.history.REASONS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["Guards", "Plan", "CheckCarry", "MAX_DECISION_SHARE", "CAP_PRIOR_PULLS", "CROSS_CHECK_SHARE", "CHECK_PULLS",
           "CHECK_MARGIN", "CHECK_SWITCH", "MAX_CHECK_SHARE", "UNTRUSTED_SHARE", "POLICY", "INITIAL", "CROSS_CHECK"]

#: Largest predicted duration of one decision, as a share of a time budget's horizon.
MAX_DECISION_SHARE = 0.1
#: Pulls the declared duration (``expected_seconds``) counts as beside the measured ones in rule 1.
CAP_PRIOR_PULLS = 2
#: Smallest share of the spending kept on families other than the leading one.
CROSS_CHECK_SHARE = 0.1
#: Pulls a check arm should reach within its share: an arm enters the consistency test with a
#: variance estimate of :data:`pmcbandit.result.MIN_CONSISTENCY_DOF` = 29 dof (30 pulls), with or
#: without a Pareto k-hat (:mod:`pmcbandit.result`, step 2).
CHECK_PULLS = 30
#: How many times over rule 4 prefers a check arm's :data:`CHECK_PULLS` pulls to fit in the share.
CHECK_MARGIN = 2.0
#: How many times a check arm's mean loss may exceed another candidate's before rule 4 leaves it for that one.
CHECK_SWITCH = 4.0
#: Largest share of a time budget's horizon a check arm may take when the check widens its share (rule 4).
MAX_CHECK_SHARE = 0.4
#: Largest share of the spending the policy may put on arms whose variance estimate is untrusted (rule 5).
UNTRUSTED_SHARE = 0.1

# Codes of the history's ``reason`` column (pmcbandit.runtime.history.REASONS).
POLICY, INITIAL, CROSS_CHECK = 0, 1, 2


class Plan(NamedTuple):
    """The next decision: a forced ``arm`` with its ``reason``, or (``arm=None``) the policy's
    choice among the arms ``eligible`` allows.
    """

    arm: int | None
    reason: int
    eligible: np.ndarray


class CheckCarry(NamedTuple):
    """What earlier runs on the same arms leave the guards (module docstring, *Runs in pieces*): per arm, its pulls,
    the cost of its valid pulls and its measured seconds (sum, count); the arm that last held rule 4's share
    (-1: none); the arms the combination of those runs found too spread or unreliable (``suspect``).
    """

    pulls: np.ndarray
    cost: np.ndarray
    seconds_sum: np.ndarray
    seconds_n: np.ndarray
    check_arm: int
    suspect: np.ndarray

    @classmethod
    def from_history(cls, arrays: dict, n_arms: int, suspect: np.ndarray) -> CheckCarry:
        """The carry of the history columns ``arrays`` (:meth:`pmcbandit.runtime.history.History.arrays`, arms
        numbered as in the next run; rows of other arms dropped beforehand) and the ``suspect`` arms.
        """
        arm = np.asarray(arrays["arm"], dtype=np.int64)
        ok = np.asarray(arrays["status"]) == 0
        seconds = np.asarray(arrays["seconds"], dtype=np.float64)
        timed = np.isfinite(seconds)
        checks = np.flatnonzero(np.asarray(arrays["reason"]) == CROSS_CHECK)
        return cls(
            pulls=np.bincount(arm, minlength=n_arms),
            cost=np.bincount(arm[ok], weights=np.asarray(arrays["cost"], dtype=np.float64)[ok], minlength=n_arms),
            seconds_sum=np.bincount(arm[timed], weights=seconds[timed], minlength=n_arms),
            seconds_n=np.bincount(arm[timed], minlength=n_arms),
            check_arm=int(arm[checks[-1]]) if checks.size else -1,
            suspect=np.asarray(suspect, dtype=bool).copy(),
        )


class Guards:
    """The guards of one run (rules in the module docstring).

    Parameters
    ----------
    arms : sequence of Arm
        Their ``family`` and ``expected_seconds`` are read once.
    horizon : float or None
        The budget's horizon in seconds (``None``: no time rules 1–3).
    try_every_arm : bool
        Rule 3 without a horizon: untried arms in pool order (for ``TargetSE`` without ``max_seconds``).
    pulls_per_decision : int
    count_pulls : bool
        Rule 4 counts pulls (``True``, for pull budgets) or costs. Without a horizon, measured
        costs (``cost_unit == "cpu_seconds"``) are never counted: pulls are (module docstring,
        *Determinism*).
    cross_check_share, max_decision_share : float
        The shares of rules 4 and 1.
    pinned : bool
        The policy always plays one arm: no rule overrides or restricts it.
    adaptive : bool
        The policy chooses by the rewards it has seen (:attr:`pmcbandit.policies.Policy.adaptive`); rule 5 narrows
        only such a policy's choice.
    carry : CheckCarry, optional
        What earlier runs on the same arms leave (module docstring, *Runs in pieces*).
    """

    def __init__(self, arms: Sequence, horizon: float | None, pulls_per_decision: int, count_pulls: bool,
                 cross_check_share: float = CROSS_CHECK_SHARE, max_decision_share: float = MAX_DECISION_SHARE,
                 pinned: bool = False, adaptive: bool = True, carry: CheckCarry | None = None,
                 try_every_arm: bool = False):
        k = len(arms)
        self.n_arms = k
        self.horizon = None if pinned else horizon
        self.initial = not pinned and (self.horizon is not None or bool(try_every_arm))
        self.per_decision = int(pulls_per_decision)
        measured = any(getattr(a, "cost_unit", "cpu_seconds") == "cpu_seconds" for a in arms)
        self.count_pulls = bool(count_pulls) or (horizon is None and measured)
        self.cross_check_share = float(cross_check_share)
        self.max_decision_share = float(max_decision_share)
        self.pinned = bool(pinned)
        names = [a.family for a in arms]
        labels = sorted({f for f in names if f is not None})
        self.families = labels
        self.family = np.array([labels.index(f) if f is not None else -1 for f in names], dtype=np.int64)
        self.checks = not pinned and len(labels) >= 2 and self.cross_check_share > 0
        weighted = any(bool(getattr(a, "importance_weights", False)) for a in arms)
        self.untrusted_rule = weighted and adaptive and not pinned
        # No rule applies without a time horizon, a second family or rule 5: the engine then skips the guards.
        self.active = self.initial or self.checks or self.untrusted_rule
        self._initial_only = self.horizon is None and not self.checks and not self.untrusted_rule
        self.expected = np.array(
            [math.nan if a.expected_seconds is None else float(a.expected_seconds) for a in arms], dtype=np.float64
        )
        self.seconds_sum = np.zeros(k)
        self.seconds_n = np.zeros(k, dtype=np.int64)
        self.spent = np.zeros(k)
        self.tried = np.zeros(k, dtype=bool)
        self.check_arm = -1  # the arm of the last rule-4 decision (-1: none yet)
        self.valid = np.zeros(k, dtype=np.int64)  # valid pulls per arm (what a consistency test counts)
        self.finish_from = -1  # the decision from which rule 4 finishes the check (-1: not finishing)
        self.finish_pulls = np.full(k, CHECK_PULLS, dtype=np.int64)  # valid pulls each arm needs to count as a check
        self.finish_family = -1  # the family the answer rested on when the finish started
        self.widen_pulls = None  # valid pulls each arm needs to count as a check, while the share widens
        self.widen_family = -1  # the family the answer rested on when the share widened
        self.widen_arm = -1  # the arm the widened share goes to (-1: none chosen)
        self.settle_pulls = None  # valid pulls arms need to settle a bet on another arm's estimate (None: none)
        self.suspect = None  # arms earlier runs found too spread or unreliable (None: none)
        self.carried = np.zeros(k)  # the spending of earlier runs (in self.spent)
        if carry is not None:
            self.carried = np.asarray(carry.pulls if self.count_pulls else carry.cost, dtype=np.float64).copy()
            self.spent += self.carried
            self.seconds_sum += carry.seconds_sum
            self.seconds_n += carry.seconds_n
            self.check_arm = int(carry.check_arm)
            self.suspect = carry.suspect.copy() if carry.suspect.any() else None

    # --- bookkeeping ----------------------------------------------------------------
    def dispatched(self, arm: int, reason: int = POLICY) -> None:
        """A decision on ``arm`` was dispatched, chosen by ``reason`` (a replay passes the recorded one)."""
        self.tried[arm] = True
        if reason == CROSS_CHECK:
            self.check_arm = arm

    def idle(self) -> bool:
        """Whether no rule can apply to a later decision: no time horizon, no cross-family check, no rule 5, and
        every arm has had its first decision (rule 3). Nothing the guards count is read after that.
        """
        return self._initial_only and bool(self.tried.all())

    def observe(self, arm: int, seconds: float, cost: float) -> None:
        """A pull of ``arm`` came back after ``seconds`` (wall) with ``cost`` (NaN if it failed)."""
        if cost == cost:
            self.valid[arm] += 1
        if seconds == seconds:
            self.seconds_sum[arm] += seconds
            self.seconds_n[arm] += 1
        if self.count_pulls:
            self.spent[arm] += 1.0
        elif cost == cost:
            self.spent[arm] += cost

    def finish_check(self, decision: int, pulls=None, answering: int | None = None) -> None:
        """Finish the cross-family check from ``decision`` on (module docstring, rule 4); the first call's decision
        counts. ``pulls`` (per arm, optional) raises the valid pulls an arm needs to count as a check above
        :data:`CHECK_PULLS` (a check arm too coarse for the answer needs more, :mod:`pmcbandit.result`).
        ``answering`` is the arm the answer rests on (the largest weight in the combination); without it, or for an
        arm of no family, the arm with the most valid pulls stands in.
        """
        if not self.checks:
            return
        if self.finish_from < 0:
            self.finish_from = int(decision)
            known = answering is not None and self.family[int(answering)] >= 0
            self.finish_family = int(self.family[int(answering)]) if known else self._answering_family()
        if pulls is not None:
            self.finish_pulls = np.maximum(self.finish_pulls, np.asarray(pulls, dtype=np.int64))

    def widen_check(self, pulls, answering: int, missed=None, settle=None) -> None:
        """Widen the check's share under a time budget (module docstring, rule 4): ``pulls`` per arm are the valid
        pulls each needs to count as a check (0 for an arm that cannot be one; ``None`` ends the widening),
        ``answering`` the arm the answer rests on. A later call replaces both. ``missed`` (a mask, or None) marks the
        arms whose estimate the run so far shows too low (:attr:`pmcbandit.RunResult.missed_mass`): from then on a
        trusted candidate goes before them for the check's share, as before an arm an earlier piece found unreliable.
        ``settle`` (per arm, or None) holds the valid pulls an arm whose importance weights sit above another arm's
        upper limit needs for its bets to decide whether that arm is too low
        (:attr:`~pmcbandit.stats.missed_mass.MissedMass.wanted`); a later call replaces it.
        """
        if missed is not None and np.any(missed):
            missed = np.asarray(missed, dtype=bool)
            self.suspect = missed.copy() if self.suspect is None else self.suspect | missed
        settle = None if settle is None or not self.checks or self.horizon is None else np.asarray(settle, np.int64)
        self.settle_pulls = settle.copy() if settle is not None and settle.any() else None
        if pulls is None or not self.checks or self.horizon is None or self.family[int(answering)] < 0:
            self.widen_pulls, self.widen_arm = None, -1
            return
        self.widen_pulls = np.asarray(pulls, dtype=np.int64).copy()
        self.widen_family = int(self.family[int(answering)])
        self.widen_arm = -1

    def widen_pending(self) -> bool:
        """Whether the widened share still has pulls to make (the watch evaluates again once it has none)."""
        return self.widen_arm >= 0 and self.valid[self.widen_arm] < self.widen_pulls[self.widen_arm]

    def settle_pending(self) -> bool:
        """Whether an arm asked to settle a bet still has pulls to make (the watch evaluates again once none has)."""
        return self.settle_pulls is not None and bool((self.valid < self.settle_pulls).any())

    def check_pulls_needed(self, blocked: np.ndarray) -> int:
        """Valid pulls an arm in play outside the family the answer rests on still needs to reach
        :data:`CHECK_PULLS` (the fewest over such arms); 0 when not finishing the check or without such an arm.
        """
        if self.finish_from < 0:
            return 0
        others = ~blocked & (self.family >= 0) & (self.family != self.finish_family)
        if not others.any():
            return 0
        return int(np.min(np.maximum(0, self.finish_pulls[others] - self.valid[others])))

    def predicted(self, prior_pulls: int = 0) -> np.ndarray:
        """Predicted wall seconds of one decision per arm (NaN: unknown): the measured pulls' mean, with the declared
        duration counted as ``prior_pulls`` pulls beside them (rule 1 passes :data:`CAP_PRIOR_PULLS`); the declared
        duration alone before the first pull.
        """
        declared = np.isfinite(self.expected)
        n = self.seconds_n + np.where(declared, prior_pulls, 0)
        total = self.seconds_sum + np.where(declared, prior_pulls * np.nan_to_num(self.expected), 0.0)
        mean = np.divide(total, n, out=np.full(self.n_arms, np.nan), where=n > 0)
        return self.per_decision * np.where(self.seconds_n > 0, mean, self.expected)

    # --- the rules --------------------------------------------------------------------
    def plan(self, blocked: np.ndarray, seconds_left: float | None, mean_loss: np.ndarray,
             untrusted: np.ndarray | None = None, decision: int = 0) -> Plan | None:
        """The next decision, or ``None`` when no arm may be chosen (the run ends).

        ``blocked`` marks arms out of play (quarantined, unreliable); ``mean_loss`` is each arm's
        mean loss in the policy's state (NaN before its first reward); ``untrusted`` marks the arms of
        rule 5 (``None``: none); ``decision`` is the index of the decision planned (rule 4's finish).
        """
        open_ = ~blocked
        if self.pinned:
            return Plan(None, POLICY, open_) if open_.any() else None
        eligible = open_.copy()
        predicted = self.predicted()
        if self.horizon is not None:
            capped = self.predicted(CAP_PRIOR_PULLS)
            known = eligible & np.isfinite(capped)
            over = known & (capped > self.max_decision_share * self.horizon)
            if known.any() and not (known & ~over).any():
                # every arm of known duration is over the cap: keep only the quickest
                over &= capped > np.min(capped[known])
            eligible &= ~over
            if seconds_left is not None:
                eligible &= ~(np.isfinite(predicted) & (predicted > seconds_left))
        if not eligible.any():
            return None
        suspect = untrusted if self.suspect is None else self.suspect if untrusted is None else self.suspect | untrusted
        if self.checks and 0 <= self.finish_from <= decision:
            arm = self._check_arm(open_, eligible, predicted, mean_loss, suspect, finishing=True, share=False)
            if arm is not None:
                return Plan(arm, CROSS_CHECK, eligible)
        if self.initial:
            untried = eligible & ~self.tried
            if untried.any():
                first = _quickest(untried, predicted) if self.horizon is not None else int(np.flatnonzero(untried)[0])
                return Plan(first, INITIAL, eligible)
        if self.settle_pulls is not None:
            arm = self._settling_arm(eligible, predicted, seconds_left)
            if arm is not None:
                return Plan(arm, CROSS_CHECK, eligible)
        widening = self.widen_pulls is not None
        if widening:
            arm = self._widened_arm(eligible, predicted, seconds_left)
            if arm is not None:
                return Plan(arm, CROSS_CHECK, eligible)
        if self.checks and not (widening and self.widen_arm >= 0):
            arm = self._check_arm(open_, eligible, predicted, mean_loss, suspect)
            if arm is not None:
                return Plan(arm, CROSS_CHECK, eligible)
        if untrusted is not None and self.untrusted_rule:
            eligible = self._trusted_first(eligible, untrusted)
        return Plan(None, POLICY, eligible)

    def _trusted_first(self, eligible: np.ndarray, untrusted: np.ndarray) -> np.ndarray:
        """Rule 5: ``eligible`` less the untrusted arms once their spending reaches the share, where a trusted arm
        is eligible.
        """
        if not (eligible & untrusted).any() or not (eligible & ~untrusted).any():
            return eligible
        total = self.spent.sum()
        if self.spent[untrusted].sum() < UNTRUSTED_SHARE * total:
            return eligible
        return eligible & ~untrusted

    def _check_arm(self, open_, eligible, predicted, mean_loss, untrusted, finishing: bool = False,
                   share: bool = True) -> int | None:
        """Rule 4's arm when ``finishing`` the check and it has fewer valid pulls than it needs, or (with ``share``)
        when its share of the spending is below the floor; else None.
        """
        in_family = open_ & (self.family >= 0)
        if len(np.unique(self.family[in_family])) < 2:
            return None
        counted = self.family >= 0
        spent = np.bincount(self.family[counted], weights=self.spent[counted], minlength=len(self.families))
        total = spent.sum()
        if total <= 0:
            return None
        if finishing:
            arm = self._pick(self.finish_family, eligible, predicted, mean_loss, untrusted)
            if arm is not None and self.valid[arm] < self.finish_pulls[arm]:
                return arm
        if not share:
            return None
        arm = self._pick(int(np.argmax(spent)), eligible, predicted, mean_loss, untrusted)
        if arm is None or self.spent[arm] >= self.cross_check_share * total:
            return None
        return arm

    def _widened_arm(self, eligible, predicted, seconds_left) -> int | None:
        """The arm the widened share goes to (module docstring, rule 4), or None: once chosen, kept while it still
        fits; else the arm outside the answer's family that completes its pulls at the smallest predicted cost
        within the room.
        """
        left, cost, room = self._room_for(self.widen_pulls, predicted, seconds_left)
        fits = (eligible & (self.family >= 0) & (self.family != self.widen_family) & (self.widen_pulls > 0)
                & (cost <= room))
        arm = self.widen_arm
        if arm < 0 or not fits[arm]:
            if not fits.any():
                self.widen_arm = -1
                return None
            arm = self.widen_arm = int(np.argmin(np.where(fits, cost, np.inf)))
        return arm if left[arm] > 0 else None

    def _settling_arm(self, eligible, predicted, seconds_left) -> int | None:
        """The arm whose bets are to be settled (:meth:`widen_check`'s ``settle``) with the fewest pulls left, of any
        family, where they fit in the room the widened share has (rule 4); None when none does.
        """
        left, cost, room = self._room_for(self.settle_pulls, predicted, seconds_left)
        fits = eligible & (left > 0) & (cost <= room)
        return int(np.argmin(np.where(fits, cost, np.inf))) if fits.any() else None

    def _room_for(self, pulls, predicted, seconds_left):
        """Per arm, the valid pulls still missing of ``pulls``, their predicted cost, and the room the widened share
        has for them: :data:`MAX_CHECK_SHARE` of the horizon (or the cross-check share when larger) less what this
        run spent, and at most the seconds left.
        """
        left = np.maximum(0, pulls - self.valid)
        per_pull = predicted / self.per_decision
        cost = np.where(np.isfinite(per_pull), left * per_pull, np.inf)
        room = max(MAX_CHECK_SHARE, self.cross_check_share) * self.horizon - (self.spent - self.carried)
        if seconds_left is not None:
            room = np.minimum(room, seconds_left)
        return left, cost, room

    def _answering_family(self) -> int:
        """The family of the arm with the most valid pulls: the one the answer rests on, whose arms the consistency
        test already compares, where the family with the most spending may be one of costly arms that carry no
        weight.
        """
        counted = self.family >= 0
        return int(self.family[int(np.argmax(np.where(counted, self.valid, -1)))])

    def _pick(self, leader: int, eligible, predicted, mean_loss, untrusted) -> int | None:
        """The check arm against the ``leader`` family (module docstring, rule 4), or None without a candidate;
        ``untrusted`` (or None) marks the arms a trusted candidate goes before.
        """
        counted = self.family >= 0
        candidates = eligible & counted & (self.family != leader)
        if not candidates.any():
            return None
        if untrusted is not None and (candidates & ~untrusted).any():
            candidates &= ~untrusted  # an arm the consistency test would leave out is no check while another is
        kept = self.check_arm if self.check_arm >= 0 and candidates[self.check_arm] else -1
        if self.horizon is not None:
            per_pull = predicted / self.per_decision
            room = self.cross_check_share * self.horizon
            roomy = candidates & (per_pull * CHECK_PULLS * CHECK_MARGIN <= room)
            quick = candidates & (per_pull * CHECK_PULLS <= room)
            if kept >= 0 and not quick[kept]:
                kept = -1
            candidates = (roomy if roomy.any() else quick if quick.any()
                          else _only(candidates, _quickest(candidates, predicted)))
            order = predicted
        else:
            order = np.zeros(self.n_arms)  # pool order (module docstring, *Determinism*)
        seen = candidates & np.isfinite(mean_loss)
        best = int(np.argmin(np.where(seen, mean_loss, np.inf))) if seen.any() else -1
        if kept >= 0 and best >= 0 and np.isfinite(mean_loss[kept]) and mean_loss[best] > 0 \
                and mean_loss[kept] > CHECK_SWITCH * mean_loss[best]:
            kept = -1  # far costlier than another candidate: chosen unseen, or before the first pulls told
        if kept >= 0:
            return kept  # still a candidate (under a time budget: its pulls still fit in the share once)
        if best >= 0:
            return best
        return _quickest(candidates, order)


def _only(mask: np.ndarray, arm: int) -> np.ndarray:
    out = np.zeros_like(mask)
    out[arm] = True
    return out


def _quickest(mask: np.ndarray, predicted: np.ndarray) -> int:
    """The arm of ``mask`` with the smallest prediction (unknown ones last, in pool order)."""
    idx = np.flatnonzero(mask)
    pred = predicted[idx]
    finite = np.isfinite(pred)
    if finite.any():
        return int(idx[finite][np.argmin(pred[finite])])
    return int(idx[0])
