"""The EXPLORE-m kernels' shortcuts give the numbers of the plain computation: the processor's square root equals
``math.sqrt``, the kernels' exponential is within one unit in the last place of the correctly rounded value (and
the same number on vectors as one at a time), the cutoff kept when a pull leaves the arms at ranks (m), (m+1)
alone equals a fresh one, pi_2's candidates kept by insertion and removal (and rebuilt without branches) equal a
scan over all arms, and the simulator's runs equal the runs recorded from the previous kernels
(:data:`PREVIOUS_RUNS`): samples, stops, choices and pulls per arm."""

import math
from decimal import Decimal, localcontext

import numba
import numpy as np
import pytest

from pmcbandit.identification import adapt, ocba_m
from pmcbandit.identification import explore_kernels as ek
from pmcbandit.identification.simulate import simulate_stopping


@numba.njit(cache=True)
def _both_roots(x, out):
    for i in range(x.shape[0]):
        out[0, i] = ek._sqrt(x[i])
        out[1, i] = math.sqrt(x[i])


def test_instruction_square_root_equals_math_sqrt_exactly():
    rng = np.random.default_rng(3)
    x = np.concatenate([
        rng.random(20_000), rng.exponential(size=20_000) * 1e-310, rng.exponential(size=20_000) * 1e300,
        rng.integers(0, 10**6, 20_000).astype(np.float64), [0.0, 5e-324, np.inf, np.finfo(float).max],
    ])
    out = np.empty((2, x.size))
    _both_roots(x, out)
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[0], np.sqrt(x))


@numba.njit(cache=True)
def _exps_on_vectors(x, out):
    for i in range(x.shape[0]):  # no branch: the loop runs on vectors
        out[i] = ek._exp(x[i])


@numba.njit(cache=True)
def _exp_one(x):
    return ek._exp(x)


def _ulps(a, b):
    return np.abs(a.view(np.int64) - b.view(np.int64))  # same sign: the distance in representable numbers


