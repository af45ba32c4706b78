"""EXPLORE-m algorithms (Kalyanakrishnan & Stone 2010): schedules, the live loop, the simulator, bad input."""

import math
import warnings

import numpy as np
import pytest

import pmcbandit as pb
from pmcbandit._rng import get_random_generator
from pmcbandit.identification import adapt, direct, get_identifier, halving, incremental, ocba_m, racing
from pmcbandit.identification import explore_kernels as ek
from pmcbandit.identification.radii import empirical_bernstein, empirical_bernstein_level, hoeffding, hoeffding_level
from pmcbandit.identification.schedules import (
    direct_total, halving_rounds, halving_total, incremental_total, median_elimination_total,
)
from pmcbandit.identification.simulate import replay, simulate_stopping, simulate_trace
from pmcbandit.runtime.streams import Streams

WIDTH = math.sqrt(12.0)  # K&S's arms: uniform with standard deviation 1


# --- closed-form sample budgets ---------------------------------------------------------------

def _direct_formula(n, eps, delta, r2):
    return n * math.ceil(2 * r2 / eps**2 * math.log(n / delta))


def _halving_formula(n, m, eps, delta, r2):
    total, size, e, d = 0, n, eps / 4, delta / 2
    for _ in range(math.ceil(math.log2(n / m))):
        total += size * math.ceil(2 * r2 / e**2 * math.log(3 * m / d))
        size, e, d = max(math.ceil(size / 2), m), 0.75 * e, d / 2
    return total


def _median_elimination_formula(size, eps, delta, r2):
    total, e, d = 0, eps / 4, delta / 2
    while size > 1:
        total += size * math.ceil(r2 / (e / 2) ** 2 * math.log(3 / d))
        size, e, d = math.ceil(size / 2), 0.75 * e, d / 2
    return total


@pytest.mark.parametrize("r2, expected", [(12.0, (697_100, 24_382_550, 2_000_297_661)),
                                          (1.0, (58_100, 2_031_925, 166_692_244))])
def test_closed_forms_on_the_ks_instance(r2, expected):
    """n = 50, m = 15, epsilon = 0.1, delta = 0.15: DIRECT, HALVING, INCREMENTAL pulls in all."""
    n, m, eps, delta = 50, 15, 0.1, 0.15
    width = math.sqrt(r2)
    got = (direct_total(n, eps, delta, width), halving_total(n, m, eps, delta, width),
           incremental_total(n, m, eps, delta, width))
    assert got == expected
    assert got[0] == _direct_formula(n, eps, delta, r2)
    assert got[1] == _halving_formula(n, m, eps, delta, r2)
    assert got[2] == sum(_median_elimination_formula(n - l, eps, delta / m, r2) for l in range(m))
    assert halving_rounds(50, 15) == 2 and halving_rounds(8, 2) == 2 and halving_rounds(9, 2) == 3
    assert median_elimination_total(1, eps, delta, width) == 0


@pytest.mark.parametrize("factory, closed", [
    (direct, lambda n, m, e, d, w: direct_total(n, e, d, w)),
    (halving, halving_total),
    (incremental, incremental_total),
])
def test_runs_pull_exactly_their_closed_form(factory, closed):
    n, m, eps, delta = 7, 3, 1.5, 0.1
    means = np.linspace(0.0, 1.0, n)
    algo = factory(k=m, delta=delta, epsilon=eps, reward_range=WIDTH)
    res = simulate_stopping(algo, means, reps=3, family="uniform", scale=1.0, random_seed=5)
    assert res.stopped.all()
    assert res.samples.tolist() == [closed(n, m, eps, delta, WIDTH)] * 3


@pytest.mark.parametrize("factory, expected", [(direct, 58_100), (halving, 2_031_925)])
def test_ks_instance_with_unit_range_pulls_its_closed_form(factory, expected):
    means = np.random.default_rng(0).uniform(0.0, 1.0, 50)
    res = simulate_stopping(factory(k=15, delta=0.15, epsilon=0.1, reward_range=1.0), means, reps=1,
                            family="bernoulli", random_seed=1, max_samples=10**8)
    assert res.stopped.all() and int(res.samples[0]) == expected


