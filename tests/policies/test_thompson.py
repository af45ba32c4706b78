"""Thompson sampling: the exact Beta kernel, its Generator consumption, the PyMC posterior."""

import numpy as np
import pytest
from scipy import integrate, stats

from pmcbandit.policies import thompson
from pmcbandit.policies.thompson import (
    SELECT_UNIFORMS,
    BetaCounts,
    beta_draws_kernel,
    select_kernel,
)

COUNTS = [(0, 0), (3, 7), (50, 10), (1000, 20), (0, 400), (2.6, 0.3)]
#: Kolmogorov distribution's 0.1% critical value of sqrt(n) D_n (one fixed-seed check each).
KS_CRIT = 1.95


def _kernel_draws(successes, failures, n_draws, rng):
    return np.array([beta_draws_kernel(successes, failures, rng.random(SELECT_UNIFORMS)) for _ in range(n_draws)])


def _check_against_beta(draws, a, b, n):
    dist = stats.beta(a, b)
    se_mean = dist.std() / np.sqrt(n)
    assert abs(draws.mean() - dist.mean()) <= 4 * se_mean
    # SE of the sample variance: sqrt((mu4 - var^2) / n)
    m = dist.mean()
    mu4 = dist.moment(4) - 4 * m * dist.moment(3) + 6 * m**2 * dist.moment(2) - 3 * m**4
    se_var = np.sqrt((mu4 - dist.var() ** 2) / n)
    assert abs(draws.var() - dist.var()) <= 4 * se_var
    # KS distance below its 0.1% critical value 1.95 / sqrt(n)
    assert stats.kstest(draws, dist.cdf).statistic <= KS_CRIT / np.sqrt(n)


def test_kernel_draws_follow_the_conjugate_beta():
    successes = np.array([c[0] for c in COUNTS], dtype=np.float64)
    failures = np.array([c[1] for c in COUNTS], dtype=np.float64)
    n = 6000
    draws = _kernel_draws(successes, failures, n, np.random.default_rng(42))
    for k, (s, f) in enumerate(COUNTS):
        _check_against_beta(draws[:, k], s + 1, f + 1, n)
    # the check has power: the draws of Beta(4, 8) are not those of Beta(5, 8)
    assert stats.kstest(draws[:, 1], stats.beta(5, 8).cdf).statistic > KS_CRIT / np.sqrt(n)


def test_same_buffer_same_draws_and_streams_differ_by_buffer():
    counts = np.array([3.0, 40.0]), np.array([9.0, 2.0])
    u = np.array([0.25, 0.5])
    np.testing.assert_array_equal(beta_draws_kernel(*counts, u), beta_draws_kernel(*counts, u.copy()))
    assert not np.array_equal(beta_draws_kernel(*counts, u), beta_draws_kernel(*counts, np.array([0.25, 0.5 + 2**-53])))


def test_cached_constants_give_the_same_decisions():
    """The simulator's select (Gamma constants kept per arm) decides as the live kernel does."""
    rng = np.random.default_rng(3)
    successes, failures = rng.integers(0, 50, 6).astype(float), rng.integers(0, 50, 6).astype(float)
    scale = np.array([1.0, 0.0, 2.0, 1.0, 0.0, 3.0])
    constants = np.empty((4, 6))
    for i in range(6):
        thompson.refresh_constants(successes, failures, i, constants)
    theta = np.empty(3)
    for _ in range(200):
        u = rng.random(SELECT_UNIFORMS)
        for o in (0, 3):
            for per_arm in (False, True):
                live = (thompson.scaled_select_kernel(successes[o:o + 3], failures[o:o + 3], scale[o:o + 3], u)
                        if per_arm else select_kernel(successes[o:o + 3], failures[o:o + 3], u))
                assert thompson.cached_select_into(constants, scale, o, 3, per_arm, u[0], u[1], theta) == live


def test_kernel_arms_are_independent():
    ones = np.zeros(2)
    draws = _kernel_draws(ones, ones, 5000, np.random.default_rng(1))
    # Uniform(0,1) pairs: correlation SE is 1/sqrt(n)
    assert abs(np.corrcoef(draws.T)[0, 1]) <= 4 / np.sqrt(5000)


