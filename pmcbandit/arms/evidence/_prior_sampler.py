"""Exact forward sampling of a model's free variables, batched and mapped to the unconstrained space.

PyMC draws prior samples one at a time in a Python loop
(``pm.sample_prior_predictive``); an importance sampler that needs thousands of
draws per pull would spend most of its time there. Here the free variables'
graph is rebuilt with a leading batch dimension of symbolic length ``n``:
each free variable, in topological order, becomes a draw of size
``(n, *batch_shape)`` whose parameters are its original parameter graphs
vectorised over the batched parents (:func:`pytensor.graph.replace.vectorize_graph`),
so the joint prior is sampled exactly; the transforms' ``forward`` maps each
draw to the value variable's space. Random variables that are not plain
``RandomVariable`` nodes (mixtures, ``CustomDist`` with ``dist=``, ...) are resized
with :func:`pymc.distributions.shape_utils.change_dist_size` when they have no
free parents; if anything cannot be batched, a compiled single draw is called
``n`` times instead (correct, slower).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["build_prior_sampler"]


class _NotBatchable(Exception):
    """The prior graph cannot be vectorised over draws; fall back to exact one-by-one draws."""


def _shared_rngs(outputs):
    from pytensor.graph.traversal import graph_inputs
    from pytensor.tensor.random.type import RandomType

    return [v for v in graph_inputs(outputs) if isinstance(v.type, RandomType) and hasattr(v, "set_value")]


def _compile(inputs, outputs):
    from pymc.pytensorf import collect_default_updates, compile as compile_pymc

    updates = collect_default_updates(outputs=outputs, inputs=inputs)
    with warnings.catch_warnings():
        # Under numba (PyTensor 3's default backend) a variable drawn by Python code, such as a
        # CustomDist's ``random`` or one without any, runs its Op's ``perform`` in object mode: the
        # same draws, only slower; a variable with no way to be drawn raises when it is drawn.
        warnings.filterwarnings("ignore", message="Numba will use object mode", category=UserWarning)
        fn = compile_pymc(inputs=inputs, outputs=outputs, updates=updates)
    return fn, _shared_rngs(outputs)


def _reseed(rngs, rng: np.random.Generator) -> None:
    for shared, child in zip(rngs, rng.spawn(len(rngs))):
        shared.set_value(child, borrow=True)


def _align(param, new, core_ndim: int, batch_ndim: int):
    """Put ``new``'s leading draw axis first and pad so it broadcasts against ``(n, *batch)``."""
    import pytensor.tensor as pt

    if new.type.ndim == param.type.ndim:
        return new
    param_batch = param.type.ndim - core_ndim
    missing = batch_ndim - param_batch
    if missing > 0:
        new = pt.expand_dims(new, tuple(range(1, 1 + missing)))
    return new


def _batched_graph(model, n):
    """Return the flattened ``(n, dim)`` graph of unconstrained prior draws."""
    import pytensor.tensor as pt
    from pymc.distributions.shape_utils import change_dist_size
    from pytensor.graph.traversal import ancestors
    from pytensor.graph.replace import vectorize_graph
    from pytensor.tensor.random.op import RandomVariable

    free = list(model.free_RVs)
    memo = {}
    # model.free_RVs is in creation order, hence topological: parents are batched first.
    for rv in free:
        upstream = set(ancestors([rv], blockers=list(memo)))
        parents = [r for r in memo if r in upstream]
        op = rv.owner.op
        if not parents:
            memo[rv] = change_dist_size(rv, new_size=(n,), expand=True)
            continue
        if not isinstance(op, RandomVariable):
            raise _NotBatchable(f"cannot batch {rv.name!r}")
        node = rv.owner
        params = list(op.dist_params(node))
        batch_ndim = rv.type.ndim - op.ndim_supp
        new_params = vectorize_graph(params, replace={p: memo[p] for p in parents})
        new_params = [
            _align(p, q, core, batch_ndim) for p, q, core in zip(params, new_params, op.ndims_params)
        ]
        size = pt.as_tensor([n, *rv.type.shape[:batch_ndim]], dtype="int64") if batch_ndim else pt.stack([n])
        # The node's default output: what an Op call returns differs between PyTensor releases.
        memo[rv] = op.make_node(op.rng_param(node), size, *new_params).default_output()
    flat = []
    for rv, value in zip(free, model.value_vars):
        draw = memo[rv]
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            draw = transform.forward(draw, *draw.owner.inputs)
        flat.append(pt.cast(draw, "float64").reshape((n, -1)))
    return pt.concatenate(flat, axis=1) if len(flat) > 1 else flat[0]


def _loop_graph(model):
    import pytensor.tensor as pt

    flat = []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        draw = rv if transform is None else transform.forward(rv, *rv.owner.inputs)
        flat.append(pt.cast(draw, "float64").ravel())
    return pt.concatenate(flat) if len(flat) > 1 else flat[0]


def build_prior_sampler(model, value_names):
    """Compile ``sample(rng, n) -> (n, dim)`` exact unconstrained prior draws of a frozen model.

    Returns ``(sample, vectorised)``. Raises ``ValueError`` naming the variable
    when PyMC cannot forward-sample the prior (e.g. a ``CustomDist`` with a
    ``logp`` but no ``random``/``dist``).
    """
    import pytensor.tensor as pt

    try:
        n = pt.scalar("n", dtype="int64")
        graph = _batched_graph(model, n)
        fn, rngs = _compile([n], [graph])
        probe = fn(np.int64(2))[0]
        if probe.shape[0] != 2:
            raise _NotBatchable("batched prior draws have the wrong shape")

        def sample(rng, size):
            _reseed(rngs, rng)
            return fn(np.int64(size))[0]

        return sample, True
    except Exception:  # noqa: BLE001 - anything that cannot be batched is drawn one by one, exactly
        pass

    graph = _loop_graph(model)
    fn, rngs = _compile([], [graph])
    try:
        fn()
    except NotImplementedError as err:
        raise ValueError(
            "The 'model' parameter of ModelDensity must have a prior that PyMC can forward-sample. "
            f"Got a model whose free variables cannot be drawn ({err}) instead."
        ) from err

    def sample_loop(rng, size):
        _reseed(rngs, rng)
        return np.stack([fn()[0] for _ in range(size)]) if size else np.empty((0, graph.type.shape[0] or 0))

    return sample_loop, False
