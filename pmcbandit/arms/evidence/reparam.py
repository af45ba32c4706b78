"""Non-centred reparametrisation of a PyMC model's hierarchical Normal (and LogNormal) variables.

A free variable written *centred*, :math:`x \\sim N(\\mu, \\sigma)` with :math:`\\mu` or
:math:`\\sigma` a function of other free variables (a group-level scale :math:`\\tau`, say),
makes the posterior a funnel: as :math:`\\tau \\to 0` the conditional of :math:`x` narrows
without bound, the Laplace arms find no interior mode, and annealing mixes slowly. The
*non-centred* form (Papaspiliopoulos, Roberts & Sköld 2007, *A general framework for the
parametrization of hierarchical models*, Statistical Science 22(1), Sec. 2)

.. math:: z \\sim N(0, 1), \\qquad x = \\mu + \\sigma z

draws :math:`z` independently of the parameters, so the prior of :math:`(\\ldots, z)` has no
funnel. It is the same model: for every value of the parents, :math:`\\mu + \\sigma z` has the
law :math:`N(\\mu, \\sigma)` (:math:`\\sigma > 0`), so the joint law of the free variables
*and of every observed variable* is unchanged, and with it the evidence
:math:`Z = p(y) = \\int p(\\theta) L(\\theta)\\, d\\theta` (the change of variables
:math:`x \\mapsto z` has Jacobian :math:`\\prod \\sigma`, which the density of :math:`x` absorbs).
A LogNormal :math:`x \\sim \\mathrm{LogNormal}(\\mu, \\sigma)` becomes
:math:`x = \\exp(\\mu + \\sigma z)` by the same argument.

:func:`non_centred` rewrites the model graph (PyMC's
:func:`pymc.model.fgraph.fgraph_from_model` / :func:`~pymc.model.fgraph.model_from_fgraph`, as
:func:`pymc.do` does): each such free variable ``x`` becomes a free ``x_z ~ Normal(0, 1)`` of
the same shape and dims, and ``x`` a ``pm.Deterministic`` of the same name, dims and value,
which every observed variable, Potential and Deterministic that used ``x`` now reads.
Rules:

* only free ``Normal`` (any of ``sigma=``/``tau=``, ``size``/``shape``/``dims``) and
  ``LogNormal`` variables whose ``mu`` or ``sigma`` depends on another free variable are
  rewritten; with constant parameters nothing is gained and the variable is left alone;
* a variable with a value transform other than its default (none for a Normal, ``log`` for a
  LogNormal) is left alone (an ``ordered`` transform, say, would be lost);
* observed variables, Potentials, Data and coords are kept as they are;
* a model with nothing to rewrite, or one PyMC cannot convert to a graph (nested sub-models),
  is returned as the same object, and the result says why.

The positivity of :math:`\\sigma` is assumed, as in the centred model (whose density is
:math:`-\\infty` otherwise).
"""

from __future__ import annotations

import warnings
from types import MappingProxyType
from typing import Mapping, NamedTuple

import numpy as np

from pmcbandit._compat import model_deterministic, model_free_rv, model_var_dims

__all__ = ["NonCentring", "non_centred"]



class NonCentring(NamedTuple):
    """The rewritten model and what was done.

    Attributes
    ----------
    model : pymc.Model
        The non-centred model; the *same object* as the input when nothing was rewritten.
    replaced : tuple of str
        Names of the free variables turned into Deterministics, parents before children.
    innovations : tuple of str
        The new free standard-normal variable of each, aligned with ``replaced``
        (``"<name>_z"``, with extra underscores if that name is taken).
    left_alone : Mapping[str, str]
        Every other free variable (or ``"<model>"`` when the whole model was left alone) with
        the reason.
    """

    model: object
    replaced: tuple[str, ...]
    innovations: tuple[str, ...]
    left_alone: Mapping[str, str]

    @property
    def changed(self) -> bool:
        """Whether any variable was rewritten."""
        return bool(self.replaced)


def _unchanged(model, left_alone: dict) -> NonCentring:
    return NonCentring(model, (), (), MappingProxyType(dict(left_alone)))


def _kind(rv) -> str | None:
    """``"normal"``, ``"lognormal"`` or ``None`` for the op that draws ``rv``."""
    from pytensor.tensor.random.basic import LogNormalRV, NormalRV

    op = rv.owner.op if rv.owner is not None else None
    if isinstance(op, NormalRV):
        return "normal"
    if isinstance(op, LogNormalRV):
        return "lognormal"
    return None


def _default_transform_only(rv, kind: str, transform) -> bool:
    """Whether ``transform`` is the variable's default one (dropped with the variable), not the user's."""
    from pymc.distributions.transforms import LogTransform, _default_transform

    if transform is None:
        return True
    if transform == _default_transform(rv.owner.op, rv):
        return True
    return kind == "lognormal" and isinstance(transform, LogTransform)


def _depends_on_free(params) -> bool:
    """Whether any graph in ``params`` reads a free variable (a ``ModelFreeRV`` node of the fgraph)."""
    from pymc.model.fgraph import ModelFreeRV
    from pytensor.graph.traversal import ancestors

    return any(v.owner is not None and isinstance(v.owner.op, ModelFreeRV) for v in ancestors(params))


def _innovation(rv, size):
    """A fresh ``Normal(0, 1)`` variable with ``rv``'s shape and dtype (its own RNG, reseeded by PyMC's
    samplers as every model RNG is).
    """
    import pytensor.tensor as pt
    from pytensor.tensor.random.basic import NormalRV
    from pytensor.tensor.random.utils import normalize_size_param

    zero, one = pt.constant(0.0, dtype=rv.dtype), pt.constant(1.0, dtype=rv.dtype)
    # The node, not the Op's call: a call's return value (the draw alone, or the next RNG state and
    # the draw) differs between PyTensor releases; ``make_node`` and its default output do not.
    node = NormalRV(dtype=rv.dtype).make_node(_fresh_rng(), normalize_size_param(size), zero, one)
    return node.default_output()


