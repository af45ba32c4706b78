"""Cross-arm consistency: exact formulas, published reference values, calibration of the test,
coverage of the random-effects interval under a biased arm, outlier naming, degenerate inputs."""

from fractions import Fraction
from functools import lru_cache
import math

import numpy as np
import pytest
from scipy import special, stats

from pmcbandit.stats.consistency import DEFAULT_ALPHA, Heterogeneity, heterogeneity, interval

ALPHA = DEFAULT_ALPHA
CONFIDENCE = 0.999  # Clopper-Pearson level of every rate check: a correct rate fails 1 in 1000


def _clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(int(hits), n).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return ci.low, ci.high


def _rate_consistent_with(hits: int, n: int, rate: float) -> bool:
    lo, hi = _clopper_pearson(hits, n)
    return lo <= rate <= hi


# ---------------------------------------------------------------------------------------------
# formulas


def test_hand_computed_example():
    # y = (0, 2, 5), se = (1, 1, 2): w = (1, 1, 1/4), exact arithmetic with fractions
    y = [Fraction(0), Fraction(2), Fraction(5)]
    w = [Fraction(1), Fraction(1), Fraction(1, 4)]
    big_w = sum(w)  # 9/4
    y_fe = sum(wk * yk for wk, yk in zip(w, y)) / big_w  # 13/9
    q = sum(wk * (yk - y_fe) ** 2 for wk, yk in zip(w, y))
    assert q == Fraction(50, 9)
    c = big_w - sum(wk**2 for wk in w) / big_w  # 9/4 - 33/36 = 4/3
    tau2 = (q - 2) / c
    assert tau2 == Fraction(8, 3)
    v = [1 / (1 / wk + tau2) for wk in w]  # 3/11, 3/11, 3/20
    mu = sum(vk * yk for vk, yk in zip(v, y)) / sum(v)
    q_hk = sum(vk * (yk - mu) ** 2 for vk, yk in zip(v, y)) / 2
    se_hksj = math.sqrt(max(Fraction(1), q_hk) / sum(v))

    h = heterogeneity([0.0, 2.0, 5.0], [1.0, 1.0, 2.0])
    assert h.q == pytest.approx(float(q), rel=1e-13)
    assert h.df == 2 and math.isinf(h.df2)
    assert h.p_value == pytest.approx(math.exp(-float(q) / 2), rel=1e-12)  # chi2_2 survival: exp(-x/2)
    assert h.tau2 == pytest.approx(float(tau2), rel=1e-13)
    assert h.i2 == pytest.approx(float((q - 2) / q), rel=1e-13)  # 0.64
    assert h.estimate == pytest.approx(float(mu), rel=1e-13)
    assert h.se == pytest.approx(se_hksj, rel=1e-13)
    assert h.dof == 2.0 and not h.flagged  # p = exp(-25/9) = 0.062
    assert h.compared.tolist() == [0, 1, 2] and h.excluded.size == 0

    # leave arm 0 out: (2, 5) with w = (1, 1/4): Q = 9/5, tau2 = (9/5 - 1) / (5/4 - 17/20) = 2,
    # v = (1/3, 1/6), mu = 3, Var(mu) = 2, so z_0 = (0 - 3) / sqrt(1 + 2 + 2)
    assert h.z[0] == pytest.approx(-3 / math.sqrt(5), rel=1e-13)

    # t_2 quantile in closed form: t = (2p - 1) sqrt(2 / (4 p (1 - p)))
    p = 0.975
    t2 = (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p)))
    lo, hi = interval(h)
    assert lo == pytest.approx(float(mu) - t2 * se_hksj, rel=1e-12)
    assert hi == pytest.approx(float(mu) + t2 * se_hksj, rel=1e-12)


# BCG vaccine trials (Colditz et al. 1994; metafor's dat.bcg): tpos, tneg, cpos, cneg
BCG = np.array([
    [4, 119, 11, 128], [6, 300, 29, 274], [3, 228, 11, 209], [62, 13536, 248, 12619],
    [33, 5036, 47, 5761], [180, 1361, 372, 1079], [8, 2537, 10, 619], [505, 87886, 499, 87892],
    [29, 7470, 45, 7232], [17, 1699, 65, 1600], [186, 50448, 141, 27197], [5, 2493, 3, 2338],
    [27, 16886, 29, 17825],
], dtype=float)


