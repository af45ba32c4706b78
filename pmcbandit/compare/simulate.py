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

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pmcbandit.compare import efficiency

__all__ = ["SimulatedComparison", "simulate_comparison"]


class SimulatedComparison(NamedTuple):
    """Pulls made (two per pair), the recommendation (best first), and whether the rule stopped."""

    pulls: int
    recommended: np.ndarray
    stopped: bool


def simulate_comparison(rule: efficiency.EfficiencyRule, draw_pair: Callable, rng: np.random.Generator, *,
                        protocol: str = "lucb", max_pairs: int = 10**6) -> SimulatedComparison:
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
    """
    if protocol not in ("lucb", "fixed"):
        raise ValueError(f"The 'protocol' parameter of simulate_comparison must be 'lucb' or 'fixed'. "
                         f"Got {protocol!r} instead.")
    state = efficiency.init(rule)
    every = np.ones(rule.n_arms, dtype=bool)
    pairs = 0
    done = efficiency.stop if protocol == "lucb" else efficiency.all_separated
    while pairs < max_pairs:
        if protocol == "fixed":
            if state.pairs.min() >= rule.min_pairs and done(rule, state, every):
                return SimulatedComparison(2 * pairs, efficiency.recommend(rule, state, every), True)
            arms = range(rule.n_arms)
        else:
            if done(rule, state, every):
                return SimulatedComparison(2 * pairs, efficiency.recommend(rule, state, every), True)
            arms = efficiency.select(rule, rng, state, every).arms
        for arm in arms:
            state = efficiency.update(rule, state, arm, *draw_pair(rng, arm))
            pairs += 1
    return SimulatedComparison(2 * pairs, efficiency.recommend(rule, state, every), False)
