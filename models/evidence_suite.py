"""Calibration suite for evidence estimators: nine PyMC models with reference :math:`\\log Z`.

Models on which an evidence estimate :math:`\\log\\hat Z \\pm
\\mathrm{se}` can be judged, each with a reference value computed here, independently of
the estimators it judges (closed forms, deterministic quadrature, or long importance
sampling runs written from the model's density alone). Every model has continuous free
variables and a proper prior; :math:`Z = \\int p(\\theta) p(y\\mid\\theta)\\,d\\theta` is
the density PyMC defines (``model.logp()``), and the quadratures integrate hand-written
log joints in PyMC's unconstrained coordinates (log-Jacobians included) that the tests
check against ``model.compile_logp(jacobian=True)`` to 1e-8.

``conjugate`` (dim 3)
    :math:`\\beta\\sim N(0, I_3)`, :math:`y\\sim N(X\\beta, 0.5^2 I_{30})`. The easy
    control: a Gaussian posterior. Closed form :math:`y \\sim N(0, \\sigma^2 I + \\tau^2
    XX^\\top)` (Bishop 2006, Eq. 3.86).
``eight_schools_centred`` (dim 10)
    :math:`\\mu\\sim N(0,5^2)`, :math:`\\tau\\sim\\text{HalfCauchy}(5)`,
    :math:`\\theta_j\\sim N(\\mu,\\tau^2)`, :math:`y_j\\sim N(\\theta_j,\\sigma_j^2)` on Rubin's
    (1981) data. Hard: Neal's funnel; the joint density is unbounded as
    :math:`\\tau\\to0` with :math:`\\theta_j\\to\\mu`, so there is no interior mode.
    Reference: :math:`\\mu,\\theta` integrate out, :math:`y\\mid\\tau \\sim
    N(0, \\mathrm{diag}(\\tau^2+\\sigma^2) + 25\\,\\mathbf 1\\mathbf 1^\\top)`, then 1-D adaptive
    quadrature over :math:`\\tau` (QUADPACK ``qagi``), checked by Gauss–Legendre in
    :math:`s = \\tfrac2\\pi\\arctan(\\tau/5)` (the HalfCauchy CDF, so the prior is uniform).
``mixture_label_switching`` (dim 2)
    :math:`\\mu_k\\sim N(0,5^2)` (unordered), :math:`y_i\\sim \\tfrac12 N(\\mu_1,1) +
    \\tfrac12 N(\\mu_2,1)`, 20 draws from :math:`N(-2,1)` and 20 from :math:`N(2,1)`. Hard:
    two symmetric modes of equal mass; a one-mode proposal misses :math:`\\log 2`.
    Reference: 2-D composite Gauss–Legendre over :math:`[-8, 8]^2`.
``student_t_unknown_nu`` (dim 3)
    :math:`\\mu\\sim N(0,10^2)`, :math:`\\sigma\\sim\\text{HalfNormal}(5)`,
    :math:`\\nu\\sim\\text{Gamma}(2, 0.1)` (Juárez & Steel 2010),
    :math:`y_i\\sim t_\\nu(\\mu,\\sigma)`, 40 draws from :math:`t_4`. Hard: skewed, heavy
    right tail in :math:`\\log\\nu` (the likelihood flattens as the t nears a normal).
    Reference: 3-D tensor Gauss–Legendre in :math:`(\\mu,\\log\\sigma,\\log\\nu)` over a box
    from the mode and Hessian (:math:`\\pm10` sd), widened until the log integrand on
    every face is 40 below its peak.
``beta_binomial`` (dim 10)
    :math:`p_j\\sim\\text{Beta}(\\tfrac12,\\tfrac12)`, :math:`k_j\\sim\\text{Bin}(n_j,p_j)`,
    ten groups, three with :math:`k_j\\in\\{0,n_j\\}`. Hard: bounded parameters, posteriors
    piled against the boundary (skewed, exponential tails in logit space). Closed form
    :math:`\\prod_j \\binom{n_j}{k_j} B(a+k_j, b+n_j-k_j)/B(a,b)`.
``logistic_regression_d50`` (dim 50)
    :math:`\\theta\\sim N(0, I_{50})`, :math:`y_t\\sim\\text{Bernoulli}(\\sigma(\\theta^\\top
    x_t))`, 400 rows, an intercept and 49 standard-normal features. Hard: dimension (the
    Laplace-t importance weights have relative variance ~6 per draw). Reference: long
    importance sampling with a Student-t proposal moment-matched to the posterior by a
    Laplace-t pilot run (relative variance 0.70), checked by the Laplace t itself
    (``benchmarks/reference_evidence.py``).
``pima_768`` (dim 8)
    :func:`models.pima.logistic_regression` on all 768 rows (Neufeld et al. 2014,
    App. G). Hard: expensive likelihood (768 rows per evaluation). Reference: long
    Laplace-t importance sampling (same script), in ``models.pima.REFERENCE_LOG_Z[768]``.

``hierarchical_normal_100`` (dim 102)
    The centred eight-schools model at scale: :math:`\\mu\\sim N(0,5^2)`,
    :math:`\\tau\\sim\\text{HalfCauchy}(5)`, :math:`\\theta_j\\sim N(\\mu,\\tau^2)`,
    :math:`y_j\\sim N(\\theta_j, s_j^2)`, 100 groups with :math:`s_j\\in(0.5, 2.5)` (data drawn
    with :math:`\\tau = 0.6`, small against :math:`s_j`). Hard: a funnel in 102 dimensions.
    Reference: :math:`\\theta` integrates out (:math:`y_j\\mid\\mu,\\tau\\sim N(\\mu, s_j^2+\\tau^2)`),
    then :math:`\\mu` (Gaussian), then 1-D QUADPACK over :math:`u=\\log\\tau` on
    :math:`(-\\infty,\\infty)`, checked by Gauss–Legendre in the HalfCauchy CDF and (tests) by a
    2-D quadrature over :math:`(\\mu, \\log\\tau)` that does not integrate :math:`\\mu` analytically.
``hierarchical_logistic_50`` (dim 53)
    :math:`\\mu_a\\sim N(0,1.5^2)`, :math:`\\sigma_a\\sim\\text{HalfNormal}(1)`,
    :math:`a_g\\sim N(\\mu_a,\\sigma_a^2)` for 50 groups, :math:`\\beta\\sim N(0,1)`,
    :math:`y_i\\sim\\text{Bernoulli}(\\sigma(a_{g(i)}+\\beta x_i))`, ten rows per group, a binary
    covariate :math:`x_i`. Hard: a centred hierarchy (funnel in :math:`\\sigma_a`) with a
    non-Gaussian likelihood and weak per-group information. Reference: the groups are independent
    given :math:`(\\mu_a,\\sigma_a,\\beta)`, and a group's likelihood depends on its data through
    four counts, so each :math:`\\int N(a;\\mu_a,\\sigma_a^2)\\prod_i p(y_i\\mid a,\\beta)\\,da` is an
    adaptive Gauss–Hermite rule centred at the integrand's mode with its Laplace scale (Liu &
    Pierce 1994; 20 nodes), and the remaining 3-D integral over :math:`(\\mu_a,\\sigma_a,\\beta)` is
    a tensor Gauss–Legendre rule (2 panels x 32 nodes per axis) over a box from the mode and
    Hessian (:math:`\\sigma_a` from 0),
    widened until the log integrand on every other face is 40 below its peak; checked by finer
    rules, more Hermite nodes, a wider box, and per-group ``scipy.integrate.quad`` (tests). A long
    ``estimate_evidence`` run is reported beside it by ``benchmarks.reference_evidence``.

Data are fixed: the eight-schools data and the Beta–binomial counts are written below;
the other data sets were drawn once by ``python -m benchmarks.reference_evidence
--write-data`` (streams ``numpy.random.default_rng([20141010, k])``, values rounded to 6
decimals) and are read from ``models/data/evidence_suite_*.csv``.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Callable, NamedTuple

import numpy as np
from scipy import integrate, optimize, special, stats

__all__ = [
    "SuiteModel", "SUITE", "REFERENCES", "load_data", "conjugate", "eight_schools_centred",
    "mixture_label_switching", "student_t_unknown_nu", "beta_binomial",
    "logistic_regression_d50", "logistic_d50_model", "pima_768", "conjugate_log_z", "beta_binomial_log_z",
    "eight_schools_log_marginal", "eight_schools_log_z", "mixture_log_z", "student_t_box",
    "student_t_log_z", "log_tensor_quadrature", "LOG_JOINTS", "hierarchical_normal_100", "hierarchical_logistic_50",
    "normal_hierarchy_log_marginal", "hier_normal_log_z", "hier_logistic_counts", "hier_logistic_group_log_lik",
    "hier_logistic_log_marginal", "hier_logistic_log_integrand", "hier_logistic_box", "hier_logistic_log_z",
]

EIGHT_SCHOOLS_Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
EIGHT_SCHOOLS_SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
EIGHT_SCHOOLS_MU_SD, EIGHT_SCHOOLS_TAU_BETA = 5.0, 5.0
CONJUGATE_TAU, CONJUGATE_SIGMA = 1.0, 0.5
BETA_BINOMIAL_A = BETA_BINOMIAL_B = 0.5
BETA_BINOMIAL_N = np.array([5, 12, 20, 8, 30, 15, 3, 25, 10, 40])
BETA_BINOMIAL_K = np.array([0, 3, 20, 6, 11, 1, 3, 24, 5, 17])
HIER_NORMAL_MU_SD, HIER_NORMAL_TAU_BETA = 5.0, 5.0
HIER_LOGISTIC_MU_SD, HIER_LOGISTIC_SIGMA_SD, HIER_LOGISTIC_BETA_SD, HIER_LOGISTIC_GROUPS = 1.5, 1.0, 1.0, 50
MIXTURE_HALF_WIDTH = 8.0
#: Drop (nats) below the peak that the log integrand must reach on the box faces.
BOX_DROP = 40.0
for _array in (EIGHT_SCHOOLS_Y, EIGHT_SCHOOLS_SIGMA, BETA_BINOMIAL_N, BETA_BINOMIAL_K):
    _array.flags.writeable = False  # the references are computed from these exact values
del _array

#: ``{name: (log Z, error)}`` of the numerically computed references (closed forms are
#: computed on the fly). Quadratures: the error is the largest difference between the
#: reference and its checks (refinement, wider box, second method), rounded up to 1e-12
#: (``hierarchical_logistic_50``: its checks agree to 5e-10, more Hermite nodes included; 1e-8 kept);
#: importance sampling: the Monte Carlo SE of two pooled runs (draws, seeds and command in
#: the ``benchmarks.reference_evidence`` docstring and ``benchmarks/results/reference_evidence.md``).
REFERENCES: dict[str, tuple[float, float]] = {
    "eight_schools_centred": (-31.311347352292785, 1e-12),
    "mixture_label_switching": (-89.32994935512212, 1e-12),
    "student_t_unknown_nu": (-78.2685782913269, 1e-12),
    "logistic_regression_d50": (-316.211762, 1.5e-04),
    "hierarchical_normal_100": (-204.81756069629148, 1e-12),
    "hierarchical_logistic_50": (-338.7511588282463, 1e-8),
}


class SuiteModel(NamedTuple):
    """One model of the suite and its reference log evidence.

    Attributes
    ----------
    name : str
        Key of the model in :data:`SUITE`.
    model : pymc.Model
        A fresh model (built on every call).
    log_z : float
        Reference :math:`\\log Z = \\log\\int p(\\theta)p(y\\mid\\theta)d\\theta`.
    log_z_se : float
        0.0 for a closed form, the numerical error bound of a quadrature, the Monte Carlo
        SE of a long importance-sampling run.
    method : str
        One line: how ``log_z`` was computed.
    dim : int
        Number of unconstrained parameters.
    """

    name: str
    model: object
    log_z: float
    log_z_se: float
    method: str
    dim: int


def load_data(name: str) -> np.ndarray:
    """Read ``models/data/evidence_suite_<name>.csv`` (header row skipped) as float64, 2-D."""
    names = ("conjugate", "mixture", "student_t", "logistic_d50", "hier_normal", "hier_logistic")
    if name not in names:
        raise ValueError(f"The 'name' parameter of load_data must be one of {names!r}. Got {name!r} instead.")
    return _read(name).copy()


@functools.lru_cache(maxsize=None)
def _read(name: str) -> np.ndarray:
    # Cached and read-only: the quadratures evaluate the log joints many times.
    with resources.files("models").joinpath(f"data/evidence_suite_{name}.csv").open("r", encoding="utf-8") as fh:
        data = np.loadtxt(fh, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    data.flags.writeable = False
    return data


# --- hand-written log joints, unconstrained coordinates, vectorised over leading axes -------
def _norm_logpdf(x, mu, sd):
    return -0.5 * ((x - mu) / sd) ** 2 - np.log(sd) - 0.5 * np.log(2.0 * np.pi)


def _log_half_cauchy(t, beta):
    return np.log(2.0 / (np.pi * beta)) - np.log1p((t / beta) ** 2)


def log_joint_conjugate(x):
    """:math:`\\log N(\\beta;0,\\tau^2 I) + \\log N(y; X\\beta, \\sigma^2 I)`, ``x = beta``."""
    data = _read("conjugate")
    X, y = data[:, :3], data[:, 3]
    prior = _norm_logpdf(x, 0.0, CONJUGATE_TAU).sum(-1)
    return prior + _norm_logpdf(y, np.asarray(x) @ X.T, CONJUGATE_SIGMA).sum(-1)


def log_joint_eight_schools(x):
    """Centred eight schools at ``x = (mu, log tau, theta_1..8)``, with the log-Jacobian ``log tau``."""
    x = np.asarray(x, dtype=float)
    mu, u, theta = x[..., 0], x[..., 1], x[..., 2:]
    tau = np.exp(u)
    out = _norm_logpdf(mu, 0.0, EIGHT_SCHOOLS_MU_SD) + _log_half_cauchy(tau, EIGHT_SCHOOLS_TAU_BETA) + u
    out = out + _norm_logpdf(theta, mu[..., None], tau[..., None]).sum(-1)
    return out + _norm_logpdf(EIGHT_SCHOOLS_Y, theta, EIGHT_SCHOOLS_SIGMA).sum(-1)


def eight_schools_log_marginal(tau):
    """:math:`\\log N(y; 0, D + s^2\\mathbf 1\\mathbf 1^\\top)`, :math:`D=\\mathrm{diag}(\\tau^2+\\sigma^2)`,
    :math:`s=5`.

    By the matrix determinant lemma and Sherman–Morrison, with :math:`a = 1 + s^2\\sum_j
    1/d_j`: :math:`\\log|\\Sigma| = \\sum_j\\log d_j + \\log a` and :math:`y^\\top\\Sigma^{-1}y
    = \\sum_j y_j^2/d_j - s^2(\\sum_j y_j/d_j)^2/a`. Vectorised over ``tau``.
    """
    d = np.asarray(tau, dtype=float)[..., None] ** 2 + EIGHT_SCHOOLS_SIGMA**2
    s2 = EIGHT_SCHOOLS_MU_SD**2
    a = 1.0 + s2 * np.sum(1.0 / d, -1)
    logdet = np.sum(np.log(d), -1) + np.log(a)
    quad = np.sum(EIGHT_SCHOOLS_Y**2 / d, -1) - s2 * np.sum(EIGHT_SCHOOLS_Y / d, -1) ** 2 / a
    return -0.5 * (EIGHT_SCHOOLS_Y.size * np.log(2.0 * np.pi) + logdet + quad)


def log_joint_mixture(x):
    """:math:`\\sum_k\\log N(\\mu_k;0,25) + \\sum_i\\log(\\tfrac12\\phi(y_i-\\mu_1)+\\tfrac12\\phi(y_i-\\mu_2))`."""
    x = np.asarray(x, dtype=float)
    y = _read("mixture")[:, 0]
    comp = _norm_logpdf(y, x[..., :, None], 1.0) + np.log(0.5)
    return _norm_logpdf(x, 0.0, 5.0).sum(-1) + np.logaddexp(comp[..., 0, :], comp[..., 1, :]).sum(-1)


def log_joint_student_t(x):
    """Student-t model at ``x = (mu, log sigma, log nu)``, log-Jacobians ``log sigma + log nu`` included."""
    x = np.asarray(x, dtype=float)
    mu, ls, ln = x[..., 0], x[..., 1], x[..., 2]
    sigma, nu = np.exp(ls), np.exp(ln)
    y = _read("student_t")[:, 0]
    prior = _norm_logpdf(mu, 0.0, 10.0) + np.log(2.0) + _norm_logpdf(sigma, 0.0, 5.0) + ls
    prior = prior + 2.0 * np.log(0.1) - special.gammaln(2.0) + ln - 0.1 * nu + ln
    const = special.gammaln(0.5 * (nu + 1.0)) - special.gammaln(0.5 * nu) - 0.5 * np.log(nu * np.pi) - ls
    z2 = ((y - mu[..., None]) / sigma[..., None]) ** 2
    lik = y.size * const - 0.5 * (nu + 1.0) * np.log1p(z2 / nu[..., None]).sum(-1)
    return prior + lik


def log_joint_beta_binomial(x):
    """Beta(a, b)–binomial groups at ``x = logit p``, log-Jacobian :math:`\\log p + \\log(1-p)`."""
    x = np.asarray(x, dtype=float)
    log_p, log_q = -np.logaddexp(0.0, -x), -np.logaddexp(0.0, x)
    a, b, n, k = BETA_BINOMIAL_A, BETA_BINOMIAL_B, BETA_BINOMIAL_N, BETA_BINOMIAL_K
    prior = a * log_p + b * log_q - special.betaln(a, b)
    log_choose = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    return (prior + log_choose + k * log_p + (n - k) * log_q).sum(-1)


def log_joint_hier_normal(x):
    """Centred 100-group normal hierarchy at ``x = (mu, log tau, theta_1..100)``, log-Jacobian ``log tau``."""
    x = np.asarray(x, dtype=float)
    data = _read("hier_normal")
    mu, u, theta = x[..., 0], x[..., 1], x[..., 2:]
    tau = np.exp(u)
    out = _norm_logpdf(mu, 0.0, HIER_NORMAL_MU_SD) + _log_half_cauchy(tau, HIER_NORMAL_TAU_BETA) + u
    out = out + _norm_logpdf(theta, mu[..., None], tau[..., None]).sum(-1)
    return out + _norm_logpdf(data[:, 0], theta, data[:, 1]).sum(-1)


def _log_sigmoid(t):
    return -np.logaddexp(0.0, -t)


def log_joint_hier_logistic(x):
    """Hierarchical logistic model at ``x = (mu_a, log sigma_a, a_1..50, beta)``, log-Jacobian ``log sigma_a``."""
    x = np.asarray(x, dtype=float)
    data = _read("hier_logistic")
    group, cov, y = data[:, 0].astype(np.int64), data[:, 1], data[:, 2]
    mu, u, a, beta = x[..., 0], x[..., 1], x[..., 2:-1], x[..., -1]
    sigma = np.exp(u)
    out = _norm_logpdf(mu, 0.0, HIER_LOGISTIC_MU_SD) + np.log(2.0) + _norm_logpdf(sigma, 0.0, HIER_LOGISTIC_SIGMA_SD)
    out = out + u + _norm_logpdf(beta, 0.0, HIER_LOGISTIC_BETA_SD)
    out = out + _norm_logpdf(a, mu[..., None], sigma[..., None]).sum(-1)
    eta = a[..., group] + beta[..., None] * cov
    return out + (y * _log_sigmoid(eta) + (1.0 - y) * _log_sigmoid(-eta)).sum(-1)


#: ``{name: (log joint, value-variable names in the order of x)}`` for the tests.
LOG_JOINTS = {
    "conjugate": (log_joint_conjugate, ("beta",)),
    "eight_schools_centred": (log_joint_eight_schools, ("mu", "tau_log__", "theta")),
    "mixture_label_switching": (log_joint_mixture, ("mu",)),
    "student_t_unknown_nu": (log_joint_student_t, ("mu", "sigma_log__", "nu_log__")),
    "beta_binomial": (log_joint_beta_binomial, ("p_logodds__",)),
    "hierarchical_normal_100": (log_joint_hier_normal, ("mu", "tau_log__", "theta")),
    "hierarchical_logistic_50": (log_joint_hier_logistic, ("mu_a", "sigma_a_log__", "a", "beta")),
}


# --- closed forms -------------------------------------------------------------------------
def conjugate_log_z() -> float:
    """:math:`\\log N(y; 0, \\sigma^2 I + \\tau^2 XX^\\top)` (Bishop 2006, Eq. 3.86)."""
    data = _read("conjugate")
    X, y = data[:, :3], data[:, 3]
    cov = CONJUGATE_SIGMA**2 * np.eye(y.size) + CONJUGATE_TAU**2 * X @ X.T
    return float(stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y))


def beta_binomial_log_z() -> float:
    """:math:`\\sum_j \\log\\binom{n_j}{k_j} + \\log B(a+k_j, b+n_j-k_j) - \\log B(a,b)`."""
    a, b, n, k = BETA_BINOMIAL_A, BETA_BINOMIAL_B, BETA_BINOMIAL_N, BETA_BINOMIAL_K
    log_choose = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
    return float(np.sum(log_choose + special.betaln(a + k, b + n - k) - special.betaln(a, b)))


# --- quadrature ---------------------------------------------------------------------------
def _gauss_legendre(lo: float, hi: float, nodes: int, panels: int = 1):
    """Composite Gauss–Legendre rule on ``[lo, hi]``: ``(points, log weights)``."""
    t, w = np.polynomial.legendre.leggauss(nodes)
    edges = np.linspace(lo, hi, panels + 1)
    half = 0.5 * np.diff(edges)[:, None]
    points = (0.5 * (edges[:-1] + edges[1:]))[:, None] + half * t
    return points.ravel(), np.log((half * w).ravel())


def log_tensor_quadrature(log_f, lows, highs, nodes: int, panels: int = 1, chunk: int = 200_000) -> float:
    """:math:`\\log\\int_{\\text{box}} e^{f(x)}dx` by a tensor composite Gauss–Legendre rule.

    :math:`\\log\\sum_{i} W_i e^{f(x_i)}` over the product grid (``panels`` panels of
    ``nodes`` points per axis, Davis & Rabinowitz 1984, Sec. 2.7 and 5.6), accumulated
    with ``logsumexp`` in chunks of ``chunk`` points. ``log_f`` maps ``(m, d)`` to ``(m,)``.
    """
    rules = [_gauss_legendre(lo, hi, nodes, panels) for lo, hi in zip(lows, highs)]
    grids = np.meshgrid(*[r[0] for r in rules], indexing="ij")
    lw = sum(np.meshgrid(*[r[1] for r in rules], indexing="ij"))
    points = np.stack([g.ravel() for g in grids], axis=-1)
    lw = lw.ravel()
    parts = [special.logsumexp(log_f(points[i:i + chunk]) + lw[i:i + chunk]) for i in range(0, lw.size, chunk)]
    return float(special.logsumexp(parts))


def eight_schools_log_z(method: str = "quad", nodes: int = 64, panels: int = 8) -> tuple[float, float]:
    """:math:`\\log\\int_0^\\infty \\text{HalfCauchy}(\\tau;5)\\, p(y\\mid\\tau)\\,d\\tau`: ``(log Z, error estimate)``.

    ``"quad"``: QUADPACK on :math:`(0,\\infty)` (``scipy.integrate.quad``, ``epsrel=1e-13``;
    error = its relative error estimate). ``"gauss-legendre"``: with :math:`\\tau = 5
    \\tan(\\pi s/2)` the HalfCauchy prior is uniform on :math:`s\\in(0,1)`, so :math:`Z =
    \\int_0^1 p(y\\mid\\tau(s))\\,ds`, a smooth bounded integrand, by a composite
    Gauss–Legendre rule (error reported as NaN: compare two rules).
    """
    shift = float(eight_schools_log_marginal(0.0))
    if method == "quad":
        def integrand(t):
            return np.exp(_log_half_cauchy(t, EIGHT_SCHOOLS_TAU_BETA) + eight_schools_log_marginal(t) - shift)

        z, err = integrate.quad(integrand, 0.0, np.inf, epsabs=0.0, epsrel=1e-13, limit=500)
        return float(np.log(z) + shift), float(err / z)
    if method == "gauss-legendre":
        s, lw = _gauss_legendre(0.0, 1.0, nodes, panels)
        tau = EIGHT_SCHOOLS_TAU_BETA * np.tan(0.5 * np.pi * s)
        return float(special.logsumexp(eight_schools_log_marginal(tau) + lw)), float("nan")
    raise ValueError(
        "The 'method' parameter of eight_schools_log_z must be 'quad' or 'gauss-legendre'. "
        f"Got {method!r} instead."
    )


def mixture_log_z(nodes: int = 16, panels: int = 32, half_width: float = MIXTURE_HALF_WIDTH) -> float:
    """:math:`\\log\\iint e^{\\log p(\\mu, y)}d\\mu` over :math:`[-h, h]^2` by :func:`log_tensor_quadrature`."""
    return log_tensor_quadrature(log_joint_mixture, [-half_width] * 2, [half_width] * 2, nodes, panels)


def _mode_and_sd(log_f, x0):
    """Mode of ``log_f`` (BFGS) and the sd's of its Laplace fit (central-difference Hessian)."""
    res = optimize.minimize(lambda x: -log_f(x), x0, method="BFGS", options={"gtol": 1e-9})
    mode, h, d = res.x, 1e-4, len(x0)
    hess = np.empty((d, d))
    for i in range(d):
        for j in range(d):
            e_i, e_j = np.eye(d)[i] * h, np.eye(d)[j] * h
            hess[i, j] = (log_f(mode + e_i + e_j) - log_f(mode + e_i - e_j)
                          - log_f(mode - e_i + e_j) + log_f(mode - e_i - e_j)) / (4 * h * h)
    return mode, np.sqrt(np.diag(np.linalg.inv(-0.5 * (hess + hess.T))))


