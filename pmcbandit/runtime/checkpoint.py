"""Checkpoints of a run: an ``.npz`` file (no pickle) written while it runs, and the replay that resumes it.

A checkpoint holds the history (:mod:`pmcbandit.runtime.history`), the settings, the number of decisions
dispatched, the per-arm flags and weight tails of the reliability check
(:class:`pmcbandit.stats.psis.WeightTails`) with the log of the arms whose variance estimate the guards did not
trust (:mod:`pmcbandit.runtime.guards`, rule 5), and the schedule of a ``TargetSE`` budget. Resuming replays
the recorded pulls through a fresh :class:`~pmcbandit.runtime.engine.Engine` (the policy consumes its
stream exactly as before, faults and quarantines included) and re-submits the pulls that were in
flight with their original streams, so a resumed run with the same seed gives the same result as
an uninterrupted one for ``Pulls`` and ``TargetSE`` budgets (``max_in_flight=1``): the decisions
of those runs read no clock (:mod:`pmcbandit.runtime.guards`, *Determinism*) and every measured
input a decision uses (a pull's cost, for the paired reward) is a history column that the replay
feeds back. Runs under a time budget are not reproducible; their checkpoints re-open each decision
with its recorded arm.

Lifecycle
---------
* **Checked before any pull.** :func:`check_checkpoint` (called by every door with its other
  arguments) refuses, with a ``ValueError`` naming ``checkpoint`` and the door, a path whose
  directory does not exist, a directory, and an existing file that is not a readable checkpoint
  (truncated, corrupt, another format, a newer layout). :func:`resume` refuses, before any pull, a
  checkpoint written with other arms or settings (:data:`~pmcbandit.runtime.config.FINGERPRINT`).
  Each message says what to do: use the arms and settings that wrote it, or delete the file (or
  pass another path) to start a new run.
* **Resuming says so.** A resumed run's ``settings`` carry ``resumed_from`` (the path) and
  ``resumed_pulls`` (the pulls read from it), and an INFO record goes to the ``pmcbandit`` logger.
* **The seed.** The checkpoint stores the run's seed streams (``settings["streams"]``, the entropy
  drawn when ``random_seed=None``); with ``random_seed=None`` a resumed run takes them from the
  checkpoint, so it is the same run; another seed is refused.
* **A finished run is not silently reused.** A checkpoint whose run ended (``stopped_by`` of
  ``"budget"``, ``"confidence"`` or ``"no_arm"``; a run stopped by its ``callback`` is meant to be
  resumed) is replayed, and the run goes on if the new budget leaves room (a larger budget extends
  it). If it makes no new pull, the door returns the stored run's result and issues a
  :class:`~pmcbandit.exceptions.PmcBanditWarning` saying so (:func:`warn_if_reused`): delete the
  file or pass another path to start a new run.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
import zipfile
from typing import NamedTuple

import numpy as np

from pmcbandit._rng import get_random_generator
from pmcbandit._validation import param_message
from pmcbandit.exceptions import PmcBanditWarning
from pmcbandit.runtime.config import FINGERPRINT
from pmcbandit.runtime.engine import Engine, Row
from pmcbandit.runtime.executors.base import caller_stacklevel
from pmcbandit.runtime.guards import Plan
from pmcbandit.runtime.history import COLUMNS, History, PullRecord
from pmcbandit.stats.psis import WeightTails
from pmcbandit.runtime.streams import Streams

__all__ = ["CHECKPOINT_VERSION", "FINISHED", "check_checkpoint", "save_checkpoint", "resume", "run_streams",
           "warn_if_reused"]

#: Layout version (2: the history's ``reason`` and ``seconds`` columns, reliability flags and weight tails;
#: 3: status ``lost`` (5) for pulls lost with their worker, and ``cpu`` counting remote workers' CPU;
#: 4: the log of the arms whose variance estimate was untrusted, :meth:`~pmcbandit.runtime.engine.Engine.untrusted`;
#: 5: the decision from which the guards finish the cross-family check
#: (:meth:`~pmcbandit.runtime.guards.Guards.finish_check`)).
CHECKPOINT_VERSION = 5


#: ``stopped_by`` values of a run that ended by itself (a callback's stop is an interruption).
FINISHED = ("budget", "confidence", "no_arm")

_LOG = logging.getLogger("pmcbandit")
# Keys every checkpoint of layout 1 or later has.
_REQUIRED = ("settings_json", "selected", "col_arm", "faults_json", "diagnostics_json")
_START_NEW = "delete the file or pass another checkpoint path to start a new run"


class _Stored(NamedTuple):
    """Everything a checkpoint file holds, read once and checked."""

    version: int
    settings: dict
    history: History
    selected: int
    se_watch: np.ndarray | None
    info_replayable: bool
    unreliable_since: np.ndarray | None
    tails: WeightTails | None
    untrusted_log: np.ndarray | None
    failed_khat: np.ndarray | None = None
    finish_from: int = -1
    finish_pulls: np.ndarray | None = None
    finish_family: int = -1


def _bad(path, door: str, requirement: str) -> ValueError:
    return ValueError(param_message("checkpoint", door, requirement, os.fspath(path)))


def check_checkpoint(path, door: str) -> None:
    """Refuse a checkpoint path no run could write or resume (module docstring, *Lifecycle*).

    ``None`` passes. A path to a new file passes when its directory exists; an existing file must
    be a checkpoint this pmcbandit reads. Raises ``ValueError`` naming ``checkpoint`` and ``door``.
    """
    if path is None:
        return
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise _bad(path, door, f"a file in an existing directory ({folder!r} does not exist: create it first)")
    if os.path.isdir(target):
        raise _bad(path, door, "a file path, not a directory")
    if os.path.exists(target):
        _read(path, door)


def _read(path, door: str) -> _Stored:
    """The checkpoint's contents; any failure to read them is a ``ValueError`` saying what to do."""
    try:
        # The file is opened here so it is closed even when NumPy fails to read it as an archive.
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as data:
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise ValueError("not an .npz archive")
            missing = [k for k in _REQUIRED if k not in data]
            if missing:
                raise ValueError(f"keys {missing} missing")
            version = int(data["version"]) if "version" in data else 1
            if version > CHECKPOINT_VERSION:
                raise _bad(path, door, f"a checkpoint of layout version <= {CHECKPOINT_VERSION} (it has version "
                                       f"{version}, newer than this pmcbandit reads: resume it with the pmcbandit "
                                       f"that wrote it, or {_START_NEW})")
            settings = json.loads(str(data["settings_json"]))
            if not isinstance(settings, dict) or "streams" not in settings:
                raise ValueError("no run settings")
            history = History.from_npz_dict(data)
            unreliable = np.asarray(data["unreliable_since"]) if "unreliable_since" in data else None
            tails = None
            if "tails_counts" in data:
                tails = WeightTails.from_npz_dict({k: data[k] for k in data.files if k.startswith("tails_")}, "tails_")
            untrusted = np.asarray(data["untrusted_log"], dtype=np.int64).reshape(-1, 2) if "untrusted_log" in data \
                else None
            return _Stored(version, settings, history, int(data["selected"]),
                           np.asarray(data["se_watch"]) if "se_watch" in data else None,
                           bool(data["info_replayable"]) if "info_replayable" in data else True, unreliable, tails,
                           untrusted, np.asarray(data["failed_khat"], dtype=np.float64) if "failed_khat" in data
                           else None, int(data["finish_from"]) if "finish_from" in data else -1,
                           np.asarray(data["finish_pulls"], dtype=np.int64) if "finish_pulls" in data else None,
                           int(data["finish_family"]) if "finish_family" in data else -1)
    except ValueError as err:
        if str(err).startswith("The 'checkpoint' parameter"):
            raise
        reason = f"{type(err).__name__}: {err}"
    except (OSError, EOFError, KeyError, TypeError, IndexError, zipfile.BadZipFile, json.JSONDecodeError) as err:
        reason = f"{type(err).__name__}: {err}"
    raise _bad(path, door, f"a pmcbandit checkpoint or a path to a new file (the file could not be read as one, "
                           f"{reason}; it may be truncated or of another format: {_START_NEW})")


