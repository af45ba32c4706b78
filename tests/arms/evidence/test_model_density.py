"""ModelDensity: compiled densities with Jacobians, exact batched prior draws, model checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from tests.tolerance import assert_within_se

from pmcbandit.arms.evidence import ModelDensity


def test_jit_fn_is_the_compiled_point_function(evidence_models):
    """The numba dispatcher (``pmcbandit._compat.numba_jit_fn``, a PyTensor internal) computes what the
    compiled function does: a PyTensor upgrade that moves or changes it must fail here.
    """
    density, _ = evidence_models("linear_regression")
    assert density.jit_fn is density.point_fn.vm.jit_fn
    x = density.sample_prior(np.random.default_rng(0), 5)
    for row in x:
        lp_j, ll_j = density.jit_fn(row)
        lp, ll = density.point_fn(row)
        assert float(lp_j) == float(lp) and float(ll_j) == float(ll)
    lp_b, ll_b = density.logp_terms_batch(x)
    np.testing.assert_array_equal(lp_b, [float(density.point_fn(r)[0]) for r in x])
    np.testing.assert_array_equal(ll_b, [float(density.point_fn(r)[1]) for r in x])


def test_terms_sum_to_pymc_joint_logp_with_jacobian(evidence_models):
    density, _ = evidence_models("half_normal_scale")
    model = density.model
    logp = model.compile_logp(jacobian=True)
    for row in density.sample_prior(np.random.default_rng(1), 4):
        lp, ll = density.logp_terms(row)
        np.testing.assert_allclose(lp + ll, logp(density.unravel(row)), rtol=1e-12)


def test_transformed_prior_density_is_normalised(evidence_models):
    """The Jacobian is included: exp(logprior) integrates to 1 over the log scale."""
    density, _ = evidence_models("half_normal_scale")
    total, _ = integrate.quad(lambda x: np.exp(density.logp_terms([x])[0]), -30, 10, limit=200)
    assert total == pytest.approx(1.0, abs=1e-8)


def test_prior_draws_follow_the_prior(evidence_models):
    density, _ = evidence_models("half_normal_scale")
    sigma = np.exp(density.sample_prior(np.random.default_rng(2), 20000)[:, 0])
    assert stats.kstest(sigma, stats.halfnorm.cdf).pvalue > 1e-4


def test_hierarchical_prior_is_batched_and_exact():
    import pymc as pm

    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        mu = pm.Normal("mu", 0.0, s, shape=2)
        pm.Normal("y", mu.sum(), 1.0, observed=[0.3])
    density = ModelDensity(model)
    assert density.vectorised_prior
    assert density.value_names == ("s_log__", "mu")
    x = density.sample_prior(np.random.default_rng(3), 40000)
    s_draw, mu_draw = np.exp(x[:, 0]), x[:, 1:]
    # mu_i / s are i.i.d. N(0, 1) given s, and independent of s.
    z = (mu_draw / s_draw[:, None]).ravel()
    assert stats.kstest(z, "norm").pvalue > 1e-4
    assert stats.kstest(s_draw, stats.halfnorm.cdf).pvalue > 1e-4
    assert_within_se(np.corrcoef(mu_draw[:, 0], mu_draw[:, 1])[0, 1], 0.0, 1 / np.sqrt(x.shape[0]))


def test_prior_draws_are_reproducible(evidence_models):
    density, _ = evidence_models("linear_regression")
    a = density.sample_prior(np.random.default_rng(5), 7)
    b = density.sample_prior(np.random.default_rng(5), 7)
    c = density.sample_prior(np.random.default_rng(6), 7)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.shape == (7, density.dim) == (7, 3)


def test_rejects_non_models():
    with pytest.raises(TypeError, match="'model' parameter of ModelDensity must be a pymc.Model"):
        ModelDensity(object())


def test_rejects_discrete_free_variables():
    import pymc as pm

    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, 1.0, observed=[1.0])
    with pytest.raises(ValueError, match=r"discrete free variables \['k'\]"):
        ModelDensity(model)


def test_rejects_missing_observations():
    import pymc as pm

    with pytest.warns(Warning):
        with pm.Model() as model:
            mu = pm.Normal("mu")
            pm.Normal("y", mu, 1.0, observed=np.array([0.1, np.nan, 0.4]))
    with pytest.raises(ValueError, match="without missing values"):
        ModelDensity(model)


def test_rejects_improper_flat_priors():
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Potential("pot", -0.5 * mu**2)
    with pytest.raises(ValueError, match=r"improper Flat/HalfFlat free variables \['mu'\]"):
        ModelDensity(model)


def test_rejects_a_model_without_data():
    import pymc as pm

    with pm.Model() as model:
        pm.Normal("mu", 0.0, 1.0)
        pm.HalfNormal("sigma", 1.0)
    with pytest.raises(ValueError, match=r"must have observed data .*\['mu', 'sigma'\]"):
        ModelDensity(model)


def test_rejects_priors_that_cannot_be_sampled():
    import pymc as pm

    with pm.Model() as model:
        mu = pm.CustomDist("mu", logp=lambda value: -0.5 * value**2)
        pm.Normal("y", mu, 1.0, observed=[0.2])
    with pytest.raises(ValueError, match="cannot be drawn"):
        ModelDensity(model)


def test_rejects_data_outside_the_support():
    import pymc as pm

    with pm.Model() as model:
        s = pm.HalfNormal("s")
        pm.HalfNormal("y", s, observed=[-1.0])
    with pytest.raises(ValueError, match="finite log likelihood at some prior draw"):
        ModelDensity(model)


def test_rejects_models_without_free_variables():
    import pymc as pm

    with pm.Model() as model:
        pm.Normal("y", 0.0, 1.0, observed=[0.1])
    with pytest.raises(ValueError, match="at least one free random variable"):
        ModelDensity(model)


def test_batched_prior_with_parent_dependent_interval_transform():
    """u ~ Uniform(0, theta) given theta: u / theta is U(0, 1) and independent of theta."""
    import pymc as pm

    with pm.Model() as model:
        theta = pm.HalfNormal("theta", 2.0)
        u = pm.Uniform("u", 0.0, theta, shape=3)
        pm.Normal("y", u.sum(), 1.0, observed=[0.5])  # data, so the evidence is defined; the prior is drawn
    density = ModelDensity(model)
    assert density.vectorised_prior
    x = density.sample_prior(np.random.default_rng(4), 20000)
    theta = np.exp(x[:, 0])
    ratio = 1.0 / (1.0 + np.exp(-x[:, 1:]))
    assert stats.kstest(ratio.ravel(), "uniform").pvalue > 1e-4
    assert stats.kstest(theta, stats.halfnorm(scale=2.0).cdf).pvalue > 1e-4
    assert_within_se(np.corrcoef(ratio[:, 0], theta)[0, 1], 0.0, 1 / np.sqrt(x.shape[0]))


def test_unbatchable_prior_falls_back_to_exact_draws():
    """A mixture whose components depend on a free parent is drawn one by one, exactly."""
    import pymc as pm

    with pm.Model() as model:
        mu0 = pm.Normal("mu0", 0.0, 0.1)
        m = pm.NormalMixture("m", w=[0.5, 0.5], mu=pm.math.stack([mu0 - 3.0, mu0 + 3.0]), sigma=[0.1, 0.1])
        pm.Normal("y", m, 10.0, observed=[0.0])  # data, so the evidence is defined; the prior is drawn
    density = ModelDensity(model)
    assert not density.vectorised_prior
    x = density.sample_prior(np.random.default_rng(5), 2000)
    side = np.abs(x[:, 1] - x[:, 0]) - 3.0
    assert np.all(np.abs(side) < 1.0)
    assert_within_se(np.mean(x[:, 1] > x[:, 0]), 0.5, 0.5 / np.sqrt(2000))


def test_initial_values_are_ignored_and_kept():
    """``initval=`` seeds samplers, not the evidence: the density is built and the model unchanged."""
    import pymc as pm

    from pmcbandit.arms.evidence import ModelDensity

    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 1.0, initval=0.5)
        pm.Normal("y", x, 1.0, observed=[0.1, 0.2])
    density = ModelDensity(model)
    assert density.dim == 1
    assert model.rvs_to_initial_values[x] == 0.5


# --- Laplace fit ----------------------------------------------------------------------------

# evidence_models' normal_normal: mu ~ N(0.5, 1.5^2), y_i ~ N(mu, 0.8^2), y = (1.2, 0.4, 2.0, 1.1)
NN_M0, NN_S0, NN_S, NN_Y = 0.5, 1.5, 0.8, np.array([1.2, 0.4, 2.0, 1.1])


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
def test_laplace_is_exact_on_a_gaussian_tempered_posterior(evidence_models, beta):
    """pi_beta is Gaussian: P = 1/s0^2 + beta n/s^2, mode = (m0/s0^2 + beta sum(y)/s^2) / P."""
    density, _ = evidence_models("normal_normal")
    precision = 1.0 / NN_S0**2 + beta * NN_Y.size / NN_S**2
    mode = (NN_M0 / NN_S0**2 + beta * NN_Y.sum() / NN_S**2) / precision
    x, p = density.laplace(beta, x0=[-3.0])
    np.testing.assert_allclose(x, [mode], rtol=0, atol=1e-10)
    np.testing.assert_allclose(p, [[precision]], rtol=1e-10)


def test_laplace_falls_back_to_lbfgsb_when_the_hessian_is_not_finite(evidence_models, monkeypatch):
    """A NaN Hessian stops trust-exact; L-BFGS-B (gradient only) still reaches the mode."""
    density, _ = evidence_models("normal_normal")
    value_and_grad, hessian = density._laplace_functions()
    calls = []

    def nan_once(x, beta):
        calls.append(1)
        return np.full((1, 1), np.nan) if len(calls) == 1 else hessian(x, beta)

    monkeypatch.setattr(density, "_laplace_fn", (value_and_grad, nan_once))
    precision = 1.0 / NN_S0**2 + NN_Y.size / NN_S**2
    x, p = density.laplace(1.0)
    assert len(calls) == 2  # trust-exact's first Hessian, then the one at the L-BFGS-B mode
    assert abs(x[0] - (NN_M0 / NN_S0**2 + NN_Y.sum() / NN_S**2) / precision) < 1e-5
    np.testing.assert_allclose(p, [[precision]], rtol=1e-10)


def test_laplace_degenerate_cases_raise_or_warn():
    """A funnel has no mode (log density unbounded as log s -> -inf): strict raises, else warns."""
    import pymc as pm

    with pm.Model() as funnel:
        s = pm.HalfNormal("s", 1.0)
        mu = pm.Normal("mu", 0.0, s, shape=3)
        pm.Normal("y", mu.sum(), 1.0, observed=[0.1, 0.3])
    density = ModelDensity(funnel)
    with pytest.raises(ValueError, match="must be at a mode"):
        density.laplace(1.0)
    with pytest.warns(RuntimeWarning) as record:
        x, p = density.laplace(1.0, strict=False)
    messages = [str(w.message) for w in record]
    assert any("must be at a mode" in m and "last iterate is used" in m for m in messages)
    assert any("positive-definite" in m and "floored" in m for m in messages)
    assert np.all(np.isfinite(x)) and np.linalg.eigvalsh(p).min() > 0


def test_laplace_bad_arguments_raise(evidence_models):
    density, _ = evidence_models("normal_normal")
    with pytest.raises(ValueError, match=r"'x0' parameter of ModelDensity.laplace must have shape \(1,\)"):
        density.laplace(1.0, x0=[0.0, 1.0])
    with pytest.raises(ValueError, match="'x0' parameter .* where it is not finite"):
        density.laplace(1.0, x0=[np.inf])
    with pytest.raises(TypeError, match="'strict' parameter of ModelDensity.laplace must be a bool"):
        density.laplace(1.0, strict="no")


# --- batched terms and the measured cost of one evaluation ----------------------------------


def test_batched_terms_match_the_point_function(evidence_models, monkeypatch):
    """compile_logp_terms_batch: (logprior, loglik) per row; its sum is compile_logp_batch's output."""
    import pytensor.graph.replace

    density, _ = evidence_models("half_normal_scale")
    x = density.sample_prior(np.random.default_rng(7), 9)
    log_prior, log_lik = density.compile_logp_terms_batch()(x)
    ref_prior, ref_lik = density.logp_terms_batch(x)
    np.testing.assert_allclose(log_prior, ref_prior, rtol=1e-12)
    np.testing.assert_allclose(log_lik, ref_lik, rtol=1e-12)
    np.testing.assert_allclose(density.compile_logp_batch()(x), ref_prior + ref_lik, rtol=1e-12)

    def refuse(*args, **kwargs):
        raise NotImplementedError("no batched form")

    monkeypatch.setattr(pytensor.graph.replace, "vectorize_graph", refuse)
    # a compile mode not asked for before is compiled now (the default one is cached), and falls back
    assert density.compile_logp_terms_batch("FAST_COMPILE") == density.logp_terms_batch
    assert density.compile_logp_terms_batch() is density.compile_logp_terms_batch()