def _bcg_log_rr():
    a, b, c, d = BCG.T
    y = np.log(a / (a + b)) - np.log(c / (c + d))
    v = 1 / a - 1 / (a + b) + 1 / c - 1 / (c + d)
    return y, np.sqrt(v)


def test_matches_published_metafor_and_stata_values():
    # metafor's tests (Viechtbauer 2010, J. Stat. Softw. 36), checked there against Stata's metan:
    # rma(yi, vi, method="DL") on dat.bcg, log relative risk; values published to 4 decimals
    y, se = _bcg_log_rr()
    h = heterogeneity(y, se)
    assert h.q == pytest.approx(152.2330, abs=5e-5)
    assert h.tau2 == pytest.approx(0.3088, abs=5e-5)
    assert h.estimate == pytest.approx(-0.7141, abs=5e-5)
    assert 100 * h.i2 == pytest.approx(92.1173, abs=5e-5)
    assert h.flagged and h.se >= -h.estimate / 3.9952 - 5e-5  # never narrower than DL (z = -3.9952)
    # rstudent() of the DL fit to trials 1-6 (externally standardised residuals)
    h6 = heterogeneity(y[:6], se[:6])
    expected = [0.1394, -1.0279, -0.4796, -1.4694, 1.8682, 0.3783]
    assert np.allclose(h6.z, expected, atol=5e-5)


# ---------------------------------------------------------------------------------------------
# calibration under homogeneity

N_CALIBRATION = 8000


@lru_cache(maxsize=None)
def _homogeneous(k: int):
    """Replicates of k homogeneous arms y_k ~ N(mu, se_k^2): q, p, any outlier, RE coverage."""
    rng = np.random.default_rng(1000 + k)
    mu = 3.0
    se = np.linspace(0.5, 2.0, k)
    q, p, any_outlier, covered = (np.empty(N_CALIBRATION) for _ in range(4))
    for i in range(N_CALIBRATION):
        h = heterogeneity(rng.normal(mu, se), se)
        lo, hi = interval(h)
        q[i], p[i], any_outlier[i], covered[i] = h.q, h.p_value, h.outliers.size > 0, lo <= mu <= hi
    return q, p, any_outlier.astype(bool), covered.astype(bool)


@pytest.mark.parametrize("k", [2, 3, 6])
def test_rejection_rate_is_calibrated_under_homogeneity(k):
    q, p, any_outlier, covered = _homogeneous(k)
    rejections = int(np.sum(p < ALPHA))
    assert _rate_consistent_with(rejections, N_CALIBRATION, ALPHA), (k, rejections / N_CALIBRATION)
    # Bonferroni over the arms: the family-wise rate of naming any arm is at most alpha
    assert _clopper_pearson(int(any_outlier.sum()), N_CALIBRATION)[0] <= ALPHA, any_outlier.mean()
    # the modified HKSJ interval is conservative, never below its nominal level
    assert _clopper_pearson(int(covered.sum()), N_CALIBRATION)[1] >= 0.95, covered.mean()


@pytest.mark.parametrize("k", [2, 3, 6])
def test_calibration_check_catches_wrong_degrees_of_freedom(k):
    # mutation: chi2_K instead of chi2_{K-1} (rates 0.0024, 0.0034, 0.0049 instead of 0.01);
    # the same replicates and the same check as above must reject it
    q, _, _, _ = _homogeneous(k)
    rejections = int(np.sum(special.chdtrc(k, q) < ALPHA))
    assert not _rate_consistent_with(rejections, N_CALIBRATION, ALPHA), (k, rejections / N_CALIBRATION)


@pytest.mark.parametrize("k, nu", [(3, 9.0), (6, 19.0)])
def test_welch_test_is_calibrated_with_estimated_variances(k, nu):
    # variances estimated with nu dof: the chi2 reference over-rejects (2.7 % at K = 3, nu = 9;
    # 2.3 % at K = 6, nu = 19); Welch's F reference is calibrated (1.0 %, 1.05 % over 2e5
    # replicates; at K = 6, nu = 9 it is 1.2 %, slightly anti-conservative: module docstring)
    rng = np.random.default_rng(2000 + k)
    n = 4000
    sigma = np.linspace(0.5, 2.0, k)
    welch = chi2 = outlier = 0
    for _ in range(n):
        y = rng.normal(0.0, sigma)
        se = sigma * np.sqrt(rng.chisquare(nu, k) / nu)
        h = heterogeneity(y, se, nu=np.full(k, nu))
        welch += h.p_value < ALPHA
        outlier += h.outliers.size > 0
        chi2 += special.chdtrc(k - 1, h.q) < ALPHA  # Cochran's reference on the same data
        assert np.isfinite(h.df2)
    assert _rate_consistent_with(welch, n, ALPHA), welch / n
    assert _clopper_pearson(chi2, n)[0] > ALPHA, chi2 / n
    assert _clopper_pearson(outlier, n)[0] <= ALPHA, outlier / n


