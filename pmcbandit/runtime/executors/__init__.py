"""Executors: where the pulls of a run happen.

:mod:`~pmcbandit.runtime.executors.base` (what they all share: the ticket, the outcome,
:func:`~pmcbandit.runtime.executors.base.execute_pull`; it imports no other executor),
:mod:`~pmcbandit.runtime.executors.local` (inline and threads, and :func:`make_executor`, which
turns a door's ``executor=`` argument into an executor), :mod:`~pmcbandit.runtime.executors.processes`
(spawned worker processes, and :mod:`~pmcbandit.runtime.executors.main_guard`, the main script's guard they
need), :mod:`~pmcbandit.runtime.executors.dask_cluster` (a Dask cluster) and
:mod:`~pmcbandit.runtime.executors.worker` (what runs on the worker side). Every executor meets the
loop through the :class:`~pmcbandit.base.Executor` protocol.

Inside the folder imports point from the executors to ``worker`` and ``base``, never back.
May import: the helpers, :mod:`pmcbandit.arms`, and :mod:`pmcbandit.runtime.streams`.
"""
