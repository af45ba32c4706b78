r"""The identification protocol: decisions over arm subsets, a state, and the algorithm type.

A best-K identification algorithm (fixed confidence: find the K arms with the largest means with
probability at least :math:`1-\delta`, Jiang, Li & Qiao 2017, Sec. 2) is a NamedTuple of pure
functions over an immutable :class:`ArmStats`, after BlackJAX's kernels::

    state = algo.init(n_arms)
    while not algo.stop(state):
        selection = algo.select(rng, state)          # which arms, how many pulls each
        for arm, pulls in zip(*selection):
            for _ in range(pulls):
                state = algo.update(state, arm, reward_of(arm))
    algo.recommend(state)                            # the K arms, best first

Every function that draws takes the ``rng`` first. The run loop (:func:`pmcbandit.identify`)
checks ``stop`` after each decision whose pulls all came back; a budget stays a cap.
Capabilities are declared as fields (``randomised``), never discovered from names or signatures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pmcbandit.base import Selection

__all__ = ["Selection", "ArmStats", "Identifier", "KernelSpec", "MachineSpec", "init_stats", "observe",
           "empirical_means"]


class ArmStats(NamedTuple):
    """Per-arm sufficient statistics of the rewards observed so far.

    Attributes
    ----------
    n : ndarray of int64, shape (N,)
        Rewards observed per arm.
    total, total_sq : ndarray of float64, shape (N,)
        Sums of the rewards and of their squares.
    t : int
        Rewards observed in all.
    """

    n: np.ndarray
    total: np.ndarray
    total_sq: np.ndarray
    t: int


class Identifier(NamedTuple):
    r"""A best-K identification algorithm: its name, settings and pure functions.

    ``init(n_arms) -> ArmStats``; ``select(rng, state) -> Selection``;
    ``update(state, arm, reward) -> ArmStats``; ``stop(state) -> bool``;
    ``recommend(state) -> ndarray`` (the ``k`` arm indices, best first);
    ``confidence(state) -> (lower, upper)`` per-arm confidence bounds the stopping rule uses.
    ``randomised`` declares that ``select`` draws from its ``rng``; ``params`` are the settings
    a run records (``delta``, ``epsilon``, ``sigma``, ...). ``kernel(n_arms)`` gives the
    stopping-time simulator the same rule as numbers: a :class:`KernelSpec` (the LUCB family) or a
    :class:`MachineSpec` (the EXPLORE-m state machines) (:mod:`pmcbandit.identification.simulate`;
    ``None``: the algorithm cannot be simulated there). ``tolerance`` is the :math:`\epsilon` of
    the answer's guarantee: every returned arm has a mean at least :math:`\mu_{(k)} - \epsilon`
    (Kalyanakrishnan & Stone 2010's :math:`(\epsilon, m)`-optimality; 0: exactly the top ``k``).
    ``report(state) -> dict`` (optional) gives the algorithm's own progress figures (e.g.
    ``delta_hat``) and, under ``"guarantee"``, whether its guarantee holds at a stop.
    """

    name: str
    k: int
    delta: float
    init: Callable[[int], ArmStats]
    select: Callable[[np.random.Generator, ArmStats], Selection]
    update: Callable[[ArmStats, int, float], ArmStats]
    stop: Callable[[ArmStats], bool]
    recommend: Callable[[ArmStats], np.ndarray]
    confidence: Callable[[ArmStats], tuple]
    params: tuple = ()
    randomised: bool = False
    kernel: Callable | None = None
    tolerance: float = 0.0
    report: Callable | None = None


class KernelSpec(NamedTuple):
    """An algorithm's rule as numbers, for the numba kernels (:mod:`pmcbandit.identification.kernels`).

    ``rule``: :data:`~pmcbandit.identification.kernels.LUCB_BOTH` (sample both arms of the critical
    pair), ``LUCB_RANDOM`` (lil'RandLUCB's randomised choice), ``CLUCB`` or ``LIL_UCB``; ``kind``:
    the radius (``LIL`` or ``LUCB``); the rest are the radii's and rules' parameters (unused ones 0).
    """

    rule: int
    kind: int
    k: int
    omega_high: float
    omega_low: float
    sigma: float
    epsilon: float
    lucb_delta: float = 0.0
    beta: float = 0.0
    lam: float = 0.0


class MachineSpec(NamedTuple):
    """An EXPLORE-m algorithm as numbers (:mod:`pmcbandit.identification.explore_kernels`): ``spec``, its
    settings at the ``SP_*`` positions, and ``schedule``, the pulls per arm of each round.
    """

    spec: np.ndarray
    schedule: np.ndarray


def init_stats(n_arms: int) -> ArmStats:
    """Empty statistics for ``n_arms`` arms."""
    if isinstance(n_arms, bool) or not isinstance(n_arms, (int, np.integer)) or n_arms < 1:
        raise ValueError(f"The 'n_arms' parameter of init must be an int >= 1. Got {n_arms!r} instead.")
    z = np.zeros(int(n_arms))
    return ArmStats(np.zeros(int(n_arms), dtype=np.int64), z, z.copy(), 0)


def observe(state: ArmStats, arm: int, reward: float) -> ArmStats:
    """``state`` with one more ``reward`` of ``arm`` (copies only the arrays it changes)."""
    n = state.n.copy()
    total = state.total.copy()
    total_sq = state.total_sq.copy()
    n[arm] += 1
    total[arm] += reward
    total_sq[arm] += reward * reward
    return ArmStats(n, total, total_sq, state.t + 1)


def empirical_means(state: ArmStats) -> np.ndarray:
    """Per-arm mean reward (NaN for arms not yet observed)."""
    return np.divide(state.total, state.n, out=np.full(state.n.shape, np.nan), where=state.n > 0)
