"""How a :class:`~pmcbandit.arms.evidence.model_density.ModelDensity` travels to worker processes.

A density pickles as its frozen ``pm.Model``, a token and the densities PyMC registered for the
model's Op types made at run time (``pm.CustomDist``); unpickling
(:func:`~pmcbandit.arms.evidence.model_density.rebuild_density`) registers those again
(:func:`register_custom`) and compiles the density once per process and token, so all the arms of a
pool unpickled in one worker share one density, as they do in the driver.
"""

from __future__ import annotations

__all__ = ["BUILT", "custom_dispatch", "register_custom"]

#: Densities by token: one compilation per process for every arm that shares a density, and none
#: for a density unpickled in the process that built it.
BUILT: dict = {}


def _dispatchers() -> dict:
    """PyMC's per-Op-type registries that a model's graph is turned into densities with."""
    from pymc.distributions.distribution import _support_point
    from pymc.distributions.shape_utils import _change_dist_size
    from pymc.logprob.abstract import _icdf, _logcdf, _logprob

    return {"logprob": _logprob, "logcdf": _logcdf, "icdf": _icdf, "support_point": _support_point,
            "change_dist_size": _change_dist_size}


def custom_dispatch(model) -> list:
    """``[(op type, {registry: function})]`` for the model's random variables whose Op type was made
    at run time (``pm.CustomDist`` makes one per variable and registers its ``logp`` for it).

    Pickling carries such a type by value, but not its registrations; they travel with it and
    :func:`register_custom` registers them again for the unpickled type (the same object as
    the model's, both being in one pickle).
    """
    import importlib

    tables = _dispatchers()
    out, seen = [], set()
    for rv in model.basic_RVs:
        op_type = type(rv.owner.op)
        if op_type in seen:
            continue
        seen.add(op_type)
        try:
            module = importlib.import_module(op_type.__module__)
            static = getattr(module, op_type.__qualname__, None) is op_type
        except ImportError:
            static = False
        if static:
            continue
        entries = {name: d.registry[op_type] for name, d in tables.items() if op_type in d.registry}
        if entries:
            out.append((op_type, entries))
    return out


def register_custom(custom) -> None:
    """Register again, in this process, the densities :func:`custom_dispatch` listed for a model's
    run-time Op types (those the process does not know yet).
    """
    tables = _dispatchers()
    for op_type, entries in custom:
        for name, fn in entries.items():
            if op_type not in tables[name].registry:
                tables[name].register(op_type)(fn)
