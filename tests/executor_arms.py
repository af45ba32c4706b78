"""Cheap picklable arms for the executor tests (module level, so worker processes import them)."""

from __future__ import annotations

import os
import time

import numpy as np

from pmcbandit.arms.base import Arm


class NormalArm(Arm):
    """``batch`` N(mu, sd) draws per pull; with ``spin`` seconds of CPU burnt in the pulling thread
    (the values do not depend on it), and with probability ``hang_p`` (drawn from the pull's own
    stream, so the same pulls hang on every executor) a ``hang`` seconds sleep first."""

    def __init__(self, mu: float, sd: float, name: str, *, batch: int = 4, spin: float = 0.0,
                 hang_p: float = 0.0, hang: float = 0.0, cost: float | None = None):
        self.mu, self.sd, self.name, self.batch = mu, sd, name, batch
        self.spin, self.hang_p, self.hang, self.cost = spin, hang_p, hang, cost

    def draw(self, rng):
        if self.hang_p and rng.random() < self.hang_p:
            time.sleep(self.hang)
        values = rng.normal(self.mu, self.sd, self.batch)
        if self.spin:
            end = time.thread_time() + self.spin
            while time.thread_time() < end:
                pass
        return values, {}, self.cost


class PidArm(Arm):
    """Reports the pid of the process that pulled it (in ``info``), and a standard normal."""

    diagnostics = ("pid",)

    def __init__(self, name: str = "pid", sleep: float = 0.0):
        self.name, self.sleep = name, sleep

    def draw(self, rng):
        if self.sleep:
            time.sleep(self.sleep)
        return rng.normal(size=2), {"pid": float(os.getpid())}


def normal_pool(spin: float = 0.0, batch: int = 4, declared: bool = False) -> list[Arm]:
    """Three arms of one mean (2.0) and different spreads; ``declared``: costs 1, 2, 3 per pull
    instead of measured CPU (so a cost-aware reward does not depend on timing)."""
    return [NormalArm(2.0, sd, f"sd{sd}", batch=batch, spin=spin, cost=float(i + 1) if declared else None)
            for i, sd in enumerate((0.5, 1.0, 3.0))]


TIMING_COLUMNS = ("wall", "cpu", "seconds", "cost")


def assert_same_run(a, b, timing=TIMING_COLUMNS) -> None:
    """Two results with bit-identical histories (all but the ``timing`` columns) and estimates."""
    cols = [c for c in a.history.arrays() if c not in timing]
    assert cols == [c for c in b.history.arrays() if c not in timing]
    for c in cols:
        np.testing.assert_array_equal(a.history.column(c), b.history.column(c), err_msg=c)
    if hasattr(a, "estimate"):  # an identification result has no combined estimate
        assert a.estimate == b.estimate and a.se == b.se


def assert_pulls_exact(result, arms) -> None:
    """Every (k, j) of the run exactly once, j = 0..n_k - 1, each observation equal to pull (k, j)
    recomputed in this process (level 1 and 3 of docs/scale_out.md)."""
    from pmcbandit.runtime.engine import _reduce
    from pmcbandit.runtime.streams import Streams

    streams = Streams.from_json(result.settings["streams"])
    h = result.history
    arm, j, obs, status = h.column("arm"), h.column("pull_index"), h.column("obs"), h.column("status")
    for k in range(len(arms)):
        mine = np.sort(j[arm == k])
        np.testing.assert_array_equal(mine, np.arange(mine.size))
    for r in range(len(h)):
        if status[r] == 0:
            expect, _ = _reduce(pull_values(arms, streams, int(arm[r]), int(j[r])), arms[0].log_scale)
            assert obs[r] == expect, (r, arm[r], j[r])


def pull_values(arms, streams, k: int, j: int) -> np.ndarray:
    """What pull ``(k, j)`` returns, recomputed in this process."""
    return arms[k].pull(streams.pull_rng(k, j)).values


def normal_logp(value, mu):
    """Log density of N(mu, 1) at ``value``, for a ``pm.CustomDist`` likelihood (module level:
    the registration PyMC makes for it must reach worker processes)."""
    import pytensor.tensor as pt

    return -0.5 * (value - mu) ** 2 - 0.5 * pt.log(2 * np.pi)
