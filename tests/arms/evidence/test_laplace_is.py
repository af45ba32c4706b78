"""LaplaceISArm: unbiased estimates of analytic evidences, log-space safety, bad input, seeding."""

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

from pmcbandit.arms.evidence.laplace_is import LaplaceISArm
from pmcbandit.arms.evidence.modes import NoInteriorModeError
from tests.analytic_models import beta_binomial, linear_regression, normal_normal


# models with a known evidence: tests/analytic_models.py
def halfnormal_scale(y=(0.4, -1.3, 0.8, 2.1, -0.2)):
    """sigma ~ HalfNormal(1), y_i ~ N(0, sigma^2): Z by numerical quadrature over sigma."""
    y = np.asarray(y)
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", 0.0, sigma, observed=y)

    def integrand(s):
        return stats.halfnorm.pdf(s) * np.exp(stats.norm(0.0, s).logpdf(y).sum())

    z, _ = integrate.quad(integrand, 0.0, np.inf, epsabs=0.0, epsrel=1e-12, limit=200)
    return model, np.log(z)


ANALYTIC = {
    "beta-binomial": beta_binomial,
    "normal-normal": normal_normal,
    "linear-regression": linear_regression,
    "halfnormal-scale": halfnormal_scale,
}


def assert_unbiased(log_w, log_z, n_se=4.0):
    """|mean(w)/Z - 1| <= n_se * sd(w/Z)/sqrt(N): the IS estimate of Z within its own SE."""
    ratio = np.exp(log_w - log_z)
    est, se = ratio.mean(), ratio.std(ddof=1) / np.sqrt(ratio.size)
    assert se > 0
    assert abs(est - 1.0) <= n_se * se, (est, se)
    return est, se


# --- tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("which", sorted(ANALYTIC))
def test_estimate_of_z_is_unbiased_on_analytic_models(which, rng):
    model, log_z = ANALYTIC[which]()
    arm = LaplaceISArm(model, batch_size=2000)
    log_w = np.concatenate([arm.pull(rng).values for _ in range(25)])
    assert log_w.shape == (50_000,) and np.all(np.isfinite(log_w))
    assert_unbiased(log_w, log_z)
    # the Laplace approximation is exact for Gaussian posteriors
    if which in ("normal-normal", "linear-regression"):
        assert abs(arm.log_z_laplace - log_z) < 1e-6


def test_beta_binomial_jacobian_matters(rng):
    """The weights use log p(theta) + log p(y|theta) + log|J| on the logit scale."""
    a, b, n, k = 2.0, 3.0, 20, 14
    model, log_z = beta_binomial(a, b, n, k)
    arm = LaplaceISArm(model, batch_size=20_000)
    x = np.linspace(-4.0, 4.0, 9)[:, None]
    p = 1.0 / (1.0 + np.exp(-x[:, 0]))
    expected = stats.beta(a, b).logpdf(p) + stats.binom(n, p).logpmf(k) + np.log(p * (1.0 - p))
    log_prior, log_lik = arm._batch_terms(x)
    np.testing.assert_allclose(log_prior + log_lik, expected, rtol=0, atol=1e-6)
    # the mode is that of the logit-space density (Beta(a+k, b+n-k) times the Jacobian),
    # i.e. p = (a+k)/(a+b+n), not the Beta posterior's mode (a+k-1)/(a+b+n-2)
    assert abs(1.0 / (1.0 + np.exp(-arm.location[0])) - (a + k) / (a + b + n)) < 1e-6
    est, se = assert_unbiased(arm.pull(rng).values, log_z)
    assert se < 0.01
    # dropping the Jacobian would bias log Z by log E_post[1/(p(1-p))] ~ +1.6, >> the SE
    assert abs(np.log(est)) < 0.05


def test_pull_values_and_diagnostics(rng):
    model, _ = normal_normal()
    arm = LaplaceISArm(model, batch_size=500)
    pull = arm.pull(rng)
    assert arm.name == "laplace-t" and arm.log_scale and arm.unbiased
    assert pull.values.shape == (500,)
    assert set(pull.info) == set(arm.diagnostics)
    assert 0.0 < pull.info["ess_fraction"] <= 1.0
    assert 0.0 < pull.info["max_weight_fraction"] <= 1.0
    assert pull.cost >= 0.0
    assert LaplaceISArm(model, batch_size=500, cost="logp_evals").pull(rng).cost == 500.0


