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

import math
import numbers
from dataclasses import dataclass
from typing import NamedTuple

from pmcbandit._validation import check_positive

__all__ = ["Budget", "WallSeconds", "CpuSeconds", "Pulls", "TargetSE", "as_budget", "budget_label", "Progress"]


class Progress(NamedTuple):
    """What a budget (and a run's ``callback``) can look at.

    Attributes
    ----------
    pulls : int
        Pulls that came back (valid or faulty).
    wall, cpu : float
        Wall-clock and process CPU seconds of the run so far (checkpointed runs included).
        ``cpu`` is NaN when the budget does not use it (see :attr:`Budget.uses_cpu`).
    se : float
        Standard error the run's :class:`TargetSE` budget compares (NaN for other budgets).
    """

    pulls: int
    wall: float
    cpu: float
    se: float = math.nan


class Budget:
    """Base class: ``exhausted(progress)`` and ``fraction(progress)`` in [0, 1].

    ``uses_cpu`` tells the run loop whether ``progress.cpu`` must be measured before every
    check (a system call); subclasses that do not read it set it to ``False``.
    ``horizon`` is the budget's length in seconds when it is one of time (else ``None``): the
    run's guards (:mod:`pmcbandit.runtime.guards`) cap a decision's predicted duration by a share of it
    and never start one that cannot end before it. ``pulls_to_exhaust`` is a number of pulls below which
    :meth:`exhausted` is false whatever the clocks say (``None``: no such number): the run loop asks
    :meth:`exhausted` only from there on, without a progress record before every pull.
    """

    uses_cpu = True
    horizon: float | None = None
    pulls_to_exhaust: int | None = None

    def seconds_left(self, p: Progress) -> float | None:
        """Seconds until the budget's time runs out (``None`` for budgets without a time limit)."""
        return None

    def exhausted(self, p: Progress) -> bool:
        return self.fraction(p) >= 1.0

    def fraction(self, p: Progress) -> float:
        return 0.0

    def may_dispatch(self, dispatched: int) -> bool:
        """Whether another pull may be started (only pull budgets say no in advance)."""
        return True

    def stop_reason(self, p: Progress) -> str:
        """The result's ``stopped_by`` once :meth:`exhausted` holds: ``"budget"``."""
        return "budget"


@dataclass(frozen=True)
class WallSeconds(Budget):
    """Stop after ``seconds`` of wall-clock time (what a float ``budget`` means)."""

    seconds: float
    uses_cpu = False

    def __post_init__(self):
        check_positive(self.seconds, "seconds", "WallSeconds")

    @property
    def horizon(self) -> float:
        return float(self.seconds)

    def seconds_left(self, p: Progress) -> float:
        return self.seconds - p.wall

    def fraction(self, p: Progress) -> float:
        return p.wall / self.seconds


@dataclass(frozen=True)
class CpuSeconds(Budget):
    """Stop after ``seconds`` of CPU time of this process (all its threads: pulls and overhead)
    plus the CPU time remote workers reported for their pulls (process and Dask executors,
    :attr:`pmcbandit.runtime.executors.local.Outcome.cpu`; a remote pull that timed out or was lost is charged
    its wall seconds).

    Threads of pulls abandoned after a ``pull_timeout`` keep running and keep counting.
    """

    seconds: float

    def __post_init__(self):
        check_positive(self.seconds, "seconds", "CpuSeconds")

    @property
    def horizon(self) -> float:
        return float(self.seconds)

    def seconds_left(self, p: Progress) -> float:
        return self.seconds - p.cpu

    def fraction(self, p: Progress) -> float:
        return p.cpu / self.seconds


@dataclass(frozen=True)
class Pulls(Budget):
    """Dispatch exactly ``n`` pulls (fewer when a paired decision cannot complete: it needs 2)."""

    n: int
    uses_cpu = False

    def __post_init__(self):
        check_positive(self.n, "n", "Pulls", integer=True)

    @property
    def pulls_to_exhaust(self) -> int:
        """``n``: fewer pulls never exhaust this budget (:class:`Budget`)."""
        return self.n

    def exhausted(self, p: Progress) -> bool:
        return p.pulls >= self.n  # fraction(p) >= 1, without its division

    def fraction(self, p: Progress) -> float:
        return p.pulls / self.n

    def may_dispatch(self, dispatched: int) -> bool:
        return dispatched < self.n


