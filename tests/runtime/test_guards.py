"""The run loop's guards (pmcbandit.runtime.guards): cap, fit, initial, cross-check and untrusted rules.

Rules are tested as pure functions of their inputs first, then through ``run`` with cheap
synthetic arms whose durations are declared (``expected_seconds``) or made by sleeping, so the
checks are on which arms were chosen, never on how long anything took.
"""

import time
import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.arms.base import CallableArm
from pmcbandit.runtime.guards import (CHECK_PULLS, CHECK_SWITCH, CROSS_CHECK, INITIAL, POLICY, UNTRUSTED_SHARE,
                                     CheckCarry, Guards)
from pmcbandit.exceptions import PmcBanditWarning


class _Arm(pb.Arm):
    """A normal arm with a declared family and predicted duration; sleeps ``sleep`` s per pull."""

    def __init__(self, name, sd=1.0, family=None, expected=None, sleep=0.0, cost=1.0):
        self.name, self.sd, self.family, self.expected_seconds = name, sd, family, expected
        self.sleep, self.cost = sleep, cost

    def draw(self, rng):
        if self.sleep:
            time.sleep(self.sleep)
        return rng.normal(1.0, self.sd, size=2), {}, self.cost


def _guards(arms, horizon=None, per_decision=2, count_pulls=False, **kw):
    return Guards(arms, horizon, per_decision, count_pulls, **kw)


def _none_blocked(k):
    return np.zeros(k, dtype=bool)


def _no_loss(k):
    return np.full(k, np.nan)


# --- rules as functions ---------------------------------------------------------------------
def test_cap_excludes_arms_whose_decision_takes_more_than_the_share():
    arms = [_Arm("quick", expected=0.01), _Arm("slow", expected=2.0), _Arm("unknown")]
    g = _guards(arms, horizon=10.0)  # cap: a decision (2 pulls) <= 1 s
    plan = g.plan(_none_blocked(3), 10.0, _no_loss(3))
    assert plan.eligible.tolist() == [True, False, True]


def test_when_every_known_arm_is_over_the_cap_only_the_quickest_stays():
    arms = [_Arm("a", expected=3.0), _Arm("b", expected=2.0), _Arm("c", expected=2.0)]
    plan = _guards(arms, horizon=10.0).plan(_none_blocked(3), 10.0, _no_loss(3))
    assert plan.eligible.tolist() == [False, True, True]


def test_fit_rule_drops_decisions_longer_than_the_time_left_and_ends_the_run():
    arms = [_Arm("a", expected=0.2), _Arm("b", expected=0.05)]
    g = _guards(arms, horizon=100.0)
    assert g.plan(_none_blocked(2), 0.3, _no_loss(2)).eligible.tolist() == [False, True]
    assert g.plan(_none_blocked(2), 0.05, _no_loss(2)) is None


def test_initial_rule_tries_every_arm_cheapest_first_unknown_last():
    arms = [_Arm("u"), _Arm("b", expected=0.3), _Arm("a", expected=0.1)]
    g = _guards(arms, horizon=100.0)
    order = []
    for _ in range(3):
        plan = g.plan(_none_blocked(3), 100.0, _no_loss(3))
        assert plan.reason == INITIAL
        order.append(plan.arm)
        g.dispatched(plan.arm)
    assert order == [2, 1, 0]
    assert g.plan(_none_blocked(3), 100.0, _no_loss(3)).reason == POLICY


def test_without_a_horizon_an_se_target_tries_every_arm_in_pool_order_and_a_pull_budget_does_not():
    """Rule 3 without a horizon (TargetSE without max_seconds): untried arms in pool order, whatever their declared
    durations (no rule reads a clock there); a Pulls budget leaves the choice to the policy."""
    arms = [_Arm("u"), _Arm("b", expected=0.3), _Arm("a", expected=0.1)]
    g = _guards(arms, try_every_arm=True)
    order = []
    for _ in range(3):
        plan = g.plan(_none_blocked(3), None, _no_loss(3))
        assert plan.reason == INITIAL
        order.append(plan.arm)
        g.dispatched(plan.arm)
    assert order == [0, 1, 2]
    assert g.plan(_none_blocked(3), None, _no_loss(3)).reason == POLICY
    assert _guards(arms, count_pulls=True).plan(_none_blocked(3), None, _no_loss(3)).reason == POLICY


def test_an_se_target_tries_the_arm_thompson_sampling_would_starve():
    """Thompson sampling's draw for an untried arm is uniform: against an arm whose rewards are near 1 it can lose
    every decision. Under a TargetSE budget every arm has a decision (reason INITIAL), first in pool order."""
    arms = [CallableArm(lambda rng: 1.0 + 0.01 * rng.standard_normal(), name="good", cost=1.0),
            CallableArm(lambda rng: 1.0 + 1e-4 * rng.standard_normal(), name="better", cost=1.0),
            CallableArm(lambda rng: 1.0 + 3.0 * rng.standard_normal(), name="wide", cost=1.0)]
    res = pb.run(arms, policy="thompson", budget=pb.TargetSE(1e-3, min_pulls=2), random_seed=3, progressbar=False)
    h = res.history
    first = h.column("arm")[h.column("reason") == INITIAL]
    assert list(dict.fromkeys(first.tolist())) == [0, 1, 2]  # a decision (two pulls, paired reward) each
    assert res.arm_table()["pulls"].min() >= 1


