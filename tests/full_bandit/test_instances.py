"""Synthetic and crowdsourcing-sized full-bandit instances (Kuroki et al. 2020, Sec. 5, Table 2)."""

import itertools

import numpy as np
import pytest

from pmcbandit.full_bandit.instances import (CROWDSOURCING, SYNTHETIC, best_super_arm, crowdsourcing_instance,
                                             super_arm_gap, synthetic_instance)


def _enumerated_gap(theta, k):
    sums = sorted((theta[list(c)].sum() for c in itertools.combinations(range(len(theta)), k)), reverse=True)
    return sums[0] - sums[1]


@pytest.mark.parametrize("gap", [SYNTHETIC["small_gap"], SYNTHETIC["large_gap"]])
def test_synthetic_instance_has_the_requested_gap(gap):
    for seed in range(5):
        inst = synthetic_instance(10, 5, gap, np.random.default_rng(seed))
        assert inst.theta.shape == (10,)
        assert _enumerated_gap(inst.theta, 5) == pytest.approx(gap, abs=1e-12)
        assert super_arm_gap(inst.theta, 5) == pytest.approx(gap, abs=1e-12)
        top = np.sort(inst.theta)[::-1][:5]
        assert np.all((top >= 0.5) & (top <= 1.0))
        assert np.all(inst.theta >= 0.0)


def test_synthetic_instance_is_seeded():
    a = synthetic_instance(10, 5, 0.1, np.random.default_rng(3)).theta
    b = synthetic_instance(10, 5, 0.1, np.random.default_rng(3)).theta
    assert np.array_equal(a, b)


@pytest.mark.parametrize("name", list(CROWDSOURCING))
def test_crowdsourcing_instance_matches_table_2(name):
    spec = CROWDSOURCING[name]
    inst = crowdsourcing_instance(name)
    assert inst.theta.shape == (spec["workers"],)
    assert inst.theta.mean() == pytest.approx(spec["average"], abs=1e-12)
    assert inst.theta.max() == spec["best"]
    assert np.all((inst.theta >= 0) & (inst.theta <= spec["best"]))
    assert set(best_super_arm(inst.theta, 10).tolist()) == set(range(10))
    assert inst.gap == pytest.approx(super_arm_gap(inst.theta, 10), abs=1e-15)
    assert inst.gap >= 0.1 - 1e-12


def test_crowdsourcing_sizes_span_the_paper():
    sizes = [v["workers"] for v in CROWDSOURCING.values()]
    tasks = [v["tasks"] for v in CROWDSOURCING.values()]
    assert min(sizes) == 36 and max(sizes) == 111 and min(tasks) == 20 and max(tasks) == 36


@pytest.mark.parametrize("call,param", [
    (lambda: synthetic_instance(10, 5, 0.0, np.random.default_rng(0)), "gap"),
    (lambda: synthetic_instance(10, 5, 0.6, np.random.default_rng(0)), "gap"),
    (lambda: synthetic_instance(10, 10, 0.1, np.random.default_rng(0)), "k"),
    (lambda: synthetic_instance(10, 1, 0.1, np.random.default_rng(0)), "k"),
    (lambda: crowdsourcing_instance("Physics"), "name"),
    (lambda: crowdsourcing_instance("IT", k=36), "k"),
    (lambda: crowdsourcing_instance("IT", gap=0.9), "gap"),
    (lambda: crowdsourcing_instance("IT", spread=0.5, gap=0.05), "spread"),
])
def test_bad_input(call, param):
    with pytest.raises(ValueError, match=f"'{param}' parameter"):
        call()


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="'rng' parameter"):
        synthetic_instance(10, 5, 0.1, 0)
