"""The run loop: arguments, reproducibility, budgets, faults, checkpoints."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.exceptions import PmcBanditWarning
from tests.helpers import ScriptedArm, normal_arm


def _arms():
    return [normal_arm(1.0, 1.0, name="a"), normal_arm(1.0, 0.3, name="b"), normal_arm(1.0, 2.0, name="c")]


# --- bad arguments --------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        (dict(arms=[]), ValueError, "'arms'"),
        (dict(arms=[lambda rng: 1.0]), TypeError, "'arms'"),
        (dict(budget=0.0), ValueError, "'budget'"),
        (dict(budget=-3), ValueError, "'budget'"),
        (dict(budget="10s"), TypeError, "'budget'"),
        (dict(policy="ucb2"), ValueError, "'policy'"),
        (dict(combine="median"), ValueError, "'combine'"),
        (dict(random_seed=1.5), TypeError, "'random_seed'"),
        (dict(random_seed=np.random.RandomState(1)), TypeError, "'random_seed'"),
        (dict(random_seed=-1), ValueError, "'random_seed'"),
        (dict(reward="cubic"), ValueError, "'reward'"),
        (dict(bounds=(1.0, 0.0)), ValueError, "'bounds'"),
        (dict(ranges="each"), ValueError, "'ranges'"),
        (dict(ranges="per_arm", bounds=(0.0, 5.0)), ValueError, "'ranges'"),
        (dict(max_in_flight=0), ValueError, "'max_in_flight'"),
        (dict(pull_timeout=-1.0), ValueError, "'pull_timeout'"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, exc, words):
    args = dict(arms=_arms(), budget=pb.Pulls(10), progressbar=False)
    args.update(kwargs)
    with pytest.raises(exc, match=words):
        pb.run(**args)


def test_budget_objects_validate():
    with pytest.raises(ValueError, match="'n'"):
        pb.Pulls(0)
    with pytest.raises(TypeError, match="'n'"):
        pb.Pulls(2.5)
    with pytest.raises(ValueError, match="'se'"):
        pb.TargetSE(-1.0)


def test_mixed_scales_and_duplicate_names_rejected():
    lin = normal_arm(1, 1, name="x")
    log = pb.CallableArm(lambda rng: rng.normal(size=2), name="y", log_scale=True)
    with pytest.raises(ValueError, match="mix"):
        pb.run([lin, log], budget=pb.Pulls(4), progressbar=False)
    with pytest.raises(ValueError, match="unique"):
        pb.run([lin, normal_arm(1, 2, name="x")], budget=pb.Pulls(4), progressbar=False)


# --- reproducibility -----------------------------------------------------------------
@pytest.mark.parametrize("policy", ["uniform", "ucb1", "thompson"])
def test_same_seed_same_result(policy):
    a = pb.run(_arms(), policy=policy, budget=pb.Pulls(300), random_seed=7, progressbar=False)
    b = pb.run(_arms(), policy=policy, budget=pb.Pulls(300), random_seed=7, progressbar=False)
    c = pb.run(_arms(), policy=policy, budget=pb.Pulls(300), random_seed=8, progressbar=False)
    assert np.array_equal(a.history.column("arm"), b.history.column("arm"))
    assert np.array_equal(a.history.column("obs"), b.history.column("obs"))
    assert a.estimate == b.estimate and a.se == b.se
    assert not np.array_equal(a.history.column("obs"), c.history.column("obs"))


def test_generator_seed_is_consumed_not_copied():
    g = np.random.default_rng(3)
    a = pb.run(_arms(), policy="ucb1", budget=pb.Pulls(50), random_seed=g, progressbar=False)
    b = pb.run(_arms(), policy="ucb1", budget=pb.Pulls(50), random_seed=g, progressbar=False)
    assert not np.array_equal(a.history.column("obs"), b.history.column("obs"))


# --- budgets ---------------------------------------------------------------------------
def test_pulls_budget_is_exact_and_paired_rewards_pair_pulls():
    r = pb.run(_arms(), policy="ucb1", budget=pb.Pulls(101), reward="paired", random_seed=1, progressbar=False)
    assert len(r.history) == 100  # the 101st pull cannot complete a pair
    dec = r.history.column("decision")
    assert np.all(np.bincount(dec) == 2)
    rewards = r.history.column("reward")
    assert np.isfinite(rewards).sum() == 50


def test_wall_budget_stops_near_the_limit():
    r = pb.run(_arms(), policy="ucb1", budget=0.3, random_seed=1, progressbar=False)
    wall, decision = r.history.column("wall"), r.history.column("decision")
    # The budget is checked between decisions (pairs of pulls here): the pulls of every decision but the last came
    # back before the 0.3 s mark, and the check after the last one found it passed.
    assert r.stopped_by == "budget" and r.settings["reward"] == "paired"
    earlier = decision != decision[-1]
    assert earlier.any() and np.all(wall[earlier] < 0.3)


def test_target_se_budget_reaches_its_target():
    r = pb.run(_arms(), policy="ucb1", budget=pb.TargetSE(0.01, max_seconds=20), random_seed=4, progressbar=False)
    assert r.se <= 0.0105
    assert r.history.column("wall")[-1] < 20


def test_target_se_evaluates_rarely_far_from_its_target_and_stops_near_it(monkeypatch):
    """Far above the target the SE is next evaluated halfway to where n^(-1/2) meets it (at most n/4 on), so a run of
    thousands of pulls makes a few dozen evaluations, not one per 2 % of growth, and stops with an SE not far below the
    target (an SE of i.i.d. pulls stopped a quarter late is 0.89 of it).
    """
    run_module = sys.modules["pmcbandit.run"]  # the module (``pmcbandit.run`` is also the function)
    evaluations = []
    interim = run_module._interim_result

    def counted(engine, combine):
        evaluations.append(len(engine.history))
        return interim(engine, combine)

    monkeypatch.setattr(run_module, "_interim_result", counted)
    r = pb.run(_arms(), policy="ucb1", budget=pb.TargetSE(0.005), random_seed=3, progressbar=False)
    assert len(r.history) > 5000 and r.stopped_by == "target_se"
    assert len(evaluations) <= 60  # the 2 % schedule alone makes over 250 by then
    assert 0.85 * 0.005 <= r.se <= 0.005


def test_callback_sees_progress_and_can_stop():
    seen = []

    def cb(progress, history):
        seen.append(progress.pulls)
        return progress.pulls >= 25

    r = pb.run(_arms(), policy="uniform", budget=pb.Pulls(1000), callback=cb, random_seed=1, progressbar=False)
    assert len(r.history) == 25 and seen[-1] == 25


def test_progressbar_runs(capsys):
    r = pb.run(_arms(), policy="uniform", budget=pb.Pulls(30), random_seed=1, progressbar=True)
    assert len(r.history) == 30


# --- faults ----------------------------------------------------------------------------
def _quiet_run(arms, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = pb.run(arms, progressbar=False, **kw)
    return res, [x for x in w if issubclass(x.category, PmcBanditWarning)]


def test_nan_arm_is_quarantined_and_excluded():
    bad = ScriptedArm("bad", mean=50.0, nan_on={1})
    res, warns = _quiet_run([normal_arm(1.0, 1.0, size=2, name="good"), bad], policy="uniform",
                            budget=pb.Pulls(40), random_seed=2)
    assert res.quarantined.tolist() == [False, True]
    assert warns and "bad" in str(warns[0].message)
    assert [f["status"] for f in res.faults] == ["nonfinite"]
    # the bad arm's single valid pull (before its NaN) stays: mean 50 would show in the estimate
    status = res.history.column("status")
    assert np.isfinite(res.estimate) and (status != 0).sum() == 1
    assert (res.history.column("arm") == 1).sum() == 2  # pulled twice, never again


def test_raising_arm_is_recorded_not_fatal():
    bad = ScriptedArm("boom", raise_on={0, 1, 2})
    res, _ = _quiet_run([normal_arm(1.0, 1.0, name="good"), bad], policy="ucb1", budget=pb.Pulls(30),
                        random_seed=2, max_faults=2)
    assert res.quarantined[1]
    assert [f["status"] for f in res.faults] == ["error", "error"]
    assert "scripted failure" in res.faults[0]["message"]
    assert abs(res.estimate - 1.0) < 5 * res.se


def test_hanging_arm_times_out():
    slow = ScriptedArm("slow", sleep_on={0}, sleep=30.0)
    res, _ = _quiet_run([normal_arm(1.0, 1.0, name="good"), slow], policy="uniform", budget=pb.Pulls(20),
                        random_seed=2, pull_timeout=0.5)
    assert res.quarantined.tolist() == [False, True]
    assert res.faults[0]["status"] == "timeout"
    assert res.history.column("wall")[-1] < 10


def test_all_arms_failing_ends_the_run_with_no_estimate():
    res, warns = _quiet_run([ScriptedArm("x", raise_on=set(range(10)))], budget=pb.Pulls(10), random_seed=0)
    assert np.isnan(res.estimate) and warns


def test_out_of_bounds_observation_is_a_fault():
    res, _ = _quiet_run([normal_arm(0.5, 0.01, name="in"), normal_arm(3.0, 0.01, name="out")], policy="uniform",
                        budget=pb.Pulls(10), bounds=(0.0, 1.0), random_seed=0)
    assert res.quarantined.tolist() == [False, True]
    assert res.faults[0]["status"] == "out_of_bounds"


# --- checkpoints -----------------------------------------------------------------------
def test_checkpoint_resume_equals_uninterrupted(tmp_path):
    path = tmp_path / "run.npz"
    full = pb.run(_arms(), policy="thompson", budget=pb.Pulls(200), random_seed=11, progressbar=False)
    part = pb.run(_arms(), policy="thompson", budget=pb.Pulls(80), random_seed=11, progressbar=False,
                  checkpoint=path)
    assert len(part.history) == 80 and path.exists()
    resumed = pb.run(_arms(), policy="thompson", budget=pb.Pulls(200), random_seed=11, progressbar=False,
                     checkpoint=path)
    assert np.array_equal(resumed.history.column("arm"), full.history.column("arm"))
    assert np.array_equal(resumed.history.column("obs"), full.history.column("obs"))
    assert resumed.estimate == full.estimate


def test_checkpoint_refuses_other_settings(tmp_path):
    path = tmp_path / "run.npz"
    pb.run(_arms(), policy="ucb1", budget=pb.Pulls(20), random_seed=1, progressbar=False, checkpoint=path)
    with pytest.raises(ValueError, match="policy"):
        pb.run(_arms(), policy="uniform", budget=pb.Pulls(40), random_seed=1, progressbar=False, checkpoint=path)
    with pytest.raises(ValueError, match="streams"):
        pb.run(_arms(), policy="ucb1", budget=pb.Pulls(40), random_seed=2, progressbar=False, checkpoint=path)


def test_checkpoint_refuses_other_ranges(tmp_path):
    path = tmp_path / "run.npz"
    pb.run(_arms(), policy="thompson", budget=pb.Pulls(20), random_seed=1, progressbar=False, checkpoint=path)
    with pytest.raises(ValueError, match="ranges"):
        pb.run(_arms(), policy="thompson", budget=pb.Pulls(40), random_seed=1, progressbar=False, checkpoint=path,
               ranges="shared")


def test_ranges_resolve_per_policy_and_are_recorded():
    """'auto': per arm for Thompson / KL-UCB, shared for UCB1 / UCB-V and with bounds (App. B)."""
    for policy, expected in [("thompson", "per_arm"), ("kl_ucb", "per_arm"), ("ucb1", "shared"), ("ucb_v", "shared")]:
        res = pb.run(_arms(), policy=policy, budget=pb.Pulls(12), random_seed=0, progressbar=False)
        assert res.settings["ranges"] == expected and res.policy_state.per_arm == (expected == "per_arm")
    res = pb.run(_arms(), policy="ucb1", budget=pb.Pulls(12), random_seed=0, progressbar=False, ranges="per_arm")
    assert res.policy_state.per_arm


def test_custom_policy_without_per_arm_runs_shared_or_refuses():
    base = pb.policies.get_policy("uniform")

    def init(n_arms, scale=None):  # an init written before per-arm ranges existed
        return base.init(n_arms, scale)

    legacy = base._replace(init=init, ranges="per_arm", per_arm_ranges=False)
    res = pb.run(_arms(), policy=legacy, budget=pb.Pulls(6), random_seed=0, progressbar=False)
    assert res.settings["ranges"] == "shared"
    with pytest.raises(ValueError, match="The 'ranges' parameter of run must be 'shared' or 'auto' for policy"):
        pb.run(_arms(), policy=legacy, budget=pb.Pulls(6), random_seed=0, progressbar=False, ranges="per_arm")


def test_checkpoint_loads_without_pickle(tmp_path):
    path = tmp_path / "run.npz"
    pb.run(_arms(), policy="ucb1", budget=pb.Pulls(20), random_seed=1, progressbar=False, checkpoint=path)
    with np.load(path, allow_pickle=False) as data:
        assert "col_arm" in data and data["col_arm"].shape == (20,)


KILL_SCRIPT = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import pmcbandit as pb

    def slow(mean, sd, name):
        def fn(rng):
            time.sleep(0.01)
            return rng.normal(mean, sd, size=2)
        return pb.CallableArm(fn, name=name, cost=1.0)

    arms = [slow(1.0, 1.0, "a"), slow(1.0, 0.3, "b"), slow(1.0, 2.0, "c")]
    res = pb.run(arms, policy="ucb1", budget=pb.Pulls(int(sys.argv[2])), random_seed=5,
                 progressbar=False, checkpoint=sys.argv[1], checkpoint_every=0.05)
    np.save(sys.argv[3], res.history.column("obs"))
    """
)