def test_welch_reduces_to_cochran_with_known_variances():
    y, se = [0.0, 0.3, -0.2, 0.1], [0.1, 0.2, 0.15, 0.1]
    a, b = heterogeneity(y, se), heterogeneity(y, se, nu=[np.inf] * 4)
    assert a.p_value == b.p_value and math.isinf(b.df2)
    assert np.array_equal(a.z, b.z) and np.array_equal(a.outliers, b.outliers)
    c = heterogeneity(y, se, nu=[1e12] * 4)
    assert c.p_value == pytest.approx(a.p_value, rel=1e-6)


# ---------------------------------------------------------------------------------------------
# a biased arm


@pytest.mark.parametrize("bad", [0, 1, 2])
def test_random_effects_interval_covers_when_one_arm_is_biased(bad):
    rng = np.random.default_rng(3000 + bad)
    mu, n = -1.0, 2000
    se = np.array([0.5, 1.0, 2.0])
    covered = covered_by_rule = named = 0
    for _ in range(n):
        y = rng.normal(mu, se)
        y[bad] += 10 * se[bad]
        h = heterogeneity(y, se)
        lo, hi = interval(h)
        covered += lo <= mu <= hi
        # the run's rule: the random-effects interval when flagged, the fixed-effect one otherwise
        if not h.flagged:
            w = se**-2
            m, s = np.sum(w * y) / w.sum(), w.sum() ** -0.5
            lo, hi = m - 1.96 * s, m + 1.96 * s
        covered_by_rule += lo <= mu <= hi
        named += bad in h.outliers
    assert covered / n >= 0.90, covered / n
    assert covered_by_rule / n >= 0.90, covered_by_rule / n
    # 10 of its own se is 5 units for the most precise arm (others have se 1 and 2): named less often
    # (rates over 2e5 replicates: 0.76, 0.95, 1.00)
    assert named / n >= (0.70 if bad == 0 else 0.90), named / n


def test_only_the_precise_wrong_arm_is_named():
    # the funnel failure: a Laplace-type arm 46 nats off with a tiny se, two agreeing arms
    y = np.array([46.0, 0.012, -0.009])
    se = np.array([1e-19, 0.01, 0.01])
    h = heterogeneity(y, se)
    assert h.flagged and h.outliers.tolist() == [0]
    lo, hi = interval(h)
    assert lo <= 0.0 <= hi and lo <= 46.0 <= hi  # covers the disagreement
    # with the fixed-effect fit of the others, the wrong arm dominates every good arm's reference
    # and all three arms look outlying: why the others' tau^2 is refitted
    fe_z = []
    for k in range(3):
        o = np.arange(3) != k
        w = se[o] ** -2.0
        fe_z.append((y[k] - np.sum(w * y[o]) / w.sum()) / math.sqrt(se[k] ** 2 + 1 / w.sum()))
    assert min(abs(z) for z in fe_z) > 1000


def test_two_arms_that_disagree_are_both_named():
    h = heterogeneity([0.0, 1.0], [0.1, 0.1])
    assert h.flagged and h.outliers.tolist() == [0, 1]
    assert h.z[0] == pytest.approx(-h.z[1]) and h.z[1] == pytest.approx(1 / math.sqrt(0.02))
    lo, hi = interval(h)
    assert lo < 0.0 and hi > 1.0  # t_1 = 12.7


# ---------------------------------------------------------------------------------------------
# degenerate inputs and invariances


def _untestable(h: Heterogeneity):
    assert not h.flagged and math.isnan(h.p_value) and math.isnan(h.q) and h.df == 0
    assert math.isnan(h.tau2) and math.isnan(h.i2) and h.outliers.size == 0 and np.isnan(h.z).all()


