"""models.evidence_suite: the models build, the references integrate PyMC's own density, and
every reference is reproduced by an independent computation (quadrature, a second method,
or a short importance-sampling run with another proposal and seed)."""

import functools
import hashlib
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, special, stats

import models.evidence_suite as es
from models import pima
from tests.tolerance import assert_within_se

#: SHA-256 of the saved data sets: the references are computed from these exact bytes.
DATA_SHA256 = {
    "conjugate": "5801eb673ff5ef5cc63722d78c9cb74e228eec5a15f96e574dee657892928b20",
    "mixture": "9d7016aa99ec67192f169b323d8e42d8cb1d615894f122d9877614a3c3b3e90b",
    "student_t": "5443fbb2b14d628ef10c04aac904fb7e4bec8835552fb47e054621450419e529",
    "logistic_d50": "e0dd64348af4dc5cdee78ee3d74df082e3de5fc3f764aa7eb4a8055e70ff209d",
    "hier_normal": "a959fa95fed671cef30af4d04aa043f9565d8fd76648ace42849172d10055515",
    "hier_logistic": "65c821eb9da1f4d5b194911aabda67c719146154892d5d776f4599f3e26760f0",
}


def _point(model, names, x):
    """Split a flat unconstrained vector into the dict ``compile_logp`` takes (``names`` order)."""
    init = model.initial_point()
    point, start = {}, 0
    for name in names:
        size = int(np.size(init[name]))
        point[name] = x[start:start + size].reshape(np.shape(init[name]))
        start += size
    return point


def test_suite_order_and_fields():
    from pmcbandit.arms.evidence.model_density import check_model

    assert list(es.SUITE) == [
        "conjugate", "eight_schools_centred", "mixture_label_switching", "student_t_unknown_nu",
        "beta_binomial", "logistic_regression_d50", "pima_768", "hierarchical_normal_100",
        "hierarchical_logistic_50",
    ]
    for name, build in es.SUITE.items():
        suite_model = build()
        assert isinstance(suite_model, es.SuiteModel) and suite_model.name == name
        assert np.isfinite(suite_model.log_z) and suite_model.log_z_se >= 0.0
        assert isinstance(suite_model.method, str) and suite_model.method
        model = suite_model.model
        check_model(model, "test")  # continuous free variables, proper priors, fixed shapes
        point = model.initial_point()
        assert sum(int(np.size(v)) for v in point.values()) == suite_model.dim
        assert np.isfinite(model.compile_logp()(point))
    assert es.pima_768().log_z == pima.REFERENCE_LOG_Z[768][0]


def test_data_files_are_the_saved_ones():
    folder = Path(es.__file__).parent / "data"
    for name, digest in DATA_SHA256.items():
        assert hashlib.sha256((folder / f"evidence_suite_{name}.csv").read_bytes()).hexdigest() == digest, name
    shapes = {"conjugate": (30, 4), "mixture": (40, 1), "student_t": (40, 1), "logistic_d50": (400, 50),
              "hier_normal": (100, 2), "hier_logistic": (500, 3)}
    for name, shape in shapes.items():
        assert es.load_data(name).shape == shape
    assert set(np.unique(es.load_data("logistic_d50")[:, -1])) == {0.0, 1.0}


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="'name' parameter of load_data"):
        es.load_data("pima")
    with pytest.raises(ValueError, match="'method' parameter of eight_schools_log_z"):
        es.eight_schools_log_z("simpson")
    with pytest.raises(ValueError, match="'method' parameter of hier_normal_log_z"):
        es.hier_normal_log_z("simpson")


@pytest.mark.parametrize("name", list(es.LOG_JOINTS))
def test_hand_written_log_joint_is_pymc_density(name, rng):
    log_joint, names = es.LOG_JOINTS[name]
    suite_model = es.SUITE[name]()
    logp = suite_model.model.compile_logp(jacobian=True)
    for _ in range(6):
        x = rng.normal(0.0, 1.5, size=suite_model.dim)
        np.testing.assert_allclose(log_joint(x), logp(_point(suite_model.model, names, x)), rtol=0, atol=1e-8)
    x = rng.normal(0.0, 1.5, size=(4, suite_model.dim))  # vectorised over rows
    np.testing.assert_allclose(log_joint(x), [log_joint(row) for row in x], rtol=0, atol=1e-10)


