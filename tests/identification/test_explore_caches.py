"""The EXPLORE-m machines' kept quantities (running sums and products, candidate lists, OCBA-m's allotments)
equal a pass over all arms after every pull, and the draws made from them equal the linear scans'."""

import math

import numpy as np
import pytest

from pmcbandit.identification import adapt, ocba_m
from pmcbandit.identification import explore_kernels as ek

WIDTH = math.sqrt(12.0)


def _linear_draw(weights, u):
    """The linear scan over the weights (the rule the bisection must reproduce), in plain Python."""
    total = 0.0
    for w in weights:
        total += w
    target = u * total
    acc, last = 0.0, -1
    for i, w in enumerate(weights):
        if w > 0.0:
            acc += w
            last = i
            if target < acc:
                return i
    return last


@pytest.mark.parametrize("seed", range(5))
def test_the_draw_on_the_running_sums_finds_the_linear_scans_arm(seed):
    rng = np.random.default_rng(seed)
    for size in (1, 2, 7, 50, 257):
        w = rng.exponential(size=size) * rng.choice([0.0, 1e-300, 1e-18, 1.0, 1e6], size=size)
        prefix = np.cumsum(w)  # sequential, the same numbers as the scan's running sum
        us = np.concatenate([rng.random(200), [0.0, np.nextafter(1.0, 0.0)]])
        # u on a boundary: target = u * total exactly equal to a running sum
        us = np.concatenate([us, prefix[prefix > 0] / prefix[-1]]) if prefix[-1] > 0 else us
        for u in us:
            u = min(float(u), np.nextafter(1.0, 0.0))
            assert ek._draw_levels(_level_rows(w, prefix), prefix[-1], u) == _linear_draw(w, u)
            assert ek._proportional(w, prefix[-1], u) == _linear_draw(w, u)
    zero = np.zeros(4)
    assert ek._draw_levels(_level_rows(zero, zero), 0.0, 0.3) == _linear_draw(zero, 0.3) == -1


def _level_rows(levels, sums):
    """A state's ``reals`` holding ``levels`` in row ``R_DC`` and their running ``sums`` in row ``R_SUM``."""
    reals = np.zeros((ek.N_REAL_ROWS, levels.size))
    reals[ek.R_DC], reals[ek.R_SUM] = levels, sums
    return reals


def _check_kept(spec, ints, reals, scal):
    n = ints.shape[1]
    rule, policy = int(spec[ek.SP_RULE]), int(spec[ek.SP_POLICY])
    keep, total = 1.0, 0.0
    row = ek.R_ALLOT if rule == ek.OCBA_M else ek.R_DC
    for i in range(n):
        keep *= 1.0 - reals[ek.R_DC, i]
        total += reals[row, i]
        assert reals[ek.R_KEEP, i] == keep
        if rule == ek.OCBA_M or policy >= 3:
            assert reals[ek.R_SUM, i] == total
    assert scal[ek.SC_DHAT] == 1.0 - keep
    if rule == ek.OCBA_M or policy >= 3:
        assert scal[ek.SC_W] == total
    if rule == ek.OCBA_M:
        c = scal[ek.SC_CUT]
        gap = reals[ek.R_MEAN] - c
        on = gap == 0.0
        assert (ints[ek.I_ON] == on).all() and scal[ek.SC_ON] == on.sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = np.where(on, 0.0, reals[ek.R_VAR] / (gap * gap))
        np.testing.assert_array_equal(reals[ek.R_ALLOT], expected)
        for i in range(n):  # the levels too are the ones at the current cutoff
            assert reals[ek.R_DC, i] == ek._level(spec, ints, reals, i, c, True)
    if rule == ek.ADAPT and policy <= 2:
        scratch = np.empty(n, dtype=np.int64)
        if policy == 1:
            count = ek._short_of(ints, spec[ek.SP_CAP], scratch)
        else:
            count = ek._uniform_candidates(spec, ints, reals, 2, scratch)
        assert scal[ek.SC_CAND] == count
        np.testing.assert_array_equal(ints[ek.I_CAND, :count], scratch[:count])


@pytest.mark.parametrize("algo", [
    adapt(k=3, delta=0.2, epsilon=0.1, reward_range=2.0, policy=1),
    adapt(k=3, delta=0.2, epsilon=0.2, reward_range=2.0, policy=2),
    adapt(k=3, delta=0.2, epsilon=0.1, reward_range=2.0, policy=3),
    adapt(k=3, delta=0.2, epsilon=0.0, reward_range=2.0, policy=4),
    ocba_m(k=3, delta=0.2, epsilon=0.1, reward_range=2.0, n0=3),
], ids=["pi1", "pi2", "pi3", "pi4", "ocba_m"])
def test_kept_quantities_equal_a_pass_over_all_arms_after_every_pull(algo):
    """Random pulls (ties and a small cap included, so pi_1 drops candidates): after each one the kept
    sums, products, candidates and allotments are exactly what a pass over all arms gives."""
    rng = np.random.default_rng(11)
    n = 9
    spec = algo.kernel(n).spec.copy()
    if spec[ek.SP_POLICY] == 1:
        spec[ek.SP_CAP] = 12.0  # arms reach DIRECT's count within the test
    ints, reals, scal = ek.new_state(spec, np.zeros(1), n)
    means = np.linspace(-0.5, 0.5, n)
    out, work = np.empty(n, dtype=np.int64), np.empty(n)
    checked = 0
    for step in range(1500):
        if scal[ek.SC_READY] > 0 and rng.random() < 0.5:
            count = ek.select(spec, np.zeros(1), ints, reals, scal, rng.random(), out, work)
            if count == 0:
                break
            arm = int(out[0])
        else:
            arm = int(rng.integers(n))
        x = round(float(means[arm] + rng.uniform(-1.0, 1.0)), 1)  # coarse rewards: tied means occur
        ek.observe(spec, np.zeros(1), ints, reals, scal, arm, x)
        if scal[ek.SC_READY] > 0:
            _check_kept(spec, ints, reals, scal)
            checked += 1
    assert checked > 50
    if spec[ek.SP_POLICY] == 1:
        assert scal[ek.SC_CAND] < n  # some arms left the candidates


def test_ocba_m_draw_equals_the_linear_scan_of_the_shortfalls():
    """OCBA-m's draw from the kept allotments equals the scan that recomputes every allotment and shortfall."""
    algo = ocba_m(k=2, delta=0.1, epsilon=0.1, reward_range=2.0, n0=2)
    n = 6
    spec = algo.kernel(n).spec
    rng = np.random.default_rng(4)
    ints, reals, scal = ek.new_state(spec, np.zeros(1), n)
    for arm in np.repeat(np.arange(n), 2):
        ek.observe(spec, np.zeros(1), ints, reals, scal, int(arm), float(rng.uniform(-1, 1)))
    work = np.empty(n)
    for _ in range(400):
        u = rng.random()
        c = scal[ek.SC_CUT]
        gap = reals[ek.R_MEAN] - c
        w = reals[ek.R_VAR] / (gap * gap)
        short = np.maximum(0.0, (scal[ek.SC_T] + 1.0) / sum(w.tolist()) * w - ints[ek.I_N])
        expected = _linear_draw(short.tolist(), u)
        assert ek._ocba_pick(ints, reals, scal, u, work) == expected
        ek.observe(spec, np.zeros(1), ints, reals, scal, expected, float(rng.uniform(-1, 1)))