def _prob_first_wins(a1, b1, a2, b2):
    return integrate.quad(lambda x: stats.beta.pdf(x, a1, b1) * stats.beta.cdf(x, a2, b2), 0, 1)[0]


@pytest.mark.parametrize("sampler", ["numba", "pymc"])
def test_both_backends_choose_with_the_posterior_probability(sampler):
    policy = thompson.policy(sampler=sampler)
    state = policy.init(2)
    state = state._replace(extra=BetaCounts(np.array([6, 4]), np.array([4, 6])))
    p = _prob_first_wins(7, 5, 5, 7)  # P(theta_0 > theta_1)
    n = 1500
    rng = np.random.default_rng(9)
    wins = sum(policy.select(rng, state) == 0 for _ in range(n))
    assert abs(wins / n - p) <= 4 * np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("sampler", ["numba", "pymc"])
def test_per_arm_ranges_compare_draws_on_the_loss_scale(sampler):
    """App. B: arm k's draw theta_k of 1 - loss/s_k becomes s_k (theta_k - 1); with s = (1, 2) arm 0
    wins iff theta_0 > 2 theta_1 - 1."""
    policy = thompson.policy(sampler=sampler)
    state = policy.init(2, per_arm=True)
    state = state._replace(extra=BetaCounts(np.array([6, 4]), np.array([4, 6])), scale=np.array([1.0, 2.0]))
    p = integrate.quad(lambda x: stats.beta.pdf(x, 7, 5) * stats.beta.cdf((x + 1) / 2, 5, 7), 0, 1)[0]
    n = 1500
    rng = np.random.default_rng(9)
    wins = sum(policy.select(rng, state) == 0 for _ in range(n))
    assert abs(wins / n - p) <= 4 * np.sqrt(p * (1 - p) / n)
    assert p > _prob_first_wins(7, 5, 5, 7) + 0.05  # the rescaling changes the decision's law


def test_backends_agree_in_distribution():
    successes, failures = np.array([2, 30]), np.array([9, 12])
    rng = np.random.default_rng(5)
    pymc_beta = thompson._pymc_beta(2)
    n = 1500
    from_pymc = np.array([pymc_beta.draw(successes, failures, rng) for _ in range(n)])
    from_numba = _kernel_draws(successes, failures, n, rng)
    for k in range(2):
        _check_against_beta(from_pymc[:, k], successes[k] + 1, failures[k] + 1, n)
        # two-sample KS at the 0.1% level: 1.95 sqrt(2/n)
        assert stats.ks_2samp(from_pymc[:, k], from_numba[:, k]).statistic <= 1.95 * np.sqrt(2 / n)


def test_pymc_sampler_is_compiled_once_with_shared_parameters():
    from pytensor.compile import Function, SharedVariable

    a = thompson._pymc_beta(3)
    assert thompson._pymc_beta(3) is a
    assert isinstance(a.fn, Function)
    assert isinstance(a.alpha, SharedVariable)
    assert len(a.rngs) == 1
    # the same Generator state gives the same draws (the RNG is reseeded from it)
    d1 = a.draw(np.array([1, 2, 3]), np.array([3, 2, 1]), np.random.default_rng(0))
    d2 = a.draw(np.array([1, 2, 3]), np.array([3, 2, 1]), np.random.default_rng(0))
    np.testing.assert_array_equal(d1, d2)


@pytest.mark.slow
def test_pymc_posterior_is_the_conjugate_closed_form():
    # Beta(1, 1) prior x Bernoulli coins, as a PyMC model, is Beta(S + 1, F + 1) up to a constant.
    import pymc as pm

    coins = np.array([1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1])
    s, f = coins.sum(), len(coins) - coins.sum()
    with pm.Model() as model:
        pm.Beta("theta", alpha=1.0, beta=1.0)
        pm.Bernoulli("coins", p=model["theta"], observed=coins)
    logp = model.compile_logp(jacobian=False)
    grid = np.linspace(0.02, 0.98, 25)
    model_logp = np.array([logp({"theta_logodds__": np.log(x / (1 - x))}) for x in grid])
    closed = stats.beta.logpdf(grid, s + 1, f + 1)
    diff = model_logp - closed
    np.testing.assert_allclose(diff, diff[0], atol=1e-9)
    # the distribution Thompson compiles has the closed-form density itself
    dist_logp = pm.logp(pm.Beta.dist(alpha=s + 1.0, beta=f + 1.0), grid).eval()
    np.testing.assert_allclose(dist_logp, closed, rtol=1e-10)