def test_fewer_than_two_arms_is_not_testable():
    h = heterogeneity([], [])
    _untestable(h)
    assert math.isnan(h.estimate) and all(math.isnan(x) for x in interval(h))
    h = heterogeneity([1.0, 2.0], [0.1, 0.2], mask=[False, False])
    _untestable(h)
    assert h.compared.size == 0 and h.excluded.size == 0
    h = heterogeneity([1.0, 2.0], [0.1, 0.2], mask=np.array([False, True]))
    _untestable(h)
    assert (h.estimate, h.se) == (2.0, 0.2) and h.compared.tolist() == [1]
    assert interval(h) == pytest.approx((2.0 - 1.959964 * 0.2, 2.0 + 1.959964 * 0.2), rel=1e-6)
    h = heterogeneity([1.0, 2.0], [0.1, 0.2], mask=[False, True], nu=[np.nan, 4.0])
    assert h.dof == 4.0 and interval(h)[1] == pytest.approx(2.0 + 2.776445 * 0.2, rel=1e-6)


def test_invalid_arms_are_excluded_and_listed():
    y = np.array([0.0, np.nan, 0.3, 5.0, 0.1, 7.0, -0.2])
    se = np.array([0.1, 0.1, 0.2, 0.0, 0.1, np.inf, 0.1])
    nu = np.array([20.0, 20.0, 20.0, 20.0, 20.0, 20.0, 0.0])
    h = heterogeneity(y, se, nu=nu)
    assert h.excluded.tolist() == [1, 3, 5, 6] and h.compared.tolist() == [0, 2, 4]
    assert np.isnan(h.z[h.excluded]).all() and np.isfinite(h.z[h.compared]).all()
    ref = heterogeneity(y[[0, 2, 4]], se[[0, 2, 4]], nu=nu[[0, 2, 4]])
    assert (h.q, h.p_value, h.estimate, h.se) == (ref.q, ref.p_value, ref.estimate, ref.se)
    # an arm outside the mask is neither compared nor excluded
    h = heterogeneity(y, se, mask=np.arange(7) != 1, nu=nu)
    assert h.excluded.tolist() == [3, 5, 6]


def test_identical_arms():
    se = np.array([0.1, 0.2, 0.4])
    h = heterogeneity([2.5, 2.5, 2.5], se)
    assert h.q == 0.0 and h.tau2 == 0.0 and h.i2 == 0.0 and h.p_value == 1.0
    assert np.all(h.z == 0.0) and h.outliers.size == 0
    assert h.estimate == 2.5 and h.se == pytest.approx(np.sum(se**-2.0) ** -0.5)  # max(1, q = 0) = 1


def test_out_of_floating_point_range_is_uninformative_not_wrong():
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        h = heterogeneity([0.0, 1.0], [1e-200, 1e-200])  # 7e199 standard errors apart
        assert h.flagged and h.p_value == 0.0 and math.isinf(h.q) and math.isinf(h.tau2)
        assert interval(h) == (-math.inf, math.inf)
        h = heterogeneity([0.0, 3.0, 3.1], [1e-200, 1.0, 1.0])  # weights 1e400 apart
        assert h.flagged and h.outliers.tolist() == [0] and interval(h) == (-math.inf, math.inf)


def test_random_extreme_inputs_never_crash_nor_give_nan():
    rng = np.random.default_rng(4000)
    for _ in range(400):
        k = int(rng.integers(0, 8))
        y = rng.normal(0.0, 10.0 ** rng.uniform(-200, 200), k)
        y[rng.random(k) < 0.05] = np.nan
        se = 10.0 ** rng.uniform(-250, 250, k)
        se[rng.random(k) < 0.1] = 0.0
        nu = None if rng.random() < 0.5 else rng.choice([0.0, 1.0, 9.0, np.inf, np.nan], k)
        with np.errstate(over="raise", divide="raise", invalid="raise"):
            h = heterogeneity(y, se, nu=nu)
            lo, hi = interval(h)
        n_compared = h.compared.size
        assert n_compared + h.excluded.size == k
        if n_compared == 0:
            assert math.isnan(h.estimate) and math.isnan(lo)
            continue
        assert not any(math.isnan(x) for x in (h.estimate, h.se, lo, hi)) and lo <= hi
        if n_compared >= 2:
            assert 0.0 <= h.p_value <= 1.0 and h.tau2 >= 0.0 and 0.0 <= h.i2 <= 1.0
            assert not np.isnan(h.z[h.compared]).any()


