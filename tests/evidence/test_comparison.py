"""compare_models: Bayes factors and model probabilities against exact evidences, the allocation
rule, the bad inputs, and the model taken from a ``with`` block as PyMC does.

Exact truths: linear regressions with known noise, ``beta ~ N(0, tau^2 I)``,
``y ~ N(X beta, sigma^2 I)``, so ``y ~ N(0, sigma^2 I + tau^2 X X^T)``. The models share ``y`` and
differ in their design matrices (1, 3 or 6 columns), hence in their cost per pull.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import special, stats

import pmcbandit as pb
from pmcbandit.exceptions import NoGuaranteeWarning, PmcBanditWarning
from pmcbandit.evidence.comparison import next_model
from pmcbandit.evidence.comparison_result import TABLE_COLUMNS, ModelComparison, model_probabilities
from tests.tolerance import assert_within_se, error_rate_lower, error_rate_upper

TAU, SIGMA = 1.0, 0.5


def regressions(columns: dict, n: int = 40, seed: int = 3):
    """Models name -> (pm.Model, exact log Z) on one data set."""
    import pymc as pm

    gen = np.random.default_rng(seed)
    X = gen.normal(size=(n, 6))
    y = X @ np.array([0.8, 0.3, 0.0, 0.0, 0.1, 0.0]) + gen.normal(0.0, SIGMA, size=n)
    out = {}
    for name, cols in columns.items():
        Xs = X[:, list(cols)]
        with pm.Model() as model:
            beta = pm.Normal("beta", 0.0, TAU, shape=len(cols))
            pm.Normal("y", pm.math.dot(Xs, beta), SIGMA, observed=y)
        cov = SIGMA**2 * np.eye(n) + TAU**2 * Xs @ Xs.T
        out[name] = (model, float(stats.multivariate_normal(np.zeros(n), cov).logpdf(y)))
    return out


def fast_pool(model):
    """Importance-sampling arms and one short AIS arm: seconds to compile, milliseconds per pull."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        return pb.evidence_arms(model, ais_steps=(40,), batch_size=200)


@pytest.fixture(scope="module")
def pair():
    models = regressions({"one": (0,), "three": (0, 1, 2)})
    return models, {name: fast_pool(m) for name, (m, _) in models.items()}