def _face_max(log_f, lows, highs, axis, value, nodes=24):
    others = [k for k in range(len(lows)) if k != axis]
    grids = np.meshgrid(*[np.linspace(lows[k], highs[k], nodes) for k in others], indexing="ij")
    points = np.empty((grids[0].size, len(lows)))
    for k, g in zip(others, grids):
        points[:, k] = g.ravel()
    points[:, axis] = value
    return float(np.max(log_f(points)))


def student_t_box(width: float = 10.0, drop: float = BOX_DROP) -> tuple[np.ndarray, np.ndarray, float]:
    """Integration box of the Student-t model: ``(lows, highs, largest face value - peak)``.

    Starts at mode :math:`\\pm` ``width`` Laplace sd's and moves each face out by one sd
    until the log integrand on a 24 x 24 grid of that face is ``drop`` nats below the peak.
    """
    y = _read("student_t")[:, 0]
    mode, sd = _mode_and_sd(log_joint_student_t, np.array([np.median(y), np.log(np.std(y)), np.log(10.0)]))
    peak = float(log_joint_student_t(mode))
    lows, highs = mode - width * sd, mode + width * sd
    worst = -np.inf
    for _ in range(200):
        moved = False
        for axis in range(3):
            for bounds, step in ((lows, -1.0), (highs, 1.0)):
                value = _face_max(log_joint_student_t, lows, highs, axis, bounds[axis]) - peak
                if value > -drop:
                    bounds[axis] += step * sd[axis]
                    moved = True
        if not moved:
            break
    for axis in range(3):
        for bounds in (lows, highs):
            worst = max(worst, _face_max(log_joint_student_t, lows, highs, axis, bounds[axis]) - peak)
    return lows, highs, worst


