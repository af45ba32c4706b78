"""identify_full_bandit as a door: the one loop (replayed by the simulator), faults, budget, callback,
checkpoint, executors, and bad input with the shared message shape."""

import math
import re

import numpy as np
import pytest

from pmcbandit.exceptions import NoGuaranteeWarning, PmcBanditWarning, UnreliableArmWarning
from pmcbandit.full_bandit import FullBanditEnvironment, identify_full_bandit, simulate_full_bandit, uniform_allocation
from pmcbandit.full_bandit.allocation import Allocation
from pmcbandit.runtime.budget import Pulls

THETA = np.array([1.0, 0.9, 0.3, 0.2, 0.1, 0.0])
ENV = FullBanditEnvironment(THETA, noise_sd=0.3)
OWNER = "identify_full_bandit"


def run(environment=ENV, algorithm="sa_foa", **kwargs):
    kwargs.setdefault("k", 2)
    kwargs.setdefault("progressbar", False)
    return identify_full_bandit(environment, algorithm, **kwargs)


@pytest.mark.parametrize("case", [
    dict(algorithm="sa_foa", k=3, allocation="g", seed=1),
    dict(algorithm="saqm", k=2, noise="sum", seed=2),
    dict(algorithm="icb", k=4, epsilon=0.05, seed=3),
], ids=["sa_foa-g", "saqm-sum", "icb-eps"])
def test_simulator_replays_the_live_run_pull_for_pull(case):
    case = dict(case)
    seed = case.pop("seed")
    env = FullBanditEnvironment(THETA, noise_sd=0.05, noise=case.pop("noise", "independent"))
    res = run(env, random_seed=seed, budget=Pulls(100_000), **case)
    sim = simulate_full_bandit(env, random_seed=seed, budget=Pulls(100_000), **case)
    assert res.stopped_by == "confidence" and sim.stopped
    assert res.samples == sim.stop_round and res.statistic == sim.statistic
    assert res.selected_indices.tolist() == sim.recommended.tolist()


def test_the_run_draws_from_each_pulls_own_stream():
    # reward of pull j of support row r = the row's mean + scale * the first normal of that pull's stream
    from pmcbandit.runtime.streams import Streams

    with pytest.warns(NoGuaranteeWarning):
        res = run(random_seed=4, budget=Pulls(40))
    streams = Streams.from_json(res.settings["streams"])
    arm, j = res.history.column("arm"), res.history.column("pull_index")
    expected = [ENV.pull(res.super_arms[i], streams.pull_rng(int(arm[i]), int(j[i]))) for i in range(res.samples)]
    np.testing.assert_array_equal(res.rewards, expected)


def test_a_fault_quarantines_its_super_arm_and_ends_the_run():
    def pull(members, rng):
        return math.nan if members.tolist() == [0, 2] else ENV.pull(members, rng)

    with pytest.warns(PmcBanditWarning) as record:
        res = run(pull, n=6, sigma=0.3)
    assert {w.category for w in record} == {NoGuaranteeWarning, UnreliableArmWarning}
    assert any("quarantined after faults" in str(w.message) for w in record if w.category is NoGuaranteeWarning)
    assert res.stopped_by == "no_arm" and res.quarantined.sum() == 1
    assert res.super_arm_names[int(np.flatnonzero(res.quarantined)[0])] == "arm0+arm2"
    assert np.isnan(res.rewards[-1]) and res.faults[0]["status"] == "nonfinite"
    assert res.faults[0]["arm"] == "arm0+arm2"


def test_faults_below_max_faults_are_skipped():
    calls = {"n": 0}

    def pull(members, rng):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("sensor offline")
        return ENV.pull(members, rng)

    with pytest.warns(NoGuaranteeWarning, match="1 of .* pulls of arm .* failed"):
        res = run(pull, n=6, sigma=0.3, random_seed=1, max_faults=2)
    assert res.stopped_by == "confidence" and sorted(res.selected_indices.tolist()) == [0, 1]
    assert np.isnan(res.rewards[2]) and "sensor offline" in res.faults[0]["message"]
    assert np.isfinite(res.rewards).sum() == res.samples - 1 == res.state.t


def test_callback_ends_the_run_without_guarantee():
    with pytest.warns(NoGuaranteeWarning, match="callback"):
        res = run(random_seed=1, callback=lambda progress, history: progress.pulls >= 25)
    assert res.stopped_by == "callback" and res.samples == 25


def test_checkpoint_resumes_to_the_uninterrupted_run(tmp_path):
    path = tmp_path / "fb.npz"
    full = run(random_seed=8)
    with pytest.warns(NoGuaranteeWarning):
        run(random_seed=8, budget=Pulls(60), checkpoint=path)
    resumed = run(random_seed=8, checkpoint=path)
    assert resumed.samples == full.samples and np.array_equal(resumed.rewards, full.rewards)
    assert resumed.selected == full.selected


