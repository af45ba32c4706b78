"""A model's initial point, evaluated without compiling a function for it.

:meth:`pymc.Model.initial_point` compiles the expressions of the initial point (each free variable's support point,
mapped to the unconstrained space; PyMC's ``make_initial_point_fn``) with PyTensor's VM linker. That compilation is
the only use of PyTensor's C and VM linker modules in an evidence run with PyTensor 3 (whose default backend is
numba), and importing them costs a fresh process about as much as the rest of the density's compilation steps.
:func:`initial_point` evaluates the same expressions node by node (PyTensor's pure-Python ``PerformLinker``, no
rewrites): the values are those of the same operations on the same constants. Where the expressions read anything
besides constants (a random draw, e.g. the prior draw PyMC falls back to for a distribution without a support
point, or a shared variable), :meth:`pymc.Model.initial_point` is used, so its seeding rules apply.

Imports: NumPy, PyMC and PyTensor (public names), nothing of this package.
"""

from __future__ import annotations

__all__ = ["initial_point"]


def initial_point(model) -> dict:
    """``{value variable name: value}`` of ``model``'s initial point in the unconstrained space, as
    ``model.initial_point()`` returns it (module docstring).
    """
    import numpy as np
    import pytensor
    from pymc.initial_point import make_initial_point_expression
    from pytensor.compile.mode import Mode
    from pytensor.link.basic import PerformLinker

    exprs = make_initial_point_expression(
        free_rvs=model.free_RVs,
        rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies=dict(model.rvs_to_initial_values),
        default_strategy="support_point",
        return_transformed=True,
    )
    fn = pytensor.function([], exprs, mode=Mode(linker=PerformLinker(), optimizer=None))
    if fn.maker.fgraph.inputs:  # shared variables: a random number generator or data held in one
        return model.initial_point()
    return {model.rvs_to_values[rv].name: np.asarray(value) for rv, value in zip(model.free_RVs, fn())}
