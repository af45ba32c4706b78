"""AISArm: unbiased estimates of Z on models with known evidence, schedules, determinism, inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tolerance import assert_within_se

from pmcbandit.arms.evidence import AISArm, PriorISArm, annealing_schedule
from tests.arms.evidence.helpers import assert_seeded_and_thread_free, pulled_values


@pytest.mark.parametrize("kind", ["power4", "linear"])
@pytest.mark.parametrize("n", [1, 2, 7, 400, 8000])
def test_schedule_endpoints_are_exact(kind, n):
    betas = annealing_schedule(n, kind)
    assert betas.shape == (n + 1,)
    assert betas[0] == 0.0 and betas[-1] == 1.0
    assert np.all(np.diff(betas) > 0)


def test_power4_schedule_is_the_papers():
    np.testing.assert_allclose(annealing_schedule(4), (np.arange(5) / 4) ** 4, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("beta_binomial", {}),
        ("normal_normal", {}),
        ("linear_regression", {}),
        ("half_normal_scale", {}),
        ("uniform_support", {}),
        ("normal_normal", {"transition": "imh"}),
        pytest.param("linear_regression", {"transition": "imh"}, marks=pytest.mark.slow),
        ("beta_binomial", {"transition": "imh"}),
    ],
)
def test_ais_is_unbiased(evidence_models, check_unbiased, name, kwargs):
    density, log_z = evidence_models(name)
    arm = AISArm(density, n_steps=20, n_chains=250, **kwargs)
    check_unbiased(pulled_values(arm, 11, 4), log_z)


def test_one_step_ais_is_prior_importance_sampling(evidence_models):
    density, _ = evidence_models("linear_regression")
    ais = AISArm(density, n_steps=1, n_chains=64)
    prior_is = PriorISArm(density, batch_size=64)
    for seed in (0, 1):
        rng_a, rng_b = np.random.default_rng(seed), np.random.default_rng(seed)
        for _ in range(2):
            np.testing.assert_array_equal(ais.pull(rng_a).values, prior_is.pull(rng_b).values)


def test_explicit_schedule_and_name(evidence_models):
    density, _ = evidence_models("normal_normal")
    arm = AISArm(density, schedule=[0.0, 0.25, 1.0], n_chains=3)
    assert arm.n_steps == 2 and arm.name == "ais-2"
    assert AISArm(density, n_steps=3, transition="imh").name == "ais-imh-3"
    assert arm.pull(np.random.default_rng(0)).values.shape == (3,)


def test_same_seed_same_values_and_parallel_matches_serial(evidence_models):
    density, _ = evidence_models("linear_regression")
    serial = AISArm(density, n_steps=10, n_chains=6)
    parallel = AISArm(density, n_steps=10, n_chains=6, parallel=True)
    assert_seeded_and_thread_free(serial, parallel, 3, 2)


def test_pull_reports_declared_diagnostics_and_eval_cost(evidence_models):
    density, _ = evidence_models("linear_regression")
    arm = AISArm(density, n_steps=10, n_chains=4, cost="logp_evals")
    pull = arm.pull(np.random.default_rng(0))
    assert set(pull.info) == set(arm.diagnostics)
    assert pull.cost == pull.info["logp_evals"] > 4 * 9 * density.dim
    # Stepping out and shrinkage take at least two evaluations per coordinate update.
    assert pull.info["evals_per_update"] >= 2.0
    imh = AISArm(density, n_steps=10, n_chains=4, transition="imh", cost="logp_evals")
    pull = imh.pull(np.random.default_rng(0))
    assert pull.cost == 4 * 10 and 0.0 < pull.info["accept_rate"] <= 1.0
    assert arm.log_scale


def test_cpu_cost_is_measured(evidence_models):
    density, _ = evidence_models("normal_normal")
    pull = AISArm(density, n_steps=5, n_chains=2).pull(np.random.default_rng(0))
    assert pull.cost >= 0.0 and pull.cost != pull.info["logp_evals"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"schedule": [0.0, 0.5, 0.9]}, ValueError, "'schedule' parameter of AISArm"),
        ({"schedule": [0.1, 1.0]}, ValueError, "'schedule' parameter of AISArm"),
        ({"schedule": [0.0, 0.6, 0.5, 1.0]}, ValueError, "non-decreasing"),
        ({"schedule": "cubic"}, ValueError, "'schedule' parameter of AISArm"),
        ({"schedule": [0.0, 1.0], "n_steps": 3}, ValueError, "'n_steps' parameter of AISArm"),
        ({"n_steps": 0}, ValueError, "'n_steps' parameter of AISArm"),
        ({"n_steps": 2.5}, TypeError, "'n_steps' parameter of AISArm"),
        ({"n_chains": 0}, ValueError, "'n_chains' parameter of AISArm"),
        ({"transition": "nuts"}, ValueError, "'transition' parameter of AISArm"),
        ({"cost": "wall"}, ValueError, "'cost' parameter of AISArm"),
        ({"slice_width": -1.0}, ValueError, "'slice_width' parameter of AISArm"),
        ({"slice_width": [0.5, 0.5]}, ValueError, "one per coordinate, 3"),
        ({"parallel": 1}, TypeError, "'parallel' parameter of AISArm"),
        ({"imh_df": 2.5}, ValueError, "'imh_df' parameter of AISArm"),
        ({"step_seconds": 0.0}, ValueError, "'step_seconds' parameter of AISArm"),
        ({"step_seconds": float("nan")}, ValueError, "'step_seconds' parameter of AISArm"),
        ({"step_seconds": "0.1"}, TypeError, "'step_seconds' parameter of AISArm"),
    ],
)
def test_bad_arguments_raise(evidence_models, kwargs, error, match):
    density, _ = evidence_models("linear_regression")
    with pytest.raises(error, match=match):
        AISArm(density, **kwargs)


def test_a_given_step_time_predicts_the_pulls_and_no_probe_runs(evidence_models, monkeypatch):
    density, _ = evidence_models("linear_regression")
    measured = AISArm(density, n_steps=40, n_chains=2)
    assert measured.step_seconds > 0 and measured.expected_seconds == 40 * measured.step_seconds

    def no_probe(self, betas):
        raise AssertionError("the arm timed itself although its step time was given")

    monkeypatch.setattr(AISArm, "_probe_step_seconds", no_probe)
    given = AISArm(density, n_steps=40, n_chains=2, step_seconds=0.25)
    assert given.step_seconds == 0.25 and given.expected_seconds == 10.0


def test_bad_model_raises():
    with pytest.raises(TypeError, match="must be a pymc.Model"):
        AISArm("not a model")


@pytest.mark.slow
def test_imh_needs_a_posterior_mode():
    import pymc as pm

    with pm.Model() as funnel:
        s = pm.HalfNormal("s", 1.0)
        mu = pm.Normal("mu", 0.0, s, shape=3)
        pm.Normal("y", mu.sum(), 1.0, observed=[0.1, 0.3])
    with pytest.raises(ValueError, match="Laplace approximation"):
        AISArm(funnel, n_steps=5, transition="imh")


@pytest.mark.slow
@pytest.mark.parametrize("transition", ["slice", "imh"])
def test_ais_is_unbiased_on_pima_t5(transition):
    """The paper's model at T = 5 against a long prior-IS reference computed in the test."""
    from models.pima import load_data, logistic_regression
    from scipy.special import logsumexp

    from pmcbandit.arms.evidence import ModelDensity

    density = ModelDensity(logistic_regression(*load_data(5)))
    _, ll = density.logp_terms_batch(density.sample_prior(np.random.default_rng(9), 2_000_000))
    log_z = logsumexp(ll) - np.log(ll.size)
    arm = AISArm(density, n_steps=50, n_chains=200, transition=transition)
    ratio = np.exp(pulled_values(arm, 12, 5) - log_z)
    se = ratio.std(ddof=1) / np.sqrt(ratio.size)
    ref_se = np.exp(ll - log_z).std() / np.sqrt(ll.size)
    assert_within_se(ratio.mean(), 1.0, np.hypot(se, ref_se))


