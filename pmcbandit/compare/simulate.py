"""Run the efficiency rule on simulated arms, without the run loop: for error-rate checks and benchmarks.

Two protocols share the same confidence sequences (:mod:`pmcbandit.compare.efficiency`):

``"lucb"``
    the rule :func:`pmcbandit.compare_samplers` uses (pairs of the least-sampled arm until each
    has ``min_pairs``, then a pair of each LUCB arm), stopping when the top ``k`` separate;
``"fixed"``
    the fixed-allocation protocol: a pair of every arm per round until every two arms' intervals
    are disjoint (:func:`~pmcbandit.compare.efficiency.all_separated`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np

from pmcbandit.compare import efficiency

__all__ = ["SimulatedComparison", "simulate_comparison"]


class SimulatedComparison(NamedTuple):
    """Pulls made (two per pair), the recommendation (best first), whether the rule stopped, the
    total cost of the pulls (as ``draw_pair`` reported them), and the rule's final state (its
    intervals: :func:`~pmcbandit.compare.efficiency.log_efficiency`).
    """

    pulls: int
    recommended: np.ndarray
    stopped: bool
    cost: float = 0.0
    state: efficiency.EfficiencyState | None = None


def simulate_comparison(rule: efficiency.EfficiencyRule, draw_pair: Callable, rng: np.random.Generator, *,
                        protocol: str = "lucb", max_pairs: int = 10**6,
                        max_cost: float = math.inf) -> SimulatedComparison:
    """One comparison on simulated arms.

    Parameters
    ----------
    rule : EfficiencyRule
    draw_pair : callable
        ``draw_pair(rng, arm) -> (x1, x2, c1, c2)``: two independent estimates of ``arm`` and their costs.
    rng : numpy.random.Generator
        Feeds both the draws and the rule's tie-breaks.
    protocol : {"lucb", "fixed"}
    max_pairs : int
        Cap on the pairs in all; the rule then has not stopped.
    max_cost : float
        Cap on the total cost; no pair starts once it is reached.
    """
    if protocol not in ("lucb", "fixed"):
        raise ValueError(f"The 'protocol' parameter of simulate_comparison must be 'lucb' or 'fixed'. "
                         f"Got {protocol!r} instead.")
    algorithm = efficiency.efficiency_lucb(rule)
    state = algorithm.init()
    every = np.ones(rule.n_arms, dtype=bool)
    pairs = 0
    cost = 0.0
    done = algorithm.stop if protocol == "lucb" else partial(efficiency.all_separated, rule)
    while pairs < max_pairs and cost < max_cost:
        if protocol == "fixed":
            if state.pairs.min() >= rule.min_pairs and done(state, every):
                return SimulatedComparison(2 * pairs, algorithm.recommend(state, every), True, cost, state)
            arms = range(rule.n_arms)
        else:
            if done(state, every):
                return SimulatedComparison(2 * pairs, algorithm.recommend(state, every), True, cost, state)
            arms = algorithm.select(rng, state, every).arms
        for arm in arms:
            x1, x2, c1, c2 = draw_pair(rng, arm)
            state = algorithm.update(state, arm, x1, x2, c1, c2)
            pairs += 1
            cost += c1 + c2
    return SimulatedComparison(2 * pairs, algorithm.recommend(state, every), False, cost, state)
