r"""OCBA-m (Chen, He, Fu & Lee 2008), the Bayesian subset-selection baseline of Kalyanakrishnan & Stone (2010, Sec. 5).

Every arm is pulled :math:`n_0` times first (to estimate its variance; Chen et al. recommend
:math:`n_0 \ge 5` and use 20). Then arm :math:`i` is allotted a share of the budget proportional
to :math:`s_i^2/(\hat p_i - \hat c)^2` — its sample variance over its squared distance to the
cutoff :math:`\hat c` (the same cutoff as ADAPT's, :mod:`pmcbandit.identification.adapt`). Chen et
al. add a batch of :math:`\Delta` pulls at a time to arms below their allotment; K&S run it fully
sequentially, :math:`\Delta = 1`, "picking arms probabilistically in proportion to their
allotments": here the next pull goes to an arm with probability proportional to its shortfall
:math:`\max(0, (t+1)\,w_i/\sum_j w_j - n_i)`, so only arms below their allotment are pulled.

OCBA-m has no PAC guarantee and no stopping rule of its own. ``stop="delta_hat"`` stops when
ADAPT's :math:`\delta^{\hat c}` (tighter of Hoeffding and empirical Bernstein) computed on its
samples is at most ``delta`` — K&S's measure of progress, which they note can be computed for any
sampling policy; ``stop="budget"`` runs until the budget ends it.
"""

from __future__ import annotations

import numbers

from pmcbandit._validation import check_choice
from pmcbandit.identification._explore import check_explore, check_width, machine_identifier, make_spec
from pmcbandit.identification.base import Identifier
from pmcbandit.identification.explore_kernels import OCBA_M

__all__ = ["ocba_m", "STOPS"]

STOPS = ("delta_hat", "budget")


def ocba_m(k: int = 1, delta: float = 0.05, epsilon: float = 0.0, reward_range: float | None = None, n0: int = 20,
           stop: str = "delta_hat") -> Identifier:
    """OCBA-m for the top ``k`` arms (module docstring).

    Parameters
    ----------
    k, delta, epsilon, reward_range
        As in :func:`~pmcbandit.identification.adapt` (``epsilon`` enters the cutoff and the stop).
    n0 : int
        Pulls of every arm before the allotments start, >= 2.
    stop : {"delta_hat", "budget"}
    """
    door = "ocba_m"
    k, delta, epsilon = check_explore(k, delta, epsilon, door, positive_epsilon=False)
    width = check_width(reward_range, door)
    if isinstance(n0, bool) or not isinstance(n0, numbers.Integral) or n0 < 2:
        raise ValueError(f"The 'n0' parameter of {door} must be an int >= 2 (a sample variance needs two pulls). "
                         f"Got {n0!r} instead.")
    check_choice(stop, STOPS, "stop", door)

    def spec_for(n_arms: int):
        return make_spec(OCBA_M, k, epsilon, delta, width, initial=int(n0), stop=float(stop == "delta_hat"))

    params = (("epsilon", epsilon), ("reward_range", width), ("n0", int(n0)), ("stop", stop))
    return machine_identifier("ocba_m", k, delta, epsilon, params, spec_for, True, door)
