"""The stopping-time simulator (pmcbandit.identification.simulate): the live loop's rule, pull for pull."""

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit._rng import get_random_generator
from pmcbandit.identification import get_identifier, lil_clucb, top_k_oracle
from pmcbandit.identification.simulate import replay, simulate_stopping
from pmcbandit.runtime.streams import Streams
from tests.tolerance import assert_within_se

MEANS = np.array([0.5, 0.45, 0.3, 0.1, 0.0])


def _algo(name):
    kw = dict(delta=0.05, sigma=0.5)
    if name != "lil_ucb":
        kw["k"] = 2
    if name != "lucb1":
        kw["mode"] = "heuristic"
    return get_identifier(name, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lucb1", "lil_lucb", "lucb_pp", "lil_rand_lucb", "lil_clucb", "lil_ucb"])
def test_replay_reproduces_the_live_loop_pull_for_pull(name):
    algo = _algo(name)
    seed = 31
    arms = [pb.CallableArm(lambda rng, m=m: rng.normal(m, 0.5), name=f"a{i}", cost=1.0) for i, m in enumerate(MEANS)]
    live = pb.identify(arms, algo, random_seed=seed, progressbar=False)
    # the live run's rewards, arm by arm, and its policy stream's uniforms, drawn from the same streams
    streams = Streams.from_generator(get_random_generator(seed, "test"))
    depth = int(live.counts.max()) + 1
    table = np.array([[streams.pull_rng(i, j).normal(m, 0.5) for j in range(depth)] for i, m in enumerate(MEANS)])
    uniforms = streams.policy.random(live.samples + 10)
    samples, stopped, order = replay(algo, table, uniforms)
    assert stopped and live.stopped_by == "confidence"
    assert samples == live.samples
    np.testing.assert_array_equal(order, live.history.column("arm"))


def test_simulated_error_rate_and_choices():
    res = simulate_stopping(_algo("lil_rand_lucb"), MEANS, reps=300, random_seed=4)
    assert res.stopped.all() and res.samples.min() >= MEANS.size
    assert res.counts.sum(axis=1).tolist() == res.samples.tolist()
    assert res.correct.mean() > 0.9  # heuristic at delta = 0.05: errors are rare
    np.testing.assert_array_equal(np.sort(res.chosen[res.correct], axis=1), np.tile([0, 1], (res.correct.sum(), 1)))


def test_same_seed_same_replications_and_families():
    a = simulate_stopping(_algo("lucb_pp"), MEANS, reps=20, random_seed=2)
    b = simulate_stopping(_algo("lucb_pp"), MEANS, reps=20, random_seed=2)
    np.testing.assert_array_equal(a.samples, b.samples)
    bern = simulate_stopping(_algo("lucb_pp"), [0.9, 0.8, 0.2], reps=50, family="bernoulli", random_seed=3)
    assert bern.stopped.all()
    uni = simulate_stopping(_algo("lucb_pp"), MEANS, reps=50, family="uniform", random_seed=3)
    assert uni.stopped.all()


@pytest.mark.parametrize("family, mean, sd", [(0, 0.3, 0.5), (1, 0.3, np.sqrt(0.3 * 0.7)), (2, 0.3, 0.5)])
def test_reward_families_have_the_declared_mean_and_spread(family, mean, sd):
    from pmcbandit.arms.evidence._kernels import chain_seeds
    from pmcbandit.identification.simulate import _reward

    state = chain_seeds(np.random.default_rng(family), 1)[0]
    draws = np.array([_reward(family, mean, 0.5, state) for _ in range(20000)])
    assert_within_se(draws.mean(), mean, sd / np.sqrt(draws.size))
    assert_within_se(draws.std(), sd, sd / np.sqrt(2 * draws.size) * 2)  # the sd's SE, with room for kurtosis


def test_bad_arguments():
    with pytest.raises(ValueError, match="'means'"):
        simulate_stopping(_algo("lucb_pp"), [0.5], reps=2)
    with pytest.raises(ValueError, match="'family'"):
        simulate_stopping(_algo("lucb_pp"), MEANS, reps=2, family="cauchy")
    with pytest.raises(ValueError, match="'means'"):
        simulate_stopping(_algo("lucb_pp"), [1.5, 0.2, 0.1], reps=2, family="bernoulli")
    custom = lil_clucb(k=2, delta=0.05, oracle=top_k_oracle(2))
    with pytest.raises(ValueError, match="kernel rule"):
        simulate_stopping(custom, MEANS, reps=2)