def compare(models, pools, seed, pulls=240, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        return pb.compare_models({n: m for n, (m, _) in models.items()}, budget=pb.Pulls(pulls), arms=pools,
                                 random_seed=seed, progressbar=False, **kw)


@pytest.mark.slow
def test_log_bf_matches_the_exact_value(pair):
    models, pools = pair
    # 8 slices of 100 pulls, which the Neyman split shares 3 to 5 a model: the cross-family check's 10 % share reaches
    # the 30 pulls a check needs only as the slices' check pulls add up (each slice starts from what the model's
    # earlier slices left the guards); with slices of 80 pulls a model given 3 of them falls short.
    res = compare(models, pools, seed=11, pulls=800)
    exact = models["three"][1] - models["one"][1]
    lbf, se = res.log_bf("three", "one")
    assert_within_se(lbf, exact, se, "log BF three vs one")
    for name, (_, log_z) in models.items():
        assert_within_se(res.results[name].log_z, log_z, res.results[name].log_z_se, name)
    t = res.table
    assert list(t.columns) == list(TABLE_COLUMNS) and t.index.name == "model"
    assert t.index[0] == res.best == "three"  # the exact probability of three is 0.79
    assert t["log_bf"].iloc[0] == 0.0 and t["probability"].sum() == pytest.approx(1.0)
    assert (t["probability_lower"] <= t["probability"]).all() and (t["probability"] <= t["probability_upper"]).all()
    assert sum(1 for _, name, _ in res.allocation if name == "one") >= 1
    assert len(res.allocation) == res.settings["slices"] == 8
    assert res.log_bf("one", "three") == (-lbf, se)


def test_same_seed_same_comparison(pair):
    models, pools = pair
    a, b = compare(models, pools, seed=5, pulls=120), compare(models, pools, seed=5, pulls=120)
    assert a.table.equals(b.table) and a.allocation == b.allocation


def test_decided_stop_and_outputs(pair, tmp_path):
    models, _ = pair
    # A model whose answer no second family checked is flagged and cannot be declared best: the check arm needs 30
    # pulls (slices of 180 pulls, a 10 % share, here) and a relative SE of at most 0.1, which the fast pool's AIS arm
    # of 40 steps does not reach (about 0.4 after 50 pulls); one of 1000 steps does.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        pools = {n: pb.evidence_arms(m, ais_steps=(1000,), batch_size=200) for n, (m, _) in models.items()}
    res = compare(models, pools, seed=2, pulls=1440, decide=0.75)
    assert res.stopped_by == "decided" and len(res.allocation) < 8
    assert res.table.loc["three", "probability_lower"] > 0.75
    text = res.summary()
    assert "best model: 'three'" in text and "stopped by decided" in text
    frame = res.to_dataframe()
    assert {"slices", "pulls", "prior"} <= set(frame.columns)
    idata = res.to_inference_data()
    assert list(idata.model_summary["model"].values) == list(res.table.index)
    assert idata.sample_stats.sizes["slice"] == len(res.allocation)
    idata.to_netcdf(tmp_path / "cmp.nc")
    fig = res.plot()
    assert len(fig.axes) == 3
    run_idata = res.results["one"].to_inference_data()
    assert run_idata.sample_stats["log_marginal_likelihood"].dims == ("chain", "draw")
    assert float(run_idata.sample_stats["log_marginal_likelihood"].values.ravel()[0]) == res.results["one"].log_z
    draws = res.results["one"].posterior_draws  # the slices' reservoirs, merged
    assert draws is not None and draws.n_weights > 1000 and run_idata.posterior["beta"].dims[:2] == ("chain", "draw")


def test_flagged_evidence_declares_no_winner():
    class Flagged:
        def __init__(self, log_z, status):
            self.log_z, self.log_z_se, self.interval_status = log_z, 0.1, status

        def warnings(self):
            return []

    res = ModelComparison({"a": Flagged(-1.0, "ok"), "b": Flagged(-5.0, "too_few_observations")}, [0.5, 0.5], [],
                          {"stopped_by": "budget"})
    assert res.best is None and res.table.index[0] == "a"
    assert any("no model is declared best" in w and "'b'" in w for w in res.warnings())
    assert res.warnings()[0].category is NoGuaranteeWarning
    assert "none declared" in res.summary()
    one = ModelComparison({"a": Flagged(-1.0, "ok"), "b": Flagged(-5.0, "no_cross_check")}, [0.5, 0.5], [],
                          {"stopped_by": "budget"})
    assert one.best is None and one.flagged == ["b"]
    assert any("no model is declared best" in w and "'b' (no cross check)" in w for w in one.warnings())


def test_probabilities_two_models_are_the_log_bf_interval():
    lz, se = np.array([-10.0, -11.0]), np.array([0.3, 0.4])
    p = model_probabilities(lz, se, [0.5, 0.5])
    z = stats.norm.ppf(0.975)
    assert p.probability[0] == pytest.approx(special.expit(1.0))
    assert p.lower[0] == pytest.approx(special.expit(1.0 - z * 0.5))
    assert p.upper[1] == pytest.approx(special.expit(-1.0 + z * 0.5))
    q = model_probabilities(np.array([-10.0, -11.0, -12.0]), np.full(3, 0.2), [0.5, 0.5, 0.0])
    assert q.probability[2] == 0.0 and q.upper[2] == 0.0
    nan = model_probabilities(np.array([-10.0, np.nan]), np.array([0.1, 0.1]), [0.5, 0.5])
    assert np.isnan(nan.probability).all() and (nan.lower == 0).all() and (nan.upper == 1).all()


def test_next_model_follows_variance_times_cost():
    ok = ["ok"] * 3
    # equal SEs: the model with fewer slices gains more (s^2 / (n + 1))
    assert next_model([-1.0, -1.2], [0.1, 0.1], [3, 1], [0.5, 0.5], ok[:2]) == 1
    # the noisier model gets the slice
    assert next_model([-1.0, -1.2], [0.05, 0.2], [1, 1], [0.5, 0.5], ok[:2]) == 1
    # log_bf target: only the two leaders count, however noisy the third
    assert next_model([-1.0, -1.1, -30.0], [0.1, 0.05, 5.0], [1, 1, 1], [1 / 3] * 3, ok) == 0
    # an unusable interval comes first; the even split is round-robin
    assert next_model([-1.0, -1.2], [0.1, 0.1], [1, 5], [0.5, 0.5], ["ok", "too_few_observations"]) == 1
    assert next_model([-1.0, -1.2, -1.3], [0.1] * 3, [2, 1, 2], [1 / 3] * 3, ok, split="even") == 1
    assert next_model([-1.0, -1.2], [0.1, 0.1], [1, 1], [0.5, 0.5], ok[:2], eligible=[False, False]) is None


def test_neyman_rule_gives_the_noisy_model_more(pair):
    # cost per unit variance: 'three' is the costlier model here; with equal SE per slice the rule
    # would split evenly, so the split follows the measured SEs: check the rule's own invariant
    models, pools = pair
    res = compare(models, pools, seed=4, pulls=400, slices=10)
    counts = {n: sum(1 for _, m, _ in res.allocation if m == n) for n in res.names}
    se = {n: res.results[n].log_z_se for n in res.names}
    # at the end s_i^2 / (n_i + 1) of the model given more slices was the larger one before its last slice
    more, less = sorted(counts, key=counts.get, reverse=True)
    assert counts[more] >= counts[less]
    assert se[more] ** 2 * counts[more] >= 0.25 * se[less] ** 2 * counts[less]


# --- bad input --------------------------------------------------------------------------
def test_bad_inputs(pair):
    import pymc as pm

    models, _ = pair
    m1, m2 = models["one"][0], models["three"][0]
    with pytest.raises(ValueError, match=r"The 'models' parameter of compare_models must be at least two models"):
        pb.compare_models({"a": m1})
    with pytest.raises(ValueError, match="distinct names"):
        pb.compare_models([pm.Model(name="x"), pm.Model(name="x")])
    with pytest.raises(TypeError, match=r"model 'b' is not\). Got 3 instead"):
        pb.compare_models({"a": m1, "b": 3})
    with pytest.raises(TypeError, match="The 'models' parameter of compare_models must be a mapping"):
        pb.compare_models(m1)
    with pytest.raises(ValueError, match="The 'prior' parameter of compare_models must be a probability vector"):
        pb.compare_models({"a": m1, "b": m2}, prior=[0.7, 0.7])
    with pytest.raises(ValueError, match="keyed by the model names"):
        pb.compare_models({"a": m1, "b": m2}, prior={"a": 0.5, "c": 0.5})
    with pytest.raises(ValueError, match="positive for at least two models"):
        pb.compare_models({"a": m1, "b": m2}, prior=[1.0, 0.0])
    with pytest.raises(ValueError, match="The 'checkpoint' parameter of compare_models must be None"):
        pb.compare_models({"a": m1, "b": m2}, checkpoint="x.npz")
    with pytest.raises(ValueError, match="The 'decide' parameter of compare_models"):
        pb.compare_models({"a": m1, "b": m2}, decide=0.4)
    with pytest.raises(ValueError, match="'budget' parameter of compare_models must be a TargetSE with max_seconds"):
        pb.compare_models({"a": m1, "b": m2}, budget=pb.TargetSE(0.1))
    with pytest.raises(ValueError, match="The 'budget' parameter of compare_models must be > 0"):
        pb.compare_models({"a": m1, "b": m2}, budget=-1.0)
    with pytest.raises(ValueError, match="The 'random_seed' parameter of compare_models"):
        pb.compare_models({"a": m1, "b": m2}, random_seed=-3)
    with pm.Model() as no_data:
        pm.Normal("mu")
    with pytest.raises(ValueError, match=r"whose evidence is defined. Got model 'b' instead: .*observed"):
        pb.compare_models({"a": m1, "b": no_data})


def test_sequence_named_by_model_name_or_position(pair):
    models, pools = pair
    import pymc as pm

    with pm.Model(name="named") as named:
        pm.Normal("y", pm.Normal("mu"), 1.0, observed=[0.1, 0.2])
    from pmcbandit.evidence.comparison import _named_models

    assert list(_named_models([models["one"][0], named])) == ["model_0", "named"]


# --- PyMC habits: the model from the with-block ----------------------------------------
def test_model_from_context_as_pymc_does():
    import pymc as pm

    from pmcbandit.arms.samplers import _context_model
    from pmcbandit.evidence.estimate import resolve_model

    with pm.Model() as outer:
        pm.Normal("mu")
        with pm.Model() as inner:
            pm.Normal("nu")
            assert resolve_model(None, "door") is inner  # innermost, as pm.modelcontext
            assert _context_model(None, "sampler_arms") is inner
            assert resolve_model(outer, "door") is outer  # explicit model wins
        assert resolve_model(None, "door") is outer
    with pytest.raises(TypeError, match="inside a `with pm.Model\\(\\):` block"):
        resolve_model(None, "estimate_evidence")
    with pytest.raises(TypeError, match="The 'model' parameter of sampler_arms must be a pymc.Model, or the call"):
        pb.sampler_arms(quantity="mu")


def test_evidence_and_sampler_arms_find_the_model():
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.3, -0.1])
        arms = pb.evidence_arms(ais_steps=(), laplace=False, batch_size=50)
        samplers = pb.sampler_arms(quantity="mu", samplers=["metropolis"])
        with pytest.raises(TypeError, match="The 'quantity' parameter of sampler_arms"):
            pb.sampler_arms(quantity=3)
    assert [a.name for a in arms] == ["prior-is", "nested-32"]
    assert len(samplers) == 1 and pb.sampler_arms(model, "mu", ["slice"])[0].name.startswith("slice")


