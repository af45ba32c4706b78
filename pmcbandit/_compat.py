"""What differs between the library versions pmcbandit supports, in one place.

pmcbandit runs on PyMC 5 / PyTensor 2 / ArviZ 0.x and on PyMC 6 / PyTensor 3 / ArviZ 1.x with one
code path wherever the libraries allow it; every difference they force lives here, one section per
topic, and nowhere else (no version checks elsewhere in the package). A helper module: it imports
nothing of pmcbandit, and neither PyTensor, PyMC nor ArviZ at import time (``import pmcbandit``
stays light); each function imports what it needs when called.

Sections
--------
PyTensor BLAS
    :func:`configure_pytensor_blas`, run by ``pmcbandit/__init__.py`` before PyTensor is imported.
PyMC and PyTensor in the model code
    :func:`setup_step_chain` (step methods), the model-graph helpers and :func:`numba_jit_fn` (the numba
    function of a compiled graph: PyTensor has no public accessor, so this one wrapper reads the internal and a
    test fails loudly when it changes), and :func:`numba_src_function` (a numba function from source that PyTensor's
    on-disk numba cache holds under a key of ours). Each difference is detected from the API itself (an attribute, a
    signature), not from a version number.
ArviZ 0.x (``arviz.InferenceData``) and 1.x (``xarray.DataTree``)
    :func:`import_arviz`, :func:`arviz_major`, :func:`inference_data`, :func:`is_inference_data`, :func:`group_names`,
    :func:`group`, :func:`read_netcdf`, :func:`write_netcdf`, :func:`plot_posterior` and
    :func:`arviz_psis_khat`. The only module that imports ArviZ; the ArviZ door,
    :mod:`pmcbandit.diagnostics.arviz_io`, gets it from :func:`import_arviz`.
"""

from __future__ import annotations

import ctypes.util
import os
import sys

# --- PyTensor BLAS ----------------------------------------------------------------------------
# A pip-installed PyTensor finds no BLAS it can link (NumPy's wheels ship a symbol-renamed
# OpenBLAS), warns at import and falls back to slow loops. The project's set-up installs Debian's
# ``libopenblas-dev``; this adds ``blas__ldflags=-lopenblas`` to ``PYTENSOR_FLAGS`` when that
# library is present and the user has not configured BLAS themselves. It must run before the first
# ``import pytensor`` (``pmcbandit/__init__.py`` calls it first).


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


# --- PyMC and PyTensor in the model code ---------------------------------------------------------


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


def numba_src_function(src: str, name: str, global_env: dict, key_of, tag: str):
    """The function ``name`` defined by the source ``src`` (globals ``global_env``), registered so that numba caches
    what it compiles from it (``cache=True``) in PyTensor's on-disk numba cache, under a key derived from ``tag``,
    ``src`` and the PyTensor cache key of the numba dispatcher ``key_of``; ``None`` where there is no such key.

    A numba function that calls a dispatcher of a model's graph (:func:`numba_jit_fn`) cannot be cached by numba
    itself: its own cache is keyed by the source file and the pickled closure, and a dispatcher pickles with a
    random identifier. PyTensor caches the dispatchers of its graphs by a hash of the graph (its
    ``NumbaPyTensorCacheLocator``, keyed by ``CACHED_SRC_FUNCTIONS``); a function registered there with a key that
    names that hash and its own source is cached beside them, and found again in the next process. ``None`` (the
    caller compiles without a cache): no key for ``key_of`` (a graph PyTensor does not cache, e.g. one holding data
    as constants numba cannot cache, or ``numba__cache`` off), or a PyTensor without that cache.
    """
    import hashlib

    try:
        from pytensor.link.numba.cache import CACHED_SRC_FUNCTIONS, compile_numba_function_src
    except ImportError:
        return None
    graph_key = CACHED_SRC_FUNCTIONS.get(getattr(key_of, "py_func", None))
    if not graph_key:
        return None
    key = hashlib.sha256(f"pmcbandit:{tag}:{graph_key}:{src}".encode()).hexdigest()
    # numba rebuilds a cached function's environment from the module named by its globals' __name__.
    env = {"__name__": __name__, **global_env}
    return compile_numba_function_src(src, name, env, cache_key=key)


# --- ArviZ 0.x (arviz.InferenceData) and 1.x (xarray.DataTree) ---------------------------------
# ArviZ 1 (arviz_base / arviz_stats / arviz_plots) holds a run in an ``xarray.DataTree``: the root
# node's attrs are the InferenceData's attrs and each group is a child node. Its ``to_netcdf`` writes
# the same netCDF layout as ``InferenceData.to_netcdf`` (root attrs, one netCDF group per group), so
# either version reads files written by the other; it returns None where InferenceData returned the
# path. ``psislw`` moved to the ``azstats`` accessor and takes the log-likelihood (the negated log
# weights); ``plot_posterior`` became ``plot_dist``. Importing ArviZ 1 draws from NumPy's global random
# state (seen with arviz_base 1.3.1), which pmcbandit never touches: :func:`import_arviz` puts it back.


