"""Models with known evidence, compiled once per session for the evidence-arm tests."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

import pmcbandit  # noqa: F401  (configures PyTensor before pymc is imported)


def _beta_binomial():
    import pymc as pm

    a, b, n, k = 2.0, 3.0, 12, np.array([9, 7])
    with pm.Model() as model:
        p = pm.Beta("p", a, b)
        pm.Binomial("k", n=n, p=p, observed=k)
    # Z = prod C(n, k_i) * B(a + sum k, b + sum(n - k)) / B(a, b)
    log_z = (
        np.sum(special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1))
        + special.betaln(a + k.sum(), b + (n - k).sum())
        - special.betaln(a, b)
    )
    return model, float(log_z)


def _normal_normal():
    import pymc as pm

    m0, s0, s, y = 0.5, 1.5, 0.8, np.array([1.2, 0.4, 2.0, 1.1])
    with pm.Model() as model:
        mu = pm.Normal("mu", m0, s0)
        pm.Normal("y", mu, s, observed=y)
    cov = s**2 * np.eye(y.size) + s0**2 * np.ones((y.size, y.size))
    return model, float(stats.multivariate_normal(np.full(y.size, m0), cov).logpdf(y))


def _linear_regression():
    import pymc as pm

    rng = np.random.default_rng(7)
    x = rng.normal(size=(6, 3))
    alpha, sigma = 0.7, 0.5
    y = x @ rng.normal(scale=alpha, size=3) + rng.normal(scale=sigma, size=6)
    with pm.Model() as model:
        w = pm.Normal("w", 0.0, alpha, shape=3)
        pm.Normal("y", pm.math.dot(x, w), sigma, observed=y)
    cov = sigma**2 * np.eye(6) + alpha**2 * x @ x.T
    return model, float(stats.multivariate_normal(np.zeros(6), cov).logpdf(y))


def _half_normal_scale():
    import pymc as pm

    y = np.array([0.3, -0.9, 1.4])
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", 0.0, sigma, observed=y)

    def integrand(s):
        return stats.halfnorm.pdf(s) * np.prod(stats.norm.pdf(y, 0.0, s))

    z, _ = integrate.quad(integrand, 0.0, np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return model, float(np.log(z))


def _uniform_support():
    """y ~ Uniform(0, theta): the likelihood is zero (loglik = -inf) for theta < max(y)."""
    import pymc as pm

    y = np.array([0.4, 1.1, 0.7])
    with pm.Model() as model:
        theta = pm.HalfNormal("theta", 2.0)
        pm.Uniform("y", 0.0, theta, observed=y)

    def integrand(t):
        return stats.halfnorm.pdf(t, scale=2.0) * t ** (-y.size)

    z, _ = integrate.quad(integrand, y.max(), np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return model, float(np.log(z))


BUILDERS = {
    "beta_binomial": _beta_binomial,
    "normal_normal": _normal_normal,
    "linear_regression": _linear_regression,
    "half_normal_scale": _half_normal_scale,
    "uniform_support": _uniform_support,
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
    assert abs(mean - 1.0) <= n_se * se, (mean, se)
    return mean, se


@pytest.fixture(scope="session")
def check_unbiased():
    """``check(log_values, log_z)``: ``|mean(w/Z) - 1| <= 4 SE`` with ``w/Z = exp(log w - log Z)``."""
    return _check_unbiased
