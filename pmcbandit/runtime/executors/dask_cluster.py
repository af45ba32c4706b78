"""Pulls on a Dask cluster: ``run(..., executor=client)`` with a ``dask.distributed.Client``.

The same call runs on a ``LocalCluster`` or a cluster of many machines: the driver (the process
that calls :func:`pmcbandit.run`) keeps the policy and submits one task per pull (or per
``pulls_per_task`` pulls), each carrying only tickets — (decision, arm index ``k``, pull index
``j``) — and the run's stream spec. The arms travel once: :meth:`DaskExecutor.bind` registers a
worker plugin holding the cloudpickled arms, which Dask installs on every worker, present and
future (a worker that replaces a dead one gets it too); evidence arms are rebuilt there from
their ``pm.Model`` (:mod:`pmcbandit.runtime.executors.worker`). Registering blocks until every worker has built
the arms, so neither compilation nor start-up is charged to a pull or to a time budget.

Worker loss. When a worker dies with pulls running, the scheduler runs them again elsewhere
(Dask's ``distributed.scheduler.allowed-failures`` retries, 3 by default); a pull's stream is a
function of ``(seed, k, j)`` only, so the retry returns the same values. A task that exhausts
the retries (``KilledWorker``) is reported with status ``"lost"`` for its pulls, which does not
count towards quarantine.

Timeouts. Dask cannot interrupt a running task, so a task that has been processing on one worker
for more than ``timeout`` seconds times its number of pulls (the driver asks the scheduler where
each task in flight is processing, every quarter of the timeout and again before it declares one
late; time queued for a free worker does not count, and a task that the loss of its worker sent
to another worker starts a fresh clock there) is reported ``"timeout"`` for all its pulls, its
future cancelled, and the process of the worker running it *now* ended (``os._exit`` sent to the
worker's event loop, which works on any machine of the cluster); its nanny starts a fresh worker,
as after any worker loss, which frees the slot while the run goes on with the other workers. A
worker without a nanny (``processes=False``, whose workers live in the driver's process) is left
alone, with a warning: its slot stays busy until the pull ends.

A run gives back the workers it ended: before it returns, it waits (at most
:data:`REPLACEMENT_TIMEOUT` seconds) until a worker of the same name runs again in place of each
(and, where the client holds its cluster, until that worker's nanny has taken it: a fresh worker registers with
the scheduler before it reports to its nanny, whose start can still fail and end it).
A ``SpecCluster`` (``LocalCluster`` included) closes the nanny of a worker lost for longer than
``distributed.deploy.lost-worker-timeout``, so a nanny whose fresh worker took longer to start
(importing the package and installing the arms on a loaded machine) is gone for good; when the
client holds that cluster object, the run asks it to start the worker again (``cluster.scale`` to
its own size), as soon as it sees the nanny closed. So it does for a nanny whose fresh worker failed to
start (it registered before the scheduler had removed the ended worker of its name): such a nanny closes
itself, or stays up without a worker (then after :data:`STUCK_NANNY_SECONDS`), and the run takes it out of
the cluster's list so the cluster starts the worker again from its spec. A worker still missing at the end
of the wait is reported with a ``SettingsWarning``: the cluster serves later runs with fewer slots until it
is restored.

Pulls still in flight when a run ends are cancelled; one already running finishes on its worker
and its result is dropped.
"""

from __future__ import annotations

import json
import queue
import time
import traceback
import warnings

from pmcbandit.exceptions import SettingsWarning
from pmcbandit.runtime.executors.base import Outcome, caller_stacklevel
from pmcbandit.runtime.executors.worker import arm_payload

__all__ = ["DaskExecutor", "ArmsPlugin", "REPLACEMENT_TIMEOUT", "STUCK_NANNY_SECONDS"]

REPLACEMENT_TIMEOUT = 120.0
#: Seconds a nanny may stay up without a running worker (its restart failed) before the run has the cluster
#: replace it; a nanny restarting its worker has one within this time.
STUCK_NANNY_SECONDS = 5.0
"""Seconds a run waits, before it returns, for a worker of the same name to run again in place of
each worker it ended (see "Timeouts" in the module docstring)."""


def _plugin_base():
    from distributed.diagnostics.plugin import WorkerPlugin

    return WorkerPlugin


class ArmsPlugin(_plugin_base()):
    """A Dask worker plugin that installs the arms of one run on every worker it reaches."""

    def __init__(self, token: str, blob: bytes):
        self.token, self.blob = token, blob

    def setup(self, worker=None):
        from pmcbandit.runtime.executors.worker import install

        install(self.token, self.blob)

    def teardown(self, worker=None):
        from pmcbandit.runtime.executors.worker import uninstall

        uninstall(self.token)


