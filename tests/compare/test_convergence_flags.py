"""A sampler that does not converge cannot win: divergences and the potential scale reduction across
pulls exclude an arm (pmcbandit.compare.gate.convergence), with the reason, before the agreement test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.compare.gate import DIVERGENCE_LIMIT, FLAG_ALPHA, MIN_PULLS, RHAT_LIMIT, convergence
from tests.tolerance import error_rate_upper


def _pulls(n, mean_sd, chain_var, frac, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, mean_sd, n), np.full(n, chain_var), np.full(n, frac)


def test_convergence_flags_divergences_and_rhat_and_keeps_a_healthy_arm():
    n = 12
    # Arm 0 healthy: chain means vary as sigma^2 / ESS with ESS = 400 (R-hat about 1.001).
    # Arm 1: 5 % of its iterations diverge. Arm 2: chain means spread like the posterior itself (stuck chains).
    healthy, stuck = _pulls(n, np.sqrt(1 / 400), 1.0, 0.0, 1), _pulls(n, 1.0, 1.0, 0.0, 2)
    diverging = _pulls(n, np.sqrt(1 / 400), 1.0, 5 * DIVERGENCE_LIMIT, 3)
    parts = [healthy, diverging, stuck]
    values = np.concatenate([p[0] for p in parts])
    var = np.concatenate([p[1] for p in parts])
    frac = np.concatenate([p[2] for p in parts])
    arms = np.repeat(np.arange(3), n)
    flags = convergence(values, arms, frac, var, 3, np.ones(3, bool))
    assert flags.excluded.tolist() == [False, True, True]
    assert flags.reasons[1].startswith("divergences") and flags.reasons[2].startswith("rhat")
    assert flags.z[0] < RHAT_LIMIT < flags.z[2]


def test_convergence_needs_min_pulls_and_reported_diagnostics():
    values = np.zeros(MIN_PULLS - 1)
    frac = np.ones(MIN_PULLS - 1)
    flags = convergence(values, np.zeros(MIN_PULLS - 1, int), frac, np.ones(MIN_PULLS - 1), 1, np.ones(1, bool))
    assert not flags.excluded.any()
    nan = np.full(10, np.nan)
    flags = convergence(np.zeros(10), np.zeros(10, int), nan, nan, 1, np.ones(1, bool))
    assert not flags.excluded.any()


@pytest.fixture(scope="module")
def funnel():
    import pymc as pm

    with pm.Model() as m:
        v = pm.Normal("v", 0.0, 1.0)
        pm.Normal("x", 0.0, pm.math.exp(v / 2), shape=2)
    return m


@pytest.mark.slow
def test_a_broken_backend_on_a_funnel_is_flagged_and_not_selected(funnel):
    # target_accept 0.05 makes the step size far too large for the funnel's neck: most iterations diverge.
    arms = pb.sampler_arms(funnel, "x[0]", samplers=[
        ("pymc", dict(tune=300, draws=300, target_accept=0.9)),
        ("pymc", dict(tune=300, draws=300, target_accept=0.95)),
        ("pymc", dict(tune=300, draws=300, target_accept=0.05)),
    ])
    # The broken arm's huge steps overflow PyMC's kinetic energy (NumPy RuntimeWarnings): part of being broken.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = pb.compare_samplers(arms, budget=pb.Pulls(60), random_seed=5, progressbar=False)
    assert any(issubclass(w.category, pb.exceptions.NoGuaranteeWarning) for w in seen)
    broken = arms[2].name
    assert res.excluded[broken].startswith("divergences"), res.excluded
    assert broken not in res.selected and res.selected
    assert set(res.excluded) == {broken}
    assert np.isfinite(res.compile_seconds).all()
    assert "divergences" in res.summary()


@pytest.mark.parametrize("pulls, flagged", [(8, False), (200, True)])
def test_rhat_flags_only_what_the_pulls_establish(pulls, flagged):
    # Chain means with variance exactly 0.03 of the within-chain variance 1: point R-hat sqrt(1.03) = 1.0149.
    # 8 pulls cannot tell it from 1.01 at level FLAG_ALPHA; 200 pulls can (lower bound 1.0148).
    a = np.sqrt(0.03 * (pulls - 1) / pulls)
    values = a * np.tile([1.0, -1.0], pulls // 2)
    flags = convergence(values, np.zeros(pulls, int), np.zeros(pulls), np.ones(pulls), 1, np.ones(1, bool))
    assert flags.z[0] == pytest.approx(np.sqrt(1.03))
    assert bool(flags.excluded[0]) is flagged


def test_rhat_rarely_flags_chains_whose_means_are_heavy_tailed():
    """Chain means with R-hat exactly at the limit, Student-t(3) distributed (a funnel's neck visited by a few
    chains): over 2000 arms of 50 pulls the rule flags at most 2 FLAG_ALPHA (Clopper-Pearson). The normal-theory
    bound, (m-1) s^2 / chi2, flags about 10 % of them here (tests/stats/test_dispersion.py)."""
    rng = np.random.default_rng(9)
    runs, pulls, df = 2000, 50, 3
    scale = np.sqrt((RHAT_LIMIT**2 - 1) * (df - 2) / df)
    flagged = sum(
        bool(convergence(scale * rng.standard_t(df, pulls), np.zeros(pulls, int), np.zeros(pulls), np.ones(pulls), 1,
                         np.ones(1, bool)).excluded[0])
        for _ in range(runs))
    assert error_rate_upper(flagged, runs) <= 2 * FLAG_ALPHA, flagged


def test_divergences_clustered_in_a_few_chains_rarely_flag_an_arm_at_the_limit():
    """Divergences that come in a few chains (a funnel's neck): one pull in 20 diverges on a fifth of its
    iterations, the others never, so the arm diverges on exactly the limit's share of its iterations. Over 2000 arms
    of 20 pulls the rule flags at most FLAG_ALPHA of them (Clopper-Pearson). Reading the share itself against the
    limit flags every arm with two such pulls of twenty, about one in four."""
    rng = np.random.default_rng(11)
    runs, pulls, stuck = 2000, 20, 0.2
    flagged = 0
    for _ in range(runs):
        frac = np.where(rng.random(pulls) < DIVERGENCE_LIMIT / stuck, stuck, 0.0)
        flags = convergence(rng.normal(0.0, 0.01, pulls), np.zeros(pulls, int), frac, np.ones(pulls), 1,
                            np.ones(1, bool))
        flagged += bool(flags.excluded[0])
    assert error_rate_upper(flagged, runs) <= FLAG_ALPHA, flagged


def test_clustered_divergences_well_above_the_limit_are_flagged():
    # Half the pulls diverge on a fifth of their iterations: a share of 10 %, ten times the limit.
    frac = np.tile([0.2, 0.0], 10)
    flags = convergence(np.zeros(20), np.zeros(20, int), frac, np.ones(20), 1, np.ones(1, bool))
    assert flags.reasons[0].startswith("divergences"), flags.reasons


def test_rhat_rarely_flags_chains_whose_variances_are_heavy_tailed():
    """Chain means Student-t(3) and chains' variances log-normal (sigma 1.5: a chain that stays in a funnel's neck has
    a small variance), with R-hat exactly at the limit against the mean chain variance: over 2000 arms of 20 pulls
    the rule flags at most FLAG_ALPHA of them (Clopper-Pearson). Taking the chains' average variance as exact (no
    upper bound of W) flags more."""
    rng = np.random.default_rng(9)
    runs, pulls, df, sigma = 2000, 20, 3, 1.5
    scale = np.sqrt((RHAT_LIMIT**2 - 1) * np.exp(sigma**2 / 2) * (df - 2) / df)
    flagged = 0
    for _ in range(runs):
        var = rng.lognormal(0.0, sigma, pulls)
        flags = convergence(scale * rng.standard_t(df, pulls), np.zeros(pulls, int), np.zeros(pulls), var, 1,
                            np.ones(1, bool))
        flagged += bool(flags.excluded[0])
    assert error_rate_upper(flagged, runs) <= FLAG_ALPHA, flagged


class _ChainArm(pb.CallableArm):
    """A sampler-like arm: each pull one chain's estimate, reporting its divergent share and chain variance."""

    def __init__(self, name, sd, frac):
        def draw(rng):
            return float(rng.normal(0.0, sd)), {"divergent_fraction": frac, "chain_variance": 1.0}

        super().__init__(draw, name=name, cost=1.0, diagnostics=("divergent_fraction", "chain_variance"))


