"""``estimate_evidence`` on models whose evidence is known in closed form (correctness).

Every model here has an analytic log marginal likelihood ``log Z``; the combined estimate of
the default arm pool (smaller AIS arms for speed) must cover it: ``|log Ẑ - log Z| <= 4 se``
with ``se`` the run's own delta-method SE of ``log Ẑ`` (Neufeld et al. 2014, Sec. 3 and 6.3).
Budgets are ``Pulls(n)`` with fixed seeds, so each check is deterministic and can fail.

Closed forms
------------
* Beta–Binomial, :math:`p \\sim \\mathrm{Beta}(a, b)`, :math:`k \\sim \\mathrm{Bin}(n, p)`:
  :math:`Z = \\binom{n}{k} B(k + a, n - k + b) / B(a, b)` (a logit-transformed free variable,
  so the Jacobian is exercised).
* Normal–Normal, :math:`\\mu \\sim N(m_0, s_0^2)`, :math:`y_i \\sim N(\\mu, s^2)`:
  :math:`y \\sim N(m_0 1, s^2 I + s_0^2 1 1^\\top)`.
* Linear regression with known noise, :math:`\\beta \\sim N(0, \\tau^2 I)`,
  :math:`y \\sim N(X\\beta, \\sigma^2 I)`: :math:`y \\sim N(0, \\sigma^2 I + \\tau^2 X X^\\top)`.
* Half-normal scale, :math:`\\sigma \\sim \\mathrm{HalfNormal}(1)`, :math:`y_i \\sim N(0, \\sigma^2)`
  (log-transformed): ``log Z`` by adaptive quadrature (``scipy.integrate.quad``).
"""

import functools
import warnings

import numpy as np
import pytest

from tests.tolerance import assert_within_se

import pmcbandit
from pmcbandit.evidence.estimate import EvidenceResult, estimate_evidence, evidence_arms
from tests import analytic_models

pm = pytest.importorskip("pymc")

AIS_STEPS = (50, 200)


MODELS = {
    "beta_binomial": lambda: analytic_models.beta_binomial(2.0, 3.0, 20, 7),
    "normal_normal": lambda: analytic_models.normal_normal(
        0.5, 2.0, 1.0, np.random.default_rng(11).normal(1.3, 1.0, size=8)
    ),
    "linear_regression": lambda: analytic_models.linear_regression(n=15, p=3, tau=1.5, sigma=0.8, seed=12),
    "half_normal_scale": lambda: analytic_models.half_normal_scale(np.random.default_rng(13).normal(0.0, 0.7, size=6)),
}


@functools.lru_cache(maxsize=None)
def compiled_case(name):
    """``(name, model, log Z, default pool)``, compiled once per test session (~5 s per model)."""
    model, log_z = MODELS[name]()
    return name, model, log_z, evidence_arms(model, ais_steps=AIS_STEPS)


@pytest.fixture(params=list(MODELS))
def case(request):
    return compiled_case(request.param)


def test_default_pool_covers_analytic_evidence(case):
    name, model, truth, arms = case
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "prior-is", "ais-50", "ais-200",
                                      "nested-32"]
    assert [(a.df, a.inflation) for a in arms[:2]] == [(5.0, 1.2), (20.0, 1.1)]
    result = estimate_evidence(model, arms=arms, budget=pmcbandit.Pulls(60), random_seed=2014, progressbar=False)
    assert isinstance(result, EvidenceResult)
    assert np.isfinite(result.log_z) and result.log_z_se > 0
    assert_within_se(result.log_z, truth, result.log_z_se, name, result.summary(), truth)
    lo, hi = result.log_z_ci(0.95)
    assert lo < result.log_z < hi
    assert int(result.arm_table()["pulls"].sum()) == 60


def test_every_arm_alone_covers_analytic_evidence(case):
    """Each arm is unbiased for Z on its own (oracle policy: all pulls to one arm)."""
    name, model, truth, arms = case
    for k, arm in enumerate(arms):
        result = estimate_evidence(
            model, arms=arms, policy="oracle", policy_kwargs={"arm": k}, budget=pmcbandit.Pulls(12),
            random_seed=k, progressbar=False,
        )
        assert result.arm_table()["pulls"][k] == 12
        assert_within_se(result.log_z, truth, result.log_z_se, name, arm.name, result.log_z, result.log_z_se, truth)


def test_same_seed_gives_identical_estimate():
    _, model, _, arms = compiled_case("normal_normal")
    runs = [
        estimate_evidence(model, arms=arms, budget=pmcbandit.Pulls(16), random_seed=5, progressbar=False)
        for _ in range(2)
    ]
    assert runs[0].log_z == runs[1].log_z and runs[0].log_z_se == runs[1].log_z_se
    np.testing.assert_array_equal(runs[0].history.column("arm"), runs[1].history.column("arm"))
    other = estimate_evidence(model, arms=arms, budget=pmcbandit.Pulls(16), random_seed=6, progressbar=False)
    assert other.log_z != runs[0].log_z


def test_result_views():
    _, model, _, arms = compiled_case("normal_normal")
    result = estimate_evidence(model, arms=arms, budget=pmcbandit.Pulls(20), random_seed=3, progressbar=False)
    uniform = result.combined_with("uniform")
    assert uniform.method == "uniform" and np.isfinite(uniform.estimate)
    assert "log Z" in result.summary()
    idata = result.to_inference_data()
    assert idata.sample_stats.sizes["pull"] == 20


