"""The history's ``cpu`` column reads the process clock at most once per ``CPU_READ_EVERY`` of wall time
(:mod:`pmcbandit.runtime.history`): counted with the engine's clocks replaced by fakes, so the test depends on
no real timing. The fake wall clock moves only when an arm draws (a fixed step per pull, a power of two so
the sums are exact) and the fake process clock returns how often it was read.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.runtime import engine as engine_module

# runs of a few dozen pulls: too few for an interval, which none of these tests reads
pytestmark = pytest.mark.filterwarnings("ignore::pmcbandit.exceptions.NoGuaranteeWarning")

_STEP = 2.0**-12  # fake wall seconds per pull


def _run_with_fake_clocks(monkeypatch, pulls: int, step: float, budget=None):
    wall = [0.0]
    reads = []

    def process_time():
        reads.append(wall[0])
        return float(len(reads))

    monkeypatch.setattr(engine_module, "time", types.SimpleNamespace(perf_counter=lambda: wall[0],
                                                                     process_time=process_time))
    monkeypatch.setattr(engine_module, "CPU_READ_EVERY", 4 * _STEP)

    def draw(rng):
        wall[0] += step
        return rng.random()

    arms = [pb.CallableArm(draw, name=f"a{k}", cost=1.0) for k in range(3)]
    res = pb.run(arms, policy="ucb1", budget=budget or pb.Pulls(pulls), random_seed=3, progressbar=False)
    return res, reads


def test_cheap_pulls_share_one_clock_read_per_interval(monkeypatch):
    res, reads = _run_with_fake_clocks(monkeypatch, 40, _STEP)
    cpu = res.history.column("cpu")
    wall = res.history.column("wall")
    assert len(cpu) == 40 and np.array_equal(wall, _STEP * np.arange(1, 41))
    # rows 0, 4, 8, ... read the clock (the first row, then each row 4 steps after the last read); the others
    # repeat that read
    changes = np.flatnonzero(np.diff(cpu)) + 1
    assert changes.tolist() == list(range(4, 40, 4))
    assert np.all(np.diff(cpu) >= 0)
    # the engine's reads: its construction, the clock's restart before the first pull, and one per 4 rows
    assert len(reads) == 2 + 10


def test_slow_pulls_read_the_clock_at_every_row(monkeypatch):
    res, reads = _run_with_fake_clocks(monkeypatch, 12, 4 * _STEP)
    cpu = res.history.column("cpu")
    assert np.all(np.diff(cpu) == 1.0)  # one more read per row
    assert len(reads) == 2 + 12


def test_a_cpu_budget_reads_its_own_clock_at_every_check(monkeypatch):
    # the budget's checks read the process clock themselves: the run stops at the first check that finds the
    # budget spent, while the cpu column repeats its last read between rows 4 steps apart
    res, reads = _run_with_fake_clocks(monkeypatch, 0, _STEP, budget=pb.CpuSeconds(30.0))
    assert res.stopped_by == "budget"
    # the fake process clock advances by one second per read; the run started at its second read
    assert len(reads) - 2 in (30, 31)  # the read that found 30 seconds spent (or one row's read past them) is the last
    cpu = res.history.column("cpu")
    assert (np.flatnonzero(np.diff(cpu)) + 1).tolist() == list(range(4, len(cpu), 4))
    assert cpu[-1] < 30.0
