"""Replicated-run simulator for synthetic experiments (Neufeld et al. 2014, Sec. 6.1).

Thousands of seeded bandit runs of 10^5-10^6 rounds on cheap synthetic arms, with
the decisions ``pmcbandit.run`` would make (see :mod:`pmcbandit.simulate.core`)::

    from pmcbandit.simulate import ScaledBernoulli, simulate
    arms = ScaledBernoulli(mid=0.5, scale=[0.4, 0.8])        # App. E, mu = 0.5
    res = simulate("ucb1", arms, n_rounds=10**5, n_replications=1000,
                   random_seed=1, bounds=(0, 1), n_jobs=2)
    res.pulls.mean(axis=0)             # E[T_k(n)]
    res.regret_from_pulls()            # Thm 1: sum_k E[T_k(t)] (V_k - V*)

May import: the helpers, :mod:`pmcbandit.stats`, :mod:`pmcbandit.policies` (the rules it replays)
and :mod:`pmcbandit.runtime` (the streams the live loop draws from); never the doors.
"""

from pmcbandit.simulate.arms import Gaussian, RewardMatrix, ScaledBernoulli, SyntheticArms
from pmcbandit.simulate.core import SimulationResult, log_checkpoints, replication_generators, simulate

__all__ = [
    "simulate",
    "SimulationResult",
    "replication_generators",
    "log_checkpoints",
    "SyntheticArms",
    "ScaledBernoulli",
    "Gaussian",
    "RewardMatrix",
]
