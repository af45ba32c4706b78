"""``executor="processes"``: arms shipped once, per-thread CPU, worker loss, timeouts, reproducibility.

The reproducibility levels tested here are those of docs/scale_out.md: (1) pull (k, j) is a pure
function of (seed, k, j) on every executor; (2) with one pull in flight the run is bit-identical
to the in-process one; (3) with more, every (k, j) is made exactly once and the estimate depends
only on which pulls were made, not on the order they came back in.
"""

import os
import signal
import threading

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.arms.base import Arm, thread_cpu_clock
from pmcbandit.runtime.executors.local import Outcome, SerialExecutor, execute_pull, make_executor
from pmcbandit.runtime.history import History
from pmcbandit.runtime.executors.processes import ProcessExecutor
from pmcbandit.result import RunResult
from tests.executor_arms import NormalArm, PidArm, assert_pulls_exact, assert_same_run, normal_logp, normal_pool


@pytest.fixture(scope="module")
def pool():
    with ProcessExecutor(2) as ex:
        yield ex


def _run(arms, budget, executor=None, **kw):
    kw.setdefault("policy", "ucb_v")
    return pb.run(arms, budget=budget, random_seed=11, progressbar=False, executor=executor, **kw)


def test_level2_one_in_flight_is_bit_identical_to_in_process(pool):
    arms = normal_pool()
    serial = _run(arms, pb.Pulls(120))
    remote = _run(arms, pb.Pulls(120), pool, max_in_flight=1)
    assert_same_run(serial, remote)
    assert remote.settings["executor"] == "processes" and remote.settings["workers"] == 2
    assert serial.settings["executor"] == "serial" and serial.settings["workers"] == 1


def test_level2_target_se_with_declared_costs(pool):
    # The paired (cost-aware) reward of a TargetSE budget reads costs: declared ones keep it exact.
    arms = normal_pool(declared=True)
    budget = pb.TargetSE(0.05, min_pulls=20)
    serial = _run(arms, budget)
    remote = _run(arms, budget, pool, max_in_flight=1)
    assert_same_run(serial, remote, timing=("wall", "cpu", "seconds"))
    assert serial.settings["reward"] == "paired"


def test_level3_every_pull_once_and_estimate_independent_of_completion_order(pool):
    arms = normal_pool(spin=0.002)
    res = _run(arms, pb.Pulls(160), pool, max_in_flight=4)
    assert len(res.history) == 160
    assert_pulls_exact(res, arms)
    # The same pulls absorbed in another order give the same bits: combination in (arm, j) order.
    data = res.history.to_npz_dict()
    order = np.random.default_rng(0).permutation(len(res.history))
    shuffled = {k: (v[order] if k.startswith("col_") and v.shape == order.shape else v) for k, v in data.items()}
    again = RunResult(
        arm_names=res.arm_names,
        history=History.from_npz_dict(shuffled),
        combine=res.combine,
        log_scale=False,
        quarantined=res.quarantined,
        settings={},
        policy_state=None,
    )
    assert again.estimate == res.estimate and again.se == res.se


def test_lambda_arms_travel_by_cloudpickle_and_unpicklable_arms_are_named(pool):
    arms = [pb.CallableArm(lambda rng, s=s: rng.normal(1.0, s, 3), name=f"l{s}") for s in (0.5, 2.0)]
    assert_same_run(_run(arms, pb.Pulls(30)), _run(arms, pb.Pulls(30), pool, max_in_flight=1))

    class Locked(Arm):
        name = "locked"

        def __init__(self):
            self.lock = threading.Lock()

        def draw(self, rng):
            return rng.normal()

    with pytest.raises(TypeError, match="arm 'locked'.*cannot"):
        _run([NormalArm(0, 1, "fine"), Locked()], pb.Pulls(10), pool)


def test_worker_killed_mid_run_loses_nothing(pool):
    arms = [PidArm("a", sleep=0.02), PidArm("b", sleep=0.02)]
    killed = []

    def kill_one(progress, history):
        if progress.pulls >= 20 and not killed:
            pid = int(history.column("pid")[-1])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        return False

    res = _run(arms, pb.Pulls(80), pool, max_in_flight=2, callback=kill_one, policy="ucb1")
    assert killed and len(res.history) == 80
    assert not res.quarantined.any() and res.faults == []
    assert_pulls_exact(res, arms)
    assert killed[0] not in pool.pids()


@pytest.mark.filterwarnings("ignore:arms quarantined:pmcbandit.PmcBanditWarning")
def test_timed_out_pull_frees_its_worker(pool):
    # Pulls of 'hangs' sleep 60 s half of the time; with both workers stuck the run could not go on
    # unless a timed-out worker is replaced.
    arms = [NormalArm(0.0, 1.0, "hangs", hang_p=0.5, hang=60.0), NormalArm(0.0, 1.0, "fine")]
    before = set(pool.pids())
    res = _run(arms, pb.Pulls(40), pool, max_in_flight=2, pull_timeout=2.5, max_faults=2, policy="ucb1")
    assert len(pool.pids()) == 2 and before - set(pool.pids())  # the stuck workers were ended and replaced
    status = res.history.column("status")
    assert res.quarantined.tolist() == [True, False]
    assert (status == 3).sum() >= 2 and len(res.history) >= 30


