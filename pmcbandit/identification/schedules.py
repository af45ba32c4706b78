r"""Closed-form sampling schedules of the (ε, m, δ)-optimal EXPLORE-m algorithms.

Kalyanakrishnan & Stone (2010, Sec. 3) give three algorithms that pull a fixed number of times,
whatever the rewards; their schedules, for rewards in a range of width :math:`R` (the paper's
Bernoulli arms are :math:`R = 1`; Hoeffding's bound scales the pulls by :math:`R^2`):

DIRECT (Alg. 1)
    every arm :math:`\lceil 2R^2/\epsilon^2 \,\ln(n/\delta)\rceil` times.
Median elimination (Even-Dar, Mannor & Mansour 2006, Alg. 3), on a set of :math:`s` arms
    rounds :math:`l = 1, 2, \dots` with :math:`\epsilon_1 = \epsilon/4`, :math:`\delta_1 = \delta/2`,
    :math:`\epsilon_{l+1} = \tfrac34\epsilon_l`, :math:`\delta_{l+1} = \delta_l/2`; in round
    :math:`l` every remaining arm is pulled :math:`\lceil R^2/(\epsilon_l/2)^2 \,\ln(3/\delta_l)\rceil`
    times (fresh samples) and the better half, :math:`\lceil s_l/2\rceil` arms, stays, until one
    arm is left: :math:`\lceil\log_2 s\rceil` rounds.
INCREMENTAL (Alg. 2)
    :math:`m` calls of median elimination with :math:`(\epsilon, \delta/m)`, on :math:`n, n-1,
    \dots, n-m+1` arms.
HALVING (Alg. 3)
    :math:`\lceil\log_2(n/m)\rceil` rounds with :math:`\epsilon_1 = \epsilon/4`,
    :math:`\delta_1 = \delta/2`, :math:`\epsilon_{l+1} = \tfrac34\epsilon_l`,
    :math:`\delta_{l+1} = \delta_l/2` (so :math:`\sum\epsilon_l < \epsilon`,
    :math:`\sum\delta_l < \delta`); in round :math:`l` every remaining arm is pulled
    :math:`\lceil 2R^2/\epsilon_l^2 \,\ln(3m/\delta_l)\rceil` times (fresh samples) and
    :math:`\max(\lceil|R_l|/2\rceil, m)` arms stay.

The functions return the per-round pulls per arm (what the algorithms execute) and the totals
(what the tests compare a run's pulls with).

>>> direct_pulls_per_arm(50, 0.1, 0.15, 1.0)
1162
>>> halving_total(50, 15, 0.1, 0.15, 1.0)
2031925
"""

from __future__ import annotations

import math

__all__ = ["direct_pulls_per_arm", "direct_total", "median_elimination_schedule", "median_elimination_total",
           "incremental_total", "halving_schedule", "halving_total", "halving_rounds"]


def direct_pulls_per_arm(n: int, epsilon: float, delta: float, width: float) -> int:
    """DIRECT's pulls of every arm: :math:`\\lceil 2R^2/\\epsilon^2 \\ln(n/\\delta)\\rceil`."""
    return math.ceil(2.0 * width * width / (epsilon * epsilon) * math.log(n / delta))


def direct_total(n: int, epsilon: float, delta: float, width: float) -> int:
    """DIRECT's pulls in all: ``n`` times :func:`direct_pulls_per_arm`."""
    return n * direct_pulls_per_arm(n, epsilon, delta, width)


def median_elimination_schedule(size: int, epsilon: float, delta: float, width: float) -> list[int]:
    """Median elimination's pulls per arm in each of its :math:`\\lceil\\log_2 s\\rceil` rounds on ``size`` arms."""
    pulls = []
    eps, dlt, remaining = epsilon / 4.0, delta / 2.0, size
    while remaining > 1:
        pulls.append(math.ceil(width * width / (eps / 2.0) ** 2 * math.log(3.0 / dlt)))
        remaining = -(-remaining // 2)
        eps, dlt = 0.75 * eps, dlt / 2.0
    return pulls


def median_elimination_total(size: int, epsilon: float, delta: float, width: float) -> int:
    """Median elimination's pulls in all on ``size`` arms: :math:`\\sum_l s_l T_l`."""
    total, remaining = 0, size
    for pulls in median_elimination_schedule(size, epsilon, delta, width):
        total += remaining * pulls
        remaining = -(-remaining // 2)
    return total


def incremental_total(n: int, m: int, epsilon: float, delta: float, width: float) -> int:
    """INCREMENTAL's pulls in all: median elimination with :math:`(\\epsilon, \\delta/m)` on :math:`n - l + 1`
    arms for :math:`l = 1, \\dots, m`.
    """
    return sum(median_elimination_total(n - l, epsilon, delta / m, width) for l in range(m))


def halving_rounds(n: int, m: int) -> int:
    """:math:`\\lceil\\log_2(n/m)\\rceil`, computed exactly on integers."""
    rounds, size = 0, m
    while size < n:
        size *= 2
        rounds += 1
    return rounds


def halving_schedule(n: int, m: int, epsilon: float, delta: float, width: float) -> list[int]:
    """HALVING's pulls per arm in each round (module docstring)."""
    pulls = []
    eps, dlt = epsilon / 4.0, delta / 2.0
    for _ in range(halving_rounds(n, m)):
        pulls.append(math.ceil(2.0 * width * width / (eps * eps) * math.log(3.0 * m / dlt)))
        eps, dlt = 0.75 * eps, dlt / 2.0
    return pulls


def halving_total(n: int, m: int, epsilon: float, delta: float, width: float) -> int:
    """HALVING's pulls in all: :math:`\\sum_l |R_l| T_l` with :math:`|R_{l+1}| = \\max(\\lceil|R_l|/2\\rceil, m)`."""
    total, remaining = 0, n
    for pulls in halving_schedule(n, m, epsilon, delta, width):
        total += remaining * pulls
        remaining = max(-(-remaining // 2), m)
    return total
