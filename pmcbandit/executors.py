"""Where pulls run: inline, or in worker threads with a per-pull timeout.

The run loop talks to an executor through three calls — ``submit(ticket, arm, rng)``,
``in_flight()`` and ``wait() -> list[Outcome]`` — so the policy can choose the next arm
while earlier pulls are pending. A later executor (Dask) implements the same three calls.
(For a :class:`SerialExecutor` the run loop inlines this protocol — dispatch one decision,
pull, absorb — which is what the three calls amount to, without their per-pull cost.)

Every pull goes through :func:`execute_pull`, the one place that turns a raising arm or
non-finite values into a fault outcome instead of an exception that would lose the run.
"""

from __future__ import annotations

import math
import queue
import threading
import time
import traceback
from collections import deque
from typing import NamedTuple

import numpy as np

from pmcbandit.arms.base import Arm, Pull

__all__ = ["Ticket", "Outcome", "execute_pull", "SerialExecutor", "ThreadExecutor", "make_executor"]


class Ticket(NamedTuple):
    """One pull to make: pull ``pull_index`` of arm ``arm`` (its stream is fixed by both),
    serving bandit decision ``decision``."""

    decision: int
    arm: int
    pull_index: int


class Outcome(NamedTuple):
    """A pull that came back: its ticket, status, Pull (None when it raised or timed out), fault
    message, and the wall seconds it took (the guards of :mod:`pmcbandit.guards` predict a
    decision's duration from them, whatever unit the arm's ``cost`` is in)."""

    ticket: Ticket
    status: str  # "ok" | "nonfinite" | "error" | "timeout"
    pull: Pull | None
    message: str
    seconds: float = math.nan


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
    return _classify(arm, pull, ticket, time.perf_counter() - start)


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
    return Outcome(ticket, "ok", pull, "", seconds)


class SerialExecutor:
    """Pull inline, one at a time (the default; no timeout)."""

    capacity = 1

    def __init__(self):
        self._done: deque[Outcome] = deque()

    def submit(self, ticket, arm: Arm, rng: np.random.Generator) -> None:
        self._done.append(execute_pull(arm, rng, ticket))

    def in_flight(self) -> int:
        return len(self._done)

    def wait(self) -> list[Outcome]:
        out = list(self._done)
        self._done.clear()
        return out

    def shutdown(self) -> None:
        pass


class ThreadExecutor:
    """Pull in daemon threads, at most ``capacity`` at once, each with an optional timeout.

    A pull that exceeds ``timeout`` seconds is reported as a ``"timeout"`` fault; its thread
    is abandoned (Python cannot kill a thread) and its late result ignored. Daemon threads do
    not keep the interpreter alive at exit.
    """

    def __init__(self, capacity: int = 1, timeout: float | None = None):
        self.capacity = int(capacity)
        self.timeout = timeout
        self._results: queue.Queue = queue.Queue()
        self._started: dict[object, float] = {}

    def submit(self, ticket, arm: Arm, rng: np.random.Generator) -> None:
        self._started[ticket] = time.monotonic()
        results = self._results
        thread = threading.Thread(
            target=lambda: results.put(execute_pull(arm, rng, ticket)), daemon=True,
            name=f"pmcbandit-pull-{arm.name}",
        )
        thread.start()

    def in_flight(self) -> int:
        return len(self._started)

    def wait(self) -> list[Outcome]:
        if not self._started:
            return []
        out: list[Outcome] = []
        while not out:
            wait_for = None
            if self.timeout is not None:
                oldest = min(self._started.values())
                wait_for = max(0.0, oldest + self.timeout - time.monotonic())
            try:
                outcome = self._results.get(timeout=wait_for)
                if outcome.ticket in self._started:
                    del self._started[outcome.ticket]
                    out.append(outcome)
            except queue.Empty:
                pass
            now = time.monotonic()
            if self.timeout is not None:
                for ticket, t0 in list(self._started.items()):
                    if now - t0 >= self.timeout:
                        del self._started[ticket]
                        out.append(Outcome(ticket, "timeout", None, f"pull exceeded the {self.timeout} s timeout",
                                           now - t0))
        while True:  # collect whatever else is already done
            try:
                outcome = self._results.get_nowait()
            except queue.Empty:
                break
            if outcome.ticket in self._started:
                del self._started[outcome.ticket]
                out.append(outcome)
        return out

    def shutdown(self) -> None:
        self._started.clear()


def make_executor(max_in_flight: int, pull_timeout: float | None):
    """:class:`SerialExecutor` for one pull at a time without timeout, else :class:`ThreadExecutor`."""
    if max_in_flight == 1 and pull_timeout is None:
        return SerialExecutor()
    return ThreadExecutor(max_in_flight, pull_timeout)
