"""The EXPLORE-m kernels' two-pass recomputation of every level (exponents for all arms without branches, then the
exponentials) gives, arm for arm, the number the one-arm rule gives, including the arms whose bound does not reach
the cutoff (``d <= 0``, where the branch-free pass may divide zero by zero and discards the result), zero variance
and arms on the cutoff; the fused pass of a moved cutoff gives the levels, products and sums of the plain passes;
OCBA-m's pick with at most one short arm (decided without the running sums) and the branch-free searches give the
arms of plain linear scans (:mod:`tests.identification.explore_scans`)."""

import math

import numba
import numpy as np
import pytest

from pmcbandit.identification import adapt, ocba_m
from pmcbandit.identification import explore_kernels as ek
from tests.identification import explore_scans


@numba.njit(cache=True)
def _levels_all(spec, ints, reals, c, tight):
    """Every arm's level at the cutoff ``c`` in two passes: the branch-free exponents, then the exponentials."""
    ek._exponents_all(spec, ints, reals, c, tight)
    for i in range(ints.shape[1]):
        e = reals[ek.R_DC, i]
        reals[ek.R_DC, i] = ek._exp(-e) if e > 0.0 else 1.0


@numba.njit(cache=True)
def _both_ways(spec, ints, reals, c, tight, out):
    for i in range(ints.shape[1]):
        out[i] = ek._level(spec, ints, reals, i, c, tight)
    _levels_all(spec, ints, reals, c, tight)


@numba.njit(cache=True)
def _plain_recut(spec, ints, reals, scal, c, tight, row):
    """What the fused pass replaces: every level, the allotments, then the running products and sums from arm 0."""
    scal[ek.SC_CUT] = c
    _levels_all(spec, ints, reals, c, tight)
    if int(spec[ek.SP_RULE]) == ek.OCBA_M:
        for i in range(ints.shape[1]):
            ek._allot(ints, reals, scal, i, c)
    ek._aggregate(reals, scal, 0, row)


@pytest.mark.parametrize("algo,tight", [
    (adapt(k=3, delta=0.2, epsilon=0.0, reward_range=2.0, policy=3), False),
    (adapt(k=3, delta=0.2, epsilon=0.1, reward_range=2.0, policy=4), True),
    (ocba_m(k=4, delta=0.2, epsilon=0.0, reward_range=2.0, n0=3), True),
], ids=["pi3", "pi4", "ocba_m"])
def test_two_pass_levels_equal_the_one_arm_rule(algo, tight):
    rng = np.random.default_rng(11)
    n = 13
    spec = algo.kernel(n).spec
    m = int(spec[ek.SP_M])
    out = np.empty(n)
    cases = 0
    for trial in range(400):
        ints, reals, scal = ek.new_state(spec, np.zeros(1), n)
        # coarse rewards (ties, equal means, all-equal rewards: zero variance) on a few pulls per arm
        pulls = rng.integers(1, 6, n)
        for arm in range(n):
            for _ in range(pulls[arm]):
                x = 0.0 if trial % 4 == 0 else round(float(rng.uniform(-1.0, 1.0)), 1)
                ints[ek.I_N, arm] += 1
                reals[ek.R_TOTAL, arm] += x
                reals[ek.R_SQ, arm] += x * x
            reals[ek.R_MEAN, arm] = reals[ek.R_TOTAL, arm] / ints[ek.I_N, arm]
            ek._refresh(spec, ints, reals, arm)
        order = np.argsort(-reals[ek.R_MEAN], kind="mergesort")
        ints[ek.I_ORDER] = order
        ints[ek.I_RANK, order] = np.arange(n)
        # the cutoff itself, a mean (d = 0 for that arm), and points beyond every mean (d <= 0 on one side)
        for c in (ek._cutoff(ints, reals, m, spec[ek.SP_EPS]), reals[ek.R_MEAN, order[m]],
                  reals[ek.R_MEAN, order[m - 1]] + spec[ek.SP_EPS], -2.0, 2.0, float(rng.uniform(-1.0, 1.0))):
            _both_ways(spec, ints, reals, c, tight, out)
            np.testing.assert_array_equal(reals[ek.R_DC], out)
            row = ek._weight_row(int(spec[ek.SP_RULE]), int(spec[ek.SP_POLICY]))
            fused, plain = (ints.copy(), reals.copy(), scal.copy()), (ints.copy(), reals.copy(), scal.copy())
            ek._recut(spec, *fused, c, tight, row)
            _plain_recut(spec, *plain, c, tight, row)
            for a, b in zip(fused, plain):
                np.testing.assert_array_equal(a, b)
            cases += int(np.sum(out == 1.0) > 0) + int(np.sum((out > 0.0) & (out < 1.0)) > 0)
    assert cases > 1000  # both saturated and proper levels were compared


