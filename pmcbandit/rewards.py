r"""Bandit rewards from Monte Carlo observations (Neufeld et al. 2014).

``"squared"`` — the uniform-cost reduction (Thm 2): arm ``k``'s reward is
:math:`-(X_k - c)^2` for one observation. Any constant centre ``c`` leaves the
regret unchanged because :math:`\mathbb{E}[(X_k-c)^2] = V_k + (\mu-c)^2` and the
second term is common to all unbiased arms (App. B). With known ``bounds=(a, b)``
we follow App. B: ``c = a`` and the normalising scale is :math:`(b-a)^2`, so the
policy sees :math:`1 - (X-a)^2/(b-a)^2 \in [0, 1]` (footnote 1); bounds apply to
linear-scale arms only (:func:`pmcbandit.run` rejects them for log-scale ones). Without bounds
(unbounded estimates) ``c`` is the run's first valid observation, which puts ``c``
near ``mu`` and keeps the range of :math:`(X-c)^2` small, and the scale is the running
maximum of the losses (see :mod:`pmcbandit.policies.base`).

``"paired"`` — the non-uniform-cost reduction (Sec. 5): each bandit decision is used
twice and fed :math:`r = -\tfrac14 (D_1 + D_2)(X_1 - X_2)^2`, whose mean is
:math:`-\delta_k V_k` when costs and values are independent (the paper's AIS setting).

``"auto"`` picks ``"squared"`` for a :class:`~pmcbandit.budget.Pulls` budget (equal
costs per decision) and ``"paired"`` for time budgets, where costs matter.

Ranges (App. B): with unknown ranges each arm's losses are normalised by that arm's
own running maximum (``ranges="per_arm"``, the default without bounds for Thompson
sampling and KL-UCB; see :mod:`pmcbandit.policies.ucb1` for why not UCB1 / UCB-V), and index
values are mapped back to the loss scale before arms are compared
(:mod:`pmcbandit.policies.base`); ``"shared"`` normalises every arm by the running
maximum over all arms. Known ``bounds`` give one fixed range, so they imply ``"shared"``.

For log-scale (evidence) arms the rule is fed working values ``exp(obs - shift)``
(:mod:`pmcbandit.engine`); a change of ``shift`` rescales the centre through :meth:`RewardRule.rescale`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pmcbandit._validation import check_choice
from pmcbandit.budget import Budget, Pulls

__all__ = ["RewardRule", "REWARD_NAMES", "RANGE_NAMES", "make_reward_rule", "per_arm_ranges"]

REWARD_NAMES = ("auto", "squared", "paired")
RANGE_NAMES = ("auto", "per_arm", "shared")


class RewardRule:
    """Turns the observations of one decision into one reward.

    Attributes
    ----------
    name : {"squared", "paired"}
    pulls_per_decision : int
    centre : float or None
        Centre ``c`` of the squared reward (fixed once set).
    fixed_scale : float or None
        ``(b - a)^2`` when bounds are known, else ``None`` (adaptive scale).
    per_arm : bool
        Each arm's losses are normalised by its own running maximum (App. B).
    """

    def __init__(self, name: str, bounds: Sequence[float] | None = None, per_arm: bool = False):
        self.name = name
        self.per_arm = bool(per_arm)
        self.pulls_per_decision = 2 if name == "paired" else 1
        self.centre = None
        self.fixed_scale = None
        self.bounds = None
        if bounds is not None:
            lo, hi = (float(b) for b in bounds)
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ValueError(f"The 'bounds' parameter of run must be finite (a, b) with a < b. Got {bounds!r} instead.")
            self.bounds = (lo, hi)
            if name == "squared":
                self.centre = lo
                self.fixed_scale = (hi - lo) ** 2
            else:
                self.fixed_scale = None  # the paired loss has a cost factor: range unknown

    def reward(self, values: Sequence[float], costs: Sequence[float]) -> float:
        r"""Reward of one decision from its ``pulls_per_decision`` observations.

        ``"squared"``: :math:`-(x - c)^2` (Thm 2; ``c`` is the first observation unless bounds
        fixed it). ``"paired"``: :math:`-\tfrac14 (D_1 + D_2)(x_1 - x_2)^2` (Sec. 5), whose
        mean is :math:`-\delta V` for costs independent of values.
        """
        if self.name == "paired":
            x1, x2 = values
            return -0.25 * (costs[0] + costs[1]) * (x1 - x2) ** 2
        (x,) = values
        if self.centre is None:
            self.centre = float(x)
        if self.bounds is not None and not self.bounds[0] <= x <= self.bounds[1]:
            raise ValueError(f"observation {x!r} lies outside the declared bounds {self.bounds}")
        return -((x - self.centre) ** 2)

    def rescale(self, factor: float) -> None:
        """The working scale of observations was multiplied by ``factor`` (log-scale re-shift)."""
        if self.centre is not None:
            self.centre *= factor


def per_arm_ranges(ranges: str, bounds, default_ranges: str, owner: str = "run") -> bool:
    """Whether ``ranges`` means per-arm ranges (App. B), for ``run`` and ``simulate`` alike.

    ``"auto"`` is ``"shared"`` when ``bounds`` are given (one known range), else
    ``default_ranges`` (the policy's :attr:`~pmcbandit.policies.Policy.ranges`).
    """
    check_choice(ranges, RANGE_NAMES, "ranges", owner)
    if ranges == "auto":
        return bounds is None and default_ranges == "per_arm"
    if ranges == "per_arm" and bounds is not None:
        raise ValueError(
            f"The 'ranges' parameter of {owner} must be 'shared' or 'auto' when bounds are given (one known "
            f"range for all arms). Got {ranges!r} instead."
        )
    return ranges == "per_arm"


def make_reward_rule(reward: str, bounds, budget: Budget, ranges: str = "auto",
                     default_ranges: str = "per_arm") -> RewardRule:
    """The :class:`RewardRule` named by ``reward`` (``"auto"`` resolved from ``budget``) with
    the ranges of :func:`per_arm_ranges`."""
    check_choice(reward, REWARD_NAMES, "reward", "run")
    per_arm = per_arm_ranges(ranges, bounds, default_ranges)
    if reward == "auto":
        reward = "squared" if isinstance(budget, Pulls) else "paired"
    return RewardRule(reward, bounds, per_arm=per_arm)
