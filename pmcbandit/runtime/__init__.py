"""The runtime: the one loop every door drives, and what it needs around it.

Lives here: the engine (decisions, pulls, faults, :mod:`~pmcbandit.runtime.engine`), the loop
(:mod:`~pmcbandit.runtime.loop`), the guards of a time budget (:mod:`~pmcbandit.runtime.guards`),
budgets (:mod:`~pmcbandit.runtime.budget`), the pull history (:mod:`~pmcbandit.runtime.history`),
seed streams (:mod:`~pmcbandit.runtime.streams`), the heap frozen for the collector while a run pulls
(:mod:`~pmcbandit.runtime.heap`), checkpoints
(:mod:`~pmcbandit.runtime.checkpoint`), the frozen settings of a run
(:mod:`~pmcbandit.runtime.config`), the one helper that builds and drives a run for every door
(:mod:`~pmcbandit.runtime.door`) and the executors (:mod:`pmcbandit.runtime.executors`).

May import: the helpers (``pmcbandit._rng``, ``_validation``, ``base``, ``exceptions``),
:mod:`pmcbandit.stats` and :mod:`pmcbandit.arms`. Never the algorithm families (policies,
identification, compare, full_bandit), the doors or diagnostics: learners reach the loop through
the :class:`~pmcbandit.base.Learner` protocol.
"""
