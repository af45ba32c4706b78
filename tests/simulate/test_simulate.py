"""The replicated-run simulator agrees with the live loop, and Theorem 1 holds in it."""

import numpy as np
import pytest

import pmcbandit
from pmcbandit.simulate import (
    Gaussian,
    RewardMatrix,
    ScaledBernoulli,
    log_checkpoints,
    replication_generators,
    simulate,
)

POLICIES = ["ucb1", "ucb_v", "kl_ucb", "thompson", "uniform", "oracle"]


def _kwargs(policy):
    return {"arm": 1} if policy == "oracle" else {}


def _sim_sequence(res, r=0):
    """Arm pulled at every round, from checkpoints at every round."""
    steps = np.diff(res.pulls_at[r], axis=0, prepend=np.zeros((1, res.pulls.shape[1]), dtype=np.int64))
    assert (steps.sum(axis=1) == 1).all()
    return steps.argmax(axis=1)


def _live(arms, policy, n, seed, bounds, ranges="auto", centre="auto"):
    out = pmcbandit.run(
        arms,
        policy,
        budget=pmcbandit.Pulls(n),
        combine="uniform",
        random_seed=seed,
        bounds=bounds,
        ranges=ranges,
        centre=centre,
        policy_kwargs=_kwargs(policy),
        progressbar=False,
    )
    return out.history.column("arm"), out


@pytest.mark.parametrize("policy", POLICIES)
def test_same_pulls_as_live_loop_on_common_random_numbers(policy):
    """Pre-drawn rewards + the same policy stream -> the same pull sequence (SMPyBandits-style CRN)."""
    n, rng = 300, np.random.default_rng(3)
    s = np.array([0.3, 0.5, 0.9])
    values = 0.5 + s[:, None] * ((rng.random((2, 3, n)) < 0.5) - 0.5)
    arms = RewardMatrix(values)
    res = simulate(policy, arms, n, 2, 7, bounds=(0, 1), checkpoints=np.arange(1, n + 1), policy_params=_kwargs(policy))
    for r, seed in enumerate(replication_generators(7, 2)):
        live, out = _live(arms.to_arms(r), policy, n, seed, (0, 1))
        np.testing.assert_array_equal(_sim_sequence(res, r), live)
        assert res.estimate[r] == pytest.approx(out.estimate, abs=1e-12)


@pytest.mark.parametrize("centre", ["running", "first", 4.0])
@pytest.mark.parametrize("ranges", ["shared", "per_arm"])
@pytest.mark.parametrize("policy", ["ucb1", "ucb_v", "kl_ucb", "thompson"])
def test_same_pulls_without_bounds(policy, ranges, centre):
    """Unbounded values: centre running / first observation / given, running-maximum scales
    (shared or per arm, App. B), as pmcbandit.policies.rewards and pmcbandit.policies.centring do (the running
    centre moves 8 times in 250 rounds, Thompson's counts are reset each time)."""
    n, rng = 250, np.random.default_rng(4)
    values = 5.0 + np.array([1.0, 2.0, 0.7, 6.0])[:, None] * rng.standard_normal((2, 4, n))
    arms = RewardMatrix(values)
    res = simulate(policy, arms, n, 2, 11, ranges=ranges, centre=centre, checkpoints=np.arange(1, n + 1))
    for r, seed in enumerate(replication_generators(11, 2)):
        live, _ = _live(arms.to_arms(r), policy, n, seed, None, ranges, centre)
        np.testing.assert_array_equal(_sim_sequence(res, r), live)


def test_per_arm_ranges_keep_a_wide_arm_from_hiding_the_best_one():
    """App. B: with one arm's losses ~100x the others', a shared scale leaves the two good arms'
    normalised rewards both near 1, and Thompson sampling splits its pulls between them; per-arm
    ranges separate them. Measured at seed 0 (200 replications of 2000 rounds, running centre):
    best-arm share among the two 0.79 shared (SE over replications 0.009), 0.95 per arm
    (SE 0.006); the bounds below sit >= 4.5 SE from each."""
    arms = Gaussian(0.0, [1.0, 1.5, 15.0])
    share = {}
    for ranges in ("shared", "per_arm"):
        res = simulate("thompson", arms, 2000, 200, 0, ranges=ranges)
        good = res.pulls[:, :2]
        share[ranges] = (good[:, 0] / good.sum(axis=1)).mean()
    assert share["per_arm"] > 0.925 and share["shared"] < 0.83


