"""The replication loop's KL-UCB shortcut (``kernel._kl_ucb_exceeds``) decides as the full grid search does.

A pulled arm's search is skipped when a bound without logarithms shows its grid index strictly above every
other arm's value (then it is the only maximum, whatever the tie-break uniform). The bound must never claim
that on an index at or below the other value: checked here against ``grid_index`` on adversarial cases
(other values at and next to the new index, exploration budgets a rounding away from the KL at the tested
point, means near 0 and 1, per-arm loss-scale values), and by whole runs against the lock-step loop, which
searches every index.
"""

import numpy as np
import pytest

from pmcbandit.policies.kl_ucb import GRID, grid_index, kl_bernoulli
from pmcbandit.simulate import Gaussian, ScaledBernoulli, log_checkpoints, replication_generators
from pmcbandit.simulate import core, kernel

N_GRID = round(1.0 / GRID)


def _kept_point(p, d):
    """An arm's kept state after a direct search: grid point, its computed KL and d/dp KL there."""
    j, kl = grid_index(p, d, 0, -1)
    j2, kl2, dkl = kernel._grid_search(p, d, j, -1)
    assert (j2, kl2) == (j, kl)
    return j, kl, dkl


def _case(rng):
    """A kept point at ``(p_old, d_old)`` and the arm's mean and budget some pulls later."""
    regime = rng.integers(3)
    if regime == 0:
        p_old = rng.uniform(0.01, 0.99)
    elif regime == 1:
        p_old = 10.0 ** rng.uniform(-6, -1)
    else:
        p_old = 1.0 - 10.0 ** rng.uniform(-6, -1)
    n = int(10.0 ** rng.uniform(0.5, 6))
    f = rng.uniform(1.0, 20.0)
    d_old = f / n
    pulls = int(rng.integers(1, 50))
    rewards = rng.uniform(0.0, 1.0, pulls)
    p = (p_old * n + rewards.sum()) / (n + pulls)
    if rng.random() < 0.3:
        p = p_old + (p - p_old) * 10.0 ** rng.uniform(-8, 0)
    d = (f + rng.uniform(0.0, 0.01)) / (n + pulls)
    return p_old, d_old, p, d


def _kept_cases(rng, n: int):
    """Up to ``n`` cases of :func:`_case` with means inside (0, 1), each with its arm's kept grid point."""
    for _ in range(n):
        p_old, d_old, p, d = _case(rng)
        if not (0.0 < p < 1.0 and 0.0 < p_old < 1.0):
            continue
        j, kl, dkl = _kept_point(p_old, d_old)
        if j < N_GRID and dkl == dkl:
            yield p_old, d_old, p, d, j, kl, dkl


def test_shortcut_never_claims_an_index_at_or_below_the_other_value():
    rng = np.random.default_rng(20261126)
    shown = checked = near = 0
    for p_old, d_old, p, d, j, kl, dkl in _kept_cases(rng, 40000):
        jt, _ = grid_index(p, d, 0, -1)
        per_arm = rng.random() < 0.3
        w = 10.0 ** rng.uniform(-3, 3) if per_arm else 1.0
        # The other arm's value: at the new index, a few grid points below or above, far below, one ulp off.
        k = int(rng.choice([0, 0, 1, 1, 2, 3, -1, int(rng.integers(4, 3000))]))
        g = min(max(jt - k, 0), N_GRID)
        top = w * (g * GRID - 1.0) if per_arm else g * GRID
        top = float(top + rng.choice([0.0, 0.0, 1.0, -1.0]) * np.spacing(abs(top) + 1e-300))
        value = w * (jt * GRID - 1.0) if per_arm else jt * GRID
        claim = kernel._kl_ucb_exceeds(p, d, j, kl, p_old, dkl, top, w, per_arm)
        checked += 1
        if claim:
            shown += 1
            near += k == 1
            assert value > top, (p_old, d_old, p, d, top, per_arm, w)
    assert checked > 20000
    assert 0.1 * checked < shown < checked  # the shortcut fires often, and not on every case
    assert near > 100  # also one grid point below the index


