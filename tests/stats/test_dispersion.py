"""The lower confidence bound of a variance that reads the data's kurtosis (:mod:`pmcbandit.stats.dispersion`)."""

import math

import numpy as np
import pytest
from scipy import stats

from pmcbandit.stats.dispersion import MIN_SIZE, variance_lower_bound
from tests.tolerance import error_rate_lower, error_rate_upper

ALPHA = 0.01
RUNS = 20_000


def _samples(rng, df, m):
    """RUNS samples of size m with variance 1: normal (df = inf) or Student-t with df degrees of freedom."""
    if math.isinf(df):
        return rng.standard_normal((RUNS, m))
    return rng.standard_t(df, (RUNS, m)) / math.sqrt(df / (df - 2))


def _normal_theory(x):
    m = x.shape[-1]
    return (m - 1) * x.var(axis=-1, ddof=1) / stats.chi2.ppf(1 - ALPHA, m - 1)


@pytest.mark.parametrize("df, m", [(math.inf, 6), (math.inf, 20), (math.inf, 200), (5, 20), (5, 200), (3, 50)])
def test_the_bound_exceeds_the_true_variance_at_about_its_level(df, m):
    """The level is approximate (a large-sample argument): over 20 000 samples the rate at which the bound exceeds
    the true variance stays below 2 alpha (one-sided 95 % Clopper-Pearson), normal or heavy-tailed, 6 to 200
    observations."""
    x = _samples(np.random.default_rng(7), df, m)
    above = int((variance_lower_bound(x, ALPHA) > 1.0).sum())
    assert error_rate_upper(above, RUNS) <= 2 * ALPHA, (df, m, above)


def test_the_normal_theory_bound_fails_on_heavy_tails():
    """The mutation the test above must catch: on Student-t(3) data the chi-square bound exceeds the true variance
    well above 2 alpha."""
    x = _samples(np.random.default_rng(7), 3, 50)
    above = int((_normal_theory(x) > 1.0).sum())
    assert error_rate_lower(above, RUNS) > 2 * ALPHA, above


def test_on_many_normal_observations_it_meets_the_normal_theory_bound():
    x = np.random.default_rng(3).standard_normal(20_000)
    assert variance_lower_bound(x, ALPHA) == pytest.approx(float(_normal_theory(x)), rel=0.01)


def test_a_larger_spread_is_established_with_more_observations():
    rng = np.random.default_rng(5)
    few, many = rng.normal(0, 2, (2, 10)), rng.normal(0, 2, (2, 1000))
    assert variance_lower_bound(few, ALPHA).max() < variance_lower_bound(many, ALPHA).min() < 4.0


def test_axis_and_shapes():
    x = np.random.default_rng(1).standard_normal((3, 12))
    rows = [variance_lower_bound(row, ALPHA) for row in x]
    assert isinstance(rows[0], float)
    np.testing.assert_allclose(variance_lower_bound(x, ALPHA), rows, rtol=1e-12)
    np.testing.assert_allclose(variance_lower_bound(x.T, ALPHA, axis=0), rows, rtol=1e-12)


def test_no_spread_gives_zero():
    assert variance_lower_bound(np.full(8, 2.5), ALPHA) == 0.0


def test_input_errors():
    with pytest.raises(ValueError, match="'x' parameter of variance_lower_bound must hold at least 6"):
        variance_lower_bound(np.arange(MIN_SIZE - 1.0), ALPHA)
    with pytest.raises(ValueError, match="'alpha' parameter of variance_lower_bound must be in"):
        variance_lower_bound(np.arange(10.0), 0.5)
