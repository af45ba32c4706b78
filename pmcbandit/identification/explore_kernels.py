r"""Numba state machines of the EXPLORE-m algorithms, shared by the live loop and the simulator.

One implementation of each rule (Kalyanakrishnan & Stone 2010, "Efficient Selection of Multiple
Bandit Arms", and the baselines they compare): the algorithms' ``select``/``update``/``stop``
(:mod:`pmcbandit.identification._explore`) and the stopping-time simulator
(:mod:`pmcbandit.identification.simulate`) call these functions on the same arrays.

A machine's state is three arrays (:func:`new_state`): ``ints[row, arm]`` (pull counts, counts
in the current round, status, the arms ranked by empirical mean and each arm's rank, pi_1's or pi_2's
candidates in increasing order, OCBA-m's arms on the cutoff),
``reals[row, arm]`` (sums, sums of squares, round sums, means, the per-arm
:math:`\delta^c_{(i)}`, per-arm terms of the bounds that change only when the arm is pulled, OCBA-m's
allotments, the running sums of the sampling weights and running products of
:math:`1 - \delta^c_{(i)}` in arm order, pi_2's bound per arm and the pull counts as floats)
and ``scal`` (scalars: observations, round, arms picked, cutoff, :math:`\delta^{\hat c}`, pi_2's extremes, ...).
:func:`observe` keeps every derived quantity current, recomputing a running sum or product only from
the first arm whose term changed: each entry is the number a pass over all arms in arm order gives (the
same operations in the same order), so decisions do not depend on what was kept. Its settings are
``spec`` (a float array, ``SP_*`` positions) and
``schedule`` (pulls per arm in each round, :mod:`pmcbandit.identification.schedules`).

:func:`select` writes the arms of the next decision to ``out`` (one pull each) and returns how
many (0: nothing left to pull); randomised rules use the one uniform ``u`` they are given
(:func:`wants_uniform` says when). :func:`observe` adds a reward and advances the machine (a
round's end, the cutoff and :math:`\delta^{\hat c}`). :func:`stopped` is the stopping rule.

Rules
-----
DIRECT, INCREMENTAL, HALVING (Alg. 1–3)
    a round pulls every active arm its round's number of times (each decision: every active arm
    still short of it, once); at the round's end the elimination happens on the round's own
    means (median elimination keeps :math:`\lceil s/2\rceil`, HALVING :math:`\max(\lceil s/2\rceil, m)`).
ADAPT (Sec. 4), policies :math:`\pi_1`–:math:`\pi_4`
    after ``SP_INIT`` pulls of every arm: High = the empirical top ``m``; the cutoff
    :math:`\hat c` divides :math:`(\hat p_{(m+1)}, \hat p_{(m)} + \epsilon)` in proportion to
    the standard errors of arms :math:`(m+1)` and :math:`(m)` (from Chen et al. 2008), i.e.
    :math:`\hat c = \hat p_{(m+1)} + (\hat p_{(m)} + \epsilon - \hat p_{(m+1)})\,
    se_{(m+1)}/(se_{(m)} + se_{(m+1)})`; :math:`\delta^c_{(i)}` inverts the bound so that a High
    arm's :math:`LB + \epsilon` or a Low arm's :math:`UB` equals :math:`c` (Hoeffding; for
    :math:`\pi_4` the smaller of Hoeffding and empirical Bernstein,
    :func:`~pmcbandit.identification.radii.empirical_bernstein_level`), and
    :math:`\delta^{\hat c} = 1 - \prod_i (1 - \delta^{\hat c}_{(i)})`. The run stops when
    :math:`\delta^{\hat c} \le \delta`. :math:`\pi_1` pulls uniformly among arms whose Hoeffding
    width at :math:`\delta/n` exceeds :math:`\epsilon/2` (i.e. pulled fewer than DIRECT's
    number), :math:`\pi_2` uniformly among arms whose bounds at :math:`\delta/n` collide, and
    both also stop when no arm is left to pull (DIRECT's and the collision-free guarantee);
    :math:`\pi_3`, :math:`\pi_4` pull arm :math:`(i)` with probability proportional to
    :math:`\delta^{\hat c}_{(i)}`.
OCBA-m (Chen et al. 2008, as K&S Sec. 5 run it)
    after ``SP_INIT`` (:math:`n_0`) pulls of every arm, arm :math:`i` is allotted
    :math:`s_i^2/(\hat p_i - \hat c)^2` of the budget (the cutoff :math:`\hat c` above, as K&S
    run it, :math:`\epsilon` included; sample standard deviations :math:`s_i`). An arm near
    :math:`\hat c` takes nearly the whole allotment and the others can starve for long stretches:
    K&S's "premature plateauing" at small :math:`n_0`. With batch :math:`\Delta = 1`, the next pull goes to an
    arm with probability proportional to its shortfall :math:`\max(0, (t+1)\,w_i/\sum w - n_i)`,
    so only arms below their allotment are pulled. It has no stopping rule of its own: with
    ``SP_STOP = 1`` it stops when ADAPT's :math:`\delta^{\hat c}` (tightest bounds) is
    :math:`\le\delta`, K&S's measure computed on its samples.
RACING (Heidrich-Meisner & Igel 2009, as K&S Sec. 5 describe it)
    every round pulls each undecided arm once; with two-sided Hoeffding bounds at
    :math:`\delta/(nR)` (a union over the :math:`n` arms and :math:`R` rounds:
    radius :math:`R_w\sqrt{\ln(2nR/\delta)/2T_i}`), an undecided arm is selected when its lower
    bound exceeds the upper bounds of at least :math:`n - m - |D|` undecided arms and discarded
    when its upper bound is below the lower bounds of at least :math:`m - |S|`; it ends when
    :math:`m` arms are selected. Past :math:`R` rounds it continues with the same bounds (K&S's
    choice); the guarantee then no longer holds (``SC_WITHIN`` records it).

Ties in empirical means are broken by arm index (the lower index ranks higher).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core.extending import intrinsic

__all__ = [
    "DIRECT",
    "INCREMENTAL",
    "HALVING",
    "ADAPT",
    "OCBA_M",
    "RACING",
    "PHASED",
    "ACTIVE",
    "SELECTED",
    "OUT",
    "WAITING",
    "new_state",
    "reset",
    "select",
    "observe",
    "stopped",
    "wants_uniform",
    "recommend_into",
    "delta_hat",
    "SPEC_SIZE",
]

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
R_TOTAL, R_SQ, R_RTOTAL, R_MEAN, R_DC, R_HK, R_EBB, R_EBA, R_RAD, R_VAR, R_SUM, R_KEEP, R_ALLOT, R_BND, R_NF = \
    range(15)
N_REAL_ROWS = 15
# scalars
SC_T, SC_ROUND, SC_PICKED, SC_DONE, SC_READY, SC_CUT, SC_DHAT, SC_W, SC_LEFT, SC_OUT, SC_WITHIN, SC_CAND, SC_ON, \
    SC_LH, SC_HL = range(15)
N_SCALARS = 15

_LOG3 = math.log(3.0)


@intrinsic
def _sqrt(typingctx, x):
    """The square root as the processor's instruction (``llvm.sqrt``), where numba's ``math.sqrt`` calls a
    library function: IEEE 754 rounds both correctly, so they are the same number.
    """
    if not isinstance(x, (types.Float, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.sqrt", [ir.DoubleType()])
        return builder.call(fn, [context.cast(builder, args[0], signature.args[0], types.float64)])

    return types.float64(x), codegen


@intrinsic
def _div(typingctx, a, b):
    """``a / b`` of two floats as the processor's division (``fdiv``), where numba's ``/`` first tests ``b`` for zero
    (a branch that keeps a loop from running on vectors): IEEE 754 rounds both correctly, the same number; a zero
    ``b`` gives an infinity or NaN instead of an exception.
    """
    if not (isinstance(a, types.Float) and isinstance(b, types.Float)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fdiv(context.cast(builder, args[0], signature.args[0], types.float64),
                            context.cast(builder, args[1], signature.args[1], types.float64))

    return types.float64(a, b), codegen


@intrinsic
def _bits(typingctx, x):
    """The 64 bits of a float as an integer (a reinterpretation, no conversion)."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(x), codegen


