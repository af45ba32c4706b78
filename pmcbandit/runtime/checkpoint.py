"""Checkpoints of a run: an ``.npz`` file (no pickle) written while it runs, and the replay that resumes it.

A checkpoint holds the history (:mod:`pmcbandit.runtime.history`), the settings, the number of decisions
dispatched, the per-arm flags and weight tails of the reliability check
(:class:`pmcbandit.stats.psis.WeightTails`) and the schedule of a ``TargetSE`` budget. Resuming replays
the recorded pulls through a fresh :class:`~pmcbandit.runtime.engine.Engine` (the policy consumes its
stream exactly as before, faults and quarantines included) and re-submits the pulls that were in
flight with their original streams, so a resumed run with the same seed gives the same result as
an uninterrupted one for ``Pulls`` and ``TargetSE`` budgets (``max_in_flight=1``).
"""

from __future__ import annotations

import json
import os

import numpy as np

from pmcbandit._rng import get_random_generator
from pmcbandit.runtime.config import FINGERPRINT
from pmcbandit.runtime.engine import Engine
from pmcbandit.runtime.guards import Plan
from pmcbandit.runtime.history import COLUMNS, History, PullRecord
from pmcbandit.stats.psis import WeightTails
from pmcbandit.runtime.streams import Streams

__all__ = ["CHECKPOINT_VERSION", "save_checkpoint", "resume", "run_streams"]

#: Layout version (2: the history's ``reason`` and ``seconds`` columns, reliability flags and weight tails;
#: 3: status ``lost`` (5) for pulls lost with their worker, and ``cpu`` counting remote workers' CPU).
CHECKPOINT_VERSION = 3


def run_streams(random_seed, checkpoint, owner: str = "run") -> Streams:
    """Streams from the seed (``owner`` names the door in errors); when resuming with no seed, from the
    checkpoint."""
    if random_seed is None and checkpoint is not None and os.path.exists(checkpoint):
        with np.load(checkpoint, allow_pickle=False) as data:
            return Streams.from_json(json.loads(str(data["settings_json"]))["streams"])
    return Streams.from_generator(get_random_generator(random_seed, owner))


def save_checkpoint(path, engine: Engine, settings: dict, watch=None) -> None:
    """Write history and settings atomically to an ``.npz`` (loads without running code)."""
    data = engine.history.to_npz_dict()
    data["settings_json"] = np.asarray(json.dumps(settings))
    data["selected"] = np.asarray(engine.selected)
    data["version"] = np.asarray(CHECKPOINT_VERSION)
    data["info_replayable"] = np.asarray(engine.info_replayable)
    data["unreliable_since"] = engine.unreliable_since.copy()
    if engine.tails is not None:
        data.update(engine.tails.to_npz_dict("tails_"))
    if watch is not None:
        data["se_watch"] = np.asarray([watch.next_n, watch.value], dtype=np.float64)
    tmp = f"{os.fspath(path)}.tmp.npz"
    np.savez(tmp, **data)
    os.replace(tmp, path)


def resume(engine: Engine, path, settings: dict, executor, watch, exact: bool) -> None:
    """Replay a checkpoint through ``engine`` and re-submit the pulls that were in flight.

    ``exact``: the run's choices are a deterministic function of its seed (no time rules), so
    every decision is re-made by the engine and must equal the recorded one. Otherwise (a time
    budget, whose guards read the clock) each decision is re-opened with its recorded arm and
    reason.
    """
    with np.load(path, allow_pickle=False) as data:
        version = int(data["version"]) if "version" in data else 1
        if version > CHECKPOINT_VERSION:
            raise ValueError(
                f"The checkpoint {os.fspath(path)!r} has layout version {version}, newer than this pmcbandit reads "
                f"({CHECKPOINT_VERSION}); resume it with the pmcbandit that wrote it."
            )
        saved = json.loads(str(data["settings_json"]))
        history = History.from_npz_dict(data)
        selected = int(data["selected"])
        se_watch = data["se_watch"] if "se_watch" in data else None
        info_replayable = bool(data["info_replayable"]) if "info_replayable" in data else True
        if "unreliable_since" in data:
            engine.unreliable_since[:] = data["unreliable_since"]
        if engine.tails is not None and "tails_counts" in data:
            engine.tails = WeightTails.from_npz_dict(data, "tails_")
    # Checkpoints written before the running centre existed scored every loss against the first observation;
    # those written before identification runs existed were all allocation runs.
    saved.setdefault("centre", None if saved.get("reward") == "paired" else "bounds" if saved.get("bounds") else "first")
    saved.setdefault("kind", "allocation")
    for key in FINGERPRINT:
        if saved.get(key) != settings.get(key):
            raise ValueError(
                f"The checkpoint {os.fspath(path)!r} was written with {key}={saved.get(key)!r}, but this run has "
                f"{key}={settings.get(key)!r}; use the same arms, policy, reward and seed to resume."
            )
    if not info_replayable:
        raise ValueError(
            f"The checkpoint {os.fspath(path)!r} cannot be resumed exactly: its policy ({saved.get('policy')!r}) "
            "was fed pull info that checkpoints do not record (only the arms' declared float diagnostics are "
            "kept), so replaying it would not rebuild the policy's state. Start a new run."
        )
    if history.diagnostics != engine.history.diagnostics:
        raise ValueError(
            f"The checkpoint {os.fspath(path)!r} has diagnostics {history.diagnostics!r}, but the arms declare "
            f"{engine.history.diagnostics!r}; use the same arms to resume."
        )
    cols = [history.column(c).tolist() for c in COLUMNS]
    rows = [PullRecord(*(c[r] for c in cols)) for r in range(len(history))]
    recorded = {}
    for rec in rows:
        recorded.setdefault(rec.decision, (rec.arm, rec.reason))
    diags = [history.column(d).tolist() for d in history.diagnostics]
    fault_msgs = {row: msg for row, _, _, msg in history.faults}

    def reopen() -> None:
        if exact or engine.selected not in recorded:
            engine.dispatch()
        else:
            arm, reason = recorded[engine.selected]
            engine.dispatch(Plan(arm, reason, np.ones(engine.n_arms, dtype=bool)))

    for r, rec in enumerate(rows):
        while engine.selected < rec.selected_before:  # dispatch exactly as the original run did
            reopen()
        decision = engine.decisions.get(rec.decision)
        if decision is None or rec.arm not in decision.arms:
            raise ValueError(f"The checkpoint {os.fspath(path)!r} does not replay: the policy chose differently.")
        engine.absorb((rec, tuple(d[r] for d in diags), fault_msgs.get(r, ""), None))
    while engine.selected < selected:
        reopen()
    if rows:
        engine.wall_offset = float(rows[-1].wall)
        engine.cpu_offset = float(rows[-1].cpu)
    engine.restart_clock()
    if watch is not None and se_watch is not None:
        watch.next_n, watch.value = int(se_watch[0]), float(se_watch[1])
    for ticket in engine.pending_tickets():
        executor.submit(ticket)
