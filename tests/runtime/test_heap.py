"""While a run pulls, the heap built before it is frozen for the cyclic collector (:mod:`pmcbandit.runtime.heap`):
in the driver's loop and on a worker process. The run undoes its freeze, and a heap the caller froze stays frozen.

Each arm's pull returns 1 when it sees a frozen heap and 0 when not (plus a little noise, so the policies have a
spread to read), so the history says what every pull saw.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.runtime.executors.processes import ProcessExecutor
from pmcbandit.runtime.heap import frozen_heap

# runs of a few dozen pulls: too few for an interval, which none of these tests reads
pytestmark = pytest.mark.filterwarnings("ignore::pmcbandit.exceptions.NoGuaranteeWarning")


def saw_frozen_heap(rng):
    return float(gc.get_freeze_count() > 0) + 1e-3 * rng.standard_normal()


def _arms():
    return [pb.CallableArm(saw_frozen_heap, name=f"a{k}", cost=1.0) for k in range(2)]


def _saw(res) -> np.ndarray:
    return np.round(res.history.column("obs"))


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_every_pull_sees_a_frozen_heap_and_the_run_unfreezes_it(unfrozen):
    res = pb.run(_arms(), policy="ucb1", budget=pb.Pulls(30), random_seed=1, progressbar=False)
    assert len(res.history) == 30
    assert np.all(_saw(res) == 1)
    assert gc.get_freeze_count() == 0


def test_a_heap_the_caller_froze_stays_frozen(unfrozen):
    gc.freeze()
    res = pb.run(_arms(), policy="ucb1", budget=pb.Pulls(30), random_seed=1, progressbar=False)
    assert np.all(_saw(res) == 1)
    assert gc.get_freeze_count() > 0  # objects freed since leave the count; an unfreeze would empty it


def test_a_run_that_raises_still_unfreezes(unfrozen):
    def stop(progress, history):
        raise RuntimeError("from the callback")

    with pytest.raises(RuntimeError, match="from the callback"):
        pb.run(_arms(), policy="ucb1", budget=pb.Pulls(30), random_seed=1, progressbar=False, callback=stop)
    assert gc.get_freeze_count() == 0


def test_frozen_heap_freezes_inside_and_nests(unfrozen):
    with frozen_heap():
        outer = gc.get_freeze_count()
        assert outer > 0
        with frozen_heap():
            assert 0 < gc.get_freeze_count() <= outer  # nothing more frozen
        assert gc.get_freeze_count() > 0  # the inner block did not unfreeze what the outer froze
    assert gc.get_freeze_count() == 0


def test_pulls_on_a_worker_process_see_a_frozen_heap(unfrozen):
    with ProcessExecutor(1) as ex:
        res = pb.run(_arms(), policy="ucb1", budget=pb.Pulls(20), random_seed=1, progressbar=False, executor=ex)
    assert len(res.history) == 20
    assert np.all(_saw(res) == 1)
