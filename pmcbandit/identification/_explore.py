"""What the EXPLORE-m algorithms share: argument checks, their state and the Identifier they build.

Each algorithm (DIRECT, INCREMENTAL, HALVING, ADAPT, OCBA-m, RACING; one module each) is a
:class:`~pmcbandit.identification.base.MachineSpec` run by the numba machine of
:mod:`pmcbandit.identification.explore_kernels`; this module wraps that machine in the
:class:`~pmcbandit.identification.base.Identifier` protocol. The state is immutable from the
outside: ``update`` copies the arrays before the machine changes them.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from pmcbandit.identification import explore_kernels as ek
from pmcbandit.identification._lucb import check_k
from pmcbandit.identification.base import Identifier, MachineSpec, Selection

__all__ = ["MachineState", "check_explore", "check_width", "machine_identifier", "make_spec"]


class MachineState(NamedTuple):
    """An EXPLORE-m algorithm's state (:mod:`pmcbandit.identification.explore_kernels`)."""

    ints: np.ndarray
    reals: np.ndarray
    scal: np.ndarray

    @property
    def n(self) -> np.ndarray:
        """Rewards observed per arm."""
        return self.ints[ek.I_N]

    @property
    def total(self) -> np.ndarray:
        """Sum of each arm's rewards."""
        return self.reals[ek.R_TOTAL]

    @property
    def t(self) -> int:
        """Rewards observed in all."""
        return int(self.scal[ek.SC_T])


def check_explore(k, delta, epsilon, door: str, *, positive_epsilon: bool) -> tuple[int, float, float]:
    """``k >= 1`` (``< n`` is checked at ``init``), ``delta`` in (0, 1), ``epsilon >= 0`` (``> 0`` for the
    algorithms whose sample sizes divide by it).
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"The 'k' parameter of {door} must be an int >= 1. Got {k!r} instead.")
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0.0 < delta < 1.0:
        raise ValueError(f"The 'delta' parameter of {door} must be in (0, 1). Got {delta!r} instead.")
    if epsilon is None or isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) \
            or not (0.0 <= epsilon < math.inf) or (positive_epsilon and epsilon == 0):
        need = "a finite real > 0" if positive_epsilon else "a finite real >= 0"
        raise ValueError(f"The 'epsilon' parameter of {door} must be {need} (the tolerance of "
                         f"(epsilon, m)-optimality, in reward units). Got {epsilon!r} instead.")
    return int(k), float(delta), float(epsilon)


def check_width(reward_range, door: str) -> float:
    """The width ``b - a`` of the rewards' range, which the bounds of these algorithms need."""
    if reward_range is None or isinstance(reward_range, bool) or not isinstance(reward_range, numbers.Real) \
            or not 0.0 < reward_range < math.inf:
        raise ValueError(f"The 'reward_range' parameter of {door} must be the finite width b - a > 0 of the "
                         f"rewards' range (its bounds need it). Got {reward_range!r} instead.")
    return float(reward_range)


def make_spec(rule: int, k: int, epsilon: float, delta: float, width: float, *, policy: int = 0, cap: float = 0.0,
              radius: float = 0.0, initial: float = 0.0, rounds: float = 0.0, stop: float = 0.0,
              schedule=(0.0,)) -> MachineSpec:
    """A :class:`MachineSpec` with the settings at their ``SP_*`` positions."""
    spec = np.zeros(ek.SPEC_SIZE)
    spec[ek.SP_RULE], spec[ek.SP_M], spec[ek.SP_EPS], spec[ek.SP_DELTA] = rule, k, epsilon, delta
    spec[ek.SP_WIDTH], spec[ek.SP_POLICY], spec[ek.SP_CAP], spec[ek.SP_RADIUS] = width, policy, cap, radius
    spec[ek.SP_INIT], spec[ek.SP_ROUNDS], spec[ek.SP_STOP] = initial, rounds, stop
    return MachineSpec(spec, np.asarray(schedule, dtype=np.float64))


