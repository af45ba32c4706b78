"""Where pmcbandit meets differences between library versions, and the environment set-up of PyTensor.

pmcbandit supports PyMC 5 / PyTensor 2 (Python 3.11) and PyMC 6 / PyTensor 3 (Python >= 3.12)
with one code path; what differs between those releases lives here and only here, one function
per difference, each importing its library inside the function (``import pmcbandit`` loads
neither PyMC nor ArviZ). Each difference is detected from the API itself (an attribute, a
signature), not from a version number, so a release that back-ports a change is handled too.

Sections: PyTensor's BLAS set-up (run by ``pmcbandit/__init__.py`` before PyTensor is
imported); PyMC and PyTensor in the model code (step methods, the model-graph API, the numba
function of a compiled graph).
"""

from __future__ import annotations

import ctypes.util
import os
import sys

# ---------------------------------------------------------------------------------------------
# PyTensor's BLAS
# ---------------------------------------------------------------------------------------------
#
# Point PyTensor's C backend at the system OpenBLAS before PyTensor is imported. A
# pip-installed PyTensor finds no BLAS it can link (NumPy's wheels ship a symbol-renamed
# OpenBLAS), warns at import and falls back to slow loops. The project's set-up installs
# Debian's ``libopenblas-dev``; ``configure_pytensor_blas`` adds ``blas__ldflags=-lopenblas``
# to ``PYTENSOR_FLAGS`` when that library is present and the user has not configured BLAS
# themselves.

def configure_pytensor_blas() -> str | None:
    """Set ``blas__ldflags`` for PyTensor if the user has not; return the flags used.

    Returns ``None`` when nothing was changed: the user already set the flag
    (environment or ``.pytensorrc``), or no OpenBLAS is installed (PyTensor
    then warns as usual, which is the honest outcome).
    """
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    if "blas__ldflags" in flags or "blas.ldflags" in flags:
        return None
    rc = os.environ.get("PYTENSORRC", os.path.expanduser("~/.pytensorrc"))
    for path in rc.split(os.pathsep):
        try:
            with open(path, encoding="utf-8") as fh:
                if "ldflags" in fh.read():
                    return None
        except OSError:
            continue
    if ctypes.util.find_library("openblas") is None:
        return None
    ldflags = "-lopenblas"
    if "pytensor" in sys.modules:
        # Too late for the import-time check, but still fixes compiled graphs.
        import pytensor

        pytensor.config.blas__ldflags = ldflags
    else:
        os.environ["PYTENSOR_FLAGS"] = ",".join(
            f for f in (flags, f"blas__ldflags={ldflags}") if f
        )
    return ldflags


# ---------------------------------------------------------------------------------------------
# PyMC and PyTensor in the model code
# ---------------------------------------------------------------------------------------------


def setup_step_chain(step, rng, tune: int, draws: int) -> None:
    """Give a PyMC step method its generator for one chain, as ``pm.sample`` does before a chain.

    PyMC 6 calls ``step.setup_chain(rng, tune, draws)`` (per-chain state reset, a spawned
    generator for each method of a ``CompoundStep``); PyMC 5 calls ``step.set_rng(rng)``
    (``pymc.sampling.mcmc._iter_sample`` of each release).
    """
    if hasattr(step, "setup_chain"):
        step.setup_chain(rng, tune, draws)
    else:
        step.set_rng(rng)


def _model_ops_carry_names() -> bool:
    """Whether the Ops of PyMC's model graph (``pymc.model.fgraph``) hold the variable's name and dims
    as properties (PyMC >= 6.1), rather than taking the dims as graph inputs (PyMC 5).
    """
    from pymc.model.fgraph import ModelFreeRV

    return "name" in ModelFreeRV.__props__


def model_var_dims(node) -> tuple:
    """The dims of a node of PyMC's model graph (a free, observed, deterministic... model variable),
    in the form :func:`model_free_rv` and :func:`model_deterministic` take back.
    """
    if _model_ops_carry_names():
        return tuple(node.op.dims)
    from pymc.model.fgraph import ModelValuedVar

    return tuple(node.inputs[2 if isinstance(node.op, ModelValuedVar) else 1:])


def model_free_rv(rv, value, transform, name: str, dims: tuple):
    """The model-graph variable of a free random variable ``rv`` with ``value`` and ``transform``,
    named ``name`` (``pymc.model.fgraph.model_free_rv`` of either signature).
    """
    from pymc.model import fgraph

    if _model_ops_carry_names():
        out = fgraph.model_free_rv(rv, value, transform, name, *dims)
    else:
        out = fgraph.model_free_rv(rv, value, transform, *dims)
    out.name = name
    return out


def model_deterministic(x, name: str, dims: tuple):
    """The model-graph variable of a Deterministic ``x`` named ``name``
    (``pymc.model.fgraph.model_deterministic`` of either signature).
    """
    from pymc.model import fgraph

    out = fgraph.model_deterministic(x, name, *dims) if _model_ops_carry_names() else fgraph.model_deterministic(
        x, *dims)
    out.name = name
    return out


def numba_jit_fn(fn):
    """The numba dispatcher of a PyTensor function compiled with ``mode="NUMBA"``: the graph's outputs
    as a function of its inputs, callable from other numba code (no Python per call).

    PyTensor has no public accessor for it (2.25 to 3.3): its ``JITLinker`` keeps it on the
    function's thunk, ``fn.vm.jit_fn``. This is the one place that reads it;
    ``tests/test_compat.py`` and ``tests/arms/test_model_density.py`` fail when it moves or changes.

    Raises
    ------
    RuntimeError
        When ``fn`` carries no numba dispatcher there (another mode, or PyTensor changed it).
    """
    jit_fn = getattr(getattr(fn, "vm", None), "jit_fn", None)
    if jit_fn is None or not hasattr(jit_fn, "py_func"):
        import pytensor

        raise RuntimeError(
            f"PyTensor {pytensor.__version__} keeps no numba dispatcher at `fn.vm.jit_fn` of a function "
            f"compiled with mode='NUMBA'; pmcbandit.arms.evidence needs it (pmcbandit._compat.numba_jit_fn)."
        )
    return jit_fn
