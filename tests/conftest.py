"""Shared fixtures: a seeded Generator, and a guard that no test touches np.random's global state."""

import importlib.util
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import pmcbandit  # noqa: F401  (configures PyTensor's BLAS before anything imports pytensor)

if importlib.util.find_spec("jax") is not None:
    # JAX (brought in by nutpie, numpyro or blackjax) reseeds np.random's global generator on import:
    # imported here, before any test, so the guard below sees only what a test does.
    import jax  # noqa: F401


@pytest.fixture
def rng():
    return np.random.default_rng(20141)


@pytest.fixture(autouse=True)
def global_numpy_rng_untouched():
    """Library code must never read or write np.random's global state (PyMC's rule)."""
    before = np.random.get_state()
    yield
    after = np.random.get_state()
    same = before[0] == after[0] and np.array_equal(before[1], after[1]) and before[2:] == after[2:]
    assert same, "np.random global state was changed"
