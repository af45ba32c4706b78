"""What every executor shares: the pull to make (:class:`Ticket`), the pull that came back
(:class:`Outcome`), the one place a pull's failure becomes a fault (:func:`execute_pull`) and the
stack level of a warning raised deep inside a run (:func:`caller_stacklevel`); and the default executor,
:class:`SerialExecutor`, which pulls inline through :func:`execute_pull` (beside it, so a serial pull
crosses no module boundary between the executor and the arm).

The in-process executors (:mod:`~pmcbandit.runtime.executors.local`), the worker side
(:mod:`~pmcbandit.runtime.executors.worker`) and the remote executors
(:mod:`~pmcbandit.runtime.executors.processes`, :mod:`~pmcbandit.runtime.executors.dask_cluster`) all
build on this module, which imports no other executor.
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from collections import deque
from typing import NamedTuple

import numpy as np

from pmcbandit.base import new_tuple as _new

from pmcbandit.arms.base import Arm, Pull

__all__ = ["Ticket", "Outcome", "execute_pull", "caller_stacklevel", "InProcessExecutor", "SerialExecutor"]


class Ticket(NamedTuple):
    """One pull to make: pull ``pull_index`` of arm ``arm`` (its stream is fixed by both),
    serving bandit decision ``decision``.
    """

    decision: int
    arm: int
    pull_index: int


class Outcome(NamedTuple):
    """A pull that came back: its ticket, status, Pull (None when it raised, timed out or was
    lost), fault message, the wall seconds it took (the guards of :mod:`pmcbandit.runtime.guards` predict
    a decision's duration from them, whatever unit the arm's ``cost`` is in) and, from a remote
    executor, the CPU seconds it spent on its worker (``time.thread_time`` of the pull's thread;
    for a pull that timed out or was lost, its wall seconds: what a single-threaded worker slot
    spent on it). ``cpu`` is NaN in-process, where the driver's process clock counts pulls.
    """

    ticket: Ticket
    status: str  # "ok" | "nonfinite" | "error" | "timeout" | "lost"
    pull: Pull | None
    message: str
    seconds: float = math.nan
    cpu: float = math.nan


def execute_pull(arm: Arm, rng: np.random.Generator, ticket=None) -> Outcome:
    """Pull ``arm`` and classify the result; never raises for an arm's failure.

    Statuses: ``"error"`` (the pull raised; the message is the exception's last line),
    ``"nonfinite"`` (a NaN or +inf value, -inf on a linear scale, every log-weight ``-inf``,
    or a cost that is not a finite number >= 0), else ``"ok"``.
    """
    start = time.perf_counter()
    try:
        pull = arm.pull(rng)
    except Exception as exc:  # an arm's bug must not lose the run: recorded as a fault
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return Outcome(ticket, "error", None, last, time.perf_counter() - start)
    seconds = time.perf_counter() - start
    values = pull.values
    if values.size == 1 and _isfinite(values.item()) and 0.0 <= pull.cost < _INF:  # _classify's "ok", at once
        return _new(Outcome, (ticket, "ok", pull, "", seconds, _NAN))
    return _classify(arm, pull, ticket, seconds)


_isfinite, _INF, _NAN = math.isfinite, math.inf, math.nan


def _classify(arm: Arm, pull: Pull, ticket, seconds: float) -> Outcome:
    """The status of a pull that returned (see :func:`execute_pull`)."""
    values = pull.values
    if values.size == 1:
        x = float(values[0])
        ok = math.isfinite(x)
        if not ok and arm.log_scale and x == -math.inf:
            return Outcome(ticket, "nonfinite", pull, "all log-weights are -inf (every weight is zero)", seconds)
        if not ok:
            return Outcome(ticket, "nonfinite", pull, f"1 of 1 values are NaN or inf ({x!r})", seconds)
    elif not np.isfinite(values).all():
        bad = ~np.isfinite(values)
        if arm.log_scale:
            # log weights of -inf are valid (a zero weight) unless all are: then log-mean-exp is -inf
            bad = np.isnan(values) | (values == np.inf)
            if not bad.any() and np.all(values == -np.inf):
                return Outcome(ticket, "nonfinite", pull, "all log-weights are -inf (every weight is zero)", seconds)
        if bad.any():
            return Outcome(ticket, "nonfinite", pull, f"{int(bad.sum())} of {bad.size} values are NaN or inf", seconds)
    cost = pull.cost
    if not (math.isfinite(cost) and cost >= 0):
        return Outcome(ticket, "nonfinite", pull, f"cost {cost!r} is not a finite number >= 0", seconds)
    return _new(Outcome, (ticket, "ok", pull, "", seconds, math.nan))


def caller_stacklevel() -> int:
    """``stacklevel`` of the first frame outside the pmcbandit package (the user's call of a door),
    for a warning issued deep inside a run.
    """
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


class InProcessExecutor:
    """The part of the protocol every in-process executor shares: pulls see the driver's arms."""

    remote = False
    arms: list = []
    streams = None

    def bind(self, arms, streams) -> None:
        self.arms, self.streams = arms, streams

    def _pull_args(self, ticket) -> tuple:
        return self.arms[ticket.arm], self.streams.pull_rng(ticket.arm, ticket.pull_index)


class SerialExecutor(InProcessExecutor):
    """Pull inline, one at a time (the default; no timeout).

    Its :meth:`wait` hands the pulls back in the order they were submitted (``in_order``), and ``pull_now``
    makes a pull and returns it at once: the run loop calls it instead of ``submit`` and ``wait`` when it runs
    one decision at a time. A subclass that overrides ``submit`` or ``wait`` has neither (``None``, ``False``):
    the loop then goes through its ``submit`` and ``wait``.
    """

    capacity = 1
    kind = "serial"
    workers = 1

    def __init__(self):
        self._done: deque[Outcome] = deque()

    def _own_queue(self) -> bool:
        cls = type(self)
        return cls.submit is SerialExecutor.submit and cls.wait is SerialExecutor.wait

    @property
    def in_order(self) -> bool:
        """Whether :meth:`wait` hands pulls back in the order they were submitted (``submit`` and ``wait`` are
        this class's).
        """
        return self._own_queue()

    @property
    def pull_now(self):
        """A callable that makes the pull a ticket names and returns its :class:`Outcome` (``None`` when a
        subclass overrides ``submit`` or ``wait``).
        """
        return self._pull if self._own_queue() else None

    def _pull(self, ticket) -> Outcome:
        """The pull ``ticket`` names, made now (:func:`execute_pull` with the ticket's stream)."""
        _, arm, j = ticket
        return execute_pull(self.arms[arm], self.streams.pull_rng(arm, j), ticket)

    def submit(self, ticket) -> None:
        self._done.append(self._pull(ticket))

    def in_flight(self) -> int:
        return len(self._done)

    def wait(self) -> list[Outcome]:
        out = list(self._done)
        self._done.clear()
        return out

    def shutdown(self) -> None:
        pass
