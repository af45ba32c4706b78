r"""HALVING (Kalyanakrishnan & Stone 2010, Sec. 3, Alg. 3): halve the arms each round, down to ``k``.

:math:`\lceil\log_2(n/m)\rceil` rounds; round :math:`l` pulls every remaining arm
:math:`\lceil 2R^2/\epsilon_l^2\,\ln(3m/\delta_l)\rceil` times (fresh samples; rewards in a range
of width :math:`R`) and keeps the :math:`\max(\lceil|R_l|/2\rceil, m)` with the best round means,
with :math:`\epsilon_1 = \epsilon/4`, :math:`\delta_1 = \delta/2`,
:math:`\epsilon_{l+1} = \tfrac34\epsilon_l`, :math:`\delta_{l+1} = \delta_l/2`
(:func:`~pmcbandit.identification.schedules.halving_schedule`). The arms left are
:math:`(\epsilon, m)`-optimal with probability at least :math:`1 - \delta` (their Thm 3).
"""

from __future__ import annotations

from pmcbandit.identification._explore import check_explore, check_width, machine_identifier, make_spec
from pmcbandit.identification.base import Identifier
from pmcbandit.identification.explore_kernels import HALVING
from pmcbandit.identification.schedules import halving_schedule

__all__ = ["halving"]


def halving(
    k: int = 1, delta: float = 0.05, epsilon: float | None = None, reward_range: float | None = None
) -> Identifier:
    """HALVING for ``k`` :math:`(\\epsilon, k)`-optimal arms; parameters as in
    :func:`~pmcbandit.identification.direct`.
    """
    door = "halving"
    k, delta, epsilon = check_explore(k, delta, epsilon, door, positive_epsilon=True)
    width = check_width(reward_range, door)

    def spec_for(n_arms: int):
        schedule = halving_schedule(n_arms, k, epsilon, delta, width)
        return make_spec(HALVING, k, epsilon, delta, width, rounds=len(schedule), schedule=schedule)

    params = (("epsilon", epsilon), ("reward_range", width))
    return machine_identifier("halving", k, delta, epsilon, params, spec_for, False, door)
