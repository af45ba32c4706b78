"""A sampler that does not converge cannot win: divergences and the potential scale reduction across
pulls exclude an arm (pmcbandit.compare.gate.convergence), with the reason, before the agreement test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.compare.gate import DIVERGENCE_LIMIT, MIN_PULLS, RHAT_LIMIT, convergence


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
    # 8 pulls cannot tell it from 1.01 at level RHAT_ALPHA (lower bound 1.0057); 200 pulls can.
    a = np.sqrt(0.03 * (pulls - 1) / pulls)
    values = a * np.tile([1.0, -1.0], pulls // 2)
    flags = convergence(values, np.zeros(pulls, int), np.zeros(pulls), np.ones(pulls), 1, np.ones(1, bool))
    assert flags.z[0] == pytest.approx(np.sqrt(1.03))
    assert bool(flags.excluded[0]) is flagged
