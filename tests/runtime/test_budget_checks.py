"""How often the run loop asks a budget whether it is spent: a pull budget (``pulls_to_exhaust``) only once its
pulls are in, any other budget before every decision. Counted, so the test reads no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.runtime.budget import Budget

pytestmark = pytest.mark.filterwarnings("ignore::pmcbandit.exceptions.NoGuaranteeWarning")


def _arms():
    return [pb.CallableArm(lambda rng, m=m: m + rng.standard_normal(), name=f"a{m}", cost=1.0) for m in range(3)]


@dataclass(frozen=True)
class _CountingPulls(pb.Pulls):
    asked: list = field(default_factory=list)

    def exhausted(self, p):
        self.asked.append(p.pulls)
        return super().exhausted(p)


@dataclass(frozen=True)
class _Decisions(Budget):
    """A budget of ``n`` pulls that declares no floor: asked before every decision."""

    n: int
    asked: list = field(default_factory=list)
    uses_cpu = False

    def exhausted(self, p):
        self.asked.append(p.pulls)
        return p.pulls >= self.n


@pytest.mark.parametrize("reward", ["squared", "paired"])
def test_a_pull_budget_is_asked_once_its_pulls_are_in(reward):
    budget = _CountingPulls(40)
    assert budget.pulls_to_exhaust == 40
    res = pb.run(_arms(), policy="ucb1", budget=budget, reward=reward, random_seed=1, progressbar=False)
    assert len(res.history) == 40 and res.stopped_by == "budget"
    assert budget.asked == [40]


def test_a_budget_without_a_floor_is_asked_before_every_decision_and_ends_the_run_alike():
    budget = _Decisions(40)
    assert budget.pulls_to_exhaust is None
    res = pb.run(_arms(), policy="ucb1", budget=budget, reward="squared", random_seed=1, progressbar=False)
    assert budget.asked == list(range(41))  # one pull per decision
    same = pb.run(_arms(), policy="ucb1", budget=_CountingPulls(40), reward="squared", random_seed=1,
                  progressbar=False)
    for name in ("arm", "pull_index", "obs", "reward"):
        np.testing.assert_array_equal(res.history.column(name), same.history.column(name))


def test_a_callback_sees_every_pull_while_the_budget_is_not_asked():
    seen = []
    budget = _CountingPulls(25)
    pb.run(_arms(), policy="ucb1", budget=budget, reward="squared", random_seed=2, progressbar=False,
           callback=lambda progress, history: seen.append((progress.pulls, len(history))) and False)
    assert seen == [(k, k) for k in range(1, 26)] and budget.asked == [25]
