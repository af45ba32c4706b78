"""Posterior-expectation sampler arms (pmcbandit.arms.samplers) on conjugate models with closed-form means."""

from __future__ import annotations

import numpy as np
import pytest

import pmcbandit  # noqa: F401  (configures PyTensor before pymc is imported)
from pmcbandit.arms.samplers import MCMCArm, SMCSamplerArm, sampler_arms
from pmcbandit.arms.samplers._quantity import Quantity
from tests.tolerance import assert_within_se

TUNE, DRAWS, PULLS = 150, 150, 30
# mu_j ~ N(M0, S0), y_jk ~ N(mu_j, SIGMA); lam ~ Gamma(A, B), z ~ Poisson(lam): independent conjugate posteriors.
M0, S0, SIGMA = 0.5, 1.5, 0.8
Y = (np.array([1.2, 0.4, 2.0, 1.1]), np.array([-0.3, 0.6, -1.1]))
A, B, Z = 2.0, 1.5, np.array([3, 1, 4, 2, 2])


def _mu_mean(j):
    precision = 1 / S0**2 + Y[j].size / SIGMA**2
    return (M0 / S0**2 + Y[j].sum() / SIGMA**2) / precision


LAM_A, LAM_B = A + Z.sum(), B + Z.size
TRUTH = {
    "mu[1]": _mu_mean(1),
    "lam": LAM_A / LAM_B,
    "s": _mu_mean(0) + LAM_A / LAM_B,
    "lam_squared": LAM_A / LAM_B**2 + (LAM_A / LAM_B) ** 2,
}


def lam_squared(point):
    return float(point["lam"]) ** 2


@pytest.fixture(scope="module")
def model():
    import pymc as pm

    with pm.Model() as m:
        mu = pm.Normal("mu", M0, S0, shape=2)
        pm.Normal("y0", mu[0], SIGMA, observed=Y[0])
        pm.Normal("y1", mu[1], SIGMA, observed=Y[1])
        lam = pm.Gamma("lam", alpha=A, beta=B)
        pm.Poisson("z", lam, observed=Z)
        pm.Deterministic("s", mu[0] + lam)
    return m


@pytest.fixture(scope="module")
def arms(model):
    """One arm per sampler, each on a different kind of quantity (element, transformed, deterministic, callable)."""
    return {
        "nuts": MCMCArm(model, "mu[1]", "nuts", tune=TUNE, draws=DRAWS),
        "metropolis": MCMCArm(model, "s", "metropolis", tune=TUNE, draws=DRAWS),
        "slice": MCMCArm(model, "lam", "slice", tune=TUNE, draws=DRAWS),
        "smc": SMCSamplerArm(model, lam_squared, draws=200),
    }


QUANTITY = {"nuts": "mu[1]", "metropolis": "s", "slice": "lam", "smc": "lam_squared"}


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["nuts", "metropolis", "slice", "smc"])
def test_pulls_average_to_the_posterior_mean(arms, sampler):
    arm = arms[sampler]
    rngs = np.random.default_rng(20131).spawn(PULLS)
    values = np.array([arm.pull(r).values[0] for r in rngs])
    assert_within_se(values.mean(), TRUTH[QUANTITY[sampler]], values.std(ddof=1) / np.sqrt(PULLS), arm.name)


@pytest.mark.parametrize("sampler", ["nuts", "metropolis", "slice", "smc"])
def test_same_seed_same_value_whatever_was_pulled_before(arms, sampler):
    arm = arms[sampler]
    first = arm.pull(np.random.default_rng(7))
    arm.pull(np.random.default_rng(8))  # tuned state of another run must not leak into the next
    again = arm.pull(np.random.default_rng(7))
    other = arm.pull(np.random.default_rng(9))
    assert np.array_equal(first.values, again.values)
    assert first.info == again.info
    assert not np.array_equal(first.values, other.values)


@pytest.mark.parametrize("sampler", ["nuts", "metropolis", "slice", "smc"])
def test_diagnostics_declared_and_finite(arms, sampler):
    arm = arms[sampler]
    pull = arm.pull(np.random.default_rng(3))
    assert set(pull.info) == set(arm.diagnostics)
    assert all(isinstance(v, float) and np.isfinite(v) for v in pull.info.values()), pull.info
    assert pull.values.shape == (1,) and arm.log_scale is False


