"""The simulator's numba loops: a block of replications advanced in lock-step (:func:`run_block`), or one
replication at a time (:func:`run_replications`: KL-UCB, Thompson sampling, round robin and a fixed arm,
which decide per replication anyway; each replication's randomness is then one contiguous row and its
state a few cache lines). Both make the same decisions.

All replications of a block are at the same round ``t``, so the policies' own
vectorised kernels (:func:`~pmcbandit.policies.base.normalised_moments` and an
index ``index(n, mean, var, t, params)``) are called once per round on the
concatenated per-arm statistics of the whole block; their array allocations are
then shared by the block instead of paid per decision. This needs an index that
is elementwise over arms (each arm's value depends on its own ``n``, ``mean``,
``var`` and on ``t``), which UCB1 and UCB-V are. KL-UCB's index is the same
function of each arm's ``(mean, f(t)/n)`` (:func:`~pmcbandit.policies.kl_ucb.grid_index`),
computed here from the arm's previous grid point (:func:`_kl_ucb_values`). Thompson sampling
decides per replication with its own allocation-free ``cached_select_into`` (each arm's Gamma
constants refreshed whenever its counts change) and ``resample_kernel``; one replication at a time
(:func:`_thompson_replications`) with the same arithmetic inlined, its Gammas drawn by :func:`_gamma_draw`.

Randomness comes from each replication's own streams (:mod:`pmcbandit.simulate.core`), the values the
streams would give one call at a time: pre-drawn by the caller in chunks, or, in :func:`run_replications`
for numpy ``PCG64`` streams, drawn inside the loop from the streams' states (:func:`_pcg64_random`, the
same doubles as ``Generator.random``).
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from pmcbandit.policies.centring import accumulate, centred_losses, recentre_due, recentred_scale, running_shift
from pmcbandit.policies.kl_ucb import GRID, exploration, grid_index
from pmcbandit.policies.base import argmax_random, normalised_moments, raise_range, to_loss_scale
from pmcbandit.policies.thompson import cached_select_into, expected_counts_kernel, refresh_constants, resample_kernel
from pmcbandit.policies.variates import _uniform, counter_key, gamma_constants, std_normal
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
def _predicted(p_old, p, d, j, kl_old, dkl):
    """Where the pulled arm's grid index will land: a second-order step from the old point ``q = j * GRID``.

    ``KL(p, q)`` is extrapolated from ``KL(p_old, q)`` by its Taylor expansion in the mean
    (``d/dp KL = log(p (1 - q) / (q (1 - p)))``, ``d2/dp2 KL = 1 / (p (1 - p))``), then one Halley step in
    ``q`` solves ``KL(p, q) = d``. ``dkl`` is ``d/dp KL`` at the old point when the caller kept it (the
    difference of the logarithms of :func:`_kl_logs`), NaN to compute it here. Only a starting point:
    :func:`~pmcbandit.policies.kl_ucb.grid_index` brackets the answer whatever it is given.
    """
    q = j * GRID
    dp = p - p_old
    if dkl != dkl:
        dkl = np.log(p_old * (1.0 - q) / (q * (1.0 - p_old)))
    g = kl_old + dkl * dp + dp * dp / (2.0 * p_old * (1.0 - p_old))
    # Halley's step q - f / (h' - f h'' / (2 h')) as q - f h' / (h'^2 - f h'' / 2), with h' = (q - p) r and
    # h'' = (p (1 - q)^2 + (1 - p) q^2) r^2, r = 1 / (q (1 - q)): two divisions.
    r = 1.0 / (q * (1.0 - q))
    slope = (q - p) * r
    curve = (p * (1.0 - q) * (1.0 - q) + (1.0 - p) * q * q) * r * r
    f = g - d
    denom = slope * slope - 0.5 * f * curve if slope > 0.0 else 0.0
    if not denom > 0.0:
        return j
    target = min(max(q - f * slope / denom, 0.0), 1.0)
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
                j = _predicted(seen_mean[i], mean, d, j, grid_kl[i], np.nan)
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


# Relative slack of :func:`_grid_search`'s bound on the computed KL one grid point below: thousands of times
# the rounding error of the computed values (a few units of 2^-53), far below the KL's rise over a grid step.
_CERTIFY_SLACK = 1e-12


@numba.njit(cache=True, nogil=True, inline="always")
def _kl_logs(p, q):
    """``(kl_bernoulli(p, q), log(p / q), log((1 - p) / (1 - q)))`` for ``0 < p < 1`` and ``q`` a grid point in
    ``[GRID, 1 - GRID]`` (not clipped there): :func:`~pmcbandit.policies.kl_ucb.kl_bernoulli`'s value, operation
    for operation, with its two logarithms.
    """
    l1 = np.log(p / q)
    l2 = np.log((1.0 - p) / (1.0 - q))
    out = 0.0
    out += p * l1
    out += (1.0 - p) * l2
    return out, l1, l2


@numba.njit(cache=True, nogil=True, inline="always")
def _grid_search(p, d, start, known_below):
    """``grid_index(p, d, start, known_below)``, and ``d/dp KL(p, q)`` at the answer ``q`` (NaN if not at hand).

    :func:`~pmcbandit.policies.kl_ucb.grid_index` starts by testing ``start`` and the grid point below it (when
    that is above its lower bracket ``lo``) and returns ``start`` when they straddle the root. Here ``KL`` at
    ``start`` is computed as it does (:func:`_kl_logs`); when it is above ``d``, the point below is shown to be at
    or below ``d`` without computing it where a bound allows: ``q -> KL(p, q)`` has derivative ``h' = -p/q +
    (1-p)/(1-q)`` and second derivative ``h'' = p/q^2 + (1-p)/(1-q)^2``, decreasing then increasing, so
    ``KL(p, q - GRID) <= KL(p, q) - h'(q) GRID + max h'' GRID^2 / 2``, with ``max h''`` over the step at most
    ``p/(q-GRID)^2 + (1-p)/(1-q)^2``; twice that term and a slack (:data:`_CERTIFY_SLACK`) cover the rounding of
    every computed value. Otherwise, or when the point below is above ``d``, ``grid_index`` decides (told that
    ``start`` is below the answer when its KL is not above ``d``). The answer is ``grid_index``'s.
    """
    lo = max(int(np.floor(p * _N_GRID)), known_below, 0)
    if 0.0 < p < 1.0 and lo < start < _N_GRID:
        q = start * GRID
        g, l1, l2 = _kl_logs(p, q)
        if g > d:
            if start - 1 > lo:
                a = p / q
                b = (1.0 - p) / (1.0 - q)
                below = q - GRID
                w = 1.0 / (below * (1.0 - q))
                curve = (p * (1.0 - q) * (1.0 - q) * w + b * below) * w  # p / below^2 + b / (1 - q)
                slack = _CERTIFY_SLACK * (1.0 + abs(p * l1) + abs((1.0 - p) * l2) + (a + b) * GRID)
                if not g - (b - a) * GRID + curve * GRID * GRID + slack <= d:
                    j, kl = grid_index(p, d, start, known_below)
                    return j, kl, np.nan
            return start, g, l1 - l2
        j, kl = grid_index(p, d, start + 1, start)
        return j, kl, np.nan
    j, kl = grid_index(p, d, start, known_below)
    return j, kl, np.nan


# Relative margin of an arm's kept ``f`` threshold (:func:`_kl_ucb_arm`): far above the rounding of
# ``KL * n * (1 - margin)`` and of ``f / n`` (a few units of 2^-53).
_STANDS_MARGIN = 1e-14


@numba.njit(cache=True, nogil=True, inline="always")
def _kl_ucb_arm(c, mean, n, f, loss, sc, kl_n, kl_state):
    """Arm ``c``'s KL-UCB grid index (as :func:`_kl_ucb_values`, for one arm) at ``f = f(t)``.

    Kept per arm (``kl_n``: grid point, count; ``kl_state``: KL there, mean, ``d/dp KL`` there for the next
    prediction (:func:`_predicted`; NaN: not at hand), the loss sum ``loss`` and scale ``sc`` the mean came
    from, and ``KL * n * (1 - 1e-14)``: while ``f`` is below it, ``f / n`` as computed is below the KL).
    """
    d = f / n
    j = kl_n[0, c]
    if j >= 0 and mean == kl_state[1, c] and n == kl_n[1, c]:
        if kl_state[0, c] > d:
            return j * GRID
        j, kl, dp = _grid_search(mean, d, j + 1, j)
    else:
        if j < 0:
            j = int(np.ceil(min(mean + np.sqrt(0.5 * d), 1.0) / GRID))
        elif 0.0 < mean < 1.0 and 0.0 < kl_state[1, c] < 1.0 and j < _N_GRID:
            j = _predicted(kl_state[1, c], mean, d, j, kl_state[0, c], kl_state[2, c])
        j, kl, dp = _grid_search(mean, d, j, -1)
    kl_n[0, c] = j
    kl_n[1, c] = n
    kl_state[0, c] = kl
    kl_state[1, c] = mean
    kl_state[2, c] = dp
    kl_state[3, c] = loss
    kl_state[4, c] = sc
    kl_state[5, c] = kl * n * (1.0 - _STANDS_MARGIN)
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


# Relative slack of :func:`_kl_ucb_exceeds`'s bound on the KL at the tested grid point: thousands of times the
# rounding error of the computed values (a few units of 2^-53 of the magnitudes summed), far below the bound's own
# second-order terms.
_EXCEEDS_SLACK = 1e-12


@numba.njit(cache=True, nogil=True, inline="always")
def _kl_ucb_exceeds(p, d, j, kl, p_old, dkl, top, w, per_arm):
    """Whether the grid index of an arm of mean ``p`` at ``d = f(t)/n`` (its value ``q`` or ``w (q - 1)``
    under per-arm ranges, ``w > 0``) is strictly above ``top``, shown without a logarithm; ``False`` when not shown.

    The arm's kept point ``q_j = j * GRID`` has the computed ``KL(p_old, q_j) = kl`` and ``d/dp KL = dkl``
    there (:func:`_grid_search`), ``p_old < q_j < 1``. ``KL`` is convex in ``p`` with ``d2/dp2 KL = 1/(p (1 -
    p))``, so ``KL(p, q_j) <= kl + dkl (p - p_old) + (p - p_old)^2 / (2 min p (1 - p))`` (the minimum over the
    two ends: ``p (1 - p)`` is concave). ``q -> KL(p, q)`` is convex and zero at ``p``, so at a grid point
    ``q_1`` in ``(p, q_j]`` it is at most the chord's value ``KL(p, q_j) (q_1 - p) / (q_j - p)`` and at most
    ``KL(p, q_j) - h'(q_1) (q_j - q_1)`` (the tangent at ``q_1``, ``h' = (q - p) / (q (1 - q))``). When the
    smaller bound plus a slack (:data:`_EXCEEDS_SLACK`, covering the rounding of every computed value and of
    the live policy's ``KL``) is at most ``d``, every grid point in ``(p, q_1]`` has a computed ``KL`` at most
    ``d``, so :func:`~pmcbandit.policies.kl_ucb.grid_index`'s answer is above ``q_1``. ``q_1`` is the grid point
    below the first one whose value exceeds ``top`` (values grow with the grid point, rounding included).
    """
    if top == -np.inf:
        return True
    if not top < np.inf:
        return False
    if per_arm:
        g = int(np.floor((top / w + 1.0) * _N_GRID)) + 1
        if g < 1:
            g = 1
        if g <= _N_GRID and not w * (g * GRID - 1.0) > top:
            g += 1
        if g > _N_GRID or not w * (g * GRID - 1.0) > top:
            return False
    else:
        if not top < 1.0:
            return False
        g = int(np.floor(top * _N_GRID)) + 1
    q1 = (g - 1) * GRID
    if q1 <= p:
        return True
    if g - 1 > j:
        return False
    q = j * GRID
    dp = p - p_old
    m = min(p_old * (1.0 - p_old), p * (1.0 - p))
    corr = dp * dp / (2.0 * m)
    lin = dkl * dp
    k_up = kl + lin + corr
    x = q1 - p
    tan = x * (q - q1) / (q1 * (1.0 - q1))
    bound = min(k_up - tan, k_up * x / (q - p))
    slack = _EXCEEDS_SLACK * (3.0 + abs(kl) + abs(lin) + corr + tan)
    return bound + slack <= d


@numba.njit(cache=True, nogil=True)
def _kl_ucb_decide(o, n_arms, f, per_arm, stats, scale, kl_n, kl_state, scratch, upper, pending, u):
    """KL-UCB's decision for the replication whose arms are ``o .. o + n_arms - 1``, at ``f = f(t)``.

    The decision of :func:`~pmcbandit.policies.base.argmax_random` on the arms' indices (mapped to the loss
    scale under per-arm ranges), as the live policy makes it. An arm whose count, loss sum and scale are
    those its kept point was computed from has the same mean (the same arithmetic on the same values), and
    its point stands without a division while ``f`` is below its kept threshold (:func:`_kl_ucb_arm`). An arm
    whose mean and count are unchanged but whose kept point no longer stands (``KL <= f/n``) only moves up;
    its search is skipped when an upper bound (:func:`_kl_ucb_upper`) puts it strictly below another arm's
    known index or lower bound (its kept point plus one grid point): it cannot be the maximum nor tie with
    it, so its value does not enter the argmax. Its kept point stays a valid start for a later search.
    The first arm whose count, loss sum or scale changed (the one pulled last) is searched last, and not at all
    when :func:`_kl_ucb_exceeds` shows its index strictly above every other arm's value or upper bound: it is
    then the only maximum, which ``argmax_random`` returns whatever its uniform. Its kept point, KL and
    ``d/dp KL`` stay those of its last search, the expansion point of the next bound and prediction.
    """
    widest = 0.0
    if per_arm:
        for i in range(n_arms):
            widest = max(widest, scale[o + i])
    floor = -np.inf
    any_pending = False
    deferred = -1
    d_mean = 0.0
    d_def = 0.0
    for i in range(n_arms):
        c = o + i
        pending[i] = False
        n = np.int64(stats[0, c])
        if n == 0:
            scratch[i] = np.inf
            floor = np.inf
            continue
        w = 1.0
        if per_arm:
            w = scale[c] if scale[c] > 0.0 else widest
        j = kl_n[0, c]
        loss = stats[1, c]
        sc = scale[c]
        if j >= 0 and n == kl_n[1, c] and loss == kl_state[3, c] and sc == kl_state[4, c]:
            mean = kl_state[1, c]
            if f < kl_state[5, c]:
                q = j * GRID
                value = (w * (q - 1.0)) if per_arm else q
                scratch[i] = value
                floor = max(floor, value)
                continue
        else:
            inv = 1.0 / sc if sc > 0.0 else 0.0
            mean = 1.0 - loss / n * inv
        d = f / n
        if j >= 0 and mean == kl_state[1, c] and n == kl_n[1, c] and not kl_state[0, c] > d and w > 0.0:
            lower = min(j + 1, _N_GRID) * GRID
            upper[i] = (w * (_kl_ucb_upper(mean, d, j, kl_state[0, c]) - 1.0)) if per_arm else \
                _kl_ucb_upper(mean, d, j, kl_state[0, c])
            pending[i] = True
            any_pending = True
            value = (w * (lower - 1.0)) if per_arm else lower
        elif (deferred < 0 and 0 <= j < _N_GRID and w > 0.0 and 0.0 < mean < 1.0 and 0.0 < kl_state[1, c] < 1.0
              and kl_state[2, c] == kl_state[2, c]):
            deferred = i  # searched below unless its index is shown to be above every other arm's
            d_mean = mean
            d_def = d
            continue
        else:
            q = _kl_ucb_arm(c, mean, n, f, loss, sc, kl_n, kl_state)
            value = (w * (q - 1.0)) if per_arm else q
            scratch[i] = value
        floor = max(floor, value)
    if deferred >= 0:
        top = -np.inf
        for i in range(n_arms):
            if i != deferred:
                top = max(top, upper[i] if pending[i] else scratch[i])
        c = o + deferred
        n = np.int64(stats[0, c])
        w = 1.0
        if per_arm:
            w = scale[c] if scale[c] > 0.0 else widest
        if _kl_ucb_exceeds(d_mean, d_def, kl_n[0, c], kl_state[0, c], kl_state[1, c], kl_state[2, c], top, w,
                           per_arm):
            return deferred  # the only maximum: argmax_random's answer whatever its uniform
        q = _kl_ucb_arm(c, d_mean, n, f, stats[1, c], scale[c], kl_n, kl_state)
        value = (w * (q - 1.0)) if per_arm else q
        scratch[deferred] = value
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
            q = _kl_ucb_arm(c, kl_state[1, c], n, f, stats[1, c], scale[c], kl_n, kl_state)
            if per_arm:
                w = scale[c] if scale[c] > 0.0 else widest
                scratch[i] = w * (q - 1.0)
            else:
                scratch[i] = q
    return argmax_random(scratch, u)


@intrinsic
def _umul128(typingctx, a, b):
    """``(hi, lo)``: the 128-bit product of two uint64 (one machine multiply)."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        wide = ir.IntType(128)
        p = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        hi = builder.trunc(builder.lshr(p, ir.Constant(wide, 64)), ir.IntType(64))
        lo = builder.trunc(p, ir.IntType(64))
        return context.make_tuple(builder, signature.return_type, (hi, lo))

    return sig, codegen


