"""The run loop's book-keeping (pmcbandit.runtime.engine, streams, run): decisions, faults, quarantine,
log-scale working values, TargetSE, resume. Each test pins a bug found in review or a guarantee."""

import math
import threading
import time
import warnings

from typing import NamedTuple

import numpy as np
import pytest
from scipy.special import logsumexp

from tests.tolerance import assert_within_se

import pmcbandit as pb
from pmcbandit.policies.learner import MAX_LOG_GAP as _MAX_LOG_GAP
from pmcbandit.runtime.engine import _reduce
from pmcbandit.policies.base import Policy, init_state, record_loss
from pmcbandit.runtime.streams import PullSeed, Streams
from tests.helpers import normal_arm


def _run(arms, **kw):
    kw.setdefault("progressbar", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.PmcBanditWarning)
        return pb.run(arms, **kw)


def _same_history(a, b):
    for col in ("decision", "arm", "pull_index", "status", "obs", "reward", "selected_before"):
        np.testing.assert_array_equal(a.history.column(col), b.history.column(col), err_msg=col)
    assert a.history.faults == b.history.faults


# --- per-pull streams ------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 7, 2**130 + 3, [1, 2, 3, 4, 5, 6]])
def test_pull_streams_equal_numpys_seedsequence(seed):
    """The fast per-pull seed is bit-identical to SeedSequence(entropy, spawn_key=arm_key + (k, j))."""
    streams = Streams.from_generator(np.random.default_rng(np.random.SeedSequence(seed)))
    assert streams._fast
    entropy, key = streams.arm_seq.entropy, streams.arm_seq.spawn_key
    for k, j in [(0, 0), (1, 5), (3, 63), (3, 64), (15, 123456), (2, 2**32 - 1), (2, 2**33 + 1)]:
        ref_seq = np.random.SeedSequence(entropy, spawn_key=(*key, k, j))
        got = streams.pull_rng(k, j)
        assert isinstance(got.bit_generator.seed_seq, PullSeed)
        np.testing.assert_array_equal(got.random(4), np.random.Generator(np.random.PCG64(ref_seq)).random(4))
        # children (PyTensorArm reseeds through rng.spawn) and other word counts are the same too
        ours = [c.random(2) for c in streams.pull_rng(k, j).spawn(3)]
        ref = [c.random(2) for c in np.random.Generator(np.random.PCG64(ref_seq)).spawn(3)]
        np.testing.assert_array_equal(ours, ref)
        seed_obj = streams.pull_seed(k, j)
        for n, dtype in [(1, np.uint32), (9, np.uint32), (2, np.uint64), (6, np.uint64)]:
            np.testing.assert_array_equal(seed_obj.generate_state(n, dtype), ref_seq.generate_state(n, dtype))


def test_pull_seed_words_are_shared_read_only():
    """The cached seed words are handed out uncopied, so they cannot be written: a later pull of the same stream
    still gets NumPy's words.
    """
    streams = Streams.from_generator(np.random.default_rng(11))
    words = streams.pull_seed(1, 3).generate_state(4, np.uint64)
    with pytest.raises(ValueError, match="read-only"):
        words[0] = 0
    ref = np.random.SeedSequence(streams.arm_seq.entropy, spawn_key=(*streams.arm_seq.spawn_key, 1, 3))
    np.testing.assert_array_equal(streams.pull_seed(1, 3).generate_state(4, np.uint64),
                                  ref.generate_state(4, np.uint64))
    np.testing.assert_array_equal(streams.pull_rng(1, 3).random(3), np.random.default_rng(ref).random(3))


def test_pull_streams_follow_the_root_bit_generator():
    root = np.random.Generator(np.random.Philox(np.random.SeedSequence(5)))
    streams = Streams.from_generator(root)
    ref = np.random.SeedSequence(streams.arm_seq.entropy, spawn_key=(*streams.arm_seq.spawn_key, 2, 9))
    np.testing.assert_array_equal(
        streams.pull_rng(2, 9).random(3), np.random.Generator(np.random.Philox(ref)).random(3)
    )


