"""SAQM, SA-FOA, ICB, Exhaustive: answers, the simulator replaying the live door, bad input of the factories."""

import math

import numpy as np
import pytest

from pmcbandit.full_bandit import (
    FullBanditEnvironment,
    exhaustive,
    icb,
    identify_full_bandit,
    matroid_oracle,
    sa_foa,
    saqm,
    simulate_full_bandit,
    sum_noise_scale,
    uniform_allocation,
)
from pmcbandit.full_bandit.allocation import Allocation
from pmcbandit.full_bandit.base import confidence_width
from pmcbandit.full_bandit.exhaustive import MAX_SUPER_ARMS
from pmcbandit.runtime.budget import Pulls

FACTORIES = {"saqm": saqm, "sa_foa": sa_foa, "icb": icb, "exhaustive": exhaustive}
THETA = np.array([1.0, 0.9, 0.3, 0.2, 0.1, 0.0])


@pytest.mark.parametrize("name", list(FACTORIES))
def test_identify_matches_simulator_and_finds_the_best_set(name):
    env = FullBanditEnvironment(THETA, noise_sd=0.3)
    res = identify_full_bandit(
        env,
        name,
        k=2,
        delta=0.05,
        random_seed=5,
        budget=Pulls(200_000),
        algorithm_kwargs=dict(width="tight"),
        progressbar=False,
    )
    sim = simulate_full_bandit(
        env, name, k=2, delta=0.05, random_seed=5, budget=Pulls(200_000), algorithm_kwargs=dict(width="tight")
    )
    assert res.stopped_by == "confidence" and sim.stopped
    assert res.samples == sim.stop_round
    assert res.selected_indices.tolist() == sim.recommended.tolist()  # best first by theta_hat
    assert sorted(sim.recommended.tolist()) == [0, 1] and sim.correct


def test_sa_foa_never_stops_before_exhaustive():
    # certified bound >= exact statistic at every round, same data: SA-FOA stops no earlier than Exhaustive
    for seed in range(5):
        r = {
            a: simulate_full_bandit(
                THETA, a, k=3, sigma=0.5, random_seed=seed, algorithm_kwargs=dict(width="tight")
            ).stop_round
            for a in ("sa_foa", "exhaustive")
        }
        assert r["sa_foa"] >= r["exhaustive"] > 0


def test_same_seed_bit_identical():
    a = simulate_full_bandit(THETA, "sa_foa", k=2, delta=0.1, sigma=0.3, budget=Pulls(10**5), random_seed=9)
    b = simulate_full_bandit(THETA, "sa_foa", k=2, delta=0.1, sigma=0.3, budget=Pulls(10**5), random_seed=9)
    assert a.stop_round == b.stop_round and a.statistic == b.statistic


def test_epsilon_allows_an_earlier_epsilon_optimal_stop():
    theta = np.array([1.0, 0.98, 0.5, 0.0, -0.5])
    strict = simulate_full_bandit(theta, "sa_foa", k=2, delta=0.1, sigma=0.5, budget=Pulls(50_000), random_seed=2)
    loose = simulate_full_bandit(
        theta, "sa_foa", k=2, delta=0.1, epsilon=0.2, sigma=0.5, budget=Pulls(50_000), random_seed=2
    )
    assert loose.stopped and loose.correct
    assert not strict.stopped or strict.stop_round > loose.stop_round


def test_records_hold_the_approximation_quantities():
    r = simulate_full_bandit(
        np.linspace(1, 0, 8), "sa_foa", k=4, sigma=1.0, budget=Pulls(3000), random_seed=0, record_every=1000
    )
    rec = r.records
    assert rec["round"].tolist() == [1000, 2000, 3000]
    assert np.all(rec["saqm_approx"] <= rec["cem_exact"] + 1e-12)
    assert np.all(rec["cem_exact"] <= rec["saqm_bound"] + 1e-12)
    assert np.all(rec["safoa_approx"] <= rec["gap_exact"] + 1e-12)
    assert np.all(rec["gap_exact"] <= rec["safoa_bound"] + 1e-12)