def test_guards_whose_only_rule_is_the_first_round_go_idle_once_every_arm_had_it():
    """Without a horizon, a second family or rule 5, rule 3 is the only rule: the guards are idle once every arm
    has had its decision; with any other rule they never are."""
    arms = [_Arm("a"), _Arm("b")]
    g = _guards(arms, try_every_arm=True)
    assert not g.idle()
    g.dispatched(0)
    assert not g.idle()
    g.dispatched(1)
    assert g.idle()
    for other in (_guards(arms, horizon=10.0, try_every_arm=True),
                  _guards([_Arm("a", family="x"), _Arm("b", family="y")], try_every_arm=True)):
        other.dispatched(0)
        other.dispatched(1)
        assert not other.idle()


def test_an_se_target_run_makes_the_same_decisions_once_its_guards_are_idle(monkeypatch):
    """The engine drops idle guards (Guards.idle): the run's history is the one it makes with the guards kept."""
    def arms():
        return [CallableArm(lambda rng, s=s: 1.0 + s * rng.standard_normal(), name=f"a{s}", cost=1.0)
                for s in (0.3, 0.1, 1.0)]

    def history(budget):
        res = pb.run(arms(), policy="ucb1", budget=budget, random_seed=5, progressbar=False)
        return res.history.column("arm"), res.history.column("obs")

    budget = pb.TargetSE(2e-3)
    arm_dropped, value_dropped = history(budget)
    monkeypatch.setattr(Guards, "idle", lambda self: False)
    arm_kept, value_kept = history(budget)
    assert arm_dropped.size > 50
    np.testing.assert_array_equal(arm_dropped, arm_kept)
    np.testing.assert_array_equal(value_dropped, value_kept)


def test_measured_durations_replace_the_declared_ones():
    arms = [_Arm("a", expected=0.01), _Arm("b", expected=0.01)]
    g = _guards(arms, horizon=10.0)
    g.observe(0, 3.0, 1.0)  # arm a turned out slow: 2 pulls = 6 s > 1 s cap
    assert g.plan(_none_blocked(2), 10.0, _no_loss(2)).eligible.tolist() == [False, True]


def test_cross_check_keeps_the_share_on_the_best_arm_of_another_family():
    arms = [_Arm("is-1", family="importance"), _Arm("ais-a", family="annealing"), _Arm("ais-b", family="annealing")]
    g = _guards(arms, count_pulls=True)
    for _ in range(20):
        g.observe(0, 0.0, 1.0)
    g.observe(1, 0.0, 1.0)
    g.observe(2, 0.0, 1.0)
    loss = np.array([0.1, 5.0, 2.0])  # ais-b is the better check arm
    plan = g.plan(_none_blocked(3), None, loss)
    assert (plan.arm, plan.reason) == (2, CROSS_CHECK)
    for _ in range(2):
        g.observe(2, 0.0, 1.0)
    assert g.plan(_none_blocked(3), None, loss).reason == POLICY  # 3 of 24 pulls > 10 %


def test_under_a_time_budget_the_check_arm_must_reach_its_pulls_within_the_share():
    arms = [_Arm("is", family="importance", expected=0.01), _Arm("ais-slow", family="annealing", expected=1.0),
            _Arm("ais-quick", family="annealing", expected=0.01)]
    loss = np.array([0.1, 1.0, 2.0])  # the slow arm has the better delta*V
    for horizon, expected in ((60.0, 2), (None, 1)):  # 12 slow pulls = 12 s > 10 % of 60 s
        g = _guards(arms, horizon=horizon)
        for arm in range(3):
            g.dispatched(arm)
        g.observe(0, 0.01, 10.0)
        plan = g.plan(_none_blocked(3), horizon, loss)
        assert (plan.arm, plan.reason) == (expected, CROSS_CHECK)


def test_the_check_arm_keeps_the_share_when_mean_losses_take_turns():
    arms = [_Arm("is-1", family="importance"), _Arm("ais-a", family="annealing"), _Arm("ais-b", family="annealing")]
    g = _guards(arms, count_pulls=True)
    for arm in range(3):
        g.dispatched(arm)
    for _ in range(40):
        g.observe(0, 0.0, 1.0)
    plan = g.plan(_none_blocked(3), None, np.array([0.1, 5.0, 2.0]))
    assert (plan.arm, plan.reason) == (2, CROSS_CHECK)
    g.dispatched(plan.arm, plan.reason)
    g.observe(2, 0.0, 1.0)
    plan = g.plan(_none_blocked(3), None, np.array([0.1, 1.0, 2.0]))  # ais-a now looks better
    assert (plan.arm, plan.reason) == (2, CROSS_CHECK)
    blocked = np.array([False, False, True])  # once out of play, the share moves on
    assert g.plan(blocked, None, np.array([0.1, 1.0, 2.0])).arm == 1


@pytest.mark.parametrize("switch", [CHECK_SWITCH, 1e300])  # 1e300: the mutation that keeps any arm
def test_the_check_arm_is_left_for_one_far_less_costly(switch, monkeypatch):
    monkeypatch.setattr("pmcbandit.runtime.guards.CHECK_SWITCH", switch)
    arms = [_Arm("is-1", family="importance"), _Arm("ais-a", family="annealing"), _Arm("nested", family="nested")]
    g = _guards(arms, count_pulls=True)
    for _ in range(40):
        g.observe(0, 0.0, 1.0)
    plan = g.plan(_none_blocked(3), None, _no_loss(3))  # nothing seen: the first candidate in pool order
    assert (plan.arm, plan.reason) == (1, CROSS_CHECK)
    g.dispatched(plan.arm, plan.reason)
    g.observe(1, 0.0, 1.0)
    g.observe(2, 0.0, 1.0)
    loss = np.array([0.1, 1.1 * CHECK_SWITCH, 1.0])  # ais-a proves more than CHECK_SWITCH times costlier
    assert g.plan(_none_blocked(3), None, loss).arm == (2 if switch == CHECK_SWITCH else 1)
    loss[1] = 0.9 * CHECK_SWITCH  # within the factor: the arm keeps the share (mean losses taking turns)
    g.check_arm = 1
    assert g.plan(_none_blocked(3), None, loss).arm == 1