def test_pull_generators_pickle_with_their_seed():
    """Executors that ship pulls to other processes (Dask) pickle the pull's Generator."""
    import pickle

    g = Streams.from_generator(np.random.default_rng(3)).pull_rng(2, 7)
    again = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(again.random(3), g.random(3))
    np.testing.assert_array_equal(again.spawn(1)[0].random(2), g.spawn(1)[0].random(2))


def test_reduce_matches_reference_formulas(rng):
    x = rng.normal(size=7)
    obs, within = _reduce(x, False)
    assert obs == pytest.approx(x.mean(), rel=1e-15) and within == pytest.approx(np.var(x, ddof=1) / 7, rel=1e-12)
    logw = np.array([-3.0, -np.inf, 2.0, 0.5])
    obs, within = _reduce(logw, True)
    assert obs == pytest.approx(logsumexp(logw) - np.log(4), rel=1e-14)
    rel = np.exp(logw - obs)
    assert within == pytest.approx(np.var(rel, ddof=1) / 4, rel=1e-12)
    assert _reduce(np.array([2.5]), True) == (2.5, pytest.approx(np.nan, nan_ok=True))


# --- log-scale working values ----------------------------------------------------------
def _jumping_log_arm(name, jump_at, jump, size=4):
    """Log-scale arm whose log-weights jump by ``jump`` from its ``jump_at``-th pull on
    (decided by the pull's own stream, so resumed runs see the same values)."""

    def fn(rng):
        base = jump if rng.random() < jump_at else 0.0
        return base + rng.normal(0.0, 0.5, size=size)

    return pb.CallableArm(fn, name=name, log_scale=True, cost=1.0)


@pytest.mark.parametrize("policy", ["ucb_v", "thompson", "kl_ucb"])
@pytest.mark.parametrize("reward", ["paired", "squared"])
def test_log_values_jumping_by_1000_reshift_without_breaking_decisions(policy, reward):
    """Bug: a re-shift in the middle of a paired decision appended the new value to a discarded
    list, so the decision had one value and the run crashed (ValueError: not enough values)."""
    arms = [_jumping_log_arm("a", 0.2, 1000.0), _jumping_log_arm("b", 0.05, 1000.0)]
    res = _run(arms, policy=policy, budget=pb.Pulls(60), reward=reward, combine="uniform", random_seed=3)
    obs = res.history.column("obs")
    assert len(res.history) == 60 and obs.max() > 900 and obs.min() < 100
    state = res.policy_state
    for field in (state.loss_sum, state.loss_sq_sum, state.scale):
        assert np.all(np.isfinite(field))
    # the uniform combination of log observations is log-mean-exp, computed independently (the two
    # arms have different means, so the reported estimate is the random-effects one; the
    # combination is checked here)
    assert res.shift + np.log(res.combined.estimate) == pytest.approx(logsumexp(obs) - np.log(obs.size), abs=1e-9)


def test_log_gap_below_the_reshift_threshold_keeps_squared_losses_finite():
    """Bug: with a re-shift threshold of 300, working values up to e^300 gave squared losses
    (e^1200) that overflowed loss_sq_sum to inf, and UCB-V's variance index became inf."""
    jump = _MAX_LOG_GAP * 0.9  # below the threshold: no re-shift, the largest working values
    arms = [_jumping_log_arm("a", 0.3, jump), _jumping_log_arm("b", 0.3, jump)]
    res = _run(arms, policy="ucb_v", budget=pb.Pulls(80), reward="paired", random_seed=0)
    assert np.all(np.isfinite(res.policy_state.loss_sq_sum)) and np.all(np.isfinite(res.policy_state.scale))
    old_threshold_jump = 250.0
    arms = [_jumping_log_arm("a", 0.3, old_threshold_jump), _jumping_log_arm("b", 0.3, old_threshold_jump)]
    res = _run(arms, policy="ucb_v", budget=pb.Pulls(80), reward="paired", random_seed=0)
    assert np.all(np.isfinite(res.policy_state.loss_sq_sum))


