"""The EXPLORE-m kernels' two-pass recomputation of every level (exponents for all arms without branches, then the
exponentials) gives, arm for arm, the number the one-arm rule gives, including the arms whose bound does not reach
the cutoff (``d <= 0``, where the branch-free pass may divide zero by zero and discards the result), zero variance
and arms on the cutoff."""

import math

import numba
import numpy as np
import pytest

from pmcbandit.identification import adapt, ocba_m
from pmcbandit.identification import explore_kernels as ek


@numba.njit(cache=True)
def _both_ways(spec, ints, reals, c, tight, out):
    for i in range(ints.shape[1]):
        out[i] = ek._level(spec, ints, reals, i, c, tight)
    ek._levels_all(spec, ints, reals, c, tight)


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
