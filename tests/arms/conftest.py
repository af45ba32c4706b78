"""Models with known evidence, compiled once per session for the evidence-arm tests."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tolerance import assert_within_se

import pmcbandit  # noqa: F401  (configures PyTensor before pymc is imported)
from tests import analytic_models


BUILDERS = {
    "beta_binomial": lambda: analytic_models.beta_binomial(2.0, 3.0, 12, np.array([9, 7])),
    "normal_normal": lambda: analytic_models.normal_normal(0.5, 1.5, 0.8, (1.2, 0.4, 2.0, 1.1)),
    "linear_regression": lambda: analytic_models.linear_regression(n=6, p=3, tau=0.7, sigma=0.5, seed=7),
    "half_normal_scale": lambda: analytic_models.half_normal_scale((0.3, -0.9, 1.4)),
    "uniform_support": lambda: analytic_models.uniform_support((0.4, 1.1, 0.7)),
}


@pytest.fixture(scope="session")
def evidence_models():
    """``{name: (ModelDensity, log Z)}``, built lazily and shared by the session."""
    from pmcbandit.arms.evidence import ModelDensity

    cache = {}

    def get(name):
        if name not in cache:
            model, log_z = BUILDERS[name]()
            cache[name] = (ModelDensity(model), log_z)
        return cache[name]

    return get


def _check_unbiased(log_values, log_z, n_se=4.0):
    ratio = np.exp(np.asarray(log_values) - log_z)
    mean = ratio.mean()
    se = ratio.std(ddof=1) / np.sqrt(ratio.size)
    assert se > 0
    assert_within_se(mean, 1.0, se, k=n_se)
    return mean, se


@pytest.fixture(scope="session")
def check_unbiased():
    """``check(log_values, log_z)``: ``|mean(w/Z) - 1| <= 4 SE`` with ``w/Z = exp(log w - log Z)``."""
    return _check_unbiased
