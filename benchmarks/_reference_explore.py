"""Frozen copy of the EXPLORE-m state machines (:mod:`pmcbandit.identification.explore_kernels`) and the
stopping-time simulator's machine loop as they were before the kernels timed as "new" by
``benchmarks.bench_explore_m --throughput`` (running sums and products of the levels recomputed from the
pulled arm on, all levels recomputed whenever the cutoff moves). Timed beside the package's on the same streams:
both must give the same runs, so the levels take the package's exponential
(:func:`pmcbandit.identification.explore_kernels._exp`) instead of the library's ``math.exp`` they called then,
whose last bit can differ from it. Not part of the package.
"""

from __future__ import annotations



import math

import numba
import numpy as np

from pmcbandit.arms.evidence._kernels import uniform
from pmcbandit.identification.base import MachineSpec
from pmcbandit.identification.explore_kernels import _exp
from pmcbandit.identification.simulate import FAMILIES, StoppingTimes, _check_means, _correct, _spec, _streams
from pmcbandit.policies.variates import std_normal as counter_normal

__all__ = ["simulate_stopping"]


# rules (spec[SP_RULE]); distinct from the LUCB family's codes in kernels.py
DIRECT, INCREMENTAL, HALVING, ADAPT, OCBA_M, RACING = 10, 11, 12, 13, 14, 15
PHASED = (DIRECT, INCREMENTAL, HALVING)
# arm status
ACTIVE, SELECTED, OUT, WAITING = 0, 1, 2, 3
# spec positions
SP_RULE, SP_M, SP_EPS, SP_DELTA, SP_WIDTH, SP_POLICY, SP_CAP, SP_RADIUS, SP_INIT, SP_ROUNDS, SP_STOP = range(11)
SPEC_SIZE = 11
# rows of ints / reals
I_N, I_RN, I_STATUS, I_ORDER, I_RANK, I_CAND, I_ON = range(7)
N_INT_ROWS = 7
R_TOTAL, R_SQ, R_RTOTAL, R_MEAN, R_DC, R_HK, R_EBB, R_EBA, R_RAD, R_VAR, R_SUM, R_KEEP, R_ALLOT = range(13)
N_REAL_ROWS = 13
# scalars
SC_T, SC_ROUND, SC_PICKED, SC_DONE, SC_READY, SC_CUT, SC_DHAT, SC_W, SC_LEFT, SC_OUT, SC_WITHIN, SC_CAND, SC_ON = \
    range(13)
N_SCALARS = 13

_LOG3 = math.log(3.0)


def new_state(spec: np.ndarray, schedule: np.ndarray, n_arms: int):
    """``(ints, reals, scal)`` of a machine before its first pull."""
    ints = np.zeros((N_INT_ROWS, n_arms), dtype=np.int64)
    reals = np.zeros((N_REAL_ROWS, n_arms))
    scal = np.zeros(N_SCALARS)
    reset(spec, schedule, ints, reals, scal)
    return ints, reals, scal


@numba.njit(cache=True)
def reset(spec, schedule, ints, reals, scal):
    """Put zeroed state arrays in the state before the first pull (in place: the simulator reuses them)."""
    n_arms = ints.shape[1]
    ints[:] = 0
    reals[:] = 0.0
    scal[:] = 0.0
    for i in range(n_arms):
        ints[I_ORDER, i] = i
        ints[I_RANK, i] = i
        reals[R_DC, i] = 1.0
    scal[SC_DHAT] = 1.0
    scal[SC_WITHIN] = 1.0
    rule = int(spec[SP_RULE])
    if rule == DIRECT or rule == INCREMENTAL or rule == HALVING:
        scal[SC_LEFT] = n_arms * schedule[0]
    elif rule == RACING:
        scal[SC_LEFT] = n_arms
    else:
        scal[SC_LEFT] = n_arms * spec[SP_INIT]


# ---------------------------------------------------------------------------------------------
# choosing


@numba.njit(cache=True, inline="always")
def wants_uniform(spec, scal):
    """Whether :func:`select` uses its uniform now (ADAPT and OCBA-m once every arm has its first pulls)."""
    rule = int(spec[SP_RULE])
    return (rule == ADAPT or rule == OCBA_M) and scal[SC_READY] > 0 and scal[SC_DONE] == 0