def test_eight_schools_marginal_integrates_pymc_joint(rng):
    """Candidate's formula: p(y | tau) = p(y, mu, theta | tau) / p(mu, theta | y, tau) at any (mu, theta)."""
    suite_model = es.eight_schools_centred()
    logp = suite_model.model.compile_logp(jacobian=True)
    y, sigma, s = es.EIGHT_SCHOOLS_Y, es.EIGHT_SCHOOLS_SIGMA, es.EIGHT_SCHOOLS_MU_SD
    for _ in range(5):
        x = np.concatenate([rng.normal(0.0, 5.0, 1), rng.normal(1.0, 1.5, 1), rng.normal(5.0, 10.0, 8)])
        tau = np.exp(x[1])
        prior_cov = np.full((9, 9), s**2)
        prior_cov[1:, 1:] += tau**2 * np.eye(8)
        H = np.hstack([np.zeros((8, 1)), np.eye(8)])
        post_cov = np.linalg.inv(np.linalg.inv(prior_cov) + H.T @ np.diag(sigma**-2) @ H)
        post_mean = post_cov @ H.T @ (y / sigma**2)
        log_post = stats.multivariate_normal(post_mean, post_cov).logpdf(np.delete(x, 1))
        joint = logp(_point(suite_model.model, ("mu", "tau_log__", "theta"), x))
        expected = stats.halfcauchy(scale=5.0).logpdf(tau) + x[1] + es.eight_schools_log_marginal(tau)
        np.testing.assert_allclose(joint - log_post, expected, rtol=0, atol=1e-8)


def test_conjugate_closed_form_against_quadrature():
    data = es.load_data("conjugate")
    X, y = data[:, :3], data[:, 3]
    precision = np.eye(3) / es.CONJUGATE_TAU**2 + X.T @ X / es.CONJUGATE_SIGMA**2
    cov = np.linalg.inv(precision)
    mean = cov @ X.T @ y / es.CONJUGATE_SIGMA**2
    half = 10.0 * np.sqrt(np.diag(cov))
    value = es.log_tensor_quadrature(es.log_joint_conjugate, mean - half, mean + half, 48)
    suite_model = es.conjugate()
    np.testing.assert_allclose(value, suite_model.log_z, rtol=0, atol=1e-9)
    assert suite_model.log_z_se == 0.0


def test_beta_binomial_closed_form_against_one_group_quadrature():
    a, b = es.BETA_BINOMIAL_A, es.BETA_BINOMIAL_B
    total = 0.0
    for n, k in zip(es.BETA_BINOMIAL_N, es.BETA_BINOMIAL_K):
        z, err = integrate.quad(lambda p: stats.beta.pdf(p, a, b) * stats.binom.pmf(k, n, p), 0.0, 1.0,
                                epsabs=0.0, epsrel=1e-11, limit=200)
        assert err < 1e-9 * z
        closed = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
        closed += special.betaln(a + k, b + n - k) - special.betaln(a, b)
        np.testing.assert_allclose(np.log(z), closed, rtol=0, atol=1e-9)
        total += np.log(z)
    np.testing.assert_allclose(total, es.beta_binomial().log_z, rtol=0, atol=1e-8)


def test_eight_schools_reference_two_methods():
    stored, err = es.REFERENCES["eight_schools_centred"]
    quad, quad_err = es.eight_schools_log_z("quad")
    assert quad_err < 1e-12
    for nodes, panels in ((32, 4), (128, 16)):
        np.testing.assert_allclose(es.eight_schools_log_z("gauss-legendre", nodes, panels)[0], quad,
                                   rtol=0, atol=1e-12)
    assert abs(quad - stored) <= err


def test_mixture_reference_stable_under_refinement():
    stored, err = es.REFERENCES["mixture_label_switching"]
    # Half the nodes is already within 1e-10; a finer rule on a wider box within the bound.
    assert abs(es.mixture_log_z(8, 32) - stored) <= 1e-10
    assert abs(es.mixture_log_z(12, 48, 10.0) - stored) <= err
    # The box holds the posterior: its edges are > 60 nats below the modes.
    edge = np.linspace(-es.MIXTURE_HALF_WIDTH, es.MIXTURE_HALF_WIDTH, 401)
    faces = np.concatenate([np.column_stack([edge, np.full_like(edge, v)]) for v in (-8.0, 8.0)])
    peak = es.log_joint_mixture(np.array([[-2.0, 2.0]]))
    assert np.max(es.log_joint_mixture(faces)) < peak - 60.0
    # Label symmetry: each ordering of the means holds half the evidence.
    half = es.log_tensor_quadrature(lambda x: np.where(x[:, 0] < x[:, 1], es.log_joint_mixture(x), -np.inf),
                                    [-8.0, -8.0], [8.0, 8.0], 16, 32)
    np.testing.assert_allclose(half + np.log(2.0), stored, rtol=0, atol=1e-6)


def test_student_t_reference_stable_under_refinement():
    stored, err = es.REFERENCES["student_t_unknown_nu"]
    lows, highs, face = es.student_t_box()
    assert face <= -es.BOX_DROP
    assert np.all(highs - lows > 0) and highs[2] > np.log(1000.0)  # the heavy right tail in log nu
    # Two-thirds of the reference's 96 nodes per axis, in one panel or three: within 1e-10.
    for nodes, panels in ((64, 1), (32, 3)):
        assert abs(es.student_t_log_z(nodes, panels, box=(lows, highs)) - stored) <= 1e-10


