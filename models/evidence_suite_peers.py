"""The evidence suite as nested samplers take it: per-model likelihoods and prior transforms.

For every model of :data:`models.evidence_suite.SUITE` a :class:`PeerProblem` holds what a
nested sampler takes: ``prior_transform`` (the unit cube to the parameters, in the order of the
PyMC model's free variables, on their constrained scale) and ``log_likelihood`` (the log density
of the observed data given the parameters), both written here with NumPy/SciPy from the PyMC model
definitions, vectorised over leading axes (shape ``(..., dim)`` in, ``(...)`` or ``(..., dim)``
out). A prior that is a product of conditionals is mapped coordinate by coordinate with inverse
CDFs (``scipy.special.ndtri`` for normals; ``5 tan(pi u / 2)`` for HalfCauchy(5);
``s ndtri((1 + u) / 2)`` for HalfNormal(s); ``gammaincinv`` for Gamma; ``betaincinv`` for Beta), a
hierarchy's group effects as ``mu + tau ndtri(u_j)`` given the earlier coordinates (the centred
parametrisation, as PyMC defines the model). ``tests/models/test_evidence_suite_peers.py`` checks
that the likelihood is PyMC's observed log density and that ``-log|det dT/du|`` is PyMC's prior
log density, at random points.

The runners that take them (dynesty, nautilus) are in ``benchmarks/_peers.py``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from scipy import special

__all__ = ["PeerProblem", "PROBLEMS", "problem"]


class PeerProblem(NamedTuple):
    """What a nested sampler takes for one suite model."""

    name: str
    dim: int
    prior_transform: Callable[[np.ndarray], np.ndarray]
    log_likelihood: Callable[[np.ndarray], np.ndarray]


def _norm_loglik(y, mean, sd):
    return (-0.5 * ((y - mean) / sd) ** 2 - np.log(sd) - 0.5 * np.log(2.0 * np.pi)).sum(-1)


def _half_cauchy(u, beta):
    return beta * np.tan(0.5 * np.pi * u)


def _half_normal(u, sd):
    return sd * special.ndtri(0.5 * (1.0 + u))


def _bernoulli_logit(y, eta):
    """``sum(y eta - softplus(eta))`` over the last axis."""
    return (y * eta - np.logaddexp(0.0, eta)).sum(-1)


def _conjugate() -> PeerProblem:
    from models import evidence_suite as es

    data = es.load_data("conjugate")
    X, y = data[:, :3], data[:, 3]
    return PeerProblem("conjugate", 3, lambda u: es.CONJUGATE_TAU * special.ndtri(u),
                       lambda b: _norm_loglik(y, np.asarray(b) @ X.T, es.CONJUGATE_SIGMA))


def _centred_hierarchy(name, y, sd, mu_sd, tau_beta) -> PeerProblem:
    """``(mu, tau, theta_1..J)``: ``mu ~ N(0, mu_sd)``, ``tau ~ HalfCauchy(tau_beta)``, ``theta_j ~ N(mu, tau)``."""

    def prior(u):
        u = np.asarray(u, dtype=float)
        mu = mu_sd * special.ndtri(u[..., :1])
        tau = _half_cauchy(u[..., 1:2], tau_beta)
        return np.concatenate([mu, tau, mu + tau * special.ndtri(u[..., 2:])], axis=-1)

    return PeerProblem(name, y.size + 2, prior, lambda x: _norm_loglik(y, np.asarray(x)[..., 2:], sd))


def _eight_schools() -> PeerProblem:
    from models import evidence_suite as es

    return _centred_hierarchy("eight_schools_centred", es.EIGHT_SCHOOLS_Y, es.EIGHT_SCHOOLS_SIGMA,
                              es.EIGHT_SCHOOLS_MU_SD, es.EIGHT_SCHOOLS_TAU_BETA)


def _hier_normal() -> PeerProblem:
    from models import evidence_suite as es

    data = es.load_data("hier_normal")
    return _centred_hierarchy("hierarchical_normal_100", data[:, 0], data[:, 1], es.HIER_NORMAL_MU_SD,
                              es.HIER_NORMAL_TAU_BETA)


def _mixture() -> PeerProblem:
    from models import evidence_suite as es

    y = es.load_data("mixture")[:, 0]

    def loglik(mu):
        comp = -0.5 * (y - np.asarray(mu)[..., :, None]) ** 2 - 0.5 * np.log(2.0 * np.pi) + np.log(0.5)
        return np.logaddexp(comp[..., 0, :], comp[..., 1, :]).sum(-1)

    return PeerProblem("mixture_label_switching", 2, lambda u: 5.0 * special.ndtri(u), loglik)


def _student_t() -> PeerProblem:
    from models import evidence_suite as es

    y = es.load_data("student_t")[:, 0]

    def prior(u):
        u = np.asarray(u, dtype=float)
        # Gamma(alpha=2, rate=0.1): inverse regularised lower incomplete gamma, scale 1/rate.
        return np.stack([10.0 * special.ndtri(u[..., 0]), _half_normal(u[..., 1], 5.0),
                         10.0 * special.gammaincinv(2.0, u[..., 2])], axis=-1)

    def loglik(x):
        x = np.asarray(x, dtype=float)
        mu, sigma, nu = x[..., 0:1], x[..., 1:2], x[..., 2:3]
        z2 = ((y - mu) / sigma) ** 2
        out = (special.gammaln(0.5 * (nu + 1.0)) - special.gammaln(0.5 * nu) - 0.5 * np.log(nu * np.pi)
               - np.log(sigma) - 0.5 * (nu + 1.0) * np.log1p(z2 / nu))
        return out.sum(-1)

    return PeerProblem("student_t_unknown_nu", 3, prior, loglik)


def _beta_binomial() -> PeerProblem:
    from models import evidence_suite as es

    a, b, n, k = es.BETA_BINOMIAL_A, es.BETA_BINOMIAL_B, es.BETA_BINOMIAL_N, es.BETA_BINOMIAL_K
    log_choose = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)

    def loglik(p):
        p = np.asarray(p, dtype=float)
        with np.errstate(divide="ignore"):  # p = 0 or 1 exactly: the k = 0 / k = n terms are 0 * log 0 = 0
            return (log_choose + special.xlogy(k, p) + special.xlog1py(n - k, -p)).sum(-1)

    return PeerProblem("beta_binomial", int(n.size), lambda u: special.betaincinv(a, b, u), loglik)


def _logistic(name, X, y, prior_sd) -> PeerProblem:
    return PeerProblem(name, X.shape[1], lambda u: prior_sd * special.ndtri(u),
                       lambda theta: _bernoulli_logit(y, np.asarray(theta) @ X.T))


def _logistic_d50() -> PeerProblem:
    from models import evidence_suite as es

    data = es.load_data("logistic_d50")
    X = np.column_stack([np.ones(data.shape[0]), data[:, :-1]])
    return _logistic("logistic_regression_d50", X, data[:, -1], 1.0)


def _pima_768() -> PeerProblem:
    from models import pima

    X, y = pima.load_data(768)
    return _logistic("pima_768", X, y.astype(float), np.sqrt(0.05))  # logistic_regression's default prior_var


def _hier_logistic() -> PeerProblem:
    from models import evidence_suite as es

    data = es.load_data("hier_logistic")
    group, cov, y = data[:, 0].astype(np.int64), data[:, 1], data[:, 2]
    groups = es.HIER_LOGISTIC_GROUPS

    def prior(u):
        """``(mu_a, sigma_a, a_1..50, beta)``, the PyMC model's order."""
        u = np.asarray(u, dtype=float)
        mu = es.HIER_LOGISTIC_MU_SD * special.ndtri(u[..., :1])
        sigma = _half_normal(u[..., 1:2], es.HIER_LOGISTIC_SIGMA_SD)
        a = mu + sigma * special.ndtri(u[..., 2:2 + groups])
        beta = es.HIER_LOGISTIC_BETA_SD * special.ndtri(u[..., 2 + groups:])
        return np.concatenate([mu, sigma, a, beta], axis=-1)

    def loglik(x):
        x = np.asarray(x, dtype=float)
        return _bernoulli_logit(y, x[..., 2:2 + groups][..., group] + x[..., -1:] * cov)

    return PeerProblem("hierarchical_logistic_50", groups + 3, prior, loglik)


#: ``{suite model name: builder of its PeerProblem}``.
PROBLEMS: dict[str, Callable[[], PeerProblem]] = {
    "conjugate": _conjugate,
    "eight_schools_centred": _eight_schools,
    "mixture_label_switching": _mixture,
    "student_t_unknown_nu": _student_t,
    "beta_binomial": _beta_binomial,
    "logistic_regression_d50": _logistic_d50,
    "pima_768": _pima_768,
    "hierarchical_normal_100": _hier_normal,
    "hierarchical_logistic_50": _hier_logistic,
}


def problem(name: str) -> PeerProblem:
    """The :class:`PeerProblem` of suite model ``name``."""
    if name not in PROBLEMS:
        raise ValueError(f"The 'name' parameter of problem must be one of {list(PROBLEMS)!r}. Got {name!r} instead.")
    return PROBLEMS[name]()