@numba.njit(cache=True, inline="always")
def select(spec, schedule, ints, reals, scal, u, out, work):
    """Write the next decision's arms (one pull each) to ``out``; return how many (module docstring).
    ``work`` is a float scratch array of one per arm; the state is not changed.
    """
    if scal[SC_DONE] > 0:
        return 0
    rule = int(spec[SP_RULE])
    n_arms = ints.shape[1]
    count = 0
    if rule == DIRECT or rule == INCREMENTAL or rule == HALVING or rule == RACING:
        target = 1 if rule == RACING else schedule[int(scal[SC_ROUND])]
        for i in range(n_arms):
            if ints[I_STATUS, i] == ACTIVE and ints[I_RN, i] < target:
                out[count] = i
                count += 1
        return count
    if scal[SC_READY] == 0:
        return _short_of(ints, spec[SP_INIT], out)
    if rule == OCBA_M:
        out[0] = _ocba_pick(ints, reals, scal, u, work)
        return 1
    policy = int(spec[SP_POLICY])
    if policy <= 2:  # the candidates, kept by observe in increasing order
        eligible = int(scal[SC_CAND])
        if eligible == 0:
            return 0
        out[0] = ints[I_CAND, min(int(u * eligible), eligible - 1)]
        return 1
    out[0] = _proportional_prefix(reals[R_SUM], reals[R_DC], scal[SC_W], u)
    return 1


@numba.njit(cache=True)
def _proportional(weights, total, u):
    """The arm ``i`` with ``sum(weights[:i]) <= u * total < sum(weights[:i+1])`` (the last positive one on
    round-off).
    """
    target = u * total
    acc = 0.0
    last = -1
    for i in range(weights.shape[0]):
        w = weights[i]
        if w > 0.0:
            acc += w
            last = i
            if target < acc:
                return i
    return last


@numba.njit(cache=True, inline="always")
def _proportional_prefix(prefix, weights, total, u):
    """:func:`_proportional` from the running sums ``prefix[i] = prefix[i-1] + weights[i]`` (``total`` the last),
    by bisection: the first ``i`` with ``u * total < prefix[i]`` is the arm the linear scan returns (its sums
    are the same numbers; a zero weight repeats the previous sum, so that arm is never the first).
    """
    target = u * total
    n = prefix.shape[0]
    if not target < prefix[n - 1]:  # round-off (or no positive weight): the last positive one
        for i in range(n - 1, -1, -1):
            if weights[i] > 0.0:
                return i
        return -1
    return _first_above(prefix, target)


@numba.njit(cache=True, inline="always")
def _first_above(prefix, target):
    """The first ``i`` with ``prefix[i] > target`` (non-decreasing ``prefix``, its last entry above ``target``)."""
    lo = 0
    hi = prefix.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if prefix[mid] > target:
            hi = mid
        else:
            lo = mid + 1
    return lo


@numba.njit(cache=True)
def _short_of(ints, pulls, out):
    """The arms pulled fewer than ``pulls`` times, written to ``out``; returns how many."""
    count = 0
    for i in range(ints.shape[1]):
        if ints[I_N, i] < pulls:
            out[count] = i
            count += 1
    return count


@numba.njit(cache=True)
def _uniform_candidates(spec, ints, reals, policy, out):
    """The arms pi_1 (fewer pulls than DIRECT's) or pi_2 (colliding bounds at delta/n) may pull, written to ``out``."""
    if policy == 1:
        return _short_of(ints, spec[SP_CAP], out)
    n_arms = ints.shape[1]
    count = 0
    m = int(spec[SP_M])
    eps = spec[SP_EPS]
    lowest_high = np.inf  # min over High of LB + epsilon
    highest_low = -np.inf  # max over Low of UB
    for i in range(n_arms):
        if ints[I_RANK, i] < m:
            lowest_high = min(lowest_high, reals[R_MEAN, i] - reals[R_RAD, i] + eps)
        else:
            highest_low = max(highest_low, reals[R_MEAN, i] + reals[R_RAD, i])
    for i in range(n_arms):
        mean = reals[R_MEAN, i]
        r = reals[R_RAD, i]
        if (mean - r + eps < highest_low) if ints[I_RANK, i] < m else (mean + r > lowest_high):
            out[count] = i
            count += 1
    return count