@pytest.mark.slow
def test_cost_units_are_counts_of_evaluations(model):
    iters = 20 + 30
    nuts = MCMCArm(model, "lam", "nuts", tune=20, draws=30, cost="gradient_evals")
    pull = nuts.pull(np.random.default_rng(1))
    # One evaluation per leapfrog step (>= 1 per iteration) plus one at each iteration's start.
    assert pull.cost == pull.info["n_grad"] >= 2 * iters and nuts.cost_unit == "gradient_evals"
    metropolis = MCMCArm(model, "lam", "metropolis", tune=20, draws=30, cost="logp_evals")
    pull = metropolis.pull(np.random.default_rng(1))
    # mu (2 elements, updated one at a time) and lam: 3 proposals per iteration, 2 densities each.
    assert pull.cost == pull.info["logp_evals"] == 6 * iters
    slicer = MCMCArm(model, "lam", "slice", tune=20, draws=30, cost="logp_evals")
    pull = slicer.pull(np.random.default_rng(1))
    # Per coordinate update at least: the slice height, both ends of the bracket, one proposal.
    assert pull.cost == pull.info["logp_evals"] >= 4 * 3 * iters
    smc = SMCSamplerArm(model, "lam", draws=50, cost="logp_evals")
    pull = smc.pull(np.random.default_rng(1))
    assert pull.cost == pull.info["logp_evals"] >= 50 * (1 + pull.info["n_stages"])
    cpu = MCMCArm(model, "lam", "slice", tune=20, draws=30)
    assert cpu.cost_unit == "cpu_seconds" and 0 < cpu.pull(np.random.default_rng(1)).cost < 10


@pytest.mark.slow
def test_sampler_arms_names_settings_and_shares_the_quantity(model):
    arms = sampler_arms(
        model,
        "mu[0]",
        [
            "nuts",
            ("nuts", {"target_accept": 0.95, "tune": 50, "draws": 40}),
            ("metropolis", {"draws": 100}),
            ("smc", {"draws": 64}),
        ],
    )
    assert [a.name for a in arms] == [
        "nuts-t500-d500",
        "nuts-t50-d40-target_accept0.95",
        "metropolis-t500-d100",
        "smc-d64",
    ]
    assert len({id(a.quantity) for a in arms}) == 1
    assert arms[1].pull(np.random.default_rng(0)).values.shape == (1,)


@pytest.mark.parametrize(
    "quantity, match",
    [
        ("nope", r"'quantity' parameter of sampler_arms.*'nope'.*\['mu', 'lam', 's'\]"),
        ("mu", r"'quantity' parameter.*one element of the array variable 'mu'.*'mu\[0\]'"),
        ("mu[2]", r"'quantity' parameter.*within its bounds.*'mu\[2\]'"),
        ("lam[0]", r"'quantity' parameter.*'lam\[0\]'"),
        ("y0", r"'quantity' parameter.*'y0'"),
    ],
)
def test_a_quantity_the_model_lacks_is_refused(model, quantity, match):
    with pytest.raises(ValueError, match=match):
        sampler_arms(model, quantity, ["metropolis"])


def test_bad_quantity_types(model):
    with pytest.raises(TypeError, match="'quantity' parameter of sampler_arms must be a variable name"):
        sampler_arms(model, 3, ["nuts"])
    with pytest.raises(ValueError, match="'scales' parameter of MCMCArm must hold one positive finite scale"):
        Quantity(model, None, "MCMCArm", scales=np.ones(2))
    with pytest.raises(TypeError, match="'quantity' parameter of sampler_arms must return a real number"):
        sampler_arms(model, lambda p: p["mu"], ["nuts"])


