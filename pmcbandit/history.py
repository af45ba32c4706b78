"""The per-pull record of a run: an append-only table with a fixed schema.

One row per pull, in the order the pulls came back. Columns:

``decision``        index of the bandit decision the pull served (a paired-reward decision has two pulls)
``arm``             arm index
``pull_index``      the arm's own pull counter; pull ``j`` of arm ``k`` always draws from the same stream
``status``          one of :data:`STATUS` (``ok``, ``nonfinite``, ``error``, ``timeout``, ``out_of_bounds``)
``obs``             the observation: batch mean (log-mean-exp of the values for log-scale arms); NaN if not ok
``within_var``      variance of the batch mean estimated inside the batch (relative, i.e. divided by the
                    squared observation, for log-scale arms); NaN for batches of one
``batch_size``      number of values in the pull
``cost``            the pull's cost (CPU seconds or the arm's declared cost)
``reward``          reward fed to the policy when this pull completed its decision, else NaN
``wall``, ``cpu``   wall and process CPU seconds since the run started, when the pull came back
``selected_before`` decisions dispatched when the pull came back (replays the exact order on resume)
plus one column per diagnostic field any arm declares (NaN where an arm does not report it).

Faults keep their message in :attr:`History.faults` (row, arm, status, message).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

__all__ = ["History", "STATUS"]

STATUS = ("ok", "nonfinite", "error", "timeout", "out_of_bounds")
INT_COLUMNS = ("decision", "arm", "pull_index", "status", "batch_size", "selected_before")
FLOAT_COLUMNS = ("obs", "within_var", "cost", "reward", "wall", "cpu")


class History:
    """Append-only per-pull table (see module docstring)."""

    def __init__(self, diagnostics: Sequence[str] = ()):
        self.diagnostics = tuple(dict.fromkeys(diagnostics))
        self._cols: dict[str, list] = {c: [] for c in (*INT_COLUMNS, *FLOAT_COLUMNS, *self.diagnostics)}
        self.faults: list[tuple[int, int, str, str]] = []

    def __len__(self) -> int:
        return len(self._cols["arm"])

    def append(self, info=None, **row) -> int:
        """Add one pull; ``info`` holds diagnostic fields. Returns the row index."""
        for c in INT_COLUMNS + FLOAT_COLUMNS:
            self._cols[c].append(row[c])
        info = info or {}
        for d in self.diagnostics:
            v = info.get(d, np.nan)
            try:
                v = float(v)
            except (TypeError, ValueError):
                v = np.nan
            self._cols[d].append(v)
        return len(self) - 1

    def set_reward(self, row: int, reward: float) -> None:
        self._cols["reward"][row] = float(reward)

    def add_fault(self, row: int, arm: int, status: str, message: str) -> None:
        self.faults.append((row, arm, status, message))

    def column(self, name: str) -> np.ndarray:
        dtype = np.int64 if name in INT_COLUMNS else np.float64
        return np.asarray(self._cols[name], dtype=dtype)

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
        for c in hist._cols:
            hist._cols[c] = data[f"col_{c}"].tolist()
        hist.faults = [tuple(f) for f in json.loads(str(data["faults_json"]))]
        return hist
