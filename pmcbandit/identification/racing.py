r"""RACING (Heidrich-Meisner & Igel 2009), the racing baseline of Kalyanakrishnan & Stone (2010, Sec. 5).

A race (Maron & Moore 1997) for the best ``k`` of ``n`` arms: every round pulls each undecided
arm once; an undecided arm is *selected* when its lower bound is above the upper bounds of at least
:math:`n - m - |D|` undecided arms (it beats :math:`n - m` others, counting the :math:`|D|`
discarded) and *discarded* when its upper bound is below the lower bounds of at least
:math:`m - |S|` (:math:`m` others beat it, counting the :math:`|S|` selected); the race ends when
:math:`m` arms are selected (the rest then discarded, or selected when only :math:`m - |S|` are
left). Bounds: two-sided Hoeffding for rewards in a range of width :math:`R_w` at level
:math:`\delta/(nR)`, a union over the :math:`n` arms and :math:`R` rounds, so all hold together
with probability :math:`1 - \delta` for :math:`R` rounds: radius
:math:`R_w\sqrt{\ln(2nR/\delta)/(2T_i)}`.

Heidrich-Meisner & Igel stop after :math:`R` rounds; K&S, who found no :math:`R` in 1–500 with
which the race finished in time on their instance, continue past :math:`R` with the round-:math:`R`
bounds, and so does this implementation: the guarantee holds only if the race ended within
:math:`R` rounds (``report(state)["within_rounds"]``; the run's result says so). The rule above is
taken from K&S's description and the racing literature it cites; Heidrich-Meisner & Igel's paper
was not at hand.
"""

from __future__ import annotations

import math
import numbers

from pmcbandit.identification._explore import check_explore, check_width, machine_identifier, make_spec
from pmcbandit.identification.base import Identifier
from pmcbandit.identification.explore_kernels import RACING

__all__ = ["racing"]


def racing(k: int = 1, delta: float = 0.05, reward_range: float | None = None, rounds: int = 1) -> Identifier:
    """RACING for the top ``k`` arms (module docstring).

    Parameters
    ----------
    k, delta, reward_range
        As in :func:`~pmcbandit.identification.direct`.
    rounds : int
        :math:`R`, the rounds the union bound covers (K&S found :math:`R = 1` best on their instance).
    """
    door = "racing"
    k, delta, _ = check_explore(k, delta, 0.0, door, positive_epsilon=False)
    width = check_width(reward_range, door)
    if isinstance(rounds, bool) or not isinstance(rounds, numbers.Integral) or rounds < 1:
        raise ValueError(f"The 'rounds' parameter of {door} must be an int >= 1. Got {rounds!r} instead.")

    def spec_for(n_arms: int):
        radius = width * math.sqrt(math.log(2.0 * n_arms * rounds / delta) / 2.0)
        return make_spec(RACING, k, 0.0, delta, width, radius=radius, rounds=int(rounds))

    params = (("reward_range", width), ("rounds", int(rounds)))
    return machine_identifier("racing", k, delta, 0.0, params, spec_for, False, door)
