"""Uniform allocation: round-robin over the arms (the non-adaptive baseline).

The next decision goes to the arm with the fewest received-plus-pending pulls,
lowest index first, so ``n`` decisions give every arm ``floor(n/K)`` or
``ceil(n/K)`` pulls regardless of the rewards.
"""

from __future__ import annotations

import numpy as np

from pmcbandit.policies.base import Policy, init_state, record_loss, recentre_state

__all__ = ["policy"]


def policy(*, scale: float | None = None) -> Policy:
    """Uniform allocation: round-robin over the arms (module docstring)."""
    def init(n_arms: int, scale: float | None = scale, *, per_arm: bool = False):
        return init_state(n_arms, scale, per_arm=per_arm)

    def select(rng: np.random.Generator, state) -> int:
        return int(np.argmin(state.n + state.pending))

    def update(rng, state, arm, reward, cost=0.0):
        return record_loss(state, arm, reward, cost)

    return Policy("uniform", init, select, update, recentre=recentre_state, per_arm_ranges=True,
                  simulator_rule="round_robin", adaptive=False, update_reads_pending=False)
