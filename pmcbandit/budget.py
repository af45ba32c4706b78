"""Budgets: when a run stops.

``budget=30.0`` (any real number) means 30 seconds of wall time. The other kinds
are explicit objects so an ``int`` can never be silently read as pulls:

* :class:`WallSeconds` — elapsed wall-clock time of the run;
* :class:`CpuSeconds` — CPU time of this process during the run (pulls and overhead);
* :class:`Pulls` — number of pulls dispatched (deterministic: use it for reproducible runs);
* :class:`TargetSE` — stop once the combined estimate's standard error is at most ``se``
  (relative to the estimate when ``relative=True``; for evidence runs the SE of log Z), after
  ``min_pulls`` pulls, or when the ``max_seconds`` wall-time cap is reached.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from pmcbandit._validation import check_positive

__all__ = ["Budget", "WallSeconds", "CpuSeconds", "Pulls", "TargetSE", "as_budget", "Progress"]


@dataclass(frozen=True)
class Progress:
    """What a budget can look at."""

    pulls: int
    wall: float
    cpu: float
    se: float = float("nan")


class Budget:
    """Base class: ``exhausted(progress)`` and ``fraction(progress)`` in [0, 1]."""

    def exhausted(self, p: Progress) -> bool:
        return self.fraction(p) >= 1.0

    def fraction(self, p: Progress) -> float:
        return 0.0

    def may_dispatch(self, dispatched: int) -> bool:
        """Whether another pull may be started (only pull budgets say no in advance)."""
        return True


@dataclass(frozen=True)
class WallSeconds(Budget):
    seconds: float

    def __post_init__(self):
        check_positive(self.seconds, "seconds", "WallSeconds")

    def fraction(self, p: Progress) -> float:
        return p.wall / self.seconds


@dataclass(frozen=True)
class CpuSeconds(Budget):
    seconds: float

    def __post_init__(self):
        check_positive(self.seconds, "seconds", "CpuSeconds")

    def fraction(self, p: Progress) -> float:
        return p.cpu / self.seconds


@dataclass(frozen=True)
class Pulls(Budget):
    n: int

    def __post_init__(self):
        check_positive(self.n, "n", "Pulls", integer=True)

    def fraction(self, p: Progress) -> float:
        return p.pulls / self.n

    def may_dispatch(self, dispatched: int) -> bool:
        return dispatched < self.n


@dataclass(frozen=True)
class TargetSE(Budget):
    se: float
    relative: bool = False
    min_pulls: int = 10
    max_seconds: float | None = None

    def __post_init__(self):
        check_positive(self.se, "se", "TargetSE")
        check_positive(self.min_pulls, "min_pulls", "TargetSE", integer=True)
        if self.max_seconds is not None:
            check_positive(self.max_seconds, "max_seconds", "TargetSE")

    def exhausted(self, p: Progress) -> bool:
        if self.max_seconds is not None and p.wall >= self.max_seconds:
            return True
        return p.pulls >= self.min_pulls and p.se == p.se and p.se <= self.se

    def fraction(self, p: Progress) -> float:
        if p.se == p.se and p.se > 0:
            return min(1.0, (self.se / p.se) ** 2)
        return 0.0


def as_budget(budget, owner: str = "run") -> Budget:
    """A :class:`Budget` from a Budget or a number of wall seconds."""
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(
            f"The 'budget' parameter of {owner} must be seconds of wall time (a float) or a "
            f"Budget (Pulls, CpuSeconds, WallSeconds, TargetSE). Got {budget!r} instead."
        )
    if not budget > 0 or budget != budget or budget == float("inf"):
        raise ValueError(f"The 'budget' parameter of {owner} must be > 0 and finite. Got {budget!r} instead.")
    return WallSeconds(float(budget))
