r"""DIRECT (Kalyanakrishnan & Stone 2010, Sec. 3, Alg. 1): pull every arm the same fixed number of times.

Every arm is pulled :math:`\lceil 2R^2/\epsilon^2\,\ln(n/\delta)\rceil` times (rewards in a range
of width :math:`R`; :func:`~pmcbandit.identification.schedules.direct_pulls_per_arm`) and the
``k`` arms with the highest empirical means are returned. Hoeffding's bound and a union over the
arms make every returned arm :math:`(\epsilon, m)`-optimal (mean at least :math:`p_m - \epsilon`)
with probability at least :math:`1 - \delta` (their Thm 1). Decisions pull every arm still short
of its number once.

>>> import numpy as np
>>> from pmcbandit.identification import direct
>>> algo = direct(k=2, delta=0.1, epsilon=0.5, reward_range=1.0)
>>> state = algo.init(4)
>>> algo.select(np.random.default_rng(0), state)
Selection(arms=(0, 1, 2, 3), pulls=(1, 1, 1, 1))
"""

from __future__ import annotations

from pmcbandit.identification._explore import check_explore, check_width, machine_identifier, make_spec
from pmcbandit.identification.base import Identifier
from pmcbandit.identification.explore_kernels import DIRECT
from pmcbandit.identification.schedules import direct_pulls_per_arm

__all__ = ["direct"]


def direct(
    k: int = 1, delta: float = 0.05, epsilon: float | None = None, reward_range: float | None = None
) -> Identifier:
    """DIRECT for ``k`` :math:`(\\epsilon, k)`-optimal arms with error probability at most ``delta``.

    Parameters
    ----------
    k : int
    delta : float
    epsilon : float
        The tolerance, > 0, in reward units.
    reward_range : float
        Width ``b - a`` of the rewards' range.
    """
    door = "direct"
    k, delta, epsilon = check_explore(k, delta, epsilon, door, positive_epsilon=True)
    width = check_width(reward_range, door)

    def spec_for(n_arms: int):
        return make_spec(
            DIRECT, k, epsilon, delta, width, schedule=(direct_pulls_per_arm(n_arms, epsilon, delta, width),)
        )

    params = (("epsilon", epsilon), ("reward_range", width))
    return machine_identifier("direct", k, delta, epsilon, params, spec_for, False, door)