def test_chain_streams_are_uniform_and_normal():
    """The per-chain xoshiro256** streams give U(0, 1) and N(0, 1) variates (moments within 4 SE)."""
    import numba

    from pmcbandit.arms.evidence._kernels import chain_seeds, std_normal, uniform

    @numba.njit
    def draw(seed, n):
        s = seed.copy()
        u = np.empty(n)
        z = np.empty(n)
        for i in range(n):
            u[i] = uniform(s)
            z[i] = std_normal(s)
        return u, z

    seeds = chain_seeds(np.random.default_rng(0), 2)
    np.testing.assert_array_equal(seeds, chain_seeds(np.random.default_rng(0), 2))
    n = 200_000
    u, z = draw(seeds[0], n)
    u2, _ = draw(seeds[1], n)
    assert 0.0 < u.min() and u.max() < 1.0
    assert_within_se(u.mean(), 0.5, np.sqrt(1 / 12 / n))
    assert_within_se(u.var(), 1 / 12, np.sqrt(1 / 180 / n))
    assert_within_se(z.mean(), 0.0, 1 / np.sqrt(n))
    assert_within_se(z.var(), 1.0, np.sqrt(2 / n))
    assert_within_se(np.corrcoef(u, u2)[0, 1], 0.0, 1 / np.sqrt(n))