# --- the live loop and the simulator run one implementation -----------------------------------

MEANS = np.array([0.8, 0.6, 0.5, 0.3, 0.2, 0.1])
BOUNDS = (float(MEANS.min() - WIDTH / 2), float(MEANS.max() + WIDTH / 2))
LIVE = [("direct", dict(epsilon=1.0)), ("halving", dict(epsilon=2.0)), ("incremental", dict(epsilon=3.0)),
        ("adapt", dict(epsilon=0.1, algorithm_kwargs={"policy": 1})),
        ("adapt", dict(epsilon=0.1, algorithm_kwargs={"policy": 2})),
        ("adapt", dict(epsilon=0.1, algorithm_kwargs={"policy": 3})), ("adapt", dict(epsilon=0.1)),
        ("ocba_m", dict(epsilon=0.1)), ("racing", dict(algorithm_kwargs={"rounds": 50}))]


def _uniform_arms():
    return [pb.CallableArm(lambda rng, m=m: rng.uniform(m - WIDTH / 2, m + WIDTH / 2), name=f"a{i}", cost=1.0)
            for i, m in enumerate(MEANS)]


@pytest.mark.slow
@pytest.mark.parametrize("name, kw", LIVE, ids=[f"{n}-{i}" for i, (n, _) in enumerate(LIVE)])
def test_replay_reproduces_the_live_loop_pull_for_pull(name, kw):
    seed = 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pb.PmcBanditWarning)  # RACING past its rounds warns
        live = pb.identify(_uniform_arms(), name, k=2, delta=0.1, bounds=BOUNDS, random_seed=seed,
                           progressbar=False, **kw)
    assert live.stopped_by == "confidence"
    extra = dict(kw.get("algorithm_kwargs", {}))
    if "epsilon" in kw:
        extra["epsilon"] = kw["epsilon"]
    algo = get_identifier(name, k=2, delta=0.1, reward_range=BOUNDS[1] - BOUNDS[0], **extra)
    streams = Streams.from_generator(get_random_generator(seed, "test"))
    depth = int(live.counts.max()) + 1
    table = np.array([[streams.pull_rng(i, j).uniform(m - WIDTH / 2, m + WIDTH / 2) for j in range(depth)]
                      for i, m in enumerate(MEANS)])
    samples, stopped, order = replay(algo, table, streams.policy.random(live.samples + 10))
    assert stopped and samples == live.samples
    np.testing.assert_array_equal(order, live.history.column("arm"))


def test_adapt_stops_when_delta_hat_reaches_delta_and_reports_it():
    res = pb.identify(_uniform_arms(), "adapt", k=2, delta=0.1, epsilon=0.1, bounds=BOUNDS, random_seed=4,
                      progressbar=False)
    assert res.confident and res.report["delta_hat"] <= 0.1
    assert sorted(res.selected) == ["a0", "a1"]
    assert "delta_hat=" in res.summary()
    idata = res.to_inference_data()
    assert "delta_hat" in idata.attrs["algorithm_report"]
    lower, upper = res.lower, res.upper
    assert (lower < res.means).all() and (res.means < upper).all()


def test_racing_past_its_rounds_has_no_guarantee_and_says_so():
    with pytest.warns(pb.PmcBanditWarning, match="outside the conditions of its guarantee"):
        res = pb.identify(_uniform_arms(), "racing", k=2, delta=0.1, bounds=BOUNDS, random_seed=4,
                          progressbar=False, algorithm_kwargs={"rounds": 1})
    assert res.stopped_by == "confidence" and not res.confident
    assert res.report["within_rounds"] is False and res.report["rounds"] > 1


def test_a_budget_cap_leaves_the_best_guess_without_the_guarantee():
    with pytest.warns(pb.PmcBanditWarning, match="before the algorithm's stopping rule held"):
        res = pb.identify(_uniform_arms(), "adapt", k=2, delta=0.01, epsilon=0.0, bounds=BOUNDS, random_seed=4,
                          progressbar=False, budget=pb.Pulls(100))
    assert res.stopped_by == "budget" and res.samples == 100 and len(res.selected) == 2


