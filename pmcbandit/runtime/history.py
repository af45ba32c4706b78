"""The per-pull record of a run: an append-only table with a fixed schema.

One row per pull, in the order the pulls came back. Columns:

``decision``        index of the bandit decision the pull served (a paired-reward decision has two pulls)
``arm``             arm index
``pull_index``      the arm's own pull counter; pull ``j`` of arm ``k`` always draws from the same stream
``status``          one of :data:`STATUS` (``ok``, ``nonfinite``, ``error``, ``timeout``, ``out_of_bounds``,
                    ``lost``: the pull's worker died and the executor's retries were spent; not
                    counted towards the arm's quarantine)
``obs``             the observation: batch mean (log-mean-exp of the values for log-scale arms); NaN if not ok
``within_var``      variance of the batch mean estimated inside the batch (relative, i.e. divided by the
                    squared observation, for log-scale arms); NaN for batches of one
``batch_size``      number of values in the pull
``cost``            the pull's cost (CPU seconds or the arm's declared cost)
``reward``          reward fed to the policy when this pull completed its decision, else NaN
``wall``, ``cpu``   wall and CPU seconds since the run started, when the pull came back (CPU: this
                    process's plus what remote workers reported for their pulls)
``seconds``         wall seconds the pull itself took (what the guards predict durations from)
``selected_before`` decisions dispatched when the pull came back (replays the exact order on resume)
``reason``          why the decision's arm was chosen, an index into :data:`REASONS`: ``policy`` (the bandit
                    policy chose), ``initial`` (every arm's first decision under a time budget, cheapest
                    first) or ``cross_check`` (the share kept on a second estimator family);
                    :mod:`pmcbandit.runtime.guards`
plus one column per diagnostic field any arm declares (NaN where an arm does not report it).

A row is a :class:`PullRecord` (a NamedTuple whose fields are the columns above, in order).

Faults keep their message in :attr:`History.faults` (row, arm, status, message).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

__all__ = ["History", "PullRecord", "STATUS", "REASONS", "COLUMNS"]

STATUS = ("ok", "nonfinite", "error", "timeout", "out_of_bounds", "lost")
REASONS = ("policy", "initial", "cross_check")


class PullRecord(NamedTuple):
    """One row of the history (the columns of the module docstring)."""

    decision: int
    arm: int
    pull_index: int
    status: int
    batch_size: int
    selected_before: int
    reason: int
    obs: float
    within_var: float
    cost: float
    reward: float
    wall: float
    cpu: float
    seconds: float


INT_COLUMNS = PullRecord._fields[:7]
FLOAT_COLUMNS = PullRecord._fields[7:]
#: Order of the values given to :meth:`History.append_row`.
COLUMNS = PullRecord._fields
#: Values of columns that checkpoints of an earlier layout lack.
_MISSING_DEFAULTS = {"reason": 0, "seconds": float("nan")}


class History:
    """Append-only per-pull table (see module docstring).

    Columns are kept as Python lists while the run appends (a list append is the cheapest
    per-pull record) and become arrays on demand with :meth:`column`.
    """

    def __init__(self, diagnostics: Sequence[str] = ()):
        self.diagnostics = tuple(dict.fromkeys(diagnostics))
        clash = [d for d in self.diagnostics if d in COLUMNS]
        if clash:
            raise ValueError(
                f"The 'diagnostics' parameter of History must not reuse the column names {COLUMNS}. "
                f"Got {clash!r} instead."
            )
        self._cols: dict[str, list] = {c: [] for c in (*INT_COLUMNS, *FLOAT_COLUMNS, *self.diagnostics)}
        self._appenders = tuple(self._cols[c].append for c in COLUMNS)
        self._diag_appenders = tuple(self._cols[d].append for d in self.diagnostics)
        self._arrays: dict[str, np.ndarray] = {}  # columns converted so far (see column)
        self.faults: list[tuple[int, int, str, str]] = []

    def __len__(self) -> int:
        return len(self._cols["arm"])

    def append(self, info=None, **row) -> int:
        """Add one pull given by column name; ``info`` holds diagnostic fields. Returns the row index."""
        return self.append_row(PullRecord(**{**_MISSING_DEFAULTS, **row}), self.diagnostic_values(info))

    def append_row(self, values: PullRecord, diagnostics: tuple = ()) -> int:
        """Add one pull: ``values`` a :class:`PullRecord` (or a tuple in the order of :data:`COLUMNS`),
        ``diagnostics`` in the order of :attr:`diagnostics` (from :meth:`diagnostic_values`).
        Returns the row index.
        """
        for add, v in zip(self._appenders, values):
            add(v)
        for add, v in zip(self._diag_appenders, diagnostics):
            add(v)
        return len(self._cols["arm"]) - 1

    def diagnostic_values(self, info) -> tuple:
        """The declared diagnostic fields of ``info`` as floats (NaN where missing or not a number)."""
        if not self.diagnostics:
            return ()
        info = info or {}
        out = []
        for d in self.diagnostics:
            v = info.get(d, np.nan)
            try:
                v = float(v)
            except (TypeError, ValueError):
                v = np.nan
            out.append(v)
        return tuple(out)

    def set_reward(self, row: int, reward: float) -> None:
        """Set the reward of an existing row (the run loop writes it with the row instead)."""
        self._cols["reward"][row] = float(reward)
        self._arrays.pop("reward", None)

    def add_fault(self, row: int, arm: int, status: str, message: str) -> None:
        self.faults.append((row, arm, status, message))

    def column(self, name: str) -> np.ndarray:
        """A copy of column ``name`` as an array (int64 or float64).

        Rows are never changed once appended (but by :meth:`set_reward`), so the array of the
        rows converted so far is kept and only new rows are converted on the next call: a
        TargetSE run reads the columns over and over.
        """
        if name not in self._cols:
            raise KeyError(
                f"The 'name' parameter of History.column must be one of {tuple(self._cols)}. Got {name!r} instead."
            )
        values = self._cols[name]
        n = len(values)
        cached = self._arrays.get(name)
        dtype = np.int64 if name in INT_COLUMNS else np.float64
        if cached is None or cached.size > n:
            cached = np.asarray(values, dtype=dtype)
        elif cached.size < n:
            cached = np.concatenate([cached, np.asarray(values[cached.size :], dtype=dtype)])
        self._arrays[name] = cached
        return cached.copy()

    def arrays(self) -> dict[str, np.ndarray]:
        return {c: self.column(c) for c in self._cols}

    # --- persistence without pickle -------------------------------------------------
    def to_npz_dict(self) -> dict[str, np.ndarray]:
        out = {f"col_{c}": a for c, a in self.arrays().items()}
        out["faults_json"] = np.asarray(json.dumps(self.faults))
        out["diagnostics_json"] = np.asarray(json.dumps(list(self.diagnostics)))
        return out

    @classmethod
    def from_npz_dict(cls, data) -> "History":
        hist = cls(json.loads(str(data["diagnostics_json"])))
        n = len(data["col_arm"])
        for c, values in hist._cols.items():
            key = f"col_{c}"
            values.extend(data[key].tolist() if key in data else [_MISSING_DEFAULTS[c]] * n)
        hist._arrays.clear()
        hist.faults = [tuple(f) for f in json.loads(str(data["faults_json"]))]
        return hist