@numba.njit(cache=True, inline="always")
def _ocba_pick(ints, reals, scal, u, work):
    r"""OCBA-m's next arm (module docstring): proportional to the shortfall from the allotment.

    The allotments :math:`s_i^2/(\hat p_i - \hat c)^2` (``R_ALLOT``), their total (``SC_W``) and the arms on the
    cutoff (``I_ON``, ``SC_ON``) are kept by :func:`observe`; the shortfalls change with every pull.
    """
    n_arms = ints.shape[1]
    infinite = int(scal[SC_ON])
    if infinite > 0:  # an arm on the cutoff takes the whole allotment: uniform among those
        pick = min(int(u * infinite), infinite - 1)
        for i in range(n_arms):
            if ints[I_ON, i] > 0:
                if pick == 0:
                    return i
                pick -= 1
    total = scal[SC_W]
    if total == 0.0:  # every sample variance is zero: nothing to allot by
        return min(int(u * n_arms), n_arms - 1)
    scale = (scal[SC_T] + 1.0) / total
    if not 0.0 < scale < math.inf:  # the linear scan over every arm, as written
        short = 0.0
        for i in range(n_arms):
            work[i] = max(0.0, scale * reals[R_ALLOT, i] - ints[I_N, i])
            short += work[i]
        return _proportional(work, short, u)
    # The running sum of the shortfalls: an arm at or above its allotment adds nothing, so its sum is the
    # previous one and the bisection never stops at it (the linear scan's arm, from the same numbers).
    short = 0.0
    last = -1
    for i in range(n_arms):
        v = scale * reals[R_ALLOT, i] - ints[I_N, i]
        if v > 0.0:
            short += v
            last = i
        work[i] = short
    target = u * short
    if not target < short:
        return last
    return _first_above(work, target)


# ---------------------------------------------------------------------------------------------
# observing


@numba.njit(cache=True, inline="always")
def observe(spec, schedule, ints, reals, scal, arm, x):
    """Add reward ``x`` of ``arm`` and advance the machine (module docstring)."""
    ints[I_N, arm] += 1
    reals[R_TOTAL, arm] += x
    reals[R_SQ, arm] += x * x
    reals[R_MEAN, arm] = reals[R_TOTAL, arm] / ints[I_N, arm]
    scal[SC_T] += 1.0
    _refresh(spec, ints, reals, arm)
    rule = int(spec[SP_RULE])
    if rule == DIRECT or rule == INCREMENTAL or rule == HALVING or rule == RACING:
        target = 1 if rule == RACING else schedule[int(scal[SC_ROUND])]
        if scal[SC_DONE] == 0 and ints[I_STATUS, arm] == ACTIVE and ints[I_RN, arm] < target:
            ints[I_RN, arm] += 1
            reals[R_RTOTAL, arm] += x
            scal[SC_LEFT] -= 1.0
            if scal[SC_LEFT] <= 0.0:
                if rule == RACING:
                    _racing_round_end(spec, ints, reals, scal)
                else:
                    _phase_round_end(spec, schedule, ints, reals, scal)
        return
    if scal[SC_READY] == 0:
        if ints[I_N, arm] <= spec[SP_INIT]:
            scal[SC_LEFT] -= 1.0
        if scal[SC_LEFT] <= 0.0:
            _start_cutoff(spec, ints, reals, scal)
        return
    policy = int(spec[SP_POLICY])
    if policy == 1 and rule == ADAPT and ints[I_N, arm] == spec[SP_CAP]:
        _drop_candidate(ints, scal, arm)  # pi_1: the arm has DIRECT's number of pulls
    old_rank = ints[I_RANK, arm]
    _reposition(ints, reals, arm)
    m = int(spec[SP_M])
    c = _cutoff(ints, reals, m, spec[SP_EPS])
    tight = rule == OCBA_M or policy == 4
    first = arm
    if c != scal[SC_CUT] or (old_rank < m) != (ints[I_RANK, arm] < m):
        scal[SC_CUT] = c
        for i in range(ints.shape[1]):
            reals[R_DC, i] = _level(spec, ints, reals, i, c, tight)
        if rule == OCBA_M:
            for i in range(ints.shape[1]):
                _allot(ints, reals, scal, i, c)
        first = 0
    else:
        reals[R_DC, arm] = _level(spec, ints, reals, arm, c, tight)
        if rule == OCBA_M:
            _allot(ints, reals, scal, arm, c)
    _aggregate(reals, scal, first, _weight_row(rule, policy))
    if rule == ADAPT and policy == 2:
        _collisions(spec, ints, reals, scal)


