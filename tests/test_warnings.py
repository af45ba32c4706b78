"""Warnings a user can act on (pmcbandit.exceptions, pmcbandit.result, the doors).

A warning means the answer may be wrong or has no guarantee; what was adapted or is sound but
weaker goes to the result's notes and the ``pmcbandit`` logger at INFO (docs/how_it_works.md, "Warnings and
what to do").
Each warned condition is produced here on the cheapest run that shows it, and checked three ways:
``warnings.simplefilter("error", PmcBanditWarning)`` turns it into an exception of its class that a
caller can catch; its text names an action; it is issued once.
"""

from __future__ import annotations

import logging
import pickle
import re
import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.exceptions import (NoGuaranteeWarning, PmcBanditWarning, SettingsWarning, UnreliableArmWarning,
                                  WarningText)
from pmcbandit.result import KHAT_MIN_WEIGHTS, MIN_CONSISTENCY_DOF
from pmcbandit.runtime.guards import CHECK_PULLS
from tests.helpers import ScriptedArm, normal_arm

#: An action: after a colon or semicolon, an imperative verb the user can carry out.
ACTION = re.compile(r"[:;—]\s*(run|read|inspect|set|pass|add|fix|raise|give|let|ask)\b")


class _WeightArm(pb.Arm):
    """``size`` log importance weights per pull whose exponentials have mean exactly ``z``:
    log-normal (every moment) or Pareto of shape ``law`` (infinite variance for shape >= 1/2)."""

    log_scale = True
    importance_weights = True

    def __init__(self, name, law, z=1.0, size=200, family=None):
        self.name, self.law, self.log_z, self.size, self.family = name, law, np.log(z), size, family

    def draw(self, rng):
        if self.law == "lognormal":
            log_w = rng.normal(-0.125, 0.5, self.size)
        else:
            log_w = np.log(1.0 - self.law) - self.law * np.log(rng.random(self.size))
        return self.log_z + log_w, {}, 1.0


class _EstimateArm(_WeightArm):
    """Log-scale estimates of Z that are not importance weights (as nested-sampling runs): no arm bets on them
    (:mod:`pmcbandit.stats.missed_mass`), so arms that disagree are read by the consistency test alone."""

    importance_weights = False


class _FamilyArm(pb.Arm):
    def __init__(self, name, mean, sd, family):
        self.name, self.mean, self.sd, self.family = name, mean, sd, family

    def draw(self, rng):
        return rng.normal(self.mean, self.sd, size=4), {}, 1.0


def _quarantine():
    return pb.run([normal_arm(1.0, 1.0, size=4, name="good"), ScriptedArm("broken", raise_on=range(1000))],
                  policy="uniform", budget=pb.Pulls(40), random_seed=1, progressbar=False, max_faults=1)


def _disagreement():
    arms = [_EstimateArm("a", "lognormal", z=2.0), _EstimateArm("b", "lognormal", z=2.0),
            _EstimateArm("biased", "lognormal", z=3.0)]
    return pb.run(arms, policy="uniform", budget=pb.Pulls(300), random_seed=3, progressbar=False)


def _too_few():
    return pb.run([pb.CallableArm(lambda rng: rng.normal(1.0, 1.0), name="one-value", cost=1.0)], policy="ucb1",
                  budget=pb.Pulls(4), random_seed=5, progressbar=False)


def _no_reliable_arm():
    return pb.run([_WeightArm("heavy", 0.95, size=500)], budget=pb.Pulls(10), random_seed=6, progressbar=False)


def _no_independent_check():
    arms = [_FamilyArm("good", 1.0, 0.1, "importance"), _FamilyArm("other", 1.0, 3.0, "annealing")]
    return pb.run(arms, policy="thompson", budget=pb.Pulls(60), random_seed=5, progressbar=False,
                  cross_check_share=0.0)


def _identify_out_of_budget():
    arms = [normal_arm(m, 1.0, name=f"m{m}") for m in (0.0, 0.05, 0.1)]
    return pb.identify(arms, k=1, delta=0.05, sigma=1.0, budget=pb.Pulls(30), random_seed=0, progressbar=False)


def _compare_asymptotic():
    arms = [normal_arm(1.0, sd, name=f"sd{sd}") for sd in (0.5, 1.0)]
    return pb.compare_samplers(arms, k=1, budget=pb.Pulls(60), random_seed=0, progressbar=False)


def _weight_spread():
    from tests.test_result import _SpreadArm

    return pb.run([_SpreadArm("spread", 16.0)], budget=pb.Pulls(20), random_seed=3, progressbar=False)


CONDITIONS = {
    "weight_spread": (_weight_spread, UnreliableArmWarning),
    "quarantine": (_quarantine, UnreliableArmWarning),
    "disagreement": (_disagreement, NoGuaranteeWarning),
    "too_few_observations": (_too_few, NoGuaranteeWarning),
    "no_reliable_arm": (_no_reliable_arm, UnreliableArmWarning),
    "independent_check": (_no_independent_check, NoGuaranteeWarning),
    "identify_no_guarantee": (_identify_out_of_budget, NoGuaranteeWarning),
    "compare_asymptotic": (_compare_asymptotic, NoGuaranteeWarning),
}