def student_t_log_z(nodes: int = 96, panels: int = 1, box=None) -> float:
    """:math:`\\log\\int e^{\\log p(x, y)}dx` over :func:`student_t_box` by :func:`log_tensor_quadrature`."""
    lows, highs = (student_t_box()[:2] if box is None else box)
    return log_tensor_quadrature(log_joint_student_t, lows, highs, nodes, panels)


# --- the two hierarchies -------------------------------------------------------------------
def normal_hierarchy_log_marginal(tau, y, sd, mu_sd):
    """:math:`\\log p(y\\mid\\tau)` of :math:`y_j\\sim N(\\mu, s_j^2+\\tau^2)`, :math:`\\mu\\sim N(0, m^2)`.

    With :math:`w_j = 1/(s_j^2+\\tau^2)`, :math:`W=\\sum_j w_j`, :math:`b=\\sum_j w_j y_j` and
    :math:`P = 1/m^2 + W` (the posterior precision of :math:`\\mu`), completing the square in
    :math:`\\mu`: :math:`\\log p(y\\mid\\tau) = \\tfrac12\\sum_j\\log(w_j/2\\pi) - \\tfrac12\\sum_j w_j y_j^2
    - \\log m - \\tfrac12\\log P + \\tfrac12 b^2/P`. Vectorised over ``tau``.
    """
    w = 1.0 / (np.asarray(tau, dtype=float)[..., None] ** 2 + np.asarray(sd) ** 2)
    precision = 1.0 / mu_sd**2 + w.sum(-1)
    b = (w * y).sum(-1)
    return (0.5 * np.sum(np.log(w / (2.0 * np.pi)), -1) - 0.5 * (w * y**2).sum(-1) - np.log(mu_sd)
            - 0.5 * np.log(precision) + 0.5 * b**2 / precision)


