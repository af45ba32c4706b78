"""The worker side of the out-of-process executors: arms shipped once, pulls made from tickets.

:class:`~pmcbandit.runtime.executors.processes.ProcessExecutor` and
:class:`~pmcbandit.runtime.executors.dask_cluster.DaskExecutor`
never send an arm with a task. The driver serialises the run's arms once (:func:`arm_payload`,
with cloudpickle, so a ``CallableArm`` of a lambda or a closure travels too) and each worker
unpickles them once and keeps them by the payload's hash (:func:`install`). Arms that hold
compiled functions are rebuilt from a picklable spec on the way: a
:class:`~pmcbandit.arms.evidence.ModelDensity` pickles as its ``pm.Model`` and is compiled once
per worker process (cached by the density's token, so every arm of the pool shares it, as in the
driver), and the evidence arms recompile or warm up their kernels in ``__setstate__``. A task is
a list of tickets (decision, arm index ``k``, pull index ``j``) and the run's stream spec (the
JSON form of :class:`~pmcbandit.runtime.streams.Streams`); pull ``(k, j)`` draws from
``streams.pull_rng(k, j)``, which depends on nothing but the seed, ``k`` and ``j``, so a pull
retried after its worker died gives the same values.

Cost. Each pull's CPU time is measured on its worker for the pull's own thread
(:func:`time.thread_time`): the worker's other threads (Dask's event loop, a pull in a
neighbouring thread) are not charged to it. Inside the pull, :meth:`pmcbandit.arms.Arm.pull`
measures with the same thread clock (:func:`pmcbandit.arms.base.thread_cpu_clock`), so an
arm's measured ``cost`` is per-thread too. numba's thread pool is pinned to one thread on a
worker (:func:`setup_worker`): a worker slot is one core, and a pull's numba work runs in
its own thread where the thread clock sees it. The heap is frozen for the cyclic collector while a task's pulls
run (:mod:`pmcbandit.runtime.heap`), as in the driver's loop.
"""

from __future__ import annotations

import hashlib
import os
import time
import traceback
from collections import OrderedDict

from pmcbandit.arms.base import thread_cpu_clock, warm_up_arms
from pmcbandit.runtime.executors.base import execute_pull
from pmcbandit.runtime.heap import frozen_heap

__all__ = ["arm_payload", "install", "uninstall", "worker_arms", "run_tickets", "setup_worker", "process_main"]

# Stream specs kept per worker process: a long-lived Dask worker serves run after run.
_MAX_CACHED = 8
_ARMS: dict = {}
_REFS: dict = {}
_STREAMS: OrderedDict = OrderedDict()
_SET_UP = False


def arm_payload(arms, door: str = "run") -> tuple[str, bytes]:
    """``(token, bytes)``: the arms pickled with cloudpickle and the SHA-1 of the bytes.

    Raises ``TypeError`` naming the first arm that cannot be pickled (an arm holding a lock,
    an open file or a compiled function without a spec), with the pickling error.
    """
    import cloudpickle

    try:
        blob = cloudpickle.dumps(list(arms))
    except Exception as whole:  # find the arm to name: pickling errors rarely say which object
        for arm in arms:
            try:
                cloudpickle.dumps(arm)
            except Exception as exc:
                raise TypeError(
                    f"The 'arms' parameter of {door} must hold arms that can be pickled for a process or Dask "
                    f"executor (they are rebuilt on each worker). Got arm {arm.name!r} ({type(arm).__name__}), "
                    f"which cannot: {type(exc).__name__}: {exc}. Keep its state picklable (give it "
                    "__getstate__/__setstate__ that rebuild compiled parts) or run it with executor=None or "
                    "'threads'."
                ) from exc
        raise TypeError(f"The 'arms' parameter of {door} could not be pickled: {whole}") from whole
    return hashlib.sha1(blob).hexdigest(), blob


