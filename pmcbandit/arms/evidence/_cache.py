"""Compiled densities of the models seen in this process, their mode searches, refined proposals and trace fits.

A second evidence run on the same ``pm.Model`` object reuses its compiled
:class:`~pmcbandit.arms.evidence.ModelDensity` (and the multi-start mode search of the Laplace arms)
while the model's variables and data are unchanged: :func:`density_for` keys the cache by the model
object and checks it against :func:`fingerprint`. A run given a posterior trace reuses what the set-up fitted to
the same trace on the same density (:func:`trace_fit_for`, keyed by :func:`trace_digest` of its unconstrained draws).
Imports: NumPy and this package's evidence arms.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

import numpy as np

__all__ = ["density_for", "modes_for", "refined_for", "fingerprint", "non_centred_model", "innovations_of",
           "model_function_for", "trace_digest", "trace_fit_for", "TRACE_FITS_KEPT"]

#: Compiled densities (and their mode searches) of the models seen in this process: a second call on a
#: model whose variables and data are unchanged skips compilation (:func:`density_for`).
_DENSITIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_MODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_REFINED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Functions compiled from a model for one of its densities (:func:`model_function_for`):
#: ``{density: {name: (model fingerprint, weak reference to the model, function)}}``.
_MODEL_FUNCTIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Set-up fitted to posterior traces, per density (:func:`trace_fit_for`): ``{density: OrderedDict{key: value}}``.
_TRACE_FITS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Entries :func:`trace_fit_for` keeps per density, the least recently used dropped first.
TRACE_FITS_KEPT = 32
#: Each non-centred density's innovations: ``{innovation name: name of the variable it replaced}``.
_INNOVATIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def density_for(model, non_centre: bool, notes: list[str]):
    """The :class:`~pmcbandit.arms.evidence.ModelDensity` of ``model`` (non-centred when asked), compiled once per
    model object and content: the cache is keyed by the model object and checked against a fingerprint of its
    free variables (names, types), data containers' values, observed values and potentials, so a model changed
    since (``pm.set_data``, a variable added) is compiled again. ``notes`` gets the pool's non-centring note.
    """
    from pmcbandit.arms.evidence import ModelDensity

    key = fingerprint(model)
    cached = _DENSITIES.get(model, {}).get(bool(non_centre))
    if cached is None or cached[0] != key:
        own: list[str] = []
        replaced: dict[str, str] = {}
        cached = (key, ModelDensity(non_centred_model(model, own, replaced) if non_centre else model), own)
        _DENSITIES.setdefault(model, {})[bool(non_centre)] = cached
        _INNOVATIONS[cached[1]] = replaced
    notes.extend(cached[2])
    return cached[1]


def fingerprint(model) -> str:
    import hashlib

    digest = hashlib.sha256()
    for rv in model.free_RVs:
        digest.update(f"{rv.name}:{rv.type}:{rv.owner.op}".encode())
    for var in model.data_vars:
        digest.update(var.name.encode() + np.ascontiguousarray(var.get_value()).tobytes())
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        data = value.get_value() if hasattr(value, "get_value") else getattr(value, "data", None)
        digest.update(f"{rv.name}:{rv.owner.op}".encode())
        if data is not None:
            digest.update(np.ascontiguousarray(data).tobytes())
    digest.update(repr([p.name for p in model.potentials]).encode())
    return digest.hexdigest()


def non_centred_model(model, notes: list[str], replaced: dict | None = None):
    """The model non-centred (:func:`~pmcbandit.arms.evidence.reparam.non_centred`), with a note when it changed;
    ``replaced`` gets ``{innovation: variable it replaced}``.
    """
    from pmcbandit.arms.evidence.reparam import non_centred

    nc = non_centred(model)
    if replaced is not None:
        replaced.update(zip(nc.innovations, nc.replaced))
    if nc.changed:
        pairs = ", ".join(f"{x} from {z}" for x, z in zip(nc.replaced, nc.innovations))
        notes.append(f"the evidence was estimated on the model non-centred, the same model without the funnel of a "
                     f"centred hierarchy ({pairs}, each z ~ Normal(0, 1)); the posterior draws hold the z variables "
                     "and the original ones as deterministics (evidence_arms(model, non_centre=False) keeps it as "
                     "written)")
    return nc.model


def innovations_of(density) -> dict:
    """``{innovation name: name of the free variable it replaced}`` of a density :func:`density_for` built on a
    non-centred model (empty for one built on the model as written, or not by :func:`density_for`).
    """
    return dict(_INNOVATIONS.get(density, {}))


def modes_for(density, find_modes, max_seconds: float | None = None):
    """The mode search of ``density`` (``find_modes(density, max_seconds=max_seconds)``), made once per density: a
    search that ran all its starts is kept and serves every later call, one cut short by ``max_seconds`` is not.
    """
    search = _MODES.get(density)
    if search is None:
        search = find_modes(density, max_seconds=max_seconds)
        if not search.timed_out:
            _MODES[density] = search
    return search


def refined_for(density, arm, refine, seed: int):
    """``refine(arm, np.random.default_rng(seed))`` (:func:`~pmcbandit.arms.evidence.refine.refine_proposal`), made
    once per density and proposal settings.
    """
    key = (arm.df, arm.inflation, arm.defensive, seed)
    done = _REFINED.setdefault(density, {})
    if key not in done:
        done[key] = refine(arm, np.random.default_rng(seed))
    return done[key]


def model_function_for(model, density, name: str, build):
    """``build(model, density)`` (a function compiled from ``model``'s graph for its ``density``), made once per
    density, ``name`` and model content: the entry is checked against the model object and :func:`fingerprint`, so
    a model changed since (``pm.set_data``, a variable added) or another model given with the same density is
    compiled again, never served a stale function. The entry holds the model weakly and lives as long as the density.
    """
    key = fingerprint(model)
    done = _MODEL_FUNCTIONS.setdefault(density, {})
    cached = done.get(name)
    if cached is None or cached[0] != key or cached[1]() is not model:
        cached = (key, weakref.ref(model), build(model, density))
        done[name] = cached
    return cached[2]


def trace_digest(x: np.ndarray) -> str:
    """A SHA-256 digest of the draws ``x`` (their shape, dtype and bytes): the identity of a trace's content."""
    import hashlib

    x = np.ascontiguousarray(x)
    digest = hashlib.sha256(f"{x.shape}:{x.dtype}".encode())
    digest.update(x.tobytes())
    return digest.hexdigest()


def trace_fit_for(density, key: tuple, build, keep=None):
    """``build()``, made once per ``density`` and ``key`` (a hashable tuple: what is fitted, the
    :func:`trace_digest` of the draws it is fitted to when it depends on them, and the settings it depends on).

    Only what is a fixed function of the key belongs here (a fit with a fixed seed, a pilot that ran to its end,
    the seconds of a timing probe): a later run given the same trace then gets the same proposals, hence the same
    estimate for the same seed, without the set-up that fitted them. A value for which ``keep(value)`` is false (a
    pilot cut short by its time limit) is returned and not kept. The entries live as long as the density, at most
    :data:`TRACE_FITS_KEPT` of them, the least recently used dropped first.
    """
    done = _TRACE_FITS.setdefault(density, OrderedDict())
    if key in done:
        done.move_to_end(key)
        return done[key]
    value = build()
    if keep is None or keep(value):
        done[key] = value
        while len(done) > TRACE_FITS_KEPT:
            done.popitem(last=False)
    return value