def run_streams(random_seed, checkpoint, door: str = "run") -> Streams:
    """Streams from the seed (``door`` names the door in errors); when resuming with no seed, the
    checkpoint's (the entropy drawn by the run that wrote it, so the resumed run is the same run).
    """
    if random_seed is None and checkpoint is not None and os.path.exists(checkpoint):
        return Streams.from_json(_read(checkpoint, door).settings["streams"])
    return Streams.from_generator(get_random_generator(random_seed, door))


def save_checkpoint(path, engine: Engine, settings: dict, watch=None) -> None:
    """Write history and settings atomically to an ``.npz`` (loads without running code): a file
    beside the target, then :func:`os.replace`, so a kill leaves the previous checkpoint whole.
    """
    data = engine.history.to_npz_dict()
    data["settings_json"] = np.asarray(json.dumps(settings))
    data["selected"] = np.asarray(engine.selected)
    data["version"] = np.asarray(CHECKPOINT_VERSION)
    data["info_replayable"] = np.asarray(engine.info_replayable)
    data["unreliable_since"] = engine.unreliable_since.copy()
    data["failed_khat"] = engine.failed_khat.copy()
    if engine.tails is not None:
        data.update(engine.tails.to_npz_dict("tails_"))
        data["untrusted_log"] = np.asarray(engine.untrusted_log, dtype=np.int64).reshape(-1, 2)
    if engine.guards is not None:
        data["finish_from"] = np.asarray(engine.guards.finish_from)
        data["finish_pulls"] = np.asarray(engine.guards.finish_pulls)
        data["finish_family"] = np.asarray(engine.guards.finish_family)
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
    reason. Everything is checked before the first pull; ``settings`` gains ``resumed_from``,
    ``resumed_pulls`` and, for a finished run, ``resumed_stopped_by`` (module docstring).
    """
    door = settings.get("door", "run")
    stored = _read(path, door)
    saved = dict(stored.settings)
    history = stored.history
    # Checkpoints written before the running centre existed scored every loss against the first observation;
    # those written before identification runs existed were all allocation runs.
    saved.setdefault("centre",
                     None if saved.get("reward") == "paired" else "bounds" if saved.get("bounds") else "first")
    saved.setdefault("kind", "allocation")
    for key in FINGERPRINT:
        if saved.get(key) != settings.get(key):
            raise _bad(
                path,
                door,
                f"a checkpoint written by the same arms, algorithm, reward and seed (it was "
                f"written with {key}={saved.get(key)!r}, but this run has {key}="
                f"{settings.get(key)!r}): resume it with those, or {_START_NEW}",
            )
    if not stored.info_replayable:
        raise _bad(
            path,
            door,
            "a checkpoint that replays (this one cannot be resumed exactly: "
            f"its policy {saved.get('policy')!r} was fed "
            "pull info that checkpoints do not record, only the arms' declared float diagnostics "
            f"are kept, so replaying it would not rebuild the policy's state): {_START_NEW}",
        )
    if history.diagnostics != engine.history.diagnostics:
        raise _bad(
            path,
            door,
            f"a checkpoint of arms with the same diagnostics (it has {history.diagnostics!r}, the "
            f"arms declare {engine.history.diagnostics!r}): use the same arms, or {_START_NEW}",
        )
    if stored.unreliable_since is not None and stored.unreliable_since.shape != (engine.n_arms,):
        raise _bad(
            path,
            door,
            f"a checkpoint of {engine.n_arms} arms (it has {stored.unreliable_since.shape[0]}): "
            f"use the same arms, or {_START_NEW}",
        )
    if stored.unreliable_since is not None:
        engine.unreliable_since[:] = stored.unreliable_since
        engine.note_out_of_play()
    if stored.failed_khat is not None and stored.failed_khat.shape == engine.failed_khat.shape:
        engine.failed_khat[:] = stored.failed_khat
    if engine.tails is not None and stored.tails is not None:
        engine.tails = stored.tails
        if stored.untrusted_log is not None:
            engine.replay_untrusted(stored.untrusted_log, stored.selected)
    if engine.guards is not None:  # before the replay: the guards finish the check from this decision on
        engine.guards.finish_from = stored.finish_from
        engine.guards.finish_family = stored.finish_family
        if stored.finish_pulls is not None:
            engine.guards.finish_pulls = stored.finish_pulls.copy()
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
            now = "none" if decision is None else [engine.arms[a].name for a in decision.arms]
            raise _bad(
                path,
                door,
                f"a checkpoint whose decisions this run re-makes (decision {rec.decision} was "
                f"{engine.arms[rec.arm].name!r} when it was written and is {now} now: the run that "
                "wrote it depended on something a replay cannot repeat, such as arms whose draws "
                f"changed or a custom policy that is not a function of its stream): {_START_NEW}",
            )
        engine.absorb(Row(rec, tuple(d[r] for d in diags), fault_msgs.get(r, ""), None))
    while engine.selected < stored.selected:
        reopen()
    if rows:
        engine.wall_offset = float(rows[-1].wall)
        engine.cpu_offset = float(rows[-1].cpu)
    engine.restart_clock()
    if watch is not None and stored.se_watch is not None:
        watch.next_n, watch.value = int(stored.se_watch[0]), float(stored.se_watch[1])
    settings["resumed_from"] = os.fspath(path)
    settings["resumed_pulls"] = len(rows)
    if saved.get("stopped_by") in FINISHED:
        settings["resumed_stopped_by"] = saved["stopped_by"]
    _LOG.info(
        "%s: resumed from the checkpoint %r: %d pulls in %d decisions replayed%s",
        door,
        os.fspath(path),
        len(rows),
        stored.selected,
        f" (that run had finished: stopped by {saved['stopped_by']})" if saved.get("stopped_by") in FINISHED else "",
    )
    for ticket in engine.pending_tickets():
        executor.submit(ticket)


def warn_if_reused(settings: dict, pulls: int) -> None:
    """Warn when a door returns a finished checkpoint's run without a new pull (module docstring)."""
    stopped = settings.get("resumed_stopped_by")
    if stopped is None or pulls != settings.get("resumed_pulls"):
        return
    warnings.warn(
        f"The checkpoint {settings['resumed_from']!r} holds a finished run (stopped by {stopped} after {pulls} pulls): "
        f"its result is returned and no new pull was made. To start a new run, {_START_NEW}; to extend it, "
        "raise the budget.",
        PmcBanditWarning,
        stacklevel=caller_stacklevel(),
    )
