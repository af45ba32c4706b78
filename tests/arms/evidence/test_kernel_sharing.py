"""The cached kernels take a model's density as a C function of one signature: one compilation serves every model."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from pmcbandit.arms.evidence import AISArm
from pmcbandit.arms.evidence._kernels import eval_terms_rows
from pmcbandit.arms.evidence._nested_kernel import nested_run_parallel, nested_run_serial
from pmcbandit.arms.evidence.nested import NestedArm
from pmcbandit.arms.evidence.slice_kernel import ais_slice_serial


def test_one_slice_kernel_and_row_loop_serve_models_of_any_dimension(evidence_models):
    """Densities of two models (dimensions 1 and 3): the slice AIS kernel and the row loop each hold one
    specialisation after both ran, where a kernel taking the model's dispatcher holds one per model.
    """
    for name in ("normal_normal", "linear_regression"):
        density, _ = evidence_models(name)
        arm = AISArm(density, n_steps=8, n_chains=2, step_seconds=1e-6)
        values = arm.pull(np.random.default_rng(0)).values
        assert values.shape == (2,) and np.isfinite(values).all()
        density.logp_terms_batch(density.sample_prior(np.random.default_rng(1), 3))
    assert len(ais_slice_serial.signatures) == 1
    assert len(eval_terms_rows.signatures) == 1


def test_one_nested_kernel_serves_models_of_any_dimension(evidence_models):
    """Nested runs on two models (dimensions 1 and 3), serial and on threads: each nested kernel holds one
    specialisation after both ran.
    """
    for name in ("normal_normal", "linear_regression"):
        density, _ = evidence_models(name)
        for parallel in (False, True):
            arm = NestedArm(density, n_live=6, n_moves=3, max_kills=30, parallel=parallel, expected_seconds=1.0)
            values = arm.pull(np.random.default_rng(0)).values
            assert values.shape == (1,) and np.isfinite(values).all()
    assert len(nested_run_serial.signatures) == 1
    assert len(nested_run_parallel.signatures) == 1


def test_terms_fn_follows_a_replaced_jit_fn(evidence_models):
    """``terms_fn`` is rebuilt from ``jit_fn`` when that is replaced (as a benchmark swapping in a hand-written
    density does), so the kernels never run a stale density.
    """
    density, _ = evidence_models("linear_regression")
    x = density.sample_prior(np.random.default_rng(2), 4)
    before = density.logp_terms_batch(x)
    np.testing.assert_array_equal(before[0], [density.logp_terms(r)[0] for r in x])

    @numba.njit
    def constant(v):
        return np.asarray(v.size + 0.5), np.asarray(-1.25)

    clone = object.__new__(type(density))
    clone.__dict__.update(density.__dict__)
    clone.jit_fn = constant
    lp, ll = clone.logp_terms_batch(x)
    np.testing.assert_array_equal(lp, np.full(4, density.dim + 0.5))
    np.testing.assert_array_equal(ll, np.full(4, -1.25))
    np.testing.assert_array_equal(density.logp_terms_batch(x)[0], before[0])


def test_the_density_c_function_is_loaded_from_the_disk_cache_where_pytensor_caches_the_graph(evidence_models):
    """Where PyTensor keeps the model's dispatcher in its numba cache, the C function around it is kept beside it:
    a second build for the same dispatcher is a cache hit (counted by numba, ``cache_hits``), not a compilation, and
    it computes what the dispatcher computes. A dispatcher PyTensor does not cache gets the uncached closure.
    """
    from pmcbandit._compat import numba_src_function
    from pmcbandit.arms.evidence import _kernels

    import pytensor

    if not pytensor.config.numba__cache:
        pytest.skip("PyTensor's numba cache is switched off (numba__cache=False)")
    density, _ = evidence_models("linear_regression")
    # PyTensor keeps this graph's dispatcher in its cache: a PyTensor that moved what _compat reads fails here.
    assert numba_src_function("def f():\n    pass\n", "f", {}, density.jit_fn, "probe") is not None
    _kernels.terms_cfunc(density.jit_fn, density.dim)  # compiled and saved, or loaded from an earlier process
    again = _kernels.terms_cfunc(density.jit_fn, density.dim)
    assert again.cache_hits == 1
    x = density.sample_prior(np.random.default_rng(3), 5)
    lp, ll = eval_terms_rows(again, x).T
    np.testing.assert_array_equal(lp, [density.logp_terms(r)[0] for r in x])
    np.testing.assert_array_equal(ll, [density.logp_terms(r)[1] for r in x])

    @numba.njit
    def constant(v):
        return np.asarray(v.size + 0.5), np.asarray(-1.25)

    plain = _kernels.terms_cfunc(constant, density.dim)
    assert plain.cache_hits == 0
    np.testing.assert_array_equal(eval_terms_rows(plain, x)[:, 0], np.full(5, density.dim + 0.5))


def test_models_that_differ_only_in_their_data_get_c_functions_of_their_own_data():
    """The C functions kept on disk are keyed by the graph's PyTensor key, which holds the data: two models of one
    structure and different observations each evaluate their own density through the C function (loaded or built).
    """
    import pymc as pm

    from pmcbandit.arms.evidence.model_density import ModelDensity

    x = None
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        design, y = rng.normal(size=(12, 2)), rng.normal(size=12)
        with pm.Model() as model:
            b = pm.Normal("b", 0.0, 1.0, shape=2)
            pm.Normal("y", pm.math.dot(design, b), 0.5, observed=y)
        density = ModelDensity(model)
        x = density.sample_prior(np.random.default_rng(5), 4) if x is None else x
        rows = eval_terms_rows(density.terms_fn, x)
        np.testing.assert_array_equal(rows, [density.logp_terms(r) for r in x])
