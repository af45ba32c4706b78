r"""Bandit rewards from Monte Carlo observations (Neufeld et al. 2014).

``"squared"`` — the uniform-cost reduction (Thm 2): arm ``k``'s reward is
:math:`-(X_k - c)^2` for one observation. Any constant centre ``c`` leaves the
regret unchanged because :math:`\mathbb{E}[(X_k-c)^2] = V_k + (\mu-c)^2` and the
second term is common to all unbiased arms (App. B). With known ``bounds=(a, b)``
we follow App. B: ``c = a`` and the normalising scale is :math:`(b-a)^2`, so the
policy sees :math:`1 - (X-a)^2/(b-a)^2 \in [0, 1]` (footnote 1); bounds apply to
linear-scale arms only (:func:`pmcbandit.run` rejects them for log-scale ones). Without bounds
(unbounded estimates) ``c`` starts at the run's first valid observation and, by default,
follows the running mean (below), which keeps the offset :math:`(\mu-c)^2` and the range of
:math:`(X-c)^2` small, and the scale is the running
maximum of the losses (see :mod:`pmcbandit.policies.base`).

Centre (``centre=``, :func:`centre_rule`): without bounds, ``"running"`` (the default for
policies that can re-score their losses, i.e. have a ``recentre``) starts at the first
observation and moves to the mean of all observations after the 2nd, 4th, 8th, ... reward,
re-scoring every past loss (:mod:`pmcbandit.policies.centring`); ``"first"`` keeps the first
observation; a float is a known centre (e.g. a rough price from a pilot).

``"paired"`` — the non-uniform-cost reduction (Sec. 5): each bandit decision is used
twice and fed :math:`r = -\tfrac14 (D_1 + D_2)(X_1 - X_2)^2`, whose mean is
:math:`-\delta_k V_k` when costs and values are independent (the paper's AIS setting).

``"auto"`` picks ``"squared"`` for a :class:`~pmcbandit.runtime.budget.Pulls` budget (equal
costs per decision) and ``"paired"`` for time budgets, where costs matter.

Ranges (App. B): with unknown ranges each arm's losses are normalised by that arm's
own running maximum (``ranges="per_arm"``, the default without bounds for Thompson
sampling and KL-UCB; see :mod:`pmcbandit.policies.ucb1` for why not UCB1 / UCB-V), and index
values are mapped back to the loss scale before arms are compared
(:mod:`pmcbandit.policies.base`); ``"shared"`` normalises every arm by the running
maximum over all arms. Known ``bounds`` give one fixed range, so they imply ``"shared"``.

For log-scale (evidence) arms the rule is fed working values ``exp(obs - shift)``
(:mod:`pmcbandit.runtime.engine`); a change of ``shift`` rescales the centre through :meth:`RewardRule.rescale`.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from pmcbandit._validation import check_choice
from pmcbandit.policies.centring import ObservationMoments, recentre_due

__all__ = ["RewardRule", "REWARD_NAMES", "RANGE_NAMES", "CENTRE_NAMES", "make_reward_rule", "per_arm_ranges",
           "centre_rule"]

REWARD_NAMES = ("auto", "squared", "paired")
RANGE_NAMES = ("auto", "per_arm", "shared")
CENTRE_NAMES = ("auto", "running", "first")


class RewardRule:
    """Turns the observations of one decision into one reward.

    Attributes
    ----------
    name : {"squared", "paired"}
    pulls_per_decision : int
    centre : float or None
        Centre ``c`` of the squared reward now (``None`` until the first observation).
    centre_rule : {"bounds", "running", "first"}, float or None
        How ``c`` is set (:func:`centre_rule`); ``None`` for the paired reward, which has none.
    moments : ObservationMoments or None
        Per-arm power sums of the observations, kept for a ``"running"`` centre.
    fixed_scale : float or None
        ``(b - a)^2`` when bounds are known, else ``None`` (adaptive scale).
    per_arm : bool
        Each arm's losses are normalised by its own running maximum (App. B).
    """

    def __init__(self, name: str, bounds: Sequence[float] | None = None, per_arm: bool = False,
                 centre="first", n_arms: int | None = None):
        self.name = name
        self.per_arm = bool(per_arm)
        self.pulls_per_decision = 2 if name == "paired" else 1
        self.centre = None
        self.centre_rule = None if name == "paired" else centre
        self.moments = None
        self.due = False  # the centre moves after this reward (a running centre; see recentre_due)
        if self.centre_rule == "running":
            if n_arms is None:
                raise ValueError("a running centre needs the number of arms (n_arms)")
            self.moments = ObservationMoments(n_arms)
        elif self.centre_rule not in (None, "first", "bounds"):
            self.centre = float(centre)
        self.fixed_scale = None
        self.bounds = None
        if bounds is not None:
            lo, hi = (float(b) for b in bounds)
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ValueError(
                    f"The 'bounds' parameter of run must be finite (a, b) with a < b. Got {bounds!r} instead."
                )
            self.bounds = (lo, hi)
            if name == "squared":
                self.centre = lo
                self.centre_rule = "bounds"
                self.fixed_scale = (hi - lo) ** 2
            else:
                self.fixed_scale = None  # the paired loss has a cost factor: range unknown

    def reward(self, values: Sequence[float], costs: Sequence[float], arm: int | None = None) -> float:
        r"""Reward of one decision (of ``arm``) from its ``pulls_per_decision`` observations.

        ``"squared"``: :math:`-(x - c)^2` (Thm 2; ``c`` as :attr:`centre_rule` says, the first
        observation until a running centre first moves). ``"paired"``:
        :math:`-\tfrac14 (D_1 + D_2)(x_1 - x_2)^2` (Sec. 5), whose mean is :math:`-\delta V`
        for costs independent of values. A running centre needs ``arm``.
        """
        if self.name == "paired":
            x1, x2 = values
            return -0.25 * (costs[0] + costs[1]) * (x1 - x2) ** 2
        (x,) = values
        if self.bounds is not None and not self.bounds[0] <= x <= self.bounds[1]:
            raise ValueError(f"observation {x!r} lies outside the declared bounds {self.bounds}")
        if self.centre is None:
            self.centre = float(x)
        if self.moments is not None:
            if arm is None:
                raise ValueError("a running centre needs the arm of each reward: call reward(values, costs, arm)")
            self.moments.add(arm, x)
            count = self.moments.count
            self.due = count >= 2 and (count & (count - 1)) == 0  # as centring.recentre_due, without a call
        d = x - self.centre
        return -(d * d)

    def recentre_due(self) -> bool:
        """Whether the centre moves now (after the 2nd, 4th, 8th, ... reward of a running centre);
        also kept as the attribute :attr:`due`, set by :meth:`reward`.
        """
        return self.moments is not None and recentre_due(self.moments.count)

    def recentre(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move the centre to the running mean; every arm's loss sum, squared-loss sum and
        largest loss about it (for the policy's ``recentre``, :mod:`pmcbandit.policies.centring`).
        """
        self.centre, loss_sum, loss_sq_sum, max_loss = self.moments.centre_and_losses()
        return loss_sum, loss_sq_sum, max_loss

    def rescale(self, factor: float) -> None:
        """The working scale of observations was multiplied by ``factor`` (log-scale re-shift)."""
        if self.centre is not None:
            self.centre *= factor
        if self.moments is not None:
            self.moments.rescale(factor)