def _caught(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = make()
    return result, [w for w in caught if issubclass(w.category, PmcBanditWarning)]


@pytest.mark.parametrize("condition", list(CONDITIONS))
def test_error_filter_makes_every_warned_condition_a_catchable_exception(condition):
    make, category = CONDITIONS[condition]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PmcBanditWarning)
        with pytest.raises(category) as err:
            make()
    assert isinstance(err.value, PmcBanditWarning) and ACTION.search(str(err.value)), str(err.value)


@pytest.mark.parametrize("condition", list(CONDITIONS))
def test_every_warning_names_an_action_and_is_issued_once(condition):
    make, category = CONDITIONS[condition]
    result, caught = _caught(make)
    texts = [str(w.message) for w in caught]
    assert texts and any(issubclass(w.category, category) for w in caught)
    assert len(texts) == len(set(texts)), texts  # no message twice
    for text in texts:
        assert ACTION.search(text), f"no action in: {text}"
    # the result lists what was issued, each as a WarningText of its class
    listed = result.warnings()
    assert all(isinstance(m, WarningText) and issubclass(m.category, PmcBanditWarning) for m in listed)
    assert set(map(str, listed)) <= set(texts)
    assert all(f"warning: {m}" in result.summary() for m in listed)


def test_a_sound_answer_from_checked_arms_notes_what_it_left_out_and_warns_nothing(caplog):
    """An arm failing its k-hat beside a passing one: the answer rests on the passing arm (a note)."""
    arms = [_WeightArm("light", "lognormal"), _WeightArm("heavy", 0.9)]
    with caplog.at_level(logging.INFO, logger="pmcbandit"):
        result, caught = _caught(lambda: pb.run(arms, budget=pb.Pulls(120), random_seed=1, progressbar=False))
    assert result.reliability.unreliable.tolist() == [False, True] and result.interval_status == "ok"
    assert caught == [] and result.warnings() == []
    note = [n for n in result.notes if "Pareto k-hat" in n and "heavy" in n]
    assert len(note) == 1 and f"note: {note[0]}" in result.summary()
    logged = [r.getMessage() for r in caplog.records if r.name == "pmcbandit" and r.levelno == logging.INFO]
    assert logged.count(note[0]) == 1  # logged once, by the door


def test_a_clean_run_of_a_well_behaved_model_warns_nothing(caplog):
    arms = [normal_arm(2.0, sd, size=4, name=f"sd{sd}") for sd in (0.5, 1.0)]
    with caplog.at_level(logging.INFO, logger="pmcbandit"):
        result, caught = _caught(lambda: pb.run(arms, policy="thompson", budget=pb.Pulls(200), random_seed=0,
                                                progressbar=False))
    assert result.interval_status == "ok" and caught == [] and result.warnings() == []
    assert not [r for r in caplog.records if r.name == "pmcbandit" and r.levelno >= logging.WARNING]


def test_two_families_compared_is_a_check_that_passed():
    arms = [_FamilyArm("is", 1.0, 0.5, "importance"), _FamilyArm("ais", 1.0, 0.5, "annealing")]
    result, caught = _caught(lambda: pb.run(arms, policy="thompson", budget=pb.Pulls(400), random_seed=2,
                                            progressbar=False))
    assert len(result.consistency.compared) == 2 and caught == []


def test_the_independent_check_advice_names_the_budget_from_this_run():
    arms = [_FamilyArm("good", 1.0, 0.1, "importance"), _FamilyArm("other", 1.0, 0.3, "annealing")]
    result, _ = _caught(lambda: pb.run(arms, policy="thompson", budget=pb.Pulls(60), random_seed=5,
                                       progressbar=False, cross_check_share=0.0))
    (text,) = [m for m in result.warnings() if m.topic == "independent_check"]
    assert "cross_check_share > 0" in text
    result, _ = _caught(lambda: pb.run(arms, policy="thompson", budget=pb.Pulls(20), random_seed=5,
                                       progressbar=False))
    (text,) = [m for m in result.warnings() if m.topic == "independent_check"]
    # 30 observations (no importance weights) in a 0.1 share: 300 pulls
    assert f"at least {(MIN_CONSISTENCY_DOF + 1) * 10} pulls" in text and "other" in text


def test_observations_the_consistency_test_needs():
    # one weight per pull: compared once it has 30 pulls, before the k-hat's 100 weights
    assert CHECK_PULLS == MIN_CONSISTENCY_DOF + 1 == 30 < KHAT_MIN_WEIGHTS


def test_a_warning_issued_before_the_run_is_not_issued_again():
    from pmcbandit.runtime.door import emit_warnings

    early = WarningText("no independent check within a 1 s budget: run with budget >= 40 s", NoGuaranteeWarning,
                        "independent_check")
    result, _ = _caught(_no_independent_check)
    result.issued = (early,)
    assert result.warnings()[0] == early  # listed first, and no second check warning after the run
    assert [m.topic for m in result.warnings()].count("independent_check") == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        emit_warnings(result)
    assert all(str(w.message) != early for w in caught)


