"""An arm that failed the Pareto k-hat check is reported with the k-hat it failed with, not a later fit."""

import warnings

import numpy as np

import pmcbandit as pb
from pmcbandit.diagnostics.arviz_io import from_inference_data


class Weights(pb.CallableArm):
    importance_weights = True


def _run():
    # log w = 1.5 E, E ~ Exp(1): Pareto weights of shape k = 1.5, hopeless (k >= 1) at their first fit
    heavy = Weights(lambda rng: 1.5 * rng.exponential(size=200), name="heavy", cost=1.0, log_scale=True)
    light = Weights(lambda rng: rng.normal(0.0, 0.1, size=200), name="light", cost=1.0, log_scale=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pb.run([heavy, light], "ucb_v", budget=pb.Pulls(20), random_seed=0, progressbar=False)


def test_the_engine_records_the_k_hat_an_arm_failed_with_and_files_keep_it():
    res = _run()
    rel = res.reliability
    assert rel.unreliable.tolist() == [True, False]
    khat, threshold, n = rel.failed[0]
    assert khat > threshold and khat >= 1.0 and n == rel.n_weights[0]
    assert np.isnan(rel.failed[1]).all()
    note = [n for n in res.notes if "failed the Pareto k-hat check" in n]
    assert note and f"heavy (k-hat {khat:.2f} above the threshold {threshold:.2f} at S = {int(n)})" in note[0]
    again = from_inference_data(res.to_inference_data())
    np.testing.assert_array_equal(again.reliability.failed, rel.failed)
    assert again.notes == res.notes


def test_the_note_gives_the_failing_k_hat_when_the_final_fit_came_back_below_the_threshold():
    res = _run()
    rel = res.reliability
    later = rel._replace(khat=np.array([0.68, rel.khat[1]]), threshold=np.array([0.70, rel.threshold[1]]),
                         n_weights=np.array([5000, rel.n_weights[1]]),
                         failed=np.array([[0.74, 0.70, 2200.0], [np.nan] * 3]))
    moved = type(res)(res.arm_names, res.history, res.combine, res.log_scale, res.quarantined, res.settings, None,
                      later, ())
    note = [n for n in moved.notes if "failed the Pareto k-hat check" in n][0]
    assert "heavy (k-hat 0.74 above the threshold 0.70 at S = 2200; 0.68 on all its 5000 weights)" in note
    assert "k-hat 0.68" not in note