def test_log_scale_allocation_is_invariant_to_a_constant_shift():
    """Working values exp(obs - shift) make decisions independent of the evidence's magnitude."""

    def arms(c):
        return [
            pb.CallableArm(
                lambda rng, s=s: c + rng.normal(-s * s / 2, s, size=3), name=f"s{s}", log_scale=True, cost=1.0
            )
            for s in (0.3, 1.0, 2.0)
        ]

    a = _run(arms(0.0), policy="ucb1", budget=pb.Pulls(150), random_seed=2)
    b = _run(arms(-700.0), policy="ucb1", budget=pb.Pulls(150), random_seed=2)
    np.testing.assert_array_equal(a.history.column("arm"), b.history.column("arm"))
    assert b.log_estimate == pytest.approx(a.log_estimate - 700.0, abs=1e-9)


def test_tiny_evidence_underflows_only_on_the_linear_scale():
    """log Z = -800: exp(log Z) underflows to 0, but log_estimate / log_ci are right (4 SE)."""
    arms = [
        pb.CallableArm(
            lambda rng, s=s: rng.normal(-800.0 - s * s / 2, s, size=20), name=f"s{s}", log_scale=True, cost=1.0
        )
        for s in (0.5, 1.0)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = _run(arms, policy="thompson", budget=pb.Pulls(300), random_seed=4)
        lo, hi = res.log_ci()
    assert res.estimate == 0.0 and res.se == 0.0
    assert_within_se(res.log_estimate, -800.0, res.log_se)
    assert lo < res.log_estimate < hi and hi - lo > 0


def test_minus_inf_log_weights_are_zero_weights_and_all_minus_inf_is_a_fault():
    """Some -inf log-weights are valid zeros; a pull whose every weight is 0 is a fault (rule)."""

    def sparse(rng):
        w = rng.normal(0.0, 1.0, size=4)
        w[rng.random(4) < 0.5] = -np.inf
        if not np.isfinite(w).any():
            w[0] = 0.0
        return w

    def dead(rng):
        return np.full(3, -np.inf) if rng.random() < 0.3 else rng.normal(0.0, 1.0, size=3)

    arms = [
        pb.CallableArm(sparse, name="sparse", log_scale=True, cost=1.0),
        pb.CallableArm(dead, name="dead", log_scale=True, cost=1.0),
    ]
    res = _run(arms, policy="uniform", budget=pb.Pulls(60), combine="uniform", random_seed=1)
    assert res.quarantined.tolist() == [False, True]
    assert [f["status"] for f in res.faults] == ["nonfinite"] and "-inf" in res.faults[0]["message"]
    ok = res.history.column("status") == 0
    obs = res.history.column("obs")[ok]
    assert res.log_estimate == pytest.approx(logsumexp(obs) - np.log(obs.size), abs=1e-12)
    lo, hi = res.log_ci()
    assert np.isfinite(lo) and lo < res.log_estimate < hi


def test_bounds_are_rejected_for_log_scale_arms():
    """Bug: bounds on a log-scale run centred the squared reward at a log value and checked the
    working values (exp(obs - shift)) against them: a value above b crashed the run."""
    arms = [pb.CallableArm(lambda rng: rng.normal(size=3), name="x", log_scale=True)]
    with pytest.raises(ValueError, match="'bounds'.*log-scale"):
        pb.run(arms, budget=pb.Pulls(5), bounds=(-20.0, 20.0), progressbar=False)


# --- quarantine and the restricted state ------------------------------------------------
def _faulty(name, p, sd=1.0):
    """Normal arm that returns NaN with probability ``p`` (decided by the pull's stream)."""

    def fn(rng):
        x = rng.normal(1.0, sd, size=2)
        if rng.random() < p:
            x[0] = np.nan
        return x

    return pb.CallableArm(fn, name=name, cost=1.0)


@pytest.mark.parametrize("arm", [0, 1, 2])
def test_oracle_whose_arm_is_quarantined_stops_instead_of_switching_arms(arm):
    """Bug: the restricted state made the oracle's fixed index point at another arm (or out of
    range: IndexError)."""
    arms = [_faulty(f"a{k}", 0.3 if k == arm else 0.0) for k in range(3)]
    res = _run(arms, policy="oracle", policy_kwargs={"arm": arm}, budget=pb.Pulls(100), random_seed=0)
    assert res.quarantined.tolist() == [k == arm for k in range(3)]
    assert set(res.history.column("arm").tolist()) == {arm}
    assert len(res.history) < 100


@pytest.mark.parametrize("policy", ["thompson", "ucb_v", "kl_ucb", "uniform", "pmc"])
def test_quarantined_arm_is_never_chosen_again(policy):
    """Every policy's state (Thompson's BetaCounts, PMC's PMCExtra) is restricted to the active arms."""
    arms = [_faulty("good", 0.0), _faulty("bad", 0.5, sd=0.1), _faulty("ok", 0.0, sd=2.0)]
    kwargs = {"policy_kwargs": {"population_size": 3}} if policy == "pmc" else {}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="pmc: the pull info has no", category=UserWarning)
        res = _run(arms, policy=policy, budget=pb.Pulls(120), random_seed=5, **kwargs)
    assert res.quarantined.tolist() == [False, True, False]
    arm = res.history.column("arm")
    last_bad = np.flatnonzero(arm == 1).max()
    assert res.faults[0]["row"] == last_bad and len(arm) == 120
    assert res.policy_state.pending.sum() == 0