@pytest.mark.parametrize("scale", [1e-150, 1.0, 1e150])
def test_shift_scale_and_permutation_equivariance(scale):
    y = np.array([0.0, 0.8, -0.3, 2.5, 0.2])
    se = np.array([0.3, 0.5, 0.2, 0.4, 1.0])
    base = heterogeneity(y, se)
    assert base.flagged
    perm = np.array([3, 0, 4, 2, 1])
    shift = 7.0 * scale
    h = heterogeneity(shift + scale * y[perm], scale * se[perm])
    assert h.q == pytest.approx(base.q, rel=1e-12) and h.p_value == pytest.approx(base.p_value, rel=1e-10)
    assert h.tau2 == pytest.approx(base.tau2 * scale**2, rel=1e-12)
    assert h.estimate == pytest.approx(shift + scale * base.estimate, rel=1e-12)
    assert h.se == pytest.approx(scale * base.se, rel=1e-12)
    assert np.allclose(h.z, base.z[perm], rtol=1e-12)
    assert sorted(perm[h.outliers].tolist()) == base.outliers.tolist()


# ---------------------------------------------------------------------------------------------
# bad arguments


@pytest.mark.parametrize(
    "kwargs, error, param",
    [
        (dict(y=[[0.0, 1.0]], se=[0.1, 0.1]), ValueError, "y"),
        (dict(y=["a", "b"], se=[0.1, 0.1]), TypeError, "y"),
        (dict(y=[True, False], se=[0.1, 0.1]), TypeError, "y"),
        (dict(y=[0.0, 1.0], se=[0.1]), ValueError, "se"),
        (dict(y=[0.0, 1.0], se=[0.1, -0.1]), ValueError, "se"),
        (dict(y=[0.0, 1.0], se=[0.1, 0.1], mask=[1, 0]), TypeError, "mask"),
        (dict(y=[0.0, 1.0], se=[0.1, 0.1], mask=[True]), ValueError, "mask"),
        (dict(y=[0.0, 1.0], se=[0.1, 0.1], alpha=0.0), ValueError, "alpha"),
        (dict(y=[0.0, 1.0], se=[0.1, 0.1], alpha="0.01"), TypeError, "alpha"),
        (dict(y=[0.0, 1.0], se=[0.1, 0.1], nu=[5.0, -1.0]), ValueError, "nu"),
        (dict(y=[0.0, 1.0], se=[0.1, 0.1], nu=[5.0]), ValueError, "nu"),
    ],
)
def test_bad_arguments_raise_with_the_message_shape(kwargs, error, param):
    with pytest.raises(error, match=rf"^The '{param}' parameter of heterogeneity must be .+\. Got .+ instead\.$"):
        heterogeneity(**kwargs)


def test_interval_bad_arguments():
    h = heterogeneity([0.0, 1.0], [0.5, 0.5])
    with pytest.raises(ValueError, match=r"^The 'level' parameter of interval must be"):
        interval(h, level=1.5)
    with pytest.raises(TypeError, match=r"^The 'h' parameter of interval must be"):
        interval((0.0, 1.0))


@pytest.mark.parametrize("seed", range(6))
def test_without_deviations_every_other_field_is_the_same(seed):
    rng = np.random.default_rng(seed)
    k = 3 + seed % 4
    se = rng.uniform(0.2, 1.0, k)
    y = 0.5 * se * rng.standard_normal(k) + (8.0 if seed % 2 else 0.0) * (np.arange(k) == 0)
    nu = rng.uniform(5.0, 60.0, k)
    full = heterogeneity(y, se, nu=nu)
    lean = heterogeneity(y, se, nu=nu, deviations=False)
    for field in Heterogeneity._fields:
        if field not in ("z", "outliers"):
            np.testing.assert_array_equal(getattr(lean, field), getattr(full, field), err_msg=field)
    assert np.isnan(lean.z).all() and lean.outliers.size == 0
    assert full.flagged == bool(seed % 2)  # the shifted arm is found, so the comparison is not vacuous


def test_deviations_must_be_a_bool():
    with pytest.raises(TypeError, match=r"^The 'deviations' parameter of heterogeneity must be a bool\. Got 1 instead"):
        heterogeneity([0.0, 1.0], [0.1, 0.1], deviations=1)