def test_kernel_exponential_is_within_one_ulp_of_the_correctly_rounded_value():
    rng = np.random.default_rng(5)
    x = -np.concatenate([
        rng.exponential(size=4000) * 1e-6, rng.exponential(size=4000), rng.exponential(size=4000) * 50.0,
        rng.uniform(0.0, 708.0, 4000), rng.uniform(708.0, 745.2, 2000),  # normal results, then subnormal ones
        np.arange(0, 40) * math.log(2.0),  # where the reduction switches between multiples of ln 2
    ])
    out = np.empty_like(x)
    _exps_on_vectors(x, out)
    with localcontext() as ctx:
        ctx.prec = 50
        exact = np.array([float(Decimal(float(v)).exp()) for v in x])  # float() of a Decimal rounds correctly
    assert _ulps(out, exact).max() <= 1
    assert (out == exact).mean() > 0.9
    np.testing.assert_array_equal(out, [_exp_one(float(v)) for v in x])  # one at a time: the same numbers
    special = np.array([0.0, -0.0, -746.0, -1e300, -np.inf])
    _exps_on_vectors(special, out[:5])
    assert out[:5].tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("algo", [
    adapt(k=3, delta=0.2, epsilon=0.2, reward_range=2.0, policy=2),
    adapt(k=4, delta=0.2, epsilon=0.0, reward_range=2.0, policy=2),
    adapt(k=3, delta=0.2, epsilon=0.1, reward_range=2.0, policy=3),
    adapt(k=3, delta=0.2, epsilon=0.0, reward_range=2.0, policy=4),
    ocba_m(k=3, delta=0.2, epsilon=0.1, reward_range=2.0, n0=3),
], ids=["pi2", "pi2_eps0", "pi3", "pi4", "ocba_m"])
def test_kept_cutoff_and_candidates_equal_fresh_ones_after_every_pull(algo):
    """Random and policy pulls on close means with coarse rewards (ties, frequent crossings of rank m): after each
    pull the kept cutoff is the one computed afresh, and pi_2's bounds, extremes and candidates are a full scan's."""
    rng = np.random.default_rng(5)
    n = 10
    spec = algo.kernel(n).spec
    m = int(spec[ek.SP_M])
    ints, reals, scal = ek.new_state(spec, np.zeros(1), n)
    means = np.linspace(-0.2, 0.2, n)
    out, work = np.empty(n, dtype=np.int64), np.empty(n)
    scratch = np.empty(n, dtype=np.int64)
    checked = skipped = inserted = 0
    for _ in range(3000):
        if scal[ek.SC_READY] > 0 and rng.random() < 0.5:
            count = ek.select(spec, np.zeros(1), ints, reals, scal, rng.random(), out, work)
            if count == 0:
                break
            arm = int(out[0])
        else:
            arm = int(rng.integers(n))
        x = round(float(means[arm] + rng.uniform(-1.0, 1.0)), 1)
        before_rank, before_count = int(ints[ek.I_RANK, arm]), int(scal[ek.SC_CAND])
        ek.observe(spec, np.zeros(1), ints, reals, scal, arm, x)
        if scal[ek.SC_READY] == 0:
            continue
        after_rank = int(ints[ek.I_RANK, arm])
        skipped += max(before_rank, after_rank) < m - 1 or min(before_rank, after_rank) > m
        fresh = ek._cutoff(ints, reals, m, spec[ek.SP_EPS])
        assert scal[ek.SC_CUT] == fresh or (math.isnan(fresh) and math.isnan(scal[ek.SC_CUT]))
        if spec[ek.SP_RULE] == ek.ADAPT and spec[ek.SP_POLICY] == 2:
            count = ek._uniform_candidates(spec, ints, reals, 2, scratch)
            assert scal[ek.SC_CAND] == count
            np.testing.assert_array_equal(ints[ek.I_CAND, :count], scratch[:count])
            high = ints[ek.I_RANK] < m
            bnd = np.where(high, reals[ek.R_MEAN] - reals[ek.R_RAD] + spec[ek.SP_EPS],
                           reals[ek.R_MEAN] + reals[ek.R_RAD])
            np.testing.assert_array_equal(reals[ek.R_BND], bnd)
            assert scal[ek.SC_LH] == bnd[high].min() and scal[ek.SC_HL] == bnd[~high].max()
            inserted += count != before_count
        checked += 1
    assert checked > 500 and skipped > 50
    if spec[ek.SP_RULE] == ek.ADAPT and spec[ek.SP_POLICY] == 2:
        assert inserted > 0  # the list changed by single insertions or removals


@pytest.mark.parametrize("name,kw", [("adapt", {"policy": p}) for p in (1, 2, 3, 4)] + [("ocba_m", {"n0": 5})],
                         ids=["pi1", "pi2", "pi3", "pi4", "ocba_m"])
def test_simulator_runs_equal_the_previous_kernels(name, kw, request):
    from pmcbandit.identification import get_identifier

    settings = dict(k=4, delta=0.2, reward_range=math.sqrt(12.0), epsilon=0.1)
    algo = get_identifier(name, **settings, **kw)
    means = np.random.default_rng(2010).uniform(0.0, 1.0, 12)
    run = simulate_stopping(algo, means, reps=4, family="uniform", scale=1.0, random_seed=9, max_samples=40_000)
    previous = PREVIOUS_RUNS[request.node.callspec.id]
    for field, recorded in previous.items():
        np.testing.assert_array_equal(getattr(run, field), recorded, err_msg=field)
    np.testing.assert_array_equal(run.samples, run.counts.sum(axis=1))
    assert run.samples.sum() > 4 * 12 * 5