@numba.njit(cache=True, inline="always")
def _refresh(spec, ints, reals, i):
    r"""The per-arm terms of the bounds, after arm i's statistics changed: Hoeffding's :math:`2n/R^2`,
    empirical Bernstein's :math:`b = \sqrt{2\hat V/n}` and :math:`4a = 12R/n` (only where the tight bounds
    are used: pi_4, OCBA-m), the radius ``SP_RADIUS``:math:`/\sqrt n` (only pi_2, RACING) and the sample
    variance. Terms a rule does not use stay 0.
    """
    n = ints[I_N, i]
    width = spec[SP_WIDTH]
    mean = reals[R_MEAN, i]
    spread = max(reals[R_SQ, i] - n * mean * mean, 0.0)  # sum of squared deviations
    rule = int(spec[SP_RULE])
    policy = int(spec[SP_POLICY])
    reals[R_HK, i] = 2.0 * n / (width * width)
    if rule == OCBA_M or (rule == ADAPT and policy == 4):  # only the tight bounds use EB's terms
        reals[R_EBB, i] = math.sqrt(2.0 * spread / n / n)  # EB's variance has divisor n
        reals[R_EBA, i] = 12.0 * width / n
    if rule == RACING or (rule == ADAPT and policy == 2):  # only these use the radius
        reals[R_RAD, i] = spec[SP_RADIUS] / math.sqrt(n)
    reals[R_VAR, i] = spread / (n - 1.0) if n > 1 else 0.0  # divisor n - 1 (the cutoff, OCBA-m)


@numba.njit(cache=True, inline="always")
def _level(spec, ints, reals, i, c, tight):
    r""":math:`\delta^c_{(i)}`: the probability level at which arm i's bound reaches the cutoff ``c``.

    :func:`~pmcbandit.identification.radii.hoeffding_level` and (``tight``) the smaller of it and
    :func:`~pmcbandit.identification.radii.empirical_bernstein_level`, from the cached per-arm terms:
    :math:`\exp(-\max(2nd^2/R^2,\; x^2 - \ln 3))`, capped at 1.
    """
    mean = reals[R_MEAN, i]
    d = mean + spec[SP_EPS] - c if ints[I_RANK, i] < spec[SP_M] else c - mean
    if d <= 0.0:
        return 1.0
    e = reals[R_HK, i] * d * d
    if tight:
        b = reals[R_EBB, i]
        x = 2.0 * d / (b + math.sqrt(b * b + reals[R_EBA, i] * d))
        e = max(e, x * x - _LOG3)
    return _exp(-e) if e > 0.0 else 1.0


@numba.njit(cache=True, inline="always")
def _weight_row(rule, policy):
    """The row whose running sums :func:`_aggregate` keeps: the levels (pi_3, pi_4), the allotments (OCBA-m)
    or none (-1).
    """
    if rule == OCBA_M:
        return R_ALLOT
    if policy >= 3:
        return R_DC
    return -1


@numba.njit(cache=True, inline="always")
def _aggregate(reals, scal, first, row):
    """:math:`\\delta^c = 1 - \\prod_i(1 - \\delta^c_{(i)})` and the total sampling weight ``SC_W`` (of ``row``,
    if ``row >= 0``), from their running products and sums (``R_KEEP``, ``R_SUM``) in arm order.

    Only the entries from arm ``first`` on, whose terms changed, are recomputed: the earlier ones are the
    same numbers, so every entry is the one a pass over all arms gives (the same operations in the same
    order), and so are the results.
    """
    n_arms = reals.shape[1]
    keep = reals[R_KEEP, first - 1] if first > 0 else 1.0
    if row < 0:
        for i in range(first, n_arms):
            keep *= 1.0 - reals[R_DC, i]
            reals[R_KEEP, i] = keep
    else:
        total = reals[R_SUM, first - 1] if first > 0 else 0.0
        for i in range(first, n_arms):
            keep *= 1.0 - reals[R_DC, i]
            total += reals[row, i]
            reals[R_KEEP, i] = keep
            reals[R_SUM, i] = total
        scal[SC_W] = total
    scal[SC_DHAT] = 1.0 - keep