def test_eval_seconds_is_measured(evidence_models):
    density, _ = evidence_models("linear_regression")
    assert np.isfinite(density.eval_seconds) and density.eval_seconds > 0.0


@pytest.mark.slow
@pytest.mark.parametrize("numba_dim", [1, 10**9])  # the NUMBA gradient loop, and the PyTensor function's calls
def test_hessian_of_a_correlated_gaussian_is_exact_by_either_gradient(monkeypatch, numba_dim):
    """Central differences of an exact gradient: a quadratic log density has a constant Hessian, which they
    recover to rounding, whichever compiled gradient (NUMBA from NUMBA_HESSIAN_DIM dimensions, else PyTensor's)."""
    import pymc as pm

    import pmcbandit.arms.evidence.model_density as md

    monkeypatch.setattr(md, "NUMBA_HESSIAN_DIM", numba_dim)
    d = 24
    rng = np.random.default_rng(3)
    a = rng.normal(size=(d, d))
    cov = a @ a.T / d + np.eye(d)
    with pm.Model() as model:
        x = pm.MvNormal("x", mu=np.zeros(d), cov=cov)
        pm.Normal("y", mu=x, sigma=2.0, observed=rng.normal(size=d))
    density = ModelDensity(model)
    _, hessian = density._laplace_functions()
    hessian(np.zeros(d), 1.0)
    assert (density._grad_fn is not None) == (numba_dim == 1)  # the NUMBA gradient compiled only for that path
    exact = np.linalg.inv(cov) + np.eye(d) / 4.0
    for beta in (1.0, 0.3):
        h = -hessian(rng.normal(size=d), beta)
        expected = np.linalg.inv(cov) + beta * np.eye(d) / 4.0
        assert np.allclose(h, expected, rtol=0.0, atol=1e-6 * np.abs(exact).max())
    assert np.array_equal(h, h.T)