@intrinsic
def _from_bits(typingctx, k):
    """The float whose 64 bits are the integer ``k`` (the inverse of :func:`_bits`)."""
    if not isinstance(k, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(context.cast(builder, args[0], signature.args[0], types.int64), ir.DoubleType())

    return types.float64(k), codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 to 32 bits: k * _LN2_HI is exact for |k| < 2**21
_LN2_LO = 1.90821492927058770002e-10  # ln 2 - _LN2_HI
_ROUND = 6755399441055744.0  # 1.5 * 2**52: adding and subtracting it rounds to the nearest integer
_ROUND_BITS = 0x4338000000000000  # its bits: those of (_ROUND + k) minus these are k
_T2, _T3, _T4, _T5, _T6, _T7, _T8, _T9, _T10, _T11, _T12, _T13 = (1.0 / math.factorial(j) for j in range(2, 14))


@numba.njit(cache=True, inline="always")
def _exp(x):
    r"""``exp(x)`` for :math:`x \le 0` without a branch or a call, so that a loop of them runs on vectors; within
    one unit in the last place of the correctly rounded value (``tests/identification/test_explore_kernels_fast.py``
    compares it with the value of decimal arithmetic at 50 digits), 0 below :math:`-746`, exactly 1 at 0.

    Cody & Waite's reduction :math:`x = k\ln 2 + r`, :math:`|r| \le \ln 2/2`, with :math:`\ln 2` in two parts
    (Cody & Waite 1980, *Software Manual for the Elementary Functions*, ch. 6); :math:`e^r` by its Taylor
    polynomial of degree 13 (remainder below :math:`10^{-17}` relative) in Estrin's scheme, the leading
    :math:`1 + r` added last; :math:`2^k` applied as two powers of two, so that a subnormal result is rounded
    once. Every operation is an IEEE 754 one in a fixed order (no fused multiply-add, no library call): the live
    loop and the simulator, which both call it, get the same number, on vectors or one at a time.
    """
    x = max(x, -746.0)
    z = x * _LOG2E + _ROUND
    kd = z - _ROUND
    r = (x - kd * _LN2_HI) - kd * _LN2_LO
    r2 = r * r
    r4 = r2 * r2
    tail = ((_T2 + r * _T3) + r2 * (_T4 + r * _T5)) + r4 * ((_T6 + r * _T7) + r2 * (_T8 + r * _T9)) \
        + (r4 * r4) * ((_T10 + r * _T11) + r2 * (_T12 + r * _T13))
    p = 1.0 + (r + r2 * tail)
    k = _bits(z) - _ROUND_BITS
    half = k >> 1
    return p * _from_bits((half + 1023) << 52) * _from_bits((k - half + 1023) << 52)


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

    ADAPT's and OCBA-m's one-arm decisions are inlined into the caller; the rounds of the others and the first
    pulls are a call (:func:`_select_rounds`).
    """
    if scal[SC_DONE] > 0:
        return 0
    rule = int(spec[SP_RULE])
    if (rule == ADAPT or rule == OCBA_M) and scal[SC_READY] > 0:
        if rule == OCBA_M:
            out[0] = _ocba_pick(ints, reals, scal, u, work)
            return 1
        if int(spec[SP_POLICY]) <= 2:  # the candidates, kept by observe in increasing order
            eligible = int(scal[SC_CAND])
            if eligible == 0:
                return 0
            out[0] = ints[I_CAND, min(int(u * eligible), eligible - 1)]
            return 1
        out[0] = _draw_levels(reals, scal[SC_W], u)
        return 1
    return _select_rounds(spec, schedule, ints, scal, out)


@numba.njit(cache=True)
def _select_rounds(spec, schedule, ints, scal, out):
    """:func:`select` of DIRECT, INCREMENTAL, HALVING and RACING, and of ADAPT's and OCBA-m's first pulls."""
    rule = int(spec[SP_RULE])
    if rule == ADAPT or rule == OCBA_M:
        return _short_of(ints, spec[SP_INIT], out)
    n_arms = ints.shape[1]
    count = 0
    target = 1 if rule == RACING else schedule[int(scal[SC_ROUND])]
    for i in range(n_arms):
        if ints[I_STATUS, i] == ACTIVE and ints[I_RN, i] < target:
            out[count] = i
            count += 1
    return count


@numba.njit(cache=True, inline="always")
def _draw_levels(reals, total, u):
    """:func:`_proportional` on the levels ``R_DC`` from their running sums ``R_SUM`` (``total`` the last): the
    first arm whose sum is above ``u * total`` is the arm the linear scan returns (its sums are the same numbers; a
    zero level repeats the previous sum, so that arm is never the first). The rows are indexed in place (a row
    taken as an array is a reference counted on every call).
    """
    target = u * total
    n = reals.shape[1]
    if not target < reals[R_SUM, n - 1]:  # round-off (or no positive weight): the last positive one
        for i in range(n - 1, -1, -1):
            if reals[R_DC, i] > 0.0:
                return i
        return -1
    # The sums do not decrease, so the first above the target is at the number of sums at or below it: a count of
    # independent comparisons (on vectors), where a bisection waits on each load in turn.
    below = 0
    for i in range(n):
        below += 1 if reals[R_SUM, i] <= target else 0
    return below


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
def _first_above(prefix, target):
    """The first ``i`` with ``prefix[i] > target`` (non-decreasing ``prefix``, its last entry above ``target``).

    The answer lies in ``[base, base + length - 1]``; each step halves ``length`` by a select on one comparison,
    so the number of steps depends only on the size, and the loop has no branch on the data (a bisection's
    branches are coin flips, mispredicted half the time).
    """
    base = 0
    length = prefix.shape[0]
    while length > 1:
        half = length >> 1
        base = base + half if prefix[base + half - 1] <= target else base
        length -= half
    return base


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
    # First only how many arms are short and the sum of their indices (no chain of additions: a pass on vectors).
    # With none, the scan's sum is 0 and it returns -1; with one, its sum is that arm's shortfall v > 0 and it
    # returns that arm for every u (u * v < v, or the last short arm on round-off): the common case, where an
    # arm near the cutoff takes nearly the whole allotment.
    count = 0
    index_sum = 0
    for i in range(n_arms):
        positive = scale * reals[R_ALLOT, i] - reals[R_NF, i] > 0.0  # the count as a float: the same number
        count += 1 if positive else 0
        index_sum += i if positive else 0
    if count == 0:
        return -1
    if count == 1:
        return index_sum
    # The running sum of the shortfalls: an arm at or above its allotment adds nothing, so its sum is the
    # previous one and the bisection never stops at it (the linear scan's arm, from the same numbers).
    short = 0.0
    last = -1
    for i in range(n_arms):  # selects, not branches (whether an arm is short is a coin flip): the same sums
        v = scale * reals[R_ALLOT, i] - reals[R_NF, i]
        positive = v > 0.0
        short += v if positive else 0.0  # short >= +0, so short + 0.0 is short: one add per step of the chain
        last = i if positive else last
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
    reals[R_NF, arm] = ints[I_N, arm]
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
    new_rank = ints[I_RANK, arm]
    if max(old_rank, new_rank) < m - 1 or min(old_rank, new_rank) > m:
        # The move shifted only ranks on one side of (m), (m+1), whose arms and statistics are as they were when
        # the cutoff was last computed: it is the same number.
        c = scal[SC_CUT]
    else:
        c = _cutoff(ints, reals, m, spec[SP_EPS])
    tight = rule == OCBA_M or policy == 4
    row = _weight_row(rule, policy)
    if c != scal[SC_CUT] or (old_rank < m) != (new_rank < m):
        _recut(spec, ints, reals, scal, c, tight, row)
    else:
        reals[R_DC, arm] = _level(spec, ints, reals, arm, c, tight)
        if rule == OCBA_M:
            _allot(ints, reals, scal, arm, c)
        _aggregate(reals, scal, arm, row)
    if rule == ADAPT and policy == 2:
        _collisions_after(spec, ints, reals, scal, arm, (old_rank < m) != (new_rank < m))


@numba.njit(cache=True)
def _recut(spec, ints, reals, scal, c, tight, row):
    """The cutoff moved to ``c`` (or an arm crossed rank m): every level, OCBA-m's allotments and
    :func:`_aggregate`'s sums and products afresh. Called, not inlined into :func:`observe`: it runs on a fraction
    of the pulls, and the caller's loop stays smaller.

    Three passes: the exponents (:func:`_exponents_all`), the exponentials (:func:`_exp`, both branch-free loops that
    run on vectors), then in arm order the running product and sum. Each level is the number :func:`_level` gives and
    the product and sum take the operations of :func:`_aggregate` from arm 0 in the same order: the same numbers.
    """
    scal[SC_CUT] = c
    _exponents_all(spec, ints, reals, c, tight)
    n_arms = ints.shape[1]
    if int(spec[SP_RULE]) == OCBA_M:
        for i in range(n_arms):
            _allot(ints, reals, scal, i, c)
    for i in range(n_arms):  # 1 where the exponent is <= 0 (or the -1 of a level of 1), as in _level
        reals[R_DC, i] = _exp(-max(reals[R_DC, i], 0.0))
    keep = 1.0
    if row < 0:
        for i in range(n_arms):
            keep *= 1.0 - reals[R_DC, i]
            reals[R_KEEP, i] = keep
    else:
        total = 0.0
        for i in range(n_arms):
            keep *= 1.0 - reals[R_DC, i]
            total += reals[row, i]
            reals[R_KEEP, i] = keep
            reals[R_SUM, i] = total
        scal[SC_W] = total
    scal[SC_DHAT] = 1.0 - keep


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
        reals[R_EBB, i] = _sqrt(2.0 * spread / n / n)  # EB's variance has divisor n
        reals[R_EBA, i] = 12.0 * width / n
    if rule == RACING or (rule == ADAPT and policy == 2):  # only these use the radius
        reals[R_RAD, i] = spec[SP_RADIUS] / _sqrt(float(n))
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
        x = 2.0 * d / (b + _sqrt(b * b + reals[R_EBA, i] * d))
        e = max(e, x * x - _LOG3)
    return _exp(-e) if e > 0.0 else 1.0


@numba.njit(cache=True, inline="always")
def _exponents_all(spec, ints, reals, c, tight):
    """Every arm's exponent of :func:`_level` at the cutoff ``c`` into ``R_DC``, -1 where the level is 1 (``d <= 0``):
    the same operations in a loop without branches, one loop per bound, so that the arms' square roots and divisions
    run side by side on vectors (the rank compared as an integer, which vectors can do).
    """
    n_arms = ints.shape[1]
    m = int(spec[SP_M])
    eps = spec[SP_EPS]
    if tight:  # two loops, so that neither computes what the other rule needs
        for i in range(n_arms):
            mu = reals[R_MEAN, i]
            up = mu + eps - c
            down = c - mu
            d = up if ints[I_RANK, i] < m else down
            e = reals[R_HK, i] * d * d
            b = reals[R_EBB, i]
            x = _div(2.0 * d, b + _sqrt(b * b + reals[R_EBA, i] * d))  # d <= 0 may divide by zero: discarded below
            e = max(e, x * x - _LOG3)
            reals[R_DC, i] = e if d > 0.0 else -1.0  # d <= 0 (or NaN): the level is 1, as for e <= 0
    else:
        for i in range(n_arms):
            mu = reals[R_MEAN, i]
            up = mu + eps - c
            down = c - mu
            d = up if ints[I_RANK, i] < m else down
            e = reals[R_HK, i] * d * d
            reals[R_DC, i] = e if d > 0.0 else -1.0


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
    ``SC_CAND``: kept by :func:`observe` for :func:`select` and :func:`stopped`. Also keeps what
    :func:`_collisions_after` updates: each arm's bound that takes part (``R_BND``: :math:`LB + \\epsilon` of a
    High arm, :math:`UB` of a Low arm), their minimum over High (``SC_LH``) and maximum over Low (``SC_HL``).
    """
    n_arms = ints.shape[1]
    m = int(spec[SP_M])
    eps = spec[SP_EPS]
    lowest_high = np.inf
    highest_low = -np.inf
    for i in range(n_arms):  # the values and order of operations of _uniform_candidates
        if ints[I_RANK, i] < m:
            v = reals[R_MEAN, i] - reals[R_RAD, i] + eps
            reals[R_BND, i] = v
            lowest_high = min(lowest_high, v)
        else:
            v = reals[R_MEAN, i] + reals[R_RAD, i]
            reals[R_BND, i] = v
            highest_low = max(highest_low, v)
    scal[SC_LH] = lowest_high
    scal[SC_HL] = highest_low
    _candidate_list(ints, reals, scal, m)


@numba.njit(cache=True, inline="always")
def _candidate_list(ints, reals, scal, m):
    """pi_2's candidates from the kept bounds and extremes (``R_BND``, ``SC_LH``, ``SC_HL``), in increasing order."""
    count = 0
    lowest_high = scal[SC_LH]
    highest_low = scal[SC_HL]
    for i in range(ints.shape[1]):  # written unconditionally, kept by counting: no branch on the coin flip
        v = reals[R_BND, i]
        collides_low = v < highest_low
        collides_high = v > lowest_high
        member = collides_low if ints[I_RANK, i] < m else collides_high
        ints[I_CAND, count] = i
        count += 1 if member else 0
    scal[SC_CAND] = count


@numba.njit(cache=True, inline="always")
def _collisions_after(spec, ints, reals, scal, arm, crossed):
    """:func:`_collisions` after a pull of ``arm`` (its mean and radius changed; ``crossed``: it moved between
    High and Low, and so did another arm). Minima, maxima and comparisons are exact whatever the order, so the
    result is :func:`_uniform_candidates`'s: without a crossing only ``arm``'s bound changed, the extremes are
    rescanned only when ``arm`` attained one and moved away from it, and when neither extreme changed only
    ``arm``'s membership can change (an insertion or removal in the increasing list).
    """
    if crossed:
        _collisions(spec, ints, reals, scal)
        return
    m = int(spec[SP_M])
    eps = spec[SP_EPS]
    n_arms = ints.shape[1]
    old = reals[R_BND, arm]
    lowest_high = scal[SC_LH]
    highest_low = scal[SC_HL]
    high = ints[I_RANK, arm] < m
    if high:
        v = reals[R_MEAN, arm] - reals[R_RAD, arm] + eps
        reals[R_BND, arm] = v
        if v <= lowest_high:
            lowest_high = v
        elif old == lowest_high:  # arm was (one of) the lowest and rose: rescan High
            lowest_high = np.inf
            for i in range(n_arms):  # selects, not branches on the rank
                b = reals[R_BND, i]
                lowest_high = b if ints[I_RANK, i] < m and b < lowest_high else lowest_high
    else:
        v = reals[R_MEAN, arm] + reals[R_RAD, arm]
        reals[R_BND, arm] = v
        if v >= highest_low:
            highest_low = v
        elif old == highest_low:  # arm was (one of) the highest and fell: rescan Low
            highest_low = -np.inf
            for i in range(n_arms):
                b = reals[R_BND, i]
                highest_low = b if ints[I_RANK, i] >= m and b > highest_low else highest_low
    if lowest_high != scal[SC_LH] or highest_low != scal[SC_HL]:
        scal[SC_LH] = lowest_high
        scal[SC_HL] = highest_low
        _candidate_list(ints, reals, scal, m)
        return
    # the extremes are as they were: only arm's membership may have changed
    member = (v < highest_low) if high else (v > lowest_high)
    count = int(scal[SC_CAND])
    j = 0  # arm's place in the increasing list: the number of candidates below it (counted, no early exit)
    for k in range(count):
        j += 1 if ints[I_CAND, k] < arm else 0
    present = j < count and ints[I_CAND, j] == arm
    if member and not present:
        for k in range(count, j, -1):
            ints[I_CAND, k] = ints[I_CAND, k - 1]
        ints[I_CAND, j] = arm
        scal[SC_CAND] = count + 1
    elif present and not member:
        for k in range(j, count - 1):
            ints[I_CAND, k] = ints[I_CAND, k + 1]
        scal[SC_CAND] = count - 1


@numba.njit(cache=True, inline="always")
def _ahead(reals, a, b):
    """Whether arm ``a`` ranks above arm ``b`` (higher mean, ties by the lower index)."""
    ma = reals[R_MEAN, a]
    mb = reals[R_MEAN, b]
    return ma > mb or (ma == mb and a < b)


@numba.njit(cache=True, inline="always")
def _reposition(ints, reals, arm):
    """Move ``arm`` to its place in the ranking after its mean changed (adjacent swaps)."""
    r = ints[I_RANK, arm]
    while r > 0 and _ahead(reals, arm, ints[I_ORDER, r - 1]):
        other = ints[I_ORDER, r - 1]
        ints[I_ORDER, r] = other
        ints[I_RANK, other] = r
        r -= 1
    last = ints.shape[1] - 1
    while r < last and _ahead(reals, ints[I_ORDER, r + 1], arm):
        other = ints[I_ORDER, r + 1]
        ints[I_ORDER, r] = other
        ints[I_RANK, other] = r
        r += 1
    ints[I_ORDER, r] = arm
    ints[I_RANK, arm] = r


@numba.njit(cache=True, inline="always")
def _cutoff(ints, reals, m, eps):
    """:math:`\\hat c` (module docstring); the midpoint when both standard errors are zero."""
    high = ints[I_ORDER, m - 1]
    low = ints[I_ORDER, m]
    se_high = _sqrt(reals[R_VAR, high] / ints[I_N, high])  # R_VAR: cached by _refresh
    se_low = _sqrt(reals[R_VAR, low] / ints[I_N, low])
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
