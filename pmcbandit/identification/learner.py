"""The learner of an identification run: a best-K algorithm driven by the run loop.

:class:`IdentifierLearner` is the :class:`~pmcbandit.base.Learner` :func:`pmcbandit.identify` hands
to the run loop (:mod:`pmcbandit.runtime`): a decision names one or more arms and how many pulls each
(LUCB samples two arms); every valid observation goes to ``identifier.update``; the run ends when
``identifier.stop`` holds (``stops = True``), evaluated once per closed decision.
"""

from __future__ import annotations

import math

import numpy as np

from pmcbandit.base import Selection

__all__ = ["IdentifierLearner"]


class IdentifierLearner:
    """A best-K identification algorithm (module docstring; :class:`~pmcbandit.identification.Identifier`)."""

    stops = True
    # An arm that can no longer be pulled leaves the algorithm's answer unfounded: the run stops.
    halts_on_quarantine = True
    replays_exactly = True  # the algorithms read no clock
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

    def close(self, rng: np.random.Generator, decision) -> float:
        """Every valid observation of the decision, in the order its pulls came back; no reward."""
        update = self.identifier.update
        state = self.state
        for arm, value in zip(decision.value_arms, decision.values):
            state = update(state, arm, value)
        self.state = state
        return math.nan

    def done(self, blocked: np.ndarray) -> bool:
        return bool(self.identifier.stop(self.state))

    def mean_loss(self) -> np.ndarray:
        return np.full(self.n_arms, np.nan)

