"""PyMC models whose evidence is known exactly, shared by the evidence tests.

Each builder returns ``(model, log Z)``; the data are arguments so every test module keeps
its own fixed data set.

* Beta–Binomial, ``p ~ Beta(a, b)``, ``k_i ~ Bin(n, p)``:
  ``Z = prod_i C(n, k_i) B(a + sum k, b + sum (n - k)) / B(a, b)`` (logit-transformed free
  variable, so the Jacobian is exercised).
* Normal–Normal, ``mu ~ N(m0, s0^2)``, ``y_i ~ N(mu, s^2)``: ``y ~ N(m0 1, s^2 I + s0^2 1 1^T)``.
* Independent normal means, ``mu_i ~ N(m0, s0^2)``, ``y_i ~ N(mu_i, s^2)``: ``y_i ~ N(m0, s0^2 + s^2)``, each
  ``mu_i`` a posterior normal (a Gaussian posterior of any dimension, for moments as well as Z).
* Linear regression with known noise, ``beta ~ N(0, tau^2 I)``, ``y ~ N(X beta, sigma^2 I)``:
  ``y ~ N(0, sigma^2 I + tau^2 X X^T)``.
* Half-normal scale, ``sigma ~ HalfNormal(1)``, ``y_i ~ N(0, sigma^2)`` (log-transformed):
  ``log Z`` by adaptive quadrature.
* Uniform support, ``theta ~ HalfNormal(2)``, ``y_i ~ Uniform(0, theta)``: the likelihood is zero
  for ``theta < max(y)``; ``log Z`` by quadrature.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, special, stats

import pmcbandit  # noqa: F401  (configures PyTensor before pymc is imported)
from models.evidence_suite import log_tensor_quadrature


def beta_binomial(a=2.0, b=3.0, n=20, k=14):
    import pymc as pm

    k_arr = np.atleast_1d(np.asarray(k))
    with pm.Model() as model:
        p = pm.Beta("p", a, b)
        pm.Binomial("k", n=n, p=p, observed=k)
    log_z = (
        np.sum(special.gammaln(n + 1) - special.gammaln(k_arr + 1) - special.gammaln(n - k_arr + 1))
        + special.betaln(a + k_arr.sum(), b + (n - k_arr).sum())
        - special.betaln(a, b)
    )
    return model, float(log_z)


def normal_normal(m0=1.0, s0=2.0, s=0.7, y=(0.3, 1.9, 2.4, 1.1)):
    import pymc as pm

    y = np.asarray(y, dtype=float)
    with pm.Model() as model:
        mu = pm.Normal("mu", m0, s0)
        pm.Normal("y", mu, s, observed=y)
    cov = s**2 * np.eye(y.size) + s0**2 * np.ones((y.size, y.size))
    return model, float(stats.multivariate_normal(np.full(y.size, m0), cov).logpdf(y))


def independent_normal_means(dim, m0=0.5, s0=1.0, s=0.5, seed=20010901):
    """``mu_i ~ N(m0, s0^2)``, ``y_i ~ N(mu_i, s^2)`` for ``i < dim``, ``y`` drawn from its marginal with ``seed``
    (rounded to 6 digits): ``(model, y, log Z, posterior means, posterior variance)``, the posterior variance
    ``v = 1 / (1/s0^2 + 1/s^2)`` of every ``mu_i`` and its mean ``v (m0/s0^2 + y_i/s^2)``.
    """
    import pymc as pm

    y = np.random.default_rng(seed).normal(m0, np.hypot(s0, s), dim).round(6)
    with pm.Model() as model:
        mu = pm.Normal("mu", np.float64(m0), np.float64(s0), shape=dim)
        pm.Normal("y", mu, np.float64(s), observed=y)
    v = 1.0 / (1.0 / s0**2 + 1.0 / s**2)
    return model, y, float(stats.norm(m0, np.hypot(s0, s)).logpdf(y).sum()), v * (m0 / s0**2 + y / s**2), v


def linear_regression(n=12, p=3, tau=1.5, sigma=0.5, seed=7):
    import pymc as pm

    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, p))
    y = X @ gen.normal(0.0, tau, size=p) + gen.normal(0.0, sigma, size=n)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, tau, shape=p)
        pm.Normal("y", pm.math.dot(X, beta), sigma, observed=y)
    cov = sigma**2 * np.eye(n) + tau**2 * X @ X.T
    return model, float(stats.multivariate_normal(np.zeros(n), cov).logpdf(y))


def half_normal_scale(y=(0.3, -0.9, 1.4)):
    import pymc as pm

    y = np.asarray(y, dtype=float)
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", 0.0, sigma, observed=y)

    def integrand(s):
        return np.exp(stats.halfnorm.logpdf(s) + stats.norm(0.0, s).logpdf(y).sum())

    z, _ = integrate.quad(integrand, 0.0, np.inf, epsabs=0.0, epsrel=1e-12, limit=200)
    return model, float(np.log(z))


def uniform_support(y=(0.4, 1.1, 0.7)):
    import pymc as pm

    y = np.asarray(y, dtype=float)
    with pm.Model() as model:
        theta = pm.HalfNormal("theta", 2.0)
        pm.Uniform("y", 0.0, theta, observed=y)

    def integrand(t):
        return stats.halfnorm.pdf(t, scale=2.0) * t ** (-y.size)

    z, _ = integrate.quad(integrand, y.max(), np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return model, float(np.log(z))


def gamma_poisson(counts=(0, 3, 1, 7, 2, 0), exposures=(1.0, 2.5, 0.8, 3.0, 1.6, 0.5)):
    """``a, b ~ Gamma(2, 1)``, ``lam_j ~ Gamma(a, b)``, ``y_j ~ Poisson(lam_j t_j)``: each ``lam_j`` integrates out
    to a negative binomial, and ``log Z`` is a two-dimensional integral over ``(log a, log b)`` by Gauss–Legendre
    on panels (the posterior is skewed in these coordinates, where the Laplace fit misses its spread).
    """
    import pymc as pm

    y, t = np.asarray(counts, dtype=float), np.asarray(exposures, dtype=float)
    with pm.Model() as model:
        a = pm.Gamma("a", alpha=2.0, beta=1.0)
        b = pm.Gamma("b", alpha=2.0, beta=1.0)
        lam = pm.Gamma("lam", alpha=a, beta=b, shape=y.size)
        pm.Poisson("y", lam * t, observed=y)

    def log_joint(points):
        u, v = points[:, :1], points[:, 1:]
        a, b = np.exp(u), np.exp(v)
        lik = (y * np.log(t) - special.gammaln(y + 1) + a * np.log(b) - special.gammaln(a)
               + special.gammaln(a + y) - (a + y) * np.log(b + t)).sum(axis=-1)
        return lik + (2 * u - np.exp(u) + 2 * v - np.exp(v))[:, 0]  # Gamma(2, 1) densities times the Jacobians a, b

    return model, log_tensor_quadrature(log_joint, (-14.0, -14.0), (10.0, 10.0), nodes=60, panels=24)