def _dask_pull(token: str, spec: str, tickets) -> list:
    from pmcbandit.runtime.executors.worker import run_tickets

    return run_tickets(token, spec, tickets)


async def _exit_worker() -> None:
    """Run on a worker's event loop (beside the stuck task; a coroutine, so that the driver need not
    wait for an answer that cannot come): end the process at once.
    """
    import os

    os._exit(75)


def _processing_on(dask_scheduler=None, keys=()):
    """``{key: address}`` of the tasks among ``keys`` that a worker is processing (run on the scheduler)."""
    out = {}
    for key in keys:
        ts = dask_scheduler.tasks.get(key)
        if ts is not None and ts.processing_on is not None:
            out[key] = ts.processing_on.address
    return out


class DaskExecutor:
    """Pull on the workers of a Dask ``Client`` (see the module docstring).

    Parameters
    ----------
    client : dask.distributed.Client
        Its cluster's workers at construction set the capacity (their total threads); a
        cluster of single-threaded worker processes gives each pull a core and exact
        per-pull CPU accounting. The client is not closed by the executor.
    pulls_per_task : int
        Pulls per Dask task: more than 1 amortises the scheduler round trip (a few ms) over
        several short pulls; the capacity becomes ``threads * pulls_per_task``.
    timeout : float, optional
        Seconds one pull may take (see "Timeouts").
    """

    remote = True
    kind = "dask"

    def __init__(self, client, *, pulls_per_task: int = 1, timeout: float | None = None):
        if int(pulls_per_task) != pulls_per_task or pulls_per_task < 1:
            raise ValueError(
                f"The 'pulls_per_task' parameter of DaskExecutor must be an int >= 1. Got {pulls_per_task!r} instead."
            )
        threads = client.nthreads()
        if not threads:
            raise ValueError(
                f"The 'client' parameter of DaskExecutor must be connected to a cluster with workers. Got {client!r}, "
                "whose cluster has none, instead."
            )
        self.client = client
        self.pulls_per_task = int(pulls_per_task)
        self.workers = len(threads)
        self.capacity = sum(threads.values()) * self.pulls_per_task
        self.timeout = timeout
        self._plugin_name = None
        self._token = self._spec = None
        self._buffer: list = []
        self._futures: dict = {}  # future -> [tickets, submitted at, processing since, worker address]
        self._ended: dict = {}  # address of a worker ended after a timed-out pull -> its name
        self._respecified: set = set()  # names of those the client's cluster was asked to start again
        self._stuck_since: dict = {}  # name -> when its nanny was first seen without a running worker
        self._finished: queue.SimpleQueue = queue.SimpleQueue()  # filled by the futures' done callbacks

    def bind(self, arms, streams) -> None:
        """Install the arms on every worker (a worker plugin) and block until they are built."""
        token, blob = arm_payload(arms)
        self._spec = json.dumps(streams.to_json(), sort_keys=True)
        name = f"pmcbandit-arms-{token[:16]}-{id(self):x}"
        if name != self._plugin_name:
            self._unregister()
            self.client.register_plugin(ArmsPlugin(token, blob), name=name)
            self._plugin_name = name
        self._token = token

    def submit(self, ticket) -> None:
        self._buffer.append(ticket)
        if len(self._buffer) >= self.pulls_per_task:
            self._flush()

    def in_flight(self) -> int:
        return len(self._buffer) + sum(len(entry[0]) for entry in self._futures.values())

    def wait(self) -> list:
        """Block until at least one task came back (or timed out); return its pulls' Outcomes."""
        self._flush()
        out: list = []
        while not out and self._futures:
            timeout = None
            if self.timeout is not None:
                self._observe_running()
                now = time.monotonic()
                ends = [since + self.timeout * len(tickets)
                        for tickets, _, since, _ in self._futures.values() if since is not None]
                timeout = min([self.timeout / 4] + [max(0.0, end - now) for end in ends])
            try:
                future, result = self._finished.get(timeout=timeout)
                while True:
                    if future in self._futures:  # not one cancelled after a timeout
                        out += self._collect(future, result)
                    future, result = self._finished.get_nowait()
            except queue.Empty:
                pass
            out += self._expire()
            if self._ended:
                self._revive(set(self._ended.values()))
        return out

    def shutdown(self) -> None:
        """Cancel the run's pulls still in flight (the client and the installed arms stay), and wait
        for the workers ended after timed-out pulls to be replaced (see "Timeouts").
        """
        self._buffer = []
        if self._futures:
            self.client.cancel(list(self._futures))
        self._futures = {}
        self._finished = queue.SimpleQueue()
        if self._ended:
            ended, self._ended = self._ended, {}
            self._await_replacements(ended)

    def close(self) -> None:
        """Remove the arms from the workers (run by :func:`pmcbandit.run` when it built the executor)."""
        self.shutdown()
        self._unregister()

    # --- internals --------------------------------------------------------------
    def _unregister(self) -> None:
        if self._plugin_name is not None:
            try:
                self.client.unregister_worker_plugin(self._plugin_name)
            except Exception:  # already gone (a restarted scheduler): nothing to remove
                pass
            self._plugin_name = None

    def _flush(self) -> None:
        if not self._buffer:
            return
        tickets, self._buffer = self._buffer, []
        future = self.client.submit(_dask_pull, self._token, self._spec, tickets, pure=False,
                                    key=f"pmcbandit-pull-{tickets[0].arm}-{tickets[0].pull_index}-{time.time_ns()}")
        self._futures[future] = [tickets, time.monotonic(), None, None]
        # Completion is pushed to the driver (Dask runs the callback in a thread of its own), which
        # then waits on a plain queue instead of a round trip through the client's event loop.
        future.add_done_callback(self._fetch)

    def _fetch(self, future) -> None:
        """Done callback (a Dask thread): fetch a finished task's result there, off the driver's path."""
        result = None
        if future.status == "finished":
            try:
                result = future.result()
            except Exception:  # cancelled or lost meanwhile: _collect reads the status again
                result = None
        self._finished.put((future, result))

    def _collect(self, future, result=None) -> list:
        tickets, t0, _, _ = self._futures.pop(future)
        if result is not None:
            return result
        if future.status == "finished":
            return future.result()
        seconds = time.monotonic() - t0
        from distributed.scheduler import KilledWorker

        exc = future.exception() if future.status == "error" else None
        if exc is None or isinstance(exc, KilledWorker):
            why = "cancelled" if exc is None else f"its worker died too often ({exc})"
            return [Outcome(t, "lost", None, f"pull lost: {why}", seconds, seconds) for t in tickets]
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return [Outcome(t, "error", None, f"task failed on its worker: {last}", seconds, seconds) for t in tickets]

    def _observe_running(self) -> None:
        """Note where each in-flight task is processing and since when: a task seen on a worker other
        than the one noted (its worker was lost and the scheduler sent it elsewhere) starts a fresh
        clock there, and one back in the scheduler's queue has none.
        """
        if not self._futures:
            return
        tracked = {f.key: f for f in self._futures}
        where = self.client.run_on_scheduler(_processing_on, keys=list(tracked))
        now = time.monotonic()
        for key, future in tracked.items():
            entry = self._futures.get(future)
            if entry is None:
                continue
            address = where.get(key)
            if address is None:
                entry[2] = entry[3] = None
            elif address != entry[3]:
                entry[2], entry[3] = now, address

    def _expire(self) -> list:
        """Tasks processing for longer than their timeout: reported, cancelled, their workers restarted."""
        if self.timeout is None:
            return []
        def late(now):
            return [f for f, (tickets, _, since, _) in self._futures.items()
                    if since is not None and now - since >= self.timeout * len(tickets)]

        if not late(time.monotonic()):
            return []
        self._observe_running()  # where the late ones run now: a worker lost meanwhile moved them
        now = time.monotonic()
        out = []
        for future in late(now):
            tickets, t0, _, address = self._futures[future]
            del self._futures[future]
            future.cancel()
            seconds = now - t0
            msg = f"pull exceeded the {self.timeout} s timeout"
            out += [Outcome(t, "timeout", None, msg, seconds, seconds) for t in tickets]
            self._restart(address)
        return out

    def _restart(self, address: str) -> None:
        """Free ``address``'s slot: end its process (its nanny starts a fresh one, as after any
        worker loss; :meth:`shutdown` waits for it). Never a worker without a nanny: it may live in
        this very process.
        """
        try:
            info = self.client.scheduler_info().get("workers", {}).get(address)
            if info is None:
                return  # gone already (ended after another timed-out pull): its slot is being freed
            if not info.get("nanny"):
                warnings.warn(f"pmcbandit: Dask worker {address} has no nanny to restart it after a pull timed out; "
                              "its slot stays busy until the pull ends", SettingsWarning,
                              stacklevel=caller_stacklevel())
                return
            self.client.run(_exit_worker, workers=[address], wait=False)
            self._ended[address] = info.get("name", address)
        except Exception as exc:  # the cluster is going away: nothing left to free
            warnings.warn(f"pmcbandit: could not restart Dask worker {address} after a pull timed out ({exc})",
                          SettingsWarning, stacklevel=caller_stacklevel())

    def _await_replacements(self, ended: dict) -> None:
        """Block until a worker of each name in ``ended`` (worker address -> name) runs again at
        another address, for at most :data:`REPLACEMENT_TIMEOUT` seconds; ask the client's
        ``SpecCluster`` to start again a worker whose nanny it closed; warn about those still
        missing at the end.
        """
        waiting = set(ended.values())
        start = time.monotonic()
        while True:
            try:
                workers = self.client.scheduler_info().get("workers", {})
            except Exception:  # the cluster is going away: nothing left to wait for
                return
            waiting -= {info.get("name", address) for address, info in workers.items()
                        if address not in ended and info.get("status", "running") == "running"
                        and self._nanny_agrees(info.get("name", address), address)}
            if not waiting or time.monotonic() - start >= REPLACEMENT_TIMEOUT:
                break
            self._revive(waiting)
            time.sleep(0.1)
        if waiting:
            warnings.warn(
                f"pmcbandit: the Dask worker(s) named {sorted(map(str, waiting))} did not run again within "
                f"{REPLACEMENT_TIMEOUT:g} s of being ended for a timed-out pull: the cluster serves later runs with "
                "fewer slots until it is restored (e.g. cluster.scale or client.restart).",
                SettingsWarning, stacklevel=caller_stacklevel())

    def _revive(self, names: set) -> None:
        """Ask the client's ``SpecCluster`` (once per name) to start again the workers among ``names``
        whose nanny it closed: it starts them from its own spec (``cluster.scale`` to its size).
        """
        cluster = getattr(self.client, "cluster", None)
        spec, started = getattr(cluster, "worker_spec", None), getattr(cluster, "workers", None)
        if not isinstance(spec, dict) or not isinstance(started, dict):
            return
        for name in names & set(started):
            # A nanny whose fresh worker failed to start (registering before the scheduler had removed the
            # ended worker of its name: "name taken") closes itself, or stays up without a worker, and does
            # not try again. The cluster starts the worker again from its spec once the nanny is out of its list.
            nanny = started[name]
            process = getattr(nanny, "process", False)
            stuck = _status(nanny) == "running" and (process is None or _status(process) in ("failed", "stopped"))
            if not stuck:
                self._stuck_since.pop(name, None)
            if _status(nanny) in ("closed", "failed") or (stuck and self._stuck_for(name) >= STUCK_NANNY_SECONDS):
                started.pop(name)
                self._respecified.discard(name)
                self._stuck_since.pop(name, None)
                if stuck:
                    try:
                        cluster.sync(nanny.close)
                    except Exception:  # a nanny that cannot close: the cluster starts another in its place
                        pass
        closed = {name for name in names if name in spec and name not in started} - self._respecified
        if closed:
            self._respecified |= closed
            try:
                cluster.scale(len(spec))
            except Exception:  # not a cluster that can: left to the wait and its warning
                pass

    def _nanny_agrees(self, name, address: str) -> bool:
        """Whether the nanny of ``name`` has taken the worker at ``address`` as its own: a fresh worker
        registers with the scheduler before it reports to its nanny, which may still fail its start and
        end it. True when the client holds no cluster whose nanny can be read.
        """
        started = getattr(getattr(self.client, "cluster", None), "workers", None)
        nanny = started.get(name) if isinstance(started, dict) else None
        process = getattr(nanny, "process", None)
        if process is None or not hasattr(process, "worker_address"):
            return True
        return _status(process) == "running" and process.worker_address == address

    def _stuck_for(self, name) -> float:
        """Seconds since the nanny of ``name`` was first seen up without a running worker."""
        now = time.monotonic()
        return now - self._stuck_since.setdefault(name, now)

    def __repr__(self) -> str:
        return f"DaskExecutor(workers={self.workers}, capacity={self.capacity}, pulls_per_task={self.pulls_per_task})"


def _status(obj) -> str | None:
    """The name of the Dask status of a nanny or its worker process (``"running"``, ``"failed"``, ...), None when
    unknown.
    """
    return getattr(getattr(obj, "status", None), "name", None)
