"""The budget a result reports is the user's, and advice in seconds counts the set-up the budget paid for."""

import re
import warnings

import pytest

import pmcbandit as pb
from pmcbandit.runtime.budget import budget_label
from tests import analytic_models


@pytest.mark.parametrize("budget, label", [(20, "20 s"), (2.5, "2.5 s"), (pb.Pulls(5), "Pulls(n=5)"),
                                           (pb.WallSeconds(3.0), "WallSeconds(seconds=3.0)")])
def test_budget_label_is_the_users_spelling(budget, label):
    assert budget_label(budget) == label


def test_a_run_reports_the_budget_it_was_given():
    arms = [pb.CallableArm(lambda rng: rng.normal(0.0, 1.0), name="a", cost=1.0)]
    res = pb.run(arms, "uniform", budget=0.05, random_seed=0, progressbar=False)
    assert res.settings["budget"] == "0.05 s"
    assert "budget=0.05 s," in res.summary() and "WallSeconds" not in res.summary()
    assert res.to_inference_data().attrs["budget"] == "0.05 s"


def test_estimate_evidence_reports_the_users_budget_not_what_set_up_left_of_it():
    model, _ = analytic_models.normal_normal()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pb.estimate_evidence(model, budget=2, random_seed=0, progressbar=False)
    assert res.settings["budget"] == "2 s" and res.settings["budget_seconds"] == 2.0
    assert res.settings["setup_seconds"] > 0
    assert "budget=2 s," in res.summary() and "WallSeconds" not in res.summary()


def _unchecked_run():
    """A log-scale run whose second estimator family got too few pulls for the independent check."""
    class Family(pb.CallableArm):
        pass

    def arm(name, family, cost):
        a = Family(lambda rng: rng.normal(0.0, 0.1, size=4), name=name, cost=cost, log_scale=True)
        a.family = family
        return a

    arms = [arm("is-a", "importance", 1.0), arm("is-b", "importance", 1.0), arm("ais-c", "annealing", 1000.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pb.run(arms, "ucb_v", budget=pb.Pulls(5), random_seed=0, progressbar=False, cross_check_share=0.01)
    res.settings["budget"] = "20 s"  # its advice in seconds, as under the time budget it stands for
    return res


def _advice(res) -> str:
    texts = [str(w) for w in res.warnings() if getattr(w, "topic", "") == "independent_check"]
    assert len(texts) == 1
    return texts[0]


def test_advice_in_seconds_counts_the_set_up_the_budget_paid_for():
    res = _unchecked_run()
    plain = _advice(res)
    assert "set-up" not in plain
    needed = int(re.search(r"run with a budget of at least (\d+) s", plain).group(1))

    res.settings.update(setup_seconds=18.0, budget_seconds=20.0)  # set-up ate 18 s of a 20 s budget
    text = _advice(res)
    advised = int(re.search(r"run with a budget of at least (\d+) s", text).group(1))
    # ceil(18 + x) for the same x as ceil(x), and never the 20 s the run already had
    assert max(21, needed + 17) <= advised <= max(21, needed + 18)
    assert "set-up took 18 s of the 20 s budget, leaving the pulls" in text and "compiles" in text