def test_cpu_budget_counts_the_workers_cpu(pool):
    arms = normal_pool(spin=0.02)
    res = _run(arms, pb.CpuSeconds(1.5), pool)
    cost = res.history.column("cost").sum()
    # The budget stops when driver CPU + the pulls' reported CPU reaches 1.5 s.
    assert 0.6 * 1.5 <= cost <= 1.5
    assert res.history.column("cpu")[-1] >= cost


def test_thread_clock_measures_the_pulling_thread_only():
    arm = NormalArm(0.0, 1.0, "spin", spin=0.05)
    burner_stop = threading.Event()

    def burn():
        while not burner_stop.is_set():
            pass

    burner = threading.Thread(target=burn)
    burner.start()
    try:
        with thread_cpu_clock():
            cost = arm.pull(np.random.default_rng(0)).cost
        whole = arm.pull(np.random.default_rng(0)).cost
    finally:
        burner_stop.set()
        burner.join()
    assert 0.05 <= cost < 0.075
    assert whole > cost  # the process clock also counted the burning thread


def test_make_executor_arguments():
    ex, n, owned = make_executor(None, None)
    assert isinstance(ex, SerialExecutor) and n == 1 and owned
    ex, n, owned = make_executor(None, None, "threads")
    assert n == (os.cpu_count() or 1) and ex.kind == "threads"
    with pytest.raises(ValueError, match="'executor' parameter of run"):
        make_executor(None, None, "gpu")
    with pytest.raises(TypeError, match="missing"):
        make_executor(None, None, object())


class _LosesFirstPulls(SerialExecutor):
    """Inline executor that reports the first pull of every arm as lost with its worker."""

    kind = "lossy"

    def submit(self, ticket):
        if ticket.pull_index == 0:
            self._done.append(Outcome(ticket, "lost", None, "worker died", 0.1, 0.1))
        else:
            self._done.append(execute_pull(*self._pull_args(ticket), ticket))


def test_lost_pulls_do_not_quarantine_and_are_recorded():
    arms = normal_pool()
    res = _run(arms, pb.Pulls(30), _LosesFirstPulls(), max_faults=1)
    assert not res.quarantined.any()
    assert [f["status"] for f in res.faults] == ["lost"] * 3
    assert res.settings["executor"] == "lossy"
    assert res.history.column("cpu")[-1] >= 0.3  # a lost pull is charged its wall seconds


def test_executor_settings_reach_inference_data(pool):
    idata = _run(normal_pool(), pb.Pulls(12), pool, max_in_flight=1).to_inference_data()
    assert idata.attrs["executor"] == "processes" and idata.attrs["workers"] == 2


@pytest.fixture(scope="module")
def tiny_model():
    import pymc as pm

    # A CustomDist likelihood: its logp is registered for an Op type made at run time, which
    # must be registered again in the worker that unpickles the model.
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.CustomDist("y", mu, logp=normal_logp, observed=np.array([0.3, -0.2, 0.8]))
    return model


@pytest.mark.filterwarnings("ignore::pmcbandit.PmcBanditWarning")
def test_evidence_arms_are_rebuilt_from_their_model(pool, tiny_model):
    from pmcbandit.arms.evidence import AISArm, LaplaceISArm, ModelDensity, PriorISArm

    density = ModelDensity(tiny_model)
    arms = [AISArm(density, n_steps=30, n_chains=2), LaplaceISArm(density, batch_size=50), PriorISArm(density, 50)]
    kw = dict(policy="ucb_v", reward="squared")
    serial = _run(arms, pb.Pulls(24), **kw)
    remote = pb.estimate_evidence(
        tiny_model,
        arms=arms,
        budget=pb.Pulls(24),
        random_seed=11,
        progressbar=False,
        executor=pool,
        max_in_flight=1,
        **kw,
    )
    assert_same_run(serial, remote)
    assert remote.settings["executor"] == "processes"


def test_identify_runs_on_the_process_pool(pool):
    arms = [NormalArm(mu, 0.5, f"mu{mu}", batch=1, cost=1.0) for mu in (0.0, 0.4, 1.0)]
    kw = dict(k=1, delta=0.1, sigma=0.5, random_seed=2, progressbar=False)
    serial = pb.identify(arms, "lucb1", **kw)
    remote = pb.identify(arms, "lucb1", executor=pool, max_in_flight=1, **kw)
    assert remote.selected == serial.selected == ["mu1.0"]
    assert_same_run(serial, remote)
    assert remote.settings["executor"] == "processes" and remote.settings["workers"] == 2


def test_threads_refuse_arms_that_are_not_thread_safe(tiny_model):
    from pmcbandit.arms.evidence import PriorISArm

    arm = PriorISArm(tiny_model, batch_size=20)
    with pytest.raises(ValueError, match="thread-safe"):
        pb.run([arm], budget=pb.Pulls(4), executor="threads", max_in_flight=2, progressbar=False, random_seed=0)


def test_checkpoint_layout_version_5_and_newer_ones_refused(tmp_path):
    from pmcbandit.runtime.checkpoint import CHECKPOINT_VERSION

    path = tmp_path / "run.npz"
    _run(normal_pool(), pb.Pulls(10), checkpoint=path)
    with np.load(path) as data:
        saved = dict(data)
    assert int(saved["version"]) == CHECKPOINT_VERSION == 5
    saved["version"] = np.asarray(CHECKPOINT_VERSION + 1)
    np.savez(path, **saved)
    with pytest.raises(ValueError, match="newer than this pmcbandit reads"):
        _run(normal_pool(), pb.Pulls(20), checkpoint=path)
