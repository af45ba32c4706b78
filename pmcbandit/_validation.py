"""Argument checks shared by every public entry point.

Every bad value gets the same message shape (after scikit-learn):
``The 'budget' parameter of run must be > 0. Got -1.0 instead.``
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable


def param_message(param: str, door: str, requirement: str, value) -> str:
    """The one message for a bad argument (the parameter, the door, what it must be, what it got).

    Every ``TypeError`` and ``ValueError`` a door raises for an argument uses it (``door`` is the public
    function or class the user called).
    """
    return f"The {param!r} parameter of {door} must be {requirement}. Got {value!r} instead."


def check_choice(value, choices: Iterable[str], param: str, door: str) -> str:
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(param_message(param, door, f"a str among {choices}", value))
    if value not in choices:
        raise ValueError(param_message(param, door, f"one of {choices}", value))
    return value


def check_positive(value, param: str, door: str, *, integer: bool = False, allow_zero: bool = False):
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(param_message(param, door, "an int" if integer else "a real number", value))
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(param_message(param, door, "finite", value))
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(param_message(param, door, ">= 0" if allow_zero else "> 0", value))
    return value


def check_open_unit(value, param: str, door: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(param_message(param, door, "a real number in (0, 1)", value))
    if not 0.0 < float(value) < 1.0:
        raise ValueError(param_message(param, door, "in the open interval (0, 1)", value))
    return float(value)


def check_k(k, n_arms: int, door: str) -> int:
    """``k`` as an int with ``1 <= k < n_arms`` (how many arms a door selects)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(param_message("k", door, f"an int with 1 <= k < {n_arms} (the number of arms)", k))
    if not 1 <= k < n_arms:
        raise ValueError(param_message("k", door, f"an int with 1 <= k < {n_arms} (the number of arms)", k))
    return int(k)


def check_loop_options(door: str, *, max_faults, max_in_flight, pull_timeout, progressbar, callback, checkpoint,
                       checkpoint_every) -> None:
    """The run-loop arguments every entry point shares (:func:`pmcbandit.run`, :func:`pmcbandit.identify`,
    :func:`pmcbandit.compare_samplers`).
    """
    import os

    check_positive(max_faults, "max_faults", door, integer=True)
    if max_in_flight is not None:
        check_positive(max_in_flight, "max_in_flight", door, integer=True)
    if pull_timeout is not None:
        check_positive(pull_timeout, "pull_timeout", door)
    check_positive(checkpoint_every, "checkpoint_every", door)
    if not isinstance(progressbar, bool):
        raise TypeError(param_message("progressbar", door, "a bool", progressbar))
    if callback is not None and not callable(callback):
        raise TypeError(param_message("callback", door, "callable or None", callback))
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(param_message("checkpoint", door, "a path (str or os.PathLike)", checkpoint))


def resolve_named(value, cls, modules: dict, package: str, param: str, factory, params: dict, door: str):
    """``value`` if it is a ``cls`` (then ``params`` must be empty), else ``factory(module, name)(**params)``
    for the name's module ``package.modules[name]``; ``TypeError``/``ValueError`` name ``param``.

    The one lookup behind :func:`pmcbandit.get_policy` and :func:`pmcbandit.identification.get_identifier`.
    """
    import importlib

    names = tuple(modules)
    if isinstance(value, cls):
        if params:
            raise ValueError(f"The {param!r} parameter of {door} must be a name when parameters are given "
                             f"({params}). Got a ready {cls.__name__} {value.name!r} instead.")
        return value
    if not isinstance(value, str):
        raise TypeError(param_message(param, door, f"a str among {names} or a {cls.__name__}", value))
    if value not in modules:
        raise ValueError(param_message(param, door, f"one of {names}", value))
    module = importlib.import_module(f"{package}.{modules[value]}")
    return factory(module, value)(**params)
