"""The replicated-run simulator's numba loop with every policy in lock-step (frozen copy, timed beside the
package's by ``benchmarks.bench_simulator``). Not part of the package.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.policies.centring import accumulate, centred_losses, recentre_due, recentred_scale, running_shift
from pmcbandit.policies.kl_ucb import GRID, exploration, grid_index
from pmcbandit.policies.base import argmax_random, normalised_moments, raise_range, to_loss_scale
from pmcbandit.policies.thompson import _decide, expected_counts_kernel, refresh_constants, resample_kernel
from pmcbandit.policies.variates import counter_key, gamma_from_constants
from pmcbandit.simulate.arms import MATRIX, observation



@numba.njit(cache=True)
def cached_select_into(constants, scale, offset, n_arms, per_arm, u0, u1, theta):
    """The package's ``thompson.cached_select_into`` as it was: a call of its own (not inlined)."""
    s = counter_key(u0, u1)
    for i in range(n_arms):
        j = offset + i
        ga, s = gamma_from_constants(constants[0, j], constants[1, j], s)
        gb, s = gamma_from_constants(constants[2, j], constants[3, j], s)
        theta[i] = ga / (ga + gb)
    return _decide(scale, offset, n_arms, per_arm, u0, theta)


# Grid points in [0, 1] of KL-UCB's index.
_N_GRID = round(1.0 / GRID)

# How a policy chooses (the simulator's dispatch on the Policy it is given).
INDEX, ROUND_ROBIN, FIXED, THOMPSON, KL_UCB = 0, 1, 2, 3, 4


@numba.njit(cache=True, nogil=True)
def no_index(n, mean, var, t, params):
    """Index argument of the loop for policies that have none (never called)."""
    return np.zeros(n.shape[0])


@numba.njit(cache=True, nogil=True, inline="never")
def _play_unexplored_first(values, pulls):
    """Set the index of never-pulled arms to +inf (``index_policy``'s select); return whether any is left.

    Kept out of line: inlined into the round loop it slowed every round ~2x.
    """
    any_left = False
    for i in range(values.shape[0]):
        if pulls[i] == 0:
            values[i] = np.inf
            any_left = True
    return any_left


@numba.njit(cache=True, nogil=True, inline="always")
def _predicted(p_old, p, d, j, kl_old):
    """Where the pulled arm's grid index will land: a second-order step from the old point ``q = j * GRID``.

    ``KL(p, q)`` is extrapolated from ``KL(p_old, q)`` by its Taylor expansion in the mean
    (``d/dp KL = log(p (1 - q) / (q (1 - p)))``, ``d2/dp2 KL = 1 / (p (1 - p))``), then one Halley step in
    ``q`` solves ``KL(p, q) = d``. Only a starting point: :func:`~pmcbandit.policies.kl_ucb.grid_index`
    brackets the answer whatever it is given.
    """
    q = j * GRID
    dp = p - p_old
    g = kl_old + np.log(p_old * (1.0 - q) / (q * (1.0 - p_old))) * dp + dp * dp / (2.0 * p_old * (1.0 - p_old))
    slope = (q - p) / (q * (1.0 - q))
    curve = p / (q * q) + (1.0 - p) / ((1.0 - q) * (1.0 - q))
    f = g - d
    denom = slope - 0.5 * f * curve / slope if slope > 0.0 else 0.0
    if not denom > 0.0:
        return j
    target = min(max(q - f / denom, 0.0), 1.0)
    return int(np.ceil(target * _N_GRID))


@numba.njit(cache=True, nogil=True)
def _kl_ucb_values(pulls, loss_sum, scale, t, c, grid_j, grid_kl, seen_mean, seen_n, values):
    """KL-UCB's index of every arm of the block, as :func:`pmcbandit.policies.kl_ucb.index` gives it.

    The mean is :func:`~pmcbandit.policies.base.normalised_moments`'s, operation for operation.
    An arm keeps its grid point ``grid_j`` and ``KL(mean, grid_j * GRID)`` in ``grid_kl``: while its
    ``(mean, n)`` is unchanged (``seen_*``) and ``grid_kl > d`` (``d`` only grows with ``t``), the index
    stands; otherwise the search restarts from the previous point (``-1``: never computed).
    """
    f = exploration(t, c)
    for i in range(pulls.shape[0]):
        n = pulls[i]
        if n == 0:
            values[i] = np.inf
            continue
        inv = 1.0 / scale[i] if scale[i] > 0.0 else 0.0
        m = loss_sum[i] / n
        mean = 1.0 - m * inv
        d = f / n
        j = grid_j[i]
        if j >= 0 and mean == seen_mean[i] and n == seen_n[i]:
            if grid_kl[i] > d:
                values[i] = j * GRID
                continue
            j, kl = grid_index(mean, d, j + 1, j)
        else:
            if j < 0:
                j = int(np.ceil(min(mean + np.sqrt(0.5 * d), 1.0) / GRID))
            elif 0.0 < mean < 1.0 and 0.0 < seen_mean[i] < 1.0 and j < _N_GRID:
                j = _predicted(seen_mean[i], mean, d, j, grid_kl[i])
            j, kl = grid_index(mean, d, j, -1)
        grid_j[i] = j
        grid_kl[i] = kl
        seen_mean[i] = mean
        seen_n[i] = n
        values[i] = j * GRID


