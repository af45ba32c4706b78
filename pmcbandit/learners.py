"""Learners: what chooses a run's decisions and learns from their outcomes.

The run loop (:mod:`pmcbandit.engine`, :mod:`pmcbandit.loop`) is shared by two kinds of
learner, each holding its own immutable state:

:class:`PolicyLearner`
    an allocation policy (:mod:`pmcbandit.policies`) with its reward rule
    (:mod:`pmcbandit.rewards`, Neufeld et al. 2014, Thm 2 and Sec. 5): a decision is one arm
    pulled ``pulls_per_decision`` times (2 for the paired reward); when its pulls are back, the
    decision's reward goes to ``policy.update``. It never ends a run by itself.
:class:`IdentifierLearner`
    a best-K identification algorithm (:mod:`pmcbandit.identification`): a decision names one
    or more arms and how many pulls each (LUCB samples two arms); every observation goes to
    ``identifier.update``; the run ends when ``identifier.stop`` holds.

A third, :class:`~pmcbandit.compare.learner.ComparisonLearner`, ranks arms by efficiency for
:func:`pmcbandit.compare_samplers`. All offer ``choose(rng, eligible) -> Selection``, ``opened``/``close`` around each decision,
``done()``, ``mean_loss()`` (for the guards) and ``rescale(f)`` (log-scale working values).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from pmcbandit.identification.base import Selection
from pmcbandit.policies.base import BanditState, add_pending

__all__ = ["PolicyLearner", "IdentifierLearner"]


class PolicyLearner:
    """An allocation policy and its reward rule (module docstring).

    Parameters
    ----------
    policy : Policy
    rule : RewardRule
    n_arms : int
    """

    kind = "allocation"
    working_scale = True  # log-scale observations reach the reward rule as exp(obs - shift)

    def __init__(self, policy, rule, n_arms: int):
        self.policy = policy
        self.rule = rule
        self.n_arms = n_arms
        self.state: BanditState = _init_state(policy, n_arms, rule)
        self.pulls_per_decision = rule.pulls_per_decision
        pinned = policy.pinned_arm
        self.pinned = pinned if pinned is not None and 0 <= pinned < n_arms else None
        # False once a policy update got pull info the history does not hold exactly (e.g.
        # PMC's per-path arrays): a checkpoint of this run cannot be replayed exactly.
        self.info_replayable = True

    def choose(self, rng: np.random.Generator, eligible: np.ndarray) -> Selection:
        """The policy's arm among the ``eligible`` ones (it sees its state restricted to them)."""
        if self.pinned is not None or eligible.all():
            arm = int(self.policy.select(rng, self.state))
        else:
            idx = np.flatnonzero(eligible)
            choice = int(self.policy.select(rng, _restrict(self.state, idx, self.n_arms)))
            if not 0 <= choice < idx.size:
                raise RuntimeError(
                    f"policy {self.policy.name!r} chose arm {choice} of the {idx.size} arms it was offered"
                )
            arm = int(idx[choice])
        return Selection.one(arm, self.pulls_per_decision)

    def forced(self, arm: int) -> Selection:
        """The decision a guard forces on ``arm``."""
        return Selection.one(arm, self.pulls_per_decision)

    def opened(self, selection: Selection) -> None:
        self.state = add_pending(self.state, selection.arms[0])

    def reward(self, decision) -> float:
        """The reward of a decision whose pulls all came back valid (the rule of :mod:`pmcbandit.rewards`)."""
        return float(self.rule.reward(decision.values, decision.costs, decision.arms[0]))

    def close(self, decision, reward: float, diagnostics: tuple, raw_info, names: tuple, rng) -> None:
        """Feed a closed decision to the policy; a decision with a faulty pull gets no reward and
        stops counting as pending."""
        arm = decision.arms[0]
        if decision.failed:
            self.state = _release_pending(self.state, arm)
            return
        costs = decision.costs
        cost = costs[0] if len(costs) == 1 else sum(costs)
        if self.policy.observes:
            values = decision.values
            value = values[0] if len(values) == 1 else sum(values) / len(values)
            recorded = dict(zip(names, diagnostics))
            if raw_info is None:
                info = recorded
            else:
                info = dict(raw_info)
                if self.info_replayable and not _same_info(info, recorded):
                    self.info_replayable = False
            self.state = self.policy.update(self.state, arm, reward, cost, rng=rng, value=value, info=info)
        else:
            self.state = self.policy.update(self.state, arm, reward, cost, rng=rng)
        if self.rule.recentre_due():
            self.state = self.policy.recentre(self.state, *self.rule.recentre())

    def done(self) -> bool:
        return False

    def mean_loss(self) -> np.ndarray:
        """Each arm's mean loss (its estimated :math:`\\delta_k V_k` under the paired reward)."""
        s = self.state
        return np.divide(s.loss_sum, s.n, out=np.full(self.n_arms, np.nan), where=s.n > 0)

    def rescale(self, f: float) -> None:
        """Working values were multiplied by ``f``: losses scale by ``f^2``, squared losses by
        ``f^4``; policies see ``loss/scale``, so decisions are unchanged."""
        f2 = f * f
        s = self.state
        self.state = s._replace(loss_sum=s.loss_sum * f2, loss_sq_sum=s.loss_sq_sum * f2 * f2, scale=s.scale * f2)
        self.rule.rescale(f)