@numba.njit(cache=True)
def _both_divisions(a, b, out):
    for i in range(a.shape[0]):
        out[0, i] = ek._div(a[i], b[i])
        out[1, i] = a[i] / b[i]


def test_processor_division_equals_python_division_where_defined():
    rng = np.random.default_rng(4)
    a = np.concatenate([rng.normal(size=10_000), rng.exponential(size=10_000) * 1e-300, [0.0, -1.0, math.inf]])
    b = np.concatenate([rng.normal(size=10_000), rng.exponential(size=10_000) * 1e300, [1.0, 3.0, 2.0]])
    out = np.empty((2, a.size))
    _both_divisions(a, b, out)
    np.testing.assert_array_equal(out[0], out[1])


def _ocba_states(rng, n, short):
    """States whose shortfalls ``(t + 1) w_i / W - n_i`` are positive for ``short`` arms: counts at, just above and
    just below each arm's share (exact zeros, round-off), tiny, huge and zero allotments."""
    spec = ocba_m(k=1, delta=0.2, epsilon=0.0, reward_range=2.0, n0=2).kernel(n).spec
    ints, reals, scal = ek.new_state(spec, np.zeros(1), n)
    allot = rng.choice([0.0, 1e-300, 1e-12, 1.0, 3.0, 1e12], size=n) * rng.uniform(0.5, 2.0, n)
    allot[rng.integers(n)] = 1.0  # a positive total
    t = float(rng.integers(n, 10**6))
    total = float(allot.sum()) if rng.random() < 0.9 else float(rng.uniform(0.5, 2.0) * allot.sum())
    share = (t + 1.0) / total * allot
    counts = np.ceil(share) + rng.integers(0, 4, n)  # at or above the share: not short
    chosen = rng.choice(n, size=short, replace=False)
    counts[chosen] = np.maximum(np.floor(share[chosen]) - rng.integers(0, 3, short), 0.0)
    ints[ek.I_N] = counts.astype(np.int64)
    reals[ek.R_NF] = counts
    reals[ek.R_ALLOT] = allot
    scal[ek.SC_T] = t
    scal[ek.SC_W] = total
    scal[ek.SC_READY] = 1.0
    return ints, reals, scal


def test_ocba_pick_with_at_most_one_short_arm_is_the_scans_arm():
    rng = np.random.default_rng(21)
    work = np.empty(60)
    seen = {0: 0, 1: 0, 2: 0}
    for trial in range(3000):
        n = int(rng.choice([2, 3, 7, 50, 60]))
        ints, reals, scal = _ocba_states(rng, n, int(rng.integers(0, min(n, 4) + 1)))
        scale = (scal[ek.SC_T] + 1.0) / scal[ek.SC_W]
        short = int(np.sum(scale * reals[ek.R_ALLOT] - ints[ek.I_N] > 0.0))
        seen[min(short, 2)] += 1
        for u in (2.0**-53, float(rng.random()), 0.5, 1.0 - 2.0**-53):
            expected = explore_scans.ocba_pick(ints, reals, scal, u, work[:n])
            assert ek._ocba_pick(ints, reals, scal, u, work[:n]) == expected
    assert min(seen.values()) > 300  # none, one and several short arms were all compared


def test_branch_free_searches_find_the_scans_arm():
    rng = np.random.default_rng(8)
    for trial in range(2000):
        n = int(rng.integers(1, 70))
        weights = rng.choice([0.0, 1e-17, 0.3, 1.0], size=n) * rng.uniform(0.5, 1.5, n)
        weights[rng.integers(n)] = 1.0  # a positive total
        prefix = np.cumsum(weights)  # the running sums, plateaus where a weight is 0
        for target in (0.0, float(rng.uniform(0.0, prefix[-1])), float(prefix[rng.integers(n)]), prefix[-1] * 0.999):
            if target < prefix[-1]:
                assert ek._first_above(prefix, target) == np.searchsorted(prefix, target, side="right")
        spec = adapt(k=1, delta=0.2, epsilon=0.0, reward_range=2.0, policy=3).kernel(max(n, 2)).spec
        ints, reals, scal = ek.new_state(spec, np.zeros(1), n)
        reals[ek.R_DC] = weights
        reals[ek.R_SUM] = prefix
        for u in (2.0**-53, float(rng.random()), 1.0 - 2.0**-53):
            assert ek._draw_levels(reals, prefix[-1], u) == explore_scans.proportional(weights, prefix[-1], u)
