r"""The learner of an allocation run: a bandit policy and its reward rule.

:class:`PolicyLearner` is the :class:`~pmcbandit.base.Learner` that :func:`pmcbandit.run` hands to
the run loop (:mod:`pmcbandit.runtime`): an allocation policy (:mod:`pmcbandit.policies`) with its
reward rule (:mod:`pmcbandit.policies.rewards`, Neufeld et al. 2014, Thm 2 and Sec. 5). A decision
is one arm pulled ``pulls_per_decision`` times (2 for the paired reward); when its pulls are back,
``close`` computes the decision's reward and feeds it to ``policy.update``. It never ends a run by
itself (``stops = False``).

Working scale of log-scale runs. Rewards need observations on the linear scale, but evidence
estimates ``exp(obs)`` overflow. The learner feeds the reward rule :math:`x = \exp(\mathrm{obs} - s)`
with a shift :math:`s`, the first observation, raised to an observation that exceeds it by more than
:data:`MAX_LOG_GAP`. Raising ``s`` multiplies every working value by :math:`f = e^{s_{old} - s_{new}}`,
the squared-reward centre by ``f``, losses and the loss scale by :math:`f^2` and squared losses by
:math:`f^4` (:meth:`PolicyLearner.rescale`); policies see ``loss/scale``, so decisions are unchanged
(past losses that underflow to 0 were :math:`< 10^{-300}` of the new scale, i.e. 0 to double
precision anyway). The value handed to a policy whose ``update`` takes ``value=`` is on this working
scale.
"""

from __future__ import annotations

import math

import numpy as np

from pmcbandit.base import Selection
from pmcbandit.base import new_tuple as _new
from pmcbandit.policies.base import BanditState, add_pending, restrict

__all__ = ["PolicyLearner", "MAX_LOG_GAP"]


#: Largest excess of a log observation over the shift before the shift is raised. Working values then
#: stay below e^50, losses below cost * e^100 and squared losses below cost^2 * e^200, far from the
#: float64 limit (e^709) even summed over 1e9 pulls with costs of 1e6 (a gap of 300 lets squared
#: losses overflow to inf and corrupts UCB-V's variance).
MAX_LOG_GAP = 50.0


