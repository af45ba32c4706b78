"""Where pulls run: inline, in worker threads, in worker processes or on a Dask cluster.

The run loop talks to an executor through ``bind(arms, streams)`` (once, before the first
pull), then ``submit(ticket)``, ``in_flight()`` and ``wait() -> list[Outcome]`` — so the policy
can choose the next arm while earlier pulls are pending — and ``shutdown()`` on the way out.
A ticket names the pull (arm ``k``, pull index ``j``); the executor makes its stream with
``streams.pull_rng(k, j)``, in the driver for the in-process executors here and on the worker
for :class:`~pmcbandit.runtime.executors.processes.ProcessExecutor` and
:class:`~pmcbandit.runtime.executors.dask_cluster.DaskExecutor` (which never ship an arm with a task:
:mod:`pmcbandit.runtime.executors.worker`). Every executor has ``capacity`` (pulls it runs at once), ``kind``
and ``workers`` (recorded in the run's settings) and ``remote`` (whether its pulls' CPU is
spent outside this process and reported in :attr:`Outcome.cpu`); one whose ``wait`` always hands pulls
back in the order they were submitted may say so with ``in_order = True`` (the run loop then skips
re-ordering a decision's pulls).

:func:`make_executor` turns the ``executor=`` argument of :func:`pmcbandit.run` into one.

Every pull goes through :func:`execute_pull`, the one place that turns a raising arm or
non-finite values into a fault outcome instead of an exception that would lose the run.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import warnings
from contextlib import contextmanager
from typing import NamedTuple


from pmcbandit.exceptions import SettingsWarning
from pmcbandit.runtime.executors.base import (InProcessExecutor, Outcome, SerialExecutor, Ticket, caller_stacklevel,
                                             execute_pull)

__all__ = ["Ticket", "Outcome", "execute_pull", "SerialExecutor", "ThreadExecutor", "make_executor", "open_executor",
           "EXECUTOR_KINDS"]

#: The executor names ``executor=`` accepts (besides a Dask ``Client`` and an executor object).
EXECUTOR_KINDS = ("threads", "processes")


class ThreadExecutor(InProcessExecutor):
    """Pull in daemon threads, at most ``capacity`` at once, each with an optional timeout.

    A pull that exceeds ``timeout`` seconds is reported as a ``"timeout"`` fault; its thread
    is abandoned (Python cannot stop a thread) and its late result ignored. Daemon threads do
    not keep the interpreter alive at exit, but an abandoned pull keeps running (and using a core)
    in this process after the run returns, until it ends by itself. That is the limit of threads:
    the fault message says so, and :meth:`shutdown` issues a
    :class:`~pmcbandit.exceptions.SettingsWarning` while such a pull is still running, with the
    remedy: ``executor="processes"``, whose worker of a timed-out pull is terminated
    (:class:`~pmcbandit.runtime.executors.processes.ProcessExecutor`).
    """

    kind = "threads"

    def __init__(self, capacity: int = 1, timeout: float | None = None):
        self.capacity = int(capacity)
        self.workers = self.capacity
        self.timeout = timeout
        self._results: queue.Queue = queue.Queue()
        self._started: dict[object, float] = {}
        self._threads: dict[object, threading.Thread] = {}
        self._abandoned: list[tuple[str, threading.Thread]] = []

    def bind(self, arms, streams) -> None:
        unsafe = [a.name for a in arms if not getattr(a, "thread_safe", True)]
        if self.capacity > 1 and unsafe:
            raise ValueError(
                f"The 'arms' parameter of run must hold thread-safe arms for {self.capacity} pulls in flight in "
                f"threads. Got arms {unsafe!r}, which are not (Arm.thread_safe), instead; use "
                "executor='processes' (or a Dask client) to run them in parallel."
            )
        super().bind(arms, streams)

    def submit(self, ticket) -> None:
        arm, rng = self._pull_args(ticket)
        self._started[ticket] = time.monotonic()
        results = self._results
        thread = threading.Thread(
            target=lambda: results.put(execute_pull(arm, rng, ticket)), daemon=True,
            name=f"pmcbandit-pull-{arm.name}",
        )
        self._threads[ticket] = thread
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
                    self._threads.pop(outcome.ticket, None)
                    out.append(outcome)
            except queue.Empty:
                pass
            now = time.monotonic()
            if self.timeout is not None:
                for ticket, t0 in list(self._started.items()):
                    if now - t0 >= self.timeout:
                        del self._started[ticket]
                        thread = self._threads.pop(ticket, None)
                        if thread is not None:
                            self._abandoned.append((self.arms[ticket.arm].name, thread))
                        out.append(Outcome(ticket, "timeout", None,
                                           f"pull exceeded the {self.timeout} s timeout (its thread cannot be stopped "
                                           "and runs on; executor='processes' ends such pulls)", now - t0))
        while True:  # collect whatever else is already done
            try:
                outcome = self._results.get_nowait()
            except queue.Empty:
                break
            if outcome.ticket in self._started:
                del self._started[outcome.ticket]
                self._threads.pop(outcome.ticket, None)
                out.append(outcome)
        return out

    def shutdown(self) -> None:
        self._started.clear()
        self._threads.clear()
        running = [name for name, thread in self._abandoned if thread.is_alive()]
        self._abandoned = []
        if running:
            warnings.warn(
                f"{len(running)} pull(s) that exceeded pull_timeout ({self.timeout} s) are still running in threads of "
                f"this process after the run (arms {sorted(set(running))}): Python cannot stop a thread. Pass "
                "executor='processes' to run these arms in worker processes, whose timed-out pulls are ended.",
                SettingsWarning, stacklevel=caller_stacklevel())


def make_executor(max_in_flight: int | None, pull_timeout: float | None, executor=None, door: str = "run"):
    """The executor of a run and whether the run owns it (creates and must close it).

    Parameters
    ----------
    max_in_flight : int or None
        Pulls at once; ``None``: 1 for ``executor=None``, else the executor's capacity (its
        total worker threads, times ``pulls_per_task`` for a batching executor).
    pull_timeout : float or None
    executor : None, "threads", "processes", dask.distributed.Client or executor object
        ``None``: :class:`SerialExecutor` for one pull at a time without timeout, else
        :class:`ThreadExecutor`. ``"threads"``: a :class:`ThreadExecutor` of ``max_in_flight``
        (default ``os.cpu_count()``) threads. ``"processes"``: a
        :class:`~pmcbandit.runtime.executors.processes.ProcessExecutor` of ``os.cpu_count()`` spawned worker
        processes. A ``Client``: a :class:`~pmcbandit.runtime.executors.dask_cluster.DaskExecutor` on its
        cluster. An object with ``bind``/``submit``/``in_flight``/``wait``/``shutdown`` and
        ``capacity`` (e.g. a ``ProcessExecutor`` or ``DaskExecutor`` built with other options)
        is used as it is: its ``timeout`` is set from ``pull_timeout`` when that is given.

    Returns
    -------
    (executor, max_in_flight, owned)
        ``max_in_flight`` resolved; ``owned``: the run built the executor and closes it.
    """
    if executor is None:
        n = 1 if max_in_flight is None else int(max_in_flight)
        if n == 1 and pull_timeout is None:
            return SerialExecutor(), 1, True
        return ThreadExecutor(n, pull_timeout), n, True
    if isinstance(executor, str):
        if executor == "threads":
            n = int(max_in_flight or os.cpu_count() or 1)
            return ThreadExecutor(n, pull_timeout), n, True
        if executor == "processes":
            from pmcbandit.runtime.executors.processes import ProcessExecutor

            pool = ProcessExecutor(timeout=pull_timeout)
            return pool, int(max_in_flight or pool.capacity), True
        raise ValueError(
            f"The 'executor' parameter of {door} must be None, one of {EXECUTOR_KINDS}, a dask.distributed.Client "
            f"or an executor object. Got {executor!r} instead."
        )
    if _is_dask_client(executor):
        from pmcbandit.runtime.executors.dask_cluster import DaskExecutor

        ex = DaskExecutor(executor, timeout=pull_timeout)
        return ex, int(max_in_flight or ex.capacity), True
    missing = [m for m in ("bind", "submit", "in_flight", "wait", "shutdown", "capacity") if not hasattr(executor, m)]
    if missing:
        raise TypeError(
            f"The 'executor' parameter of {door} must be None, one of {EXECUTOR_KINDS}, a dask.distributed.Client "
            f"or an object with bind, submit, in_flight, wait, shutdown and capacity (missing {missing}). "
            f"Got {executor!r} instead."
        )
    if pull_timeout is not None:
        executor.timeout = pull_timeout
    return executor, int(max_in_flight or executor.capacity), False


def _is_dask_client(obj) -> bool:
    """Whether ``obj`` is a ``distributed.Client`` (False when Dask is not installed: then it cannot be one)."""
    try:
        from distributed import Client
    except ImportError:
        return False
    return isinstance(obj, Client)


class OpenExecutor(NamedTuple):
    """An executor ready for :func:`pmcbandit.runtime.loop.drive`, the resolved ``max_in_flight``, and what the
    run's settings record of it (``kind``, ``workers``).
    """

    pool: object
    max_in_flight: int
    kind: str
    workers: int


@contextmanager
def open_executor(max_in_flight: int | None, pull_timeout: float | None, executor=None, door: str = "run"):
    """:func:`make_executor` as a context: the run's own executor is closed on the way out, whatever happens."""
    pool, max_in_flight, owned = make_executor(max_in_flight, pull_timeout, executor, door)
    try:
        yield OpenExecutor(pool, max_in_flight, str(getattr(pool, "kind", type(pool).__name__)),
                           int(getattr(pool, "workers", pool.capacity)))
    finally:
        if owned and hasattr(pool, "close"):
            pool.close()