def hier_normal_log_z(method: str = "quad", nodes: int = 64, panels: int = 16) -> tuple[float, float]:
    """:math:`\\log Z` of ``hierarchical_normal_100``: ``(log Z, error estimate)``.

    ``"quad"``: QUADPACK (``qagi``) over :math:`u = \\log\\tau\\in(-\\infty,\\infty)` of
    :math:`\\text{HalfCauchy}(e^u;5)\\,e^u\\,p(y\\mid e^u)` (``epsrel=1e-13``; error = its relative
    error estimate), :math:`p(y\\mid\\tau)` from :func:`normal_hierarchy_log_marginal`.
    ``"gauss-legendre"``: :math:`Z=\\int_0^1 p(y\\mid\\tau(s))ds` with :math:`\\tau = 5\\tan(\\pi s/2)`
    (uniform HalfCauchy CDF), a composite rule (error NaN: compare two rules).
    """
    data = _read("hier_normal")
    y, sd = data[:, 0], data[:, 1]

    def log_m(tau):
        return normal_hierarchy_log_marginal(tau, y, sd, HIER_NORMAL_MU_SD)

    if method == "quad":
        grid = np.linspace(-12.0, 6.0, 1801)
        log_g = _log_half_cauchy(np.exp(grid), HIER_NORMAL_TAU_BETA) + grid + log_m(np.exp(grid))
        shift = float(np.max(log_g))
        peak = float(grid[np.argmax(log_g)])

        def integrand(u):
            with np.errstate(over="ignore", divide="ignore"):  # e^u overflows far in the right tail: 0
                return np.exp(_log_half_cauchy(np.exp(u), HIER_NORMAL_TAU_BETA) + u + log_m(np.exp(u)) - shift)

        # Split at the peak so that QUADPACK's first subdivision sees it on both half-lines.
        opts = dict(epsabs=0.0, epsrel=1e-13, limit=500)
        left, err_l = integrate.quad(integrand, -np.inf, peak, **opts)
        right, err_r = integrate.quad(integrand, peak, np.inf, **opts)
        z = left + right
        return float(np.log(z) + shift), float((err_l + err_r) / z)
    if method == "gauss-legendre":
        s, lw = _gauss_legendre(0.0, 1.0, nodes, panels)
        tau = HIER_NORMAL_TAU_BETA * np.tan(0.5 * np.pi * s)
        return float(special.logsumexp(log_m(tau) + lw)), float("nan")
    raise ValueError(
        "The 'method' parameter of hier_normal_log_z must be 'quad' or 'gauss-legendre'. "
        f"Got {method!r} instead."
    )


