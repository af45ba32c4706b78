"""The counter-based variates (ziggurat normals, Marsaglia-Tsang Gammas) against SciPy."""

import numba
import numpy as np
import pytest
from scipy import stats

from pmcbandit.policies import variates

#: Kolmogorov distribution's 0.1% critical value of sqrt(n) D_n (one fixed-seed check each).
KS_CRIT = 1.95


@numba.njit
def _normals(n, key):
    out = np.empty(n)
    s = np.uint64(key)
    for i in range(n):
        out[i], s = variates.std_normal(s)
    return out


@numba.njit
def _gammas(n, shape, key):
    out = np.empty(n)
    s = np.uint64(key)
    for i in range(n):
        out[i], s = variates.std_gamma(shape, s)
    return out


def test_ziggurat_normals_match_scipy():
    n = 200_000
    z = _normals(n, 12345)
    assert stats.kstest(z, stats.norm.cdf).statistic <= KS_CRIT / np.sqrt(n)
    # the tail beyond the base layer's edge r (Marsaglia's tail method) has its normal mass
    p_tail = 2 * stats.norm.sf(variates._ZIG_R)
    tail = np.abs(z) > variates._ZIG_R
    assert abs(tail.mean() - p_tail) <= 4 * np.sqrt(p_tail * (1 - p_tail) / n)
    assert stats.kstest(np.abs(z[tail]) - variates._ZIG_R,
                        lambda x: 1 - stats.norm.sf(variates._ZIG_R + x) / stats.norm.sf(variates._ZIG_R)).statistic \
        <= KS_CRIT / np.sqrt(tail.sum())
    # the wedges: the law of |z| inside the layers' x-range is normal too (chi-square on 64 equiprobable bins)
    edges = stats.norm.ppf(np.linspace(0, 1, 65))
    counts, _ = np.histogram(z, edges)
    chi2 = ((counts - n / 64) ** 2 / (n / 64)).sum()
    assert chi2 <= stats.chi2.ppf(0.999, 63)


@pytest.mark.parametrize("shape", [1.0, 1.37, 8.5, 2500.0])
def test_marsaglia_tsang_gammas_match_scipy(shape):
    n = 50_000
    g = _gammas(n, shape, 7)
    assert stats.kstest(g, stats.gamma(shape).cdf).statistic <= KS_CRIT / np.sqrt(n)


def test_the_checks_have_power():
    """A wrong law is rejected at the same critical value: Gamma(1.1) draws are not Gamma(1)..."""
    n = 50_000
    assert stats.kstest(_gammas(n, 1.1, 7), stats.gamma(1.0).cdf).statistic > KS_CRIT / np.sqrt(n)
    # and normals shifted by 0.05 sd are not standard normals
    assert stats.kstest(_normals(n, 3) + 0.05, stats.norm.cdf).statistic > KS_CRIT / np.sqrt(n)