def test_the_check_arm_is_one_whose_variance_is_trusted_where_another_family_has_one():
    arms = [_Arm("is-1", family="importance"), _Arm("ais-a", family="annealing"), _Arm("nested", family="nested")]
    g = _guards(arms, count_pulls=True)
    for _ in range(40):
        g.observe(0, 0.0, 1.0)
    loss = np.array([0.1, 1.0, 2.0])  # ais-a looks better, on weights too spread to be trusted
    untrusted = np.array([False, True, False])
    assert g.plan(_none_blocked(3), None, loss, untrusted=untrusted).arm == 2
    assert g.plan(_none_blocked(3), None, loss, untrusted=np.array([False, True, True])).arm == 1  # none trusted
    carried = _guards(arms, count_pulls=True, carry=CheckCarry.from_history(
        _rows([0] * 40), 3, suspect=np.array([False, True, False])))
    assert carried.plan(_none_blocked(3), None, loss).arm == 2  # an earlier piece found it too spread


def _rows(arms, reasons=None, cost=1.0):
    n = len(arms)
    return {"arm": np.asarray(arms), "status": np.zeros(n, dtype=np.int64), "seconds": np.full(n, 0.5),
            "reason": np.asarray(reasons if reasons is not None else [POLICY] * n), "cost": np.full(n, cost)}


def test_a_run_in_pieces_counts_the_earlier_pieces_check():
    arms = [_Arm("is-1", family="importance"), _Arm("ais-a", family="annealing"), _Arm("nested", family="nested")]
    # An earlier piece: 36 pulls of is-1, 4 check pulls of nested (a 10 % share, which it keeps).
    carry = CheckCarry.from_history(_rows([0] * 36 + [2] * 4, [POLICY] * 36 + [CROSS_CHECK] * 4), 3,
                                    suspect=np.zeros(3, dtype=bool))
    assert carry.pulls.tolist() == [36, 0, 4] and carry.check_arm == 2 and carry.seconds_n.tolist() == [36, 0, 4]
    loss = np.array([0.1, 1.0, 2.0])  # ais-a would be the fresh piece's check arm
    g = _guards(arms, count_pulls=True, carry=carry)
    assert g.valid.tolist() == [0, 0, 0] and g.spent.tolist() == [36.0, 0.0, 4.0]  # the piece's own valid pulls
    assert g.plan(_none_blocked(3), None, loss).reason == POLICY  # the share of all 40 pulls is met
    g.observe(0, 0.0, 1.0)
    plan = g.plan(_none_blocked(3), None, loss)
    assert (plan.arm, plan.reason) == (2, CROSS_CHECK)  # the earlier piece's check arm, not a fresh one
    fresh = _guards(arms, count_pulls=True)
    fresh.observe(0, 0.0, 1.0)
    assert fresh.plan(_none_blocked(3), None, loss).arm == 1
    timed = _guards(arms, horizon=10.0, carry=carry)
    assert timed.predicted()[2] == pytest.approx(2 * 0.5)  # durations measured in the earlier piece
    assert timed.spent[2] == timed.carried[2] == 4.0  # costs, for a budget of costs


def test_the_check_arm_prefers_one_whose_pulls_fit_the_share_with_room_to_spare():
    arms = [_Arm("is", family="importance", expected=0.01), _Arm("ais-long", family="annealing", expected=0.17),
            _Arm("ais-short", family="annealing", expected=0.04)]
    loss = np.array([0.1, 1.0, 2.0])  # the long arm has the better delta*V
    # 60 s: 30 long pulls (5.1 s) fit in the share (6 s) but not twice over; 30 short ones (1.2 s) do
    for horizon, expected in ((60.0, 2), (120.0, 1)):
        g = _guards(arms, horizon=horizon, per_decision=1)
        for arm in range(3):
            g.dispatched(arm)
        g.observe(0, 0.01, 10.0)
        plan = g.plan(_none_blocked(3), horizon, loss)
        assert (plan.arm, plan.reason) == (expected, CROSS_CHECK)
    # neither has room to spare: the one that fits once, though the other has the better delta*V
    arms[2].expected_seconds = 0.25
    loss = np.array([0.1, 2.0, 1.0])
    g = _guards(arms, horizon=60.0, per_decision=1)
    for arm in range(3):
        g.dispatched(arm)
    g.observe(0, 0.01, 10.0)
    assert g.plan(_none_blocked(3), 60.0, loss).arm == 1


def test_no_cross_check_with_one_family_or_for_a_pinned_policy():
    one = [_Arm("a", family="x"), _Arm("b", family="x"), _Arm("c")]
    g = _guards(one, count_pulls=True)
    g.observe(0, 0.0, 1.0)
    assert g.plan(_none_blocked(3), None, _no_loss(3)).reason == POLICY
    two = [_Arm("a", family="x"), _Arm("b", family="y")]
    g = _guards(two, horizon=1.0, count_pulls=True, pinned=True)
    g.observe(0, 0.0, 1.0)
    plan = g.plan(_none_blocked(2), 1.0, _no_loss(2))
    assert plan.arm is None and plan.reason == POLICY


