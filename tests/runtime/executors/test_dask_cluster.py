"""``executor=client``: pulls on a Dask ``LocalCluster`` of 2 single-threaded worker processes.

Reproducibility levels of docs/scale_out.md across executors, worker loss, timeouts, a run stopped
by its callback and resumed in-process, and ``CpuSeconds`` budgets that count the workers' CPU.
"""

import os
import signal
import time
import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit.exceptions import SettingsWarning
from tests.executor_arms import NormalArm, PidArm, assert_pulls_exact, assert_same_run, normal_pool

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _run(arms, budget, executor=None, **kw):
    kw.setdefault("policy", "ucb_v")
    return pb.run(arms, budget=budget, random_seed=5, progressbar=False, executor=executor, **kw)


def test_level2_identical_in_process_process_pool_and_dask(client):
    from pmcbandit.runtime.executors.processes import ProcessExecutor

    arms = normal_pool(declared=True)
    timing = ("wall", "cpu", "seconds")
    with ProcessExecutor(2) as pool:
        for budget in (pb.Pulls(60), pb.TargetSE(0.08, min_pulls=20)):
            serial = _run(arms, budget)
            processes = _run(arms, budget, pool, max_in_flight=1)
            dask = _run(arms, budget, client, max_in_flight=1)
            assert_same_run(serial, processes, timing)
            assert_same_run(serial, dask, timing)
    assert dask.settings["executor"] == "dask" and dask.settings["workers"] == 2
    assert dask.to_inference_data().attrs["executor"] == "dask"


def test_level3_every_pull_once_and_equal_to_a_recomputation(client):
    arms = normal_pool(spin=0.003)
    res = _run(arms, pb.Pulls(100), client)
    assert res.settings["max_in_flight"] == 2 and len(res.history) == 100
    assert_pulls_exact(res, arms)


def test_worker_killed_by_pid_mid_run(client):
    arms = [PidArm("a", sleep=0.03), PidArm("b", sleep=0.03)]
    killed = []

    def kill_one(progress, history):
        if progress.pulls >= 15 and not killed:
            pid = int(history.column("pid")[-1])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        return False

    res = _run(arms, pb.Pulls(60), client, callback=kill_one, policy="ucb1")
    assert killed and len(res.history) == 60
    assert not res.quarantined.any() and res.faults == []
    assert_pulls_exact(res, arms)
    client.wait_for_workers(2, timeout=60)  # the nanny brings the worker back for the next tests


def test_callback_stop_on_dask_resumes_in_process_to_the_same_result(client, tmp_path):
    arms = normal_pool()
    path = tmp_path / "run.npz"
    whole = _run(arms, pb.Pulls(90))
    first = _run(arms, pb.Pulls(90), client, max_in_flight=1, checkpoint=path,
                 callback=lambda progress, history: progress.pulls >= 40)
    assert first.settings["stopped_by"] == "callback" and len(first.history) == 40
    resumed = _run(arms, pb.Pulls(90), None, checkpoint=path)
    assert_same_run(whole, resumed)


def test_cpu_budget_stops_a_dask_run_near_its_target(client):
    arms = normal_pool(spin=0.02)
    target = 2.0
    res = _run(arms, pb.CpuSeconds(target), client)
    spent = res.history.column("cpu")[-1]
    assert 0.9 * target <= spent <= 1.1 * target
    assert res.history.column("cost").sum() <= spent  # the pulls' CPU is counted, with the driver's


def test_timed_out_pull_frees_its_dask_worker(client):
    # A hung pull would hold its worker for an hour: only ending that worker frees the slot.
    arms = [NormalArm(0.0, 1.0, "hangs", hang_p=0.5, hang=3600.0), NormalArm(0.0, 1.0, "fine")]
    before = client.run(os.getpid)
    with pytest.warns(pb.PmcBanditWarning, match="quarantined"):
        res = _run(arms, pb.Pulls(30), client, pull_timeout=2.5, max_faults=2, policy="ucb1")
    assert res.quarantined.tolist() == [True, False] and len(res.history) >= 20
    assert (res.history.column("status") == 3).sum() >= 2  # a third may have been in flight at the second
    # The run ended the workers of the hung pulls and gave them back before it returned: two workers
    # of the same names run, and at least one of them is a fresh process at a fresh address.
    workers = client.scheduler_info()["workers"]
    assert sorted(w["name"] for w in workers.values() if w["status"] == "running") == [0, 1]
    after = client.run(os.getpid)
    assert len(after) == 2 and set(before) - set(after)
    assert set(before.values()) - set(after.values())


class _Task:
    def __init__(self, key):
        self.key = key

    def cancel(self):
        pass