def machine_identifier(name: str, k: int, delta: float, epsilon: float, params: tuple, spec_for,
                       randomised: bool, door: str) -> Identifier:
    """An :class:`Identifier` running the machine ``spec_for(n_arms) -> MachineSpec``."""
    specs: dict[int, MachineSpec] = {}

    def machine(n_arms: int) -> MachineSpec:
        if n_arms not in specs:
            specs[n_arms] = spec_for(n_arms)
        return specs[n_arms]

    def init(n_arms: int) -> MachineState:
        check_k(k, n_arms, door)
        m = machine(n_arms)
        return MachineState(*ek.new_state(m.spec, m.schedule, n_arms))

    def select(rng, state: MachineState):
        m = machine(state.ints.shape[1])
        u = rng.random() if ek.wants_uniform(m.spec, state.scal) else 0.0
        out = np.empty(state.ints.shape[1], dtype=np.int64)
        count = ek.select(m.spec, m.schedule, state.ints, state.reals, state.scal, u, out,
                          np.empty(state.ints.shape[1]))
        if count == 0:
            raise RuntimeError(f"{name} has no arm to pull: select was called after its stopping rule held")
        return Selection(tuple(int(a) for a in out[:count]), (1,) * count)

    def update(state: MachineState, arm: int, reward: float) -> MachineState:
        m = machine(state.ints.shape[1])
        ints, reals, scal = state.ints.copy(), state.reals.copy(), state.scal.copy()
        ek.observe(m.spec, m.schedule, ints, reals, scal, int(arm), float(reward))
        return MachineState(ints, reals, scal)

    def stop(state: MachineState) -> bool:
        m = machine(state.ints.shape[1])
        return bool(ek.stopped(m.spec, state.ints, state.reals, state.scal,
                               np.empty(state.ints.shape[1], dtype=np.int64)))

    def recommend(state: MachineState) -> np.ndarray:
        m = machine(state.ints.shape[1])
        out = np.empty(state.ints.shape[1], dtype=np.int64)
        return out[: ek.recommend_into(m.spec, state.ints, state.reals, out)].copy()

    def confidence(state: MachineState):
        return machine_bounds(machine(state.ints.shape[1]).spec, state)

    def report(state: MachineState) -> dict:
        spec = machine(state.ints.shape[1]).spec
        rule = int(spec[ek.SP_RULE])
        if rule in (ek.ADAPT, ek.OCBA_M):
            return {"delta_hat": float(state.scal[ek.SC_DHAT]), "cutoff": float(state.scal[ek.SC_CUT])}
        if rule == ek.RACING:
            within = bool(state.scal[ek.SC_WITHIN])
            return {"rounds": int(state.scal[ek.SC_ROUND]), "within_rounds": within, "guarantee": within}
        if rule == ek.INCREMENTAL:
            return {"selected": int(state.scal[ek.SC_PICKED])}
        return {"rounds": int(state.scal[ek.SC_ROUND])}

    return Identifier(name, k, delta, init, select, update, stop, recommend, confidence, params, randomised, machine,
                      epsilon, report)


def machine_bounds(spec: np.ndarray, state: MachineState) -> tuple[np.ndarray, np.ndarray]:
    """Per-arm bounds: RACING's own; otherwise at :math:`\\delta/n` per arm, Hoeffding (the tighter of
    Hoeffding and empirical Bernstein for ADAPT's pi_4 and OCBA-m); infinite before an arm's first reward.
    """
    n = state.ints[ek.I_N].astype(np.float64)
    seen = n > 0
    safe = np.where(seen, n, 1.0)
    mean = np.where(seen, state.reals[ek.R_MEAN], np.nan)
    rule = int(spec[ek.SP_RULE])
    width = spec[ek.SP_WIDTH]
    if rule == ek.RACING:
        radius = spec[ek.SP_RADIUS] / np.sqrt(safe)
    else:
        level = spec[ek.SP_DELTA] / n.size
        radius = width * np.sqrt(math.log(1.0 / level) / (2.0 * safe))
        if rule == ek.OCBA_M or (rule == ek.ADAPT and int(spec[ek.SP_POLICY]) == 4):
            variance = np.maximum(state.reals[ek.R_SQ] / safe - state.reals[ek.R_MEAN] ** 2, 0.0)
            log_term = math.log(3.0 / level)
            radius = np.minimum(radius, np.sqrt(2.0 * variance * log_term / safe) + 3.0 * width * log_term / safe)
    radius = np.where(seen, radius, np.inf)
    return np.where(seen, mean - radius, -np.inf), np.where(seen, mean + radius, np.inf)
