"""The disk cache of compiled density functions: keys that follow the computation only, loads that give the same
bits as a compile, and graphs it must not keep.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from pmcbandit.arms.evidence import _compiled
from pmcbandit.arms.evidence._compiled import compile_cached, function_key

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "functions"
    monkeypatch.setenv("PMCBANDIT_CACHE_DIR", str(folder))
    return folder


def _graph(scale=2.0, op=pt.exp):
    x = pt.vector("x", shape=(3,), dtype="float64")
    data = pt.constant(np.array([0.5, -1.0, 2.0]))
    return [x], [pt.sum(op(scale * x - data)), pt.dot(x, data)]


def _no_compile(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled instead of loaded")

    monkeypatch.setattr("pymc.pytensorf.compile", refuse)


def test_the_same_computation_has_the_same_key_after_other_work():
    """A variable's ``auto_name`` (a process-wide counter) and the tags a compile adds are not part of the key."""
    inputs, outputs = _graph()
    key = function_key(inputs, outputs, {"mode": "NUMBA"})
    pytensor.function(inputs, outputs)  # adds tags to the graph's variables
    [pt.scalar() for _ in range(7)]  # moves the counter on
    again_inputs, again_outputs = _graph()
    assert function_key(again_inputs, again_outputs, {"mode": "NUMBA"}) == key
    assert function_key(inputs, outputs, {"mode": "NUMBA"}) == key


def test_a_different_computation_or_compile_has_another_key():
    key = function_key(*_graph(), {"mode": "NUMBA"})
    assert function_key(*_graph(scale=3.0), {"mode": "NUMBA"}) != key  # a constant's value
    assert function_key(*_graph(op=pt.log1p), {"mode": "NUMBA"}) != key  # an Op
    assert function_key(*_graph(), {"mode": None}) != key  # the backend
    x = pt.vector("x", shape=(4,), dtype="float64")
    data = pt.constant(np.array([0.5, -1.0, 2.0, 0.0]))
    assert function_key([x], [pt.sum(pt.exp(2.0 * x - data)), pt.dot(x, data)], {"mode": "NUMBA"}) != key


@pytest.mark.parametrize("mode", ["NUMBA", None])
def test_a_stored_function_is_loaded_and_gives_the_same_bits(cache, monkeypatch, mode):
    inputs, outputs = _graph()
    compiled = compile_cached(inputs, outputs, mode=mode)
    assert len(list(cache.glob("*.pkl"))) == 1
    _no_compile(monkeypatch)
    loaded = compile_cached(*_graph(), mode=mode)
    x = np.array([0.3, -0.7, 1.1])
    for got, want in zip(loaded(x), compiled(x)):
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_a_graph_with_a_shared_variable_is_not_kept(cache):
    """Its loaded function would hold a copy of the value, which ``set_value`` (``pm.set_data``) would not reach."""
    data = pytensor.shared(np.array([1.0, 2.0, 3.0]))
    x = pt.vector("x", shape=(3,), dtype="float64")
    assert function_key([x], [pt.dot(x, data)], {}) is None
    fn = compile_cached([x], [pt.dot(x, data)])
    assert not cache.exists() or not list(cache.glob("*.pkl"))
    data.set_value(np.array([0.0, 0.0, 1.0]))
    assert float(fn(np.ones(3))[0]) == 1.0


def test_a_damaged_entry_is_removed_and_the_function_compiled(cache):
    inputs, outputs = _graph()
    compile_cached(inputs, outputs, mode="NUMBA")
    [entry] = cache.glob("*.pkl")
    entry.write_bytes(b"not a pickle")
    fn = compile_cached(*_graph(), mode="NUMBA")
    assert float(fn(np.zeros(3))[1]) == 0.0
    assert entry.read_bytes() != b"not a pickle"  # compiled and stored again


def test_an_empty_cache_dir_turns_the_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv("PMCBANDIT_CACHE_DIR", "")
    assert _compiled.cache_dir() is None
    calls = []
    real = pytensor.function

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr("pymc.pytensorf.pytensor.function", counted)
    compile_cached(*_graph(), mode="NUMBA")
    compile_cached(*_graph(), mode="NUMBA")
    assert len(calls) == 2


def test_a_folder_others_may_write_to_is_not_used(tmp_path, monkeypatch, caplog):
    """Loading unpickles: a folder that anyone but its user may write to is neither read nor written."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv("PMCBANDIT_CACHE_DIR", str(folder))
    with caplog.at_level("WARNING", logger="pmcbandit"):
        for _ in range(2):
            fn = compile_cached(*_graph(), mode="NUMBA")
    assert float(fn(np.zeros(3))[1]) == 0.0
    assert not list(folder.iterdir())
    assert sum("not cached" in r.getMessage() for r in caplog.records) == 1  # said once


def test_the_least_recently_used_entries_go_past_the_bound(cache, monkeypatch):
    path = {scale: cache / (function_key(*_graph(scale=scale), {"mode": "NUMBA"}) + ".pkl") for scale in (1, 2, 3)}
    for scale in path:
        compile_cached(*_graph(scale=scale), mode="NUMBA")
    for age, scale in enumerate(path):  # distinct use times, the first graph's oldest
        os.utime(path[scale], (1e9 + age, 1e9 + age))
    compile_cached(*_graph(scale=1), mode="NUMBA")  # a load: its entry is now the most recently used
    size = max(p.stat().st_size for p in cache.glob("*.pkl"))
    monkeypatch.setattr(_compiled, "MAX_CACHE_BYTES", 2 * size + size // 2)
    compile_cached(*_graph(scale=4), mode="NUMBA")
    kept = set(cache.glob("*.pkl"))
    assert len(kept) == 2
    assert path[1] in kept and path[2] not in kept and path[3] not in kept


_DENSITY = """
import logging, sys
logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, format="%(message)s")
for name in ("pytensor", "numba", "pymc", "matplotlib"):
    logging.getLogger(name).setLevel(logging.WARNING)
import numpy as np
from pmcbandit.arms.evidence import ModelDensity
from tests.analytic_models import half_normal_scale
density = ModelDensity(half_normal_scale()[0])
x = density.sample_prior(np.random.default_rng(5), 4)
print("terms", np.stack(density.logp_terms_batch(x)).tobytes().hex(),
      np.asarray(density.log_density_and_grad(x[0])[1]).tobytes().hex())
"""


def test_a_later_process_loads_the_density_and_gets_the_same_bits(cache):
    env = dict(os.environ, PMCBANDIT_CACHE_DIR=str(cache), OMP_NUM_THREADS="1")
    runs = [subprocess.run([sys.executable, "-c", _DENSITY], capture_output=True, text=True, cwd=ROOT, env=env,
                           timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = ([line for line in run.stdout.splitlines() if line.startswith("terms")] for run in runs)
    assert first == second
    assert "loaded the compiled function" not in runs[0].stdout
    assert runs[1].stdout.count("loaded the compiled function") >= 2  # the point function and the gradient's
