"""``pmcbandit.identify``: the identification protocol through the one run loop."""

import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.diagnostics.arviz_io import identification_to_inference_data
from pmcbandit.identification import IDENTIFIER_NAMES, SETTINGS
from pmcbandit.exceptions import PmcBanditWarning


def _arms(means, sd=0.5):
    return [pb.CallableArm(lambda rng, m=m: rng.normal(m, sd), name=f"arm{i}", cost=1.0) for i, m in enumerate(means)]


SPARSE = [0.5, 0.5, 0.0, 0.0, 0.0, 0.0]  # the 1-sparse instance with K = 2 (Jiang et al. 2017, Sec. 5.1)


def _identify(arms, algorithm, **kw):
    kw.setdefault("sigma", 0.5)
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        return pb.identify(arms, algorithm, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", IDENTIFIER_NAMES)
def test_every_algorithm_stops_with_confidence_on_the_right_arms(algorithm):
    k = 1 if "k" not in SETTINGS[algorithm] else 2
    means = [0.5, 0.0, 0.0, 0.0, 0.0, 0.0] if k == 1 else SPARSE
    if "reward_range" in SETTINGS[algorithm]:  # bounded rewards: uniform on [m - 1/2, m + 1/2]
        arms = [pb.CallableArm(lambda rng, m=m: rng.uniform(m - 0.5, m + 0.5), name=f"arm{i}", cost=1.0)
                for i, m in enumerate(means)]
        extra = {"rounds": 1000} if algorithm == "racing" else {}  # RACING's guarantee holds for its rounds
        # Incremental elimination's sample sizes grow as 1/epsilon^2: a wider tolerance (still below the gap of 0.5,
        # so only arm0 is epsilon-optimal) keeps its run short.
        tolerance = (0.4 if algorithm == "incremental" else 0.2) if "epsilon" in SETTINGS[algorithm] else None
        res = _identify(arms, algorithm, k=k, delta=0.05, epsilon=tolerance, bounds=(-0.5, 1.0), random_seed=7,
                        algorithm_kwargs=extra)
    else:
        mode = None if algorithm == "lucb1" else "heuristic"  # LUCB1 has no modes
        res = _identify(_arms(means), algorithm, k=k, delta=0.05, mode=mode, random_seed=7)
    assert res.stopped_by == "confidence" and res.confident
    assert sorted(res.selected) == sorted(f"arm{i}" for i in range(k))
    assert res.samples == len(res.history) and res.counts.sum() == res.samples
    # every arm was sampled once before anything else
    assert sorted(res.history.column("arm")[:6].tolist()) == list(range(6))
    assert res.settings["kind"] == "identification" and res.settings["k"] == k


def test_lucb_decisions_pull_both_arms_of_the_critical_pair():
    res = _identify(_arms(SPARSE), "lucb_pp", k=2, delta=0.05, mode="heuristic", random_seed=3)
    decision = res.history.column("decision")
    _, sizes = np.unique(decision[6:], return_counts=True)
    assert (sizes == 2).all()  # after the first round, two pulls (h and l) per decision


def test_same_seed_same_run_and_randomised_rules_use_the_policy_stream():
    runs = [_identify(_arms(SPARSE), "lil_rand_lucb", k=2, delta=0.05, random_seed=5) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].history.column("arm"), runs[1].history.column("arm"))
    np.testing.assert_array_equal(runs[0].history.column("obs"), runs[1].history.column("obs"))
    other = _identify(_arms(SPARSE), "lil_rand_lucb", k=2, delta=0.05, random_seed=6)
    assert not np.array_equal(other.history.column("arm"), runs[0].history.column("arm"))


def test_the_budget_is_a_cap_and_an_unfinished_answer_says_so():
    with pytest.warns(PmcBanditWarning, match="without the 1 - delta guarantee"):
        res = pb.identify(_arms(SPARSE), "lil_rand_lucb", k=2, delta=0.05, sigma=0.5, budget=pb.Pulls(20),
                          random_seed=1, progressbar=False)
    assert res.stopped_by == "budget" and not res.confident and len(res.history) <= 21


def test_bounds_set_sigma_and_an_observation_outside_them_quarantines_the_arm_and_ends_the_run():
    arms = _arms([0.5, 0.2, 0.1], sd=0.01)
    res = _identify(arms, "lucb_pp", k=1, delta=0.05, sigma=None, bounds=(0.0, 1.0), mode="heuristic", random_seed=1)
    assert res.stopped_by == "confidence" and res.settings["bounds"] == [0.0, 1.0]
    assert dict(res.settings["policy_params"])["sigma"] == 0.5
    bad = _arms([0.5, 0.2, 1.5], sd=0.01)
    res = _identify(bad, "lucb_pp", k=1, delta=0.05, sigma=None, bounds=(0.0, 1.0), random_seed=1)
    assert res.stopped_by == "no_arm" and res.quarantined.tolist() == [False, False, True]


def test_callback_stop_then_resume_equals_the_uninterrupted_run(tmp_path):
    full = _identify(_arms(SPARSE), "lil_rand_lucb", k=2, delta=0.05, random_seed=9)
    path = tmp_path / "id.npz"
    first = _identify(_arms(SPARSE), "lil_rand_lucb", k=2, delta=0.05, random_seed=9, checkpoint=path,
                      callback=lambda p, h: p.pulls >= 30)
    assert first.stopped_by == "callback"
    resumed = _identify(_arms(SPARSE), "lil_rand_lucb", k=2, delta=0.05, random_seed=9, checkpoint=path)
    np.testing.assert_array_equal(resumed.history.column("arm"), full.history.column("arm"))
    assert resumed.selected == full.selected and resumed.stopped_by == "confidence"
    with pytest.raises(ValueError, match="was written with"):
        _identify(_arms(SPARSE), "lucb_pp", k=2, delta=0.05, random_seed=9, checkpoint=path)


def test_inference_data_of_an_identification_run():
    res = _identify(_arms(SPARSE), "lil_clucb", k=2, delta=0.05, mode="heuristic", random_seed=2)
    idata = identification_to_inference_data(res)
    assert idata.sample_stats.sizes["pull"] == len(res.history)
    assert idata.arm_summary["selected"].values.sum() == 2
    assert idata.attrs["stopped_by"] == "confidence" and idata.attrs["policy"] == "lil_clucb"
    assert "arm0" in res.summary() and "selected (top 2" in res.summary()


@pytest.mark.parametrize("kwargs, exc, words", [
    (dict(sigma=None), ValueError, "'sigma'"),
    (dict(sigma=-1.0), ValueError, "'sigma'"),
    (dict(k=6), ValueError, "'k'"),
    (dict(k=0), ValueError, "'k'"),
    (dict(delta=1.5), ValueError, "'delta'"),
    (dict(algorithm="lucb9"), ValueError, "'algorithm'"),
    (dict(bounds=(1.0, 0.0)), ValueError, "'bounds'"),
    (dict(algorithm="lil_ucb", k=2), ValueError, "'k'"),
])
def test_bad_arguments_name_the_parameter(kwargs, exc, words):
    args = dict(arms=_arms(SPARSE), algorithm="lil_rand_lucb", k=2, delta=0.05, sigma=0.5, progressbar=False)
    args.update(kwargs)
    with pytest.raises(exc, match=words):
        pb.identify(**args)


def test_log_scale_arms_are_refused():
    arms = [pb.CallableArm(lambda rng: rng.normal(), name=f"a{i}", log_scale=True) for i in range(3)]
    with pytest.raises(ValueError, match="linear-scale arms"):
        pb.identify(arms, sigma=1.0, progressbar=False)