class _Scores(NamedTuple):
    score: np.ndarray
    values: np.ndarray

    per_arm_fields = ("score", "values")


class _ExtraPolicy:
    """A policy whose extra is a NamedTuple of per-arm arrays and whose update takes value=/info=
    (the protocol PMC uses); it picks the arm with the largest info sum."""

    @staticmethod
    def make():
        def init(n_arms, scale=None):
            return init_state(n_arms, scale, extra=_Scores(np.zeros(n_arms), np.zeros(n_arms)))

        def select(rng, state):
            n = state.n + state.pending
            if (n == 0).any():
                return int(np.argmin(n))
            return int(np.argmax(state.extra.score / n + 1e-3 * rng.random(n.size)))

        def update(rng, state, arm, reward, cost=0.0, *, value=None, info=None):
            score = state.extra.score.copy()
            values = state.extra.values.copy()
            score[arm] += info["q"]
            values[arm] += value
            return record_loss(state, arm, reward, cost, _Scores(score, values))

        return Policy("extra-scores", init, select, update, observes=True)


def _info_arm(name, q, p_fault=0.0, extra_info=False):
    def fn(rng):
        x = rng.normal(1.0, 1.0)
        if rng.random() < p_fault:
            x = np.nan
        info = {"q": q + rng.random()}
        if extra_info:
            info["paths"] = rng.random(3)  # undeclared per-path array (as PMC's fields)
        return x, info

    return pb.CallableArm(fn, name=name, diagnostics=("q",), cost=1.0)


