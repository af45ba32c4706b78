"""pmcbandit._compat: each library difference gives the same behaviour on PyMC 5 / PyTensor 2 and PyMC 6 /
PyTensor 3, the PyTensor internal it reads fails loudly when it moves, and importing JAX (which an installed
nutpie, numpyro or blackjax brings in) changes no stream pmcbandit or its tests draw from.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pmcbandit import _compat

ROOT = Path(__file__).resolve().parent.parent


def test_compat_imports_no_model_library_at_module_level():
    """Version differences import PyMC, PyTensor and ArviZ inside the function that needs them."""
    tree = ast.parse((ROOT / "pmcbandit" / "_compat.py").read_text())
    top = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            top += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            top.append((node.module or "").split(".")[0])
    assert not {"pymc", "pytensor", "arviz", "arviz_base", "xarray"} & set(top)


def test_numba_jit_fn_is_the_compiled_function():
    import pytensor
    import pytensor.tensor as pt

    x = pt.dvector("x")
    fn = pytensor.function([x], [pt.sum(x**2), pt.exp(x[0])], mode="NUMBA")
    jit_fn = _compat.numba_jit_fn(fn)
    v = np.array([0.5, -1.25, 2.0])
    a, b = jit_fn(v)
    c, d = fn(v)
    assert float(a) == float(c) == pytest.approx(0.25 + 1.5625 + 4.0)
    assert float(b) == float(d)


def test_numba_jit_fn_fails_loudly_without_a_dispatcher():
    import pytensor
    import pytensor.tensor as pt

    x = pt.dvector("x")
    python_linker = pytensor.function([x], pt.sum(x), mode=pytensor.compile.mode.Mode(linker="py"))
    for fn in (python_linker, object()):
        with pytest.raises(RuntimeError, match="numba dispatcher"):
            _compat.numba_jit_fn(fn)


def _slice_chain(step, untuned, start, seed, n=6):
    step.sampling_state = untuned
    _compat.setup_step_chain(step, np.random.default_rng(seed), 0, n)
    step.stop_tuning()
    point, out = dict(start), []
    for _ in range(n):
        point, _ = step.step(point)
        out.append([float(point["a"]), float(point["b"])])
    return np.array(out)


def test_setup_step_chain_seeds_every_method_of_a_compound_step():
    """A chain is a function of the generator it is set up with, for each method of a compound step."""
    import pymc as pm

    with pm.Model() as model:
        pm.Normal("a")
        pm.Normal("b", shape=())
        step = pm.Slice([model["a"], model["b"]])
    assert hasattr(step, "methods") and len(step.methods) == 2
    start, untuned = model.initial_point(), step.sampling_state
    first, again, other = (_slice_chain(step, untuned, start, s) for s in (11, 11, 12))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[:, 0], other[:, 0]) and not np.array_equal(first[:, 1], other[:, 1])


def test_model_graph_ops_round_trip_names_dims_and_transforms():
    """Rebuilding each free variable's model-graph node from its parts gives back the same model."""
    import pymc as pm
    from pymc.model.fgraph import ModelFreeRV, fgraph_from_model, model_from_fgraph

    with pm.Model(coords={"g": ["p", "q", "r"]}) as model:
        s = pm.HalfNormal("s")
        pm.Normal("m", 0.0, s, dims="g")
    fgraph, _ = fgraph_from_model(model)
    nodes = [n for n in fgraph.toposort() if isinstance(n.op, ModelFreeRV)]
    assert [_compat.model_var_dims(n) for n in nodes][0] == ()
    for node in nodes:
        [dummy] = node.outputs
        dims = _compat.model_var_dims(node)
        new = _compat.model_free_rv(node.inputs[0], node.inputs[1], node.op.transform, dummy.name, dims)
        assert new.name == dummy.name and new.owner.op == node.op
        assert _compat.model_var_dims(new.owner) == dims
        fgraph.replace(dummy, new, import_missing=True)
    [det] = [n.outputs[0] for n in fgraph.toposort() if isinstance(n.op, ModelFreeRV) and n.outputs[0].name == "m"]
    total = _compat.model_deterministic(det * 2.0, "twice", _compat.model_var_dims(det.owner))
    fgraph.add_output(total, import_missing=True)
    rebuilt = model_from_fgraph(fgraph, mutate_fgraph=True)
    assert [v.name for v in rebuilt.free_RVs] == ["s", "m"]
    assert tuple(rebuilt.named_vars_to_dims["m"]) == tuple(rebuilt.named_vars_to_dims["twice"]) == ("g",)
    assert type(rebuilt.rvs_to_transforms[rebuilt["s"]]) is type(model.rvs_to_transforms[model["s"]])


_JAX_PACKAGES = ("jax", "numpyro", "blackjax", "nutpie")

_STREAMS = textwrap.dedent(
    """
    import importlib, json, os, sys
    import numpy as np
    import pmcbandit
    from pmcbandit._rng import get_random_generator

    def streams():
        kids = get_random_generator(7).spawn(2)
        arms = [pmcbandit.CallableArm(lambda rng, s=s: rng.normal(0.0, s), name=f"sd{s}") for s in (1.0, 2.0)]
        res = pmcbandit.run(arms, "ucb1", budget=pmcbandit.Pulls(24), random_seed=3, progressbar=False)
        return [k.random(3).tolist() for k in kids] + [float(res.estimate), float(res.se)]

    def state():
        s = np.random.get_state()
        return [s[0], s[1].tolist(), *s[2:]]

    xla = os.environ.get("XLA_FLAGS")
    a = streams()
    xla_after_run = os.environ.get("XLA_FLAGS")
    before = state()
    imported = []
    for name in sys.argv[1:]:
        importlib.import_module(name)
        imported.append(name)
    after, b = state(), streams()
    print(json.dumps({"imported": imported, "global_same": before == after, "streams_same": a == b,
                      "xla_flags_kept": xla == xla_after_run}))
    """
)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_importing_jax_changes_no_stream_and_not_the_global_state():
    """Run in a fresh interpreter: JAX is imported there only, after pmcbandit, between two identical draws.

    JAX's import reseeds ``np.random``'s global generator (``jax._src.config``, JAX 0.12), which pmcbandit
    never uses; the test session imports JAX before its first test (``tests/conftest.py``) so that the guard
    on that state (``global_numpy_rng_untouched``) sees only what a test does.
    """
    present = [p for p in _JAX_PACKAGES if importlib.util.find_spec(p) is not None]
    out = subprocess.run([sys.executable, "-c", _STREAMS, *present], capture_output=True, text=True, cwd=ROOT,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["imported"] == present and "jax" in present
    assert report["streams_same"], "a pmcbandit stream changed when JAX was imported"
    assert report["xla_flags_kept"], "pmcbandit set XLA_FLAGS (which its worker processes would inherit)"
    if not report["global_same"]:
        assert "jax" in sys.modules, "JAX changes np.random's global state on import: conftest.py imports it first"
