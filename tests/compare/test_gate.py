"""The validity gate: estimates per arm, the reference test, the pairwise majority rule."""

import math

import numpy as np

from tests.tolerance import assert_within_se

from pmcbandit.compare.gate import MIN_PULLS, ArmEstimates, arm_estimates, gate


def test_log_scale_estimates_are_log_mean_exp_with_a_delta_method_se():
    rng = np.random.default_rng(0)
    logs = rng.normal(-0.5, 1.0, 4000)  # log-normal weights with mean 1: log Z = 0
    est = arm_estimates(logs, np.zeros(4000, dtype=int), 1, log_scale=True)
    w = np.exp(logs)
    assert math.isclose(est.estimate[0], math.log(w.mean()))
    assert math.isclose(est.se[0], w.std(ddof=1) / math.sqrt(4000) / w.mean())
    assert_within_se(est.estimate[0], 0.0, est.se[0])
    assert logs.mean() < -0.4  # the mean of the logs is biased by Jensen: not what the gate compares


def test_the_reference_test_excludes_only_the_arm_it_rejects():
    est = ArmEstimates(np.array([0.01, 0.5, -0.02]), np.array([0.01, 0.01, 0.02]), np.full(3, 100))
    g = gate(est, np.ones(3, dtype=bool), reference=0.0, alpha=0.01)
    assert list(g.excluded) == [False, True, False] and g.reasons[1].startswith("reference")
    assert math.isclose(g.z[1], 50.0)


def test_a_precise_biased_arm_is_outvoted_and_the_honest_precise_arm_is_kept():
    # The honest arm 0 is as precise as the biased arm 2: a pooled reference would be torn between them.
    est = ArmEstimates(np.array([0.0, 0.03, 0.2, 0.14]), np.array([0.004, 0.04, 0.0007, 0.05]), np.full(4, 100))
    g = gate(est, np.ones(4, dtype=bool), reference=None, alpha=0.01)
    assert list(np.flatnonzero(g.excluded)) == [2] and "disagrees with 2 of the 3" in g.reasons[2]


def test_two_arms_that_disagree_both_leave_and_arms_that_agree_stay():
    est = ArmEstimates(np.array([0.0, 1.0]), np.array([0.01, 0.01]), np.full(2, 100))
    assert gate(est, np.ones(2, dtype=bool), None, 0.01).excluded.all()
    est = ArmEstimates(np.array([0.0, 0.01, -0.01]), np.array([0.01, 0.01, 0.01]), np.full(3, 100))
    assert not gate(est, np.ones(3, dtype=bool), None, 0.01).excluded.any()


def test_arms_with_too_few_pulls_or_out_of_play_are_not_tested():
    est = ArmEstimates(np.array([0.0, 9.0, 9.0]), np.array([0.01, 0.01, 0.01]), np.array([100, MIN_PULLS - 1, 100]))
    g = gate(est, np.array([True, True, False]), reference=0.0, alpha=0.01)
    assert not g.excluded.any() and np.isnan(g.z[1]) and np.isnan(g.z[2])


def test_under_agreement_the_gate_rarely_excludes_at_its_level():
    rng = np.random.default_rng(1)
    se = np.array([0.01, 0.02, 0.05, 0.1])
    false = sum(gate(ArmEstimates(rng.normal(0.0, se), se, np.full(4, 100)), np.ones(4, dtype=bool), None,
                     0.05).excluded.any() for _ in range(2000))
    assert false / 2000 <= 0.05