@numba.njit(cache=True, inline="always")
def _allot(ints, reals, scal, i, c):
    """OCBA-m's allotment weight of arm ``i`` at the cutoff ``c``: :math:`s_i^2/(\\hat p_i - c)^2`, or 0 with the
    arm marked in ``I_ON`` (and counted in ``SC_ON``) when its mean is on the cutoff.
    """
    gap = reals[R_MEAN, i] - c
    on = 1 if gap == 0.0 else 0
    scal[SC_ON] += on - ints[I_ON, i]
    ints[I_ON, i] = on
    reals[R_ALLOT, i] = 0.0 if on else reals[R_VAR, i] / (gap * gap)


@numba.njit(cache=True)
def _drop_candidate(ints, scal, arm):
    """Remove ``arm`` from pi_1's candidates (``I_CAND``, increasing; ``SC_CAND`` of them)."""
    count = int(scal[SC_CAND])
    j = 0
    while j < count and ints[I_CAND, j] != arm:
        j += 1
    if j == count:
        return
    for k in range(j, count - 1):
        ints[I_CAND, k] = ints[I_CAND, k + 1]
    scal[SC_CAND] = count - 1


@numba.njit(cache=True)
def _collisions(spec, ints, reals, scal):
    """pi_2's candidates (arms whose bounds at :math:`\\delta/n` collide) into ``I_CAND``, their number into
    ``SC_CAND``: kept by :func:`observe` for :func:`select` and :func:`stopped`.
    """
    scal[SC_CAND] = _uniform_candidates(spec, ints, reals, 2, ints[I_CAND])


@numba.njit(cache=True, inline="always")
def _ahead(reals, a, b):
    """Whether arm ``a`` ranks above arm ``b`` (higher mean, ties by the lower index)."""
    ma = reals[R_MEAN, a]
    mb = reals[R_MEAN, b]
    return ma > mb or (ma == mb and a < b)


@numba.njit(cache=True, inline="always")
def _reposition(ints, reals, arm):
    """Move ``arm`` to its place in the ranking after its mean changed (adjacent swaps)."""
    order = ints[I_ORDER]
    rank = ints[I_RANK]
    r = rank[arm]
    while r > 0 and _ahead(reals, arm, order[r - 1]):
        other = order[r - 1]
        order[r] = other
        rank[other] = r
        r -= 1
    while r < order.shape[0] - 1 and _ahead(reals, order[r + 1], arm):
        other = order[r + 1]
        order[r] = other
        rank[other] = r
        r += 1
    order[r] = arm
    rank[arm] = r


@numba.njit(cache=True, inline="always")
def _cutoff(ints, reals, m, eps):
    """:math:`\\hat c` (module docstring); the midpoint when both standard errors are zero."""
    high = ints[I_ORDER, m - 1]
    low = ints[I_ORDER, m]
    se_high = math.sqrt(reals[R_VAR, high] / ints[I_N, high])  # R_VAR: cached by _refresh
    se_low = math.sqrt(reals[R_VAR, low] / ints[I_N, low])
    lo = reals[R_MEAN, low]
    hi = reals[R_MEAN, high] + eps
    if se_high + se_low > 0.0:
        return lo + (hi - lo) * se_low / (se_high + se_low)
    return 0.5 * (lo + hi)


@numba.njit(cache=True)
def _start_cutoff(spec, ints, reals, scal):
    """Every arm has its first pulls: rank them, set the cutoff and every :math:`\\delta^c_{(i)}`."""
    n_arms = ints.shape[1]
    order = np.argsort(-reals[R_MEAN], kind="mergesort")
    for r in range(n_arms):
        ints[I_ORDER, r] = order[r]
        ints[I_RANK, order[r]] = r
    rule = int(spec[SP_RULE])
    policy = int(spec[SP_POLICY])
    tight = rule == OCBA_M or policy == 4
    c = _cutoff(ints, reals, int(spec[SP_M]), spec[SP_EPS])
    scal[SC_CUT] = c
    for i in range(n_arms):
        reals[R_DC, i] = _level(spec, ints, reals, i, c, tight)
        if rule == OCBA_M:
            _allot(ints, reals, scal, i, c)
    _aggregate(reals, scal, 0, _weight_row(rule, policy))
    if rule == ADAPT and policy == 2:
        _collisions(spec, ints, reals, scal)
    else:  # pi_1's candidates: the arms short of DIRECT's number of pulls, in increasing order
        scal[SC_CAND] = _short_of(ints, spec[SP_CAP], ints[I_CAND])
    scal[SC_READY] = 1.0


