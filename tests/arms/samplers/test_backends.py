"""NUTS backends as arms (pmcbandit.arms.samplers.backends): unbiased on a conjugate posterior mean,
ImportError naming the extra for a missing backend asked for by name, a note for one skipped,
compile time measured once, XLA flags left as they were, pickling without the compiled sampler.

Backends whose packages are not installed skip with the missing package as the reason
(``pip install "pmcbandit[samplers]"``); the PyMC backends always run.
"""

from __future__ import annotations

import logging
import os
import pickle

import cloudpickle

import numpy as np
import pytest

import pmcbandit  # noqa: F401  (configures PyTensor before pymc is imported)
from pmcbandit.arms.samplers import NUTSBackendArm, sampler_arms
from pmcbandit.arms.samplers import backends
from tests.tolerance import assert_within_se

# mu ~ N(M0, S0), y_i ~ N(mu, SIGMA): posterior mean of mu in closed form.
M0, S0, SIGMA = 0.5, 1.5, 0.8
Y = np.array([1.2, 0.4, 2.0, 1.1, -0.3, 0.9])
PRECISION = 1 / S0**2 + Y.size / SIGMA**2
MU_MEAN = (M0 / S0**2 + Y.sum() / SIGMA**2) / PRECISION
TUNE, DRAWS, PULLS = 200, 200, 30


@pytest.fixture(scope="module")
def model():
    import pymc as pm

    with pm.Model() as m:
        mu = pm.Normal("mu", M0, S0)
        pm.Normal("y", mu, SIGMA, observed=Y)
    return m


def _needs(backend):
    missing = backends.backend_missing(backend)
    if missing:
        pytest.skip(f"{backend!r} needs {', '.join(missing)} (pip install \"pmcbandit[samplers]\")")


SLOW_BACKENDS = [pytest.param(b, marks=pytest.mark.slow) for b in ("pymc-numba", "nutpie", "nutpie-lowrank",
                                                                    "numpyro", "blackjax")]


@pytest.mark.parametrize("backend", ["pymc", *SLOW_BACKENDS])
def test_backend_is_unbiased_on_a_conjugate_posterior_mean(model, backend):
    _needs(backend)
    arm = NUTSBackendArm(model, "mu", backend, tune=TUNE, draws=DRAWS)
    assert arm.compile_seconds is None
    arm.warm_up()
    assert arm.compile_seconds > 0
    compiled = arm._runner
    rng = np.random.default_rng(20_261_129)
    pulls = [arm.pull(child) for child in rng.spawn(PULLS)]
    assert arm._runner is compiled  # built once, reused by every pull
    x = np.array([p.values[0] for p in pulls])
    assert_within_se(x.mean(), MU_MEAN, x.std(ddof=1) / np.sqrt(PULLS), backend)
    for p in pulls:
        assert set(p.info) == set(arm.diagnostics)
        assert p.info["n_grad"] >= TUNE + DRAWS and p.info["divergences"] == 0
        # The chain's variance of mu is the posterior variance 1/PRECISION, up to its Monte Carlo error.
        assert 0.3 / PRECISION < p.info["chain_variance"] < 3.0 / PRECISION


def test_same_seed_same_pull(model):
    arm = NUTSBackendArm(model, "mu", "pymc", tune=50, draws=50)
    a, b = (arm.pull(np.random.default_rng(7)).values[0] for _ in range(2))
    assert a == b


def test_missing_backend_asked_by_name_raises_import_error_naming_the_extra(model, monkeypatch):
    monkeypatch.setitem(backends._PACKAGES, "nutpie", ("no_such_package_for_pmcbandit_tests",))
    with pytest.raises(ImportError, match=r"pmcbandit\[samplers\]"):
        sampler_arms(model, "mu", samplers=["pymc", "nutpie"])
    with pytest.raises(ImportError, match="no_such_package_for_pmcbandit_tests"):
        NUTSBackendArm(model, "mu", "nutpie")


def test_every_backend_skips_the_missing_ones_with_a_note(model, monkeypatch, caplog):
    for b in ("nutpie", "nutpie-lowrank", "numpyro", "blackjax"):
        monkeypatch.setitem(backends._PACKAGES, b, ("no_such_package_for_pmcbandit_tests",))
    with caplog.at_level(logging.INFO, logger="pmcbandit"):
        arms = sampler_arms(model, "mu", samplers="backends")
    assert [a.backend for a in arms] == ["pymc", "pymc-numba"]
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) == 4 and all("pmcbandit[samplers]" in m for m in skipped)


def test_backends_refuse_count_costs_and_bad_settings(model):
    with pytest.raises(ValueError, match="cost"):
        sampler_arms(model, "mu", samplers=["pymc", "nuts"], cost="gradient_evals")
    with pytest.raises(ValueError, match="tune"):
        NUTSBackendArm(model, "mu", "pymc", tune=0)
    with pytest.raises(ValueError, match="backend"):
        NUTSBackendArm(model, "mu", "stan")


def test_arm_pickles_without_its_compiled_sampler(model):
    arm = NUTSBackendArm(model, "mu", "pymc", tune=30, draws=30)
    arm.warm_up()
    copy = pickle.loads(cloudpickle.dumps(arm))  # how arms travel to workers
    assert copy._runner is None and copy.compile_seconds is None
    assert copy.pull(np.random.default_rng(3)).values[0] == arm.pull(np.random.default_rng(3)).values[0]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["numpyro", "blackjax"])
def test_jax_backends_leave_xla_flags_as_they_were(model, backend, monkeypatch):
    _needs(backend)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    NUTSBackendArm(model, "mu", backend, tune=20, draws=20).warm_up()
    assert os.environ["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"
    import jax

    assert len(jax.devices("cpu")) == 1  # not PyMC's 100 virtual devices


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["numpyro", "blackjax"])
def test_jax_backends_reject_settings_they_do_not_take(model, backend):
    _needs(backend)
    with pytest.raises(ValueError, match="target_accept"):
        NUTSBackendArm(model, "mu", backend, max_treedepth=5)