@pytest.mark.slow
def test_kill_and_resume(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(KILL_SCRIPT)
    ckpt = tmp_path / "job.npz"
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen([sys.executable, str(script), str(ckpt), "300", str(tmp_path / "killed.npy")], env=env)
    try:
        deadline = 60
        import time

        t0 = time.time()
        while time.time() - t0 < deadline:
            if ckpt.exists():
                with np.load(ckpt, allow_pickle=False) as d:
                    if d["col_arm"].size >= 60:
                        break
            time.sleep(0.05)
        proc.kill()
    finally:
        proc.wait()
    with np.load(ckpt, allow_pickle=False) as d:
        done = d["col_arm"].size
    assert 0 < done < 300, "the job should have been killed mid-run"
    subprocess.run([sys.executable, str(script), str(ckpt), "300", str(tmp_path / "resumed.npy")], env=env, check=True)
    fresh = tmp_path / "fresh.npz"
    subprocess.run([sys.executable, str(script), str(fresh), "300", str(tmp_path / "fresh.npy")], env=env, check=True)
    assert np.array_equal(np.load(tmp_path / "resumed.npy"), np.load(tmp_path / "fresh.npy"))


def test_policy_chooses_while_pulls_are_in_flight():
    import time

    def slow(mean, sd, name):
        def fn(rng):
            time.sleep(0.02)
            return rng.normal(mean, sd, size=2)

        return pb.CallableArm(fn, name=name, cost=1.0)

    arms = [slow(1.0, 1.0, "a"), slow(1.0, 0.3, "b"), slow(1.0, 2.0, "c")]
    serial = pb.run(arms, policy="ucb1", budget=pb.Pulls(60), random_seed=3, progressbar=False)
    res = pb.run(arms, policy="ucb1", budget=pb.Pulls(60), max_in_flight=4, random_seed=3, progressbar=False)
    assert len(res.history) == 60
    # decisions were dispatched ahead of completions: some pulls came back with >1 newer decisions out
    ahead = res.history.column("selected_before") - res.history.column("decision")
    assert ahead.max() >= 2
    assert res.history.column("wall")[-1] < 0.8 * serial.history.column("wall")[-1]  # sleeping pulls overlap
    assert abs(res.estimate - 1.0) < 5 * res.se
    assert res.policy_state.pending.sum() == 0 and res.policy_state.n.sum() == 60
