"""Non-centring (pmcbandit.arms.evidence.reparam): the same model, so the same evidence and prior.

Checks:

* the log density of the rewritten model is the centred one plus the log-Jacobian
  :math:`\\sum\\log\\sigma` at matching points (exact, to rounding);
* the evidence is invariant, exactly: with the group scale fixed, the centred and the
  non-centred model are linear-Gaussian, so one Newton step finds the mode and the Laplace
  formula is exact; both must give the closed form
  :math:`y \\sim N(0, \\mathrm{diag}(s^2 + \\tau^2) + s_0^2 \\mathbf 1\\mathbf 1^\\top)`;
  likewise for a LogNormal observed on the log scale;
* the evidence is invariant with a prior on the scale: ``estimate_evidence`` of the non-centred
  model (Laplace and prior IS, ``Pulls`` budget, fixed seed) covers the 1-d quadrature of the
  centred model's evidence within 4 se (``tests.tolerance``);
* prior draws of each rewritten variable have the original's law: a two-sample KS test per
  coordinate, Bonferroni over coordinates, at the suite's per-check false-failure rate
  (``tests.tolerance.FALSE_FAILURE_PER_CHECK``); the same test rejects twice the group scale;
* models with nothing to rewrite come back as the same object, and unsupported variables
  (``pm.CustomDist``, a user transform, nested sub-models) are left alone with a reason.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

import pmcbandit
from pmcbandit.arms.evidence.reparam import NonCentring, non_centred
from tests.tolerance import FALSE_FAILURE_PER_CHECK, assert_within_se

pm = pytest.importorskip("pymc")

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
S = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
MU_SD = 5.0
F = np.float64  # PyTensor stores a Python float as a float32 constant: float64 keeps the checks at 1e-8


def _log_marginal(tau):
    """``log N(y; 0, diag(tau^2 + s^2) + MU_SD^2 1 1^T)`` (matrix determinant lemma, Sherman–Morrison)."""
    d = np.asarray(tau, dtype=float)[..., None] ** 2 + S**2
    s2 = MU_SD**2
    a = 1.0 + s2 * np.sum(1.0 / d, -1)
    quad = np.sum(Y**2 / d, -1) - s2 * np.sum(Y / d, -1) ** 2 / a
    return -0.5 * (Y.size * np.log(2.0 * np.pi) + np.sum(np.log(d), -1) + np.log(a) + quad)


def hierarchical(tau_prior=None, tau_fixed=3.0, use_tau_kw=False, coords=True, mu_sd=MU_SD):
    """Centred ``theta_j ~ N(mu, tau)``, ``y_j ~ N(theta_j, s_j)``, ``mu ~ N(0, mu_sd)``; ``tau`` fixed or a prior."""
    with pm.Model(coords={"school": [f"s{j}" for j in range(8)]} if coords else None) as model:
        s = pm.Data("s", S)
        mu = pm.Normal("mu", F(0.0), F(mu_sd))
        tau = tau_prior() if tau_prior is not None else F(tau_fixed)
        kw = dict(tau=tau**-2) if use_tau_kw else dict(sigma=tau)
        theta = pm.Normal("theta", mu, dims="school", **kw) if coords else pm.Normal("theta", mu, shape=8, **kw)
        pm.Normal("y", theta, s, observed=Y)
    return model


def _logp_and_grad(model):
    """``x -> (log p(x), grad)`` on the flat value vector; FAST_COMPILE (compiling C takes longer than running)."""
    from pymc.blocking import DictToArrayBijection

    ip = model.initial_point()
    x0 = DictToArrayBijection.map(ip)
    fn = model.compile_fn([model.logp(), model.dlogp()], point_fn=True, mode="FAST_COMPILE")

    def f(x):
        lp, g = fn(DictToArrayBijection.rmap(x0._replace(data=np.asarray(x, dtype=float))))
        return float(lp), np.asarray(g)

    return f, x0.data


def _exact_gaussian_log_z(model):
    """``log Z`` of a model whose log joint is quadratic in the value variables (exact Laplace):
    the Hessian from gradient differences along the unit vectors (exact for a quadratic), one Newton step."""
    f, x0 = _logp_and_grad(model)
    g0 = f(x0)[1]
    h = -np.column_stack([f(x0 + e)[1] - g0 for e in np.eye(x0.size)])
    h = 0.5 * (h + h.T)
    mode = x0 + np.linalg.solve(h, g0)
    lp, g = f(mode)
    assert np.abs(g).max() < 1e-8  # one Newton step reached the mode: the log joint is quadratic
    return lp + 0.5 * mode.size * np.log(2.0 * np.pi) - 0.5 * np.linalg.slogdet(h)[1]


@pytest.mark.parametrize("use_tau_kw", [False, True], ids=["sigma", "tau"])
def test_evidence_is_exactly_invariant_with_fixed_scale(use_tau_kw):
    model = hierarchical(use_tau_kw=use_tau_kw)
    nc = non_centred(model)
    assert nc.replaced == ("theta",) and nc.innovations == ("theta_z",)
    truth = float(_log_marginal(3.0))
    assert _exact_gaussian_log_z(model) == pytest.approx(truth, abs=1e-8)
    assert _exact_gaussian_log_z(nc.model) == pytest.approx(truth, abs=1e-8)


def test_lognormal_evidence_is_exactly_invariant():
    """``x_j ~ LogNormal(mu, 0.7)``, ``y_j ~ N(log x_j, s_j)``: ``y ~ N(0, diag(0.49 + s^2) + 25 11^T)``;
    the non-centred model is linear-Gaussian in ``(mu, x_z)``."""
    import pytensor.tensor as pt

    with pm.Model() as model:
        mu = pm.Normal("mu", F(0.0), F(MU_SD))
        x = pm.LogNormal("x", mu, F(0.7), shape=8)
        pm.Normal("y", pt.log(x), S, observed=Y)
    nc = non_centred(model)
    assert nc.replaced == ("x",)
    assert {v.name for v in nc.model.value_vars} == {"x_z", "mu"}  # no log transform left on x
    assert _exact_gaussian_log_z(nc.model) == pytest.approx(float(_log_marginal(0.7)), abs=1e-8)


def test_log_density_differs_by_the_log_jacobian():
    """``log p_nc(mu, u, z) = log p_c(mu, u, mu + tau z) + sum log tau`` at random points."""
    model = hierarchical(tau_prior=lambda: pm.HalfCauchy("tau", 5.0))
    nc = non_centred(model)
    lp_c, lp_nc = model.compile_logp(mode="FAST_COMPILE"), nc.model.compile_logp(mode="FAST_COMPILE")
    rng = np.random.default_rng(3)
    for _ in range(5):
        mu, u, z = rng.normal(0, 3), rng.normal(0, 1.5), rng.normal(size=8)
        tau = np.exp(u)
        centred = lp_c({"mu": mu, "tau_log__": u, "theta": mu + tau * z})
        assert lp_nc({"mu": mu, "tau_log__": u, "theta_z": z}) == pytest.approx(centred + 8 * u, rel=1e-12, abs=1e-9)
    [theta] = nc.model.replace_rvs_by_values([nc.model["theta"]])
    det = nc.model.compile_fn(theta, inputs=nc.model.value_vars, on_unused_input="ignore", mode="FAST_COMPILE")
    point = {"mu": 1.0, "tau_log__": np.log(2.0), "theta_z": np.arange(8.0)}
    assert np.allclose(det(point), 1.0 + 2.0 * np.arange(8), rtol=1e-14)


@pytest.mark.slow
def test_estimated_evidence_covers_the_centred_quadrature():
    """HalfNormal(5) scale: the centred model's ``log Z`` by quadrature over tau of the closed-form
    marginal; ``estimate_evidence`` on the non-centred model must cover it within 4 se."""
    from pmcbandit.arms.evidence import LaplaceISArm, ModelDensity, PriorISArm

    model = hierarchical(tau_prior=lambda: pm.HalfNormal("tau", 5.0))
    shift = float(_log_marginal(5.0))
    integral, _ = integrate.quad(
        lambda t: np.exp(_log_marginal(t) - shift) * stats.halfnorm.pdf(t, scale=5.0), 0, np.inf, epsabs=0,
        epsrel=1e-12, limit=200)
    truth = shift + np.log(integral)
    density = ModelDensity(non_centred(model).model)
    arms = [LaplaceISArm(density, batch_size=500, rng=np.random.default_rng(0)), PriorISArm(density, batch_size=500)]
    result = pmcbandit.estimate_evidence(density.model, arms=arms, budget=pmcbandit.Pulls(40), random_seed=7,
                                         progressbar=False)
    assert_within_se(result.log_z, truth, result.log_z_se, result.summary())
    assert result.log_z_se < 0.05  # the non-centred posterior is near-Gaussian: Laplace IS is efficient
    # The by-product posterior draws carry the Deterministic theta beside theta_z, on the original scale.
    draws = result.posterior_draws.values
    assert {"mu", "tau", "theta_z", "theta"} <= set(draws)
    recovered = draws["mu"][:, None] + draws["tau"][:, None] * draws["theta_z"]
    assert np.allclose(draws["theta"], recovered, rtol=1e-12, atol=1e-12)


def _ks_pvalue(a, b) -> float:
    """Bonferroni-combined two-sample KS p-value over the trailing coordinates of ``(n, ...)`` draws."""
    a, b = a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1)
    p = min(stats.ks_2samp(a[:, j], b[:, j]).pvalue for j in range(a.shape[1]))
    return min(1.0, p * a.shape[1])


def test_prior_draws_have_the_original_law():
    draws = 4000
    model = hierarchical(tau_prior=lambda: pm.HalfNormal("tau", 2.0), mu_sd=1.0)
    nc = non_centred(model)
    original = pm.draw(model["theta"], draws=draws, random_seed=11, mode="FAST_COMPILE")
    rewritten = pm.draw(nc.model["theta"], draws=draws, random_seed=12, mode="FAST_COMPILE")
    assert rewritten.shape == original.shape == (draws, 8)
    assert _ks_pvalue(original, rewritten) > FALSE_FAILURE_PER_CHECK
    # The same check rejects the law with twice the group scale (so it can fail).
    wider = hierarchical(tau_prior=lambda: pm.HalfNormal("tau", 4.0), mu_sd=1.0)
    wrong = pm.draw(wider["theta"], draws=draws, random_seed=13, mode="FAST_COMPILE")
    assert _ks_pvalue(wrong, rewritten) < FALSE_FAILURE_PER_CHECK


def test_broadcast_sizes_lognormal_and_nested_rewrites_keep_the_law():
    """``size=(4, 3)`` over a vector ``mu``, a LogNormal, and a child of a rewritten parent."""
    draws = 3000

    def build():
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 1.0, shape=3)
            tau = pm.HalfNormal("tau", 1.0)
            a = pm.Normal("a", mu, tau=tau, size=(4, 3))
            pm.LogNormal("b", mu[0], tau, shape=2)
            pm.Normal("c", a[0], tau)  # a child of a rewritten variable, itself rewritten
            pm.Normal("y", a.sum(), 1.0, observed=1.0)
        return model

    model = build()
    nc = non_centred(model)
    assert set(nc.replaced) == {"a", "b", "c"}
    names = ["a", "b", "c"]
    original = pm.draw([model[n] for n in names], draws=draws, random_seed=21, mode="FAST_COMPILE")
    rewritten = pm.draw([nc.model[n] for n in names], draws=draws, random_seed=22, mode="FAST_COMPILE")
    flat = lambda ds: np.concatenate([d.reshape(draws, -1) for d in ds], axis=1)  # noqa: E731
    assert flat(rewritten).shape == (draws, 12 + 2 + 3)
    assert _ks_pvalue(flat(original), flat(rewritten)) > FALSE_FAILURE_PER_CHECK
    # "c" reads "a" through the Deterministic, not a stale copy of the centred variable.
    assert {v.name for v in nc.model.free_RVs} == {"mu", "tau", "a_z", "b_z", "c_z"}


def test_dims_coords_and_data_are_preserved():
    model = hierarchical(tau_prior=lambda: pm.HalfCauchy("tau", 5.0))
    nm = non_centred(model).model
    assert nm.coords == model.coords
    assert tuple(nm.named_vars_to_dims["theta"]) == tuple(nm.named_vars_to_dims["theta_z"]) == ("school",)
    assert [v.name for v in nm.data_vars] == ["s"] and np.array_equal(nm["s"].get_value(), S)
    assert nm["theta"] in nm.deterministics and nm["y"] in nm.observed_RVs
    assert model["theta"] in model.free_RVs  # the input model is untouched


def test_nothing_to_rewrite_returns_the_same_model():
    with pm.Model() as model:
        a = pm.Normal("a", 0.0, 2.0, shape=3)
        sd = pm.HalfNormal("sd", 1.0)
        pm.Normal("y", a.sum(), sd, observed=np.zeros(4))
    nc = non_centred(model)
    assert isinstance(nc, NonCentring)
    assert nc.model is model and not nc.changed and nc.replaced == nc.innovations == ()
    assert nc.left_alone["a"] == "its parameters do not depend on a free variable"
    assert "HalfNormal" in nc.left_alone["sd"]
    with model:
        assert non_centred().model is model  # from the context


def test_unsupported_variables_are_left_alone_and_the_model_still_works():
    def custom(m, size):
        return pm.Normal.dist(m, 1.0, size=size)

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=3)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu, tau, shape=3)
        d = pm.CustomDist("d", mu[1], dist=custom, shape=2)
        e = pm.CustomDist("e", mu[2], logp=lambda v, m: pm.logp(pm.Normal.dist(m, 1.0), v))
        o = pm.Normal("o", mu[:2], 1.0, shape=2, transform=pm.distributions.transforms.ordered,
                      initval=np.array([-1.0, 1.0]))
        pm.Potential("pot", -(theta**2).sum() / 100)
        pm.Normal("y", theta.sum() + d.sum() + e + o.sum(), 1.0, observed=1.0)
    nc = non_centred(model)
    assert nc.replaced == ("theta",)
    assert nc.left_alone["d"].startswith("not a Normal") and nc.left_alone["e"].startswith("not a Normal")
    assert nc.left_alone["o"] == "has the value transform Ordered"
    point = {"mu": np.array([0.1, -0.2, 0.3]), "tau_log__": 0.2, "d": np.array([0.5, 0.1]), "e": -0.4,
             "o_ordered__": np.array([-0.3, 0.2])}
    z = np.array([0.3, -1.0, 0.7])
    centred = model.compile_logp(mode="FAST_COMPILE")({**point, "theta": point["mu"] + np.exp(0.2) * z})
    rewritten = nc.model.compile_logp(mode="FAST_COMPILE")({**point, "theta_z": z})
    assert rewritten == pytest.approx(centred + 3 * 0.2, rel=1e-12)
    assert [v.name for v in nc.model.potentials] == ["pot"]


def test_nested_sub_model_and_bad_input():
    with pm.Model():
        with pm.Model("sub") as sub:
            mu = pm.Normal("mu", 0.0, 1.0)
            pm.Normal("y", pm.Normal("x", mu, 1.0), 1.0, observed=0.0)
    nc = non_centred(sub)
    assert nc.model is sub and "nested" in nc.left_alone["<model>"]
    with pytest.raises(TypeError, match="The 'model' parameter of non_centred must be a pymc.Model"):
        non_centred("model")
    with pytest.raises(TypeError, match="The 'model' parameter of non_centred"):
        non_centred()


def test_a_shape_set_by_data_follows_the_data():
    """``theta ~ N(a * x, tau)`` with ``x = pm.Data`` (no static shape): ``theta_z`` takes the broadcast shape
    of the parameters, so ``pm.set_data`` resizes it, and the log density differs by the log-Jacobian."""
    with pm.Model() as model:
        x = pm.Data("x", np.linspace(0.0, 1.0, 5))
        a = pm.Normal("a", F(0.0), F(1.0))
        tau = pm.HalfNormal("tau", F(1.0))
        pm.Normal("y", pm.Normal("theta", a * x, tau), F(1.0), observed=np.zeros(5))
    nm = non_centred(model).model
    assert nm["theta_z"].type.shape == (None,)
    z, point = np.arange(5.0) / 3, {"a": 0.4, "tau_log__": 0.3}
    centred = model.compile_logp(mode="FAST_COMPILE")({**point, "theta": 0.4 * np.linspace(0, 1, 5) + np.exp(0.3) * z})
    assert nm.compile_logp(mode="FAST_COMPILE")({**point, "theta_z": z}) == pytest.approx(centred + 5 * 0.3, rel=1e-12)
    with nm:
        pm.set_data({"x": np.linspace(0.0, 1.0, 7)})
    assert pm.draw(nm["theta"], random_seed=1, mode="FAST_COMPILE").shape == (7,)
