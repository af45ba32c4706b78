"""The arm protocol: CallableArm and the PyTensor-backed arm."""

import numpy as np
import pytest

from tests.tolerance import assert_within_se

import pmcbandit as pb


def test_callable_arm_measures_cpu_cost_or_uses_declared_cost(rng):
    arm = pb.CallableArm(lambda g: g.normal(size=3), name="n")
    p = arm.pull(rng)
    assert p.values.shape == (3,) and p.cost >= 0 and p.info == {}
    arm = pb.CallableArm(lambda g: (g.normal(size=3), {"k": 2}), name="n", cost=lambda v: v.size * 10.0,
                         diagnostics=["k"])
    p = arm.pull(rng)
    assert p.cost == 30.0 and p.info == {"k": 2}


def test_callable_arm_rejects_bad_input(rng):
    with pytest.raises(TypeError, match="'fn'"):
        pb.CallableArm(3)
    arm = pb.CallableArm(lambda g: np.zeros((2, 2)), name="m")
    with pytest.raises(ValueError, match="1-D"):
        arm.pull(rng)


def test_pytensor_arm_reseeds_from_the_generator():
    import pymc as pm
    import pytensor.tensor as pt

    x = pm.Normal.dist(mu=3.0, sigma=2.0, size=5000)
    arm = pb.PyTensorArm("normal", x, diagnostics={"mean": pt.mean(x)})
    a = arm.pull(np.random.default_rng(1))
    b = arm.pull(np.random.default_rng(1))
    c = arm.pull(np.random.default_rng(2))
    assert np.array_equal(a.values, b.values) and not np.array_equal(a.values, c.values)
    assert a.info["mean"] == pytest.approx(a.values.mean())
    se = 2.0 / np.sqrt(5000)
    assert_within_se(a.values.mean(), 3.0, se)
