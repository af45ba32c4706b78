r"""The learner of a full-bandit run: a static-allocation algorithm driven by the run loop.

:func:`~pmcbandit.full_bandit.identify.identify_full_bandit` hands the run loop
(:mod:`pmcbandit.runtime`) one :class:`SuperArm` per row of the allocation's support and a
:class:`FullBanditLearner` (a :class:`~pmcbandit.base.Learner`):

* a decision is one pull of one super-arm, the row the algorithm's ``select`` tracks
  (Kuroki et al. 2020, Sec. 4: a static allocation). Tracking runs on the pulls *dispatched*, not
  on those that came back, so the sequence of super-arms is the same whether pulls run inline or
  several at a time;
* every valid observation goes to the algorithm's ``update`` (the least-squares state) and the
  stopping statistic is computed once per closed decision; the run ends when it is
  :math:`\le \epsilon` (``stops = True``, ``stopped_by="confidence"``);
* a pull that raises or returns anything but one finite real number is a fault (the engine's
  rule, :mod:`pmcbandit.runtime.engine`): it contributes nothing, and a super-arm quarantined after
  ``max_faults`` faults ends the run (``halts_on_quarantine``), since the design can no longer
  follow its allocation.

Each super-arm has its own per-pull streams (:mod:`pmcbandit.runtime.streams`): pull ``j`` of
support row ``r`` always sees the same Generator, which is what lets the numba simulator
(:mod:`~pmcbandit.full_bandit.simulate`) replay a live run pull for pull.
"""

from __future__ import annotations

import math

import numpy as np

from pmcbandit.arms.base import Arm, real_values
from pmcbandit.base import Selection

__all__ = ["SuperArm", "FullBanditLearner", "super_arm_names"]


class SuperArm(Arm):
    """One super-arm as an :class:`~pmcbandit.arms.base.Arm`: a pull calls ``pull(members, rng)``.

    Parameters
    ----------
    pull : callable
        ``pull(members, rng) -> float``, one noisy observation of the sum of the arms ``members``
        (e.g. :meth:`FullBanditEnvironment.pull <pmcbandit.full_bandit.environment.FullBanditEnvironment.pull>`).
    members : ndarray of int
        The super-arm's arm indices, sorted (handed to ``pull`` read-only).
    name : str

    Notes
    -----
    The cost of a pull is declared as 1 (one pull of the environment), so runs are reproducible
    under any executor. An observation that is not a single real number (a string, a bool, ``None``,
    a complex number, several values) raises ``TypeError`` inside the pull
    (:func:`~pmcbandit.arms.base.real_values`), which the engine records as an ``"error"`` fault; NaN
    and infinities are ``"nonfinite"`` faults.
    """

    cost_unit = "declared"

    def __init__(self, pull, members: np.ndarray, name: str):
        self.pull_fn = pull
        self.members = np.array(members, dtype=np.int64)
        self.members.setflags(write=False)
        self.name = name

    def draw(self, rng: np.random.Generator):
        values = real_values(self.pull_fn(self.members, rng), self.name)
        if values.size != 1:
            raise TypeError(f"arm {self.name!r} returned {values.size} values; a full-bandit pull must return one "
                            "real number (the observed sum)")
        return float(values.ravel()[0]), {}, 1.0


def super_arm_names(names: list[str], rows: list[np.ndarray]) -> list[str]:
    """``"a+b"`` for the super-arm of arms ``a`` and ``b``; prefixed by ``row<r>:`` when two would
    coincide (arm names that contain ``+``).
    """
    joined = ["+".join(names[i] for i in members) for members in rows]
    if len(set(joined)) < len(joined):
        joined = [f"row{r}:{name}" for r, name in enumerate(joined)]
    return joined


class FullBanditLearner:
    """A :class:`~pmcbandit.full_bandit.base.FullBanditIdentifier` as a run's learner (module docstring).

    Parameters
    ----------
    algorithm : FullBanditIdentifier

    Attributes
    ----------
    state : FullBanditState
        The least-squares state of the valid observations so far.
    statistics : list of float
        The stopping statistic after each closed decision (one per pull, in the history's order).
    """

    working_scale = True
    stops = True
    # A super-arm that can no longer be pulled leaves the static design unfinished: the run stops.
    halts_on_quarantine = True
    replays_exactly = True  # tracking reads no clock
    pinned = None
    info_replayable = True
    pulls_per_decision = 1

    def __init__(self, algorithm):
        self.algorithm = algorithm
        self.rows = [np.flatnonzero(r).astype(np.int64) for r in algorithm.allocation.support]
        self._row_of = {members.tobytes(): r for r, members in reversed(list(enumerate(self.rows)))}
        self.state = algorithm.init()
        self.dispatched = np.zeros(len(self.rows), dtype=np.int64)
        self.n_dispatched = 0
        self.statistic = math.inf
        self.statistics: list[float] = []

    def choose(self, rng: np.random.Generator, eligible: np.ndarray) -> Selection:
        """The algorithm's ``select`` on the dispatched counts (module docstring)."""
        planned = self.state._replace(counts=self.dispatched, t=self.n_dispatched)
        members = np.asarray(self.algorithm.select(rng, planned), dtype=np.int64)
        return Selection.one(self._row_of[np.sort(members).tobytes()])

    def forced(self, arm: int) -> Selection:
        return Selection.one(arm)

    def opened(self, selection: Selection) -> None:
        self.dispatched[selection.arms[0]] += 1
        self.n_dispatched += 1

    def close(self, rng: np.random.Generator, decision) -> float:
        """Fold the decision's observation (none after a fault) into the state; no reward."""
        if decision.values:
            members = self.rows[decision.value_arms[0]]
            self.state = self.algorithm.update(self.state, members, decision.values[0])
            self.statistic = float(self.algorithm.statistic(self.state))
        self.statistics.append(self.statistic)
        return math.nan

    def done(self, blocked: np.ndarray) -> bool:
        """The algorithm's stop rule, :math:`A_t` invertible and statistic :math:`\\le \\epsilon`
        (the statistic was computed when the decision closed).
        """
        return bool(self.state.ready and self.statistic <= self.algorithm.epsilon)

    def mean_loss(self) -> np.ndarray:
        return np.full(len(self.rows), np.nan)

    def rescale(self, f: float) -> None:
        raise RuntimeError("full-bandit runs work on linear-scale observations")