def test_policy_with_value_and_info_resumes_exactly_and_sees_its_restricted_extra(tmp_path):
    """A policy fed value=/info= (declared float diagnostics) replays exactly from a checkpoint;
    the per-arm fields its extra declares are restricted to the active arms after a quarantine."""
    arms = lambda: [_info_arm("a", 1.0), _info_arm("b", 2.0, p_fault=0.2), _info_arm("c", 0.5)]  # noqa: E731
    pol = _ExtraPolicy.make()
    full = _run(arms(), policy=pol, budget=pb.Pulls(90), random_seed=8)
    assert full.quarantined.tolist() == [False, True, False]  # the extra was cut to 2 arms after this
    values = full.policy_state.extra.values
    obs, arm = full.history.column("obs"), full.history.column("arm")
    rewarded = np.isfinite(full.history.column("reward"))
    np.testing.assert_allclose(values, np.bincount(arm[rewarded], weights=obs[rewarded], minlength=3))
    path = tmp_path / "ck.npz"
    _run(arms(), policy=pol, budget=pb.Pulls(90), random_seed=8, checkpoint=path, callback=lambda p, h: p.pulls >= 37)
    resumed = _run(arms(), policy=pol, budget=pb.Pulls(90), random_seed=8, checkpoint=path)
    _same_history(full, resumed)
    np.testing.assert_array_equal(resumed.policy_state.extra.score, full.policy_state.extra.score)


def test_policy_fed_unrecorded_info_gets_it_live_but_refuses_an_inexact_resume(tmp_path):
    """Live updates get the arm's info as returned (PMC needs its per-path arrays); a replay
    could only give the recorded diagnostics, so resuming such a run raises instead of diverging."""
    seen = []
    base = _ExtraPolicy.make()

    def update(rng, state, arm, reward, cost=0.0, *, value=None, info=None):
        seen.append(info)
        return base.update(rng, state, arm, reward, cost, value=value, info=info)

    pol = base._replace(update=update)
    arms = [_info_arm("a", 1.0, extra_info=True), _info_arm("b", 2.0, extra_info=True)]
    path = tmp_path / "pmc.npz"
    _run(arms, policy=pol, budget=pb.Pulls(20), random_seed=1, checkpoint=path)
    assert all(isinstance(i["paths"], np.ndarray) and i["paths"].shape == (3,) for i in seen)
    with pytest.raises(ValueError, match="cannot be resumed exactly"):
        _run(arms, policy=pol, budget=pb.Pulls(40), random_seed=1, checkpoint=path)


# --- paired decisions and faults -------------------------------------------------------
def test_paired_decision_with_a_faulty_pull_gets_no_reward_and_releases_pending():
    arms = [_faulty("a", 0.0), _faulty("b", 0.15), _faulty("c", 0.0, sd=3.0)]
    res = _run(arms, policy="ucb1", budget=pb.Pulls(200), reward="paired", random_seed=2, max_faults=3)
    h = res.history
    dec, status, reward = h.column("decision"), h.column("status"), h.column("reward")
    assert np.all(np.bincount(dec) == 2)
    failed = np.unique(dec[status != 0])
    assert failed.size == 3 and res.quarantined.tolist() == [False, True, False]
    assert not np.isfinite(reward[np.isin(dec, failed)]).any()
    completed = np.setdiff1d(np.arange(dec.max() + 1), failed)
    assert np.isfinite(reward).sum() == completed.size
    state = res.policy_state
    assert state.pending.sum() == 0 and state.n.sum() == completed.size and state.t == dec.max() + 1


# --- budgets ---------------------------------------------------------------------------
def test_target_se_relative_compares_se_over_estimate():
    """Bug: TargetSE(relative=True) was ignored (the absolute SE was compared)."""
    arms = [normal_arm(100.0, 1.0, name="a"), normal_arm(100.0, 2.0, name="b")]
    res = _run(arms, policy="ucb1", budget=pb.TargetSE(0.002, relative=True, max_seconds=30), random_seed=0)
    assert res.se / res.estimate <= 0.002
    assert res.se > 0.1  # the absolute SE is far above 0.002: the relative one stopped the run
    assert len(res.history) < 5000


def test_target_se_on_log_scale_compares_log_se():
    arms = [
        pb.CallableArm(lambda rng, s=s: rng.normal(-5.0 - s * s / 2, s, size=4), name=f"s{s}", log_scale=True, cost=1.0)
        for s in (0.5, 1.5)
    ]
    res = _run(arms, policy="thompson", budget=pb.TargetSE(0.02, max_seconds=30), random_seed=1)
    assert res.log_se <= 0.02 and res.history.column("wall")[-1] < 30
    assert_within_se(res.log_estimate, -5.0, res.log_se)