def test_threads_pull_the_same_super_arms():
    # tracking counts dispatched pulls, so several pulls in flight follow the same static design
    with pytest.warns(NoGuaranteeWarning):
        serial = run(random_seed=6, budget=Pulls(90))
    with pytest.warns(NoGuaranteeWarning):
        threads = run(random_seed=6, budget=Pulls(90), executor="threads", max_in_flight=4)
    order = np.argsort(threads.history.column("decision"), kind="stable")
    np.testing.assert_array_equal(threads.super_arms[order], serial.super_arms)
    np.testing.assert_array_equal(threads.rewards[order], serial.rewards)


def test_a_ready_identifier_and_algorithm_kwargs():
    from pmcbandit.full_bandit import icb

    res = run(ENV, icb(6, 2, sigma=0.3), random_seed=1)
    assert res.stopped_by == "confidence" and res.settings["algorithm"] == "icb"
    cyclic = run(random_seed=1, algorithm_kwargs=dict(design="cyclic", width="tight"))
    rows = uniform_allocation(6, 2, design="cyclic").support.shape[0]
    assert cyclic.settings["width"] == "tight" and cyclic.settings["support_size"] == rows


def _message(param):
    return re.escape(f"The '{param}' parameter of {OWNER} must be ") + ".*" + re.escape(" instead.")


@pytest.mark.parametrize("kwargs, error, param", [
    (dict(environment="env"), TypeError, "environment"),
    (dict(environment=lambda s, r: 0.0), ValueError, "n"),
    (dict(environment=lambda s, r: 0.0, n=6), ValueError, "sigma"),
    (dict(n=5), ValueError, "n"),
    (dict(k=1), ValueError, "k"),
    (dict(k=6), ValueError, "k"),
    (dict(k=2.0), TypeError, "k"),
    (dict(delta=0.0), ValueError, "delta"),
    (dict(delta="0.1"), TypeError, "delta"),
    (dict(epsilon=-0.1), ValueError, "epsilon"),
    (dict(sigma=0.0), ValueError, "sigma"),
    (dict(sigma="1"), TypeError, "sigma"),
    (dict(noise="poisson"), ValueError, "noise"),
    (dict(allocation="optimal"), ValueError, "allocation"),
    (dict(allocation=3), TypeError, "allocation"),
    (dict(algorithm="lucb"), ValueError, "algorithm"),
    (dict(algorithm=3), TypeError, "algorithm"),
    (dict(algorithm_kwargs=[1]), TypeError, "algorithm_kwargs"),
    (dict(algorithm_kwargs={"widht": "tight"}), TypeError, "algorithm_kwargs"),
    (dict(algorithm_kwargs={"delta": 0.1}), ValueError, "algorithm_kwargs"),
    (dict(arm_names=["a"] * 6), ValueError, "arm_names"),
    (dict(arm_names=[1, 2, 3, 4, 5, 6]), TypeError, "arm_names"),
    (dict(budget=0), ValueError, "budget"),
    (dict(budget="1"), TypeError, "budget"),
    (dict(random_seed=-1), ValueError, "random_seed"),
    (dict(max_faults=0), ValueError, "max_faults"),
    (dict(progressbar=1), TypeError, "progressbar"),
    (dict(callback=3), TypeError, "callback"),
])
def test_bad_input_names_the_parameter_and_the_door(kwargs, error, param):
    kwargs = dict(kwargs)
    environment = kwargs.pop("environment", ENV)
    with pytest.raises(error, match=_message(param)):
        run(environment, **kwargs)


def test_simulator_bad_input_names_itself():
    with pytest.raises(TypeError, match=re.escape("The 'budget' parameter of simulate_full_bandit")):
        simulate_full_bandit(ENV, k=2, budget=1000)
    with pytest.raises(ValueError, match=re.escape("The 'k' parameter of simulate_full_bandit")):
        simulate_full_bandit(ENV, k=1)
    with pytest.raises(ValueError, match=re.escape("The 'sigma' parameter of simulate_full_bandit")):
        simulate_full_bandit(THETA, k=2)


def test_a_repeated_support_row_is_one_super_arm():
    rows = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5), (0, 1)]  # a triangle makes the design full rank
    support = np.zeros((len(rows), 6), dtype=bool)
    for r, pair in enumerate(rows):
        support[r, list(pair)] = True
    res = run(random_seed=2, allocation=Allocation(support, np.full(len(rows), 1 / len(rows)), "custom"))
    assert res.settings["support_size"] == 6 and res.stopped_by == "confidence"
    assert res.super_arm_names[0] == "arm0+arm1"


@pytest.mark.parametrize("bad, status", [("1.0", "error"), (True, "error"), (None, "error"), (1j, "error"),
                                         ([1.0, 2.0], "error"), (math.inf, "nonfinite")])
def test_an_observation_that_is_not_one_finite_real_number_is_a_fault(bad, status):
    def pull(members, rng):
        return bad if members.tolist() == [0, 1] else ENV.pull(members, rng)

    with pytest.warns(PmcBanditWarning):
        res = run(pull, n=6, sigma=0.3, random_seed=1)
    assert res.stopped_by == "no_arm" and res.faults[0]["status"] == status
    assert res.faults[0]["arm"] == "arm0+arm1"