class _Scheduler:
    """A client stand-in: where the scheduler says each task is processing, which workers run, and
    the optional ``SpecCluster`` of the client."""

    def __init__(self, cluster=None):
        self.where, self.ended, self.cluster = {}, [], cluster
        self.running = {"tcp://a": 0, "tcp://b": 1}

    def nthreads(self):
        return dict.fromkeys(self.running, 1)

    def run_on_scheduler(self, function, keys):
        return {key: self.where[key] for key in keys if key in self.where}

    def scheduler_info(self):
        return {"workers": {a: {"name": n, "nanny": "tcp://nanny", "status": "running"}
                            for a, n in self.running.items()}}

    def run(self, function, workers, wait):
        self.ended += workers
        for address in workers:
            del self.running[address]

    def cancel(self, futures):
        pass


def test_a_task_sent_to_another_worker_is_timed_and_ended_there():
    from pmcbandit.runtime.executors.dask_cluster import DaskExecutor

    fake = _Scheduler()
    executor = DaskExecutor(fake, timeout=1.0)
    task = _Task("pull")
    executor._futures[task] = [[object()], time.monotonic(), None, None]
    fake.where["pull"] = "tcp://a"
    executor._observe_running()
    assert executor._futures[task][3] == "tcp://a"
    executor._futures[task][2] -= 5.0  # late on a, which was lost meanwhile: the scheduler sent the task to b
    fake.where["pull"] = "tcp://b"
    assert executor._expire() == [] and fake.ended == []  # a fresh clock on b, a left alone
    assert executor._futures[task][3] == "tcp://b"
    del fake.where["pull"]  # back in the scheduler's queue: no clock
    executor._observe_running()
    assert executor._futures[task][2:] == [None, None]
    fake.where["pull"] = "tcp://b"
    executor._observe_running()
    executor._futures[task][2] -= 5.0
    assert [o.status for o in executor._expire()] == ["timeout"] and fake.ended == ["tcp://b"]
    assert executor._ended == {"tcp://b": 1}


def test_a_worker_whose_nanny_the_cluster_closed_is_started_again_before_the_run_returns():
    from pmcbandit.runtime.executors.dask_cluster import DaskExecutor

    class Cluster:  # a SpecCluster that closed the nanny of worker 1 (lost for too long)
        worker_spec, workers = {0: {}, 1: {}}, {0: object()}

        def scale(self, n):
            self.workers[1] = object()
            fake.running["tcp://c"] = 1

    fake = _Scheduler(Cluster())
    executor = DaskExecutor(fake, timeout=1.0)
    executor._ended = {"tcp://b": 1}
    del fake.running["tcp://b"]
    executor.shutdown()
    assert fake.running == {"tcp://a": 0, "tcp://c": 1} and executor._ended == {}


@pytest.mark.parametrize("nanny_state", ["closed", "stuck"])
def test_a_nanny_whose_fresh_worker_failed_to_start_is_replaced_before_the_run_returns(monkeypatch, nanny_state):
    import types

    import pmcbandit.runtime.executors.dask_cluster as dc

    monkeypatch.setattr(dc, "STUCK_NANNY_SECONDS", 0.0)
    state = types.SimpleNamespace

    class Nanny:  # its worker failed to start: closed itself, or up without a worker
        status = state(name="closed" if nanny_state == "closed" else "running")
        process = None if nanny_state == "stuck" else state(status=state(name="failed"))
        closed = False

        def close(self):
            Nanny.closed = True

    class Cluster:  # a SpecCluster that still lists the nanny of worker 1
        worker_spec, workers = {0: {}, 1: {}}, {0: object(), 1: Nanny()}

        def scale(self, n):
            assert 1 not in self.workers  # only a name missing from the list is started again
            self.workers[1] = object()
            fake.running["tcp://c"] = 1

        def sync(self, fn):
            return fn()

    fake = _Scheduler(Cluster())
    executor = dc.DaskExecutor(fake, timeout=1.0)
    executor._ended = {"tcp://b": 1}
    del fake.running["tcp://b"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SettingsWarning)  # the wait ran out without a replacement
        executor.shutdown()
    assert fake.running == {"tcp://a": 0, "tcp://c": 1} and executor._ended == {}
    assert Nanny.closed == (nanny_state == "stuck")


@pytest.mark.slow  # the process-pool tests prove the spec shipping by default; this one on Dask
@pytest.mark.filterwarnings("ignore::pmcbandit.PmcBanditWarning")
def test_evidence_arm_ships_its_model(client):
    import pymc as pm

    from pmcbandit.arms.evidence import AISArm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([0.3, -0.2, 0.8]))
    arms = [AISArm(model, n_steps=20, n_chains=2), AISArm(model, n_steps=40, n_chains=2)]
    serial = _run(arms, pb.Pulls(16), reward="squared")
    dask = _run(arms, pb.Pulls(16), client, max_in_flight=1, reward="squared")
    assert_same_run(serial, dask)