def test_blocked_arms_are_never_forced():
    arms = [_Arm("a", family="x", expected=0.1), _Arm("b", family="y", expected=0.01)]
    g = _guards(arms, horizon=100.0)
    plan = g.plan(np.array([False, True]), 100.0, _no_loss(2))
    assert plan.arm == 0 and not plan.eligible[1]


def test_untrusted_arms_leave_the_policy_once_their_spending_reaches_the_share():
    arms = [_Arm("a"), _Arm("b"), _Arm("c")]
    for arm in arms:
        arm.importance_weights = True
    untrusted = np.array([False, True, False])
    g = _guards(arms, horizon=None, per_decision=1, count_pulls=True)
    for arm, n in ((0, 80), (1, 9), (2, 11)):
        for _ in range(n):
            g.observe(arm, 0.01, 1.0)
    assert g.plan(_none_blocked(3), None, _no_loss(3), untrusted).eligible.tolist() == [True, True, True]
    for _ in range(2):
        g.observe(1, 0.01, 1.0)  # 11 of 102 pulls
    plan = g.plan(_none_blocked(3), None, _no_loss(3), untrusted)
    assert plan.reason == POLICY and plan.eligible.tolist() == [True, False, True]
    # Only where a trusted arm is allowed: with a and c out of play, b stays the policy's.
    assert g.plan(np.array([True, False, True]), None, _no_loss(3), untrusted).eligible.tolist() == [False, True, False]
    assert g.plan(_none_blocked(3), None, _no_loss(3)).eligible.all()  # nothing marked: no restriction
    # A policy that does not choose by its rewards (uniform) is left alone.
    uniform = _guards(arms, horizon=None, per_decision=1, count_pulls=True, adaptive=False)
    for arm, n in ((0, 80), (1, 20)):
        for _ in range(n):
            uniform.observe(arm, 0.01, 1.0)
    assert uniform.plan(_none_blocked(3), None, _no_loss(3), untrusted).eligible.all()


def test_the_untrusted_rule_leaves_forced_decisions_alone():
    arms = [_Arm("a", expected=0.01), _Arm("b", expected=0.001)]
    for arm in arms:
        arm.importance_weights = True
    g = _guards(arms, horizon=10.0)
    g.dispatched(0)
    g.observe(0, 0.01, 1.0)
    plan = g.plan(_none_blocked(2), 10.0, _no_loss(2), np.array([False, True]))
    assert plan.arm == 1 and plan.reason == INITIAL  # the untried arm's first decision still goes to it


class _Weights(CallableArm):
    importance_weights = True


_K = 0.8  # Pareto tail of the cheap arm's weights: infinite variance, a sample variance that looks small


def _untrusted_pool():
    xm = 1.0 - _K  # mean weight 1, as the bounded arm's
    bounded = _Weights(lambda rng: np.array([np.log1p(0.99 * (2.0 * rng.random() - 1.0))]), name="bounded",
                       log_scale=True, cost=1.0)
    heavy = _Weights(lambda rng: np.array([np.log(xm) + _K * rng.standard_exponential()]), name="heavy",
                     log_scale=True, cost=0.05)
    return [bounded, heavy]


def test_a_cheap_heavy_tailed_arm_gets_at_most_about_the_untrusted_share():
    """Its estimated cost times variance looks twenty times better than the bounded arm's, so the policy favours it;
    once its k-hat is above the threshold the policy may spend only the share on it."""
    pulls = []
    for seed in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PmcBanditWarning)
            res = pb.run(_untrusted_pool(), policy="thompson", budget=pb.Pulls(1000), reward="paired",
                         random_seed=seed, progressbar=False)
        pulls.append(int(res.arm_table()["pulls"][1]))
    # 100 weights before its first k-hat, then the share; a k-hat refitted below the threshold on the way lets
    # a few more through.
    assert max(pulls) <= 1.5 * UNTRUSTED_SHARE * 1000, pulls


