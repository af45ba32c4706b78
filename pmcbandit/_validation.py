"""Argument checks shared by every public entry point.

Every bad value gets the same message shape (after scikit-learn):
``The 'budget' parameter of run must be > 0. Got -1.0 instead.``
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable


def _msg(param: str, owner: str, requirement: str, value) -> str:
    return f"The {param!r} parameter of {owner} must be {requirement}. Got {value!r} instead."


def check_choice(value, choices: Iterable[str], param: str, owner: str) -> str:
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(_msg(param, owner, f"a str among {choices}", value))
    if value not in choices:
        raise ValueError(_msg(param, owner, f"one of {choices}", value))
    return value


def check_positive(value, param: str, owner: str, *, integer: bool = False, allow_zero: bool = False):
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(_msg(param, owner, "an int" if integer else "a real number", value))
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(_msg(param, owner, "finite", value))
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(_msg(param, owner, ">= 0" if allow_zero else "> 0", value))
    return value


def check_open_unit(value, param: str, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(_msg(param, owner, "a real number in (0, 1)", value))
    if not 0.0 < float(value) < 1.0:
        raise ValueError(_msg(param, owner, "in the open interval (0, 1)", value))
    return float(value)


def check_k(k, n_arms: int, owner: str) -> int:
    """``k`` as an int with ``1 <= k < n_arms`` (how many arms a door selects)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(_msg("k", owner, f"an int with 1 <= k < {n_arms} (the number of arms)", k))
    if not 1 <= k < n_arms:
        raise ValueError(_msg("k", owner, f"an int with 1 <= k < {n_arms} (the number of arms)", k))
    return int(k)


def check_loop_options(owner: str, *, max_faults, max_in_flight, pull_timeout, progressbar, callback, checkpoint,
                       checkpoint_every) -> None:
    """The run-loop arguments every entry point shares (:func:`pmcbandit.run`, :func:`pmcbandit.identify`,
    :func:`pmcbandit.compare_samplers`).
    """
    import os

    check_positive(max_faults, "max_faults", owner, integer=True)
    if max_in_flight is not None:
        check_positive(max_in_flight, "max_in_flight", owner, integer=True)
    if pull_timeout is not None:
        check_positive(pull_timeout, "pull_timeout", owner)
    check_positive(checkpoint_every, "checkpoint_every", owner)
    if not isinstance(progressbar, bool):
        raise TypeError(_msg("progressbar", owner, "a bool", progressbar))
    if callback is not None and not callable(callback):
        raise TypeError(_msg("callback", owner, "callable or None", callback))
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise TypeError(_msg("checkpoint", owner, "a path (str or os.PathLike)", checkpoint))


def resolve_named(value, cls, modules: dict, package: str, param: str, factory, params: dict, owner: str):
    """``value`` if it is a ``cls`` (then ``params`` must be empty), else ``factory(module, name)(**params)``
    for the name's module ``package.modules[name]``; ``TypeError``/``ValueError`` name ``param``.

    The one lookup behind :func:`pmcbandit.get_policy` and :func:`pmcbandit.identification.get_identifier`.
    """
    import importlib

    names = tuple(modules)
    if isinstance(value, cls):
        if params:
            raise ValueError(f"The {param!r} parameter of {owner} must be a name when parameters are given "
                             f"({params}). Got a ready {cls.__name__} {value.name!r} instead.")
        return value
    if not isinstance(value, str):
        raise TypeError(_msg(param, owner, f"a str among {names} or a {cls.__name__}", value))
    if value not in modules:
        raise ValueError(_msg(param, owner, f"one of {names}", value))
    module = importlib.import_module(f"{package}.{modules[value]}")
    return factory(module, value)(**params)
