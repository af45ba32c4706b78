"""The posterior pilot: HMC at the posterior from a mode gives the exact posterior's moments, from a poor start too;
a fixed function of its seed; its deadline and its inputs; the pool's rule for running it."""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.analytic_models import independent_normal_means
from tests.tolerance import assert_within_se

import pmcbandit  # noqa: F401  (configures PyTensor before pymc is imported)
from pmcbandit.arms.evidence import ModelDensity
from pmcbandit.arms.evidence.ais import PilotTimeout
from pmcbandit.arms.evidence.posterior_pilot import (POSTERIOR_PILOT_CHAINS, POSTERIOR_PILOT_DRAWS,
                                                     POSTERIOR_PILOT_MAX_DRAWS, POSTERIOR_PILOT_WARMUP, draw_moves,
                                                     posterior_pilot)

DIM, M0, S0, S = 12, 0.5, 1.0, 0.3


def _model():
    """A Gaussian posterior with coordinates of different means: ``(model, y, log Z, posterior means, variance)``."""
    return independent_normal_means(DIM, M0, S0, S, seed=20171103)


@pytest.fixture(scope="module")
def normal():
    model, _, _, mean, v = _model()
    return ModelDensity(model), mean, v


def _check_moments(pilot, mean, v):
    # One independent draw per chain is conservative (HMC with an adapted mass decorrelates a Gaussian's
    # coordinates within a few moves, and each chain keeps 100 states).
    n_eff = POSTERIOR_PILOT_CHAINS
    z = (pilot.posterior_mean - mean) / np.sqrt(v)
    assert_within_se(z.mean(), 0.0, 1.0 / np.sqrt(n_eff * DIM))
    assert np.all(np.abs(z) <= 4.0 / np.sqrt(n_eff))
    ratio = np.diag(pilot.posterior_cov) / v
    assert_within_se(ratio.mean(), 1.0, np.sqrt(2.0 / (n_eff * DIM)))
    off = pilot.posterior_cov[~np.eye(DIM, dtype=bool)] / v
    assert np.abs(off).max() <= 4.0 / np.sqrt(n_eff)


def test_moments_match_the_exact_posterior_from_the_mode(normal):
    density, mean, v = normal
    pilot = posterior_pilot(density, mean, np.eye(DIM) / v)
    assert pilot.n_draws == POSTERIOR_PILOT_CHAINS * 100 and pilot.posterior_cov.shape == (DIM, DIM)
    assert 0.6 < pilot.accept < 0.95  # the dual averaging's target is 0.8
    _check_moments(pilot, mean, v)


def test_the_warm_up_moves_the_chains_from_a_poor_start(normal):
    # Started 20 posterior sds off in every coordinate with a curvature 25 times too high (the chains start
    # tightly around the wrong point, as at a non-centred hierarchy's mode): the warm-up reaches the mass.
    density, mean, v = normal
    pilot = posterior_pilot(density, mean + 20.0 * np.sqrt(v), 25.0 * np.eye(DIM) / v, seed=7)
    _check_moments(pilot, mean, v)


def test_a_fixed_function_of_its_seed(normal):
    density, mean, v = normal
    a = posterior_pilot(density, mean, np.eye(DIM) / v, seed=3)
    b = posterior_pilot(density, mean, np.eye(DIM) / v, seed=3)
    c = posterior_pilot(density, mean, np.eye(DIM) / v, seed=4)
    np.testing.assert_array_equal(a.posterior_cov, b.posterior_cov)
    assert a.step_size == b.step_size and not np.array_equal(a.posterior_mean, c.posterior_mean)


def test_deadline_and_a_start_outside_the_support(normal):
    density, mean, v = normal
    with pytest.raises(PilotTimeout, match="the posterior pilot passed its time limit after 1 of its 200 moves"):
        posterior_pilot(density, mean, np.eye(DIM) / v, deadline=time.perf_counter())
    with pytest.raises(ValueError, match="no posterior pilot: the mode it starts from has no finite log density"):
        posterior_pilot(density, np.full(DIM, np.nan), np.eye(DIM) / v)