def _compare(arms, budget):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.exceptions.NoGuaranteeWarning)
        return pb.compare_samplers(arms, budget=budget, random_seed=3, progressbar=False)


def test_an_arm_the_convergence_rules_never_tested_is_not_ranked():
    """Two precise arms that diverge tie, so the ranking never stops and the gate rejects them at the end; the third,
    too noisy for the ranking to pull past its first two pairs, is the arm left. Short of the pulls that test its
    chains it is not selected ("untested"), where it would otherwise win as what is left."""
    arms = [_ChainArm("a", 0.01, 0.2), _ChainArm("b", 0.01, 0.2), _ChainArm("c", 5.0, 0.0)]
    res = _compare(arms, pb.Pulls(200))
    assert np.bincount(res.history.column("arm"), minlength=3)[2] < MIN_PULLS
    assert res.excluded["a"].startswith("divergences") and res.excluded["b"].startswith("divergences")
    assert res.excluded["c"].startswith("untested"), res.excluded
    assert not res.selected


def test_when_the_ranking_would_stop_an_untested_arm_is_pulled_until_tested():
    """A healthy precise arm is separated from a less precise one and from a noisy one, which the ranking would not
    pull again; before the run may stop, the noisy arm (diverging) gets the pulls the convergence rules need, and is
    then excluded with its reason, not left untested."""
    arms = [_ChainArm("a", 0.01, 0.0), _ChainArm("b", 0.03, 0.0), _ChainArm("c", 5.0, 0.2)]
    res = _compare(arms, pb.Pulls(400))
    assert np.bincount(res.history.column("arm"), minlength=3)[2] >= MIN_PULLS
    assert res.excluded.get("c", "").startswith("divergences"), res.excluded
    assert res.selected == ["a"] and res.stopped_by == "confidence"