class IdentifierLearner:
    """A best-K identification algorithm (module docstring; :class:`~pmcbandit.identification.Identifier`)."""

    kind = "identification"
    working_scale = True
    pinned = None
    info_replayable = True

    def __init__(self, identifier, n_arms: int):
        self.identifier = identifier
        self.n_arms = n_arms
        self.state = identifier.init(n_arms)
        self.pulls_per_decision = 1

    def choose(self, rng: np.random.Generator, eligible: np.ndarray) -> Selection:
        return self.identifier.select(rng, self.state)

    def forced(self, arm: int) -> Selection:
        return Selection.one(arm)

    def opened(self, selection: Selection) -> None:
        pass

    def reward(self, decision) -> float:
        return math.nan

    def close(self, decision, reward: float, diagnostics: tuple, raw_info, names: tuple, rng) -> None:
        """Every valid observation of the decision, in the order its pulls came back."""
        update = self.identifier.update
        state = self.state
        for arm, value in zip(decision.value_arms, decision.values):
            state = update(state, arm, value)
        self.state = state

    def done(self) -> bool:
        return bool(self.identifier.stop(self.state))

    def mean_loss(self) -> np.ndarray:
        return np.full(self.n_arms, np.nan)

    def rescale(self, f: float) -> None:
        raise RuntimeError("identification runs work on linear-scale observations")


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


def _restrict(state: BanditState, idx: np.ndarray, n_arms: int) -> BanditState:
    """The state seen by the policy when only arms ``idx`` may be chosen.

    Every array whose first axis has length ``n_arms`` is indexed by ``idx``, also inside
    tuples, named tuples, lists and mappings held in ``state.extra``; scalars stay.
    """

    def cut(v):
        if isinstance(v, np.ndarray):
            return v[idx] if v.ndim >= 1 and v.shape[0] == n_arms else v
        if isinstance(v, tuple):
            return type(v)(*map(cut, v)) if hasattr(v, "_fields") else tuple(map(cut, v))
        if isinstance(v, list):
            return [cut(x) for x in v]
        if isinstance(v, Mapping):
            return {k: cut(x) for k, x in v.items()}
        return v

    return BanditState(*map(cut, state))


def _release_pending(state: BanditState, arm: int) -> BanditState:
    """A decision that will never get a reward (a faulty pull) stops counting as pending."""
    if state.pending[arm] == 0:
        return state
    pending = state.pending.copy()
    pending[arm] -= 1
    return state._replace(pending=pending)
