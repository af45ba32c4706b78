"""Posterior draws a user already has (``pm.sample``'s result, or a mapping of arrays), read and checked for a model.

:func:`read_trace` takes what ``pm.sample`` returns on the supported versions (an ArviZ 0.x ``InferenceData`` or an
ArviZ 1.x ``xarray.DataTree``, read through :mod:`pmcbandit._compat` without importing ArviZ) or a plain mapping
``{variable name: array (chain, draw, *shape)}`` (an ``xarray.Dataset`` is one), and returns the draws of the model's
free variables. :func:`unconstrained_draws` maps them to the unconstrained space of the model's compiled density with
the model's own value variables and transforms (``model.rvs_to_transforms``; for a density on the model non-centred,
:mod:`~pmcbandit.arms.evidence.reparam`, each innovation :math:`z = (v - \\mu) / \\sigma` from the replaced variable's
value :math:`v` and its own :math:`\\mu, \\sigma`).

Rules:

* a trace of another model (a free variable missing, a variable the model does not have, a wrong shape) raises
  ``ValueError`` naming the variable; so does a trace without a ``posterior`` group (``sample_prior_predictive``'s, or
  one with only a ``prior`` group). Deterministic and observed variables, and transformed value variables, are
  ignored;
* draws with a NaN or infinite value are dropped; fewer than :data:`MIN_TRACE_DRAWS` draws, a rank-normalised split
  :math:`\\hat R` (Vehtari et al. 2021, "Rank-normalization, folding, and localization: an improved R-hat", Bayesian
  Analysis 16(2)) above :data:`MAX_RHAT`, or divergent transitions (``sample_stats.diverging``) each give a warning
  text naming the problem and what to do. None of them makes the estimate wrong: the draws only fit proposals, and
  the weights of fresh proposal draws stay unbiased and are checked by Pareto :math:`\\hat k`.

May import: the helpers (``_compat``, ``exceptions``) and the arms' model-level cache; never a door.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from pmcbandit.exceptions import PmcBanditWarning, WarningText

__all__ = ["MAX_RHAT", "MIN_TRACE_DRAWS", "TraceDraws", "rank_rhat", "read_trace", "unconstrained_draws"]

#: Fewest draws (all chains together) below which a trace is said to be too short to fit proposals to.
MIN_TRACE_DRAWS = 100
#: Largest rank-normalised split R-hat of a trace that is not flagged (Vehtari et al. 2021, Sec. 4).
MAX_RHAT = 1.01


class TraceDraws(NamedTuple):
    """The draws of a model's free variables from a trace, and what the checks said.

    ``values`` maps each free variable (constrained, PyMC's names) to an array ``(n_draws, *shape)`` (chains
    concatenated, draws with a non-finite value dropped); ``alerts`` the warning texts of :func:`read_trace`.
    """

    values: dict
    n_chains: int
    alerts: tuple


def _groups(idata, door: str) -> dict | None:
    """The groups of an InferenceData / DataTree as ``{name: Dataset}``, or ``None`` for a plain mapping."""
    import xarray as xr

    from pmcbandit._compat import group, group_names

    tree = isinstance(idata, xr.DataTree) if hasattr(xr, "DataTree") else False
    if tree or callable(getattr(idata, "groups", None)):  # ArviZ 0.x's InferenceData is also a Mapping
        return {name.strip("/"): group(idata, name) for name in group_names(idata)}
    if isinstance(idata, Mapping):
        return None
    raise TypeError(f"The 'idata' parameter of {door} must be what pm.sample returns (InferenceData or DataTree) or a "
                    f"mapping {{variable name: array (chain, draw, *shape)}}. Got {type(idata).__name__} instead.")


def read_trace(idata, model, door: str) -> TraceDraws:
    """The draws of ``model``'s free variables in ``idata`` (module docstring), checked.

    Raises
    ------
    TypeError
        When ``idata`` is neither an InferenceData / DataTree nor a mapping of arrays.
    ValueError
        When it has no ``posterior`` group, or is a trace of another model (the variable named).
    """
    groups = _groups(idata, door)
    diverging = None
    if groups is None:
        posterior = idata
    else:
        if "posterior" not in groups:
            raise ValueError(
                f"The 'idata' parameter of {door} must hold posterior draws (a 'posterior' group, as pm.sample "
                f"returns). Got groups {sorted(groups)!r} instead: a trace of pm.sample_prior_predictive, or of the "
                "prior alone, describes the prior, not the posterior the evidence's proposals are fitted to.")
        posterior = groups["posterior"]
        stats = groups.get("sample_stats")
        if stats is not None and "diverging" in stats:
            diverging = int(np.sum(np.asarray(stats["diverging"])))
    values, n_chains = _free_values(posterior, model, door)
    return TraceDraws(*_checked(values, n_chains, diverging))


def _free_values(posterior, model, door: str) -> tuple[dict, int]:
    """``{free variable: array (chain, draw, *shape)}`` of a posterior mapping, with the other-model checks."""
    free = [rv.name for rv in model.free_RVs]
    known = set(free) | {v.name for v in model.deterministics} | {rv.name for rv in model.observed_RVs}
    known |= {v.name for v in model.value_vars} | {p.name for p in model.potentials if p.name}
    names = [str(k) for k in posterior]
    missing = [n for n in free if n not in names]
    if missing:
        raise ValueError(f"The 'idata' parameter of {door} must hold draws of every free variable of the model. Got "
                         f"a trace without {missing[0]!r} instead (a trace of another model?).")
    foreign = [n for n in names if n not in known]
    if foreign:
        raise ValueError(f"The 'idata' parameter of {door} must hold draws of this model's variables. Got variable "
                         f"{foreign[0]!r}, which the model does not have, instead (a trace of another model?).")
    shapes = {k: tuple(int(s) for s in v) for k, v in model.eval_rv_shapes().items()}
    values = {}
    chains = None
    for name in free:
        arr = np.asarray(posterior[name], dtype=np.float64)
        want = shapes[name]
        if arr.ndim != 2 + len(want) or arr.shape[2:] != want:
            raise ValueError(f"The 'idata' parameter of {door} must hold draws (chain, draw, *shape) of variable "
                             f"{name!r} of shape {want}. Got an array of shape {arr.shape} instead (a trace of another "
                             "model, or of other data?).")
        if chains is not None and arr.shape[:2] != chains:
            raise ValueError(f"The 'idata' parameter of {door} must hold as many chains and draws of every variable. "
                             f"Got {arr.shape[:2]} of {name!r} and {chains} of {free[0]!r} instead.")
        chains = arr.shape[:2]
        values[name] = arr
    return values, int(chains[0])


def _checked(values: dict, n_chains: int, diverging: int | None):
    """The draws without non-finite rows, flattened over chains, and the warning texts (module docstring)."""
    alerts = []
    fix = ("rerun pm.sample (more tune and draws, a higher target_accept, or the model reparametrised); the "
           "proposals fitted to these draws may be poor, which each trace arm's Pareto k-hat shows, but the estimate "
           "uses fresh proposal draws and stays unbiased")
    flat = {k: v.reshape((-1,) + v.shape[2:]) for k, v in values.items()}
    n = next(iter(flat.values())).shape[0]
    finite = np.ones(n, dtype=bool)
    for v in flat.values():
        finite &= np.isfinite(v.reshape(n, -1)).all(axis=1)
    if not finite.all():
        alerts.append(WarningText(f"the trace has {int((~finite).sum())} of {n} draws with a NaN or infinite value; "
                                  f"they were left out: {fix}", PmcBanditWarning, "trace"))
        flat = {k: v[finite] for k, v in flat.items()}
    kept = int(finite.sum())
    if kept < MIN_TRACE_DRAWS:
        alerts.append(WarningText(f"the trace has {kept} usable draws, fewer than {MIN_TRACE_DRAWS}: too few to fit "
                                  f"proposals to; {fix}", PmcBanditWarning, "trace"))
    if diverging:
        alerts.append(WarningText(f"the trace has {diverging} divergent transitions: its draws may miss part of the "
                                  f"posterior; {fix}", PmcBanditWarning, "trace"))
    if finite.all() and values:
        worst = _worst_rhat(values)
        if worst[1] > MAX_RHAT:
            alerts.append(WarningText(f"the trace's chains disagree: R-hat of {worst[0]!r} is {worst[1]:.3g} > "
                                      f"{MAX_RHAT}; {fix}", PmcBanditWarning, "trace"))
    return flat, n_chains, tuple(alerts)


#: The worst R-hat of the traces read last (:func:`_worst_rhat`), by digest of their draws; at most
#: :data:`_RHAT_KEPT`, the least recently used dropped first.
_RHAT: OrderedDict = OrderedDict()
_RHAT_KEPT = 8


def _worst_rhat(values: dict) -> tuple[str, float]:
    """The variable of the largest :func:`rank_rhat` over ``values`` ``{name: (chain, draw, *shape)}`` and that
    R-hat, computed once per trace content (a second run given the same trace reads it back).
    """
    import hashlib

    digest = hashlib.sha256()
    for k, v in values.items():
        v = np.ascontiguousarray(v)
        digest.update(f"{k}:{v.shape}:{v.dtype}".encode())
        digest.update(v.tobytes())
    key = digest.hexdigest()
    if key in _RHAT:
        _RHAT.move_to_end(key)
        return _RHAT[key]
    worst = max(((k, rank_rhat(v.reshape(v.shape[:2] + (-1,)))) for k, v in values.items()),
                key=lambda kv: np.nan_to_num(kv[1], nan=-np.inf))
    _RHAT[key] = worst
    while len(_RHAT) > _RHAT_KEPT:
        _RHAT.popitem(last=False)
    return worst


def _split_rhat(x: np.ndarray) -> np.ndarray:
    """Split :math:`\\hat R` of draws ``(chain, draw, k)`` per column (Gelman et al. 2013, BDA3, Sec. 11.4)."""
    half = x.shape[1] // 2
    s = np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)
    n = s.shape[1]
    within = s.var(axis=1, ddof=1).mean(axis=0)
    between = n * s.mean(axis=1).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(((n - 1) / n * within + between / n) / within)


def rank_rhat(x: np.ndarray) -> float:
    """The largest rank-normalised split :math:`\\hat R` (bulk and folded tail, Vehtari et al. 2021, Sec. 4.2)
    over the columns of draws ``(chain, draw, k)``; NaN when there are fewer than 4 draws per chain or every column is
    constant.
    """
    from scipy.special import ndtri
    from scipy.stats import rankdata

    if x.shape[1] < 4:
        return float("nan")

    def z(a):
        flat = a.reshape(-1, a.shape[2])
        r = rankdata(flat, axis=0)
        return ndtri((r - 0.375) / (flat.shape[0] + 0.25)).reshape(a.shape)

    bulk = _split_rhat(z(x))
    tail = _split_rhat(z(np.abs(x - np.median(x.reshape(-1, x.shape[2]), axis=0))))
    both = np.fmax(bulk, tail)
    return float(np.nanmax(both)) if np.isfinite(both).any() else float("nan")


def unconstrained_draws(model, density, values: dict) -> np.ndarray:
    """The draws ``values`` (:attr:`TraceDraws.values`) of ``model`` as points ``(n, density.dim)`` of ``density``'s
    unconstrained space (module docstring); a draw that maps to a non-finite point is dropped.

    ``density`` is ``model``'s :class:`~pmcbandit.arms.evidence.ModelDensity` from
    :func:`~pmcbandit.arms.evidence._cache.density_for` (as written, or non-centred). The map is compiled once per
    density and model content (:func:`~pmcbandit.arms.evidence._cache.model_function_for`) and applied to all the
    draws in one call, the model's graph vectorised over a leading draw axis (PyTensor's ``vectorize_graph``); where
    the graph cannot be vectorised, one draw per call.
    """
    from pmcbandit.arms.evidence._cache import model_function_for

    fn, batched = model_function_for(model, density, "unconstrained_draws", _compile_map)
    names = [rv.name for rv in model.free_RVs]
    n = values[names[0]].shape[0]
    x = np.empty((n, density.dim))
    if batched:
        inputs = [np.asarray(values[rv.name], dtype=rv.dtype) for rv in model.free_RVs]
        for name, part in zip(density.value_names, fn(*inputs)):
            shape = density.shapes[name]
            part = np.asarray(part)
            if part.ndim == len(shape):  # a value that depends on no draw
                part = np.broadcast_to(part, (n, *part.shape))
            x[:, density.slices[name]] = np.broadcast_to(part, (n, *shape)).reshape(n, -1)
    else:
        for i in range(n):
            parts = fn(*(values[k][i] for k in names))
            for name, part in zip(density.value_names, parts):
                x[i, density.slices[name]] = np.broadcast_to(part, density.shapes[name]).ravel()
    return x[np.isfinite(x).all(axis=1)]


def _compile_map(model, density):
    """``(function, batched)``: the map of one draw of ``model``'s free variables to ``density``'s value variables
    (module docstring), vectorised over a leading draw axis when PyTensor can (``batched``), else per draw.
    """
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace, vectorize_graph

    from pmcbandit.arms.evidence._cache import innovations_of

    rvs = {rv.name: rv for rv in model.free_RVs}
    value_of = {}
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        value_of[model.rvs_to_values[rv].name] = rv if transform is None else transform.forward(rv, *rv.owner.inputs)
    replaced = innovations_of(density)
    outputs = []
    for name in density.value_names:
        if name in replaced:
            rv = rvs[replaced[name]]
            mu, sigma = rv.owner.op.dist_params(rv.owner)
            outputs.append((value_of[model.rvs_to_values[rv].name] - mu) / sigma)
        else:
            outputs.append(value_of[name])
    outputs = [pt.cast(o, "float64") for o in outputs]
    free = list(model.free_RVs)
    try:
        plain = [rv.type(name=rv.name) for rv in free]
        one = clone_replace(outputs, replace=dict(zip(free, plain)))
        many = [pt.tensor(dtype=rv.dtype, shape=(None, *rv.type.shape), name=rv.name) for rv in free]
        fn = pytensor.function(many, vectorize_graph(one, replace=dict(zip(plain, many))), on_unused_input="ignore")
        return fn, True
    except Exception:  # noqa: BLE001 (an Op PyTensor cannot vectorise: one draw per call instead)
        return pytensor.function(free, outputs, on_unused_input="ignore"), False