@numba.njit(cache=True)
def _keep_best(ints, reals, keep, demoted):
    """Of the ACTIVE arms keep the ``keep`` with the best round means; the others get status ``demoted``."""
    n_arms = ints.shape[1]
    active = np.empty(n_arms, dtype=np.int64)
    count = 0
    for i in range(n_arms):
        if ints[I_STATUS, i] == ACTIVE:
            active[count] = i
            count += 1
    means = np.empty(count)
    for j in range(count):
        i = active[j]
        means[j] = reals[R_RTOTAL, i] / ints[I_RN, i]
    ranked = np.argsort(-means, kind="mergesort")
    for j in range(keep, count):
        ints[I_STATUS, active[ranked[j]]] = demoted
    return min(keep, count)


@numba.njit(cache=True)
def _phase_round_end(spec, schedule, ints, reals, scal):
    """The end of a round of DIRECT, INCREMENTAL (median elimination) or HALVING."""
    rule = int(spec[SP_RULE])
    n_arms = ints.shape[1]
    m = int(spec[SP_M])
    if rule == DIRECT:
        scal[SC_ROUND] = 1.0
        scal[SC_DONE] = 1.0
        return
    active = 0
    for i in range(n_arms):
        if ints[I_STATUS, i] == ACTIVE:
            active += 1
    if rule == HALVING:
        remaining = _keep_best(ints, reals, max((active + 1) // 2, m), OUT)
    else:
        remaining = _keep_best(ints, reals, (active + 1) // 2, WAITING)
    for i in range(n_arms):
        ints[I_RN, i] = 0
        reals[R_RTOTAL, i] = 0.0
    scal[SC_ROUND] += 1.0
    if rule == HALVING:
        if int(scal[SC_ROUND]) >= int(spec[SP_ROUNDS]):
            scal[SC_DONE] = 1.0
        else:
            scal[SC_LEFT] = remaining * schedule[int(scal[SC_ROUND])]
        return
    if remaining > 1:
        scal[SC_LEFT] = remaining * schedule[int(scal[SC_ROUND])]
        return
    # median elimination is down to one arm: INCREMENTAL selects it and starts over on the rest
    for i in range(n_arms):
        if ints[I_STATUS, i] == ACTIVE:
            ints[I_STATUS, i] = SELECTED
    scal[SC_PICKED] += 1.0
    if int(scal[SC_PICKED]) >= m:
        scal[SC_DONE] = 1.0
        return
    again = 0
    for i in range(n_arms):
        if ints[I_STATUS, i] == WAITING:
            ints[I_STATUS, i] = ACTIVE
            again += 1
    scal[SC_ROUND] = 0.0
    scal[SC_LEFT] = again * schedule[0]


@numba.njit(cache=True)
def _racing_round_end(spec, ints, reals, scal):
    """The end of a RACING round: select and discard on the round's bounds (module docstring)."""
    n_arms = ints.shape[1]
    m = int(spec[SP_M])
    scal[SC_ROUND] += 1.0
    if scal[SC_ROUND] > spec[SP_ROUNDS]:
        scal[SC_WITHIN] = 0.0
    lower = np.empty(n_arms)
    upper = np.empty(n_arms)
    for i in range(n_arms):
        lower[i] = reals[R_MEAN, i] - reals[R_RAD, i]
        upper[i] = reals[R_MEAN, i] + reals[R_RAD, i]
    picked = int(scal[SC_PICKED])
    dropped = int(scal[SC_OUT])
    verdict = np.zeros(n_arms, dtype=np.int64)
    for i in range(n_arms):
        if ints[I_STATUS, i] != ACTIVE:
            continue
        beats = 0
        loses = 0
        for j in range(n_arms):
            if j == i or ints[I_STATUS, j] != ACTIVE:
                continue
            if lower[i] > upper[j]:
                beats += 1
            if upper[i] < lower[j]:
                loses += 1
        if beats >= n_arms - m - dropped:
            verdict[i] = 1
        elif loses >= m - picked:
            verdict[i] = 2
    active = 0
    for i in range(n_arms):
        ints[I_RN, i] = 0
        if verdict[i] == 1:
            ints[I_STATUS, i] = SELECTED
            scal[SC_PICKED] += 1.0
        elif verdict[i] == 2:
            ints[I_STATUS, i] = OUT
            scal[SC_OUT] += 1.0
        elif ints[I_STATUS, i] == ACTIVE:
            active += 1
    picked = int(scal[SC_PICKED])
    if picked + active <= m:  # what is left must all be selected
        for i in range(n_arms):
            if ints[I_STATUS, i] == ACTIVE:
                ints[I_STATUS, i] = SELECTED
                scal[SC_PICKED] += 1.0
        picked = int(scal[SC_PICKED])
    if picked >= m:
        for i in range(n_arms):
            if ints[I_STATUS, i] == ACTIVE:
                ints[I_STATUS, i] = OUT
        scal[SC_DONE] = 1.0
        return
    scal[SC_LEFT] = active


# ---------------------------------------------------------------------------------------------
# stopping and the answer


@numba.njit(cache=True, inline="always")
def stopped(spec, ints, reals, scal, scratch):
    """The algorithm's stopping rule (module docstring); ``scratch`` is an int array of one per arm."""
    if scal[SC_DONE] > 0:
        return True
    rule = int(spec[SP_RULE])
    if rule == ADAPT:
        if scal[SC_READY] == 0:
            return False
        if scal[SC_DHAT] <= spec[SP_DELTA]:
            return True
        policy = int(spec[SP_POLICY])
        return policy <= 2 and scal[SC_CAND] <= 0  # pi_1, pi_2: no candidate left (kept by observe)
    if rule == OCBA_M:
        return scal[SC_READY] > 0 and spec[SP_STOP] > 0 and scal[SC_DHAT] <= spec[SP_DELTA]
    return False


@numba.njit(cache=True, inline="always")
def delta_hat(spec, scal):
    """:math:`\\delta^{\\hat c}` of ADAPT and OCBA-m (1 before every arm has its first pulls); NaN for the others."""
    rule = int(spec[SP_RULE])
    if rule == ADAPT or rule == OCBA_M:
        return scal[SC_DHAT]
    return np.nan


@numba.njit(cache=True)
def recommend_into(spec, ints, reals, out):
    """Rank every arm into ``out`` and return ``m``: the first ``m`` are the answer, best first.

    Selected arms come first, then arms still in play, then eliminated ones; within a group by
    empirical mean (arms never pulled last), ties by index.
    """
    n_arms = ints.shape[1]
    for i in range(n_arms):
        out[i] = i
    for a in range(1, n_arms):  # insertion sort: once per answer, on a few dozen arms
        j = a
        while j > 0 and _before(ints, reals, out[j], out[j - 1]):
            out[j], out[j - 1] = out[j - 1], out[j]
            j -= 1
    return int(spec[SP_M])


@numba.njit(cache=True)
def _group(ints, i):
    status = ints[I_STATUS, i]
    return 0 if status == SELECTED else (2 if status == OUT else 1)


@numba.njit(cache=True)
def _before(ints, reals, a, b):
    ga = _group(ints, a)
    gb = _group(ints, b)
    if ga != gb:
        return ga < gb
    ma = reals[R_MEAN, a] if ints[I_N, a] > 0 else -np.inf
    mb = reals[R_MEAN, b] if ints[I_N, b] > 0 else -np.inf
    return ma > mb or (ma == mb and a < b)


@numba.njit(cache=True)
def _reward(family, mean, scale, state):
    if family == 0:
        z, state[0] = counter_normal(state[0])
        return mean + scale * z
    if family == 1:
        return 1.0 if uniform(state) < mean else 0.0
    return mean + scale * np.sqrt(3.0) * (2.0 * uniform(state) - 1.0)


@numba.njit(cache=True)
def _nss(spec, ints, reals, means, ranked, low, high):
    """NSS of the machine's current answer: (sum of chosen means - ``low``) / (``high`` - ``low``)."""
    k = recommend_into(spec, ints, reals, ranked)
    total = 0.0
    for j in range(k):
        total += means[ranked[j]]
    return (total - low) / (high - low) if high > low else 1.0


@numba.njit(cache=True)
def _machine_run(spec, schedule, means, family, scale, states, u_state, table, uniforms, max_samples, ints, reals,
                 scal, order, grid, trace_dhat, trace_nss, low, high, honour_stop):
    """One replication of an EXPLORE-m machine (module docstring): returns ``(samples, stop_samples)``,
    ``stop_samples = -1`` when the stopping rule never held. The trace arrays are filled at ``grid``.
    """
    n_arms = means.shape[0]
    out = np.empty(n_arms, dtype=np.int64)
    work = np.empty(n_arms)
    scratch = np.empty(n_arms, dtype=np.int64)
    ranked = np.empty(n_arms, dtype=np.int64)
    used = 0
    g = 0
    t = 0
    stop_t = -1
    while True:
        if stop_t < 0 and stopped(spec, ints, reals, scal, scratch):
            stop_t = t
            if honour_stop:
                break
        if t >= max_samples:
            break
        u = 0.0
        if wants_uniform(spec, scal):
            u = uniforms[used] if uniforms.shape[0] > 0 else uniform(u_state)
            used += 1
        count = select(spec, schedule, ints, reals, scal, u, out, work)
        if count == 0:
            break
        for j in range(count):
            arm = out[j]
            if table.shape[1] > 0:
                x = table[arm, ints[I_N, arm]]
            else:
                x = _reward(family, means[arm], scale, states[arm])
            observe(spec, schedule, ints, reals, scal, arm, x)
            if t < order.shape[0]:
                order[t] = arm
            t += 1
            while g < grid.shape[0] and grid[g] <= t:
                trace_dhat[g] = delta_hat(spec, scal)
                trace_nss[g] = _nss(spec, ints, reals, means, ranked, low, high)
                g += 1
    if g < grid.shape[0]:
        last_dhat = delta_hat(spec, scal)
        last_nss = _nss(spec, ints, reals, means, ranked, low, high)
        for j in range(g, grid.shape[0]):
            trace_dhat[j] = last_dhat
            trace_nss[j] = last_nss
    return t, stop_t


@numba.njit(cache=True)
def _simulate_machine(spec, schedule, means, family, scale, seeds, u_seeds, max_samples, grid, honour_stop, low, high,
                      samples, stop_samples, chosen, counts, guaranteed, trace_dhat, trace_nss):
    n_arms = means.shape[0]
    no_table = np.zeros((n_arms, 0))
    no_uniforms = np.zeros(0)
    no_order = np.zeros(0, dtype=np.int64)
    ranked = np.empty(n_arms, dtype=np.int64)
    ints = np.zeros((N_INT_ROWS, n_arms), dtype=np.int64)
    reals = np.zeros((N_REAL_ROWS, n_arms))
    scal = np.zeros(N_SCALARS)
    for r in range(samples.shape[0]):
        reset(spec, schedule, ints, reals, scal)
        t, stop_t = _machine_run(spec, schedule, means, family, scale, seeds[r], u_seeds[r], no_table, no_uniforms,
                                 max_samples, ints, reals, scal, no_order, grid, trace_dhat[r], trace_nss[r], low,
                                 high, honour_stop)
        samples[r] = t
        stop_samples[r] = stop_t
        counts[r] = ints[I_N]
        guaranteed[r] = scal[SC_WITHIN] > 0
        k = recommend_into(spec, ints, reals, ranked)
        for j in range(k):
            chosen[r, j] = ranked[j]


def simulate_stopping(algorithm, means, reps=1000, *, family="gaussian", scale=0.5, random_seed=None,
                      max_samples=10**7) -> StoppingTimes:
    """:func:`pmcbandit.identification.simulate.simulate_stopping` for EXPLORE-m algorithms, old kernels."""
    owner = "simulate_stopping"
    means = _check_means(means, family, owner)
    spec = _spec(algorithm, means.size)
    assert isinstance(spec, MachineSpec)
    k = algorithm.k
    seeds, u_seeds = _streams(random_seed, reps, means.size, owner)
    samples = np.zeros(reps, dtype=np.int64)
    stop_samples = np.zeros(reps, dtype=np.int64)
    chosen = np.zeros((reps, k), dtype=np.int64)
    counts = np.zeros((reps, means.size), dtype=np.int64)
    guaranteed = np.ones(reps, dtype=np.bool_)
    none = np.zeros((reps, 0))
    _simulate_machine(spec.spec, spec.schedule, means, FAMILIES.index(family), float(scale), seeds, u_seeds,
                      int(max_samples), np.zeros(0, dtype=np.int64), True, 0.0, 1.0, samples, stop_samples, chosen,
                      counts, guaranteed, none, none)
    return StoppingTimes(samples, stop_samples >= 0, _correct(means, chosen, k, algorithm.tolerance), chosen, counts,
                         guaranteed)