def test_draw_count_grows_with_the_dimension():
    assert draw_moves(DIM, POSTERIOR_PILOT_CHAINS) == POSTERIOR_PILOT_DRAWS  # 200 x 12 / 32 = 75, raised to the fewest
    assert draw_moves(102, 32) == 638  # ceil(200 x 102 / 32)
    assert draw_moves(10_000, 32) == POSTERIOR_PILOT_MAX_DRAWS


class _Clock:
    """A clock that reads one second later at every call (the pilot reads it at its start and after each move)."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        self.now += 1.0
        return self.now


def test_deadline_after_the_fewest_draws_keeps_the_draws_so_far(normal, monkeypatch):
    import pmcbandit.arms.evidence.posterior_pilot as pp

    density, mean, v = normal
    monkeypatch.setattr(pp, "time", _Clock())
    # The clock reads move + 1 after move `move`: this deadline ends the run after move WARMUP + 110.
    cut = posterior_pilot(density, mean, np.eye(DIM) / v, n_draws=300, deadline=POSTERIOR_PILOT_WARMUP + 110.5)
    assert cut.timed_out and cut.n_draws == 110 * POSTERIOR_PILOT_CHAINS
    _check_moments(cut, mean, v)
    monkeypatch.setattr(pp, "time", _Clock())
    whole = posterior_pilot(density, mean, np.eye(DIM) / v, n_draws=300, deadline=1e9)
    assert not whole.timed_out and whole.n_draws == 300 * POSTERIOR_PILOT_CHAINS
    monkeypatch.setattr(pp, "time", _Clock())
    with pytest.raises(PilotTimeout, match=f"after {POSTERIOR_PILOT_WARMUP + 99} of its"):
        posterior_pilot(density, mean, np.eye(DIM) / v, n_draws=300, deadline=POSTERIOR_PILOT_WARMUP + 99.5)


def test_draws_stop_where_enough_says_so(normal):
    density, mean, v = normal
    seen = []

    def enough(pilot):
        seen.append(pilot.n_draws)
        return pilot.n_draws >= 2 * POSTERIOR_PILOT_DRAWS * POSTERIOR_PILOT_CHAINS

    pilot = posterior_pilot(density, mean, np.eye(DIM) / v, n_draws=500, enough=enough)
    assert seen == [POSTERIOR_PILOT_DRAWS * POSTERIOR_PILOT_CHAINS, 2 * POSTERIOR_PILOT_DRAWS * POSTERIOR_PILOT_CHAINS]
    assert pilot.n_draws == seen[-1] and not pilot.timed_out
    seen.clear()
    pilot = posterior_pilot(density, mean, np.eye(DIM) / v, n_draws=500, enough=lambda p: seen.append(p.n_draws))
    assert seen == [100 * POSTERIOR_PILOT_CHAINS, 200 * POSTERIOR_PILOT_CHAINS, 400 * POSTERIOR_PILOT_CHAINS]
    assert pilot.n_draws == 500 * POSTERIOR_PILOT_CHAINS


@pytest.mark.slow
def test_pool_runs_it_where_the_laplace_arms_fail_without_an_hmc_arm(normal, monkeypatch):
    import pmcbandit.evidence.pool as ev

    model = normal[0].model
    kw = dict(ais_steps=(20,), n_chains=1, transition="slice", laplace=True,
              laplace_proposals=ev.DEFAULT_LAPLACE_PROPOSALS, prior=False, smc=False, batch_size=500,
              cost="cpu_seconds", non_centre=False, hmc_arm=False, pilot_is=None, nested=False)
    # The Laplace arms pass their set-up check on this Gaussian: no pilot.
    arms, notes, _ = ev.build_pool(model, budget_seconds=10.0, **kw)
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "ais-20"]
    # Where they fail it, the posterior pilot runs from their mode once the pulls have the time it needs ...
    import pmcbandit.evidence.importance as importance

    for module in (ev, importance):
        monkeypatch.setattr(module, "setup_check_passes", lambda arms: False)
    arms, notes, _ = ev.build_pool(model, budget_seconds=10.0, **kw)
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "pilot-t", "pilot-t20", "ais-20"]
    assert any(n.startswith("pilot-t arms' moments from 3200 draws of HMC at the posterior") for n in notes)
    assert arms[2].modes.reason == "moments of 3200 draws of the posterior pilot"
    # ... not below POSTERIOR_PILOT_MIN_RUN_SECONDS (the annealing pilot's 15 s do not apply) ...
    arms, _, _ = ev.build_pool(model, budget_seconds=0.9 * ev.POSTERIOR_PILOT_MIN_RUN_SECONDS, **kw)
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "ais-20"]
    # ... where its arms fail the check too, the annealing pilot runs for them when PILOT_MIN_RUN_SECONDS are left ...
    arms, notes, _ = ev.build_pool(model, budget_seconds=2 * ev.PILOT_MIN_RUN_SECONDS, **kw)
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "pilot-t", "pilot-t20", "ais-20"]
    assert arms[2].modes.reason.endswith("draws of the HMC pilot")
    assert any(n.startswith("no pilot-t arm from the posterior pilot passed the Pareto k-hat check") for n in notes)
    # ... and the posterior pilot is given up past its share of the time left, with a note.
    import pmcbandit.evidence.pilots as pilots

    monkeypatch.setattr(pilots, "POSTERIOR_PILOT_MAX_SHARE", 0.0)
    arms, notes, _ = ev.build_pool(model, budget_seconds=10.0, **kw)
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "ais-20"]
    assert any(n.startswith("pilot-t arms left out: the posterior pilot passed its time limit after 1 of its")
               for n in notes)


def test_pool_stops_its_draws_once_a_pilot_t_arm_passes(normal, monkeypatch):
    import pmcbandit.arms.evidence.posterior_pilot as pp
    import pmcbandit.evidence.importance as importance
    import pmcbandit.evidence.pool as ev

    kw = dict(ais_steps=(), n_chains=1, transition="slice", laplace=True,
              laplace_proposals=ev.DEFAULT_LAPLACE_PROPOSALS, prior=False, smc=False, batch_size=500,
              cost="cpu_seconds", non_centre=False, hmc_arm=False, pilot_is=None, nested=False)
    monkeypatch.setattr(pp, "draw_moves", lambda dim, n_chains: 400)
    monkeypatch.setattr(ev, "setup_check_passes", lambda arms: False)  # the Laplace arms fail; the pilot-t arms pass
    _, notes, _ = ev.build_pool(normal[0].model, budget_seconds=10.0, **kw)
    assert any(n.startswith("pilot-t arms' moments from 3200 draws") for n in notes)
    monkeypatch.setattr(importance, "setup_check_passes", lambda arms: False)  # the pilot-t arms fail at every check
    _, notes, _ = ev.build_pool(normal[0].model, budget_seconds=10.0, **kw)
    assert any(n.startswith("pilot-t arms' moments from 12800 draws") for n in notes)


def test_its_draws_make_an_unbiased_importance_arm(normal):
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence.laplace_is import moment_fit

    density, mean, v = normal
    log_z = _model()[2]
    pilot = posterior_pilot(density, mean + 2.0 * np.sqrt(v), 4.0 * np.eye(DIM) / v)
    fit = moment_fit(pilot.posterior_mean, pilot.posterior_cov, pilot.n_draws, "the posterior pilot")
    arm = LaplaceISArm(density, df=20.0, inflation=1.1, defensive=0.02, batch_size=4000, modes=fit, name="pilot-t20")
    ratio = np.exp(arm.pull(np.random.default_rng(5)).values - log_z)
    assert_within_se(ratio.mean(), 1.0, ratio.std(ddof=1) / np.sqrt(ratio.size))


def test_started_at_trace_draws_it_makes_fewer_gradient_calls(normal):
    # A trace's draws start the chains in the typical set with its variances as the first mass: the trace start's
    # shorter warm-up and earlier first check reach the same check in 50 + 25 moves where the start from a mode takes
    # 100 + 100, counted in gradient calls (one per chain and leapfrog step, one per start and one at the mode).
    from pmcbandit.arms.evidence.ais import HMC_LEAPFROG
    from pmcbandit.evidence.pilots import TRACE_PILOT_FIRST_CHECK, TRACE_PILOT_WARMUP, trace_start

    density, mean, v = normal
    trace = mean + np.sqrt(v) * np.random.default_rng(8).standard_normal((2000, DIM))
    start = trace_start(trace)
    assert start["starts"].shape == (POSTERIOR_PILOT_CHAINS, DIM)
    np.testing.assert_array_equal(start["starts"][[0, -1]], trace[[0, -1]])  # spread from the first to the last
    calls = []

    class Counting:
        def log_density_and_grad(self, x):
            calls.append(1)
            return density.log_density_and_grad(x)

    def made(**kwargs):
        calls.clear()
        pilot = posterior_pilot(Counting(), mean, np.eye(DIM) / v, enough=lambda p: True, seed=9, **kwargs)
        return pilot, len(calls)

    pilot, n = made(**start)
    moves = TRACE_PILOT_WARMUP + TRACE_PILOT_FIRST_CHECK
    assert pilot.n_draws == TRACE_PILOT_FIRST_CHECK * POSTERIOR_PILOT_CHAINS
    assert n == POSTERIOR_PILOT_CHAINS * (moves * HMC_LEAPFROG + 1) + 1
    _check_moments(pilot, mean, v)
    _, n_mode = made()
    assert n_mode == POSTERIOR_PILOT_CHAINS * ((POSTERIOR_PILOT_WARMUP + POSTERIOR_PILOT_DRAWS) * HMC_LEAPFROG + 1) + 1
    assert n_mode > 2 * n


def test_trace_start_checks_first_once_the_draws_fit_a_covariance():
    # Below d(d + 1) draws a sample covariance's error gives the t's log weights a variance above 1/2 (trace_start's
    # docstring): the first check waits for them where the trace start's few moves would make fewer.
    from pmcbandit.evidence.pilots import TRACE_PILOT_FIRST_CHECK, trace_start

    rng = np.random.default_rng(3)
    assert trace_start(rng.standard_normal((500, 10)))["first_check"] == TRACE_PILOT_FIRST_CHECK
    for dim in (60, 102):
        moves = trace_start(rng.standard_normal((500, dim)))["first_check"]
        assert moves * POSTERIOR_PILOT_CHAINS >= dim * (dim + 1) > (moves - 1) * POSTERIOR_PILOT_CHAINS
    # Fewer chains (a trace of fewer draws than POSTERIOR_PILOT_CHAINS) need more moves for the same draws.
    assert trace_start(rng.standard_normal((16, 60)))["first_check"] == -(-60 * 61 // 16)


def test_sample_covariance_log_weight_variance_follows_the_dimension_rule():
    # The rule behind trace_start's first check: a Gaussian fitted to n draws of N(0, I_d) gives log weights of
    # variance about d(d + 1) / (2n) under it (first order in the covariance's error).
    rng = np.random.default_rng(4)
    dim, n = 40, 8 * 40 * 41
    x = rng.standard_normal((n, dim))
    cov = np.cov(x, rowvar=False)
    chol = np.linalg.cholesky(cov)
    z = rng.standard_normal((20000, dim)) @ chol.T  # draws of the fitted proposal
    log_q = -0.5 * np.sum(np.linalg.solve(chol, z.T) ** 2, axis=0) - np.log(np.diag(chol)).sum()
    log_p = -0.5 * np.sum(z ** 2, axis=1)
    expected = dim * (dim + 1) / (2 * n)
    assert abs(np.var(log_p - log_q) / expected - 1.0) < 0.25