@pytest.mark.parametrize("policy", ["ucb_v", "thompson"])
def test_regret_matches_live_loop_in_distribution(policy):
    """Own streams (no CRN): mean suboptimal pulls agree within 4 SE of the difference."""
    arms, n, reps = ScaledBernoulli(0.5, [0.4, 0.8]), 150, 150
    sim = simulate(policy, arms, n, 4000, 1, bounds=(0, 1)).pulls[:, 1]
    live = np.array(
        [
            np.sum(_live(arms.to_arms(), policy, n, seed, (0, 1))[0] == 1)
            for seed in np.random.default_rng(2).spawn(reps)
        ]
    )
    se = np.sqrt(sim.var(ddof=1) / sim.size + live.var(ddof=1) / live.size)
    assert abs(sim.mean() - live.mean()) <= 4 * se
    # The comparison can fail: a policy that explores differently is far outside.
    other = simulate("uniform", arms, n, 4000, 1, bounds=(0, 1)).pulls[:, 1]
    assert abs(other.mean() - live.mean()) > 4 * np.sqrt(other.var(ddof=1) / other.size + live.var() / live.size)


@pytest.mark.parametrize(
    "policy",
    [
        "uniform",
        "ucb1",
        pytest.param("kl_ucb", marks=pytest.mark.slow),
        pytest.param("thompson", marks=pytest.mark.slow),
    ],
)
def test_theorem_1_regret_identity(policy):
    """n^2 (E[(mu_n - mu)^2] - V*/n) = sum_k E[T_k(n)] (V_k - V*) within 4 SE (Thm 1, eq. 8)."""
    arms = ScaledBernoulli(0.5, [0.4, 0.6, 0.8])  # V = 0.04, 0.09, 0.16
    n, reps = 1000, 20000
    res = simulate(policy, arms, n, reps, 2014, bounds=(0, 1), checkpoints=[n], n_jobs=2)
    v = arms.variances
    np.testing.assert_allclose(v, [0.04, 0.09, 0.16])
    per_rep = (n * (res.estimate - 0.5)) ** 2 - n * v.min() - res.pulls @ (v - v.min())
    se = per_rep.std(ddof=1) / np.sqrt(reps)
    assert abs(per_rep.mean()) <= 4 * se
    measured, measured_se = res.mse_regret(mu=0.5)
    identity, _ = res.regret_from_pulls()
    assert abs(measured[-1] - identity[-1]) <= 4 * se
    if policy == "uniform":  # the identity is not trivially 0 = 0: uniform's regret is many SEs
        assert identity[-1] == pytest.approx(333 * 0.05 + 333 * 0.12)  # round robin: 334, 333, 333
        assert measured[-1] > 10 * measured_se[-1]


def test_same_seed_same_result_for_any_threads_and_blocks():
    arms = ScaledBernoulli(0.5, [0.5, 0.7])
    a = simulate("ucb1", arms, 3000, 50, 5, bounds=(0, 1))
    b = simulate("ucb1", arms, 3000, 50, 5, bounds=(0, 1), n_jobs=2, block_size=7, chunk_rounds=333)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    c = simulate("ucb1", arms, 3000, 50, 6, bounds=(0, 1))
    assert not np.array_equal(a.pulls, c.pulls)


@pytest.mark.parametrize("policy", ["kl_ucb", "thompson"])
def test_kl_ucb_and_thompson_same_result_for_any_threads_blocks_and_chunks(policy):
    """The per-replication state kept between chunks (KL-UCB's grid points, Thompson's Gamma constants)
    changes no decision: chunks of 333 rounds give the 4096-round chunks' results."""
    arms = ScaledBernoulli(0.5, [0.4, 0.8, 0.6])
    a = simulate(policy, arms, 2000, 12, 5, bounds=(0, 1))
    b = simulate(policy, arms, 2000, 12, 5, bounds=(0, 1), n_jobs=2, block_size=5, chunk_rounds=333)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.slow
