"""Pulls in spawned worker processes on this machine: ``run(..., executor="processes")``.

A :class:`ProcessExecutor` keeps ``workers`` processes started with the ``"spawn"`` method (no
forked copy of the driver's threads, locks or compiled state), each serving one task at a time
over its own pipe, so a worker is one pull slot. The run's arms are installed on each worker
once (:mod:`pmcbandit.runtime.executors.worker`: cloudpickled, compiled parts rebuilt there); a task is up to
``pulls_per_task`` tickets, whose Outcomes the worker sends back one by one as they are made.

Each worker imports the driver's main script again when it starts ("spawn"), so a script must start its
run under ``if __name__ == "__main__":``; without it, the run raises one ``RuntimeError`` that says so
before any worker starts, or at the first worker that fails while importing the script
(:mod:`pmcbandit.runtime.executors.main_guard`).

Worker loss and timeouts. The driver watches every busy worker's pipe and process sentinel:

* a worker that dies (killed, out of memory, a crash in compiled code) loses only the pull it
  was making; the tickets of its task not yet reported are re-queued on a fresh worker with their
  own streams, so the retry gives the same values (a pull that died ``max_retries + 1`` times is
  reported ``"lost"``, which does not count towards quarantine);
* a pull that runs past ``timeout`` seconds is reported ``"timeout"`` and its worker is
  terminated and replaced, so the slot is free again (a thread could not be stopped; a process
  can); the task's later tickets are re-queued.

Abandoned pulls (in flight when the run ends) are stopped the same way. Processes are started
lazily and stay up across runs until :meth:`ProcessExecutor.close` (or interpreter exit: they
are daemonic).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections import deque
from multiprocessing.connection import wait as wait_ready

from pmcbandit.runtime.executors.main_guard import check_main_guard, start_failure
from pmcbandit.runtime.executors.worker import arm_payload, process_main
from pmcbandit.runtime.executors.base import Outcome

__all__ = ["ProcessExecutor"]

#: Seconds a worker may take to start and rebuild the arms (compiling a model's density included).
INSTALL_TIMEOUT = 600.0
# Thread pools of the numerical libraries a worker may load: one per worker (a worker is one core).
_ONE_THREAD_ENV = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


class _Worker:
    __slots__ = ("process", "conn", "started", "token", "installed", "tickets", "reported", "last")

    def __init__(self, process, conn):
        self.process, self.conn = process, conn
        self.started = False  # said "ready": it imported the main module and runs the worker loop
        self.token = None  # payload sent
        self.installed = False  # and unpickled: a pull's clock does not run while the worker starts up
        self.tickets: list = []  # the task being served
        self.reported = 0  # of its tickets
        self.last = 0.0  # when the current pull started (task sent, install done or last outcome)


class ProcessExecutor:
    """Pull in ``workers`` spawned processes (see the module docstring).

    Parameters
    ----------
    workers : int, optional
        Worker processes (``os.cpu_count()`` by default).
    pulls_per_task : int
        Tickets sent to a worker at once: more than 1 amortises the driver's round trip over
        several short pulls (the capacity becomes ``workers * pulls_per_task``, so the policy
        chooses further ahead of the results).
    timeout : float, optional
        Seconds one pull may take before it is a ``"timeout"`` fault and its worker is replaced.
    max_retries : int
        Times a pull is redone after its worker died before it is reported ``"lost"``.
    """

    remote = True
    kind = "processes"

    def __init__(self, workers: int | None = None, *, pulls_per_task: int = 1, timeout: float | None = None,
                 max_retries: int = 2):
        self.workers = int(workers or os.cpu_count() or 1)
        if self.workers < 1:
            raise ValueError(f"The 'workers' parameter of ProcessExecutor must be >= 1. Got {workers!r} instead.")
        if int(pulls_per_task) != pulls_per_task or pulls_per_task < 1:
            raise ValueError(
                "The 'pulls_per_task' parameter of ProcessExecutor must be an int >= 1. "
                f"Got {pulls_per_task!r} instead."
            )
        self.pulls_per_task = int(pulls_per_task)
        self.capacity = self.workers * self.pulls_per_task
        self.timeout = timeout
        self.max_retries = int(max_retries)
        self._ctx = multiprocessing.get_context("spawn")
        self._pool: list[_Worker] = []
        self._token = self._blob = self._spec = None
        self._queue: deque = deque()  # tickets not yet sent
        self._in_flight: set = set()
        self._retries: dict = {}
        self._done: list[Outcome] = []

    # --- protocol ---------------------------------------------------------------
    def bind(self, arms, streams) -> None:
        """Start the workers (if not running) and install the arms on each; block until they are
        ready, so that no pull (and no time budget) pays for start-up and compilation.
        """
        if len(self._pool) < self.workers:
            check_main_guard("ProcessExecutor")  # before a worker runs the main script again
        self._token, self._blob = arm_payload(arms)
        self._spec = json.dumps(streams.to_json(), sort_keys=True)
        while len(self._pool) < self.workers:
            self._pool.append(self._start())
        deadline = time.monotonic() + INSTALL_TIMEOUT
        deaths = 0
        while True:
            pending = [w for w in self._pool if not (w.token == self._token and w.installed)]
            if not pending:
                return
            for w in pending:
                self._install(w)
            handles = [w.conn for w in pending] + [w.process.sentinel for w in pending]
            ready = set(wait_ready(handles, timeout=max(0.0, deadline - time.monotonic())))
            if not ready:
                raise RuntimeError(f"pmcbandit workers did not install the arms within {INSTALL_TIMEOUT} s")
            for w in pending:
                if w.conn in ready or w.process.sentinel in ready:
                    alive = w.process.is_alive()
                    self._receive(w)
                    deaths += not alive
            if deaths > self.workers * (self.max_retries + 1):
                raise RuntimeError(
                    "pmcbandit workers keep dying while they install the arms (exit code "
                    f"{w.process.exitcode}): the arms cannot be rebuilt in a fresh process"
                )

    def submit(self, ticket) -> None:
        self._queue.append(ticket)
        self._in_flight.add(ticket)
        if len(self._queue) >= self.pulls_per_task:
            self._pump(flush=False)

    def in_flight(self) -> int:
        return len(self._in_flight)

    def wait(self) -> list:
        """Block until at least one pull came back (or timed out, or was lost); return those."""
        self._pump(flush=True)
        while not self._done and self._in_flight:
            busy = [w for w in self._pool if w.tickets]
            deadline = None
            timed = [w.last for w in busy if w.installed]
            if self.timeout is not None and timed:
                deadline = max(0.0, min(timed) + self.timeout - time.monotonic())
            handles = [w.conn for w in busy] + [w.process.sentinel for w in busy]
            ready = set(wait_ready(handles, timeout=deadline)) if handles else set()
            for w in busy:
                if w.conn in ready or w.process.sentinel in ready:
                    self._receive(w)
            self._expire()
            self._pump(flush=True)
        out, self._done = self._done, []
        return out

    def shutdown(self) -> None:
        """Forget the run's pulls: workers still making one are stopped (restarted on next use)."""
        for w in list(self._pool):
            if w.tickets:
                self._replace(w)
        self._queue.clear()
        self._in_flight.clear()
        self._retries.clear()
        self._done = []

    def close(self) -> None:
        """Stop every worker process."""
        self.shutdown()
        for w in self._pool:
            try:
                w.conn.send(("stop",))
            except OSError:
                pass
        for w in self._pool:
            w.process.join(timeout=2)
            if w.process.is_alive():
                w.process.terminate()
            w.conn.close()
        self._pool = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def pids(self) -> list[int]:
        """Process ids of the workers (to watch them, or to test worker loss)."""
        return [w.process.pid for w in self._pool]

    # --- internals --------------------------------------------------------------
    def _start(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        saved = {k: os.environ.get(k) for k in _ONE_THREAD_ENV}
        os.environ.update(dict.fromkeys(_ONE_THREAD_ENV, "1"))  # inherited at spawn
        try:
            process = self._ctx.Process(target=process_main, args=(child,), daemon=True, name="pmcbandit-worker")
            process.start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        child.close()
        return _Worker(process, parent)

    def _pump(self, flush: bool) -> None:
        """Send queued tickets to idle workers: full tasks, and a partial one when ``flush``."""
        for w in list(self._pool):
            if not self._queue or (len(self._queue) < self.pulls_per_task and not flush):
                return
            if w.tickets:
                continue
            tickets = [self._queue.popleft() for _ in range(min(self.pulls_per_task, len(self._queue)))]
            try:
                self._install(w)
                w.conn.send(("pull", self._token, self._spec, tickets))
            except OSError:  # died while idle: its replacement takes the tickets at the next pump
                self._queue.extendleft(reversed(tickets))
                self._replace(w)
                continue
            w.tickets, w.reported = tickets, 0
            w.last = time.monotonic()

    def _install(self, w: _Worker) -> None:
        if w.token != self._token:
            w.conn.send(("install", self._token, self._blob))
            w.token, w.installed = self._token, False

    def _receive(self, w: _Worker) -> None:
        """Read what ``w`` sent; if it died, re-queue or lose its unreported tickets."""
        try:
            while w.conn.poll():
                msg = w.conn.recv()
                if msg[0] == "outcome":
                    self._accept(w, msg[1])
                elif msg[0] == "ready":
                    w.started = True
                elif msg[0] == "installed" and msg[1] == w.token:
                    w.installed, w.last = True, time.monotonic()
                elif msg[0] == "install_failed":
                    raise RuntimeError(f"pmcbandit worker {w.process.pid} could not rebuild the arms: {msg[2]}")
        except (EOFError, OSError):
            pass
        if not w.process.is_alive():
            code = w.process.exitcode
            if not w.started and code is not None and code > 0:  # failed importing the main module, not killed
                raise RuntimeError(start_failure(code))
            self._lose(w)

    def _accept(self, w: _Worker, outcome: Outcome) -> None:
        w.reported += 1
        w.last = time.monotonic()
        if w.reported >= len(w.tickets):
            w.tickets, w.reported = [], 0
        if outcome.ticket in self._in_flight:
            self._in_flight.discard(outcome.ticket)
            self._done.append(outcome)

    def _lose(self, w: _Worker) -> None:
        left = w.tickets[w.reported :]
        seconds = time.monotonic() - w.last
        code = w.process.exitcode
        self._replace(w)
        if not left:
            return
        ticket, rest = left[0], left[1:]
        tries = self._retries.get(ticket, 0) + 1
        self._retries[ticket] = tries
        if tries > self.max_retries:
            self._in_flight.discard(ticket)
            self._done.append(
                Outcome(
                    ticket,
                    "lost",
                    None,
                    f"worker died (exit code {code}) {tries} times during this pull",
                    seconds,
                    seconds,
                )
            )
        else:
            rest = [ticket, *rest]
        self._queue.extendleft(reversed(rest))

    def _expire(self) -> None:
        """Report pulls past the timeout and replace their workers."""
        if self.timeout is None:
            return
        now = time.monotonic()
        for w in list(self._pool):
            if w.tickets and w.installed and now - w.last >= self.timeout:
                ticket, rest = w.tickets[w.reported], w.tickets[w.reported + 1 :]
                seconds = now - w.last
                self._replace(w)
                self._in_flight.discard(ticket)
                self._done.append(
                    Outcome(ticket, "timeout", None, f"pull exceeded the {self.timeout} s timeout", seconds, seconds)
                )
                self._queue.extendleft(reversed(rest))

    def _replace(self, w: _Worker) -> None:
        """Stop ``w`` (if it still runs) and put a fresh worker in its place."""
        if w.process.is_alive():
            w.process.kill()
        w.process.join(timeout=5)
        w.conn.close()
        self._pool[self._pool.index(w)] = self._start()

    def __repr__(self) -> str:
        return f"ProcessExecutor(workers={self.workers}, pulls_per_task={self.pulls_per_task})"