# numpy's PCG64: the 128-bit LCG multiplier (O'Neill 2014, ``PCG_DEFAULT_MULTIPLIER_128``), high and low words.
_PCG_MUL_HI = np.uint64(2549297995355413924)
_PCG_MUL_LO = np.uint64(4865540595714422341)
_INV_2_53 = 1.0 / 9007199254740992.0


@numba.njit(cache=True, nogil=True, inline="always")
def _pcg64_random(hi, lo, inc_hi, inc_lo):
    """``(u, hi', lo')``: ``Generator.random()`` of a ``PCG64`` stream whose 128-bit state is ``(hi, lo)`` and
    increment ``(inc_hi, inc_lo)``: the LCG step, the XSL-RR output of the new state (O'Neill 2014), its top 53
    bits as a double in [0, 1) (numpy's ``pcg64_next64`` and ``next_double``). The same double, and the same
    state after it, as the Generator.
    """
    h, lo_new = _umul128(lo, _PCG_MUL_LO)
    h = h + lo * _PCG_MUL_HI + hi * _PCG_MUL_LO
    lo_next = lo_new + inc_lo
    carry = np.uint64(1) if lo_next < lo_new else np.uint64(0)
    hi_next = h + inc_hi + carry
    v = hi_next ^ lo_next
    rot = hi_next >> np.uint64(58)
    out = (v >> rot) | (v << ((np.uint64(64) - rot) & np.uint64(63)))
    return np.int64(out >> np.uint64(11)) * _INV_2_53, hi_next, lo_next