def test_select_after_the_stop_is_an_error_and_the_state_is_immutable():
    algo = direct(k=1, delta=0.1, epsilon=2.0, reward_range=1.0)
    state = algo.init(3)
    rng = np.random.default_rng(0)
    while not algo.stop(state):
        before = state
        for arm in algo.select(rng, state).arms:
            state = algo.update(state, arm, 0.5)
        assert before.t < state.t and before.ints is not state.ints
    with pytest.raises(RuntimeError, match="no arm to pull"):
        algo.select(rng, state)


def test_racing_selects_and_discards_on_its_bounds():
    """Arms far apart: the race decides within its rounds and keeps the guarantee."""
    res = simulate_stopping(racing(k=2, delta=0.1, reward_range=1.0, rounds=2000), [0.95, 0.9, 0.1, 0.05, 0.0],
                            reps=50, family="bernoulli", random_seed=2)
    assert res.stopped.all() and res.guaranteed.all() and res.correct.all()
    # the two best are selected early; the losers are discarded as soon as their bounds clear
    assert (res.counts[:, 2:] <= res.counts[:, :2].max(axis=1, keepdims=True)).all()


def test_ocba_m_pulls_its_first_n0_then_follows_its_allotment():
    means = np.array([0.9, 0.5, 0.48, 0.1])
    res = simulate_stopping(ocba_m(k=2, delta=0.1, epsilon=0.0, reward_range=1.0, n0=10, stop="budget"), means,
                            reps=20, family="bernoulli", random_seed=3, max_samples=4000)
    assert not res.stopped.any() and (res.samples == 4000).all()
    assert (res.counts >= 10).all()
    # the two arms around the cutoff get most of the budget
    assert (res.counts[:, 1:3].sum(axis=1) > 0.6 * 4000).all()


def test_policies_three_and_four_focus_on_the_boundary_arms():
    means = np.linspace(1.0, 0.0, 10)
    totals = {}
    for policy in (1, 4):
        algo = adapt(k=3, delta=0.1, epsilon=0.05, reward_range=1.0, policy=policy)
        res = simulate_stopping(algo, means, reps=30, family="bernoulli", random_seed=6, max_samples=200_000)
        totals[policy] = res.samples.mean()
        share = res.counts[:, 2:4].sum(axis=1) / res.samples
        if policy == 4:
            assert share.mean() > 0.4  # arms (m) and (m+1) get the most pulls
    assert totals[4] < totals[1]


def test_trace_records_delta_hat_and_nss():
    means = np.linspace(1.0, 0.0, 10)
    algo = adapt(k=3, delta=0.1, epsilon=0.05, reward_range=WIDTH, policy=4)
    grid = np.array([100, 1000, 5000, 20000])
    tr = simulate_trace(algo, means, grid, reps=10, random_seed=1)
    assert tr.delta_hat.shape == tr.nss.shape == (10, 4)
    assert ((tr.nss >= 0) & (tr.nss <= 1)).all() and ((tr.delta_hat >= 0) & (tr.delta_hat <= 1)).all()
    assert (tr.counts.sum(axis=1) == 20000).all()  # past the stop by default
    stopped = tr.stop_samples > 0
    assert stopped.any()
    # at the recorded stop delta_hat was <= delta: the grid point after it shows a value no larger than 1
    again = simulate_trace(algo, means, grid, reps=10, random_seed=1)
    np.testing.assert_array_equal(tr.delta_hat, again.delta_hat)
    halted = simulate_trace(algo, means, grid, reps=10, random_seed=1, past_stop=False)
    assert (halted.counts.sum(axis=1)[stopped] == tr.stop_samples[stopped]).all()
    with pytest.raises(ValueError, match="EXPLORE-m"):
        simulate_trace(get_identifier("lucb1", k=1, delta=0.1, sigma=0.5), means, grid, reps=2)