def import_arviz():
    """The ``arviz`` module, imported with NumPy's global random state as it was before the import."""
    if "arviz" in sys.modules:
        return sys.modules["arviz"]
    import numpy as np

    state = np.random.get_state()  # noqa: NPY002  (read only to be restored)
    try:
        import arviz
    finally:
        np.random.set_state(state)  # noqa: NPY002
    return arviz


def arviz_major() -> int:
    """The major version of the installed ArviZ (0 or 1)."""
    return int(import_arviz().__version__.split(".")[0])


def inference_data(attrs: dict, groups: dict):
    """The InferenceData of ``groups`` (name -> ``xarray.Dataset``) with ``attrs`` on it.

    ``arviz.InferenceData`` on ArviZ 0.x, an ``xarray.DataTree`` (root attrs, one child per group,
    in the order given) on ArviZ 1.x.
    """
    import xarray as xr

    if arviz_major() >= 1:
        return xr.DataTree.from_dict({"/": xr.Dataset(attrs=dict(attrs)), **groups})
    return import_arviz().InferenceData(attrs=dict(attrs), **groups)


def is_inference_data(obj) -> bool:
    """Whether ``obj`` is the installed ArviZ's InferenceData (an ``xarray.DataTree`` on 1.x)."""
    import xarray as xr

    if arviz_major() >= 1:
        return isinstance(obj, xr.DataTree)
    return isinstance(obj, import_arviz().InferenceData)


def group_names(idata) -> list[str]:
    """The names of the groups of an InferenceData (``idata.groups()`` on 0.x, the children on 1.x)."""
    import xarray as xr

    if isinstance(idata, xr.DataTree):
        return list(idata.children)
    return list(idata.groups())


def group(idata, name: str):
    """Group ``name`` of an InferenceData as an ``xarray.Dataset`` (on 1.x the child node's dataset)."""
    import xarray as xr

    node = idata[name]
    return node.to_dataset() if isinstance(node, xr.DataTree) else node


def arviz_ess(draws):
    """ArviZ's bulk effective sample size of each column of one chain's ``draws`` (shape ``(n, d)``).

    ``arviz.ess`` takes a ``(chain, draw, d)`` array on 1.x; on 0.x only a ``(chain, draw)`` array, one
    coordinate at a time.
    """
    import numpy as np

    az = import_arviz()
    draws = np.asarray(draws, dtype=np.float64)
    if arviz_major() >= 1:
        return np.atleast_1d(np.asarray(az.ess(draws[None]), dtype=np.float64))
    return np.array([float(az.ess(draws[None, :, j])) for j in range(draws.shape[1])])


def read_netcdf(path):
    """The InferenceData stored in the netCDF file ``path`` (``arviz.from_netcdf``)."""
    return import_arviz().from_netcdf(os.fspath(path))


def write_netcdf(idata, path) -> str:
    """Write ``idata`` to the netCDF file ``path`` (h5netcdf engine); return the path as a str."""
    path = os.fspath(path)
    idata.to_netcdf(path, engine="h5netcdf")
    return path


def plot_posterior(idata, var_names=None):
    """ArviZ's plot of the ``posterior`` group's marginals (``plot_posterior`` on 0.x, ``plot_dist``
    on 1.x, both with matplotlib); returns what ArviZ returns (axes, or a ``PlotCollection``).
    """
    arviz = import_arviz()
    if arviz_major() >= 1:
        return arviz.plot_dist(idata, var_names=var_names, backend="matplotlib")
    return arviz.plot_posterior(idata, var_names=var_names)


def arviz_psis_khat(log_weights) -> float:
    """ArviZ's Pareto :math:`\\hat k` of importance weights given by their logs (``r_eff = 1``).

    Public API only: ``arviz.psislw(log_weights, reff=1)`` on 0.x; on 1.x the ``azstats`` accessor's
    ``psislw`` of the negated log weights (it takes log-likelihood values). The two tail lengths
    round :math:`\\min(S/5, 3\\sqrt S)` differently (0.x up, 1.x down), so the two agree exactly only
    where that is a whole number (the rule itself: Vehtari et al. 2024).
    """
    import numpy as np

    x = np.asarray(log_weights, dtype=np.float64)
    with np.errstate(all="ignore"):  # the GPD grid overflows harmlessly in exp
        if arviz_major() >= 1:
            import xarray as xr

            import_arviz()  # registers the azstats accessor
            _, khat = xr.DataArray(-x, dims=["draw"]).azstats.psislw(dim="draw")
            return float(khat)
        return float(import_arviz().psislw(x, reff=1.0)[1])
