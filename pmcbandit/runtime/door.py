"""The one door contract: every public entry point builds and drives its run here.

:func:`pmcbandit.run`, :func:`pmcbandit.estimate_evidence`, :func:`pmcbandit.identify`,
:func:`pmcbandit.compare_samplers`, :func:`pmcbandit.identify_full_bandit` (and
:func:`pmcbandit.compare_models`, through :func:`pmcbandit.estimate_evidence`) differ only in their
learner (:class:`~pmcbandit.base.Learner`) and their result. The rest is the same for all of them
and lives here, so budgets, progress bars, callbacks, checkpoints, executors, faults and warnings
behave identically whichever door the user called:

1. :func:`loop_options` checks the keywords every door shares (``budget``, ``max_faults``,
   ``max_in_flight``, ``pull_timeout``, ``executor``, ``progressbar``, ``callback``,
   ``checkpoint``, ``checkpoint_every``) before any expensive work, with the door's name in every
   message, and with ``executor="processes"`` the main script's ``if __name__ == "__main__":`` guard
   (:func:`~pmcbandit.runtime.executors.main_guard.check_main_guard`);
2. :func:`drive_run` converts ``random_seed`` once into the run's streams
   (:mod:`pmcbandit.runtime.streams`), builds the :class:`~pmcbandit.runtime.engine.Engine`
   around the door's learner, opens the executor, freezes the settings
   (:class:`~pmcbandit.runtime.config.RunConfig`) and drives the one loop
   (:func:`pmcbandit.runtime.loop.drive`);
3. the door builds its result from the :class:`DoorRun` and hands it to :func:`emit_warnings`,
   which issues each of the result's warnings once, as its :class:`~pmcbandit.exceptions.PmcBanditWarning`
   class, pointing at the caller's line.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import NamedTuple

from pmcbandit.exceptions import log_notes
from pmcbandit._rng import check_seed
from pmcbandit._validation import check_loop_options
from pmcbandit.arms.base import warm_up_arms
from pmcbandit.exceptions import PmcBanditWarning
from pmcbandit.runtime.budget import Budget, as_budget, budget_label
from pmcbandit.runtime.checkpoint import check_checkpoint, run_streams, warn_if_reused
from pmcbandit.runtime.config import RunConfig
from pmcbandit.runtime.engine import Engine
from pmcbandit.runtime.faults import warn_faults
from pmcbandit.runtime.executors.local import open_executor
from pmcbandit.runtime.executors.main_guard import check_main_guard
from pmcbandit.runtime.loop import drive

__all__ = ["LoopOptions", "DoorRun", "loop_options", "drive_run", "emit_warnings"]


class LoopOptions(NamedTuple):
    """The checked keywords every door shares (their meaning is documented in :func:`pmcbandit.run`)."""

    budget: Budget
    max_faults: int
    max_in_flight: int | None
    pull_timeout: float | None
    executor: object
    progressbar: bool
    callback: Callable | None
    checkpoint: str | os.PathLike | None
    checkpoint_every: float
    #: The budget as the user gave it (:func:`~pmcbandit.runtime.budget.budget_label`): ``settings["budget"]``, also
    #: when a door runs the pulls on what set-up left of it.
    budget_label: str = ""


class DoorRun(NamedTuple):
    """What the loop leaves for a door to build its result from."""

    engine: Engine
    settings: dict
    stopped_by: str


def loop_options(
    door: str,
    *,
    budget,
    random_seed,
    max_faults,
    max_in_flight,
    pull_timeout,
    executor,
    progressbar,
    callback,
    checkpoint,
    checkpoint_every,
) -> LoopOptions:
    """Check the shared keywords of ``door`` (``TypeError``/``ValueError`` naming the parameter and the door).

    ``random_seed`` is only checked here (an int >= 0, a Generator or None); :func:`drive_run`
    converts it.
    """
    label = budget_label(budget)
    budget = as_budget(budget, door)
    check_seed(random_seed, door)
    check_loop_options(
        door,
        max_faults=max_faults,
        max_in_flight=max_in_flight,
        pull_timeout=pull_timeout,
        progressbar=progressbar,
        callback=callback,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
    )
    check_checkpoint(checkpoint, door)
    if (executor == "processes" if isinstance(executor, str) else getattr(executor, "kind", None) == "processes"):
        check_main_guard(door)
    return LoopOptions(
        budget,
        int(max_faults),
        max_in_flight,
        pull_timeout,
        executor,
        progressbar,
        callback,
        checkpoint,
        float(checkpoint_every),
        label,
    )


def drive_run(
    door: str, arms, learner, random_seed, options: LoopOptions, *, config: dict, guards=None, bounds=None, watch=None
) -> DoorRun:
    """Build the engine around ``learner`` and drive the one loop (module docstring, step 2).

    Parameters
    ----------
    door : str
        The public function the user called (every message names it).
    arms : list of Arm
        Checked by the door.
    learner : Learner
        What chooses the decisions (:class:`~pmcbandit.base.Learner`).
    random_seed : int, Generator or None
        Converted once; with ``None`` and an existing checkpoint, the checkpoint's recorded entropy.
    options : LoopOptions
    config : dict
        The door's own :class:`~pmcbandit.runtime.config.RunConfig` fields (``kind``, ``policy``,
        ``policy_params`` and whichever of ``combine``, ``reward``, ``k``, ``delta``, ... apply).
    guards : Guards, optional
        The rules around an allocation policy (:mod:`pmcbandit.runtime.guards`).
    bounds : (float, float), optional
        Range of valid observations (outside is a fault).
    watch : object, optional
        The standard error a ``TargetSE`` budget compares.
    """
    streams = run_streams(random_seed, options.checkpoint, door)
    engine = Engine(arms, learner, streams, options.max_faults, bounds, guards)
    with open_executor(options.max_in_flight, options.pull_timeout, options.executor, door) as ex:
        if not getattr(
            ex.pool, "remote", False
        ):  # compile before the clock starts (Arm.warm_up); workers do it on install
            warm_up_arms(arms)
        run_config = RunConfig(
            budget=options.budget_label or repr(options.budget),
            arm_names=tuple(a.name for a in arms),
            families=tuple(a.family for a in arms),
            log_scale=engine.log_scale,
            streams=streams.to_json(),
            max_faults=options.max_faults,
            max_in_flight=ex.max_in_flight,
            pull_timeout=options.pull_timeout,
            executor=ex.kind,
            workers=ex.workers,
            bounds=None if bounds is None else tuple(bounds),
            **config,
        )
        settings = run_config.settings(
            door=door, deterministic=[bool(getattr(a, "deterministic", False)) for a in arms]
        )
        stopped_by = drive(
            engine,
            options.budget,
            ex.pool,
            settings,
            watch=watch,
            progressbar=options.progressbar,
            callback=options.callback,
            checkpoint=options.checkpoint,
            checkpoint_every=options.checkpoint_every,
            max_in_flight=ex.max_in_flight,
        )
    warn_if_reused(settings, len(engine.history))
    warn_faults(engine, door)
    return DoorRun(engine, settings, stopped_by)


def emit_warnings(result, stacklevel: int = 3) -> None:
    """Issue each of ``result.warnings()`` once, pointing at the line that called the door, and log
    each of the result's notes once at INFO on the ``pmcbandit`` logger (:mod:`pmcbandit.exceptions`).

    An entry is a message: a :class:`~pmcbandit.exceptions.WarningText` (issued as its
    ``category``), a plain string (a :class:`~pmcbandit.exceptions.PmcBanditWarning`), or a
    ``(category, message)`` pair. Entries in ``result.issued`` were issued by the door before the
    run and are not issued again. ``stacklevel`` 3: this function, the door, the caller.
    """
    issued = {str(m) for m in getattr(result, "issued", ())}
    for entry in dict.fromkeys(result.warnings()):
        category, message = entry if isinstance(entry, tuple) else (getattr(entry, "category", PmcBanditWarning), entry)
        if str(message) not in issued:
            warnings.warn(str(message), category, stacklevel=stacklevel)
    log_notes(getattr(result, "notes", ()))