@functools.lru_cache(maxsize=None)
def hier_logistic_counts() -> np.ndarray:
    """Per-group counts ``(n0, k0, n1, k1)`` (shape ``(50, 4)``): rows with ``x = 0`` and their
    successes, rows with ``x = 1`` and theirs. A group's likelihood depends on its data only through them.
    """
    data = _read("hier_logistic")
    group, x, y = data[:, 0].astype(np.int64), data[:, 1], data[:, 2]
    out = np.zeros((HIER_LOGISTIC_GROUPS, 4))
    for col, (xv, yv) in enumerate(((0.0, None), (0.0, 1.0), (1.0, None), (1.0, 1.0))):
        rows = (x == xv) if yv is None else (x == xv) & (y == yv)
        out[:, col] = np.bincount(group[rows], minlength=HIER_LOGISTIC_GROUPS)
    out.flags.writeable = False
    return out


def _hier_logistic_derivatives(a, beta, counts):
    """First and second derivative in ``a`` of :func:`hier_logistic_group_log_lik`."""
    n0, k0, n1, k1 = np.moveaxis(counts, -1, 0)
    p0, p1 = special.expit(a), special.expit(a + beta)
    return k0 - n0 * p0 + k1 - n1 * p1, -n0 * p0 * (1.0 - p0) - n1 * p1 * (1.0 - p1)


