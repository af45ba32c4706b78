"""CIR caplet arms: exactness against NumPy, unbiasedness, E[w] = 1, closed form at K = 0."""

import numpy as np
import pytest

import pmcbandit  # noqa: F401  (PyTensor configuration first)
from models.cir import (
    CIRCapletArm,
    caplet_arms,
    discounted_rate_moments,
    simulate_paths_numpy,
)

DT = 1.0 / 100


@pytest.fixture(scope="module")
def arms07():
    return caplet_arms(0.07, paths_per_pull=1000)


def _pull_means(arm, seed, pulls):
    rng = np.random.default_rng(seed)
    means, weights = [], []
    for _ in range(pulls):
        p = arm.pull(rng)
        means.append(p.values.mean())
        weights.append(p.info["mean_weight"])
    return np.array(means), np.array(weights)


def test_names_count_and_defaults():
    arms = caplet_arms()
    assert [a.name for a in arms] == [f"theta-{k / 10:.1f}" for k in range(16)]
    assert all(a.params["strike"] == 0.08 and a.params["n_steps"] == 100 for a in arms)
    assert arms[0].diagnostics == ("mean_weight", "frac_in_money")


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["fused", "graph"])
@pytest.mark.parametrize("theta", [0.0, 1.2])
def test_arm_equals_numpy_reference_on_same_normals(theta, engine):
    arm = CIRCapletArm(theta, 0.07, 500, engine=engine)
    pull = arm.pull(np.random.default_rng(11))
    z = np.random.default_rng(11).standard_normal((100, 500))
    ref = simulate_paths_numpy(z + theta * np.sqrt(DT), 0.07, theta)
    np.testing.assert_allclose(pull.values, ref, rtol=1e-12, atol=1e-12)
    assert pull.info["frac_in_money"] == np.mean(ref > 0)


def test_engines_consume_the_same_stream():
    rngs = {e: np.random.default_rng(8) for e in ("fused", "graph")}
    pulls = {e: CIRCapletArm(0.9, 0.06, 37, engine=e).pull(rngs[e]) for e in rngs}
    np.testing.assert_allclose(pulls["fused"].values, pulls["graph"].values, rtol=1e-12)
    np.testing.assert_array_equal(pulls["fused"].info["pmc_stat"], pulls["graph"].info["pmc_stat"])
    assert rngs["fused"].standard_normal() == rngs["graph"].standard_normal()


def test_numpy_reference_one_step_by_hand():
    eps = np.array([[0.3, -1.1]])
    r0, eta, kappa, sigma, m, k, theta = 0.05, 0.02, 0.3, 0.1, 100.0, 0.04, 0.8
    out = simulate_paths_numpy(eps, k, theta, r0=r0, eta=eta, kappa=kappa, sigma=sigma, maturity=0.5, nominal=m)
    d = 0.5
    r1 = r0 + (eta - kappa * r0) * d + sigma * np.sqrt(r0 * d) * eps[0]
    w = np.exp(-theta * np.sqrt(d) * eps[0] + theta**2 * 0.5 / 2)
    expected = w * m * np.exp(-d * (r0 + r1) / 2) * np.maximum(r1 - k, 0)
    np.testing.assert_allclose(out, expected, rtol=1e-14)


@pytest.mark.parametrize("engine", ["fused", "graph"])
def test_full_truncation_branch_matches_reference(engine):
    # r0 near 0 and large sigma: many paths go negative; sqrt(max(r, 0)) keeps them finite.
    params = dict(r0=0.001, eta=0.0, kappa=0.2, sigma=0.5)
    arm = CIRCapletArm(0.5, 0.0, 400, engine=engine, **params)
    pull = arm.pull(np.random.default_rng(3))
    z = np.random.default_rng(3).standard_normal((100, 400))
    ref = simulate_paths_numpy(z + 0.5 * np.sqrt(DT), 0.0, 0.5, **params)
    assert np.all(np.isfinite(pull.values))
    np.testing.assert_allclose(pull.values, ref, rtol=1e-12, atol=1e-14)


def test_likelihood_ratio_has_mean_one(arms07):
    for k in (3, 8, 15):
        _, w = _pull_means(arms07[k], 100 + k, 30)
        se = w.std(ddof=1) / np.sqrt(w.size)
        assert abs(w.mean() - 1.0) <= 4 * se, (arms07[k].name, w.mean(), se)