def test_a_resumed_run_sees_the_untrusted_arms_the_interrupted_one_saw(tmp_path):
    """The checkpoint restores the weight tails of its last decision; the masks of rule 5 before it come from the
    checkpoint's log, so the replay re-makes every decision."""
    kw = dict(policy="thompson", budget=pb.Pulls(600), reward="paired", random_seed=3, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        full = pb.run(_untrusted_pool(), **kw)
        path = tmp_path / "run.npz"
        first = pb.run(_untrusted_pool(), checkpoint=path, callback=lambda p, h: p.pulls >= 400, **kw)
        resumed = pb.run(_untrusted_pool(), checkpoint=path, **kw)
    assert 300 < len(first.history) < 600
    np.testing.assert_array_equal(resumed.history.column("arm"), full.history.column("arm"))
    assert resumed.estimate == full.estimate


# --- through run ------------------------------------------------------------------------------
def test_one_slow_decision_does_not_exclude_an_arm_sized_to_the_cap_but_a_slow_arm_leaves():
    """An arm declared at 0.8 of the cap (0.4 s a pull, 2 pulls a decision, cap 1 s) whose first decision runs 1.3x
    over stays in play: its declaration counts as CAP_PRIOR_PULLS pulls. Pulls that keep running over move it out."""
    from pmcbandit.runtime.guards import CAP_PRIOR_PULLS

    arms = [_Arm("sized", expected=0.4), _Arm("quick", expected=0.01)]
    g = _guards(arms, horizon=10.0)
    for _ in range(2):
        g.observe(0, 0.52, 1.0)  # 1.04 s for the decision, over the 1 s cap
    assert g.predicted()[0] == pytest.approx(1.04)  # rules 2-4 read the measured mean alone
    assert g.predicted(CAP_PRIOR_PULLS)[0] == pytest.approx(2 * (CAP_PRIOR_PULLS * 0.4 + 1.04) / (CAP_PRIOR_PULLS + 2))
    assert g.plan(_none_blocked(2), 10.0, _no_loss(2)).eligible.tolist() == [True, True]
    for _ in range(30):
        g.observe(0, 0.52, 1.0)
    assert g.plan(_none_blocked(2), 10.0, _no_loss(2)).eligible.tolist() == [False, True]


def test_time_budget_tries_every_arm_once_cheapest_first_even_under_thompson():
    arms = [_Arm("c", expected=0.004), _Arm("a", expected=0.001), _Arm("b", expected=0.002)]
    res = pb.run(arms, policy="thompson", budget=0.5, random_seed=1, progressbar=False)
    h = res.history
    reasons = h.column("reason")
    first = h.column("arm")[reasons == INITIAL]
    assert first.tolist() == [1, 1, 2, 2, 0, 0]  # one paired decision each, cheapest first
    assert (res.arm_table()["pulls"] >= 2).all()


def test_a_decision_longer_than_a_tenth_of_the_budget_is_never_started():
    slow = _Arm("slow", sd=0.1, expected=0.5, sleep=0.5)  # a decision is 1 s of a 2 s budget
    quick = _Arm("quick", sd=1.0, expected=0.001, sleep=0.001)
    res = pb.run([slow, quick], policy="thompson", budget=2.0, random_seed=2, progressbar=False)
    assert res.arm_table()["pulls"].tolist()[0] == 0
    assert res.settings["stopped_by"] == "budget"


def test_a_pool_of_slow_arms_stops_when_nothing_fits_instead_of_overrunning():
    arms = [_Arm("slow", expected=0.4, sleep=0.4)]  # a decision is 0.8 s; the budget 1 s
    res = pb.run(arms, policy="ucb1", budget=1.0, random_seed=3, progressbar=False)
    assert len(res.history) == 2
    assert res.settings["stopped_by"] == "budget"
    assert res.interval_status == "too_few_observations"


def test_cross_check_share_under_a_pulls_budget_is_kept_and_reproducible():
    good = _Arm("good", sd=0.1, family="importance")
    other = _Arm("other", sd=3.0, family="annealing")
    runs = [pb.run([good, other], policy="thompson", budget=pb.Pulls(400), random_seed=5, progressbar=False)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].history.column("arm"), runs[1].history.column("arm"))
    pulls = runs[0].arm_table()["pulls"]
    assert pulls[1] >= 0.1 * 400 - 1  # the floor, up to one decision of granularity
    assert (runs[0].history.column("reason") == CROSS_CHECK).any()
    off = pb.run([good, other], policy="thompson", budget=pb.Pulls(400), random_seed=5, progressbar=False,
                 cross_check_share=0.0)
    assert off.arm_table()["pulls"][1] < pulls[1]


def test_guard_shares_are_validated():
    arms = [_Arm("a")]
    with pytest.raises(ValueError, match="'cross_check_share'"):
        pb.run(arms, budget=pb.Pulls(4), cross_check_share=1.5, progressbar=False)
    with pytest.raises(ValueError, match="'max_decision_share'"):
        pb.run(arms, budget=pb.Pulls(4), max_decision_share=0.0, progressbar=False)
    with pytest.raises(TypeError, match="'cross_check_share'"):
        pb.run(arms, budget=pb.Pulls(4), cross_check_share="10%", progressbar=False)


def test_a_run_with_two_families_but_no_checked_pair_says_so():
    good = _Arm("good", sd=0.1, family="importance")
    other = _Arm("other", sd=3.0, family="annealing")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pb.run([good, other], policy="thompson", budget=pb.Pulls(60), random_seed=5, progressbar=False,
                     cross_check_share=0.0)
    assert res.arm_table()["pulls"][1] < 10
    assert any("no independent check" in str(w.message) for w in caught if issubclass(w.category, PmcBanditWarning))


# --- determinism without a time horizon ----------------------------------------------------------
def test_without_a_horizon_the_check_arm_does_not_depend_on_measured_durations():
    """Rule 4 under a pull budget: the untried check arm is the first in pool order, whatever the
    arms declared (an AIS arm's ``expected_seconds`` comes from a timed probe, which a loaded machine
    changes) or the lead arm was measured to take."""
    plans = []
    for slow, quick, lead_seconds in ((5.0, 0.01, 0.001), (0.01, 5.0, 3.0)):
        arms = [_Arm("lead", family="importance"), _Arm("chk1", family="annealing", expected=slow),
                _Arm("chk2", family="annealing", expected=quick)]
        g = _guards(arms, horizon=None, per_decision=1, count_pulls=True)
        for _ in range(9):
            g.dispatched(0)
            g.observe(0, lead_seconds, 1.0)
        plans.append(g.plan(_none_blocked(3), None, _no_loss(3)))
    assert plans[0].arm == plans[1].arm == 1 and plans[0].reason == plans[1].reason == CROSS_CHECK


def test_without_a_horizon_measured_costs_are_not_counted():
    """TargetSE without max_seconds: the cross-check share counts pulls when costs are measured CPU seconds."""
    arm = _Arm("a", family="importance")
    arm.cost_unit = "cpu_seconds"
    assert _guards([arm, _Arm("b", family="annealing")], horizon=None, count_pulls=False).count_pulls
    declared = [_Arm("a", family="importance"), _Arm("b", family="annealing")]
    for a in declared:
        a.cost_unit = "declared"
    assert not _guards(declared, horizon=None, count_pulls=False).count_pulls