def test_target_se_resume_stops_where_the_uninterrupted_run_stops(tmp_path):
    """Bug: the SE watch restarted its schedule on resume (evaluating at once), so a run resumed
    between two scheduled evaluations could stop earlier than the uninterrupted one. The
    schedule is now checkpointed; stops at several points just before the end must all agree."""
    arms = lambda: [normal_arm(1.0, 1.0, name="a"), normal_arm(1.0, 0.5, name="b")]  # noqa: E731
    budget = pb.TargetSE(0.02)
    full = _run(arms(), policy="thompson", budget=budget, random_seed=6)
    n = len(full.history)
    assert 300 < n < 3000 and full.se <= 0.02
    for back in (2, 4, 6, 8, 10, 12):
        path = tmp_path / f"se{back}.npz"
        _run(
            arms(),
            policy="thompson",
            budget=budget,
            random_seed=6,
            checkpoint=path,
            callback=lambda p, h, stop=n - back: p.pulls >= stop,
        )
        resumed = _run(arms(), policy="thompson", budget=budget, random_seed=6, checkpoint=path)
        _same_history(full, resumed)


def test_cpu_seconds_budget_counts_process_cpu_time():
    def burn(rng):
        t0 = time.process_time()
        while time.process_time() - t0 < 0.002:
            pass
        return rng.normal()

    arms = [pb.CallableArm(burn, name="burn"), normal_arm(0.0, 1.0, name="cheap", cost=None)]
    res = _run(arms, policy="uniform", budget=pb.CpuSeconds(0.2), random_seed=0)
    cpu = res.history.column("cpu")
    # the row's clock is read just before the budget's check: allow one pull below the limit
    assert 0.2 - 0.01 <= cpu[-1] < 0.2 + 0.1 and np.all(np.diff(cpu) >= 0)
    assert res.history.column("cost")[res.history.column("arm") == 0].min() >= 0.002


