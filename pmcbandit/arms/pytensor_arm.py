"""An arm backed by a PyTensor graph compiled once.

The graph's random variables draw from shared ``RandomGeneratorType`` variables;
before each pull those are replaced by children of the arm's ``Generator``
(:meth:`numpy.random.Generator.spawn`), so a run is reproducible from one seed
and never touches global state. Updates of the RNGs (PyMC's default updates) are
compiled in, so the function is called without Python-side graph work.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pmcbandit.arms.base import Arm

__all__ = ["PyTensorArm"]


class PyTensorArm(Arm):
    """Arm whose pull evaluates a compiled PyTensor graph.

    Parameters
    ----------
    name : str
        Arm name.
    estimates : TensorVariable
        Scalar or vector of i.i.d. unbiased estimates (logs if ``log_scale``).
    diagnostics : mapping of str to TensorVariable, optional
        Scalar graphs reported in ``Pull.info`` under their keys.
    log_scale : bool
        See :class:`~pmcbandit.arms.base.Arm`.
    mode : str, optional
        PyTensor compilation mode (``"FAST_RUN"`` C backend by default; ``"NUMBA"``).
    cost : float, optional
        Declared cost per pull instead of measured CPU time.
    """

    def __init__(
        self,
        name: str,
        estimates,
        diagnostics: Mapping[str, object] | None = None,
        *,
        log_scale: bool = False,
        mode: str | None = None,
        cost: float | None = None,
    ):
        from pymc.pytensorf import collect_default_updates, compile as compile_pymc
        try:
            from pytensor.graph.traversal import graph_inputs
        except ImportError:  # PyTensor < 2.31
            from pytensor.graph.basic import graph_inputs
        from pytensor.tensor.random.type import RandomType

        self.name = name
        self.log_scale = bool(log_scale)
        diagnostics = dict(diagnostics or {})
        self.diagnostics = tuple(diagnostics)
        outputs = [estimates, *diagnostics.values()]
        self._rngs = [
            v
            for v in graph_inputs(outputs)
            if isinstance(v.type, RandomType) and hasattr(v, "set_value")
        ]
        updates = collect_default_updates(outputs=outputs)
        self._fn = compile_pymc(inputs=[], outputs=outputs, updates=updates, mode=mode)
        self._fn.trust_input = True
        self._cost = cost

    def draw(self, rng: np.random.Generator):
        for shared_rng, child in zip(self._rngs, rng.spawn(len(self._rngs))):
            shared_rng.set_value(child, borrow=True)
        values, *diag = self._fn()
        info = {k: float(v) for k, v in zip(self.diagnostics, diag)}
        return np.asarray(values, dtype=np.float64).ravel(), info, self._cost
