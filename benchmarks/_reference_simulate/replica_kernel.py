"""The replicated-run simulator's numba loops before the replication loop drew its uniforms from the PCG64
states itself, before KL-UCB's one-evaluation grid search and before the Gammas' second squeeze (frozen copy,
timed beside the package's by ``benchmarks.bench_simulator``). Not part of the package.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.policies.centring import accumulate, centred_losses, recentre_due, recentred_scale, running_shift
from pmcbandit.policies.kl_ucb import GRID, exploration, grid_index
from pmcbandit.policies.base import argmax_random, normalised_moments, raise_range, to_loss_scale
from pmcbandit.policies.thompson import cached_select_into, expected_counts_kernel, refresh_constants, resample_kernel
from pmcbandit.policies.variates import gamma_constants
from pmcbandit.simulate.arms import MATRIX, observation

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


@numba.njit(cache=True, nogil=True, inline="always")
def _kl_ucb_arm(c, mean, n, f, grid_j, grid_kl, seen_mean, seen_n):
    """Arm ``c``'s KL-UCB grid index (as :func:`_kl_ucb_values`, for one arm) at ``f = f(t)``."""
    d = f / n
    j = grid_j[c]
    if j >= 0 and mean == seen_mean[c] and n == seen_n[c]:
        if grid_kl[c] > d:
            return j * GRID
        j, kl = grid_index(mean, d, j + 1, j)
    else:
        if j < 0:
            j = int(np.ceil(min(mean + np.sqrt(0.5 * d), 1.0) / GRID))
        elif 0.0 < mean < 1.0 and 0.0 < seen_mean[c] < 1.0 and j < _N_GRID:
            j = _predicted(seen_mean[c], mean, d, j, grid_kl[c])
        j, kl = grid_index(mean, d, j, -1)
    grid_j[c] = j
    grid_kl[c] = kl
    seen_mean[c] = mean
    seen_n[c] = n
    return j * GRID


@numba.njit(cache=True)
def gamma_table(size):
    """``gamma_constants(s + 1.0)`` of Thompson's whole counts ``s = 0 .. size - 1``, rows ``d`` and ``c``."""
    out = np.empty((2, size))
    for s in range(size):
        out[0, s], out[1, s] = gamma_constants(s + 1.0)
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _gamma_constants_of(count, table):
    """``gamma_constants(count + 1.0)``, read from ``table`` (:func:`gamma_table`) for a whole ``count``
    inside it: the same values, without a square root and a division on the round's dependency chain.
    """
    i = np.int64(count)
    if i == count and 0 <= i < table.shape[1]:
        return table[0, i], table[1, i]
    return gamma_constants(count + 1.0)


# Smallest KL slope at an arm's kept grid point for which its tangent bounds the index (see
# :func:`_kl_ucb_upper`): the computed KL's rounding error divided by it stays far below GRID.
_MIN_SLOPE = 1e-6


@numba.njit(cache=True, nogil=True, inline="always")
def _kl_ucb_upper(p, d, j, kl):
    """An upper bound on the grid index of an arm whose kept point ``j`` has ``KL(p, j * GRID) = kl <= d``.

    ``q -> KL(p, q)`` is convex, so its tangent at ``q_j = j * GRID`` lies below it: the tangent's root
    ``q_j + (d - kl) / slope`` is at or above the supremum, and the grid index is at most one grid point
    above that (one more covers the rounding of the computed KL). ``1.0`` when the slope is too flat.
    """
    if j >= _N_GRID:
        return 1.0
    q = j * GRID
    slope = (q - p) / (q * (1.0 - q))
    if not slope >= _MIN_SLOPE:
        return 1.0
    target = q + (d - kl) / slope
    if not target < 1.0:
        return 1.0
    return min(np.ceil(target * _N_GRID) + 2.0, float(_N_GRID)) * GRID


