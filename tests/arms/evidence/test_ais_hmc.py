"""AIS with HMC transitions: gradients, invariance of a move, unbiased evidence, determinism, chain parity, inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.analytic_models import independent_normal_means
from tests.tolerance import assert_within_se

import pmcbandit  # noqa: F401  (configures PyTensor before pymc is imported)
from pmcbandit.arms.evidence import AISArm, ModelDensity
from pmcbandit.arms.evidence._kernels import chain_seeds

DIM, M0, S0, S = 30, 0.5, 1.0, 0.5


def _normal_model():
    """:func:`tests.analytic_models.independent_normal_means` in ``DIM`` dimensions: ``(model, y, log Z)``."""
    return independent_normal_means(DIM, M0, S0, S)[:3]


@pytest.fixture(scope="module")
def normal():
    model, y, log_z = _normal_model()
    density = ModelDensity(model)
    arm = AISArm(density, n_steps=800, n_chains=500, transition="hmc", hmc_leapfrog=3)
    return density, arm, y, log_z


@pytest.mark.slow
def test_gradients_match_finite_differences(normal):
    density = normal[0]
    x = np.random.default_rng(0).normal(size=DIM)
    lp, ll, g_lp, g_ll = density.value_and_grad_terms(x)
    # Two compiled graphs (the values with their gradients, and the values alone) agree to rounding, not to the bit.
    np.testing.assert_allclose((lp, ll), density.logp_terms(x), rtol=1e-13, atol=0.0)
    h = 1e-6
    for i in (0, 7, DIM - 1):
        e = np.zeros(DIM)
        e[i] = h
        (lp1, ll1), (lp0, ll0) = density.logp_terms(x + e), density.logp_terms(x - e)
        np.testing.assert_allclose([g_lp[i], g_ll[i]], [(lp1 - lp0) / (2 * h), (ll1 - ll0) / (2 * h)], rtol=1e-6)


def test_a_move_leaves_the_tempered_posterior_invariant(normal):
    from pmcbandit.arms.evidence.hmc_kernel import hmc_moves

    density, arm, y, _ = normal
    beta, n = 0.3, 4000
    prec = 1 / S0**2 + beta / S**2
    mean, sd = (M0 / S0**2 + beta * y / S**2) / prec, prec**-0.5
    rng = np.random.default_rng(3)
    x = np.ascontiguousarray(mean + sd * rng.normal(size=(n, DIM)))
    z = rng.normal(size=(n, DIM))
    acc = np.empty((n, 3))
    # A deliberately large step (acceptance well below 1), so only the Metropolis correction keeps N(mean, sd^2).
    hmc_moves(density.grad_terms_fn, x, z, beta, 1.5 * sd, np.full(DIM, 0.5 * sd**2), 3, 0.5, 3, chain_seeds(rng, n),
              acc)
    assert 0.05 < acc.mean() < 0.9
    stat = ((x - mean) / sd).ravel()  # standard normal coordinates, nearly independent across chains
    assert_within_se(stat.mean(), 0.0, 1.0 / np.sqrt(stat.size))
    assert_within_se((stat**2).mean(), 1.0, np.sqrt(2.0 / stat.size))


def test_ais_hmc_is_unbiased(normal):
    _, arm, _, log_z = normal
    ratio = np.exp(arm.pull(np.random.default_rng(11)).values - log_z)
    se = ratio.std(ddof=1) / np.sqrt(ratio.size)
    assert 0 < se < 0.1  # precise enough for the check to fail on a biased kernel
    assert_within_se(ratio.mean(), 1.0, se)


def test_pilot_is_fixed_and_maps_every_temperature(normal):
    density, arm, _, _ = normal
    pilot = arm.pilot
    assert pilot.betas[0] == 0.0 and pilot.betas[-1] == 1.0 and np.all(np.diff(pilot.betas) > 0)
    assert pilot.inv_mass.shape == (pilot.betas.size, DIM) and np.all(pilot.inv_mass > 0)
    assert np.all(np.isfinite(pilot.step_size)) and np.all(pilot.step_size > 0)
    eps, index, _ = arm._proposal
    assert np.all(pilot.betas[index] >= arm.betas) and np.all(index[1:] >= index[:-1])
    np.testing.assert_array_equal(eps, pilot.step_size[index])
    again = AISArm(density, n_steps=800, n_chains=500, transition="hmc", hmc_leapfrog=3)
    np.testing.assert_array_equal(again.pilot.step_size, pilot.step_size)
    np.testing.assert_array_equal(again.pilot.inv_mass, pilot.inv_mass)


def test_pilot_schedule_spreads_the_steps_evenly_over_the_pilots_temperatures():
    from pmcbandit.arms.evidence.ais import pilot_schedule

    pilot = np.array([0.0, 1e-4, 1e-2, 0.3, 1.0])
    np.testing.assert_allclose(pilot_schedule(pilot, 4), pilot, rtol=1e-14)  # the pilot's own temperatures
    halves = pilot_schedule(pilot, 8)
    np.testing.assert_allclose(halves[::2], pilot, rtol=1e-14)
    # between two of the pilot's temperatures, the midpoint of their fourth roots, to the fourth power
    np.testing.assert_allclose(halves[1::2], ((pilot[:-1] ** 0.25 + pilot[1:] ** 0.25) / 2) ** 4, rtol=1e-14)
    assert halves[1] == pytest.approx(1e-4 / 16, rel=1e-14)  # out of the prior as power-4 starts: (1/2)^4 of the step
    np.testing.assert_allclose(pilot_schedule(pilot, 2), [0.0, 1e-2, 1.0], rtol=1e-14)  # index 0, 2, 4
    assert pilot_schedule(pilot, 3)[[0, -1]].tolist() == [0.0, 1.0] and np.all(np.diff(pilot_schedule(pilot, 9)) > 0)
    for bad in ([0.0, 0.5], [0.1, 1.0], [0.0, 0.6, 0.5, 1.0], [[0.0, 1.0]], [1.0]):
        with pytest.raises(ValueError, match="The 'pilot_betas' parameter of pilot_schedule must be a non-decreasing"):
            pilot_schedule(np.array(bad), 4)


def test_an_arm_on_the_pilot_schedule_anneals_along_it_and_is_unbiased(normal):
    from pmcbandit.arms.evidence.ais import pilot_schedule

    density, arm, _, log_z = normal
    on_pilot = AISArm(density, n_steps=400, n_chains=500, transition="hmc", hmc_leapfrog=3, hmc_pilot=arm.pilot,
                      schedule="pilot")
    np.testing.assert_array_equal(on_pilot.betas, pilot_schedule(arm.pilot.betas, 400))
    assert on_pilot.name == "ais-hmc-400" and on_pilot.expected_seconds == 400 * on_pilot.step_seconds
    ratio = np.exp(on_pilot.pull(np.random.default_rng(12)).values - log_z)
    se = ratio.std(ddof=1) / np.sqrt(ratio.size)
    assert 0 < se < 0.1
    assert_within_se(ratio.mean(), 1.0, se)
    with pytest.raises(ValueError, match="The 'schedule' parameter of AISArm must be 'power4', 'linear' or an array "
                                         "with transition='slice'"):
        AISArm(_normal_model()[0], n_steps=10, schedule="pilot")  # a pm.Model: raised before compiling


@pytest.mark.slow
def test_same_seed_same_values_and_pull_info(normal):
    _, arm, _, _ = normal
    a = arm.pull(np.random.default_rng(5))
    np.testing.assert_array_equal(a.values, arm.pull(np.random.default_rng(5)).values)
    assert not np.array_equal(a.values, arm.pull(np.random.default_rng(6)).values)
    assert set(a.info) == set(arm.diagnostics) and arm.name == "ais-hmc-800"
    assert a.info["evals_per_update"] == pytest.approx(3.0, abs=0.05)
    assert 0.3 < a.info["accept_rate"] < 1.0


def test_chains_of_one_call_match_one_chain_per_call(normal):
    _, arm, _, _ = normal
    rng = np.random.default_rng(2)
    x0 = arm.density.sample_prior(rng, 5)
    seeds = chain_seeds(rng, 5)
    together = arm._run(x0, arm.betas, seeds, arm._proposal)
    for c in range(5):
        alone = arm._run(x0[c:c + 1].copy(), arm.betas, seeds[c:c + 1].copy(), arm._proposal)
        for a, b in zip(together, alone):
            assert a[c] == b[0]


@pytest.mark.slow
def test_parallel_chains_match_serial_and_a_shared_pilot(normal):
    density, arm, _, _ = normal
    serial = AISArm(density, n_steps=30, n_chains=6, transition="hmc", hmc_leapfrog=3, hmc_pilot=arm.pilot)
    parallel = AISArm(density, n_steps=30, n_chains=6, transition="hmc", hmc_leapfrog=3, hmc_pilot=arm.pilot,
                      parallel=True)
    assert serial.pilot is arm.pilot
    with pytest.raises(TypeError, match="The 'hmc_pilot' parameter of AISArm must be None or an HMCPilot"):
        AISArm(density, n_steps=30, transition="hmc", hmc_pilot=(0.0, 1.0))
    other = arm.pilot._replace(inv_mass=arm.pilot.inv_mass[:, :1])
    with pytest.raises(ValueError, match="The 'hmc_pilot' parameter of AISArm must be the HMCPilot of a density"):
        AISArm(density, n_steps=30, transition="hmc", hmc_pilot=other)
    np.testing.assert_array_equal(serial.pull(np.random.default_rng(3)).values,
                                  parallel.pull(np.random.default_rng(3)).values)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"hmc_leapfrog": 0}, ValueError, "The 'hmc_leapfrog' parameter of AISArm must be > 0. Got 0 instead."),
        ({"hmc_leapfrog": 2.5}, TypeError, "The 'hmc_leapfrog' parameter of AISArm must be an int"),
        ({"hmc_target_accept": 1.0}, ValueError, "The 'hmc_target_accept' parameter of AISArm must be in the open"),
        ({"hmc_target_accept": "high"}, TypeError, "The 'hmc_target_accept' parameter of AISArm must be a real"),
        ({"hmc_persistence": 1.0}, ValueError, r"The 'hmc_persistence' parameter of AISArm must be in \[0, 1\)"),
        ({"hmc_persistence": -0.1}, ValueError, "The 'hmc_persistence' parameter of AISArm must be >= 0"),
        ({"transition": "nuts"}, ValueError, "The 'transition' parameter of AISArm must be one of"),
    ],
)
def test_bad_arguments_raise_before_compiling(kwargs, error, match):
    model = _normal_model()[0]  # a pm.Model: the checks come before the density is compiled
    with pytest.raises(error, match=match):
        AISArm(model, transition=kwargs.pop("transition", "hmc"), **kwargs)


@pytest.mark.slow
def test_pool_adds_one_hmc_arm_from_20_dimensions():
    from pmcbandit.evidence.estimate import evidence_arms

    model = _normal_model()[0]  # 30 dimensions
    arms = evidence_arms(model, ais_steps=(20, 40), laplace=False, prior=False, non_centre=False, nested=False)
    assert [a.name for a in arms] == ["ais-20", "ais-40", "ais-hmc-40"]
    assert arms[-1].hmc_leapfrog == 5  # untimed: no arm sized for the check
    with pytest.raises(TypeError, match="The 'hmc_arm' parameter of evidence_arms must be None or a bool. Got 1"):
        evidence_arms(model, hmc_arm=1)


def _posterior_moments(y):
    """Exact posterior mean and variance of each ``mu_i`` of :func:`_normal_model`."""
    return independent_normal_means(DIM, M0, S0, S)[3:]


def test_pilot_posterior_moments_match_the_exact_posterior(normal):
    _, arm, y, _ = normal
    mean, v = _posterior_moments(y)
    pilot = arm.pilot
    assert pilot.posterior_mean.shape == (DIM,) and pilot.posterior_cov.shape == (DIM, DIM)
    assert pilot.n_draws >= 200 * DIM
    # The chains descend from a resampled population: a quarter of them as independent draws is conservative.
    n_eff = 32
    z = (pilot.posterior_mean - mean) / np.sqrt(v)
    assert_within_se(z.mean(), 0.0, 1.0 / np.sqrt(n_eff * DIM))
    assert np.all(np.abs(z) <= 4.0 / np.sqrt(n_eff))
    ratio = np.diag(pilot.posterior_cov) / v
    assert_within_se(ratio.mean(), 1.0, np.sqrt(2.0 / (n_eff * DIM)))
    off = pilot.posterior_cov[~np.eye(DIM, dtype=bool)] / v  # independent coordinates
    assert np.abs(off).max() <= 4.0 * np.sqrt(1.0 / n_eff)


def test_moment_fit_arm_is_unbiased_and_passes_khat(normal):
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence.laplace_is import moment_fit
    from pmcbandit.stats.psis import pareto_khat

    density, arm, _, log_z = normal
    fit = moment_fit(arm.pilot.posterior_mean, arm.pilot.posterior_cov, arm.pilot.n_draws, "the HMC pilot")
    assert fit.interior and fit.reason == f"moments of {arm.pilot.n_draws} draws of the HMC pilot"
    pilot_t = LaplaceISArm(density, df=5.0, inflation=1.2, batch_size=4000, modes=fit, name="pilot-t")
    assert np.isnan(pilot_t.log_z_laplace) and pilot_t.mode_weights.tolist() == [1.0]
    values = pilot_t.pull(np.random.default_rng(12)).values
    assert pareto_khat(values) < 0.5
    ratio = np.exp(values - log_z)
    assert_within_se(ratio.mean(), 1.0, ratio.std(ddof=1) / np.sqrt(ratio.size))


def test_moment_fit_rejects_a_covariance_that_is_not_positive_definite():
    from pmcbandit.arms.evidence.laplace_is import moment_fit

    with pytest.raises(ValueError, match="no moment fit from the pilot: its covariance is not finite and positive"):
        moment_fit(np.zeros(2), np.array([[1.0, 1.0], [1.0, 1.0]]), 10, "the pilot")
    with pytest.raises(ValueError, match="no moment fit from the pilot"):
        moment_fit(np.zeros(2), np.array([[1.0, np.nan], [np.nan, 1.0]]), 10, "the pilot")


@pytest.mark.slow
def test_pilot_stops_at_its_deadline():
    import time

    from pmcbandit.arms.evidence.ais import PilotTimeout, tune_hmc

    density = ModelDensity(_normal_model()[0])
    with pytest.raises(PilotTimeout, match="the HMC pilot passed its time limit after 1 temperatures"):
        tune_hmc(density, 3, 0.8, 0.9, deadline=time.perf_counter())


@pytest.mark.slow
def test_pool_adds_pilot_t_arms_by_the_rule(monkeypatch):
    import pmcbandit.evidence.pilots as pilots
    import pmcbandit.evidence.pool as ev

    model = _normal_model()[0]  # 30 dimensions: the HMC arm's pilot runs, and serves the pilot-t arms too
    kw = dict(ais_steps=(20,), prior=False, non_centre=False, nested=False)
    assert [a.name for a in ev.evidence_arms(model, **kw)] == ["laplace-t", "laplace-t20", "pilot-t", "pilot-t20",
                                                               "ais-20", "ais-hmc-20"]
    assert [a.name for a in ev.evidence_arms(model, laplace=False, **kw)] == ["ais-20", "ais-hmc-20"]
    # Without the HMC arm, a pilot for the pilot-t arms alone runs only where no Laplace arm passes k-hat.
    arms, notes, _ = ev.build_pool(model, ais_steps=(20,), n_chains=1, transition="slice", laplace=True,
                              laplace_proposals=ev.DEFAULT_LAPLACE_PROPOSALS, prior=False, smc=False, batch_size=1000,
                              cost="cpu_seconds", budget_seconds=None, non_centre=False, hmc_arm=False, nested=False)
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "ais-20"]
    assert any(n.startswith("pilot-t arms left out: a Laplace arm's set-up draws passed") for n in notes)
    forced = ev.evidence_arms(model, hmc_arm=False, pilot_is=True, **kw)
    assert [a.name for a in forced] == ["laplace-t", "laplace-t20", "pilot-t", "pilot-t20", "ais-20"]
    # Timed: only with PILOT_MIN_RUN_SECONDS left; the pilot is given up past PILOT_MAX_SHARE of it.
    short = ev.evidence_arms(model, budget_seconds=ev.PILOT_MIN_RUN_SECONDS / 2, pilot_is=None, **kw)
    assert [a.name for a in short] == ["laplace-t", "laplace-t20", "ais-20"]
    monkeypatch.setattr(pilots, "PILOT_MAX_SHARE", 0.0)
    arms, notes, _ = ev.build_pool(model, ais_steps=(20,), n_chains=1, transition="slice", laplace=True,
                              laplace_proposals=ev.DEFAULT_LAPLACE_PROPOSALS, prior=False, smc=False, batch_size=100,
                              cost="cpu_seconds", budget_seconds=60.0, non_centre=False, hmc_arm=True, pilot_is=True,
                              nested=False)
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "ais-20"]
    assert any(n.startswith("HMC AIS arm and pilot-t arms left out: the HMC pilot passed its time limit after 1 "
                            "temperatures") for n in notes)
    # Without the HMC arm, the pilot-t arms' moments come from the posterior pilot at the Laplace mode instead.
    arms, notes, _ = ev.build_pool(model, ais_steps=(20,), n_chains=1, transition="slice", laplace=True,
                              laplace_proposals=ev.DEFAULT_LAPLACE_PROPOSALS, prior=False, smc=False, batch_size=100,
                              cost="cpu_seconds", budget_seconds=60.0, non_centre=False, hmc_arm=False, pilot_is=True,
                              nested=False)
    names = [a.name for a in arms]
    assert names == ["laplace-t", "laplace-t20", "pilot-t", "pilot-t20", "ais-20"]
    assert arms[names.index("pilot-t20")].modes.reason.endswith("draws of the posterior pilot")
    with pytest.raises(TypeError, match="The 'pilot_is' parameter of evidence_arms must be None or a bool. Got 1"):
        ev.evidence_arms(model, pilot_is=1)


def test_laplace_set_up_check_passes_light_tails_and_fails_heavy_ones():
    from pmcbandit.evidence.importance import setup_check_passes as _setup_check_passes

    class Fixed:  # an arm whose log weights are given
        batch_size = 1000

        def __init__(self, log_w):
            self.log_w = log_w

        def log_weights(self, rng, size):
            return self.log_w

    rng = np.random.default_rng(0)
    light = Fixed(rng.normal(0.0, 0.3, 1000))  # log-normal weights of small spread: k-hat near 0
    heavy = Fixed(np.log(rng.pareto(0.8, 1000) + 1.0))  # Pareto tail index 1/0.8: k-hat about 1.25
    assert _setup_check_passes([light]) and _setup_check_passes([heavy, light])
    assert not _setup_check_passes([heavy]) and not _setup_check_passes([])


def test_the_pool_predicts_its_ais_arms_by_the_probe_it_sized_them_by(monkeypatch):
    import pmcbandit.evidence.pool as ev
    from pmcbandit.arms.evidence import ais
    from pmcbandit.runtime.guards import MAX_DECISION_SHARE

    readings = iter([0.004] + [0.008] * 20)  # the sizing probe first; any later reading twice as slow

    def step_seconds(self, betas):
        return next(readings)

    monkeypatch.setattr(ais.AISArm, "_probe_step_seconds", step_seconds)
    arms, _, _ = ev.build_pool(
        _normal_model()[0], ais_steps=(400, 2000), n_chains=1, transition="slice", laplace=False,
        laplace_proposals=(), prior=True, smc=False, batch_size=100, cost="cpu_seconds", budget_seconds=60.0,
        non_centre=False, hmc_arm=False, pilot_is=False)
    sized = [a for a in arms if isinstance(a, ais.AISArm)]
    # 0.8 x (0.1 x 60 / 2) / 0.004 = 600 steps; the check arm 0.6 x 0.1 x 60 / 30 / 0.004 = 30, and the 400 asked
    # for beside it
    assert [a.name for a in sized] == ["ais-30", "ais-400", "ais-600"]
    for arm in sized:
        assert arm.step_seconds == 0.004 and arm.expected_seconds == arm.n_steps * 0.004
    # so each paired decision is predicted within the run's decision cap, as it was sized
    assert 2 * sized[-1].expected_seconds <= MAX_DECISION_SHARE * 60.0


@pytest.mark.parametrize(
    "asked, slice_step, hmc_step, names, alert",
    [
        # HMC check arm (2 leapfrog steps, 0.4 x the 5-step arm's time): 0.6 x 0.2 s / 0.0008 s = 150 steps, where
        # the slice arms cannot reach the check
        ((400, 2000), 0.01, 0.002, ["prior-is", "ais-240", "ais-hmc2-150", "ais-hmc-1200"], None),
        ((400, 2000), 0.01, 0.009, ["prior-is", "ais-240", "ais-hmc2-33", "ais-hmc-266"], None),
        # 15 < 20 steps: no check arm, and the warning names the budget: 30 pulls x 20 steps x 0.008 s / (0.6 x 0.1)
        ((400, 2000), 0.01, 0.02, ["prior-is", "ais-240", "ais-hmc-120"], ("(0.008 s each on this model)", 80)),
        # and where its 150 steps are more than the slice check arm's 30 (the 400 asked stay beside that arm)
        ((400, 2000), 0.004, 0.002, ["prior-is", "ais-30", "ais-400", "ais-600", "ais-hmc2-150", "ais-hmc-1200"], None),
        ((400, 2000), 0.004, 0.012, ["prior-is", "ais-30", "ais-400", "ais-600", "ais-hmc-200"], False),  # 25 < 30
        # the longer HMC arm (600 steps asked, 0.03 s a pull) is left out: under 1.5x the check arm's 0.04 s
        ((400, 600, 2000), 0.004, 0.00005, ["prior-is", "ais-30", "ais-400", "ais-600", "ais-hmc2-2000"], None),
    ],
)
@pytest.mark.slow
def test_an_hmc_arm_is_sized_for_the_check_where_it_gets_more_steps(monkeypatch, asked, slice_step, hmc_step, names,
                                                                     alert):
    import pmcbandit.evidence.pool as ev
    from pmcbandit.arms.evidence import ais

    def step_seconds(self, betas):
        return slice_step if self.transition == "slice" else hmc_step * self.hmc_leapfrog / 5

    monkeypatch.setattr(ais.AISArm, "_probe_step_seconds", step_seconds)
    # 60 s: check cap min(0.1 x 60 / 2, 0.1 x 60 / 30) = 0.2 s, so 0.6 x 0.2 / 0.01 = 12 slice steps < 20; the
    # HMC arm: the middle count asked, capped at 0.8 x 3 s / step, not by the slice arms' caps.
    arms, notes, alerts = ev.build_pool(
        _normal_model()[0], ais_steps=asked, n_chains=1, transition="slice", laplace=False,
        laplace_proposals=(), prior=True, smc=False, batch_size=100, cost="cpu_seconds", budget_seconds=60.0,
        non_centre=False, hmc_arm=True, pilot_is=False, nested=False)  # prior IS: a second family, for the check
    assert [a.name for a in arms] == names
    sized = [n for n in notes if "sized for the independent check" in n]
    if alert is None:
        check = next(a for a in arms if a.name.startswith("ais-hmc2-"))
        assert check.hmc_leapfrog == 2 and np.array_equal(check.betas, ais.pilot_schedule(check.pilot.betas,
                                                                                           check.n_steps))
        assert alerts == [] and len(sized) == 1
        assert sized[0].startswith(f"AIS arm with HMC transitions (2 leapfrog steps per move, along the HMC pilot's "
                                   f"temperatures) of {check.n_steps} steps")
        dropped = "; the HMC arm of 600 steps left out, its pulls predicted to take less than 1.5x the check arm's"
        assert sized[0].endswith(dropped) == (len(asked) == 3)
    elif alert is False:
        assert alerts == [] and not sized
    else:
        (text,) = alerts
        assert alert[0] in str(text) and text.topic == "independent_check" and not sized
        assert f"at least {alert[1]} s" in str(text)