def hier_logistic_group_log_lik(a, beta, counts=None):
    """:math:`\\ell_g(a,\\beta) = k_0\\log\\sigma(a) + (n_0-k_0)\\log\\sigma(-a) + k_1\\log\\sigma(a+\\beta)
    + (n_1-k_1)\\log\\sigma(-a-\\beta)`; ``a`` broadcasts
    against the groups on the last axis (or the axis of ``counts``, shape ``(..., 4)``), ``beta`` against ``a``.
    """
    n0, k0, n1, k1 = np.moveaxis(hier_logistic_counts() if counts is None else counts, -1, 0)
    e1 = a + beta
    # log sigmoid(-t) = log sigmoid(t) - t: one softplus per term.
    return n0 * _log_sigmoid(a) - (n0 - k0) * a + n1 * _log_sigmoid(e1) - (n1 - k1) * e1


def hier_logistic_log_marginal(mu, sigma, beta, nodes: int = 20, newton: int = 8):
    """:math:`\\sum_g\\log\\int N(a;\\mu,\\sigma^2)e^{\\ell_g(a,\\beta)}da` by adaptive Gauss–Hermite.

    Per group, :math:`f(a) = \\log N(a;\\mu,\\sigma^2)+\\ell_g(a,\\beta)` is concave; ``newton``
    damped Newton steps from :math:`a=\\mu` find its mode :math:`\\hat a`, :math:`h = -f''(\\hat a)`,
    and with Hermite nodes and weights :math:`(t_k, w_k)`,
    :math:`\\int e^{f}da \\approx \\sqrt{2/h}\\sum_k w_k e^{f(\\hat a+t_k\\sqrt{2/h}) + t_k^2}`
    (Liu & Pierce 1994), exact for a Gaussian :math:`e^f` and accurate for smooth log-concave
    ones. ``mu``, ``sigma`` and ``beta`` are 1-D arrays of one length (or scalars).
    """
    mu, sigma, beta = (np.atleast_1d(np.asarray(v, dtype=float))[:, None] for v in (mu, sigma, beta))
    # Groups with the same counts have the same integral: each distinct one once, times its multiplicity.
    counts, multiplicity = np.unique(hier_logistic_counts(), axis=0, return_counts=True)
    a = np.broadcast_to(mu, (mu.shape[0], counts.shape[0])).copy()
    for _ in range(newton):
        d1, d2 = _hier_logistic_derivatives(a, beta, counts)
        g, h = d1 - (a - mu) / sigma**2, -d2 + 1.0 / sigma**2
        limit = 1.0 + 3.0 / np.sqrt(h)
        a = a + np.clip(g / h, -limit, limit)
    h = -_hier_logistic_derivatives(a, beta, counts)[1] + 1.0 / sigma**2
    scale = np.sqrt(2.0 / h)
    t, w = np.polynomial.hermite.hermgauss(nodes)
    points = a[..., None] + scale[..., None] * t
    f = hier_logistic_group_log_lik(points, beta[..., None], counts[:, None, :])
    f = f + _norm_logpdf(points, mu[..., None], sigma[..., None])
    log_int = np.log(scale) + special.logsumexp(f + t**2 + np.log(w), axis=-1)
    return log_int @ multiplicity


