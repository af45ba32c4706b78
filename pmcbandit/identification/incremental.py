r"""INCREMENTAL (Kalyanakrishnan & Stone 2010, Sec. 3, Alg. 2): ``k`` rounds of median elimination.

Round :math:`l = 1, \dots, k` runs median elimination (Even-Dar, Mannor & Mansour 2006, Alg. 3)
with :math:`(\epsilon, \delta/k)` on the arms not yet selected and selects the arm it returns:
median elimination halves its set each round on fresh samples, with
:math:`\epsilon_1 = \epsilon/4`, :math:`\delta_1 = \delta/2`, :math:`\epsilon \leftarrow \tfrac34\epsilon`,
:math:`\delta \leftarrow \delta/2` and :math:`\lceil R^2/(\epsilon_l/2)^2\,\ln(3/\delta_l)\rceil`
pulls per arm (:func:`~pmcbandit.identification.schedules.median_elimination_schedule`; rewards in
a range of width :math:`R`). An :math:`(\epsilon, 1)`-optimal arm of the remaining set is
:math:`(\epsilon, m)`-optimal, so the answer is right with probability at least :math:`1 - \delta`
(their Thm 2). An even set keeps its better half; ties go to the lower index.
"""

from __future__ import annotations

from pmcbandit.identification._explore import check_explore, check_width, machine_identifier, make_spec
from pmcbandit.identification.base import Identifier
from pmcbandit.identification.explore_kernels import INCREMENTAL
from pmcbandit.identification.schedules import median_elimination_schedule

__all__ = ["incremental"]


def incremental(k: int = 1, delta: float = 0.05, epsilon: float | None = None,
                reward_range: float | None = None) -> Identifier:
    """INCREMENTAL for ``k`` :math:`(\\epsilon, k)`-optimal arms; parameters as in
    :func:`~pmcbandit.identification.direct`.
    """
    door = "incremental"
    k, delta, epsilon = check_explore(k, delta, epsilon, door, positive_epsilon=True)
    width = check_width(reward_range, door)

    def spec_for(n_arms: int):
        # the schedule of the largest call; later calls, on fewer arms, use its first rounds
        return make_spec(
            INCREMENTAL,
            k,
            epsilon,
            delta,
            width,
            schedule=median_elimination_schedule(n_arms, epsilon, delta / k, width),
        )

    params = (("epsilon", epsilon), ("reward_range", width))
    return machine_identifier("incremental", k, delta, epsilon, params, spec_for, False, door)
