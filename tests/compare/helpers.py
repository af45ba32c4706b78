"""Synthetic arms with known variance for the comparison tests: uniform estimates, declared costs."""

import numpy as np

from pmcbandit.arms.base import Arm


class UniformArm(Arm):
    """Estimates ``centre + U(-spread, spread)``: variance ``spread^2 / 3``; cost ``cost`` per pull."""

    def __init__(self, spread: float, cost: float = 1.0, centre: float = 0.0, name: str | None = None):
        self.spread, self.cost, self.centre = spread, cost, centre
        self.name = name or f"spread{spread}-cost{cost}"

    def draw(self, rng):
        return np.array([self.centre + rng.uniform(-self.spread, self.spread)]), {}, self.cost

    def efficiency(self) -> float:
        return 1.0 / (self.spread**2 / 3 * self.cost)


def uniform_pair(spreads):
    """``draw_pair`` for :func:`pmcbandit.compare.simulate.simulate_comparison` (unit costs)."""
    spreads = np.asarray(spreads, dtype=np.float64)

    def draw(rng, arm):
        x = rng.uniform(-spreads[arm], spreads[arm], 2)
        return x[0], x[1], 1.0, 1.0

    return draw


class VectorArm(Arm):
    """A vector estimate of ``d`` independent N(0, sd^2) components (reported as diagnostics
    ``c_0..``), its value their mean; cost ``cost`` per pull. Variance of a pair's
    ``1/2 sum (x_j - x'_j)^2``: ``d sd^2``; efficiency ``1/(d sd^2 cost)``."""

    def __init__(self, sd: float, d: int, cost: float = 1.0, name: str | None = None):
        self.sd, self.d, self.cost = sd, d, cost
        self.name = name or f"vector-sd{sd}"
        self.components = tuple(f"c_{j}" for j in range(d))
        self.diagnostics = self.components

    def draw(self, rng):
        x = rng.normal(0.0, self.sd, self.d)
        return np.array([x.mean()]), dict(zip(self.components, x.tolist())), self.cost

    def efficiency(self) -> float:
        return 1.0 / (self.d * self.sd**2 * self.cost)