@pytest.mark.parametrize("ranges, centre", [("per_arm", "running"), ("shared", "first"), ("per_arm", 4.0)])
@pytest.mark.parametrize("policy", ["kl_ucb", "thompson", "uniform", "oracle"])
def test_replication_loop_equals_lockstep_loop(policy, ranges, centre):
    """One replication at a time (``kernel.run_replications``) and the block in lock-step
    (``kernel.run_block``) make the same pulls and sums, over several chunks, unbounded Gaussian arms."""
    from pmcbandit.policies import get_policy
    from pmcbandit.policies.rewards import centre_rule, per_arm_ranges
    from pmcbandit.simulate import core, kernel

    arms = Gaussian(5.0, [1.0, 2.0, 0.7])
    policy_ = get_policy(policy, **_kwargs(policy))
    kind, index, params, fixed_arm, per_decision = core._dispatch(policy_, arms.n_arms)
    assert kind != kernel.INDEX
    rule = centre_rule(centre, None, policy_.recentre is not None, "simulate")
    n, n_rep = 3000, 6
    setup = dict(kind=kind, index=index, params=params, kl_c=params[0] if kind == kernel.KL_UCB else 0.0,
                 fixed_arm=fixed_arm, per_decision=per_decision, n_rounds=n, chunk=700, arms=arms,
                 checkpoints=log_checkpoints(n, 30), centre0=np.nan if isinstance(rule, str) else rule,
                 scale0=0.0, fixed=False, per_arm=per_arm_ranges(ranges, None, policy_.ranges, "simulate"),
                 running=rule == "running")

    def streams():
        return [(rep.spawn(1)[0], rep.spawn(1)[0]) for rep in replication_generators(9, n_rep)]

    by_rep = core._run_block(setup, range(n_rep), streams())
    lockstep = core._run_block(setup, range(n_rep), streams(), lockstep=True)
    for x, y in zip(by_rep, lockstep):
        np.testing.assert_array_equal(x, y)
    assert len(np.unique(by_rep[0][:, 3], axis=0)) == n_rep  # the replications differ


def test_checkpoints_and_estimates_are_consistent():
    arms = Gaussian(1.0, [1.0, 3.0])
    res = simulate("kl_ucb", arms, 2000, 40, 9, checkpoints=12)
    assert res.checkpoints[0] == 1 and res.checkpoints[-1] == 2000
    np.testing.assert_array_equal(res.pulls_at.sum(axis=2), np.broadcast_to(res.checkpoints, (40, 12)))
    np.testing.assert_array_equal(res.pulls_at[:, -1], res.pulls)
    np.testing.assert_allclose(res.estimate_at[:, -1], res.estimate)
    np.testing.assert_allclose(res.arm_sum.sum(axis=1) / 2000, res.estimate)
    np.testing.assert_array_equal(log_checkpoints(10, 50), np.arange(1, 11))


def test_oracle_estimate_has_the_arm_variance():
    """Fixed arm: mu_n is a mean of n scaled-Bernoulli draws, mean mid + s(p - 1/2), variance s^2 p(1-p)/n."""
    arms = ScaledBernoulli([0.5, 0.2], [0.6, 0.4], [0.5, 0.3])
    n, reps = 400, 3000
    res = simulate("oracle", arms, n, reps, 1, policy_params={"arm": 1})
    mean, var = arms.means[1], arms.variances[1]
    assert mean == pytest.approx(0.2 + 0.4 * (0.3 - 0.5))
    assert abs(res.estimate.mean() - mean) <= 4 * np.sqrt(var / n / reps)
    # sample variance of the estimates vs var/n: relative SE of a variance is about sqrt(2/reps)
    assert res.estimate.var(ddof=1) == pytest.approx(var / n, rel=4 * np.sqrt(2 / reps))
    assert (res.pulls[:, 1] == n).all()