def test_every_arm_is_unbiased(arms07):
    plain, _ = _pull_means(arms07[0], 1, 40)
    for k in (4, 8, 12, 15):
        tilted, _ = _pull_means(arms07[k], 10 + k, 40)
        se = np.sqrt(plain.var(ddof=1) / plain.size + tilted.var(ddof=1) / tilted.size)
        assert abs(tilted.mean() - plain.mean()) <= 4 * se, (arms07[k].name, tilted.mean(), plain.mean(), se)


def test_strike_zero_matches_closed_form():
    _, dr = discounted_rate_moments()
    truth = 1000.0 * dr
    for theta in (0.0, 1.0):
        means, _ = _pull_means(CIRCapletArm(theta, 0.0, 1000), 7, 30)
        se = means.std(ddof=1) / np.sqrt(means.size)
        assert abs(means.mean() - truth) <= 4 * se, (theta, means.mean(), truth, se)


def test_closed_form_is_exact_without_noise():
    # sigma = 0: the recursion is deterministic, so the formula must match it to rounding.
    bond, dr = discounted_rate_moments(sigma=0.0)
    path = simulate_paths_numpy(np.zeros((100, 1)), 0.0, sigma=0.0, nominal=1.0)
    r = np.full(1, 0.08)
    rates = []
    for _ in range(100):
        r = r + (0.016 - 0.2 * r) * DT
        rates.append(r[0])
    d = np.exp(-DT * ((0.08 + rates[-1]) / 2 + sum(rates[:-1])))
    np.testing.assert_allclose([bond, dr, path[0]], [d, d * rates[-1], d * rates[-1]], rtol=1e-13)


def test_same_seed_identical_and_global_rng_untouched():
    arm = CIRCapletArm(0.9, 0.08, 200)
    state = np.random.get_state()[1].copy()
    a = arm.pull(np.random.default_rng(5))
    b = arm.pull(np.random.default_rng(5))
    np.testing.assert_array_equal(a.values, b.values)
    assert a.info["mean_weight"] == b.info["mean_weight"]
    np.testing.assert_array_equal(np.random.get_state()[1], state)


def test_cost_and_pmc_fields():
    arms = caplet_arms(0.06, thetas=[0.0, 0.5, 1.0], paths_per_pull=50, cost="paths")
    p = arms[1].pull(np.random.default_rng(0))
    assert p.cost == 50.0
    assert p.info["pmc_h"].shape == (50,) and p.info["pmc_stat"].shape == (50,)
    coef = p.info["pmc_coef"]
    np.testing.assert_allclose(coef, [[0, 0], [0.05, 0.125], [0.1, 0.5]])
    # The own row of coef reproduces the reported weighted payoff: w·P = P·exp(−(a S − b)).
    log_w = -(coef[1, 0] * p.info["pmc_stat"] - coef[1, 1])
    np.testing.assert_allclose(p.values, p.info["pmc_h"] * np.exp(log_w), rtol=1e-12)
    assert "pmc_h" not in caplet_arms(0.06, thetas=[0.5], paths_per_pull=5, pmc_info=False)[0].pull(
        np.random.default_rng(0)).info


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        (dict(strike=-0.01), ValueError),
        (dict(thetas=[]), ValueError),
        (dict(thetas=[0.1, 0.1]), ValueError),
        (dict(thetas=[[0.1]]), ValueError),
        (dict(thetas=[0.1, np.nan]), ValueError),
        (dict(paths_per_pull=0), ValueError),
        (dict(paths_per_pull=1.5), TypeError),
        (dict(n_steps=0), ValueError),
        (dict(maturity=0.0), ValueError),
        (dict(sigma=-1.0), ValueError),
        (dict(nominal="1000"), TypeError),
        (dict(cost=-1.0), ValueError),
        (dict(engine="scan"), ValueError),
    ],
)
def test_bad_arguments_raise(kwargs, exc):
    with pytest.raises(exc, match="parameter of"):
        caplet_arms(**kwargs)


def test_bad_reference_arguments_raise():
    with pytest.raises(ValueError, match="'eps' parameter"):
        simulate_paths_numpy(np.zeros(5))
    with pytest.raises(ValueError, match="'strike' parameter"):
        simulate_paths_numpy(np.zeros((2, 2)), -1.0)


def test_warm_up_compiles_the_fused_kernel_without_drawing_from_a_run_stream():
    from models.cir_kernel import fused_caplet_paths

    arm = CIRCapletArm(0.5, paths_per_pull=10)
    before = np.random.default_rng(3)
    arm.warm_up()
    assert fused_caplet_paths.signatures  # compiled (or loaded from numba's cache)
    a = arm.pull(np.random.default_rng(3)).values
    b = arm.pull(before).values
    np.testing.assert_array_equal(a, b)
