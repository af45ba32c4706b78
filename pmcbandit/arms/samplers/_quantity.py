"""The posterior expectation a sampler arm estimates, evaluated on a run's draws in one call.

A quantity is either the name of a free or deterministic variable of the model (``"mu"``;
``"theta[2]"`` or ``"L[0, 1]"`` for one element of an array variable) or a callable of a point
dict ``{variable name: value}`` (free variables on their constrained scale, and deterministics,
as in a posterior ``InferenceData``) returning a real number. The arm estimates
:math:`E_\\pi[f(\\theta)]` by the mean of :math:`f` over the draws of one run.

``None`` asks for **every coordinate**: the posterior means of all :math:`d` coordinates
:math:`x_j` of the unconstrained vector, each divided by a fixed scale :math:`\\sigma_j` (its
posterior standard deviation, from a pilot run: :func:`pmcbandit.arms.samplers.sampler_arms`). A
run then gives the vector :math:`z_j = \\bar x_j / \\sigma_j` (the arm's
:attr:`~pmcbandit.arms.base.Arm.components`, reported as diagnostics), and its scalar estimate is
their mean, the posterior mean of :math:`f(x) = \\frac1d \\sum_j x_j/\\sigma_j`.

Draws arrive as rows of the flat unconstrained vector :math:`x` (PyMC's value variables, in the
order of ``model.value_vars``); the variables are a compiled PyTensor function of :math:`x`,
vectorised over the rows (:func:`pytensor.graph.replace.vectorize_graph`) so a run of ``n``
draws costs one call, not ``n``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import numpy as np

__all__ = ["Quantity", "check_sampler_model"]

_PATTERN = re.compile(r"^\s*([^\[\]\s]+)\s*(?:\[\s*(-?\d+(?:\s*,\s*-?\d+)*)\s*\])?\s*$")


class Quantity:
    """Compiled map from unconstrained draws ``X`` (shape ``(n, dim)``) to ``f(θ_i)`` (shape ``(n,)``).

    Parameters
    ----------
    model : pymc.Model
    quantity : str or callable
        See the module docstring.
    door : str
        The public function named in error messages.

    Attributes
    ----------
    label : str
        The variable name with its index (``"theta[2]"``), or the callable's ``__name__``.
    value_names, shapes, slices, dim
        Layout of the flat unconstrained vector.

    Raises
    ------
    ValueError
        If the name is not a free or deterministic variable of the model (the message lists those
        it has), if an array variable is named without an index, if the index does not fit its
        shape.
    TypeError
        If ``quantity`` is neither a str nor a callable, or a callable does not return a real
        number at the model's initial point.
    """

    def __init__(self, model, quantity, door: str = "sampler_arms", scales=None):
        from pymc.pytensorf import compile as compile_pymc, join_nonshared_inputs

        point = model.initial_point()
        self.value_names = tuple(v.name for v in model.value_vars)
        self.shapes = {n: tuple(np.shape(point[n])) for n in self.value_names}
        self.slices, start = {}, 0
        for n in self.value_names:
            size = int(np.prod(self.shapes[n], dtype=int))
            self.slices[n] = slice(start, start + size)
            start += size
        self.dim = start
        self.scales: np.ndarray | None = None
        self.component_names: tuple[str, ...] = ()
        self._lock = threading.Lock()  # arms that share a quantity may be pulled from several threads
        if quantity is None:
            self._every_coordinate(scales, door)
            return
        names = [rv.name for rv in model.free_RVs] + [d.name for d in model.deterministics]
        self._fn: Callable | None = None
        self._index: tuple[int, ...] | None = None
        if isinstance(quantity, str):
            match = _PATTERN.match(quantity)
            if match is None or match.group(1) not in names:
                raise ValueError(
                    f"The 'quantity' parameter of {door} must be the name of a free or deterministic "
                    f"variable of the model ('name[i]' for an element of an array variable) or a callable. "
                    f"Got {quantity!r} instead; the model has {names!r}."
                )
            self._names = [match.group(1)]
            if match.group(2) is not None:
                self._index = tuple(int(i) for i in match.group(2).split(","))
        elif callable(quantity):
            self._names = names
            self._fn = quantity
        else:
            raise TypeError(
                f"The 'quantity' parameter of {door} must be a variable name (str) or a callable of a "
                f"point dict. Got {quantity!r} instead."
            )
        graphs = model.replace_rvs_by_values([model[n] for n in self._names])
        graphs, x = join_nonshared_inputs(point, graphs, model.value_vars)
        self._batch = self._compile_batch(graphs, x, compile_pymc)
        x0 = np.concatenate([np.ravel(point[n]) for n in self.value_names]).astype(np.float64)
        outs = self._outputs(x0[None, :])
        if self._fn is None:
            self._check_index(quantity, outs[0].shape[1:], door)
            self.label = self._names[0] + ("" if self._index is None else str(list(self._index)))
        else:
            self.label = getattr(quantity, "__name__", "quantity")
            value = self._fn({n: o[0] for n, o in zip(self._names, outs)})
            try:
                ok = np.ndim(value) == 0 and np.isrealobj(value) and not isinstance(value, (str, bytes))
                float(value)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise TypeError(
                    f"The 'quantity' parameter of {door} must return a real number for a point dict. "
                    f"Got a callable that returned {value!r} at the model's initial point instead."
                )

    def _every_coordinate(self, scales, door: str) -> None:
        scales = np.asarray(scales, dtype=np.float64) if scales is not None else None
        if scales is None or scales.shape != (self.dim,) or not np.all(np.isfinite(scales) & (scales > 0)):
            raise ValueError(f"The 'scales' parameter of {door} must hold one positive finite scale per coordinate "
                             f"({self.dim}) when every coordinate is the quantity. Got {scales!r} instead.")
        self.scales = scales
        self.label = "every coordinate"
        self.coordinate_labels = tuple(
            n if self.slices[n].stop - self.slices[n].start == 1 and not self.shapes[n] else f"{n}[{i}]"
            for n in self.value_names for i in range(self.slices[n].stop - self.slices[n].start))
        self.component_names = tuple(f"z_{i}" for i in range(self.dim))
        self._fn = None
        self._index = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_lock"] = None  # a lock does not pickle; each copy gets its own
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def every_coordinate(self) -> bool:
        """Whether the quantity is every coordinate, each divided by its scale (module docstring)."""
        return self.scales is not None

    def components(self, X: np.ndarray) -> np.ndarray:
        """The run's scaled coordinate means :math:`z_j = \\bar x_j/\\sigma_j` (every-coordinate quantity)."""
        return np.asarray(X, dtype=np.float64).reshape(-1, self.dim).mean(axis=0) / self.scales

    def _check_index(self, quantity, shape, door) -> None:
        if self._index is None and shape != ():
            raise ValueError(
                f"The 'quantity' parameter of {door} must name one element of the array variable "
                f"{self._names[0]!r} of shape {shape}, e.g. '{self._names[0]}[{', '.join('0' * len(shape))}]'. "
                f"Got {quantity!r} instead."
            )
        if self._index is not None and (
            len(self._index) != len(shape) or any(not -s <= i < s for i, s in zip(self._index, shape))
        ):
            raise ValueError(
                f"The 'quantity' parameter of {door} must index {self._names[0]!r} (shape {shape}) "
                f"within its bounds, one index per axis. Got {quantity!r} instead."
            )

    @staticmethod
    def _compile_batch(graphs, x, compile_pymc):
        import pytensor.tensor as pt
        from pytensor.graph.replace import vectorize_graph

        xs = pt.matrix("x_draws", dtype=x.dtype)
        try:
            batch = vectorize_graph(graphs, {x: xs})
        except NotImplementedError:
            # An Op without a batched form: one compiled call per draw (the same values, slower).
            point_fn = compile_pymc([x], graphs)

            def rows(X):
                per_row = [point_fn(row) for row in X]
                return [np.stack([r[k] for r in per_row]) for k in range(len(graphs))]

            return rows
        return compile_pymc([xs], batch)

    def _outputs(self, X: np.ndarray) -> list[np.ndarray]:
        X = np.ascontiguousarray(X, dtype=np.float64).reshape(-1, self.dim)
        with self._lock:
            # Copies: a compiled function may reuse its output buffers on the next call.
            return [np.array(o, dtype=np.float64) for o in self._batch(X)]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """``f`` at each row of ``X`` (unconstrained draws, shape ``(n, dim)``), shape ``(n,)``."""
        if self.scales is not None:
            return (np.asarray(X, dtype=np.float64).reshape(-1, self.dim) / self.scales).mean(axis=1)
        outs = self._outputs(X)
        if self._fn is None:
            values = outs[0]
            return values if self._index is None else values[(slice(None), *self._index)]
        n = outs[0].shape[0]
        return np.array(
            [float(self._fn({name: o[i] for name, o in zip(self._names, outs)})) for i in range(n)],
            dtype=np.float64,
        )

    def ravel(self, point) -> np.ndarray:
        """A point dict of value variables as the flat unconstrained vector."""
        return np.concatenate([np.ravel(point[n]) for n in self.value_names]).astype(np.float64)

    def unravel_rows(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """Rows of ``X`` as ``{value name: array of shape (n, *shape)}``."""
        return {n: X[:, self.slices[n]].reshape((X.shape[0], *self.shapes[n])) for n in self.value_names}


def check_sampler_model(model, door: str = "sampler_arms"):
    """Reject what the sampler arms cannot run: not a ``pm.Model``, no free variable, discrete free variables."""
    import pymc as pm

    if not isinstance(model, pm.Model):
        raise TypeError(
            f"The 'model' parameter of {door} must be a pymc.Model. Got {model!r} of type "
            f"{type(model).__name__} instead."
        )
    if not model.free_RVs:
        raise ValueError(f"The 'model' parameter of {door} must have at least one free random variable. "
                         "Got a model with none instead.")
    discrete = [rv.name for rv in model.free_RVs if rv.type.dtype.startswith(("int", "uint", "bool"))]
    if discrete:
        raise ValueError(f"The 'model' parameter of {door} must have only continuous free variables. "
                         f"Got discrete free variables {discrete!r} instead.")
    return model