def test_icb_with_a_matroid_oracle():
    # bases of the matroid "at most one arm of {0, 1, 2}, two arms in all" (a partition matroid with fixed
    # counts per group would make every design singular: the group-count vector is in its null space)
    theta = np.array([0.2, 0.9, 0.1, 0.8, -0.05, 0.0])
    oracle = matroid_oracle(6, lambda m: m[:3].sum() <= 1 and m.sum() <= 2, "laminar")
    bases = [(i, j) for i in range(6) for j in range(i + 1, 6) if i >= 3 or j >= 3]
    support = np.zeros((len(bases), 6), dtype=bool)
    for r, pair in enumerate(bases):
        support[r, list(pair)] = True
    alloc = Allocation(support, np.full(len(bases), 1 / len(bases)), "bases")
    env = FullBanditEnvironment(theta, noise_sd=0.05)
    res = identify_full_bandit(
        env,
        "icb",
        k=2,
        random_seed=1,
        allocation=alloc,
        budget=Pulls(100_000),
        algorithm_kwargs=dict(oracle=oracle),
        progressbar=False,
    )
    assert res.stopped_by == "confidence" and sorted(res.selected_indices.tolist()) == [1, 3]
    # a class whose best set is not the top-2 of theta:
    theta2 = np.array([0.9, 0.8, 0.1, 0.3, -0.05, 0.0])  # top-2 {0, 1} is not a basis; best basis {0, 3}
    res2 = identify_full_bandit(
        FullBanditEnvironment(theta2, noise_sd=0.05),
        "icb",
        k=2,
        random_seed=2,
        allocation=alloc,
        budget=Pulls(200_000),
        algorithm_kwargs=dict(oracle=oracle),
        progressbar=False,
    )
    assert res2.stopped_by == "confidence" and sorted(res2.selected_indices.tolist()) == [0, 3]


def test_noise_scale_of_a_sum_and_width():
    assert sum_noise_scale(0.5, 4) == 1.0 and sum_noise_scale(0.5, 4, "dependent") == 2.0
    c = confidence_width(100, 10, 3, 0.05, 1.0)
    assert c == pytest.approx(
        2 * math.sqrt(2) * math.sqrt(math.log(6 * 100**2 * math.comb(10, 3) / (0.05 * math.pi**2)))
    )
    tight = confidence_width(100, 10, 3, 0.05, 1.0, width="tight")
    assert tight == pytest.approx(math.sqrt(2 * math.log(math.pi**2 * 100**2 * math.comb(10, 3) / (3 * 0.05))))
    assert tight < c


@pytest.mark.parametrize("name", list(FACTORIES))
@pytest.mark.parametrize(
    "kwargs, param",
    [
        (dict(n=6, k=1), "'k'"),
        (dict(n=6, k=6), "'k'"),
        (dict(n=6, k=8), "'k'"),
        (dict(n=6, k=2, delta=0.0), "'delta'"),
        (dict(n=6, k=2, delta=1.0), "'delta'"),
        (dict(n=6, k=2, epsilon=-0.1), "'epsilon'"),
        (dict(n=6, k=2, sigma=0.0), "'sigma'"),
        (dict(n=6, k=2, sigma=-1.0), "'sigma'"),
        (dict(n=6, k=2, noise="poisson"), "'noise'"),
        (dict(n=6, k=2, width="loose"), "'width'"),
    ],
)
def test_bad_input(name, kwargs, param):
    with pytest.raises(ValueError, match=param):
        FACTORIES[name](**kwargs)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_singular_support_is_refused(name):
    s = np.zeros((10, 10), dtype=bool)
    for i in range(10):
        s[i, [(i + j) % 10 for j in range(5)]] = True
    with pytest.raises(ValueError, match="'allocation'"):
        FACTORIES[name](10, 5, allocation=Allocation(s, np.full(10, 0.1), "cyclic"))


def test_exhaustive_refuses_too_many_super_arms():
    with pytest.raises(ValueError, match=r"'k'.*C\(n, k\)"):
        exhaustive(30, 10)
    with pytest.raises(ValueError, match="'k'"):
        simulate_full_bandit(np.zeros(30), "exhaustive", k=10, sigma=1.0, budget=Pulls(10), random_seed=0)
    assert math.comb(24, 6) <= MAX_SUPER_ARMS
    exhaustive(12, 4, max_super_arms=495)  # exactly at the cap is fine


def test_uniform_allocation_used_by_default_is_full_rank():
    algo = sa_foa(10, 5)
    assert np.linalg.matrix_rank(algo.allocation.support.astype(float)) == 10
    assert algo.allocation.name == uniform_allocation(10, 5).name