@pytest.mark.slow
def test_student_t_reference_wider_box():
    stored, err = es.REFERENCES["student_t_unknown_nu"]
    lows, highs, face = es.student_t_box(width=14.0, drop=60.0)
    assert face <= -60.0
    assert abs(es.student_t_log_z(128, box=(lows, highs)) - stored) <= err


def _short_is(model, seed, draws):
    from models.reference_is import importance_run, laplace_t

    # Another proposal than the reference's (df 20, x 1.1) and another seed.
    return importance_run(laplace_t(model, df=10.0, inflation=1.3), seed, draws, batch=20_000)


def test_pima_768_reference_matches_short_run():
    stored, se = pima.REFERENCE_LOG_Z[768]
    run = _short_is(pima.logistic_regression(*pima.load_data(768)), 20231, 40_000)
    assert_within_se(run.log_z, stored, np.hypot(run.se, se), "pima_768")


@pytest.mark.slow
def test_logistic_d50_reference_matches_short_run():
    suite_model = es.logistic_regression_d50()
    run = _short_is(suite_model.model, 20231, 200_000)
    assert_within_se(run.log_z, suite_model.log_z, np.hypot(run.se, suite_model.log_z_se), "d50")


# --- hierarchical_normal_100 -----------------------------------------------------------------
def test_hier_normal_marginal_integrates_pymc_joint(rng):
    """p(y | mu, tau) = p(y, theta | mu, tau) / p(theta | y, mu, tau) at any theta (theta_j's posterior is normal)."""
    suite_model = es.hierarchical_normal_100()
    logp = suite_model.model.compile_logp(jacobian=True)
    data = es.load_data("hier_normal")
    y, sd = data[:, 0], data[:, 1]
    for _ in range(4):
        mu, u = rng.normal(1.0, 1.0), rng.normal(-0.5, 1.0)
        theta = rng.normal(1.0, 1.0, size=y.size)
        tau = np.exp(u)
        post_var = 1.0 / (1.0 / tau**2 + 1.0 / sd**2)
        post_mean = post_var * (mu / tau**2 + y / sd**2)
        log_post = stats.norm(post_mean, np.sqrt(post_var)).logpdf(theta).sum()
        joint = logp(_point(suite_model.model, ("mu", "tau_log__", "theta"), np.concatenate([[mu, u], theta])))
        expected = (stats.norm(0.0, es.HIER_NORMAL_MU_SD).logpdf(mu) + stats.halfcauchy(scale=5.0).logpdf(tau) + u
                    + stats.norm(mu, np.sqrt(sd**2 + tau**2)).logpdf(y).sum())
        np.testing.assert_allclose(joint - log_post, expected, rtol=0, atol=1e-8)


def test_hier_normal_reference_three_routes():
    """QUADPACK in log tau (mu integrated analytically), Gauss-Legendre in the HalfCauchy CDF, and a 2-D
    Gauss-Legendre rule over (mu, log tau) that integrates mu numerically."""
    stored, err = es.REFERENCES["hierarchical_normal_100"]
    quad, quad_err = es.hier_normal_log_z("quad")
    assert quad_err < 1e-12 and abs(quad - stored) <= err
    for nodes, panels in ((32, 8), (64, 16)):
        np.testing.assert_allclose(es.hier_normal_log_z("gauss-legendre", nodes, panels)[0], quad, rtol=0, atol=1e-11)
    data = es.load_data("hier_normal")
    y, sd = data[:, 0], data[:, 1]

    def log_f(x):
        mu, u = x[:, :1], x[:, 1:2]
        tau = np.exp(u)
        lik = stats.norm.logpdf(y, mu, np.sqrt(sd**2 + tau**2)).sum(-1)
        return (lik + stats.norm.logpdf(mu[:, 0], 0.0, es.HIER_NORMAL_MU_SD)
                + stats.halfcauchy.logpdf(tau[:, 0], scale=es.HIER_NORMAL_TAU_BETA) + u[:, 0])

    # The box: mu's posterior sd is ~0.15 around ~1; the integrand in log tau falls by > 40 nats
    # at both ends (checked below).
    lows, highs = np.array([-2.0, -45.0]), np.array([4.0, 5.0])
    two_d = es.log_tensor_quadrature(log_f, lows, highs, nodes=16, panels=48)
    np.testing.assert_allclose(two_d, stored, rtol=0, atol=1e-8)
    peak = np.max(log_f(np.array([[1.0, u] for u in np.linspace(-5, 1, 61)])))
    edges = np.array([[m, u] for m in np.linspace(-2, 4, 61) for u in (-45.0, 5.0)]
                     + [[m, u] for u in np.linspace(-45, 5, 61) for m in (-2.0, 4.0)])
    assert np.max(log_f(edges)) < peak - 40.0


