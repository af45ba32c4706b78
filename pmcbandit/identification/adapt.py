r"""ADAPT (Kalyanakrishnan & Stone 2010, Sec. 4): sampling policies :math:`\pi_1`–:math:`\pi_4` with the
:math:`\delta^c` stop.

After ``initial_pulls`` pulls of every arm, the arms are ranked by empirical mean: High is the top
``k``, Low the rest. A cutoff :math:`\hat c` in :math:`(\hat p_{(m+1)}, \hat p_{(m)} + \epsilon)`
divides that interval in proportion to the standard errors of arms :math:`(m+1)` and :math:`(m)`
(the rule of Chen et al. 2008 that K&S use). Each arm's :math:`\delta^{\hat c}_{(i)}` is the
probability level at which its bound reaches the cutoff — a High arm's lower bound plus
:math:`\epsilon`, a Low arm's upper bound — found by inverting Hoeffding's bound for rewards in a
range of width :math:`R` (:func:`~pmcbandit.identification.radii.hoeffding_level`) and, for
:math:`\pi_4`, also the empirical Bernstein bound (Mnih, Szepesvári & Audibert 2008; a quadratic
in :math:`\sqrt{\ln(3/\delta)}`, :func:`~pmcbandit.identification.radii.empirical_bernstein_level`),
taking the smaller. :math:`\delta^{\hat c} = 1 - \prod_i(1 - \delta^{\hat c}_{(i)})` bounds the
probability that High is not :math:`(\epsilon, m)`-optimal; the run stops when it is at most
``delta``. The policies choose the next pull:

- :math:`\pi_1` (UNIFORM): uniformly among arms whose Hoeffding width at :math:`\delta/n` exceeds
  :math:`\epsilon/2` — a randomised DIRECT;
- :math:`\pi_2`: uniformly among arms whose bounds at :math:`\delta/n` collide (a High arm's
  lower bound plus :math:`\epsilon` below some Low arm's upper bound, or the reverse);
- :math:`\pi_3`: arm :math:`(i)` with probability proportional to :math:`\delta^{\hat c}_{(i)}`;
- :math:`\pi_4` (ADAPT): :math:`\pi_3` with the tighter of the two bounds.

:math:`\pi_1` and :math:`\pi_2` also stop when no arm is left to pull (every width below
:math:`\epsilon/2`, or no collision: DIRECT's guarantee, and the union bound at :math:`\delta/n`).
Every arm's bound is taken at a fixed sample size, as in the paper; the number of pulls at the stop
is random, so the guarantee is the paper's. Kernels: :mod:`pmcbandit.identification.explore_kernels`.
The paper does not say how many pulls each arm gets first; two give every arm a sample standard
deviation for the cutoff.
"""

from __future__ import annotations

import math
import numbers

from pmcbandit.identification._explore import check_explore, check_width, machine_identifier, make_spec
from pmcbandit.identification.base import Identifier
from pmcbandit.identification.explore_kernels import ADAPT
from pmcbandit.identification.schedules import direct_pulls_per_arm

__all__ = ["adapt", "POLICIES"]

#: K&S's policies by number.
POLICIES = (1, 2, 3, 4)


def adapt(k: int = 1, delta: float = 0.05, epsilon: float = 0.0, reward_range: float | None = None,
          policy: int = 4, initial_pulls: int = 2) -> Identifier:
    """ADAPT (policy 4) or one of K&S's simpler policies 1–3 for ``k`` :math:`(\\epsilon, k)`-optimal arms.

    Parameters
    ----------
    k : int
    delta : float
        Target error probability; the run stops when :math:`\\delta^{\\hat c} \\le` ``delta``.
    epsilon : float
        Tolerance :math:`\\ge 0` in reward units (0: the exact top ``k``, which needs distinct means).
    reward_range : float
        Width ``b - a`` of the rewards' range.
    policy : {1, 2, 3, 4}
        :math:`\\pi_1`–:math:`\\pi_4` (module docstring).
    initial_pulls : int
        Pulls of every arm before the policy starts, >= 2.
    """
    door = "adapt"
    k, delta, epsilon = check_explore(k, delta, epsilon, door, positive_epsilon=False)
    width = check_width(reward_range, door)
    if isinstance(policy, bool) or policy not in POLICIES:
        raise ValueError(f"The 'policy' parameter of {door} must be one of {POLICIES}. Got {policy!r} instead.")
    if isinstance(initial_pulls, bool) or not isinstance(initial_pulls, numbers.Integral) or initial_pulls < 2:
        raise ValueError(
            f"The 'initial_pulls' parameter of {door} must be an int >= 2. Got {initial_pulls!r} instead."
        )

    def spec_for(n_arms: int):
        cap = direct_pulls_per_arm(n_arms, epsilon, delta, width) if epsilon > 0 else math.inf
        radius = width * math.sqrt(math.log(n_arms / delta) / 2.0)  # Hoeffding at delta/n, times sqrt(n_i)
        return make_spec(
            ADAPT, k, epsilon, delta, width, policy=int(policy), cap=cap, radius=radius, initial=int(initial_pulls)
        )

    params = (
        ("epsilon", epsilon),
        ("reward_range", width),
        ("policy", int(policy)),
        ("initial_pulls", int(initial_pulls)),
    )
    return machine_identifier("adapt", k, delta, epsilon, params, spec_for, True, door)
