"""The set-up of the trace arms: the ``trace-t`` covariance (the trace's correlations shrunk by their sampling noise,
the draws' variances alone where the shrunk covariance's arms fail the set-up check), and the posterior pilot started
at the trace's draws where no trace arm passes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pmcbandit import evidence_arms
from pmcbandit.evidence.trace_arms import shrunk_covariance, trace_fits
from pmcbandit.exceptions import PmcBanditWarning


def _ar1(rng, n, d, phi, corr):
    """``n`` draws of a stationary Gaussian AR(1) chain in ``d`` dimensions, lag-one autocorrelation ``phi``, every
    pair of coordinates correlated ``corr``, unit variances.
    """
    root = np.linalg.cholesky((1 - corr) * np.eye(d) + corr * np.ones((d, d)))
    x = np.empty((n, d))
    x[0] = rng.standard_normal(d) @ root.T
    for t in range(1, n):
        x[t] = phi * x[t - 1] + np.sqrt(1 - phi**2) * (rng.standard_normal(d) @ root.T)
    return x


def test_independent_draws_keep_strong_correlations_and_lose_noise():
    rng = np.random.default_rng(0)
    strong = _ar1(rng, 2000, 10, 0.0, 0.8)
    cov, shrinkage = shrunk_covariance(strong)
    assert shrinkage < 0.01
    np.testing.assert_allclose(cov, np.cov(strong, rowvar=False), atol=0.01)
    none = _ar1(rng, 2000, 30, 0.0, 0.0)  # every sample correlation is noise
    cov, shrinkage = shrunk_covariance(none)
    assert shrinkage > 0.8
    np.testing.assert_allclose(np.diag(cov), np.var(none, axis=0, ddof=1))


def test_autocorrelated_draws_shrink_more_than_independent_ones():
    # The same weak correlations (0.1): n = 2000 independent draws measure them to about 1/sqrt(2000); a chain of
    # lag-one autocorrelation 0.9 has about 2000 * 0.1 / 1.9 = 105 effective draws, which batch means see.
    iid = shrunk_covariance(_ar1(np.random.default_rng(1), 2000, 20, 0.0, 0.1))[1]
    chain = shrunk_covariance(_ar1(np.random.default_rng(1), 2000, 20, 0.9, 0.1))[1]
    assert iid < 0.15 and chain > 4 * iid


def test_one_dimension_and_stuck_coordinates():
    cov, shrinkage = shrunk_covariance(np.random.default_rng(2).standard_normal((200, 1)))
    assert shrinkage == 1.0 and cov.shape == (1, 1)
    x = np.random.default_rng(3).standard_normal((400, 3))
    x[:200, 2] = 0.5  # a coordinate that does not move in the first half of the draws
    cov, shrinkage = shrunk_covariance(x)
    assert np.isfinite(cov).all() and 0.0 <= shrinkage <= 1.0
    assert trace_fits(np.ones((50, 1)), clusters=False).moments is None  # no variance: no t


def _independent_means(d=10, n_obs=20):
    """``d`` independent normal means, each with ``n_obs`` unit-variance observations, and their exact posterior
    means and standard deviation.
    """
    import pymc as pm

    y = np.random.default_rng(6).normal(0.5, 1.0, (n_obs, d))
    with pm.Model() as model:
        a = pm.Normal("a", 0, 1, shape=d)
        pm.Normal("y", a, 1, observed=y)
    return model, y.sum(axis=0) / (n_obs + 1), (n_obs + 1) ** -0.5


@pytest.mark.filterwarnings("ignore::pmcbandit.exceptions.NoGuaranteeWarning")
def test_spurious_correlation_falls_back_to_the_variances_without_a_pilot():
    # The means are independent a posteriori; the trace has their exact marginals but a correlation of 0.99 between
    # every two of them, the same in every batch of draws, so the shrinkage keeps it: a t on it is far too narrow in
    # nine of the ten directions and fails the set-up check, and the arms on the variances alone pass it.
    model, mean, sd = _independent_means()
    rng = np.random.default_rng(4)
    common = rng.standard_normal((2, 1000, 1))
    z = np.sqrt(0.99) * common + np.sqrt(0.01) * rng.standard_normal((2, 1000, mean.size))
    trace = {"a": mean + sd * z}
    fits = trace_fits(trace["a"].reshape(-1, mean.size), clusters=False)
    assert fits.shrinkage < 0.01 and fits.diagonal is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        arms = evidence_arms(model, idata=trace, ais_steps=(50,), budget_seconds=10.0)
    names = [a.name for a in arms]
    assert "trace-t" in names and "pilot-t" not in names
    t = next(a for a in arms if a.name == "trace-t")
    np.testing.assert_array_equal(t.covariance, np.diag(np.diag(t.covariance)))
    # Independent draws with the same marginals: the shrunk covariance's arms pass, no fallback and no pilot.
    plain = {"a": mean + sd * rng.standard_normal((2, 1000, mean.size))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        arms = evidence_arms(model, idata=plain, ais_steps=(50,), budget_seconds=10.0)
    assert "pilot-t" not in [a.name for a in arms]


@pytest.mark.filterwarnings("ignore::pmcbandit.exceptions.NoGuaranteeWarning")
def test_a_trace_too_short_for_its_dimension_brings_the_posterior_pilot_beside_passing_arms(caplog):
    # Independent draws of the exact posterior: the trace arms pass the set-up check in either case. With fewer than
    # d(d + 1) draws (covariance_draws) the pilot runs from them all the same, its first check after that many draws.
    import logging

    from pmcbandit.evidence.pilots import covariance_draws

    model, mean, sd = _independent_means(d=12)
    rng = np.random.default_rng(5)
    for per_chain, short in ((500, False), (70, True)):
        plain = {"a": mean + sd * rng.standard_normal((2, per_chain, mean.size))}
        assert (2 * per_chain < covariance_draws(mean.size)) == short
        caplog.clear()
        with warnings.catch_warnings(), caplog.at_level(logging.INFO, logger="pmcbandit"):
            warnings.simplefilter("ignore", PmcBanditWarning)
            arms = evidence_arms(model, idata=plain, ais_steps=(50,), budget_seconds=10.0)
        names = [a.name for a in arms]
        assert "trace-t" in names and ("pilot-t" in names) == short, names
        assert ("are fewer than the 156 a covariance in 12 dimensions needs" in caplog.text) == short


@pytest.mark.filterwarnings("ignore::pmcbandit.exceptions.NoGuaranteeWarning")
def test_the_posterior_pilot_starts_at_the_trace_draws_and_reaches_the_posterior(monkeypatch):
    # A trace far from the posterior and far too narrow: no trace arm passes (nor a local-t arm: the local search,
    # as the mode search, is made to reach no interior mode), and the pilot's chains, started at its draws with their
    # variances (1e-4) as the first mass, reach the posterior in their warm-up.
    import pmcbandit.evidence.pool as ev
    from pmcbandit.evidence.trace import read_trace
    from tests.analytic_models import normal_normal
    from tests.evidence.test_trace import no_local_mode

    no_local_mode(monkeypatch)
    model, _ = normal_normal(1.0, 2.0, 0.7, (0.3, 1.9, 2.4, 1.1))
    far = {"mu": np.random.default_rng(2).normal(6.0, 0.01, (2, 500))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        trace = read_trace(far, model, "test")
        arms, notes, _ = ev.build_pool(model, ais_steps=(50,), n_chains=1, transition="slice", laplace=True,
                                       laplace_proposals=ev.DEFAULT_LAPLACE_PROPOSALS, prior=True, smc=False,
                                       batch_size=1000, cost="cpu_seconds", budget_seconds=10.0, trace=trace)
    assert any("started at 32 of the trace's draws" in n for n in notes)
    pilot_t = next(a for a in arms if a.name == "pilot-t")
    prec = 1 / 2.0**2 + 4 / 0.7**2
    mean = (1.0 / 2.0**2 + 5.7 / 0.7**2) / prec
    assert abs(pilot_t.location[0] - mean) < 4 * prec**-0.5 / np.sqrt(32)