def test_bad_arguments():
    arms = ScaledBernoulli(0.5, [0.4, 0.8])
    with pytest.raises(ValueError, match="'bounds' parameter of simulate"):
        simulate("ucb1", arms, 10, 1, 0, bounds=(0.2, 1))
    with pytest.raises(ValueError, match="'bounds' parameter of simulate"):
        simulate("ucb1", Gaussian(0, 1), 10, 1, 0, bounds=(0, 1))
    with pytest.raises(ValueError, match="'n_rounds' parameter of simulate"):
        simulate("ucb1", arms, 0, 1, 0)
    with pytest.raises(TypeError, match="'arms' parameter of simulate"):
        simulate("ucb1", [0.1, 0.2], 10, 1, 0)
    with pytest.raises(TypeError, match="'policy' parameter of simulate"):
        simulate("thompson", arms, 10, 1, 0, policy_params={"sampler": "pymc"})
    with pytest.raises(ValueError, match="'checkpoints' parameter of simulate"):
        simulate("ucb1", arms, 10, 1, 0, checkpoints=[0, 5])
    with pytest.raises(ValueError, match="'scale' parameter of ScaledBernoulli"):
        ScaledBernoulli(0.5, -1.0)
    short = RewardMatrix(np.full((2, 5), 0.5))
    with pytest.raises(ValueError, match="RewardMatrix"):
        simulate("uniform", short, 20, 1, 0, bounds=(0, 1))
    with pytest.raises(ValueError, match="RewardMatrix"):
        simulate("uniform", RewardMatrix(np.full((3, 2, 50), 0.5)), 20, 2, 0)


def test_known_centre_is_used_for_every_loss():
    """centre=c: losses (X - c)^2 from the first pull on. Arm 0 always returns 2, arm 1 always 5:
    the arm at the centre has loss 0, and UCB1 pulls the other only to explore (4 of 50 times)."""
    arms = RewardMatrix(np.array([np.full(60, 2.0), np.full(60, 5.0)]))
    for centre, winner in ((2.0, 0), (5.0, 1)):
        res = simulate("ucb1", arms, 50, 4, 0, centre=centre, checkpoints=[50])
        assert (res.pulls[:, winner] == 46).all(), (centre, res.pulls)
    with pytest.raises(ValueError, match="The 'centre' parameter of simulate must be 'auto' when bounds"):
        simulate("uniform", arms, 4, 1, 0, centre=2.0, bounds=(0, 6))
    with pytest.raises(ValueError, match="The 'centre' parameter of simulate must be 'auto' when bounds"):
        simulate("uniform", arms, 4, 1, 0, centre="running", bounds=(0, 6))
    with pytest.raises(ValueError, match="The 'centre' parameter of simulate must be one of .* or a finite float"):
        simulate("uniform", arms, 4, 1, 0, centre=np.nan)
    with pytest.raises(ValueError, match="The 'centre' parameter of simulate must be one of"):
        simulate("uniform", arms, 4, 1, 0, centre="mean")


def test_kl_ucb_tangent_bound_covers_the_moved_index():
    """The bound that lets the replication loop skip a stale KL-UCB index (``kernel._kl_ucb_upper``) is
    at or above the grid index the live policy computes after ``f(t)/n`` grows, and at most a few hundred
    grid points above it for small moves (so it can skip)."""
    from pmcbandit.policies.kl_ucb import GRID, grid_index
    from pmcbandit.simulate import kernel

    rng = np.random.default_rng(3)
    gaps = []
    for _ in range(3000):
        p = rng.uniform(0.0, 0.999)
        d0 = 10.0 ** rng.uniform(-5, 0)
        d = d0 * (1.0 + 10.0 ** rng.uniform(-6, 0))
        j0, kl0 = grid_index(p, d0, 0, -1)
        if not kl0 <= d:
            continue
        bound = kernel._kl_ucb_upper(p, d, j0, kl0)
        exact = grid_index(p, d, 0, -1)[0] * GRID
        assert bound >= exact
        gaps.append((bound - exact) / GRID)
    assert len(gaps) > 1000
    assert np.median(gaps) < 300