def test_huge_evidence_stays_in_log_space(rng):
    """log Z ~ +1500: exp would overflow; the arm's values and their log-mean-exp stay exact."""
    gen = np.random.default_rng(3)
    y = 0.2 + 1e-3 * gen.normal(size=300)
    model, log_z = normal_normal(m0=0.0, s0=1.0, s=1e-3, y=y)
    assert log_z > 1000
    arm = LaplaceISArm(model, batch_size=5000)
    log_w = arm.pull(rng).values
    assert np.all(np.isfinite(log_w))
    assert_unbiased(log_w, log_z)
    assert abs(logsumexp(log_w) - np.log(log_w.size) - log_z) < 0.05


def test_same_seed_same_values():
    model, _ = linear_regression()
    arm = LaplaceISArm(model, batch_size=100)
    a = arm.pull(np.random.default_rng(5)).values
    b = arm.pull(np.random.default_rng(5)).values
    c = arm.pull(np.random.default_rng(6)).values
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_proposal_density_matches_scipy(rng):
    """Without the defensive share and with one mode the proposal is the Laplace t."""
    model, _ = linear_regression()
    arm = LaplaceISArm(model, df=4.0, inflation=1.3, defensive=0.0)
    x, log_q = arm.sample(rng, 50)
    ref = stats.multivariate_t(loc=arm.location, shape=arm.scale, df=4.0).logpdf(x)
    np.testing.assert_allclose(log_q, ref, rtol=1e-10)
    np.testing.assert_allclose(arm.scale, 1.3 * arm.covariance)


def test_non_pymc_model_raises():
    with pytest.raises(TypeError, match="'model' parameter of LaplaceISArm must be a pymc.Model"):
        LaplaceISArm(object())


def test_discrete_free_variable_raises():
    with pm.Model() as model:
        pm.Normal("mu")
        pm.Poisson("k", 3.0)
    with pytest.raises(ValueError, match=r"continuous free variables.*\['k'\]"):
        LaplaceISArm(model)


def test_observed_nan_raises():
    with pytest.warns(Warning):  # PyMC warns that it imputes the missing value
        with pm.Model() as model:
            mu = pm.Normal("mu")
            pm.Normal("y", mu, 1.0, observed=np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ValueError, match="without missing values"):
        LaplaceISArm(model)


@pytest.mark.parametrize(
    "kwargs, exc, param",
    [
        ({"batch_size": 0}, ValueError, "'batch_size'"),
        ({"batch_size": 2.5}, TypeError, "'batch_size'"),
        ({"df": -1.0}, ValueError, "'df'"),
        ({"inflation": 0.0}, ValueError, "'inflation'"),
        ({"name": ""}, TypeError, "'name'"),
        ({"cost": "wall"}, ValueError, "'cost'"),
        ({"defensive": -0.1}, ValueError, "'defensive'"),
        ({"defensive": 1.0}, ValueError, "'defensive'"),
        ({"defensive": "a"}, TypeError, "'defensive'"),
        ({"n_starts": 0}, ValueError, "'n_starts'"),
        ({"rng": 3}, TypeError, "'rng'"),
        ({"modes": [1]}, TypeError, "'modes'"),
    ],
)
def test_bad_arguments_raise(kwargs, exc, param):
    model, _ = normal_normal()
    with pytest.raises(exc, match=param):
        LaplaceISArm(model, **kwargs)


def test_infinite_logp_at_initial_point_and_a_mode_on_the_boundary_raise():
    """No interior mode: the density peaks at the wall mu = 1, where the search stops non-stationary."""
    with pm.Model() as model:
        mu = pm.Normal("mu")
        # the initial point mu = 0 lies outside the support the Potential allows
        pm.Potential("wall", pm.math.switch(mu > 1.0, 0.0, -np.inf))
    with pytest.raises(NoInteriorModeError, match="none of 1 Newton searches .*1 non-finite start"):
        LaplaceISArm(model, n_starts=1)
    with pytest.raises(NoInteriorModeError, match="non-stationary.*non-finite start") as info:
        LaplaceISArm(model)
    assert isinstance(info.value, ValueError)


