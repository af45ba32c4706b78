"""A model's log prior and log likelihood graphs, built by one call of PyMC's ``logp``, and the context in which
the density builds and compiles its graphs.

:class:`~pmcbandit.arms.evidence.model_density.ModelDensity` compiles the two terms of the model's log density on
the unconstrained space, ``logprior`` (the free variables' densities with the log-Jacobians of their transforms)
and ``loglik`` (the observed variables' densities and the potentials). Two calls of :meth:`pymc.Model.logp`, one per
term, each derive their variables' log-probability graphs (:func:`pymc.logprob.basic.transformed_conditional_logp`
with its rewrites of the model's graph) from scratch; one call with ``sum=False`` derives every variable's at once,
and each term is then summed as :meth:`pymc.Model.logp` sums them with ``sum=True``: the sum of each factor's total,
in the order the variables are given (``pytensor.tensor.math.variadic_add``, one ``Add`` of every total, or the one
total alone). The graphs are the same (``pytensor.graph.basic.equal_computations`` holds on every model of
``models.evidence_suite``, checked by ``tests/arms/evidence/test_model_density.py``), in half the time.

:func:`untraced` is where the density builds and compiles its graphs: with PyTensor's ``traceback__limit`` at 0
(PyTensor's configuration flag, "The number of stack to trace. -1 mean all."; not part of any compile key), so no
node made there gets a ``tag.trace`` of the Python stack that made it. Recording one walks the stack and reads
source lines for every node that the graph's construction, ``pytensor.grad``, ``vectorize_graph`` and the compile's
rewrites make (what that costs: ``benchmarks/results/bench_setup_conjugate_warm.md``). A trace only names,
in an error message about a node, the line that made it, and every node made there is made by this package's or
PyMC's code, not the user's; the computations and the compiled functions are the same. ``change_flags`` restores
the previous value on leaving.

Imports: PyMC and PyTensor (public names), nothing of this package.
"""

from __future__ import annotations

__all__ = ["log_terms", "untraced"]


def log_terms(model) -> tuple:
    """``(logprior, loglik)`` of ``model`` as the graphs of ``model.logp(vars=model.free_RVs, jacobian=True)`` and
    ``model.logp(vars=model.observed_RVs + model.potentials, jacobian=True)`` (module docstring); ``loglik`` is the
    constant 0 when the model has neither observed variables nor potentials.
    """
    import pytensor.tensor as pt
    from pytensor.tensor.math import variadic_add

    free = list(model.free_RVs)
    lik = list(model.observed_RVs) + list(model.potentials)
    factors = model.logp(vars=free + lik, jacobian=True, sum=False)
    name = "__logp" + (f"_{model.name}" if model.name else "")

    def total(parts):
        out = variadic_add(*(pt.as_tensor(f, allow_xtensor_conversion=True).sum() for f in parts))
        out.name = name
        return out

    loglik = total(factors[len(free):]) if lik else pt.constant(0.0, dtype="float64")
    return total(factors[:len(free)]), loglik


def untraced():
    """A context (``pytensor.config.change_flags(traceback__limit=0)``) in which PyTensor records no creation
    trace on the nodes it makes (module docstring).
    """
    import pytensor

    return pytensor.config.change_flags(traceback__limit=0)