@numba.njit(cache=True, nogil=True)
def _kl_ucb_decide(o, n_arms, f, per_arm, stats, scale, grid_j, grid_kl, seen_mean, seen_n, scratch, upper,
                   pending, u):
    """KL-UCB's decision for the replication whose arms are ``o .. o + n_arms - 1``, at ``f = f(t)``.

    The decision of :func:`~pmcbandit.policies.base.argmax_random` on the arms' indices (mapped to the loss
    scale under per-arm ranges), as the live policy makes it. An arm whose mean and count are unchanged
    but whose kept point no longer stands (``KL <= f/n``) only moves up; its search is skipped when an
    upper bound (:func:`_kl_ucb_upper`) puts it strictly below another arm's known index or lower bound
    (its kept point plus one grid point): it cannot be the maximum nor tie with it, so its value does not
    enter the argmax. Its kept point stays a valid start for a later search.
    """
    widest = 0.0
    if per_arm:
        for i in range(n_arms):
            widest = max(widest, scale[o + i])
    floor = -np.inf
    any_pending = False
    for i in range(n_arms):
        c = o + i
        pending[i] = False
        n = np.int64(stats[0, c])
        if n == 0:
            scratch[i] = np.inf
            floor = np.inf
            continue
        inv = 1.0 / scale[c] if scale[c] > 0.0 else 0.0
        mean = 1.0 - stats[1, c] / n * inv
        w = 1.0
        if per_arm:
            w = scale[c] if scale[c] > 0.0 else widest
        j = grid_j[c]
        d = f / n
        if j >= 0 and mean == seen_mean[c] and n == seen_n[c] and not grid_kl[c] > d and w > 0.0:
            lower = min(j + 1, _N_GRID) * GRID
            upper[i] = (w * (_kl_ucb_upper(mean, d, j, grid_kl[c]) - 1.0)) if per_arm else \
                _kl_ucb_upper(mean, d, j, grid_kl[c])
            pending[i] = True
            any_pending = True
            value = (w * (lower - 1.0)) if per_arm else lower
        else:
            q = _kl_ucb_arm(c, mean, n, f, grid_j, grid_kl, seen_mean, seen_n)
            value = (w * (q - 1.0)) if per_arm else q
            scratch[i] = value
        floor = max(floor, value)
    if any_pending:
        for i in range(n_arms):
            if not pending[i]:
                continue
            if upper[i] < floor:
                scratch[i] = -np.inf  # strictly below the maximum: out of the argmax and its ties
                continue
            c = o + i
            n = np.int64(stats[0, c])
            q = _kl_ucb_arm(c, seen_mean[c], n, f, grid_j, grid_kl, seen_mean, seen_n)
            if per_arm:
                w = scale[c] if scale[c] > 0.0 else widest
                scratch[i] = w * (q - 1.0)
            else:
                scratch[i] = q
    return argmax_random(scratch, u)


@numba.njit(cache=True, nogil=True)
def run_replications(kind, fixed_arm, per_decision, n_arms, t_start, t_stop, f_t, stats, scale, centre,
                     fixed_scale, per_arm, running, origin, moments, policy_u, beta_counts, constants,
                     kl_state, kl_n, gamma_table, family, arm_params, draws, matrix, pos, checkpoints, ck_next,
                     pulls_at, estimate_at):
    """:func:`run_block` for KL-UCB, Thompson sampling, round robin and a fixed arm, one replication at a time.

    The same decisions as :func:`run_block` (the same per-arm arithmetic, replication by replication),
    with every replication's randomness in its own row: ``policy_u`` (B, M * rounds), decision ``i``
    of replication ``r`` reading ``policy_u[r, i*M .. i*M + M - 1]``, and ``draws`` (B, rounds).
    Each replication then runs its rounds on its own few cache lines. ``f_t[i]`` is KL-UCB's
    exploration ``f(t_start + i + 1)`` (shared by the replications). State kept between chunks:
    ``constants`` (4, B*K), Thompson's Gamma constants (:func:`~pmcbandit.policies.thompson.refresh_constants`,
    valid on entry), with ``gamma_table`` (2, L) holding them for the whole counts ``0 .. L - 1``
    (:func:`gamma_table`); KL-UCB's ``kl_n`` (2, B*K) of int64, each arm's grid point (``-1``: none yet) and the
    count it was computed at, and ``kl_state`` (2, B*K), its KL there and the mean (:func:`_kl_ucb_values`).

    Returns the updated ``ck_next``, or ``-1 - r`` if replication ``r`` ran out of pre-drawn values.
    """
    n_rep = centre.shape[0]
    scratch = np.empty(n_arms)
    upper = np.empty(n_arms)
    pending = np.zeros(n_arms, dtype=np.bool_)
    successes = beta_counts[0]
    failures = beta_counts[1]
    grid_kl = kl_state[0]
    seen_mean = kl_state[1]
    grid_j = kl_n[0]
    seen_n = kl_n[1]
    ck_end = ck_next
    for r in range(n_rep):
        ck = ck_next
        for t in range(t_start + 1, t_stop + 1):
            row = t - t_start - 1
            o = r * n_arms
            base = row * per_decision
            if kind == KL_UCB:
                k = _kl_ucb_decide(o, n_arms, f_t[row], per_arm, stats, scale, grid_j, grid_kl, seen_mean, seen_n,
                                   scratch, upper, pending, policy_u[r, base])
            elif kind == THOMPSON:
                k = cached_select_into(constants, scale, o, n_arms, per_arm, policy_u[r, base],
                                       policy_u[r, base + 1], scratch)
            elif kind == ROUND_ROBIN:
                k = 0
                for i in range(1, n_arms):
                    if stats[0, o + i] < stats[0, o + k]:
                        k = i
            else:
                k = fixed_arm
            if family == MATRIX:
                j = pos[r, k]
                if j >= matrix.shape[2]:
                    return -1 - r  # out of pre-drawn values: the caller raises
                pos[r, k] = j + 1
                u = matrix[r, k, j]
            else:
                u = draws[r, row]
            x = observation(family, arm_params[k, 0], arm_params[k, 1], arm_params[k, 2], u)
            if centre[r] != centre[r]:
                centre[r] = x
            d = x - centre[r]
            loss = d * d
            c = o + k
            if loss > scale[c] and not fixed_scale:
                if per_arm:
                    scale[c] = loss
                else:
                    for i in range(o, o + n_arms):
                        scale[i] = loss
            if kind == THOMPSON:
                # Alg. 2's coin on the normalised reward, under the scale that includes this loss.
                reward01 = 1.0 - loss / scale[c] if scale[c] > 0.0 else 1.0
                if policy_u[r, base + per_decision - 1] < reward01:
                    successes[c] += 1
                    constants[0, c], constants[1, c] = _gamma_constants_of(successes[c], gamma_table)
                else:
                    failures[c] += 1
                    constants[2, c], constants[3, c] = _gamma_constants_of(failures[c], gamma_table)
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
            if ck < checkpoints.shape[0] and t == checkpoints[ck]:
                total = 0.0
                for i in range(n_arms):
                    pulls_at[r, ck, i] = np.int64(stats[0, o + i])
                    total += stats[3, o + i]
                estimate_at[r, ck] = total / t
                ck += 1
        ck_end = ck
    return ck_end


