"""Faults below the quarantine limit: counted per arm and warned, whichever door ran.

The fault rule (:mod:`pmcbandit.runtime.engine`) leaves a faulty pull out of every estimate and
quarantines an arm after ``max_faults`` of them. An arm that failed fewer times keeps playing, and
its failed pulls are simply missing from its observations. That is harmless when failures are
unrelated to the value a pull would have returned, and a bias when they are not (an estimator that
fails exactly on its large values). The run cannot tell which, so it says how many pulls failed:
:func:`warn_faults` issues one :class:`~pmcbandit.exceptions.NoGuaranteeWarning` per run naming each
such arm, ``"78 of 394 pulls of arm 'x' failed"``, with the first failure's message. Quarantined
arms are reported by the doors' own warnings; pulls lost with their worker are not the arm's fault
and are not counted.
"""

from __future__ import annotations

import warnings

import numpy as np

from pmcbandit.exceptions import NoGuaranteeWarning
from pmcbandit.runtime.executors.base import caller_stacklevel

__all__ = ["fault_counts", "warn_faults"]


def fault_counts(engine) -> tuple[np.ndarray, np.ndarray]:
    """Per arm: pulls that came back, and those of them that were the arm's fault."""
    arms = engine.history.column("arm")
    pulls = np.bincount(arms, minlength=engine.n_arms) if len(arms) else np.zeros(engine.n_arms, dtype=np.int64)
    return pulls, np.asarray(engine.faults)


def warn_faults(engine, door: str) -> None:
    """Warn once about the arms that faulted without being quarantined (module docstring)."""
    pulls, faults = fault_counts(engine)
    hit = np.flatnonzero((faults > 0) & ~engine.quarantined)
    if not hit.size:
        return
    first = {}
    for _, arm, status, message in engine.history.faults:
        if status != "lost":
            first.setdefault(int(arm), f"{status}: {message}" if message else status)
    parts = [f"{int(faults[k])} of {int(pulls[k])} pulls of arm {engine.arms[k].name!r} failed "
             f"(first: {first.get(int(k), 'unknown')})" for k in hit]
    warnings.warn(
        f"{door}: {'; '.join(parts)}. The failed pulls are left out of the answer, which is biased if failures "
        "depend on the value a pull would have returned: read result.faults and fix the arm, or lower max_faults "
        "to quarantine it.", NoGuaranteeWarning, stacklevel=caller_stacklevel())