@pytest.mark.parametrize(
    "samplers, cost, error, match",
    [
        (["hmc"], "cpu_seconds", ValueError, r"'samplers' parameter of sampler_arms must name samplers.*'hmc'"),
        ([], "cpu_seconds", ValueError, r"'samplers' parameter of sampler_arms must be a non-empty"),
        ([("nuts", 3)], "cpu_seconds", TypeError, r"'samplers' parameter"),
        (
            ["nuts", "metropolis"],
            "gradient_evals",
            ValueError,
            r"'cost' parameter of sampler_arms.*'metropolis': 'logp_",
        ),
        (["nuts", "smc"], "logp_evals", ValueError, r"'cost' parameter of sampler_arms.*'nuts': 'gradient_evals'"),
        (["nuts"], "seconds", ValueError, r"'cost' parameter of sampler_arms"),
        (
            ["nuts", "nuts"],
            "cpu_seconds",
            ValueError,
            r"'samplers' parameter of sampler_arms must give arms distinct names",
        ),
        ([("slice", {"tune": -1})], "cpu_seconds", ValueError, r"'tune' parameter of MCMCArm"),
        ([("smc", {"kernel": "HMC"})], "cpu_seconds", ValueError, r"'kernel' parameter of SMCSamplerArm"),
        ([("nuts", {"random_seed": 1})], "cpu_seconds", ValueError, r"'samplers' parameter.*\['random_seed'\]"),
    ],
)
def test_bad_samplers_and_costs(model, samplers, cost, error, match):
    with pytest.raises(error, match=match):
        sampler_arms(model, "lam", samplers, cost=cost)


def test_bad_models():
    import pymc as pm

    with pytest.raises(TypeError, match="'model' parameter of sampler_arms must be a pymc.Model"):
        sampler_arms("model", "mu")
    with pm.Model() as discrete:
        pm.Poisson("k", 3.0)
    with pytest.raises(ValueError, match="only continuous free variables.*'k'"):
        sampler_arms(discrete, "k")
    with pm.Model() as improper:
        pm.Normal("y", pm.Flat("mu"), 1.0, observed=[0.1, 0.3])
    with pytest.raises(ValueError, match="'model' parameter of SMCSamplerArm must have a proper prior.*'mu'"):
        sampler_arms(improper, "mu", ["smc"])


def test_pulls_from_several_threads_equal_serial_pulls(arms):
    from concurrent.futures import ThreadPoolExecutor

    pool = [arms["metropolis"]] * 3 + [arms["slice"]] * 3 + [arms["smc"]] * 3  # one arm in 3 threads at once
    seeds = range(len(pool))
    serial = [arm.pull(np.random.default_rng(s)).values[0] for arm, s in zip(pool, seeds)]
    with ThreadPoolExecutor(max_workers=3) as executor:
        threaded = list(executor.map(lambda a, s: a.pull(np.random.default_rng(s)).values[0], pool, seeds))
    assert threaded == serial


@pytest.mark.slow
def test_every_coordinate_by_default_scaled_by_a_pilot_run(model):
    """quantity=None: the pilot's scales are the posterior sds (mu's are known in closed form); a pull
    reports each coordinate's scaled mean as a component and their mean as its value."""
    short = dict(tune=TUNE, draws=DRAWS)
    arms = sampler_arms(model, samplers=[("nuts", short), ("slice", short)])
    q = arms[0].quantity
    assert q.every_coordinate and q is arms[1].quantity and q.dim == 3
    assert arms[0].components == arms[1].components == ("z_0", "z_1", "z_2")
    assert set(arms[0].components) <= set(arms[0].diagnostics)
    sd_mu = [(1 / S0**2 + Y[j].size / SIGMA**2) ** -0.5 for j in (0, 1)]
    np.testing.assert_allclose(q.scales[:2], sd_mu, rtol=0.25)  # 500 correlated draws: a rough check
    assert sampler_arms(model, samplers=["nuts"])[0].quantity.scales.tolist() == q.scales.tolist()  # fixed seed
    values, info, _ = arms[1].draw(np.random.default_rng(3))
    z = np.array([info[c] for c in arms[1].components])
    assert values[0] == pytest.approx(z.mean())
    # the scaled means estimate the posterior means over the scales
    pulls = [arms[0].draw(np.random.default_rng(s))[1] for s in range(PULLS)]
    z0 = np.array([p["z_1"] for p in pulls])
    assert_within_se(z0.mean(), _mu_mean(1) / q.scales[1], z0.std(ddof=1) / np.sqrt(z0.size))
