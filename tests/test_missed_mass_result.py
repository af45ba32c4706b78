"""A run's result gives no weight to an arm whose estimate another arm's importance weights show too low
(:attr:`pmcbandit.RunResult.missed_mass`), and reports it as ``"missed_mass"``."""

import math
import warnings

import numpy as np

import pmcbandit as pb
from pmcbandit.diagnostics.arviz_io import from_inference_data
from tests.tolerance import assert_within_se


class Importance(pb.CallableArm):
    importance_weights = True
    family = "importance"


class Annealing(pb.CallableArm):
    importance_weights = True
    family = "annealing"


def _weights(log_mean, sigma):
    """200 log weights a pull, lognormal with mean exp(log_mean)."""
    return lambda rng: rng.normal(log_mean - 0.5 * sigma**2, sigma, size=200)


def _run(annealing_log_mean):
    # log Z = 0; the importance arm finds all of it, the annealing arm exp(annealing_log_mean) of it.
    arms = [Importance(_weights(0.0, 0.8), name="found", cost=1.0, log_scale=True),
            Annealing(_weights(annealing_log_mean, 0.3), name="missed", cost=1.0, log_scale=True)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.PmcBanditWarning)
        return pb.run(arms, "uniform", budget=pb.Pulls(120), random_seed=3, progressbar=False)


def test_an_arm_that_found_half_the_evidence_gets_no_weight_and_its_status_says_why():
    res = _run(math.log(0.5))
    assert res.missed_mass.low.tolist() == [False, True]
    assert res.arm_status().tolist() == ["ok", "missed_mass"]
    assert res.combined.weights.tolist() == [1.0, 0.0]
    assert_within_se(res.log_estimate, 0.0, res.log_se)
    assert res.interval_status == "no_cross_check"  # the annealing family no longer checks the answer
    note = [n for n in res.notes if "show too low" in n]
    assert note and "missed (by found's weights" in note[0]
    again = from_inference_data(res.to_inference_data())
    assert again.arm_status().tolist() == ["ok", "missed_mass"]
    assert str(res.to_inference_data()["arm_summary"]["status"].attrs["flag_meanings"]).split()[-1] == "missed_mass"


def test_arms_that_agree_are_combined_and_check_each_other():
    res = _run(0.0)
    assert not res.missed_mass.low.any()
    assert (res.combined.weights > 0).all()
    assert res.interval_status == "ok"
    assert not any("show too low" in n for n in res.notes)


def test_a_linear_run_is_never_tested():
    arms = [pb.CallableArm(lambda rng, m=m: rng.normal(m, 0.1), name=f"m{m}") for m in (1.0, 2.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.PmcBanditWarning)  # the two arms disagree: a linear run is not tested
        res = pb.run(arms, "uniform", budget=pb.Pulls(60), random_seed=1, progressbar=False)
    assert not res.missed_mass.low.any() and np.isinf(res.missed_mass.threshold)