class PolicyLearner:
    """An allocation policy and its reward rule (module docstring).

    Parameters
    ----------
    policy : Policy
    rule : RewardRule
    n_arms : int
    """

    working_scale = True  # log-scale observations reach the reward rule as exp(obs - shift)
    stops = False
    halts_on_quarantine = False
    # Under a time budget the guards around the policy read the clock (durations), so a checkpoint
    # re-opens recorded decisions instead of re-making them.
    replays_exactly = False

    def __init__(self, policy, rule, n_arms: int, log_scale: bool = False):
        self.policy = policy
        self.log_scale = bool(log_scale)
        self.shift: float | None = None  # the working scale's shift (module docstring)
        self.rule = rule
        self.n_arms = n_arms
        self._state: BanditState = _init_state(policy, n_arms, rule)
        # Decisions opened and counted pending in the state, and the arm of the one decision opened last and not
        # counted yet (None): see `state`.
        self._counted = 0
        self._uncounted: int | None = None
        self._defer = not policy.update_reads_pending
        self.pulls_per_decision = rule.pulls_per_decision
        self._pulls = (self.pulls_per_decision,)  # a decision's pull counts, one arm (the same tuple every time)
        self._every: np.ndarray | None = None  # a read-only mask of every arm, seen before (choose)
        pinned = policy.pinned_arm
        self.pinned = pinned if pinned is not None and 0 <= pinned < n_arms else None
        # False once a policy update got pull info the history does not hold exactly (e.g.
        # PMC's per-path arrays): a checkpoint of this run cannot be replayed exactly.
        self.info_replayable = True

    @property
    def state(self) -> BanditState:
        """The policy's state, every open decision counted pending (:func:`~pmcbandit.policies.base.add_pending`).

        For a policy whose ``update`` reads the pending counts only through ``record_loss``
        (``update_reads_pending=False``), a decision opened while no other is open is counted only once it is read
        here or another decision is chosen: if it closes first (one decision at a time, as the serial loop runs),
        ``record_loss`` counts it, and the state after the update is the one add_pending and update would give.
        """
        if self._uncounted is not None:
            self._count_uncounted()
        return self._state

    @state.setter
    def state(self, value: BanditState) -> None:
        self._state = value
        self._uncounted = None
        self._counted = int(np.sum(value.pending))

    def _count_uncounted(self) -> None:
        self._state = add_pending(self._state, self._uncounted)
        self._uncounted = None
        self._counted += 1

    def choose(self, rng: np.random.Generator, eligible: np.ndarray) -> Selection:
        """The policy's arm among the ``eligible`` ones (it sees its state restricted to them).

        A read-only mask found to hold every arm is remembered and known again by identity: the run's engine
        hands the same one to every decision while every arm is in play.
        """
        if eligible is self._every or self.pinned is not None or self._holds_every_arm(eligible):
            if self._uncounted is not None:
                self._count_uncounted()
            return _new(Selection, ((int(self.policy.select(rng, self._state)),), self._pulls))
        idx = np.flatnonzero(eligible)
        choice = int(self.policy.select(rng, restrict(self.state, idx)))
        if not 0 <= choice < idx.size:
            raise RuntimeError(
                f"policy {self.policy.name!r} chose arm {choice} of the {idx.size} arms it was offered"
            )
        return _new(Selection, ((int(idx[choice]),), self._pulls))

    def _holds_every_arm(self, eligible: np.ndarray) -> bool:
        if np.count_nonzero(eligible) != self.n_arms:  # cheaper than eligible.all()
            return False
        if not eligible.flags.writeable and eligible.base is None:  # read-only, owning its data: no view writes it
            self._every = eligible
        return True

    def forced(self, arm: int) -> Selection:
        """The decision a guard forces on ``arm``."""
        return Selection.one(arm, self.pulls_per_decision)

    def opened(self, selection: Selection) -> None:
        """Count the decision pending (at once, or when it is read: :attr:`state`)."""
        if self._uncounted is not None:
            self._count_uncounted()
        if self._defer and not self._counted:
            self._uncounted = selection.arms[0]
        else:
            self._state = add_pending(self._state, selection.arms[0])
            self._counted += 1

    def close(self, rng: np.random.Generator, decision) -> float:
        """Feed a closed decision to the policy and return its reward (the rule of
        :mod:`pmcbandit.policies.rewards`); a decision with a faulty pull gets no reward (NaN) and
        stops counting as pending.
        """
        arm = decision.arms[0]
        if self._uncounted is not None and self._counted:
            self._count_uncounted()  # another decision is open: this one closes as counted
        if self._uncounted is None:
            self._counted -= 1
            if decision.failed:
                self._state = _release_pending(self._state, arm)
                return math.nan
        else:  # the one open decision, not counted: the update counts it (record_loss), as does a faulty one here
            self._uncounted = None
            if decision.failed:
                self._state = self._state._replace(t=self._state.t + 1)
                return math.nan
        values = self._working(decision.values) if self.log_scale else decision.values
        reward = float(self.rule.reward(values, decision.costs, arm))
        costs = decision.costs
        cost = costs[0] if len(costs) == 1 else sum(costs)
        policy = self.policy
        if policy.observes:
            value = values[0] if len(values) == 1 else sum(values) / len(values)
            recorded = decision.diagnostics
            if decision.info is None:
                info = recorded
            else:
                info = dict(decision.info)
                if self.info_replayable and not _same_info(info, recorded):
                    self.info_replayable = False
            self._state = policy.update(rng, self._state, arm, reward, cost, value=value, info=info)
        else:
            self._state = policy.update(rng, self._state, arm, reward, cost)
        if self.rule.due:
            self._state = policy.recentre(self._state, *self.rule.recentre())
        return reward

    def done(self, blocked: np.ndarray) -> bool:
        return False

    def mean_loss(self) -> np.ndarray:
        """Each arm's mean loss (its estimated :math:`\\delta_k V_k` under the paired reward)."""
        s = self._state  # pending counts do not enter
        return np.divide(s.loss_sum, s.n, out=np.full(self.n_arms, np.nan), where=s.n > 0)

    def _working(self, logs: list) -> list:
        """A decision's log observations on the working scale, ``exp(obs - shift)`` (module docstring)."""
        for obs in logs:
            if self.shift is None:
                self.shift = float(obs)
            elif obs - self.shift > MAX_LOG_GAP:
                self.rescale(math.exp(self.shift - obs))
                self.shift = float(obs)
        return [math.exp(obs - self.shift) for obs in logs]

    def rescale(self, f: float) -> None:
        """Working values were multiplied by ``f``: losses scale by ``f^2``, squared losses by
        ``f^4``; policies see ``loss/scale``, so decisions are unchanged.
        """
        f2 = f * f
        s = self._state
        self._state = s._replace(loss_sum=s.loss_sum * f2, loss_sq_sum=s.loss_sq_sum * f2 * f2, scale=s.scale * f2)
        self.rule.rescale(f)


def _init_state(policy, n_arms: int, rule) -> BanditState:
    """``policy.init`` with the rule's ranges; a policy that declares no ``per_arm_ranges`` runs shared."""
    if rule.per_arm and policy.per_arm_ranges:
        return policy.init(n_arms, scale=rule.fixed_scale, per_arm=True)
    return policy.init(n_arms, scale=rule.fixed_scale)


def _same_info(info: dict, recorded: dict) -> bool:
    """Whether a pull's ``info`` equals the diagnostics the history recorded for it."""
    for key, v in info.items():
        if key not in recorded or not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
            return False
        rec = recorded[key]
        if not (float(v) == rec or (v != v and rec != rec)):
            return False
    return True


def _release_pending(state: BanditState, arm: int) -> BanditState:
    """A decision that will never get a reward (a faulty pull) stops counting as pending."""
    if state.pending[arm] == 0:
        return state
    pending = state.pending.copy()
    pending[arm] -= 1
    return state._replace(pending=pending)