def test_the_result_reports_each_arms_divergent_share_and_rhat():
    """The table, the summary and the InferenceData carry the point readings that the flags test: the mean of the
    pulls' divergent shares and R-hat across the pulls, from the arm's valid pulls."""
    arms = [_ChainArm("a", 0.01, 0.0), _ChainArm("b", 0.03, 0.004), _ChainArm("c", 5.0, 0.2)]
    res = _compare(arms, pb.Pulls(400))
    arm = res.history.column("arm").astype(int)
    values = res.history.column("obs")
    t = res.table
    for k, name in enumerate(res.arm_names):
        x = values[arm == k]
        assert t.loc[name, "rhat"] == pytest.approx(np.sqrt(1.0 + x.var(ddof=1)))  # chain variance 1
    assert t["divergent_share"].tolist() == pytest.approx([0.0, 0.004, 0.2])
    assert "diverged" in res.summary() and "R-hat" in res.summary()
    summary = res.to_inference_data()["arm_summary"]
    assert summary["divergent_share"].values.tolist() == pytest.approx([0.0, 0.004, 0.2])


def test_arms_that_report_no_chains_have_no_readings():
    arms = [pb.CallableArm(lambda rng: float(rng.normal(0.0, s)), name=f"s{s}", cost=1.0) for s in (0.1, 1.0)]
    res = _compare(arms, pb.Pulls(100))
    assert np.isnan(res.table["rhat"]).all() and np.isnan(res.table["divergent_share"]).all()
    assert "R-hat" not in res.summary()