@numba.njit(cache=True, nogil=True)
def _recentre(r, o, n_arms, t, thompson, per_arm, stats, scale, centre, origin, moments, beta_counts, scratch):
    """Replication ``r``'s centre to its running mean after round ``t``; its losses re-scored
    (``pmcbandit.policies.centring``) with the arithmetic of ``RewardRule.recentre`` and the policies'
    ``recentre`` (``recentre_state``; Thompson's ``expected_counts_kernel``).
    """
    m = moments[:, o:o + n_arms]
    d = running_shift(m[0], t)
    centre[r] = origin[r] + d
    centred_losses(stats[0, o:o + n_arms], m, d, stats[1, o:o + n_arms], stats[2, o:o + n_arms], scratch)
    recentred_scale(scratch, per_arm, scale[o:o + n_arms])
    if thompson:
        expected_counts_kernel(stats[0, o:o + n_arms], stats[1, o:o + n_arms], scale[o:o + n_arms],
                               beta_counts[0, o:o + n_arms], beta_counts[1, o:o + n_arms])


@numba.njit(nogil=True)
def run_block(kind, index, params, kl_c, fixed_arm, per_decision, n_arms,
              t_start, t_stop, stats, scale, centre, fixed_scale, per_arm, running, origin, moments,
              policy_u, beta_counts, family, arm_params, draws, matrix, pos,
              checkpoints, ck_next, pulls_at, estimate_at):
    """Advance every replication of a block from round ``t_start + 1`` to ``t_stop``.

    Parameters
    ----------
    kl_c : float
        KL-UCB's ``c`` (its ``params[0]``) when ``kind == KL_UCB``.
    stats : ndarray, shape (5, B*K)
        Rows: pulls ``n`` (as float), loss sum, squared-loss sum, sum of
        observations, sum of squared observations; replication ``r`` owns
        columns ``r*K .. r*K+K-1``. Updated in place.
    scale : ndarray, shape (B*K,)
        Loss normaliser of every arm of every replication (columns as ``stats``).
        Unless ``fixed_scale`` it grows to the running maximum of the losses: of
        the arm's own when ``per_arm`` (App. B, and indices are then mapped back
        to the loss scale), else of the replication's (all its ``K`` entries equal).
    centre : ndarray, shape (B,)
        Reward centre ``c`` per replication (loss ``(X-c)^2``); NaN until set by
        the first observation when no bounds are known (:mod:`pmcbandit.policies.rewards`).
    running : bool
        Move the centre to the running mean after round 2, 4, 8, ... and re-score
        every arm's losses (and reset Thompson's counts), as the live loop does
        (:mod:`pmcbandit.policies.centring`); ``origin`` (B,) holds each replication's first
        observation and ``moments`` (6, B*K) the power sums about it.
    policy_u : ndarray, shape (M * rounds, B)
        The policy streams' next uniforms, replication ``r`` in column ``r``; decision ``i``
        takes rows ``i*M .. i*M + M - 1`` in order: one for an index policy's tie-break;
        for Thompson (``M = SELECT_UNIFORMS + 1``) its ``select`` buffer, then the uniform of
        its resampling coin (the order of ``policies.thompson``). Round-major, so that one
        round of the block reads contiguous rows.
    beta_counts : ndarray of float64, shape (2, B*K)
        Thompson's successes and failures.
    draws : ndarray, shape (rounds, B)
        Arm-stream draws: round ``t_start + i + 1`` of replication ``r`` uses
        ``draws[i, r]``, whichever arm it pulls (the paper's ``Z_t``, Sec. 6.1).
    matrix, pos : ndarray, shape (B, K, L) and (B, K)
        For ``family == MATRIX``: the pre-drawn values, and how many of arm
        ``k``'s were used (``draws`` is then unused).
    checkpoints, ck_next
        Rounds at which ``pulls_at`` and ``estimate_at`` (the running mean of all
        observations) are recorded; ``ck_next`` is the next one to fill.

    Not cached on disk: numba keys a function that takes another jitted function
    (``index``) by that function's identity, so a cache entry never hits in a new
    process and would only pile up.

    Returns
    -------
    int
        The updated ``ck_next``, or ``-1 - r`` if replication ``r`` ran out of
        pre-drawn values.
    """
    n_rep = centre.shape[0]
    k_all = n_rep * n_arms
    pulls = np.zeros(k_all, dtype=np.int64)
    for i in range(k_all):
        pulls[i] = np.int64(stats[0, i])
    values = np.empty(k_all)
    unexplored = True
    scratch = np.empty(n_arms)
    scratch_n = np.empty(n_arms, dtype=np.int64)
    # KL-UCB's per-arm grid points (:func:`_kl_ucb_values`); -1: not computed in this chunk yet.
    grid_j = np.full(k_all, -1, dtype=np.int64)
    grid_kl = np.empty(k_all)
    seen_mean = np.empty(k_all)
    seen_n = np.zeros(k_all, dtype=np.int64)
    successes = beta_counts[0]
    failures = beta_counts[1]
    constants = np.empty((4, k_all))
    if kind == THOMPSON:
        for i in range(k_all):
            refresh_constants(successes, failures, i, constants)
    for t in range(t_start + 1, t_stop + 1):
        row = t - t_start - 1
        if kind == INDEX or kind == KL_UCB:
            if kind == INDEX:
                mean, var = normalised_moments(pulls, stats[1], stats[2], scale)
                values = index(pulls, mean, var, t, params)
            else:
                _kl_ucb_values(pulls, stats[1], scale, t, kl_c, grid_j, grid_kl, seen_mean, seen_n, values)
            if per_arm:
                to_loss_scale(values, scale, n_arms)
            if unexplored:
                unexplored = _play_unexplored_first(values, pulls)
        for r in range(n_rep):
            o = r * n_arms
            if kind == INDEX or kind == KL_UCB:
                # Copying into a scratch array costs less than a slice's reference counting.
                for i in range(n_arms):
                    scratch[i] = values[o + i]
                k = argmax_random(scratch, policy_u[row * per_decision, r])
            elif kind == THOMPSON:
                base = row * per_decision
                k = cached_select_into(constants, scale, o, n_arms, per_arm, policy_u[base, r],
                                       policy_u[base + 1, r], scratch)
            elif kind == ROUND_ROBIN:
                for i in range(n_arms):
                    scratch_n[i] = pulls[o + i]
                k = np.argmin(scratch_n)
            else:
                k = fixed_arm
            if family == MATRIX:
                j = pos[r, k]
                if j >= matrix.shape[2]:
                    return -1 - r  # out of pre-drawn values: the caller raises
                pos[r, k] = j + 1
                u = matrix[r, k, j]
            else:
                u = draws[row, r]
            x = observation(family, arm_params[k, 0], arm_params[k, 1], arm_params[k, 2], u)
            if centre[r] != centre[r]:
                centre[r] = x
            d = x - centre[r]
            loss = d * d
            c = o + k
            if loss > scale[c] and not fixed_scale:
                raise_range(scale[o:o + n_arms], k, loss, per_arm)
            if kind == THOMPSON:
                # Alg. 2's coin on the normalised reward, under the scale that includes this loss.
                reward01 = 1.0 - loss / scale[c] if scale[c] > 0.0 else 1.0
                resample_kernel(successes, failures, c, reward01, policy_u[row * per_decision + per_decision - 1, r])
                refresh_constants(successes, failures, c, constants)
            pulls[c] += 1
            stats[0, c] += 1.0
            stats[1, c] += loss
            stats[2, c] += loss * loss
            stats[3, c] += x
            stats[4, c] += x * x
            if running:
                if origin[r] != origin[r]:
                    origin[r] = x
                accumulate(moments[:, o:o + n_arms], k, x - origin[r])
                if recentre_due(t):
                    _recentre(r, o, n_arms, t, kind == THOMPSON, per_arm, stats, scale, centre, origin,
                              moments, beta_counts, scratch)
                    if kind == THOMPSON:
                        for i in range(o, o + n_arms):
                            refresh_constants(successes, failures, i, constants)
        if ck_next < checkpoints.shape[0] and t == checkpoints[ck_next]:
            for r in range(n_rep):
                o = r * n_arms
                total = 0.0
                for i in range(n_arms):
                    pulls_at[r, ck_next, i] = pulls[o + i]
                    total += stats[3, o + i]
                estimate_at[r, ck_next] = total / t
            ck_next += 1
    return ck_next
