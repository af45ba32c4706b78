"""How pmcbandit speaks: its warning family and its logger.

Every warning the package emits is a :class:`PmcBanditWarning` (``warnings.simplefilter("error",
PmcBanditWarning)`` turns every one into an exception a caller can catch). A warning means *the
answer may be wrong or carries no guarantee*; each text names the action that would fix it.
What was merely adapted or is sound but weaker than it could be goes to the result's notes and to
the ``pmcbandit`` logger instead (``docs/guide/warnings.md``).

Subclasses say which kind of doubt it is, so a caller can filter one kind:

* :class:`UnreliableArmWarning` — an arm was left out of the answer (quarantined after faults,
  or its importance weights failed the Pareto :math:`\\hat k` check);
* :class:`NoGuaranteeWarning` — the answer lacks the guarantee it was asked for (an
  identification or comparison that ran out of budget, an asymptotic-only guarantee, an interval
  from too few observations, arms that disagree);
* :class:`SettingsWarning` — a setting the package could not honour as given (e.g. a solver that
  stopped at its iteration cap).

A result's ``warnings()`` returns its messages as :class:`WarningText` strings, each carrying the
subclass it is issued as (:func:`pmcbandit.runtime.door.emit_warnings` issues each once).

**Notes and the logger.** PyMC's convention, kept here: a *warning* means the answer may be
wrong or carries no guarantee; what the package *did* (AIS step counts sized for the budget, arms
left out with the reason) and what is sound but weaker than it could be (an arm given no weight
because its importance weights failed the Pareto :math:`\\hat k` check) is a *note*: it is kept in
the result (``result.notes``, ``summary()``, the InferenceData's ``notes`` attribute) and logged
once at ``INFO`` on the ``pmcbandit`` logger (:data:`logger`) when the door returns. The logger has
only a :class:`logging.NullHandler` (the library convention of the :mod:`logging` HOWTO): nothing
is printed unless the application configures logging, e.g. ``logging.basicConfig(level=logging.INFO)``.

This module imports nothing from the package: every layer may use it.
"""

from __future__ import annotations

import logging

__all__ = ["PmcBanditWarning", "UnreliableArmWarning", "NoGuaranteeWarning", "SettingsWarning", "WarningText",
           "logger", "log_notes"]

logger = logging.getLogger("pmcbandit")
logger.addHandler(logging.NullHandler())


def log_notes(notes) -> None:
    """Log each of ``notes`` (strings) once at ``INFO`` on the ``pmcbandit`` logger, in order;
    a note repeated in ``notes`` is logged once.
    """
    for note in dict.fromkeys(str(n) for n in notes):
        logger.info(note)


class PmcBanditWarning(UserWarning):
    """The answer may be wrong or has no guarantee; the message says what to do about it."""


class UnreliableArmWarning(PmcBanditWarning):
    """An arm was left out of the answer: quarantined after faults, or its importance weights failed
    the Pareto k-hat check (Vehtari et al. 2024).
    """


class NoGuaranteeWarning(PmcBanditWarning):
    """The answer lacks its guarantee: stopped by the budget before confidence, an asymptotic-only
    guarantee, an interval from too few observations, or arms that disagree.
    """


class SettingsWarning(PmcBanditWarning):
    """A setting could not be honoured as given (a solver's iteration cap, a worker restart)."""


class WarningText(str):
    """A warning's message (a plain ``str``, so it prints, compares and serialises as one) that also
    carries the :class:`PmcBanditWarning` subclass it is issued as, and a ``topic`` naming the
    condition (so a message issued before the run is not issued again after it).

    Parameters
    ----------
    text : str
        The message, naming the action that would fix the condition.
    category : type
        A subclass of :class:`PmcBanditWarning`.
    topic : str
        A short name of the condition (e.g. ``"independent_check"``).
    """

    category: type
    topic: str

    def __new__(cls, text: str, category: type = PmcBanditWarning, topic: str = ""):
        if not (isinstance(category, type) and issubclass(category, PmcBanditWarning)):
            raise TypeError(
                "The 'category' parameter of WarningText must be a subclass of PmcBanditWarning. "
                f"Got {category!r} instead."
            )
        obj = super().__new__(cls, text)
        obj.category = category
        obj.topic = str(topic)
        return obj

    def __reduce__(self):
        return (WarningText, (str(self), self.category, self.topic))