def per_arm_ranges(ranges: str, bounds, default_ranges: str, door: str = "run") -> bool:
    """Whether ``ranges`` means per-arm ranges (App. B), for ``run`` and ``simulate`` alike.

    ``"auto"`` is ``"shared"`` when ``bounds`` are given (one known range), else
    ``default_ranges`` (the policy's :attr:`~pmcbandit.policies.Policy.ranges`).
    """
    check_choice(ranges, RANGE_NAMES, "ranges", door)
    if ranges == "auto":
        return bounds is None and default_ranges == "per_arm"
    if ranges == "per_arm" and bounds is not None:
        raise ValueError(
            f"The 'ranges' parameter of {door} must be 'shared' or 'auto' when bounds are given (one known "
            f"range for all arms). Got {ranges!r} instead."
        )
    return ranges == "per_arm"


def centre_rule(centre, bounds, can_recentre: bool, door: str = "run"):
    """What ``centre`` means, for ``run`` and ``simulate`` alike: ``"bounds"``, ``"running"``,
    ``"first"`` or a float.

    With ``bounds`` the centre is ``a`` (App. B) and ``centre`` must be ``"auto"``. Otherwise
    ``"auto"`` is ``"running"`` when the policy can re-score its losses (``can_recentre``: it
    has a ``recentre``), else ``"first"``.
    """
    if isinstance(centre, str):
        check_choice(centre, CENTRE_NAMES, "centre", door)
        if bounds is not None:
            if centre != "auto":
                raise ValueError(
                    f"The 'centre' parameter of {door} must be 'auto' when bounds are given (the "
                    f"centre is then a, App. B). Got {centre!r} instead."
                )
            return "bounds"
        if centre == "auto":
            return "running" if can_recentre else "first"
        if centre == "running" and not can_recentre:
            raise ValueError(
                f"The 'centre' parameter of {door} must be 'first', 'auto' or a float for a policy "
                f"without a recentre function (it cannot re-score its losses). Got {centre!r} instead."
            )
        return centre
    if isinstance(centre, bool) or not isinstance(centre, numbers.Real) or not np.isfinite(centre):
        raise ValueError(
            f"The 'centre' parameter of {door} must be one of {CENTRE_NAMES} or a finite float. "
            f"Got {centre!r} instead."
        )
    if bounds is not None:
        raise ValueError(
            f"The 'centre' parameter of {door} must be 'auto' when bounds are given (the centre is "
            f"then a, App. B). Got {centre!r} instead."
        )
    return float(centre)


def make_reward_rule(
    reward: str,
    bounds,
    equal_costs: bool,
    ranges: str = "auto",
    policy=None,
    centre="auto",
    n_arms: int | None = None,
    door: str = "run",
) -> RewardRule:
    """The :class:`RewardRule` named by ``reward`` (``"auto"``: ``"squared"`` when the budget counts
    decisions at ``equal_costs`` — a ``Pulls`` budget — else ``"paired"``) with
    the ranges of :func:`per_arm_ranges` and the centre of :func:`centre_rule` for ``policy``
    (a :class:`~pmcbandit.policies.Policy`; without one, ranges per arm and the first
    observation as centre).
    """
    check_choice(reward, REWARD_NAMES, "reward", door)
    per_arm = per_arm_ranges(ranges, bounds, policy.ranges if policy is not None else "per_arm", door)
    rule = centre_rule(centre, bounds, policy is not None and policy.recentre is not None, door)
    if reward == "auto":
        reward = "squared" if equal_costs else "paired"
    return RewardRule(reward, bounds, per_arm=per_arm, centre=rule, n_arms=n_arms)