# --- hierarchical_logistic_50 --------------------------------------------------------------
def test_hier_logistic_counts_are_the_data():
    data = es.load_data("hier_logistic")
    counts = es.hier_logistic_counts()
    assert counts.shape == (es.HIER_LOGISTIC_GROUPS, 4) and counts[:, [0, 2]].sum() == data.shape[0]
    group, x, y = data[:, 0].astype(int), data[:, 1], data[:, 2]
    beta = 0.7
    for g in (0, 17, 49):
        a = np.array([-1.3, 0.2, 2.5])
        rows = group == g
        eta = a[:, None] + beta * x[rows]
        direct = (y[rows] * eta - np.logaddexp(0.0, eta)).sum(-1)
        np.testing.assert_allclose(es.hier_logistic_group_log_lik(a, beta, counts[g]), direct, rtol=0, atol=1e-10)


@pytest.mark.parametrize("mu, sigma, beta", [(-0.3, 0.8, 0.7), (-0.5, 0.05, 0.9), (0.2, 1.6, 0.0), (-0.3, 1e-4, 0.7)])
def test_hier_logistic_hermite_rule_against_adaptive_quadrature(mu, sigma, beta):
    """The adaptive Gauss-Hermite group integrals against QUADPACK, group by group, in the posterior's bulk."""
    counts = es.hier_logistic_counts()
    exact = 0.0
    for g in range(es.HIER_LOGISTIC_GROUPS):
        def f(a, g=g):
            return np.exp(es.hier_logistic_group_log_lik(a, beta, counts[g]) + stats.norm.logpdf(a, mu, sigma))

        value, err = integrate.quad(f, mu - 14 * sigma, mu + 14 * sigma, points=[mu], epsabs=0.0, epsrel=1e-12,
                                    limit=200)
        exact += np.log(value)
    np.testing.assert_allclose(es.hier_logistic_log_marginal(mu, sigma, beta)[0], exact, rtol=0, atol=1e-7)
    np.testing.assert_allclose(es.hier_logistic_log_marginal(mu, sigma, beta, nodes=32, newton=12)[0], exact,
                               rtol=0, atol=1e-9)


def test_hier_logistic_integrand_is_pymc_joint_with_groups_integrated(rng):
    """p(y | mu, sigma, beta) = p(y, a | mu, sigma, beta) / p(a | y, mu, sigma, beta): the joint is PyMC's; the
    conditional posterior of each a_g is checked through the 1-D integral it is normalised by."""
    suite_model = es.hierarchical_logistic_50()
    logp = suite_model.model.compile_logp(jacobian=True)
    names = ("mu_a", "sigma_a_log__", "a", "beta")
    x = np.concatenate([[-0.3, np.log(0.8)], rng.normal(-0.3, 0.8, size=es.HIER_LOGISTIC_GROUPS), [0.7]])
    joint = logp(_point(suite_model.model, names, x))
    # log p(a | ...) = log N(a; mu, sigma) + loglik_g(a) - log I_g: sum over groups; I_g from the Hermite rule.
    a, counts = x[2:-1], es.hier_logistic_counts()
    log_cond = (stats.norm.logpdf(a, -0.3, 0.8) + es.hier_logistic_group_log_lik(a, 0.7, counts)).sum()
    log_cond -= es.hier_logistic_log_marginal(-0.3, 0.8, 0.7)[0]
    expected = es.hier_logistic_log_integrand(np.array([-0.3, 0.8, 0.7]))[0] + np.log(0.8)  # + log-Jacobian
    np.testing.assert_allclose(joint - log_cond, expected, rtol=0, atol=1e-8)


@functools.lru_cache(maxsize=None)
def _hier_logistic_box():
    return es.hier_logistic_box()


def test_hier_logistic_reference_box_and_a_coarser_rule():
    stored, err = es.REFERENCES["hierarchical_logistic_50"]
    lows, highs, face = _hier_logistic_box()
    assert face <= -es.BOX_DROP and lows[1] == 0.0
    # The stored value is a 64-node rule per axis; 24 nodes already agree to 1e-2, 32 to 1e-4.
    assert abs(es.hier_logistic_log_z(24, box=(lows, highs)) - stored) <= 1e-2


@pytest.mark.slow
def test_hier_logistic_reference_finer_rule():
    stored, err = es.REFERENCES["hierarchical_logistic_50"]
    lows, highs, _ = _hier_logistic_box()
    assert abs(es.hier_logistic_log_z(48, box=(lows, highs)) - stored) <= err
