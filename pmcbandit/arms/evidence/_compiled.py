"""Compiled PyTensor functions of a model's density, kept on disk and loaded by later processes.

Compiling a PyTensor function rewrites its graph every time, in every process: on a small model that is most of a
warm set-up's compile time. A compiled function (:class:`pytensor.compile.Function`) pickles with its rewritten graph
(PyTensor's own pickling; loading links it again without rewriting), so :func:`compile_cached` stores each function
it compiles and a later process that builds the same graph loads it instead.

Rules
-----
Key
    SHA-256 of a form of the graph that depends on the computation only (:func:`_write_graph`): the inputs' types;
    each node in topological order as its Op (pickled), the positions of its inputs and its outputs' types; each
    constant as its type and data (an array as its dtype, shape and bytes); the outputs' positions. Left out: each
    variable's ``auto_name`` (a process-wide counter, different for the same graph after different earlier work)
    and ``tag`` (annotations, such as ``values_eq_approx``, that a compile adds to the variables of its graph and
    that no rewrite or backend reads). Hashed with it: the compile keywords, PyTensor's configuration hash
    (:meth:`pytensor.config.get_config_hash`) and the rewrite and backend options it leaves out, and the versions
    of Python, NumPy, numba, PyTensor and PyMC. Equal keys mean equal graphs compiled the same way; a graph whose
    form is not the same in two processes (e.g. an Op holding a set of strings, ordered by the process's hash seed)
    only misses.
Not kept
    A graph with a shared variable (``pm.Data``, random generators): its loaded function would hold a copy of the
    value, not the model's variable, so ``pm.set_data`` would not reach it. A graph or a function that does not
    pickle (an Op made at run time), and a function whose pickle is over :data:`MAX_ENTRY_BYTES`. These compile
    as usual.
Loading
    An entry that fails to load (truncated, written by another build, PyTensor's ``unpickle_function`` off) is
    removed and the function compiled. Loading unpickles, which runs code: the cache is used only in a directory
    of the user's own that no one else may write to (made with mode 0o700; otherwise functions are compiled and the
    log says why once), the trust PyTensor's compile directory, whose compiled modules PyTensor loads, needs too.
Storage
    ``PMCBANDIT_CACHE_DIR`` (empty: no disk cache), by default ``pmcbandit-functions`` in PyTensor's compile
    directory. Entries are written to a temporary file and renamed, so processes sharing the directory never read
    a partial entry. Past :data:`MAX_CACHE_BYTES` the least recently used entries are removed.

Imports: NumPy, numba (its version), PyMC and PyTensor (public names), nothing of this package.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
import platform
import tempfile

import numpy as np

__all__ = ["MAX_CACHE_BYTES", "MAX_ENTRY_BYTES", "cache_dir", "compile_cached", "function_key"]

#: Largest pickled function kept (bytes); a function holding larger data compiles every time.
MAX_ENTRY_BYTES = 64 * 2**20
#: Size of the directory past which the least recently used entries are removed (bytes).
MAX_CACHE_BYTES = 512 * 2**20
#: PyTensor options that change the rewritten graph or the backend's code but are not in its configuration hash.
_REWRITE_OPTIONS = ("mode", "linker", "optimizer", "optimizer_excluding", "optimizer_including",
                    "optimizer_requiring", "floatX", "cast_policy", "numba__fastmath", "tensor__cmp_sloppy",
                    "check_input", "on_opt_error")
_SUFFIX = ".pkl"
_LOG = logging.getLogger("pmcbandit")


class _Uncacheable(Exception):
    """The graph holds a shared variable (module docstring, "Not kept")."""


def cache_dir() -> str | None:
    """The directory of the stored functions, ``None`` when ``PMCBANDIT_CACHE_DIR`` is set empty."""
    path = os.environ.get("PMCBANDIT_CACHE_DIR")
    if path is None:
        import pytensor

        return os.path.join(pytensor.config.compiledir, "pmcbandit-functions")
    return path or None


def function_key(inputs, outputs, kwargs: dict) -> str | None:
    """The key of the function of ``inputs -> outputs`` compiled with ``kwargs`` (module docstring), ``None`` when
    it is not kept.
    """
    import numba
    import pymc
    import pytensor

    digest = hashlib.sha256()
    options = {name: str(getattr(pytensor.config, name, None)) for name in _REWRITE_OPTIONS}
    head = (platform.python_version(), np.__version__, numba.__version__, pytensor.__version__,
            pymc.__version__, pytensor.config.get_config_hash(), sorted(options.items()),
            sorted((k, repr(v)) for k, v in kwargs.items()))
    digest.update(repr(head).encode())
    try:
        _write_graph(_Digest(digest), inputs, outputs)
    except _Uncacheable:
        return None
    except Exception:  # noqa: BLE001 (a graph that does not pickle is compiled, as the module docstring says)
        return None
    return digest.hexdigest()


def compile_cached(inputs, outputs, **kwargs):
    """``pymc.pytensorf.compile(inputs, outputs, **kwargs)``, loaded from the disk cache when a process compiled
    the same graph before, and stored there when it is compiled (module docstring).
    """
    from pymc.pytensorf import compile as compile_pymc

    folder = _private_folder()
    key = None if folder is None else function_key(inputs, outputs, kwargs)
    if key is None:
        return compile_pymc(inputs, outputs, **kwargs)
    path = os.path.join(folder, key + _SUFFIX)
    loaded = _load(path)
    if loaded is not None:
        return loaded
    fn = compile_pymc(inputs, outputs, **kwargs)
    _store(fn, folder, path)
    return fn


def _private_folder() -> str | None:
    """:func:`cache_dir`, made (mode 0o700) if missing, or ``None`` (no disk cache, said once on the log) when it
    cannot be made or is not private: owned by another user, or writable by its group or by others (module
    docstring, "Loading").
    """
    folder = cache_dir()
    if folder is None:
        return None
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        stat = os.stat(folder)
    except OSError as exc:
        return _refuse(folder, f"it cannot be made ({exc})")
    if hasattr(os, "getuid") and stat.st_uid != os.getuid():
        return _refuse(folder, "another user owns it")
    if stat.st_mode & 0o022:
        return _refuse(folder, "its group or other users may write to it")
    return folder


_REFUSED: set = set()


def _refuse(folder: str, why: str) -> None:
    if folder not in _REFUSED:
        _REFUSED.add(folder)
        _LOG.warning("compiled density functions are not cached in %s: %s (set PMCBANDIT_CACHE_DIR to a folder of "
                     "your own, or to an empty string)", folder, why)
    return None


def _load(path: str):
    from pytensor.compile import Function

    try:
        with open(path, "rb") as fh:
            fn = pickle.load(fh)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 (a damaged or foreign entry: removed, and the function compiled)
        fn = None
    if not isinstance(fn, Function):
        _remove(path)
        return None
    try:
        os.utime(path)  # its use, for the least-recently-used pruning
    except OSError:
        pass
    _LOG.debug("loaded the compiled function %s", os.path.basename(path))
    return fn


def _store(fn, folder: str, path: str) -> None:
    try:
        data = pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 (a function that does not pickle is not kept)
        return
    if len(data) > MAX_ENTRY_BYTES:
        return
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(handle, "wb") as fh:
            fh.write(data)
        os.replace(temporary, path)
        _prune(folder)
    except OSError:  # a full disk, a folder removed meanwhile: nothing is kept
        if temporary is not None:
            _remove(temporary)


def _prune(folder: str) -> None:
    """Remove the least recently used entries of ``folder`` while it holds more than :data:`MAX_CACHE_BYTES`."""
    entries = []
    with os.scandir(folder) as found:
        for entry in found:
            if entry.name.endswith(_SUFFIX):
                try:
                    stat = entry.stat()
                except OSError:
                    continue
                entries.append((stat.st_mtime, stat.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries):
        if total <= MAX_CACHE_BYTES:
            break
        _remove(path)
        total -= size


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


class _Digest(io.RawIOBase):
    """A writable stream that feeds a hash instead of storing the bytes (the form of a large graph is not kept)."""

    def __init__(self, digest):
        self._digest = digest

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._digest.update(data)
        return len(data)


def _write_graph(out, inputs, outputs) -> None:
    """Write the graph ``inputs -> outputs`` to ``out`` in a form that depends on the computation only: the types
    of the inputs, then each node in topological order as its Op and the positions of its inputs (a constant as its
    type and data), then the positions of the outputs. Ops are pickled one by one (:class:`_GraphPickler`), so no
    object is written as a reference to an earlier one that another process might hold as a copy.
    """
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import io_toposort

    position: dict = {}

    def dump(record) -> None:
        _GraphPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(record)

    def locate(variable) -> int:
        if variable not in position:
            if isinstance(variable, Constant):
                dump(("constant", variable.type, variable.data))
            else:  # a root that is not among the inputs
                _GraphPickler.refuse_shared(variable)
                dump(("root", variable.type))
            position[variable] = len(position)
        return position[variable]

    for variable in inputs:
        _GraphPickler.refuse_shared(variable)
        dump(("input", variable.type))
        position[variable] = len(position)
    for node in io_toposort(list(inputs), list(outputs)):
        dump(("node", node.op, [locate(v) for v in node.inputs], [v.type for v in node.outputs]))
        for variable in node.outputs:
            position[variable] = len(position)
    dump(("outputs", [locate(v) for v in outputs]))


class _GraphPickler(pickle.Pickler):
    """A pickler for keys: a variable (in an Op's inner graph) as its type and its owner, a node as its Op and its
    inputs, without the annotations (``tag``, ``auto_name``, cached values) that differ between processes for the
    same computation; a shared variable stops it.
    """

    @staticmethod
    def refuse_shared(variable) -> None:
        from pytensor.compile.sharedvalue import SharedVariable

        if isinstance(variable, SharedVariable):
            raise _Uncacheable

    def reducer_override(self, obj):
        from pytensor.graph.basic import Apply, Constant, Variable

        if isinstance(obj, Variable):
            self.refuse_shared(obj)
            if isinstance(obj, Constant):
                return tuple, (("constant", obj.type, obj.data),)
            return tuple, (("variable", obj.type, obj.owner, obj.index),)
        if isinstance(obj, Apply):
            return tuple, (("node", obj.op, obj.inputs),)
        if isinstance(obj, np.ndarray) and obj.dtype != object:
            # NumPy pickles a read-only array's buffer as bytes and a writable one's as a bytearray.
            return tuple, (("ndarray", obj.dtype.str, obj.shape, np.ascontiguousarray(obj).tobytes()),)
        return NotImplemented
