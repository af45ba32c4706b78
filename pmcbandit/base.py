"""The protocols the layers meet at: a decision (:class:`Selection`), what chooses decisions
(:class:`Learner`), where pulls run (:class:`Executor`), what every door returns (:class:`Result`) and the
result types the doors declare (:func:`declare_result`, :func:`result_type`).

The run loop (:mod:`pmcbandit.runtime`) drives any :class:`Learner` through any
:class:`Executor`; the learners live with their algorithm families
(:mod:`pmcbandit.policies.learner`, :mod:`pmcbandit.identification.learner`,
:mod:`pmcbandit.compare.learner`, :mod:`pmcbandit.full_bandit.learner`) and the executors in
:mod:`pmcbandit.runtime.executors`. What a learner needs from the engine it declares as attributes
(``pulls_per_decision``, ``stops``, ``halts_on_quarantine``, ``pinned``, ``replays_exactly``), never by a
name the engine compares.

A result class declares itself under a kind (``"run"``, ``"comparison"``, ``"model_comparison"``) with
:func:`declare_result`; :mod:`pmcbandit.diagnostics`, which the results reach through their
``to_inference_data``/``plot`` methods, finds the class with :func:`result_type` and so never imports a
result's module (dependency inversion: the lower module owns the slot, the upper one fills it). The package
``__init__`` imports every result module, and Python runs it before any submodule, so the slots are filled
before diagnostics can run.

This module imports nothing from the package: every layer may use it.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

__all__ = ["Selection", "new_tuple", "Learner", "Executor", "Result", "declare_result", "result_type"]

_RESULT_TYPES: dict = {}


#: A NamedTuple from a tuple of all its fields, ``new_tuple(Cls, fields)``: ``tuple.__new__`` without the keyword
#: handling of ``Cls(...)``, for the run loop's per-pull records.
new_tuple = tuple.__new__


class Selection(NamedTuple):
    """One decision: the arms it pulls and how many times each (in this order)."""

    arms: tuple
    pulls: tuple

    @classmethod
    def one(cls, arm: int, pulls: int = 1) -> "Selection":
        """A decision that pulls one ``arm`` ``pulls`` times."""
        return cls((int(arm),), (int(pulls),))


@runtime_checkable
class Learner(Protocol):
    """What chooses a run's decisions and learns from their outcomes.

    Attributes
    ----------
    pulls_per_decision : int
        Pulls of a decision's arm a forced decision makes (2 under the paired reward).
    stops : bool
        The learner can end a run by itself (identification, comparison): ``done()`` is consulted.
    halts_on_quarantine : bool
        An arm quarantined after faults ends the run (its mean can no longer be learnt).
    pinned : int or None
        An arm the learner always plays (the oracle policy); no guard overrides it.
    replays_exactly : bool
        Its choices read no clock, so a checkpoint replays them exactly under any budget.
    state
        The learner's immutable state.
    """

    pulls_per_decision: int
    stops: bool
    halts_on_quarantine: bool
    pinned: int | None
    replays_exactly: bool

    def choose(self, rng: np.random.Generator, eligible: np.ndarray) -> Selection:
        """The next decision among the ``eligible`` arms."""

    def forced(self, arm: int) -> Selection:
        """The decision a guard forces on ``arm``."""

    def opened(self, selection: Selection) -> None:
        """A decision was dispatched."""

    def close(self, rng: np.random.Generator, decision) -> float:
        """Learn from a decision whose pulls are all back; return its reward (NaN when none).

        ``decision.values`` are the observations as recorded (logs for log-scale arms),
        ``decision.value_arms`` their arms and ``decision.costs`` their costs; ``decision.failed``
        says whether one of its pulls was a fault.
        """

    def done(self, blocked: np.ndarray) -> bool:
        """Whether the learner's stop rule holds, given the arms the engine has taken out of play
        (quarantined or unreliable); evaluated once per closed decision.
        """

    def mean_loss(self) -> np.ndarray:
        """Each arm's mean loss, for the guards (NaN where unknown)."""


@runtime_checkable
class Executor(Protocol):
    """Where pulls run: bound to the arms and streams once, then fed tickets.

    Attributes
    ----------
    capacity : int
        Pulls it can run at once.
    """

    capacity: int

    def bind(self, arms, streams) -> None:
        """Install the arms and the run's streams (before the budget's clock starts)."""

    def submit(self, ticket) -> None:
        """Start one pull."""

    def in_flight(self) -> int:
        """Pulls submitted and not yet returned."""

    def wait(self) -> list:
        """Block until at least one pull is back; return the outcomes."""

    def shutdown(self) -> None:
        """Release workers and threads."""


@runtime_checkable
class Result(Protocol):
    """What every public door returns: one result contract.

    :class:`~pmcbandit.RunResult` (and :class:`~pmcbandit.EvidenceResult`),
    :class:`~pmcbandit.IdentificationResult`, :class:`~pmcbandit.ComparisonResult`,
    :class:`~pmcbandit.FullBanditResult` and :class:`~pmcbandit.ModelComparison` all have:

    Attributes
    ----------
    stopped_by : str
        Why the run ended: ``"budget"``, ``"confidence"`` (a stopping rule held), ``"target_se"``,
        ``"callback"``, ``"no_arm"`` (nothing left to pull), ``"decided"`` (a model comparison's
        decision rule), as the door documents.
    samples : int
        The run's sample count: the pulls its answer was learnt from (each class says whether faulty
        pulls count; a model comparison adds its models' runs). No result spells it another way.
    table : pandas.DataFrame
        One row per arm (per model for a model comparison), indexed by name, a fresh frame on each
        access, in the units the result's :meth:`plot` draws.

    Methods
    -------
    summary() -> str
        A readable report: the answer, why the run stopped, the table, the warnings.
    to_inference_data() -> arviz.InferenceData
        The run for ArviZ (:mod:`pmcbandit.diagnostics.arviz_io`).
    plot(...) -> matplotlib Axes or Figure
        The result's standard figure (:mod:`pmcbandit.diagnostics`).
    """

    @property
    def stopped_by(self) -> str: ...

    @property
    def samples(self) -> int: ...

    @property
    def table(self): ...

    def summary(self) -> str: ...

    def to_inference_data(self): ...

    def plot(self, *args, **kwargs): ...
def declare_result(kind: str):
    """Class decorator: declare ``cls`` as the result type of ``kind`` (one class per kind)."""

    def declare(cls):
        if _RESULT_TYPES.setdefault(kind, cls) is not cls:
            raise ValueError(f"The 'kind' parameter of declare_result must be a new kind. Got {kind!r}, "
                             f"already declared by {_RESULT_TYPES[kind].__qualname__}, instead.")
        return cls

    return declare


def result_type(kind: str) -> type:
    """The result class declared under ``kind`` (:func:`declare_result`)."""
    try:
        return _RESULT_TYPES[kind]
    except KeyError:
        raise LookupError(f"No result type is declared as {kind!r} (declared: {sorted(_RESULT_TYPES)}); "
                          "import pmcbandit first.") from None