@numba.njit(cache=True, nogil=True, inline="always")
def _part(p, parts, n_rep):
    """Replications ``lo .. hi - 1`` of part ``p`` of ``parts`` (contiguous, sizes differing by at most one)."""
    return p * n_rep // parts, (p + 1) * n_rep // parts


@numba.njit(cache=True, nogil=True)
def _first_failure(codes, starts):
    """The serial loop's return code from the parts' ``codes``: ``-1 - r`` for the first replication ``r`` that
    failed (parts in replication order), else the checkpoint position every part reached.
    """
    for p in range(codes.shape[0]):
        if codes[p] < 0:
            return codes[p] - starts[p]
    return codes[0]


@numba.njit(cache=True, nogil=True, parallel=True)
def run_replications_parallel(parts, kind, fixed_arm, per_decision, n_arms, t_start, t_stop, f_t, stats, scale,
                              centre, fixed_scale, per_arm, running, origin, moments, policy_u, beta_counts,
                              constants, kl_state, kl_n, gamma_table, family, arm_params, draws, matrix, pos,
                              checkpoints, ck_next, pulls_at, estimate_at):
    """:func:`run_replications` on numba threads: ``prange`` over ``parts`` contiguous parts of the block.

    Each part runs :func:`run_replications` on its replications' columns and rows (a replication's state and
    randomness are its own), so every value is the serial loop's, whatever the number of parts or threads.
    Returns what the serial loop returns (``-1 - r`` for the first replication ``r`` out of pre-drawn values).
    """
    n_rep = centre.shape[0]
    codes = np.empty(parts, dtype=np.int64)
    starts = np.empty(parts, dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _part(p, parts, n_rep)
        a, b = lo * n_arms, hi * n_arms
        starts[p] = lo
        codes[p] = run_replications(
            kind, fixed_arm, per_decision, n_arms, t_start, t_stop, f_t, stats[:, a:b], scale[a:b], centre[lo:hi],
            fixed_scale, per_arm, running, origin[lo:hi], moments[:, a:b], policy_u[lo:hi], beta_counts[:, a:b],
            constants[:, a:b], kl_state[:, a:b], kl_n[:, a:b], gamma_table, family, arm_params, draws[lo:hi],
            matrix[lo:hi], pos[lo:hi], checkpoints, ck_next, pulls_at[lo:hi], estimate_at[lo:hi],
        )
    return _first_failure(codes, starts)


@numba.njit(cache=True, nogil=True, parallel=True)
def run_block_parallel(parts, kind, index, params, kl_c, fixed_arm, per_decision, n_arms, t_start, t_stop, stats,
                       scale, centre, fixed_scale, per_arm, running, origin, moments, policy_u, beta_counts, family,
                       arm_params, draws, matrix, pos, checkpoints, ck_next, pulls_at, estimate_at):
    """:func:`run_block` on numba threads: ``prange`` over ``parts`` contiguous parts of the block, each advanced
    in lock-step by :func:`run_block` (the decisions do not depend on which replications share a block).
    """
    n_rep = centre.shape[0]
    codes = np.empty(parts, dtype=np.int64)
    starts = np.empty(parts, dtype=np.int64)
    for p in numba.prange(parts):
        lo, hi = _part(p, parts, n_rep)
        a, b = lo * n_arms, hi * n_arms
        starts[p] = lo
        codes[p] = run_block(
            kind, index, params, kl_c, fixed_arm, per_decision, n_arms, t_start, t_stop, stats[:, a:b], scale[a:b],
            centre[lo:hi], fixed_scale, per_arm, running, origin[lo:hi], moments[:, a:b], policy_u[:, lo:hi],
            beta_counts[:, a:b], family, arm_params, draws[:, lo:hi], matrix[lo:hi], pos[lo:hi], checkpoints,
            ck_next, pulls_at[lo:hi], estimate_at[lo:hi],
        )
    return _first_failure(codes, starts)