# Margin of :func:`_gamma_draw`'s second squeeze, per unit of ``1 + d + x^2``: far above the rounding of the
# log test's two sides (a few units of 2^-53 times ``d`` and ``x^2``), far below the squeezed-off mass.
_SQUEEZE_MARGIN = 1e-10


@numba.njit(cache=True, nogil=True, inline="always")
def _gamma_draw(d, c, s):
    """:func:`~pmcbandit.policies.variates.gamma_from_constants`: the same Gamma variate and stream counter, with
    a second squeeze before the logarithms.

    Marsaglia & Tsang accept ``(x, u)`` when ``u < 1 - 0.0331 x^4`` or ``log u < x^2 / 2 + d (1 - v + log v)``,
    ``v = (1 + w)^3``, ``w = c x``, ``c = 1 / sqrt(9 d)``. The right-hand side is ``d psi(w)`` with
    ``psi(w) = 3 sum_{k >= 4} (-1)^(k+1) w^k / k``, at least ``-(3/4) w^4 / (1 - |w|) >= -1.5 w^4`` for
    ``|w| <= 1/2``; so ``u < 1 - 1.5 d c^4 x^4`` (there) implies ``log u <= -1.5 d w^4 <= d psi(w)``. With a
    margin (:data:`_SQUEEZE_MARGIN`) for the rounding of the computed sides, it implies the computed log test:
    it accepts only pairs the log test accepts, which it then need not evaluate (for the large shapes of a
    long run, the first squeeze sends about one pair in ten to the logarithms; this one about one in 10^5).
    """
    k4 = 1.5 * d * (c * c) * (c * c)
    while True:
        x, s = std_normal(s)
        w = c * x
        v = 1.0 + w
        if v <= 0.0:
            continue
        v = v * v * v
        u, s = _uniform(s)
        x2 = x * x
        if u < 1.0 - 0.0331 * x2 * x2:
            return d * v, s
        if -0.5 <= w <= 0.5 and u < 1.0 - k4 * x2 * x2 - _SQUEEZE_MARGIN * (1.0 + d + x2):
            return d * v, s
        if np.log(u) < 0.5 * x2 + d * (1.0 - v + np.log(v)):
            return d * v, s


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _thompson_replications(per_decision, n_arms, t_start, t_stop, stats, scale, centre, fixed_scale, per_arm,
                           running, origin, moments, inline, arm_inline, rng_state, policy_u, beta_counts,
                           constants, gamma_table, family, arm_params, draws, matrix, pos, checkpoints, ck_next,
                           pulls_at, estimate_at):
    """:func:`run_replications` for Thompson sampling (its arguments, less the other policies').

    Each round: :func:`~pmcbandit.policies.thompson.cached_select_into`'s draws and decision (inlined, the
    Gamma constants read from ``constants``), the observation, then Alg. 2's coin, which refreshes the
    changed count's constants from ``gamma_table``: the live policy's arithmetic, value for value.
    """
    n_rep = centre.shape[0]
    theta = np.empty(n_arms)
    successes = beta_counts[0]
    failures = beta_counts[1]
    ck_end = ck_next
    last = per_decision - 1
    for r in range(n_rep):
        ck = ck_next
        o = r * n_arms
        p_hi, p_lo, p_inc_hi, p_inc_lo = rng_state[r, 0], rng_state[r, 1], rng_state[r, 2], rng_state[r, 3]
        a_hi, a_lo, a_inc_hi, a_inc_lo = rng_state[r, 4], rng_state[r, 5], rng_state[r, 6], rng_state[r, 7]
        for t in range(t_start + 1, t_stop + 1):
            row = t - t_start - 1
            if inline:
                u0, p_hi, p_lo = _pcg64_random(p_hi, p_lo, p_inc_hi, p_inc_lo)
                u1, p_hi, p_lo = _pcg64_random(p_hi, p_lo, p_inc_hi, p_inc_lo)
                u_coin, p_hi, p_lo = _pcg64_random(p_hi, p_lo, p_inc_hi, p_inc_lo)
            else:
                base = row * per_decision
                u0 = policy_u[r, base]
                u1 = policy_u[r, base + 1]
                u_coin = policy_u[r, base + last]
            s = counter_key(u0, u1)
            for i in range(n_arms):
                j = o + i
                ga, s = _gamma_draw(constants[0, j], constants[1, j], s)
                gb, s = _gamma_draw(constants[2, j], constants[3, j], s)
                theta[i] = ga / (ga + gb)
            if per_arm:
                widest = 0.0
                for i in range(n_arms):
                    widest = max(widest, scale[o + i])
                for i in range(n_arms):
                    w = scale[o + i]
                    theta[i] = (w if w > 0.0 else widest) * (theta[i] - 1.0)
            k = argmax_random(theta, u0)
            if family == MATRIX:
                j = pos[r, k]
                if j >= matrix.shape[2]:
                    return -1 - r  # out of pre-drawn values: the caller raises
                pos[r, k] = j + 1
                u = matrix[r, k, j]
            elif arm_inline:
                u, a_hi, a_lo = _pcg64_random(a_hi, a_lo, a_inc_hi, a_inc_lo)
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
            # Alg. 2's coin on the normalised reward, under the scale that includes this loss.
            reward01 = 1.0 - loss / scale[c] if scale[c] > 0.0 else 1.0
            if u_coin < reward01:
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
                    _recentre(r, o, n_arms, t, True, per_arm, stats, scale, centre, origin,
                              moments, beta_counts, theta)
                    for i in range(o, o + n_arms):
                        refresh_constants(successes, failures, i, constants)
            if ck < checkpoints.shape[0] and t == checkpoints[ck]:
                total = 0.0
                for i in range(n_arms):
                    pulls_at[r, ck, i] = np.int64(stats[0, o + i])
                    total += stats[3, o + i]
                estimate_at[r, ck] = total / t
                ck += 1
        rng_state[r, 0], rng_state[r, 1], rng_state[r, 4], rng_state[r, 5] = p_hi, p_lo, a_hi, a_lo
        ck_end = ck
    return ck_end