# --- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize("proposals, exc", [([(5, 1.2), (5.0, 1.1)], ValueError), ([5.0], TypeError),
                                             ([("a", 1.0)], TypeError)])
def test_rejects_bad_laplace_proposals(proposals, exc):
    # Checked before the model is compiled (the density is never built).
    import pymc as pm

    with pm.Model() as model:
        pm.Normal("x")
    with pytest.raises(exc, match="'laplace_proposals' parameter of evidence_arms"):
        evidence_arms(model, laplace_proposals=proposals)


def test_rejects_non_pymc_object():
    with pytest.raises(TypeError, match="pymc.Model"):
        estimate_evidence({"not": "a model"}, budget=pmcbandit.Pulls(2), progressbar=False)
    with pytest.raises(TypeError, match="pymc.Model"):
        evidence_arms(object())


def test_rejects_a_model_without_data():
    with pm.Model() as model:
        pm.Normal("theta", 0.0, 1.0)
    with pytest.raises(ValueError, match=r"must have observed data.*\['theta'\]"):
        estimate_evidence(model, budget=pmcbandit.Pulls(2), progressbar=False)


def test_rejects_discrete_free_variable():
    with pm.Model() as model:
        pm.Normal("mu", 0.0, 1.0)
        pm.Poisson("n", 3.0)
    with pytest.raises(ValueError, match="discrete free variables.*'n'"):
        estimate_evidence(model, budget=pmcbandit.Pulls(2), progressbar=False)


def test_rejects_observed_nan():
    with warnings.catch_warnings():  # PyMC announces that it would impute the NaN
        warnings.simplefilter("ignore")
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 1.0)
            pm.Normal("y", mu, 1.0, observed=np.array([0.1, np.nan, 0.3]))
    with pytest.raises(ValueError, match="without missing values"):
        estimate_evidence(model, budget=pmcbandit.Pulls(2), progressbar=False)


def test_rejects_prior_that_cannot_be_sampled():
    with pm.Model() as model:
        # A CustomDist with a logp but no random/dist: PyMC cannot forward-sample it.
        theta = pm.CustomDist("theta", logp=lambda value: -0.5 * value**2)
        pm.Normal("y", theta, 1.0, observed=[0.2, -0.1])
    with pytest.raises(ValueError, match="forward-sample"):
        estimate_evidence(model, budget=pmcbandit.Pulls(2), progressbar=False)


def test_rejects_improper_prior():
    with pm.Model() as model:
        theta = pm.Flat("theta")
        pm.Normal("y", theta, 1.0, observed=[0.2])
    with pytest.raises(ValueError, match="Flat"):
        estimate_evidence(model, budget=pmcbandit.Pulls(2), progressbar=False)


def test_rejects_data_outside_support():
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        pm.HalfNormal("y", s, observed=[-1.0, 0.5])
    with pytest.raises(ValueError, match="finite log likelihood"):
        estimate_evidence(model, budget=pmcbandit.Pulls(2), progressbar=False)


def test_rejects_linear_scale_arms():
    model, _ = MODELS["normal_normal"]()
    arm = pmcbandit.CallableArm(lambda rng: rng.normal(size=4), name="plain")
    with pytest.raises(ValueError, match="log-scale evidence arms"):
        estimate_evidence(model, arms=[arm], budget=pmcbandit.Pulls(2), progressbar=False)


# --- slower: every policy and combiner; the default call with a wall-time budget ---------


@pytest.fixture(scope="module")
def regression_pool():
    # Costs counted in log-density evaluations (not CPU time), so the paired cost-aware
    # reward, hence the allocation, is the same on every run of the test.
    model, truth = MODELS["linear_regression"]()
    return model, truth, evidence_arms(model, ais_steps=AIS_STEPS, laplace=False, cost="logp_evals")


@pytest.mark.slow
@pytest.mark.parametrize("combine", ["uniform", "inverse_variance"])
@pytest.mark.parametrize("policy", ["ucb1", "ucb_v", "kl_ucb", "thompson"])
def test_policies_and_combiners_cover_truth(policy, combine, regression_pool):
    """Paired cost-aware reward (Sec. 5), every index policy and TS, both combiners."""
    model, truth, arms = regression_pool
    result = estimate_evidence(
        model, arms=arms, policy=policy, budget=pmcbandit.Pulls(120), combine=combine, reward="paired",
        random_seed=7, progressbar=False,
    )
    assert_within_se(result.log_z, truth, result.log_z_se, policy, combine, result.summary(), truth)


@pytest.mark.slow
def test_default_call_with_wall_time_budget():
    """``estimate_evidence(model, budget=seconds)`` as a user calls it: default pool and policy,
    paired reward with measured CPU costs, inverse-variance combination."""
    model, truth = MODELS["beta_binomial"]()
    result = estimate_evidence(model, budget=8.0, random_seed=11, progressbar=False)
    assert result.settings["reward"] == "paired" and result.settings["policy"] == "thompson"
    assert_within_se(result.log_z, truth, result.log_z_se, result.summary(), truth)
