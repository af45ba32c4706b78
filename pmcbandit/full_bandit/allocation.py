"""Allocations by name: ``"uniform"`` (:func:`~pmcbandit.full_bandit.design.uniform_allocation`) or ``"g"``
(the G-allocation of Kuroki et al. 2020, App. D: :func:`~pmcbandit.full_bandit.g_allocation.g_allocation`),
or a ready :class:`Allocation`, validated for the run (:func:`resolve_allocation`).

The allocation itself, its checks and the tracking rule live in :mod:`~pmcbandit.full_bandit.design`, below
both builders; this module sits above them and re-exports those names.
"""

from __future__ import annotations

import inspect

from pmcbandit._validation import param_message
from pmcbandit.full_bandit.design import (ALLOCATION_NAMES, Allocation, _orthogonalise_into, check_allocation, check_nk,
                                          rounds_to_full_rank, support_rank, track, uniform_allocation)
from pmcbandit.full_bandit.g_allocation import g_allocation

__all__ = ["Allocation", "uniform_allocation", "check_allocation", "resolve_allocation", "allocation_builder",
           "track", "ALLOCATION_NAMES", "check_nk", "support_rank", "rounds_to_full_rank", "_orthogonalise_into"]


def allocation_builder(name: str):
    """The builder of a named allocation: :func:`~pmcbandit.full_bandit.design.uniform_allocation` or
    :func:`~pmcbandit.full_bandit.g_allocation.g_allocation`.
    """
    return g_allocation if name == "g" else uniform_allocation


def resolve_allocation(allocation, n: int, k: int, door: str, **kwargs) -> Allocation:
    """An :class:`Allocation` from a name (``"uniform"`` or ``"g"``, built with ``kwargs``:
    :func:`allocation_builder`) or a ready one (``kwargs`` must then be empty), validated by
    :func:`check_allocation`.
    """
    if isinstance(allocation, str):
        if allocation not in ALLOCATION_NAMES:
            raise ValueError(param_message("allocation", door, f"one of {ALLOCATION_NAMES} or an Allocation",
                                           allocation))
        builder = allocation_builder(allocation)
        unknown = set(kwargs) - set(inspect.signature(builder).parameters) - {"n", "k"}
        if unknown:
            raise TypeError(param_message("allocation_kwargs", door, f"settings of {builder.__name__}",
                                          sorted(unknown)))
        allocation = builder(n, k, **kwargs)
    elif kwargs:
        raise ValueError(param_message("allocation_kwargs", door, "empty for a ready Allocation", sorted(kwargs)))
    return check_allocation(allocation, n, k, door)