#: Runs of the kernels as they were before their rewrite (the package at commit e2756d3, with the kernels' own
#: exponential in its levels), recorded on the instance of :func:`test_simulator_runs_equal_the_previous_kernels`:
#: per configuration, each of the four replications' samples to the stop, stop, correctness, chosen arms (best
#: first) and pulls per arm.
PREVIOUS_RUNS = {
    "pi1": dict(
        samples=[33264, 20889, 9092, 11940], stopped=[True, True, True, True], correct=[True, True, True, True],
        chosen=[[4, 7, 6, 1], [7, 4, 6, 1], [7, 4, 6, 1], [4, 7, 6, 1]],
        counts=[
            [2764, 2796, 2815, 2787, 2708, 2716, 2704, 2814, 2852, 2819, 2686, 2803],
            [1801, 1779, 1692, 1843, 1668, 1691, 1775, 1672, 1707, 1756, 1808, 1697],
            [725, 802, 826, 737, 717, 759, 760, 752, 776, 764, 695, 779],
            [951, 1038, 945, 1007, 988, 1056, 957, 924, 994, 1003, 1026, 1051],
        ],
    ),
    "pi2": dict(
        samples=[11268, 9319, 7163, 7891], stopped=[True, True, True, True], correct=[True, True, True, True],
        chosen=[[4, 7, 6, 1], [7, 4, 6, 1], [7, 4, 6, 1], [6, 4, 7, 1]],
        counts=[
            [421, 2803, 722, 615, 381, 2732, 950, 489, 457, 684, 634, 380],
            [569, 1770, 868, 523, 385, 1724, 467, 325, 492, 596, 1202, 398],
            [468, 791, 808, 308, 544, 774, 709, 469, 498, 619, 645, 530],
            [489, 1036, 806, 504, 462, 1046, 434, 556, 498, 511, 1056, 493],
        ],
    ),
    "pi3": dict(
        samples=[9546, 7057, 4531, 4731], stopped=[True, True, True, True], correct=[True, True, True, True],
        chosen=[[4, 7, 6, 1], [4, 7, 6, 1], [4, 7, 6, 1], [7, 6, 4, 1]],
        counts=[
            [255, 3134, 505, 419, 177, 3058, 394, 371, 282, 364, 379, 208],
            [295, 2080, 590, 274, 159, 1877, 353, 203, 198, 273, 544, 211],
            [217, 893, 473, 101, 195, 899, 403, 227, 218, 327, 360, 218],
            [259, 1141, 335, 184, 313, 1223, 290, 151, 175, 235, 207, 218],
        ],
    ),
    "pi4": dict(
        samples=[6822, 6437, 4531, 4601], stopped=[True, True, True, True], correct=[True, True, True, True],
        chosen=[[4, 7, 6, 1], [4, 7, 6, 1], [4, 7, 6, 1], [7, 6, 4, 1]],
        counts=[
            [235, 2001, 440, 379, 141, 1877, 349, 340, 260, 266, 341, 193],
            [288, 1795, 559, 278, 151, 1648, 339, 203, 187, 247, 540, 202],
            [217, 893, 473, 101, 195, 899, 403, 227, 218, 327, 360, 218],
            [251, 1109, 328, 182, 303, 1184, 280, 146, 172, 227, 205, 214],
        ],
    ),
    "ocba_m": dict(
        samples=[14040, 11711, 40000, 40000], stopped=[True, True, False, False], correct=[True, True, False, True],
        chosen=[[4, 7, 6, 1], [4, 7, 6, 1], [5, 0, 7, 4], [1, 4, 7, 6]],
        counts=[
            [142, 8722, 189, 157, 340, 1635, 1648, 513, 196, 170, 212, 116],
            [131, 8390, 95, 210, 183, 1315, 504, 224, 74, 81, 368, 136],
            [5, 7, 16, 5, 2089, 9, 46, 37796, 9, 7, 6, 5],
            [21, 6, 5, 6, 38928, 5, 795, 212, 5, 7, 5, 5],
        ],
    ),
}