@numba.njit(cache=True, nogil=True)
def run_replications(kind, fixed_arm, per_decision, n_arms, t_start, t_stop, f_t, stats, scale, centre,
                     fixed_scale, per_arm, running, origin, moments, inline, arm_inline, rng_state, policy_u,
                     beta_counts, constants, kl_state, kl_n, gamma_table, family, arm_params, draws, matrix, pos,
                     checkpoints, ck_next, pulls_at, estimate_at):
    """:func:`run_block` for KL-UCB, Thompson sampling, round robin and a fixed arm, one replication at a time.

    The same decisions as :func:`run_block` (the same per-arm arithmetic, replication by replication),
    each replication running its rounds on its own few cache lines. Randomness: with ``inline`` the
    policy's uniforms are drawn here, in the order the loop takes them, from the replication's policy
    stream, a numpy ``PCG64`` whose state is ``rng_state[r, 0:4]`` (high and low words of the state, then
    of the increment; :func:`_pcg64_random`), and with ``arm_inline`` also the arm draws (uniforms) from its
    arm stream, ``rng_state[r, 4:8]``; the states are advanced in place. Otherwise they are pre-drawn in
    rows: ``policy_u`` (B, M * rounds), decision ``i`` of replication ``r`` reading
    ``policy_u[r, i*M .. i*M + M - 1]``, and ``draws`` (B, rounds). ``f_t[i]`` is KL-UCB's exploration
    ``f(t_start + i + 1)`` (shared by the replications). State kept between chunks:
    ``constants`` (4, B*K), Thompson's Gamma constants (:func:`~pmcbandit.policies.thompson.refresh_constants`,
    valid on entry), with ``gamma_table`` (2, L) holding them for the whole counts ``0 .. L - 1``
    (:func:`gamma_table`); KL-UCB's ``kl_n`` (2, B*K) of int64, each arm's grid point (``-1``: none yet) and the
    count it was computed at, and ``kl_state`` (6, B*K), its KL there, the mean and what else
    :func:`_kl_ucb_arm` keeps.

    Returns the updated ``ck_next``, or ``-1 - r`` if replication ``r`` ran out of pre-drawn values.
    """
    if kind == THOMPSON:
        return _thompson_replications(per_decision, n_arms, t_start, t_stop, stats, scale, centre, fixed_scale,
                                      per_arm, running, origin, moments, inline, arm_inline, rng_state, policy_u,
                                      beta_counts, constants, gamma_table, family, arm_params, draws, matrix, pos,
                                      checkpoints, ck_next, pulls_at, estimate_at)
    n_rep = centre.shape[0]
    scratch = np.empty(n_arms)
    upper = np.empty(n_arms)
    pending = np.zeros(n_arms, dtype=np.bool_)
    ck_end = ck_next
    for r in range(n_rep):
        ck = ck_next
        o = r * n_arms
        p_hi, p_lo, p_inc_hi, p_inc_lo = rng_state[r, 0], rng_state[r, 1], rng_state[r, 2], rng_state[r, 3]
        a_hi, a_lo, a_inc_hi, a_inc_lo = rng_state[r, 4], rng_state[r, 5], rng_state[r, 6], rng_state[r, 7]
        for t in range(t_start + 1, t_stop + 1):
            row = t - t_start - 1
            if kind == KL_UCB:
                if inline:
                    u_tie, p_hi, p_lo = _pcg64_random(p_hi, p_lo, p_inc_hi, p_inc_lo)
                else:
                    u_tie = policy_u[r, row * per_decision]
                k = _kl_ucb_decide(o, n_arms, f_t[row], per_arm, stats, scale, kl_n, kl_state, scratch, upper,
                                   pending, u_tie)
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
            elif arm_inline:
                u, a_hi, a_lo = _pcg64_random(a_hi, a_lo, a_inc_hi, a_inc_lo)
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
                    _recentre(r, o, n_arms, t, False, per_arm, stats, scale, centre, origin,
                              moments, beta_counts, scratch)
            if ck < checkpoints.shape[0] and t == checkpoints[ck]:
                total = 0.0
                for i in range(n_arms):
                    pulls_at[r, ck, i] = np.int64(stats[0, o + i])
                    total += stats[3, o + i]
                estimate_at[r, ck] = total / t
                ck += 1
        rng_state[r, 0], rng_state[r, 1], rng_state[r, 4], rng_state[r, 5] = p_hi, p_lo, a_hi, a_lo
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
                              centre, fixed_scale, per_arm, running, origin, moments, inline, arm_inline, rng_state,
                              policy_u, beta_counts, constants, kl_state, kl_n, gamma_table, family, arm_params,
                              draws, matrix, pos, checkpoints, ck_next, pulls_at, estimate_at):
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
            fixed_scale, per_arm, running, origin[lo:hi], moments[:, a:b], inline, arm_inline, rng_state[lo:hi],
            policy_u[lo:hi], beta_counts[:, a:b], constants[:, a:b], kl_state[:, a:b], kl_n[:, a:b], gamma_table,
            family, arm_params, draws[lo:hi], matrix[lo:hi], pos[lo:hi], checkpoints, ck_next, pulls_at[lo:hi],
            estimate_at[lo:hi],
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