def test_warning_text_is_a_string_that_keeps_its_class():
    text = WarningText("x: run again", UnreliableArmWarning, "quarantine")
    back = pickle.loads(pickle.dumps(text))
    assert back == "x: run again" and back.category is UnreliableArmWarning and back.topic == "quarantine"
    assert issubclass(SettingsWarning, PmcBanditWarning)
    with pytest.raises(TypeError, match="'category' parameter of WarningText"):
        WarningText("x", UserWarning)


@pytest.mark.slow
def test_evidence_budget_too_short_for_the_check_says_so_once_up_front(caplog):
    """A PyMC model at a budget too short for the AIS check arm: one warning, before the run, with the
    budget that would do; the AIS sizing is a note logged once."""
    from tests.analytic_models import normal_normal

    model, _ = normal_normal()
    with caplog.at_level(logging.INFO, logger="pmcbandit"):
        result, caught = _caught(lambda: pb.estimate_evidence(model, budget=0.005, random_seed=0, progressbar=False))
    texts = [str(w.message) for w in caught if "independent check" in str(w.message)]
    assert len(texts) == 1 and re.search(r"run with budget >= \d+ s", texts[0])
    assert [m.topic for m in result.warnings()].count("independent_check") == 1
    sized = [r.getMessage() for r in caplog.records if r.getMessage().startswith("AIS step counts")]
    assert len(sized) == 1 and sized[0] in result.notes
    with warnings.catch_warnings():
        warnings.simplefilter("error", PmcBanditWarning)
        with pytest.raises(NoGuaranteeWarning, match="run with budget >="):
            pb.estimate_evidence(model, budget=0.005, random_seed=0, progressbar=False)


@pytest.mark.parametrize("ais_z, disagree", [(2.0, False), (4.0, True)])
def test_an_unchecked_arm_of_thirty_pulls_is_compared_but_not_combined(ais_z, disagree):
    """An AIS-like arm of one weight per pull has no k-hat before 100 pulls: it carries no weight, but from
    30 pulls on it is the independent check of the importance samplers; and it catches a wrong answer: where its
    weights sit above the importance arm's upper limit, they show that arm too low (it missed half the evidence),
    and the answer rests on them, unchecked."""
    arms = [_WeightArm("is", "lognormal", z=2.0, size=200, family="importance"),
            _WeightArm("ais", "lognormal", z=ais_z, size=1, family="annealing")]
    result, _ = _caught(lambda: pb.run(arms, policy="uniform", budget=pb.Pulls(100), random_seed=4,
                                       progressbar=False))
    assert result.reliability.unchecked.tolist() == [False, True]
    assert 30 <= result.arm_table()["pulls"][1] < 100
    if disagree:
        assert result.arm_status().tolist() == ["missed_mass", "ok"]
        assert result.consistency.compared.tolist() == [1] and result.combined.weights.tolist() == [0.0, 1.0]
        assert result.interval_status == "no_cross_check"
    else:
        assert sorted(result.consistency.compared.tolist()) == [0, 1]
        assert not [m for m in result.warnings() if m.topic == "independent_check"]
        assert result.interval_status == "ok" and result.combined.weights[1] == 0.0


def test_the_independent_check_advice_when_the_other_family_failed_its_khat():
    """More draws cannot fix a proposal that fails k-hat: the advice is another importance arm, not a budget."""
    arms = [_WeightArm("heavy", 0.9, family="importance"), _WeightArm("ais", "lognormal", size=1, family="annealing")]
    result, _ = _caught(lambda: pb.run(arms, policy="uniform", budget=pb.Pulls(80), random_seed=3,
                                       progressbar=False))
    assert result.reliability.unreliable.tolist() == [True, False]
    (text,) = [m for m in result.warnings() if m.topic == "independent_check"]
    assert "add an importance arm whose proposal fits" in text and "heavy failed the Pareto k-hat" in text
    assert ACTION.search(text)


def test_the_advice_asks_for_the_pulls_a_coarse_check_arm_needs_to_resolve_the_answer():
    """A check arm of sd 3 around a mean of 1, four draws a pull, needs about (3 / 0.1)^2 / 4 = 225 pulls for a
    relative SE of CHECK_RESOLUTION, not the consistency test's 30: the advice says so, estimated from this run."""
    arms = [_FamilyArm("good", 1.0, 0.1, "importance"), _FamilyArm("other", 1.0, 3.0, "annealing")]
    result, _ = _caught(lambda: pb.run(arms, policy="thompson", budget=pb.Pulls(400), random_seed=5,
                                       progressbar=False))
    assert result.interval_status == "no_cross_check"
    (text,) = [m for m in result.warnings() if m.topic == "independent_check"]
    need = int(text.split("so other reaches ")[1].split(" observations")[0])
    assert 150 < need < 450 and f"at least {need * 10} pulls" in text