def test_minus_inf_logp_gives_zero_weight(rng):
    """A hard constraint (Potential of -inf) zeroes weights; the estimate stays unbiased."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Potential("cut", pm.math.switch(mu > -0.5, 0.0, -np.inf))
    arm = LaplaceISArm(model, batch_size=20_000)
    log_w = arm.pull(rng).values
    assert np.any(np.isneginf(log_w)) and not np.any(np.isnan(log_w))
    assert_unbiased(log_w, np.log(stats.norm.sf(-0.5)))


def test_row_loop_fallback_when_graph_cannot_be_vectorised(monkeypatch, rng):
    """Ops without a batched form fall back to ModelDensity's numba row loop: same weights."""
    import pytensor.graph.replace

    model, log_z = normal_normal()
    vectorised = LaplaceISArm(model, batch_size=3000)

    def refuse(*args, **kwargs):
        raise NotImplementedError("no batched form")

    monkeypatch.setattr(pytensor.graph.replace, "vectorize_graph", refuse)
    looped = LaplaceISArm(model, batch_size=3000)
    assert looped._batch_terms == looped.density.logp_terms_batch
    x, _ = looped.sample(rng, 7)
    np.testing.assert_allclose(looped._batch_terms(x), vectorised._batch_terms(x), rtol=1e-12)
    assert_unbiased(looped.pull(rng).values, log_z)


def test_accepts_a_model_density_and_shares_its_laplace_fit(rng):
    from pmcbandit.arms.evidence.model_density import ModelDensity

    model, log_z = normal_normal()
    density = ModelDensity(model)
    arm = LaplaceISArm(density, batch_size=5000)
    assert arm.density is density and arm.model is density.model
    compiled = density._laplace_fn
    mode, precision = density.laplace(1.0)
    assert density._laplace_fn is compiled  # one compiled gradient and Hessian per density
    # the best of 16 searches of one mode: the same point to the search's precision
    np.testing.assert_allclose(arm.location, mode, rtol=0, atol=1e-8)
    np.testing.assert_allclose(arm.covariance, np.linalg.inv(precision), rtol=1e-8)
    assert_unbiased(arm.pull(rng).values, log_z)


def test_a_prior_draw_outside_the_float_range_gets_weight_zero_and_is_counted(monkeypatch):
    """lam ~ Gamma(0.01, 1), y = 0 ~ Poisson(lam): Z = 2^-0.01. A Gamma(0.01) prior draw underflows to 0 about
    once in 2500 (unconstrained value -inf), where the model density cannot be evaluated."""
    from pmcbandit.arms.evidence.model_density import ModelDensity

    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=0.01, beta=1.0)
        pm.Poisson("y", lam, observed=np.array([0]))
    arm = LaplaceISArm(model, batch_size=2000, defensive=0.5, rng=np.random.default_rng(0))
    x = arm.density.sample_prior(np.random.default_rng(1), 20000)
    lost = ModelDensity.outside_float_range(x)
    assert lost.any() and np.isinf(x[lost]).any(axis=1).all()
    assert_unbiased(arm.log_weights(np.random.default_rng(9), 20000), 0.01 * np.log(0.5))
    counts = [arm.draw(np.random.default_rng([3, i]))[1]["outside_float_range"] for i in range(10)]
    assert sum(counts) > 0
    # Without the rule the same pulls have no weight to give those draws.
    monkeypatch.setattr(ModelDensity, "outside_float_range", staticmethod(lambda x: np.zeros(len(x), dtype=bool)))
    outcomes = []
    for i in range(10):
        try:
            outcomes.append(bool(np.isnan(arm.draw(np.random.default_rng([3, i]))[0]).any()))
        except FloatingPointError:
            outcomes.append(True)
    assert outcomes == [c > 0 for c in counts]
