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


# --- only real numbers; warm-up; declared determinism -----------------------------------------------
@pytest.mark.parametrize("bad, fragment", [("1.0", "strings"), (True, "bools"), (None, "None"), (1 + 2j, "complex"),
                                           ([1.0, "x"], "strings"), (np.array([True, False]), "bools"),
                                           ({"a": 1.0}, "dict"), ([[1.0], [1.0, 2.0]], "not an array")])
def test_a_pull_accepts_only_real_numbers(rng, bad, fragment):
    arm = pb.CallableArm(lambda r: bad, name="bad")
    with pytest.raises(TypeError, match=fragment):
        arm.pull(rng)


@pytest.mark.parametrize("good", [1, 2.5, np.float32(3.0), [1, 2], np.arange(3), np.int64(4)])
def test_real_numbers_of_any_numeric_type_are_accepted(rng, good):
    values = pb.CallableArm(lambda r: good, name="ok").pull(rng).values
    assert values.dtype == np.float64 and np.array_equal(values, np.atleast_1d(np.asarray(good, dtype=np.float64)))


def test_a_cost_that_is_not_a_number_is_refused(rng):
    arm = pb.CallableArm(lambda r: (1.0, {}, "3"), name="bad-cost")
    with pytest.raises(TypeError, match="cost"):
        arm.pull(rng)


def test_an_arm_that_reports_its_cost_reads_no_clock(rng, monkeypatch):
    from pmcbandit.arms import base

    reads = []
    monkeypatch.setattr(base._CLOCK, "fn", lambda: reads.append(1) or 0.0)
    declared = pb.CallableArm(lambda r: r.random(), name="declared", cost=2.0)
    p = declared.pull(rng)
    assert declared.reports_cost and reads == [] and p.cost == 2.0 and p.values.dtype == np.float64
    measured = pb.CallableArm(lambda r: r.random(), name="measured")
    p = measured.pull(rng)
    assert not measured.reports_cost and len(reads) == 2 and p.cost == 0.0


@pytest.mark.parametrize("out", [0.25, np.float64(0.5), [1.0, 2.0], (0.75, {"acc": 0.5}), float("nan"), "x"])
@pytest.mark.parametrize("cost", [2.0, 3, np.float32(1.5), lambda v: float(v.size), float("nan")])
def test_a_declared_cost_pull_equals_the_pull_through_draw(out, cost):
    """CallableArm.pull with a declared cost skips draw's round trip: the same Pull (or error) as Arm.pull."""
    arm = pb.CallableArm(lambda r: out, name="fast", diagnostics=("acc",), cost=cost)

    def pull(how):
        try:
            return how(arm, np.random.default_rng(0))
        except TypeError as exc:
            return str(exc)

    fast, generic = pull(pb.CallableArm.pull), pull(pb.Arm.pull)
    if isinstance(generic, str):
        assert fast == generic
    else:
        np.testing.assert_array_equal(fast.values, generic.values)
        assert fast.values.dtype == generic.values.dtype == np.float64
        assert (fast.cost, fast.info) == (generic.cost, generic.info) or np.isnan([fast.cost, generic.cost]).all()
        assert type(fast.cost) is float and fast.info == generic.info


def test_a_subclass_that_draws_its_own_way_is_pulled_through_its_draw(rng):
    class Doubled(pb.CallableArm):
        def draw(self, rng):
            return 2.0 * self.fn(rng), {}, 7.0

    p = Doubled(lambda r: 0.5, name="doubled", cost=1.0).pull(rng)
    assert p.values.tolist() == [1.0] and p.cost == 7.0
    arm = pb.CallableArm(lambda r: 0.5, name="replaced", cost=1.0)
    arm.draw = lambda rng: (3.0, {}, 4.0)  # replaced on the arm itself
    p = arm.pull(rng)
    assert p.values.tolist() == [3.0] and p.cost == 4.0


