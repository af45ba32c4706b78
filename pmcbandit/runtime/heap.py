"""The interpreter's heap while a run pulls: what was built before the pulls is frozen for the cyclic collector.

A pull's cost is the CPU time around its draw (:meth:`pmcbandit.arms.Arm.pull`). Python's cyclic garbage
collector runs when enough container objects have been allocated, and a collection of its oldest generation walks
every tracked object of the process: the model's PyMC and PyTensor graphs, the compiled functions and every module
imported. That pause can last many times a cheap pull's own draw, and the pull that happens to trigger it is
charged with it. An arm charged so early in a run looks many times as costly as it is, and a policy that weighs
cost stops choosing it.

:func:`frozen_heap` calls :func:`gc.freeze` (Python >= 3.7) for the duration of the pulls: every object tracked so
far moves to a permanent generation that collections skip, so the collections during the run walk only what the
run allocates, and :func:`gc.unfreeze` returns those objects to the oldest generation at the end. Garbage made
before the run is freed by the next full collection after it. A heap that the caller (or an enclosing run) has frozen
is left as it is, and so is the state of the collector (:func:`gc.disable` is not touched).
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

__all__ = ["frozen_heap"]


@contextmanager
def frozen_heap():
    """Freeze the heap for the cyclic collector inside the block, unless something is already frozen."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
