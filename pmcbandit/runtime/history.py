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
                    process's plus what remote workers reported for their pulls). This process's CPU clock
                    is a system call, dearer than a cheap arm's whole draw, so a row reads it only once
                    1 ms of wall time (``pmcbandit.runtime.engine.CPU_READ_EVERY``) has passed since the
                    last read, and otherwise repeats that read: this process's share lags by at most what it
                    spent in the last millisecond; the workers' share is exact; the column never decreases
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
_REWARD = COLUMNS.index("reward")
_WIDTH = len(COLUMNS)


class History:
    """Append-only per-pull table (see module docstring).

    A pull's fields are appended to one flat list while the run goes, row after row (the cheapest per-pull
    record: one ``list.extend``, no object per row); the rows become columns on demand with :meth:`column`,
    each column when it is read (as float64, from which the integer columns are cast: exact, as their values
    stay far below 2**53).
    """

    def __init__(self, diagnostics: Sequence[str] = ()):
        self.diagnostics = tuple(dict.fromkeys(diagnostics))
        clash = [d for d in self.diagnostics if d in COLUMNS]
        if clash:
            raise ValueError(
                f"The 'diagnostics' parameter of History must not reuse the column names {COLUMNS}. "
                f"Got {clash!r} instead."
            )
        self._index = {c: i for i, c in enumerate((*COLUMNS, *self.diagnostics))}
        self._flat: list = []  # the fields of every pull, row after row, each row in the order of COLUMNS
        self._diag_rows: list[tuple] = []  # one tuple per pull, in the order of diagnostics (if any)
        self._dtypes = tuple(np.int64 if c in INT_COLUMNS else np.float64 for c in self._index)
        # each column's rows converted so far (its first ``_done`` entries), with room for more
        self._arrays = [np.empty(0, dtype=t) for t in self._dtypes]
        self._done = [0] * len(self._dtypes)
        self.faults: list[tuple[int, int, str, str]] = []

    def __len__(self) -> int:
        return len(self._flat) // _WIDTH

    def append(self, info=None, **row) -> int:
        """Add one pull given by column name; ``info`` holds diagnostic fields. Returns the row index."""
        return self.append_row(PullRecord(**{**_MISSING_DEFAULTS, **row}), self.diagnostic_values(info))

    def append_row(self, values: PullRecord, diagnostics: tuple = ()) -> int:
        """Add one pull: ``values`` a :class:`PullRecord` (or a tuple in the order of :data:`COLUMNS`),
        ``diagnostics`` in the order of :attr:`diagnostics` (from :meth:`diagnostic_values`; missing
        trailing fields are NaN). Returns the row index.
        """
        if len(values) != _WIDTH:
            raise ValueError(f"The 'values' parameter of History.append_row must hold the {_WIDTH} columns "
                             f"{COLUMNS}. Got {values!r} instead.")
        self._flat.extend(values)
        if self.diagnostics:
            missing = len(self.diagnostics) - len(diagnostics)
            self._diag_rows.append(tuple(diagnostics) + (np.nan,) * missing if missing else tuple(diagnostics))
        return len(self._flat) // _WIDTH - 1

    def row_appender(self):
        """The call that adds one row to a history without diagnostic columns: the flat list's own ``extend``,
        given the row's values in the order of :data:`COLUMNS` (a list or a :class:`PullRecord`; what
        :meth:`append_row` does, without its call and check: the run loop adds a row per pull); ``None`` when
        the history has diagnostic columns.
        """
        return None if self.diagnostics else self._flat.extend

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
        if not 0 <= row < len(self):
            raise ValueError(f"The 'row' parameter of History.set_reward must be a row index, 0 <= row < {len(self)}. "
                             f"Got {row!r} instead.")
        i = _REWARD
        self._flat[row * _WIDTH + i] = float(reward)
        if row < self._done[i]:
            self._arrays[i][row] = float(reward)

    def add_fault(self, row: int, arm: int, status: str, message: str) -> None:
        self.faults.append((row, arm, status, message))

    def column(self, name: str) -> np.ndarray:
        """A copy of column ``name`` as an array (int64 or float64).

        Rows are never changed once appended (but by :meth:`set_reward`, which updates the
        conversion too), so each column keeps the rows converted so far and converts only new rows on
        the next call, into an array that grows by doubling (a row is copied into it O(1) times on
        average): a TargetSE run reads its columns over and over, and a run's result reads only some.
        """
        i = self._index.get(name)
        if i is None:
            raise KeyError(
                f"The 'name' parameter of History.column must be one of {tuple(self._index)}. Got {name!r} instead."
            )
        done, n = self._done[i], len(self)
        if done < n:
            if i < _WIDTH:  # every _WIDTH-th field from the column's first new one
                fields = self._flat[done * _WIDTH + i : n * _WIDTH : _WIDTH]
            else:
                fields = [row[i - _WIDTH] for row in self._diag_rows[done:n]]
            # np.fromiter converts each field as np.array(fields, dtype=np.float64) would, in less time
            values = np.fromiter(fields, dtype=np.float64, count=n - done)
            array = self._arrays[i]
            if n > array.size:
                grown = np.empty(max(n, 2 * array.size), dtype=array.dtype)
                grown[:done] = array[:done]
                self._arrays[i] = array = grown
            array[done:n] = values  # cast as astype would (the integer columns hold exact integers)
            self._done[i] = n
        return self._arrays[i][:n].copy()

    def arrays(self) -> dict[str, np.ndarray]:
        return {c: self.column(c) for c in self._index}

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

        def values(c):
            key = f"col_{c}"
            return data[key].tolist() if key in data else [_MISSING_DEFAULTS[c]] * n

        hist._flat = [x for row in zip(*(values(c) for c in COLUMNS)) for x in row] if n else []
        if hist.diagnostics:
            hist._diag_rows = list(zip(*(values(d) for d in hist.diagnostics))) if n else []
        hist.faults = [tuple(f) for f in json.loads(str(data["faults_json"]))]
        return hist