def _fresh_rng():
    import pytensor

    return pytensor.shared(np.random.default_rng())


def _size_of(rv):
    """The size to draw ``rv``'s shape: its own ``size`` input, else its static shape, else symbolic."""
    import pytensor.tensor as pt
    from pytensor.tensor.type_other import NoneTypeT

    node = rv.owner
    size = node.op.size_param(node)
    if not isinstance(size.type, NoneTypeT):
        return size
    if all(s is not None for s in rv.type.shape):
        return tuple(int(s) for s in rv.type.shape)
    params = node.op.dist_params(node)
    return tuple(pt.broadcast_shape(*params, arrays_are_shapes=False))


def _unique(name: str, taken: set[str]) -> str:
    new = f"{name}_z"
    while new in taken:
        new += "_"
    taken.add(new)
    return new


def non_centred(model=None) -> NonCentring:
    """Rewrite every hierarchical free Normal/LogNormal variable of ``model`` in non-centred form.

    Parameters
    ----------
    model : pymc.Model, optional
        The model; ``None`` takes it from the ``with pm.Model():`` context. It is not modified.

    Returns
    -------
    NonCentring
        ``model`` — a new ``pm.Model`` with the same evidence, prior and likelihood (module
        docstring), in which each rewritten ``x`` is ``pm.Deterministic(mu + sigma * x_z)``
        (``exp(mu + sigma * x_z)`` for a LogNormal) with ``x_z ~ Normal(0, 1)`` of ``x``'s shape
        and dims; or the input model itself when nothing was rewritten. ``replaced``,
        ``innovations`` and ``left_alone`` say what was done.

    Raises
    ------
    TypeError
        When ``model`` is not a ``pymc.Model`` (or no model is on the context stack).

    Notes
    -----
    Estimating the evidence of the returned model estimates that of the input:
    ``estimate_evidence(non_centred(model).model)``. Posterior draws of the new model carry
    both ``x_z`` and the Deterministic ``x``.
    """
    door = "non_centred"
    import pymc as pm

    if model is None:
        model = pm.Model.get_context(error_if_none=False)
    if not isinstance(model, pm.Model):
        raise TypeError(
            f"The 'model' parameter of {door} must be a pymc.Model. Got {model!r} of type "
            f"{type(model).__name__} instead."
        )
    return _rewrite(model)


def _rewrite(model) -> NonCentring:
    import pytensor.tensor as pt
    from pymc.model.fgraph import ModelFreeRV, fgraph_from_model, model_from_fgraph
    from pymc.pytensorf import toposort_replace

    if model.parent is not None:
        return _unchanged(model, {"<model>": "a nested sub-model: rewrite its root model"})
    # Initial values only seed optimisers and MCMC, and PyMC refuses to convert models that set
    # them: they are cleared for the conversion, restored, and carried to unchanged variables.
    initvals = dict(model.rvs_to_initial_values)
    try:
        model.rvs_to_initial_values.update(dict.fromkeys(initvals))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected variables likely created by GP objects")
            fgraph, _ = fgraph_from_model(model)
    finally:
        model.rvs_to_initial_values.update(initvals)

    taken = set(model.named_vars)
    replacements, replaced, innovations, left_alone = [], [], [], {}
    for node in fgraph.toposort():
        if not isinstance(node.op, ModelFreeRV):
            continue
        [dummy] = node.outputs
        rv = node.inputs[0]
        dims = model_var_dims(node)
        kind = _kind(rv)
        if kind is None:
            left_alone[dummy.name] = f"not a Normal or LogNormal ({type(rv.owner.op).__name__})"
            continue
        if not _default_transform_only(rv, kind, node.op.transform):
            left_alone[dummy.name] = f"has the value transform {type(node.op.transform).__name__}"
            continue
        mu, sigma = rv.owner.op.dist_params(rv.owner)
        if not _depends_on_free([mu, sigma]):
            left_alone[dummy.name] = "its parameters do not depend on a free variable"
            continue
        z = _innovation(rv, _size_of(rv))
        if z.type.ndim != rv.type.ndim:
            left_alone[dummy.name] = "its shape could not be matched"
            continue
        z_name = _unique(dummy.name, taken)
        z.name = z_name
        z_value = z.type()
        z_value.name = z_name
        z_dummy = model_free_rv(z, z_value, None, z_name, dims)
        x = mu + sigma * z_dummy
        if kind == "lognormal":
            x = pt.exp(x)
        x = dummy.type.filter_variable(pt.cast(x, dummy.dtype), allow_convert=True)
        new = model_deterministic(x, dummy.name, dims)
        replacements.append((dummy, new))
        replaced.append(dummy.name)
        innovations.append(z_name)
    if not replacements:
        return _unchanged(model, left_alone)
    # Downstream first: a rewritten child that reads a rewritten parent enters the graph before
    # the parent is swapped, so the parent's swap reaches it.
    toposort_replace(fgraph, replacements, reverse=True)
    new_model = model_from_fgraph(fgraph, mutate_fgraph=True)
    for rv, value in initvals.items():
        if value is not None and rv.name in new_model.named_vars and rv.name not in replaced:
            if isinstance(value, (np.ndarray, float, int, np.generic)):
                new_model.set_initval(new_model[rv.name], value)
    return NonCentring(new_model, tuple(replaced), tuple(innovations), MappingProxyType(left_alone))