def test_a_declared_cost_that_is_missing_is_refused(rng):
    arm = pb.CallableArm(lambda r: 1.0, name="no-cost", cost=lambda v: None)
    with pytest.raises(TypeError, match="reports its cost"):
        arm.pull(rng)


@pytest.mark.parametrize("x", [0.25, float("nan"), float("inf")])
def test_a_python_float_is_one_value(rng, x):
    values = pb.CallableArm(lambda r: x, name="one").pull(rng).values
    assert values.shape == (1,) and values.dtype == np.float64 and np.array_equal(values, [x], equal_nan=True)


def test_a_string_observation_is_a_fault_of_the_run_not_a_value():
    arm = pb.CallableArm(lambda r: "1.0", name="text", cost=1.0)
    good = pb.CallableArm(lambda r: r.normal(1.0, 1.0), name="good", cost=1.0)
    with pytest.warns(pb.PmcBanditWarning):
        res = pb.run([arm, good], budget=pb.Pulls(20), random_seed=0, progressbar=False)
    assert res.faults[0]["status"] == "error" and "strings" in res.faults[0]["message"]
    assert res.quarantined.tolist() == [True, False]


class _WarmArm(pb.Arm):
    name = "warm"

    def __init__(self):
        self.warmed = 0
        self.warm_start = self.first_draw = None

    def warm_up(self):
        import time

        self.warm_start = time.perf_counter()
        time.sleep(0.3)
        self.warmed += 1

    def draw(self, rng):
        import time

        assert self.warmed == 1, "a pull before the warm-up"
        if self.first_draw is None:
            self.first_draw = time.perf_counter()
        return rng.normal(size=2), {}, 1.0


def test_warm_up_runs_once_before_the_clock_starts():
    arm, other = _WarmArm(), pb.CallableArm(lambda r: r.normal(size=2), name="o", cost=1.0)
    res = pb.run([arm, other], budget=pb.Pulls(6), random_seed=0, progressbar=False)
    assert arm.warmed == 1
    # Had the clock started before the warm-up, the first row's wall time would be at least the time from
    # the warm-up's start to the first draw; the run's clock starts after the warm-up, so it is less.
    first = int(np.flatnonzero(res.history.column("arm") == 0)[0])
    assert res.history.column("wall")[first] < arm.first_draw - arm.warm_start


def test_identical_observations_get_no_weight_unless_the_arm_is_declared_exact():
    stuck = pb.CallableArm(lambda r: 5.0, name="stuck", cost=1.0)
    noisy = pb.CallableArm(lambda r: r.normal(1.0, 0.5), name="noisy", cost=1.0)
    with pytest.warns(pb.PmcBanditWarning, match="all identical"):
        res = pb.run([stuck, noisy], "uniform", budget=pb.Pulls(80), random_seed=1, progressbar=False)
    assert res.arm_status().tolist() == ["zero_variance", "ok"]
    assert res.combined.weights[0] == 0
    assert_within_se(res.estimate, 1.0, res.se)
    exact = pb.CallableArm(lambda r: 1.0, name="exact", cost=1.0)
    exact.deterministic = True
    res = pb.run([exact, noisy], "uniform", budget=pb.Pulls(80), random_seed=1, progressbar=False)
    assert res.arm_status().tolist() == ["ok", "ok"] and res.combined.weights[0] > 0


def test_an_arm_never_pulled_is_not_listed_as_ok():
    slow = pb.CallableArm(lambda r: r.normal(), name="never", cost=1.0)
    slow.expected_seconds = 1e6  # over every share of a 1 s budget: never chosen
    quick = pb.CallableArm(lambda r: r.normal(), name="quick", cost=1.0)
    quick.expected_seconds = 1e-4
    import warnings as _w

    with _w.catch_warnings():
        _w.simplefilter("ignore")
        res = pb.run([quick, slow], budget=0.3, random_seed=0, progressbar=False)
    assert res.arm_status().tolist()[1] == "not_pulled"