def setup_worker() -> None:
    """Once per worker process: numba's thread pool pinned to one thread (see module docstring)."""
    global _SET_UP
    if _SET_UP:
        return
    import numba

    numba.set_num_threads(1)
    _SET_UP = True


def _remember(cache: OrderedDict, key, make):
    value = cache.get(key)
    if value is None:
        value = cache[key] = make()
        while len(cache) > _MAX_CACHED:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return value


def install(token: str, blob: bytes, keep_others: bool = True) -> list:
    """Unpickle payload ``token`` once in this process and keep it until as many :func:`uninstall`
    calls as installs (two Dask executors of one client may share a payload); ``keep_others=False``
    drops every other payload first: a process-pool worker serves one run at a time.
    """
    import cloudpickle

    if not keep_others:
        for other in [t for t in _ARMS if t != token]:
            del _ARMS[other], _REFS[other]
    arms = _ARMS.get(token)
    if arms is None:
        setup_worker()
        arms = _ARMS[token] = cloudpickle.loads(blob)
        warm_up_arms(arms)  # installing is set-up: compilation is not charged to a first pull
        _REFS[token] = 0
    _REFS[token] += 1
    return arms


def uninstall(token: str) -> None:
    """Release one reference to the arms installed under ``token``; the last one frees them."""
    if token in _REFS:
        _REFS[token] -= 1
        if _REFS[token] <= 0:
            del _ARMS[token], _REFS[token]


def worker_arms(token: str):
    """The arms of payload ``token`` (installed by :func:`install`)."""
    arms = _ARMS.get(token)
    if arms is None:
        raise RuntimeError(f"pmcbandit worker: the arms of payload {token[:12]} were never installed on this worker")
    return arms


def _streams(spec: str):
    import json

    from pmcbandit.runtime.streams import Streams

    return _remember(_STREAMS, spec, lambda: Streams.from_json(json.loads(spec)))


def run_tickets(token: str, streams_spec: str, tickets, send=None) -> list:
    """Make the pulls of ``tickets`` in order with the installed arms of payload ``token``; return
    their Outcomes (each also passed to ``send`` as soon as it is made, when given), with ``cpu``
    the pull thread's CPU seconds.
    """
    setup_worker()
    arms = worker_arms(token)
    streams = _streams(streams_spec)
    out = []
    with thread_cpu_clock(), frozen_heap():  # no collection's walk of the installed arms charged to a pull
        for ticket in tickets:
            start = time.thread_time()
            outcome = execute_pull(arms[ticket.arm], streams.pull_rng(ticket.arm, ticket.pull_index), ticket)
            outcome = outcome._replace(cpu=time.thread_time() - start)
            if send is not None:
                send(outcome)
            out.append(outcome)
    return out


def process_main(conn) -> None:
    """Loop of a :class:`~pmcbandit.runtime.executors.processes.ProcessExecutor` worker: serve messages from ``conn``.

    ``("install", token, blob)`` unpickles arms; ``("pull", token, streams_spec, tickets)`` makes
    the pulls and sends each Outcome back as it is made; ``("stop",)`` or a closed pipe ends it.
    A pull whose Outcome cannot be pickled back is sent as an ``"error"`` outcome instead.
    """
    setup_worker()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg[0] == "stop":
            return
        if msg[0] == "install":
            try:
                install(msg[1], msg[2], keep_others=False)
            except Exception as exc:  # the driver raises it: the arms cannot be rebuilt here
                last = traceback.format_exception_only(type(exc), exc)[-1].strip()
                conn.send(("install_failed", msg[1], last))
                continue
            conn.send(("installed", msg[1]))
            continue
        _, token, spec, tickets = msg

        def send(outcome):
            try:
                conn.send(("outcome", outcome))
            except Exception as exc:  # e.g. an info dict holding something unpicklable
                conn.send(("outcome", outcome._replace(status="error", pull=None,
                                                       message=f"result could not be sent back: {exc}")))

        run_tickets(token, spec, tickets, send)