def test_the_initial_point_is_pymc_s_without_compiling_it(monkeypatch):
    """The density reads the frozen model's initial point (support points, mapped to the unconstrained space) by
    evaluating PyMC's expressions, and gets what ``Model.initial_point`` gives, values and dtypes, without calling it.
    """
    import pymc as pm

    from pmcbandit.arms.evidence._initial_point import initial_point
    from pmcbandit.arms.evidence.model_density import check_model

    with pm.Model() as model:
        mu = pm.Normal("mu", 1.5, 2.0, shape=2)
        sigma = pm.HalfNormal("sigma", 3.0)
        p = pm.Beta("p", 2.0, 5.0)
        pm.Normal("y", mu.sum() * p, sigma, observed=np.linspace(-1.0, 1.0, 7))
    frozen = check_model(model)
    expected = frozen.initial_point()
    got = initial_point(frozen)
    assert set(got) == set(expected) == {"mu", "sigma_log__", "p_logodds__"}
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value)
        assert got[name].dtype == value.dtype

    def not_compiled(self, *args, **kwargs):
        raise AssertionError("Model.initial_point compiled the initial point")

    monkeypatch.setattr(pm.Model, "initial_point", not_compiled)
    density = ModelDensity(model)
    flat = np.concatenate([np.ravel(expected[name]) for name in density.value_names])
    np.testing.assert_array_equal(density.initial_x, flat)


