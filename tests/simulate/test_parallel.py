"""The simulators' ``parallel=True`` path: numba threads over the replications, the serial run's values
whatever the thread count (each replication keeps its own streams)."""

import math

import numba
import numpy as np
import pytest

from pmcbandit.identification import adapt, direct, get_identifier, ocba_m, racing
from pmcbandit.identification.simulate import simulate_stopping, simulate_trace
from pmcbandit.simulate import Gaussian, RewardMatrix, ScaledBernoulli, simulate

MAX_THREADS = numba.config.NUMBA_NUM_THREADS


def _with_threads(n, fn):
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        return fn()
    finally:
        numba.set_num_threads(before)


def _assert_same(a, b):
    assert type(a) is type(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def _serial_and_threaded(run):
    """The serial run, and the parallel one on one thread and on every thread: all equal."""
    serial = run(False)
    one = _with_threads(1, lambda: run(True))
    every = _with_threads(MAX_THREADS, lambda: run(True))
    _assert_same(serial, one)
    _assert_same(serial, every)
    return serial


def _kwargs(policy):
    return {"arm": 1} if policy == "oracle" else {}


# ucb_v's parallel kernel takes an index function, which numba compiles anew in every process (~20 s): slow.
@pytest.mark.parametrize("policy", ["uniform", "oracle", "ucb1", pytest.param("ucb_v", marks=pytest.mark.slow),
                                    "kl_ucb", "thompson"])
def test_simulate_parallel_equals_serial_bounded(policy):
    arms = ScaledBernoulli(0.5, [0.4, 0.8, 0.6])
    res = _serial_and_threaded(lambda parallel: simulate(
        policy, arms, 1500, 11, 5, bounds=(0, 1), policy_params=_kwargs(policy), block_size=3, chunk_rounds=333,
        parallel=parallel,
    ))
    assert len(np.unique(res.arm_sum, axis=0)) == 11  # the replications differ


@pytest.mark.parametrize("policy", ["ucb1", "kl_ucb", "thompson"])
def test_simulate_parallel_equals_serial_unbounded_running_centre(policy):
    arms = Gaussian(5.0, [1.0, 2.0, 0.7])
    _serial_and_threaded(lambda parallel: simulate(
        policy, arms, 1200, 7, 3, checkpoints=15, block_size=2, chunk_rounds=500, parallel=parallel,
    ))


@pytest.mark.parametrize("policy", [pytest.param("ucb1", marks=pytest.mark.slow), "thompson"])
def test_simulate_parallel_with_fewer_replications_than_threads_and_shared_values(policy):
    values = np.random.default_rng(1).random((3, 400))
    for n_rep in (1, 3):
        _serial_and_threaded(lambda parallel: simulate(
            policy, RewardMatrix(values), 300, n_rep, 2, bounds=(0, 1), block_size=1, chunk_rounds=64,
            parallel=parallel,
        ))


@pytest.mark.slow
def test_simulate_parallel_reports_the_first_replication_out_of_values():
    """Replications 2 and 3 see a loss-free arm 0, pull it nearly always and run out of its 30 values by
    round 40; replications 0 and 1 share their pulls. Both paths name replication 2."""
    values = np.full((4, 2, 30), 0.5)
    values[2:, 0], values[2:, 1] = 0.0, 1.0
    arms = RewardMatrix(values)
    messages = []
    for parallel, block_size in ((False, 128), (True, 128), (True, 1)):
        with pytest.raises(ValueError, match="replication 2 pulled an arm more than 30 times") as err:
            _with_threads(MAX_THREADS, lambda: simulate("ucb1", arms, 40, 4, 0, bounds=(0, 1),
                                                        block_size=block_size, parallel=parallel))
        messages.append(str(err.value))
    assert len(set(messages)) == 1


def test_simulate_parallel_validation():
    arms = ScaledBernoulli(0.5, [0.4, 0.8])
    with pytest.raises(TypeError, match="The 'parallel' parameter of simulate must be a bool"):
        simulate("ucb1", arms, 10, 1, 0, parallel=1)
    with pytest.raises(ValueError, match="The 'n_jobs' parameter of simulate must be 1 with parallel=True"):
        simulate("ucb1", arms, 10, 1, 0, parallel=True, n_jobs=2)


MEANS = np.array([0.5, 0.45, 0.3, 0.1, 0.0])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lucb1", "lucb_pp", "lil_rand_lucb", "lil_clucb", "lil_ucb"])
def test_simulate_stopping_parallel_equals_serial(name):
    kw = dict(delta=0.05, sigma=0.5)
    if name != "lil_ucb":
        kw["k"] = 2
    if name != "lucb1":
        kw["mode"] = "heuristic"
    algo = get_identifier(name, **kw)
    res = _serial_and_threaded(lambda parallel: simulate_stopping(algo, MEANS, reps=13, random_seed=4,
                                                                  parallel=parallel))
    assert res.stopped.all() and len(np.unique(res.samples)) > 1


KS_MEANS = np.random.default_rng(2010).uniform(0.0, 1.0, 10)
WIDTH = math.sqrt(12.0)


@pytest.mark.parametrize("algo", [
    adapt(k=3, delta=0.1, epsilon=0.1, reward_range=WIDTH, policy=1),
    adapt(k=3, delta=0.1, epsilon=0.1, reward_range=WIDTH, policy=2),
    adapt(k=3, delta=0.1, epsilon=0.1, reward_range=WIDTH, policy=3),
    adapt(k=3, delta=0.1, epsilon=0.1, reward_range=WIDTH, policy=4),
    ocba_m(k=3, delta=0.1, epsilon=0.1, reward_range=WIDTH, n0=20),
    racing(k=3, delta=0.1, reward_range=WIDTH, rounds=10),
    direct(k=3, delta=0.1, epsilon=0.5, reward_range=WIDTH),
], ids=["pi1", "pi2", "pi3", "pi4", "ocba_m", "racing", "direct"])
@pytest.mark.slow
def test_explore_parallel_equals_serial(algo):
    res = _serial_and_threaded(lambda parallel: simulate_stopping(
        algo, KS_MEANS, reps=9, family="uniform", scale=1.0, random_seed=8, max_samples=20_000, parallel=parallel,
    ))
    assert res.stopped.any()
    trace = _serial_and_threaded(lambda parallel: simulate_trace(
        algo, KS_MEANS, [100, 1000, 3000], reps=9, random_seed=8, parallel=parallel,
    ))
    assert np.isfinite(trace.nss).all() and len(np.unique(trace.nss, axis=0)) > 1  # the replications differ


def test_parallel_calls_from_several_python_threads_take_turns_and_agree():
    from concurrent.futures import ThreadPoolExecutor

    algo = adapt(k=3, delta=0.1, epsilon=0.1, reward_range=WIDTH, policy=3)
    arms = ScaledBernoulli(0.5, [0.4, 0.8])
    serial = (simulate_stopping(algo, KS_MEANS, reps=6, random_seed=2, max_samples=5000),
              simulate("thompson", arms, 500, 5, 2, bounds=(0, 1)))
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(simulate_stopping, algo, KS_MEANS, reps=6, random_seed=2, max_samples=5000,
                               parallel=True) if i % 2 == 0 else
                   pool.submit(simulate, "thompson", arms, 500, 5, 2, bounds=(0, 1), parallel=True)
                   for i in range(4)]
        for i, future in enumerate(futures):
            _assert_same(serial[i % 2], future.result())


def test_identification_parallel_validation():
    algo = adapt(k=2, delta=0.1, epsilon=0.1, reward_range=WIDTH, policy=3)
    with pytest.raises(TypeError, match="The 'parallel' parameter of simulate_stopping must be a bool"):
        simulate_stopping(algo, KS_MEANS, reps=2, parallel="yes")
    with pytest.raises(TypeError, match="The 'parallel' parameter of simulate_trace must be a bool"):
        simulate_trace(algo, KS_MEANS, [10], reps=2, parallel=None)