def test_a_seeded_pull_budget_run_is_the_same_when_pulls_take_longer():
    """Same seed, two families, one run with slow pulls (as on a loaded machine): the same decisions."""
    def pool(sleep):
        return [_Arm("lead", sd=0.2, family="importance", expected=0.001),
                _Arm("chk1", sd=1.0, family="annealing", sleep=sleep, expected=0.5),
                _Arm("chk2", sd=1.0, family="annealing", expected=0.001)]

    runs = [pb.run(pool(s), policy="thompson", budget=pb.Pulls(60), random_seed=2, progressbar=False)
            for s in (0.0, 0.01)]
    for col in ("arm", "reason", "obs"):
        np.testing.assert_array_equal(runs[0].history.column(col), runs[1].history.column(col))
    assert runs[0].estimate == runs[1].estimate


def test_a_resumed_run_keeps_the_check_arm_of_the_interrupted_one(tmp_path):
    """The check arm is read back from the recorded reasons: a run resumed from a checkpoint makes the same
    decisions as the uninterrupted one."""
    arms = [_Arm("is-1", sd=0.2, family="importance"), _Arm("ais-a", sd=1.0, family="annealing"),
            _Arm("ais-b", sd=1.1, family="annealing")]
    kw = dict(policy="ucb_v", budget=pb.Pulls(120), random_seed=4, progressbar=False)
    full = pb.run(arms, **kw)
    path = tmp_path / "run.npz"
    first = pb.run(arms, checkpoint=path, callback=lambda p, h: p.pulls >= 50, **kw)
    assert len(first.history) < 120
    resumed = pb.run(arms, checkpoint=path, **kw)
    assert (full.history.column("reason") == CROSS_CHECK).any()
    np.testing.assert_array_equal(resumed.history.column("arm"), full.history.column("arm"))
    np.testing.assert_array_equal(resumed.history.column("reason"), full.history.column("reason"))


def test_a_target_se_run_stops_only_on_an_interval_it_vouches_for():
    """Two families: the leading arm meets the target SE within a few pulls, but the run stops only once the
    cross-check arm has the observations a consistency test needs, so the interval it stops on is reliable."""
    arms = [_Arm("lead", sd=0.05, family="importance"), _Arm("chk", sd=1.0, family="annealing")]
    r = pb.run(arms, policy="ucb_v", budget=pb.TargetSE(0.02, min_pulls=4), random_seed=3, progressbar=False)
    assert r.stopped_by == "target_se"
    assert r.interval_status == "ok"
    assert r.se <= 0.02
    assert (r.history.column("reason") == CROSS_CHECK).any()


# --- finishing the check (rule 4 under a TargetSE budget) ------------------------------------
def test_finishing_the_check_forces_the_check_arm_past_its_share_until_it_has_its_pulls():
    """From the decision ``finish_check`` names, the check arm gets every decision until it has CHECK_PULLS valid
    pulls, though its share is met; before that decision, and after, the share alone decides."""
    g = _guards([_Arm("lead", family="importance"), _Arm("chk", family="annealing")], per_decision=1,
                count_pulls=True)
    for _ in range(90):
        g.observe(0, 0.0, 1.0)
    for _ in range(10):
        g.dispatched(1, CROSS_CHECK)
        g.observe(1, 0.0, 1.0)
    assert g.plan(_none_blocked(2), None, _no_loss(2), decision=50).reason == POLICY  # the share is met
    g.finish_check(decision=50)
    g.finish_check(decision=70)  # the first call counts
    assert g.finish_from == 50
    assert g.plan(_none_blocked(2), None, _no_loss(2), decision=49).reason == POLICY
    assert g.check_pulls_needed(_none_blocked(2)) == CHECK_PULLS - 10
    assert g.check_pulls_needed(np.array([False, True])) == 0  # a check arm out of play needs nothing
    for _ in range(CHECK_PULLS - 10):
        plan = g.plan(_none_blocked(2), None, _no_loss(2), decision=50)
        assert (plan.arm, plan.reason) == (1, CROSS_CHECK)
        g.dispatched(1, CROSS_CHECK)
        g.observe(1, 0.0, 1.0)
    assert g.check_pulls_needed(_none_blocked(2)) == 0
    assert g.plan(_none_blocked(2), None, _no_loss(2), decision=80).reason == POLICY


def test_finishing_the_check_needs_a_second_family():
    g = _guards([_Arm("a", family="importance"), _Arm("b", family="importance")], count_pulls=True)
    g.finish_check(decision=3)
    assert g.finish_from == -1 and g.check_pulls_needed(_none_blocked(2)) == 0


def _finishing_run(monkeypatch, finish=True, **kw):
    """Two families whose leader meets the target within a few dozen pulls; returns the result and the decision
    from which the guards finished the check (None: never)."""
    started = []
    original = Guards.finish_check

    def finish_check(self, decision, pulls=None, answering=None):
        started.append(decision)
        if finish:
            original(self, decision, pulls, answering)

    monkeypatch.setattr(Guards, "finish_check", finish_check)
    arms = [_Arm("lead", sd=0.05, family="importance"), _Arm("chk", sd=1.0, family="annealing")]
    r = pb.run(arms, policy="thompson", budget=pb.TargetSE(0.005, min_pulls=4), random_seed=3, progressbar=False,
               **kw)
    return r, (started[0] if started else None)