def test_shortcut_at_a_budget_one_rounding_from_the_tested_point():
    """``d`` a relative 1e-15 below or above the computed KL at the grid point the bound must clear."""
    rng = np.random.default_rng(7)
    shown = 0
    for p_old, d_old, p, _, j, kl, dkl in _kept_cases(rng, 20000):
        g = int(np.floor(p * N_GRID)) + int(rng.integers(1, 5000))
        if g >= N_GRID:
            continue
        d = kl_bernoulli(p, g * GRID) * (1.0 + rng.choice([-1e-15, 0.0, 1e-15, 1e-13]))
        if not d > 0.0:
            continue
        jt, _ = grid_index(p, d, 0, -1)
        for top in (g * GRID, np.nextafter(g * GRID, 0.0), (g - 1) * GRID, np.nextafter((g - 1) * GRID, 1.0)):
            if kernel._kl_ucb_exceeds(p, d, j, kl, p_old, dkl, top, 1.0, False):
                shown += 1
                assert jt * GRID > top, (p_old, d_old, p, d, top)
    assert shown > 100


def test_no_shortcut_over_an_unexplored_arm_and_always_over_none():
    j, kl, dkl = _kept_point(0.6, 0.01)
    assert not kernel._kl_ucb_exceeds(0.6001, 0.0099, j, kl, 0.6, dkl, np.inf, 1.0, False)
    assert not kernel._kl_ucb_exceeds(0.6001, 0.0099, j, kl, 0.6, dkl, 1.0, 1.0, False)
    assert not kernel._kl_ucb_exceeds(0.6001, 0.0099, j, kl, 0.6, dkl, 0.0, 2.0, True)
    assert kernel._kl_ucb_exceeds(0.6001, 0.0099, j, kl, 0.6, dkl, -np.inf, 1.0, False)
    assert kernel._kl_ucb_exceeds(0.6001, 0.0099, j, kl, 0.6, dkl, 0.5, 1.0, False)  # below the mean


@pytest.mark.parametrize("arms, bounds, ranges", [
    (ScaledBernoulli(0.5, [0.4, 0.8]), (0.0, 1.0), "auto"),
    (ScaledBernoulli(0.5, [0.4, 0.45, 0.8]), (0.0, 1.0), "auto"),
    (Gaussian(5.0, [1.0, 1.1, 2.0]), None, "per_arm"),
])
def test_replication_loop_with_shortcut_equals_full_search(arms, bounds, ranges):
    """Whole runs, near-tied arms included: the replication loop (shortcut) and the lock-step loop (every index
    searched by ``grid_index``) make the same pulls and sums."""
    from pmcbandit.policies import get_policy
    from pmcbandit.policies.rewards import centre_rule, per_arm_ranges

    policy = get_policy("kl_ucb")
    kind, index, params, fixed_arm, per_decision = core._dispatch(policy, arms.n_arms)
    rule = centre_rule("auto", bounds, policy.recentre is not None, "simulate")
    n, n_rep = 20000, 4
    scale0, centre0 = ((bounds[1] - bounds[0]) ** 2, bounds[0]) if bounds else (0.0, np.nan)
    setup = dict(kind=kind, index=index, params=params, kl_c=params[0], fixed_arm=fixed_arm,
                 per_decision=per_decision, n_rounds=n, chunk=4096, arms=arms, checkpoints=log_checkpoints(n, 40),
                 centre0=centre0, scale0=scale0, fixed=bounds is not None,
                 per_arm=per_arm_ranges(ranges, bounds, policy.ranges, "simulate"), running=rule == "running")

    def streams():
        return [(rep.spawn(1)[0], rep.spawn(1)[0]) for rep in replication_generators(13, n_rep)]

    by_rep = core._run_block(setup, range(n_rep), streams())
    lockstep = core._run_block(setup, range(n_rep), streams(), lockstep=True)
    for x, y in zip(by_rep, lockstep):
        np.testing.assert_array_equal(x, y)
    assert (by_rep[0][:, 0].min(axis=1) > 10).all()  # every arm pulled: the decisions were contested