def test_the_fused_levels_equal_the_radii_inverses():
    rng = np.random.default_rng(0)
    spec = adapt(k=2, delta=0.1, epsilon=0.1, reward_range=2.0, policy=4).kernel(5).spec
    ints, reals, scal = ek.new_state(spec, np.zeros(1), 5)
    for i in range(5):
        for x in rng.uniform(-1.0, 1.0, 7 + 3 * i):
            ek.observe(spec, np.zeros(1), ints, reals, scal, i, float(x))
    for i in range(5):
        n = int(ints[ek.I_N, i])
        mean = reals[ek.R_MEAN, i]
        variance = reals[ek.R_SQ, i] / n - mean**2
        for c in (-0.5, 0.0, 0.3, 0.9):
            high = ints[ek.I_RANK, i] < 2
            d = mean + 0.1 - c if high else c - mean
            expected = min(hoeffding_level(d, n, 2.0), empirical_bernstein_level(d, n, variance, 2.0))
            assert ek._level(spec, ints, reals, i, c, True) == pytest.approx(expected, rel=1e-12, abs=1e-300)
            assert ek._level(spec, ints, reals, i, c, False) == pytest.approx(hoeffding_level(d, n, 2.0), rel=1e-12)
        # the levels invert the radii: at the level, the radius is the deviation
        level = hoeffding_level(0.3, n, 2.0)
        assert hoeffding(n, level, 1.0) == pytest.approx(0.3, rel=1e-12)
        level = empirical_bernstein_level(0.3, n, variance, 2.0)
        if level < 1.0:
            assert empirical_bernstein(n, level, variance, 2.0) == pytest.approx(0.3, rel=1e-10)


def test_same_seed_same_runs():
    algo = adapt(k=2, delta=0.1, epsilon=0.1, reward_range=WIDTH)
    a = simulate_stopping(algo, MEANS, reps=20, family="uniform", scale=1.0, random_seed=9)
    b = simulate_stopping(algo, MEANS, reps=20, family="uniform", scale=1.0, random_seed=9)
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(a.chosen, b.chosen)


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("factory", [direct, incremental, halving, adapt, ocba_m])
def test_bad_arguments_name_the_parameter(factory):
    ok = dict(k=2, delta=0.1, epsilon=0.1, reward_range=1.0)
    for key, value in [("k", 0), ("k", 1.5), ("delta", 0.0), ("delta", 1.0), ("epsilon", -0.1), ("epsilon", None),
                       ("reward_range", None), ("reward_range", 0.0), ("reward_range", math.inf)]:
        with pytest.raises(ValueError, match=f"'{key}'"):
            factory(**{**ok, key: value})
    algo = factory(**ok)
    with pytest.raises(ValueError, match="'k'"):
        algo.init(2)  # k must be < n


def test_bad_settings_of_the_individual_algorithms():
    for factory in (direct, incremental, halving):
        with pytest.raises(ValueError, match="'epsilon'.*> 0"):
            factory(k=1, delta=0.1, epsilon=0.0, reward_range=1.0)
    with pytest.raises(ValueError, match="'policy'"):
        adapt(k=1, delta=0.1, reward_range=1.0, policy=5)
    with pytest.raises(ValueError, match="'initial_pulls'"):
        adapt(k=1, delta=0.1, reward_range=1.0, initial_pulls=1)
    with pytest.raises(ValueError, match="'n0'"):
        ocba_m(k=1, delta=0.1, reward_range=1.0, n0=1)
    with pytest.raises(ValueError, match="'stop'"):
        ocba_m(k=1, delta=0.1, reward_range=1.0, stop="never")
    with pytest.raises(ValueError, match="'rounds'"):
        racing(k=1, delta=0.1, reward_range=1.0, rounds=0)
    with pytest.raises(ValueError, match="'k'"):
        racing(k=0, delta=0.1, reward_range=1.0)


def test_identify_needs_bounds_for_the_bounded_algorithms():
    for name in ("direct", "incremental", "halving", "adapt", "ocba_m", "racing"):
        tolerance = None if name == "racing" else 0.1
        with pytest.raises(ValueError, match="'bounds'"):
            pb.identify(_uniform_arms(), name, k=2, delta=0.1, epsilon=tolerance, sigma=1.0, progressbar=False)
    with pytest.raises(ValueError, match="'k'"):
        pb.identify(_uniform_arms(), "adapt", k=6, delta=0.1, bounds=BOUNDS, progressbar=False)
    with pytest.raises(ValueError, match="'epsilon'.*no tolerance"):
        pb.identify(_uniform_arms(), "racing", k=2, delta=0.1, epsilon=0.1, bounds=BOUNDS, progressbar=False)