def test_a_target_se_run_finishes_the_check_instead_of_spending_on_the_leader(monkeypatch):
    """Once the leader's SE meets the target, the decisions go to the check arm: the run stops on a reliable interval
    with no further pull of the leader, where the share alone keeps pulling the leader nine times in ten."""
    r, start = _finishing_run(monkeypatch)
    assert r.stopped_by == "target_se" and r.interval_status == "ok" and r.se <= 0.005
    after = r.history.column("decision") >= start
    arm = r.history.column("arm")
    assert after.any() and not (arm[after] == 0).any()
    assert (r.history.column("reason")[after] == CROSS_CHECK).all()
    assert np.sum(arm == 1) >= CHECK_PULLS  # and enough for a relative SE of CHECK_RESOLUTION
    share_only, start_off = _finishing_run(monkeypatch, finish=False)
    assert start_off == start  # the same run up to the target
    assert share_only.stopped_by == "target_se" and share_only.interval_status == "ok"
    leader_after = np.sum((share_only.history.column("decision") >= start) & (share_only.history.column("arm") == 0))
    assert leader_after > 100
    assert len(r.history) + 100 < len(share_only.history)


def test_finishing_the_check_is_reproducible_and_resumes_mid_finish(monkeypatch, tmp_path):
    """Same seed, same history; a run resumed from a checkpoint taken before or during the finish makes the same
    decisions as the uninterrupted one (the checkpoint stores the decision the finish started at)."""
    full, start = _finishing_run(monkeypatch)
    again, _ = _finishing_run(monkeypatch)
    for col in ("arm", "reason", "obs", "decision"):
        np.testing.assert_array_equal(again.history.column(col), full.history.column(col))
    first_finishing = int(np.flatnonzero(full.history.column("decision") >= start)[0])
    n = len(full.history)
    for stop in (first_finishing - 6, first_finishing + 6, n - 4):
        path = tmp_path / f"finish{stop}.npz"
        with warnings.catch_warnings():  # an interrupted run may stop before its check: it says so
            warnings.simplefilter("ignore", PmcBanditWarning)
            part, _ = _finishing_run(monkeypatch, checkpoint=path, callback=lambda p, h, s=stop: p.pulls >= s)
        assert len(part.history) < n
        with np.load(path) as saved:
            assert int(saved["finish_from"]) == (start if stop > first_finishing else -1)
        resumed, _ = _finishing_run(monkeypatch, checkpoint=path)
        for col in ("arm", "reason", "obs", "decision"):
            np.testing.assert_array_equal(resumed.history.column(col), full.history.column(col))
        assert resumed.stopped_by == "target_se"


def test_finishing_the_check_goes_to_a_family_other_than_the_one_the_answer_rests_on():
    """The cheap arm with most of the pulls carries the answer while two pulls of a costly arm of another family hold
    most of the spending: rule 4's share points at the cheap arm (already above it), the finish at the costly one."""
    arms = [_Arm("is", family="importance"), _Arm("ais", family="annealing")]
    for a in arms:
        a.cost_unit = "declared"  # spending counted in costs
    g = _guards(arms, per_decision=1, count_pulls=False)
    for _ in range(40):
        g.dispatched(0)
        g.observe(0, 0.0, 0.01)
    for _ in range(2):
        g.dispatched(1)
        g.observe(1, 0.0, 1.0)
    assert g.plan(_none_blocked(2), None, _no_loss(2), decision=42).reason == POLICY
    g.finish_check(decision=42)
    assert g.check_pulls_needed(_none_blocked(2)) == CHECK_PULLS - 2
    plan = g.plan(_none_blocked(2), None, _no_loss(2), decision=42)
    assert (plan.arm, plan.reason) == (1, CROSS_CHECK)


def test_the_finish_checks_against_the_family_of_the_arm_the_answer_rests_on_when_pull_counts_tie():
    """At the first evaluation every arm may have only its first pulls: the arm with the most valid pulls is then the
    first in pool order, here of the family that does not carry the answer. The arm named as the answer's (the largest
    combination weight) decides the family, so the finish goes to the other family's arm, not back to the answer's."""
    arms = [_Arm("ais", family="annealing"), _Arm("is", family="importance")]
    for named, check in ((1, 0), (None, 1)):  # without a name the tie falls on the first arm: the mutation
        g = _guards(arms, per_decision=1, count_pulls=True)
        for k in (0, 1):
            for _ in range(2):
                g.dispatched(k, INITIAL)
                g.observe(k, 0.0, 1.0)
        g.finish_check(decision=4, answering=named)
        plan = g.plan(_none_blocked(2), None, _no_loss(2), decision=4)
        assert (plan.arm, plan.reason) == (check, CROSS_CHECK)


@pytest.mark.parametrize("check_sd, status", [(0.2, "ok"), (5.0, "no_cross_check")])
def test_a_check_arm_too_coarse_to_see_an_error_confirms_nothing(check_sd, status):
    """The check arm has its observations either way; only one precise enough (relative SE at most
    CHECK_RESOLUTION) makes the interval "ok": a check with SE 0.65 would agree with almost any answer."""
    from pmcbandit.result_messages import CHECK_RESOLUTION

    arms = [_Arm("lead", sd=0.05, family="importance"), _Arm("chk", sd=check_sd, family="annealing")]
    r = pb.run(arms, policy="ucb_v", budget=pb.Pulls(600), random_seed=5, progressbar=False)
    chk = r.history.column("arm") == 1
    assert chk.sum() >= 30
    rel_se = np.std(r.history.column("obs")[chk]) / np.sqrt(2 * chk.sum())  # two observations per pull
    assert (rel_se <= CHECK_RESOLUTION) == (status == "ok")
    assert r.interval_status == status