@dataclass(frozen=True)
class TargetSE(Budget):
    """Stop once the combined estimate's standard error is at most ``se``.

    Parameters
    ----------
    se : float
        Target standard error: of the estimate, of ``estimate / |estimate|`` when
        ``relative=True``, and of ``log Z`` (``result.log_se``) for log-scale (evidence) runs,
        where ``relative`` changes nothing (``log_se`` is already relative, to first order).
    relative : bool
    min_pulls : int
        Pulls before the SE is first evaluated (the default: one paired decision). It is not what keeps a run from
        stopping on too few observations: the SE counts only on an interval the result vouches for (Notes), which
        needs enough degrees of freedom, trusted weights and, for a pool of several families, the cross-family
        check, whatever the count.
    max_seconds : float, optional
        Wall-time cap; without it a target that cannot be reached runs for ever.

    Notes
    -----
    The run evaluates the SE each time the pull count has grown by 2 % (after every pull up
    to 100 pulls; an evaluation costs O(n)), and while the interval is ``"ok"`` and its SE above
    the target next halfway to the count where an SE falling as :math:`n^{-1/2}` would meet it, at
    most a quarter more pulls on. It may thus stop after the SE first met the target: by up to 2 %
    of the pulls, or, where the SE fell faster than :math:`n^{-1/2}`, by up to a quarter of them.
    The SE counts only while the result's interval is one to read (``interval_reliable``: enough
    observations and, for a pool of several estimator families, the cross-family check run), so a
    run does not stop on an SE the result
    itself would not vouch for. Every arm has one decision before the policy chooses (with ``max_seconds``
    cheapest first, without it in the order the arms were given; :mod:`pmcbandit.runtime.guards`, rule 3), so no
    arm goes untried while the target is met on costlier ones. When the SE, computed as if the interval were
    reliable, meets
    the target and the interval lacks only the cross-family check (status ``"no_cross_check"``),
    the run finishes the check: every decision goes to the check arm (of a family other than the
    one the answer rests on), before any arm not yet tried, until it has the
    observations the consistency test needs, then the SE is evaluated again, and the run stops
    if the interval is reliable and the SE still meets the target (:mod:`pmcbandit.runtime.guards`,
    rule 4, *Finishing the check*). The schedule and the finish are deterministic and
    checkpointed, so resumed runs stop where uninterrupted ones do.
    """

    se: float
    relative: bool = False
    min_pulls: int = 2
    max_seconds: float | None = None
    uses_cpu = False

    def __post_init__(self):
        check_positive(self.se, "se", "TargetSE")
        if not isinstance(self.relative, bool):
            raise TypeError(f"The 'relative' parameter of TargetSE must be a bool. Got {self.relative!r} instead.")
        check_positive(self.min_pulls, "min_pulls", "TargetSE", integer=True)
        if self.max_seconds is not None:
            check_positive(self.max_seconds, "max_seconds", "TargetSE")

    @property
    def horizon(self) -> float | None:
        return None if self.max_seconds is None else float(self.max_seconds)

    def seconds_left(self, p: Progress) -> float | None:
        return None if self.max_seconds is None else self.max_seconds - p.wall

    def exhausted(self, p: Progress) -> bool:
        if self.max_seconds is not None and p.wall >= self.max_seconds:
            return True
        return p.pulls >= self.min_pulls and p.se == p.se and p.se <= self.se

    def stop_reason(self, p: Progress) -> str:
        """``"target_se"`` when the target was met, ``"budget"`` when ``max_seconds`` ran out first."""
        met = p.pulls >= self.min_pulls and p.se == p.se and p.se <= self.se
        return "target_se" if met else "budget"

    def fraction(self, p: Progress) -> float:
        if p.se == p.se and p.se > 0:
            return min(1.0, (self.se / p.se) ** 2)
        return 0.0


def as_budget(budget, door: str = "run") -> Budget:
    """A :class:`Budget` from a Budget or a number of wall seconds."""
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(
            f"The 'budget' parameter of {door} must be seconds of wall time (a float) or a "
            f"Budget (Pulls, CpuSeconds, WallSeconds, TargetSE). Got {budget!r} instead."
        )
    if not budget > 0 or budget != budget or budget == float("inf"):
        raise ValueError(f"The 'budget' parameter of {door} must be > 0 and finite. Got {budget!r} instead.")
    return WallSeconds(float(budget))


def budget_label(budget) -> str:
    """The budget as the user gave it, for summaries and records: a number of wall seconds as ``"20 s"``, a
    :class:`Budget` as its ``repr`` (a door may run its pulls on less, e.g. what set-up left of a time budget;
    the label stays the user's).
    """
    if isinstance(budget, numbers.Real) and not isinstance(budget, bool):
        return f"{float(budget):g} s"
    return repr(budget)
