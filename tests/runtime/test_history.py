"""The per-pull history: rows appended one tuple at a time read back as exact columns, however often and
whenever they are read, and survive the checkpoint format.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pmcbandit.runtime.history import COLUMNS, INT_COLUMNS, History, PullRecord


def _row(i: int) -> PullRecord:
    return PullRecord(i, i % 3, i // 3, 0, 1, i + 1, 0, 0.1 * i, math.nan, 1.5, -0.01 * i, 0.5 * i, 0.25 * i, 1e-6)


def _expected(rows, name):
    k = COLUMNS.index(name)
    return np.array([r[k] for r in rows], dtype=np.int64 if name in INT_COLUMNS else np.float64)


def test_columns_read_between_appends_equal_the_rows():
    hist = History(("accept",))
    rows = []
    for i in range(23):
        rows.append(_row(i))
        hist.append_row(rows[-1], (0.5 + i,))
        if i in (0, 4, 5, 17):  # read part-way: later reads convert only the new rows
            for name in COLUMNS:
                np.testing.assert_array_equal(hist.column(name), _expected(rows, name))
    assert len(hist) == 23
    for name in COLUMNS:
        col = hist.column(name)
        assert col.dtype == (np.int64 if name in INT_COLUMNS else np.float64)
        np.testing.assert_array_equal(col, _expected(rows, name))
    np.testing.assert_array_equal(hist.column("accept"), 0.5 + np.arange(23))


def test_the_row_appender_adds_rows_as_append_row_does():
    assert History(("accept",)).row_appender() is None  # diagnostic columns need append_row
    fast, slow = History(), History()
    append = fast.row_appender()
    for i in range(9):
        append(_row(i))
        slow.append_row(_row(i))
        if i == 4:  # a read part-way, then more rows
            np.testing.assert_array_equal(fast.column("obs"), slow.column("obs"))
    assert len(fast) == len(slow) == 9
    for name in COLUMNS:
        np.testing.assert_array_equal(fast.column(name), slow.column(name))


def test_a_row_of_the_wrong_width_or_index_is_refused():
    hist = History()
    hist.append_row(_row(0))
    with pytest.raises(ValueError, match="must hold the 14 columns"):
        hist.append_row(tuple(_row(1))[:-1])
    with pytest.raises(ValueError, match="must be a row index"):
        hist.set_reward(1, 0.5)
    assert len(hist) == 1 and hist.column("decision").tolist() == [0]


def test_integer_columns_stay_exact():
    hist = History()
    big = 2**52 + 1  # exact in float64, which the conversion passes through
    hist.append_row(PullRecord(big, 3, big - 7, 5, 2**31, big, 2, 0.5, math.nan, 1.0, -0.25, 0.1, 0.2, 1e-6))
    assert hist.column("decision").tolist() == [big] and hist.column("pull_index").tolist() == [big - 7]
    assert hist.column("batch_size").tolist() == [2**31] and hist.column("status").dtype == np.int64


def test_a_returned_column_is_a_copy():
    hist = History()
    hist.append_row(_row(0))
    hist.column("obs")[0] = 99.0
    assert hist.column("obs")[0] == 0.0


def test_set_reward_before_and_after_a_read():
    hist = History()
    for i in range(4):
        hist.append_row(_row(i))
    hist.set_reward(1, 7.0)
    assert hist.column("reward")[1] == 7.0
    hist.set_reward(2, 8.0)  # after the column was converted
    np.testing.assert_array_equal(hist.column("reward")[1:3], [7.0, 8.0])
    hist.append_row(_row(4))
    assert hist.column("reward")[2] == 8.0 and hist.column("reward")[4] == -0.04


def test_missing_diagnostics_are_nan_and_unknown_columns_refused():
    hist = History(("a", "b"))
    hist.append_row(_row(0), (1.0,))
    assert hist.column("a")[0] == 1.0 and math.isnan(hist.column("b")[0])
    with pytest.raises(KeyError, match="'name' parameter of History.column"):
        hist.column("nope")


def test_npz_round_trip_keeps_rows_diagnostics_and_faults():
    hist = History(("accept",))
    for i in range(6):
        hist.append_row(_row(i), (0.1 * i,))
    hist.add_fault(3, 0, "error", "boom")
    hist.column("obs")  # a partly converted history saves the same
    hist.append_row(_row(6), (0.6,))
    back = History.from_npz_dict(hist.to_npz_dict())
    assert len(back) == 7 and back.faults == [(3, 0, "error", "boom")] and back.diagnostics == ("accept",)
    for name in (*COLUMNS, "accept"):
        np.testing.assert_array_equal(back.column(name), hist.column(name))
    back.append_row(_row(7), (0.7,))
    assert back.column("decision")[-1] == 7 and back.column("accept")[-1] == 0.7


def test_each_column_read_at_its_own_time_equals_the_rows():
    """Columns are converted when read: columns read at different row counts, and set rewards, stay exact."""
    hist = History(("accept",))
    rows = []
    schedule = {1: ("obs",), 2: ("arm", "accept"), 7: ("obs", "reward"), 8: ("status",), 30: ("arm", "obs")}
    for i in range(40):
        rows.append(_row(i))
        hist.append_row(rows[-1], (0.5 + i,))
        for name in schedule.get(i, ()):
            expected = 0.5 + np.arange(i + 1) if name == "accept" else _expected(rows, name)
            np.testing.assert_array_equal(hist.column(name), expected)
        if i == 20:
            hist.set_reward(3, 9.0)  # converted (read at row 7) and then changed
            hist.set_reward(15, 8.0)  # not converted yet
            rows[3] = rows[3]._replace(reward=9.0)
            rows[15] = rows[15]._replace(reward=8.0)
    for name in COLUMNS:
        np.testing.assert_array_equal(hist.column(name), _expected(rows, name))
    np.testing.assert_array_equal(hist.column("accept"), 0.5 + np.arange(40))
