"""One result contract (:class:`pmcbandit.base.Result`): every public result class declares it, and a real
result of every door from a tiny run meets it: ``stopped_by``, ``samples``, ``summary()``, a ``table``
DataFrame with one row per arm (per model), ``to_inference_data()`` and ``plot()``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pmcbandit as pb
from pmcbandit.base import Result
from pmcbandit.exceptions import PmcBanditWarning

RESULT_CLASSES = [pb.RunResult, pb.EvidenceResult, pb.IdentificationResult, pb.ComparisonResult,
                  pb.FullBanditResult, pb.ModelComparison]
MEMBERS = ("stopped_by", "samples", "table", "summary", "to_inference_data", "plot")
QUIET = dict(progressbar=False, random_seed=1)


def _normal_arms(means=(0.0, 0.5, 1.0), sd=1.0):
    return [pb.CallableArm(lambda rng, m=m: rng.normal(m, sd), name=f"a{i}", cost=1.0) for i, m in enumerate(means)]


def _model(shift):
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.1, -0.3, 0.4]) + shift)
    return model


def _pool(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        return pb.evidence_arms(model, ais_steps=(20,), batch_size=100)


@pytest.fixture(scope="module")
def results():
    """door -> (result, expected table rows)."""
    from pmcbandit.full_bandit import FullBanditEnvironment

    models = {"near": _model(0.0), "far": _model(2.0)}
    pools = {name: _pool(m) for name, m in models.items()}
    env = FullBanditEnvironment([1.0, 0.8, 0.3, 0.1], noise_sd=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        out = {
            "run": (pb.run(_normal_arms(), "ucb1", budget=pb.Pulls(30), **QUIET), 3),
            "estimate_evidence": (pb.estimate_evidence(models["near"], arms=pools["near"], budget=pb.Pulls(12),
                                                       **QUIET), len(pools["near"])),
            "identify": (pb.identify(_normal_arms(), "lucb1", sigma=1.0, budget=pb.Pulls(40), **QUIET), 3),
            "compare_samplers": (pb.compare_samplers(_normal_arms(sd=0.5), budget=pb.Pulls(40), **QUIET), 3),
            "identify_full_bandit": (pb.identify_full_bandit(env, "sa_foa", k=2, budget=pb.Pulls(30), **QUIET), 4),
            "compare_models": (pb.compare_models(models, budget=pb.Pulls(24), arms=pools, slices=4, **QUIET), 2),
        }
    return out


@pytest.mark.parametrize("cls", RESULT_CLASSES, ids=lambda c: c.__name__)
def test_every_public_result_class_declares_the_contract(cls):
    missing = [name for name in MEMBERS if not hasattr(cls, name)]
    assert not missing, f"{cls.__name__} lacks {missing}"
    assert not hasattr(cls, "rounds"), "the sample count has one name, samples"


@pytest.mark.parametrize("door", ["run", "estimate_evidence", "identify", "compare_samplers", "identify_full_bandit",
                                  "compare_models"])
def test_a_real_result_of_every_door_meets_the_contract(results, door):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result, rows = results[door]
    assert isinstance(result, Result)
    assert type(result) in RESULT_CLASSES
    assert result.stopped_by in ("budget", "confidence", "target_se", "callback", "no_arm", "decided")
    assert isinstance(result.samples, int) and result.samples > 0
    table = result.table
    assert isinstance(table, pd.DataFrame) and len(table) == rows
    assert table.index.is_unique
    assert result.table is not table  # a fresh frame on each access
    text = result.summary()
    assert isinstance(text, str) and result.stopped_by in text
    idata = result.to_inference_data()
    assert type(idata).__name__ in ("InferenceData", "DataTree")
    drawn = result.plot()
    assert drawn is not None
    plt.close("all")


def test_samples_count_the_pulls(results):
    run, _ = results["run"]
    assert run.samples == len(run.history) == int(run.table["pulls"].sum())
    fb, _ = results["identify_full_bandit"]
    assert fb.samples == fb.rewards.shape[0]
    comparison, _ = results["compare_models"]
    assert comparison.samples == sum(len(r.history) for r in comparison.results.values())


def test_tables_carry_the_columns_the_plots_draw(results):
    ident, _ = results["identify"]
    assert {"mean", "lower", "upper", "selected"} <= set(ident.table.columns)
    fb, _ = results["identify_full_bandit"]
    t = fb.table
    np.testing.assert_allclose(t["upper"] - t["lower"], 2 * t["width"])
    assert list(t.index[t["selected"]]) == sorted(fb.selected, key=list(t.index).index)
    cmp, _ = results["compare_samplers"]
    assert {"efficiency", "efficiency_lower", "efficiency_upper"} <= set(cmp.table.columns)