def test_an_initial_point_that_reads_a_shared_variable_is_pymc_s(monkeypatch):
    """Expressions that read more than constants (here a data container; a random draw alike) go to
    ``Model.initial_point``, whose seeding and data rules then apply."""
    import pymc as pm

    from pmcbandit.arms.evidence._initial_point import initial_point

    with pm.Model() as model:
        centre = pm.Data("centre", 2.0)
        pm.Normal("x", centre, 1.0)
    calls = []
    original = pm.Model.initial_point

    def spy(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pm.Model, "initial_point", spy)
    assert initial_point(model) == {"x": 2.0} and calls == [model]


def test_log_terms_are_pymc_s_two_logp_graphs_from_one_call(monkeypatch):
    """Both terms come from one ``Model.logp`` call, and are the graphs that one call per term builds (the same
    computations, so the same compiled functions), on every suite model, non-centred as the pool builds it, and on a
    model with potentials (whose likelihood they join) and one whose likelihood is a potential alone.
    """
    import pymc as pm
    from pytensor.graph.basic import equal_computations

    from models.evidence_suite import SUITE
    from pmcbandit.arms.evidence._cache import non_centred_model
    from pmcbandit.arms.evidence._log_terms import log_terms
    from pmcbandit.arms.evidence.model_density import check_model

    with pm.Model() as potentials:
        mu = pm.Normal("mu", 0.0, 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", mu, sigma, observed=[0.3, -0.2, 1.1])
        pm.Potential("soft", -0.5 * mu**2)
        pm.Potential("softer", -sigma)
    with pm.Model() as potential_only:
        theta = pm.Normal("theta", 0.0, 1.0, shape=2)
        pm.Potential("lik", -((theta - 1.0) ** 2).sum())
    models = [check_model(non_centred_model(SUITE[name]().model, [])) for name in SUITE]
    models += [check_model(potentials), check_model(potential_only)]
    calls = []
    original = pm.Model.logp

    def spy(self, *args, **kwargs):
        calls.append(self)
        return original(self, *args, **kwargs)

    for model in models:
        expected = [model.logp(vars=model.free_RVs, jacobian=True, sum=True),
                    model.logp(vars=list(model.observed_RVs) + list(model.potentials), jacobian=True, sum=True)]
        monkeypatch.setattr(pm.Model, "logp", spy)
        got = log_terms(model)
        monkeypatch.setattr(pm.Model, "logp", original)
        assert calls == [model]
        calls.clear()
        assert equal_computations(list(got), expected)
        assert [g.name for g in got] == [e.name for e in expected]


def test_the_density_s_graphs_are_built_without_creation_traces():
    """The nodes the density makes carry no creation trace (``traceback__limit`` 0 while it builds and compiles
    them), the nodes made outside keep theirs, and PyTensor's flag is back to what it was."""
    import pytensor
    import pytensor.tensor as pt

    before = pytensor.config.traceback__limit
    assert before != 0
    from tests.arms.conftest import BUILDERS

    model, _ = BUILDERS[sorted(BUILDERS)[0]]()
    density = ModelDensity(model)
    density._laplace_functions()
    density.compile_logp_terms_batch(None)
    assert pytensor.config.traceback__limit == before
    assert [g.tag.trace for g in density._graphs] == [[], []]
    assert pt.vector("outside").tag.trace != []
