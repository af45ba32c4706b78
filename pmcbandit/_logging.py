"""The ``pmcbandit`` logger: what a run adapted, and what is sound but weaker than it could be.

PyMC's convention, kept here: a *warning* (:mod:`pmcbandit.exceptions`) means the answer may be
wrong or carries no guarantee; what the package *did* (AIS step counts sized for the budget, arms
left out with the reason) and what is sound but weaker than it could be (an arm given no weight
because its importance weights failed the Pareto :math:`\\hat k` check) is a *note*: it is kept in
the result (``result.notes``, ``summary()``, the InferenceData's ``notes`` attribute) and logged
once at ``INFO`` on the ``pmcbandit`` logger when the door returns. The table of every message and
its kind is ``docs/guide/warnings.md``.

The logger has only a :class:`logging.NullHandler` (the library convention of the
:mod:`logging` HOWTO): nothing is printed unless the application configures logging, e.g.
``logging.basicConfig(level=logging.INFO)`` or
``logging.getLogger("pmcbandit").addHandler(logging.StreamHandler())`` with level ``INFO``.
"""

from __future__ import annotations

import logging

__all__ = ["logger", "log_notes"]

logger = logging.getLogger("pmcbandit")
logger.addHandler(logging.NullHandler())


def log_notes(notes) -> None:
    """Log each of ``notes`` (strings) once at ``INFO`` on the ``pmcbandit`` logger, in order;
    a note repeated in ``notes`` is logged once.
    """
    for note in dict.fromkeys(str(n) for n in notes):
        logger.info(note)