def hier_logistic_log_integrand(x, nodes: int = 20):
    """:math:`\\log[N(\\mu;0,1.5^2)\\,\\text{HalfNormal}(\\sigma;1)\\,N(\\beta;0,1)\\,p(y\\mid\\mu,\\sigma,\\beta)]`
    at ``x = (mu, sigma, beta)`` (rows), :math:`-\\infty` for :math:`\\sigma \\le 0`.
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    mu, sigma, beta = x[:, 0], x[:, 1], x[:, 2]
    out = np.full(x.shape[0], -np.inf)
    ok = sigma > 0
    prior = (_norm_logpdf(mu, 0.0, HIER_LOGISTIC_MU_SD) + np.log(2.0) + _norm_logpdf(sigma, 0.0, HIER_LOGISTIC_SIGMA_SD)
             + _norm_logpdf(beta, 0.0, HIER_LOGISTIC_BETA_SD))
    if ok.any():
        out[ok] = prior[ok] + hier_logistic_log_marginal(mu[ok], sigma[ok], beta[ok], nodes)
    return out


def hier_logistic_box(width: float = 10.0, drop: float = BOX_DROP) -> tuple[np.ndarray, np.ndarray, float]:
    """Integration box of ``hierarchical_logistic_50`` in :math:`(\\mu_a,\\sigma_a,\\beta)`:
    ``(lows, highs, largest face value - peak)``, :math:`\\sigma_a` from 0.

    The mode and Laplace sd's are found in :math:`(\\mu_a, \\log\\sigma_a, \\beta)` (the sd of
    :math:`\\sigma_a` is :math:`\\hat\\sigma_a` times that of :math:`\\log\\sigma_a`); the box starts
    at mode :math:`\\pm` ``width`` sd's (:math:`\\sigma_a\\ge0`) and every face but
    :math:`\\sigma_a = 0` moves out by one sd until the log integrand on a 24 x 24 grid of it is
    ``drop`` nats below the peak. The face :math:`\\sigma_a=0` is the domain's edge.
    """
    def log_f(x):
        x = np.atleast_2d(x)
        return hier_logistic_log_integrand(np.column_stack([x[:, 0], np.exp(x[:, 1]), x[:, 2]])) + x[:, 1]

    mode_t, sd_t = _mode_and_sd(lambda x: float(log_f(x)[0]), np.array([0.0, np.log(0.5), 0.0]))
    mode = np.array([mode_t[0], np.exp(mode_t[1]), mode_t[2]])
    sd = np.array([sd_t[0], mode[1] * sd_t[1], sd_t[2]])
    peak = float(hier_logistic_log_integrand(mode)[0])
    lows, highs = mode - width * sd, mode + width * sd
    lows[1] = 0.0
    faces = [(axis, bounds, step) for axis in range(3) for bounds, step in ((lows, -1.0), (highs, 1.0))
             if not (axis == 1 and step < 0)]
    for _ in range(200):
        moved = False
        for axis, bounds, step in faces:
            if _face_max(hier_logistic_log_integrand, lows, highs, axis, bounds[axis]) - peak > -drop:
                bounds[axis] += step * sd[axis]
                moved = True
        if not moved:
            break
    worst = max(_face_max(hier_logistic_log_integrand, lows, highs, axis, bounds[axis]) - peak
                for axis, bounds, _ in faces)
    return lows, highs, worst


def hier_logistic_log_z(nodes: int = 48, panels: int = 1, hermite: int = 20, box=None) -> float:
    """:math:`\\log Z` of ``hierarchical_logistic_50``: :func:`log_tensor_quadrature` of
    :func:`hier_logistic_log_integrand` (``hermite`` nodes per group) over :func:`hier_logistic_box`.
    """
    lows, highs = (hier_logistic_box()[:2] if box is None else box)
    return log_tensor_quadrature(lambda x: hier_logistic_log_integrand(x, hermite), lows, highs, nodes, panels,
                                 chunk=4_000)


# --- builders -----------------------------------------------------------------------------
# PyTensor stores a Python float literal that float32 represents exactly (0.5, 5.0) as a
# float32 constant and folds its log in float32 (errors ~1e-9 nats per term); NumPy float64
# scalars keep every constant, hence the model's density, in double precision.
_F = np.float64


def conjugate() -> SuiteModel:
    """Bayesian linear regression with known noise: closed-form evidence (see the module docstring)."""
    import pymc as pm

    data = _read("conjugate")
    X, y = data[:, :3], data[:, 3]
    with pm.Model() as model:
        beta = pm.Normal("beta", _F(0.0), _F(CONJUGATE_TAU), shape=3)
        pm.Normal("y", _const_dot(X, beta), _F(CONJUGATE_SIGMA), observed=y)
    return SuiteModel("conjugate", model, conjugate_log_z(), 0.0,
                      "closed form log N(y; 0, sigma^2 I + tau^2 X X^T)", 3)


def eight_schools_centred() -> SuiteModel:
    """Centred eight-schools model (Rubin 1981): the funnel, no interior posterior mode."""
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", _F(0.0), _F(EIGHT_SCHOOLS_MU_SD))
        tau = pm.HalfCauchy("tau", _F(EIGHT_SCHOOLS_TAU_BETA))
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, EIGHT_SCHOOLS_SIGMA, observed=EIGHT_SCHOOLS_Y)
    log_z, err = REFERENCES["eight_schools_centred"]
    return SuiteModel("eight_schools_centred", model, log_z, err,
                      "mu, theta integrated analytically; 1-D QUADPACK over tau, checked by Gauss-Legendre", 10)


def mixture_label_switching() -> SuiteModel:
    """Two-component normal mixture with unordered means: two symmetric modes."""
    import pymc as pm

    y = _read("mixture")[:, 0]
    with pm.Model() as model:
        mu = pm.Normal("mu", _F(0.0), _F(5.0), shape=2)
        pm.NormalMixture("y", w=np.array([0.5, 0.5]), mu=mu, sigma=_F(1.0), observed=y)
    log_z, err = REFERENCES["mixture_label_switching"]
    return SuiteModel("mixture_label_switching", model, log_z, err,
                      f"2-D composite Gauss-Legendre on [-{MIXTURE_HALF_WIDTH:g}, {MIXTURE_HALF_WIDTH:g}]^2", 2)


def student_t_unknown_nu() -> SuiteModel:
    """Student-t likelihood with unknown degrees of freedom (Juárez & Steel 2010 prior on nu)."""
    import pymc as pm

    y = _read("student_t")[:, 0]
    with pm.Model() as model:
        mu = pm.Normal("mu", _F(0.0), _F(10.0))
        sigma = pm.HalfNormal("sigma", _F(5.0))
        nu = pm.Gamma("nu", alpha=_F(2.0), beta=_F(0.1))
        pm.StudentT("y", nu=nu, mu=mu, sigma=sigma, observed=y)
    log_z, err = REFERENCES["student_t_unknown_nu"]
    return SuiteModel("student_t_unknown_nu", model, log_z, err,
                      "3-D tensor Gauss-Legendre in (mu, log sigma, log nu) over a box 40 nats deep", 3)


def beta_binomial() -> SuiteModel:
    """Ten independent Beta(1/2, 1/2)-binomial groups, some at k = 0 or k = n: closed form."""
    import pymc as pm

    with pm.Model() as model:
        p = pm.Beta("p", _F(BETA_BINOMIAL_A), _F(BETA_BINOMIAL_B), shape=BETA_BINOMIAL_N.size)
        pm.Binomial("k", n=BETA_BINOMIAL_N, p=p, observed=BETA_BINOMIAL_K)
    return SuiteModel("beta_binomial", model, beta_binomial_log_z(), 0.0,
                      "closed form: product of Beta-binomial marginals", int(BETA_BINOMIAL_N.size))


def logistic_d50_model():
    """The ``logistic_regression_d50`` model alone: :func:`models.pima.logistic_regression` with an intercept column."""
    from models.pima import logistic_regression

    data = _read("logistic_d50")
    X = np.column_stack([np.ones(data.shape[0]), data[:, :-1]])
    return logistic_regression(X, data[:, -1].astype(np.int64), prior_var=1.0)


def logistic_regression_d50() -> SuiteModel:
    """Logistic regression, 50 coefficients (intercept first), 400 rows, prior N(0, I)."""
    log_z, se = REFERENCES["logistic_regression_d50"]
    return SuiteModel("logistic_regression_d50", logistic_d50_model(), log_z, se,
                      "moment-matched Student-t importance sampling (df 20, 2 x 1.5e7 draws), two seeds pooled", 50)


def pima_768() -> SuiteModel:
    """:func:`models.pima.logistic_regression` on all 768 rows; reference ``REFERENCE_LOG_Z[768]``."""
    from models import pima

    log_z, se = pima.REFERENCE_LOG_Z[768]
    return SuiteModel("pima_768", pima.logistic_regression(*pima.load_data(768)), log_z, se,
                      "Laplace-t importance sampling (df 20, covariance x 1.1, 2 x 1e7 draws), two seeds pooled", 8)


def hierarchical_normal_100() -> SuiteModel:
    """Centred normal hierarchy with 100 groups: a 102-dimensional funnel, reference by 1-D quadrature."""
    import pymc as pm

    data = _read("hier_normal")
    with pm.Model() as model:
        mu = pm.Normal("mu", _F(0.0), _F(HIER_NORMAL_MU_SD))
        tau = pm.HalfCauchy("tau", _F(HIER_NORMAL_TAU_BETA))
        theta = pm.Normal("theta", mu, tau, shape=data.shape[0])
        pm.Normal("y", theta, np.array(data[:, 1]), observed=np.array(data[:, 0]))
    log_z, err = REFERENCES["hierarchical_normal_100"]
    return SuiteModel("hierarchical_normal_100", model, log_z, err,
                      "theta, mu integrated analytically; 1-D QUADPACK over log tau, checked by Gauss-Legendre",
                      data.shape[0] + 2)


def hierarchical_logistic_50() -> SuiteModel:
    """Centred hierarchical logistic regression: 50 group intercepts, one slope, 500 Bernoulli rows."""
    import pymc as pm

    data = _read("hier_logistic")
    group = data[:, 0].astype(np.int64)
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", _F(0.0), _F(HIER_LOGISTIC_MU_SD))
        sigma_a = pm.HalfNormal("sigma_a", _F(HIER_LOGISTIC_SIGMA_SD))
        a = pm.Normal("a", mu_a, sigma_a, shape=HIER_LOGISTIC_GROUPS)
        beta = pm.Normal("beta", _F(0.0), _F(HIER_LOGISTIC_BETA_SD))
        pm.Bernoulli("y", logit_p=a[group] + beta * np.array(data[:, 1]), observed=data[:, 2].astype(np.int64))
    log_z, err = REFERENCES["hierarchical_logistic_50"]
    return SuiteModel("hierarchical_logistic_50", model, log_z, err,
                      "groups by adaptive Gauss-Hermite (20 nodes); 3-D Gauss-Legendre (64 per axis) over "
                      "(mu_a, sigma_a, beta)",
                      HIER_LOGISTIC_GROUPS + 3)


def _const_dot(X, beta):
    """``X @ beta`` with ``X`` a constant tensor (folded into the compiled log density)."""
    import pytensor.tensor as pt

    return pt.dot(pt.as_tensor_variable(np.asarray(X)), beta)


#: The suite in a fixed order: ``{name: builder}``.
SUITE: dict[str, Callable[[], SuiteModel]] = {
    "conjugate": conjugate,
    "eight_schools_centred": eight_schools_centred,
    "mixture_label_switching": mixture_label_switching,
    "student_t_unknown_nu": student_t_unknown_nu,
    "beta_binomial": beta_binomial,
    "logistic_regression_d50": logistic_regression_d50,
    "pima_768": pima_768,
    "hierarchical_normal_100": hierarchical_normal_100,
    "hierarchical_logistic_50": hierarchical_logistic_50,
}