# --- resume --------------------------------------------------------------------------------
def test_resume_after_a_quarantine_replays_it(tmp_path):
    arms = lambda: [_faulty("a", 0.0), _faulty("b", 0.1, sd=0.2), _faulty("c", 0.0, sd=2.0)]  # noqa: E731
    full = _run(arms(), policy="thompson", budget=pb.Pulls(150), random_seed=4)
    first_fault = full.faults[0]["row"]
    assert full.quarantined.tolist() == [False, True, False] and first_fault < 100
    path = tmp_path / "q.npz"
    part = _run(arms(), policy="thompson", budget=pb.Pulls(first_fault + 20), random_seed=4, checkpoint=path)
    assert part.quarantined[1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = pb.run(
            arms(), policy="thompson", budget=pb.Pulls(150), random_seed=4, checkpoint=path, progressbar=False
        )
    assert any(issubclass(w.category, pb.PmcBanditWarning) for w in caught)
    _same_history(full, resumed)
    assert resumed.quarantined.tolist() == full.quarantined.tolist() and resumed.estimate == full.estimate


def test_callback_stop_with_paired_reward_then_resume_equals_uninterrupted(tmp_path):
    arms = lambda: [normal_arm(2.0, 1.0, name="a"), normal_arm(2.0, 0.3, name="b")]  # noqa: E731
    full = _run(arms(), policy="ucb_v", budget=pb.Pulls(120), reward="paired", random_seed=9)
    path = tmp_path / "cb.npz"
    part = _run(
        arms(),
        policy="ucb_v",
        budget=pb.Pulls(120),
        reward="paired",
        random_seed=9,
        checkpoint=path,
        callback=lambda p, h: p.pulls >= 50,
    )
    assert len(part.history) == 50
    resumed = _run(arms(), policy="ucb_v", budget=pb.Pulls(120), reward="paired", random_seed=9, checkpoint=path)
    _same_history(full, resumed)
    assert resumed.estimate == full.estimate


def test_resume_with_pulls_in_flight_resubmits_them_with_their_streams(tmp_path):
    import threading

    release = threading.Event()

    def arms(gated):
        """Arms a, b and c; with ``gated``, c's first pull waits until the run has stopped, so it is in flight
        when the callback ends the run on any machine, however loaded (an event, not a timing margin)."""
        first = threading.Lock()

        def c(rng):
            if gated and first.acquire(blocking=False):
                release.wait()
            return rng.normal(1.0, 2.0, size=2)

        return [normal_arm(1.0, 1.0, size=2, name="a"), normal_arm(1.0, 0.3, size=2, name="b"),
                pb.CallableArm(c, name="c", cost=1.0)]

    path = tmp_path / "fly.npz"
    try:
        part = _run(
            arms(True),
            policy="ucb1",
            budget=pb.Pulls(60),
            max_in_flight=4,
            random_seed=3,
            checkpoint=path,
            callback=lambda p, h: p.pulls >= 20,
        )
    finally:
        release.set()
    with np.load(path, allow_pickle=False) as data:
        selected = int(data["selected"])
    assert selected > len(part.history)  # decisions were in flight when the run stopped
    resumed = _run(arms(False), policy="ucb1", budget=pb.Pulls(60), max_in_flight=4, random_seed=3,
                   checkpoint=path)
    h = resumed.history
    arm, j, obs = h.column("arm"), h.column("pull_index"), h.column("obs")
    assert len(h) == 60 and len(set(zip(arm.tolist(), j.tolist()))) == 60  # every pull exactly once
    streams = Streams.from_json(resumed.settings["streams"])
    for r in range(len(h)):  # each pull drew from its own addressable stream
        assert obs[r] == pytest.approx(
            streams.pull_rng(int(arm[r]), int(j[r])).normal(1.0, [1.0, 0.3, 2.0][arm[r]], size=2).mean()
        )
    assert resumed.policy_state.pending.sum() == 0 and resumed.policy_state.n.sum() == 60


# --- API ---------------------------------------------------------------------------------
def test_repr_summary_and_warning_export():
    res = _run(
        [normal_arm(1.0, 1.0, name="a"), normal_arm(1.0, 2.0, name="b")],
        policy="ucb1",
        budget=pb.Pulls(40),
        random_seed=0,
    )
    text = repr(res)
    assert text.startswith("<RunResult: 40 pulls, 2 arms>") and "policy='ucb1'" in text and "95% CI" in text
    assert "<pre>" in res._repr_html_()
    assert pb.PmcBanditWarning is pb.exceptions.PmcBanditWarning and "PmcBanditWarning" in pb.__all__


@pytest.mark.parametrize(
    "kwargs, exc, words",
    [
        (dict(progressbar="yes"), TypeError, "'progressbar'"),
        (dict(checkpoint=3), TypeError, "'checkpoint'"),
        (dict(max_faults=0), ValueError, "'max_faults'"),
        (dict(checkpoint_every=0.0), ValueError, "'checkpoint_every'"),
        (dict(callback=5), TypeError, "'callback'"),
    ],
)
def test_more_bad_arguments_name_the_parameter_and_value(kwargs, exc, words):
    with pytest.raises(exc, match=words + r".*Got"):
        pb.run([normal_arm(1.0, 1.0, name="a")], budget=pb.Pulls(5), **{"progressbar": False, **kwargs})


def test_target_se_relative_must_be_bool():
    with pytest.raises(TypeError, match="'relative'"):
        pb.TargetSE(0.1, relative="yes")


def test_progress_is_cheap_and_complete():
    seen = []
    _run(
        [normal_arm(1.0, 1.0, name="a")],
        budget=pb.Pulls(5),
        random_seed=0,
        callback=lambda p, h: seen.append(p) and False,
    )
    p = seen[-1]
    assert p.pulls == 5 and p.wall > 0 and p.cpu > 0 and math.isnan(p.se)


def test_threaded_checkpoint_resumes_serially(tmp_path):
    """Pulls in flight in a threaded run's checkpoint are redone by a serial resume.

    The threaded run's pulls are chained so that pulls are still in flight when it stops, on any
    machine load: each pull returns only once the next one has started, and every pull from the
    tenth on waits until the run has returned. The callback stops the run once the tenth has started.
    """
    entered, release, lock, stuck = [0], threading.Event(), threading.Lock(), []
    first_blocked = 10

    def gated(name, sd):
        def fn(rng):
            with lock:
                entered[0] += 1
                k = entered[0]
            if k >= first_blocked:
                release.wait(30.0) or stuck.append(k)
            else:
                deadline = time.monotonic() + 30.0
                while entered[0] <= k and time.monotonic() < deadline:
                    time.sleep(0.0005)
                entered[0] > k or stuck.append(k)
            return rng.normal(1.0, sd, size=2)

        return pb.CallableArm(fn, name=name, cost=1.0)

    path = tmp_path / "mix.npz"
    try:
        part = _run(
            [gated("a", 1.0), gated("b", 0.3)],
            policy="ucb1",
            budget=pb.Pulls(40),
            max_in_flight=3,
            random_seed=2,
            checkpoint=path,
            callback=lambda p, h: entered[0] >= first_blocked,
        )
    finally:
        release.set()
    assert not stuck and not part.history.faults
    with np.load(path, allow_pickle=False) as data:
        assert int(data["selected"]) > len(part.history)
    arms = lambda: [normal_arm(1.0, 1.0, size=2, name="a"), normal_arm(1.0, 0.3, size=2, name="b")]  # noqa: E731
    resumed = _run(arms(), policy="ucb1", budget=pb.Pulls(40), random_seed=2, checkpoint=path)
    h = resumed.history
    assert len(h) == 40 and len(set(zip(h.column("arm").tolist(), h.column("pull_index").tolist()))) == 40
    assert resumed.policy_state.pending.sum() == 0 and resumed.policy_state.n.sum() == 40


def test_record_then_absorb_is_receive():
    """The loop's one-call step (receive) and its two halves (record, absorb) leave the same history and state."""
    from pmcbandit.policies import get_policy
    from pmcbandit.policies.learner import PolicyLearner
    from pmcbandit.policies.rewards import make_reward_rule
    from pmcbandit.runtime.engine import Engine
    from pmcbandit.runtime.executors.base import execute_pull

    def flaky(rng):
        x = rng.random()
        return math.nan if x < 0.2 else x

    arms = [pb.CallableArm(lambda r: r.normal(), name="n", cost=1.0), pb.CallableArm(flaky, name="f", cost=2.0),
            pb.CallableArm(lambda r: r.normal(size=3), name="b", cost=1.5)]

    def engine():
        policy = get_policy("ucb1")
        learner = PolicyLearner(policy, make_reward_rule("squared", None, True, policy=policy, n_arms=3), 3)
        return Engine(arms, learner, Streams.from_generator(np.random.default_rng(5)), max_faults=4)

    one, halves = engine(), engine()
    for _ in range(60):
        for eng in (one, halves):
            (ticket,) = eng.dispatch()
            out = execute_pull(arms[ticket.arm], eng.streams.pull_rng(ticket.arm, ticket.pull_index), ticket)
            if eng is one:
                eng.receive(out)
            else:
                eng.absorb(eng.record(out))
    assert len(one.history) == 60 and one.history.faults  # the flaky arm faulted
    for col in ("decision", "arm", "pull_index", "status", "batch_size", "obs", "within_var", "cost", "reward"):
        np.testing.assert_array_equal(one.history.column(col), halves.history.column(col), err_msg=col)
    assert one.history.faults == halves.history.faults
    np.testing.assert_array_equal(one.quarantined, halves.quarantined)
    np.testing.assert_array_equal(one.state.n, halves.state.n)