# --- Generator consumption (what the replicated-run simulator relies on) -----------


def _trained_state(policy, rng, k=4, steps=30):
    state = policy.init(k)
    for i in range(steps):
        state = policy.update(rng, state, i % k, -0.1 * (i % k + 1), 0.0)
    return state


def test_select_takes_one_fixed_size_buffer():
    policy = thompson.policy(scale=1.0)
    state = _trained_state(policy, np.random.default_rng(0))
    rng, twin = np.random.default_rng(8), np.random.default_rng(8)
    arms = [policy.select(rng, state) for _ in range(50)]
    counts = state.extra
    replay = [select_kernel(counts.successes, counts.failures, twin.random(SELECT_UNIFORMS)) for _ in range(50)]
    assert arms == replay
    assert rng.random() == twin.random()  # nothing else was consumed
    assert SELECT_UNIFORMS == 2


def test_update_draws_one_coin_with_the_documented_rule():
    policy = thompson.policy(scale=2.0)
    state = policy.init(2)
    rng = np.random.default_rng(4)
    for i in range(200):
        twin = np.random.default_rng(0)
        twin.bit_generator.state = rng.bit_generator.state
        reward = -2.0 * (i % 5) / 4  # r = 1 - loss / 2 in {1, .75, .5, .25, 0}
        new = policy.update(rng, state, 1, reward, 0.0)
        success = twin.random() < 1.0 + reward / 2.0
        assert new.extra.successes[1] - state.extra.successes[1] == int(success)
        assert new.extra.failures[1] - state.extra.failures[1] == int(not success)
        assert rng.random() == twin.random()
        state = new
    # r = 1 always succeeds and r = 0 always fails: 40 of each among the 200
    assert state.extra.successes[1] >= 40 and state.extra.failures[1] >= 40


def test_update_uses_the_current_adaptive_scale():
    policy = thompson.policy()
    state = policy.init(2)
    rng = np.random.default_rng(0)
    state = policy.update(rng, state, 0, -1.0, 0.0)  # scale 1, r = 0: a failure
    assert state.extra.failures[0] == 1 and state.scale.tolist() == [1.0, 1.0]
    state = policy.update(rng, state, 1, 0.0, 0.0)  # loss 0: r = 1, a success
    assert state.extra.successes[1] == 1
    assert policy.update(rng, policy.init(1), 0, 0.0, 0.0).extra.successes[0] == 1  # scale 0: r = 1


def test_update_requires_a_generator_and_a_valid_reward():
    policy = thompson.policy(scale=1.0)
    state = policy.init(2)
    with pytest.raises(TypeError, match="The 'rng' parameter of thompson.update must be a numpy.random.Generator"):
        policy.update(None, state, 0, -0.5, 0.0)
    rng, twin = np.random.default_rng(2), np.random.default_rng(2)
    for bad in (0.5, np.nan, -1.5):  # positive, NaN, outside the declared range
        with pytest.raises(ValueError):
            policy.update(rng, state, 0, bad, 0.0)
    assert rng.random() == twin.random()  # errors are raised before any draw


def test_state_is_immutable():
    policy = thompson.policy(scale=1.0)
    rng = np.random.default_rng(1)
    s0 = policy.init(3)
    s1 = policy.update(rng, s0, 2, -0.0, 0.0)
    assert s0.extra.successes.sum() == 0 and s0.extra.failures.sum() == 0 and s0.n.sum() == 0
    assert s1.extra.successes[2] == 1


def test_pymc_policy_is_seed_deterministic():
    policy = thompson.policy(sampler="pymc", scale=1.0)
    state = _trained_state(policy, np.random.default_rng(0))
    a = [policy.select(np.random.default_rng(s), state) for s in range(20)]
    b = [policy.select(np.random.default_rng(s), state) for s in range(20)]
    assert a == b and policy.name == "thompson[pymc]"
