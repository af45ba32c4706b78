"""Oracle: always pull one given arm (a fixed-estimator baseline for benchmarks).

Run with the arm that is best in hindsight, it gives the MSE the regret of the
adaptive policies is measured against (Neufeld et al. 2014, Sec. 3).
"""

from __future__ import annotations

import numbers

import numpy as np

from pmcbandit.policies.base import Policy, init_state, record_loss, recentre_state

__all__ = ["policy"]


def policy(arm: int = 0, *, scale: float | None = None) -> Policy:
    """The oracle policy: always play ``arm`` (the benchmark allocation of Neufeld et al. 2014, Sec. 6)."""
    if isinstance(arm, bool) or not isinstance(arm, numbers.Integral) or arm < 0:
        raise ValueError(f"The 'arm' parameter of oracle must be an int >= 0. Got {arm!r} instead.")
    fixed = int(arm)

    def init(n_arms: int, scale: float | None = scale, *, per_arm: bool = False):
        if fixed >= n_arms:
            raise ValueError(
                f"The 'arm' parameter of oracle must be < n_arms={n_arms}. Got {fixed!r} instead."
            )
        return init_state(n_arms, scale, per_arm=per_arm)

    def select(rng: np.random.Generator, state) -> int:
        return fixed

    def update(rng, state, arm, reward, cost=0.0):
        return record_loss(state, arm, reward, cost)

    return Policy(f"oracle-{fixed}", init, select, update, recentre=recentre_state, pinned_arm=fixed,
                  per_arm_ranges=True, simulator_rule="fixed", update_reads_pending=False)
