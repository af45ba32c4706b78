"""Evidence output ArviZ can read: the posterior draws an evidence run offers as a by-product, and
``log_marginal_likelihood`` where ``pm.sample_smc`` puts it.

Truth: Normal-Normal, ``mu ~ N(m0, s0^2)``, ``y_i ~ N(mu, s^2)``, posterior
``N((m0/s0^2 + sum y / s^2) / P, 1 / P)`` with ``P = 1/s0^2 + n/s^2``.
"""

from __future__ import annotations

import pickle
import warnings

import arviz as az
import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit import _compat
from pmcbandit.arms.evidence import _draws
from pmcbandit.arms.evidence._draws import DrawReservoir, ReservoirState, posterior_draws
from pmcbandit.exceptions import PmcBanditWarning
from pmcbandit.result import ArmReliability
from tests.analytic_models import normal_normal
from tests.tolerance import assert_within_se

M0, S0, S, Y = 1.0, 2.0, 0.7, (0.3, 1.9, 2.4, 1.1)


@pytest.fixture(scope="module")
def run():
    model, log_z = normal_normal(M0, S0, S, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        arms = pb.evidence_arms(model, ais_steps=(), batch_size=500)
        with model:  # the model from the with-block, as PyMC does
            result = pb.estimate_evidence(arms=arms, budget=pb.Pulls(40), random_seed=8, progressbar=False)
    return model, log_z, arms, result


def test_draws_match_the_exact_posterior(run):
    _, _, _, result = run
    draws = result.posterior_draws
    assert draws is not None and draws.arm in result.arm_names
    precision = 1 / S0**2 + len(Y) / S**2
    mean, sd = (M0 / S0**2 + sum(Y) / S**2) / precision, precision**-0.5
    mu = draws.values["mu"]
    assert mu.shape == (1000,) and draws.ess > 1000
    assert_within_se(mu.mean(), mean, sd / np.sqrt(mu.size), "posterior mean of mu")
    # sample variance of ~normal draws: se(var) = var * sqrt(2 / (n - 1))
    assert_within_se(mu.var(ddof=1), sd**2, sd**2 * np.sqrt(2 / (mu.size - 1)), "posterior variance of mu")


def test_arviz_reads_the_evidence_run(run, tmp_path):
    _, log_z, _, result = run
    idata = result.to_inference_data()
    assert idata.posterior["mu"].dims == ("chain", "draw")
    assert idata.posterior.attrs["arm"] == result.posterior_draws.arm and idata.posterior.attrs["ess"] > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's one-chain notice (r_hat needs two)
        summary = az.summary(idata)
        assert "mu" in summary.index
        assert float(az.ess(idata)["mu"]) > 100
        assert _compat.plot_posterior(idata) is not None  # az.plot_posterior on 0.x, plot_dist on 1.x
        import matplotlib.pyplot as plt

        plt.close("all")
    lml = idata.sample_stats["log_marginal_likelihood"]
    assert lml.dims == ("chain", "draw") and float(lml.values.ravel()[0]) == result.log_z
    assert_within_se(result.log_z, log_z, result.log_z_se)
    path = _compat.write_netcdf(idata, tmp_path / "run.nc")
    assert pb.read_run(path).log_estimate == result.log_estimate


def test_keeping_draws_changes_no_estimate(run, monkeypatch):
    model, _, arms, result = run
    import pmcbandit.arms.evidence.laplace_is as laplace_is
    import pmcbandit.arms.evidence.prior_is as prior_is

    for module in (laplace_is, prior_is):
        monkeypatch.setattr(module, "keep_draws", lambda *args: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        again = pb.estimate_evidence(model, arms=arms, budget=pb.Pulls(40), random_seed=8, progressbar=False)
    assert again.log_z == result.log_z and again.posterior_draws is None


def test_khat_decides_whether_draws_are_offered(run):
    _, _, arms, result = run
    states = _draws.reservoir_states(arms)
    rel = result.reliability
    flagged = ArmReliability(rel.khat, rel.threshold, rel.n_weights, np.ones_like(rel.unreliable))
    result.__dict__["reliability"] = flagged
    try:
        assert posterior_draws(result, states, arms[0].density) is None
    finally:
        result.__dict__["reliability"] = rel


def test_reservoir_is_a_bounded_weighted_sample():
    store = DrawReservoir(capacity=500)
    rng = np.random.default_rng(1)
    x = np.arange(20000, dtype=float)[:, None]
    log_w = np.where(x[:, 0] < 10000, 0.0, np.log(3.0))  # the upper half weighs 3x: P(upper) = 0.75
    for part in np.array_split(np.arange(20000), 10):
        store.add(rng, x[part], log_w[part])
    state = store.state()
    assert state.x.shape == (500, 1) and state.count == 20000
    share = np.mean(state.x[:, 0] >= 10000)
    # without replacement from 20000: close to binomial, se sqrt(p (1 - p) / n)
    assert_within_se(share, 0.75, np.sqrt(0.75 * 0.25 / 500))
    w = np.exp(log_w)
    assert state.ess == pytest.approx(w.sum() ** 2 / (w**2).sum())
    assert pickle.loads(pickle.dumps(store)).state().count == 0
    merged = state.merge(ReservoirState.empty())
    assert merged is state