# --- coverage (slow) ---------------------------------------------------------------------
@pytest.mark.slow
def test_log_bf_interval_coverage(pair):
    """>= 100 seeded short runs: the 95 % interval of the log BF covers the exact value 90-98 % of the time."""
    models, pools = pair
    exact = models["three"][1] - models["one"][1]
    runs, hits = 120, 0
    for seed in range(runs):
        res = compare(models, pools, seed=1000 + seed, pulls=120)
        lbf, se = res.log_bf("three", "one")
        hits += abs(lbf - exact) <= stats.norm.ppf(0.975) * se
    misses = runs - hits
    assert error_rate_upper(misses, runs) >= 0.02 and error_rate_lower(misses, runs) <= 0.10, (hits, runs)
    assert 0.90 <= hits / runs <= 0.98, (hits, runs)


@pytest.mark.slow
def test_probability_interval_coverage_three_models():
    """Three models with exact evidences: the 95 % probability intervals cover the exact posterior
    probabilities at about the nominal rate (>= 100 runs, each model's interval counted)."""
    models = regressions({"one": (0,), "two": (0, 1), "six": tuple(range(6))})
    pools = {name: fast_pool(m) for name, (m, _) in models.items()}
    exact_lz = np.array([lz for _, lz in models.values()])
    prior = np.array([0.2, 0.5, 0.3])
    truth = np.exp(np.log(prior) + exact_lz - special.logsumexp(np.log(prior) + exact_lz))
    runs, hits = 100, np.zeros(3)
    for seed in range(runs):
        res = compare(models, pools, seed=2000 + seed, pulls=180, prior=prior, target="probability")
        p = res.probabilities
        hits += (p.lower <= truth) & (truth <= p.upper)
    rate = hits / runs
    assert np.all(rate >= 0.88) and np.all(rate <= 0.995), rate


def test_the_run_loop_compile_is_set_up_a_wall_budget_counts(pair, monkeypatch):
    """The run loop's kernels are compiled before the first slice, and a wall-time budget's slices share what that
    and the pools' set-up leave."""
    import time

    from pmcbandit.evidence import comparison, estimate

    models, pools = pair
    order = []
    compile_loop = estimate.compile_loop

    def spy(door, policy, run_options, budget=None):
        order.append((door, type(budget).__name__))
        if len(order) == 1:
            time.sleep(0.6)  # a compile in a fresh process, made visible
        compile_loop(door, policy, run_options, budget=budget)

    monkeypatch.setattr(estimate, "compile_loop", spy)
    monkeypatch.setattr(comparison, "compile_loop", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        res = pb.compare_models({n: m for n, (m, _) in models.items()}, budget=3.0, arms=pools, random_seed=0,
                                slices=4, progressbar=False)
    # Once, before the first slice, for the slices' budget (its reward); the slices run on what it compiled.
    assert order == [("compare_models", "WallSeconds")]
    share = float(res.settings["slice_budget"].split("=")[1].rstrip(")"))
    assert share * 4 <= 3.0 - 0.6