# --- widening the check's share (rule 4 under a time budget) --------------------------------
def _forced_until_done(g, arm, times, pending, seconds):
    """``times`` decisions that must go to ``arm`` as cross-check decisions while ``pending()``, each taking
    ``seconds``; then nothing is pending."""
    for _ in range(times):
        plan = g.plan(_none_blocked(g.n_arms), 9.0, _no_loss(g.n_arms), decision=5)
        assert (plan.arm, plan.reason) == (arm, CROSS_CHECK)
        assert pending()
        g.dispatched(arm, CROSS_CHECK)
        g.observe(arm, seconds, seconds)
    assert not pending()


def _each_tried_once(arms, horizon=10.0):
    """Guards of a time budget ``horizon`` after one decision per arm, each taking its declared duration."""
    g = _guards(arms, horizon=horizon, per_decision=1)
    for k, arm in enumerate(arms):
        g.dispatched(k, INITIAL)
        g.observe(k, arm.expected_seconds, arm.expected_seconds)
    return g


def test_the_widened_share_goes_to_the_arm_that_completes_its_pulls_cheapest_within_the_room():
    """Of two check arms, the one whose missing pulls cost least goes first, kept until it has them; an arm whose
    pulls do not fit in MAX_CHECK_SHARE of the horizon is never chosen; ``None`` ends the widening."""
    from pmcbandit.runtime.guards import MAX_CHECK_SHARE

    arms = [_Arm("lead", family="importance", expected=0.01), _Arm("noisy", family="annealing", expected=0.02),
            _Arm("costly", family="annealing", expected=0.1)]
    g = _each_tried_once(arms)
    room = MAX_CHECK_SHARE * 10.0
    g.widen_check(np.array([0, 250, 30]), answering=0)  # noisy: 249 x 0.02 = 4.98 s; costly: 29 x 0.1 = 2.9 s
    assert 249 * 0.02 > room > 29 * 0.1
    _forced_until_done(g, 2, 29, g.widen_pending, 0.1)
    assert g.plan(_none_blocked(3), 9.0, _no_loss(3), decision=40).reason == POLICY  # no share rule while held
    g.widen_check(np.array([0, 250, 60]), answering=0)  # 30 more of costly: 3 s on top of its 3 s spent
    assert 3.0 + 30 * 0.1 > room
    assert g.plan(_none_blocked(3), 9.0, _no_loss(3), decision=40).arm != 1  # noisy never fits
    g.widen_check(None, answering=0)
    assert g.widen_pulls is None and not g.widen_pending()


def test_an_arm_settling_a_bet_gets_its_pulls_of_any_family_before_the_widened_share():
    """``settle`` sends decisions to the arm whose bets are undecided, even of the answer's family, until it has its
    pulls, where they fit in the widened share's room; a later call without it ends that; the arms shown too low
    (``missed``) stop being check candidates where another family's arm is one."""
    arms = [_Arm("lead", family="importance", expected=0.01), _Arm("witness", family="importance", expected=0.02),
            _Arm("low", family="annealing", expected=0.02), _Arm("other", family="nested", expected=0.05)]
    g = _each_tried_once(arms)
    g.widen_check(np.array([0, 0, 0, 30]), answering=0, missed=np.array([False, False, True, False]),
                  settle=np.array([0, 11, 0, 0]))
    _forced_until_done(g, 1, 10, g.settle_pending, 0.02)
    assert g.plan(_none_blocked(4), 9.0, _no_loss(4), decision=20).arm == 3  # then the widened share
    assert g.suspect.tolist() == [False, False, True, False]
    g.widen_check(None, answering=0, settle=np.array([0, 10_000, 0, 0]))  # 10,000 x 0.02 s: no room for it
    assert g.plan(_none_blocked(4), 9.0, _no_loss(4), decision=21).arm != 1
    g.widen_check(None, answering=0)
    assert g.settle_pulls is None and not g.settle_pending()


class _Clock:
    """A clock that moves only when read (by a tick) or slept on: a run's durations, and with them every decision
    its time rules make, are then the same on any machine under any load."""

    def __init__(self):
        self.t = 0.0

    def perf_counter(self):
        self.t += 1e-5
        return self.t

    def sleep(self, seconds):
        self.t += seconds


def _widening_run(monkeypatch, seed=5):
    clock = _Clock()
    monkeypatch.setattr(time, "perf_counter", clock.perf_counter)
    monkeypatch.setattr(time, "sleep", clock.sleep)
    arms = [_Arm("lead", sd=0.02, family="importance", sleep=1e-3, cost=1e-3),
            _Arm("chk", sd=1.0, family="annealing", sleep=0.02, cost=0.02)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        r = pb.run(arms, policy="thompson", budget=pb.WallSeconds(4.0), random_seed=seed, progressbar=False)
    monkeypatch.undo()
    return r


def test_a_wall_budget_widens_the_check_share_until_the_check_reaches_its_resolution(monkeypatch):
    """The check arm needs about 50 pulls (1 s) for a relative SE of CHECK_RESOLUTION, more than the 0.4 s of its
    share: the watch widens the share and the interval is "ok". Held to the share (the mutation), the run ends
    "no_cross_check"."""
    import pmcbandit.runtime.guards as guards

    r = _widening_run(monkeypatch)
    chk = r.history.column("arm") == 1
    assert r.interval_status == "ok"
    assert chk.sum() >= CHECK_PULLS and (r.history.column("reason")[chk] == CROSS_CHECK).sum() > 30
    again = _widening_run(monkeypatch)
    np.testing.assert_array_equal(again.history.column("arm"), r.history.column("arm"))
    monkeypatch.setattr(guards, "MAX_CHECK_SHARE", guards.CROSS_CHECK_SHARE)
    held = _widening_run(monkeypatch)
    assert held.interval_status == "no_cross_check"
