"""models.pima: the data loader (z-scoring, T validation) and the two likelihood forms."""

from pathlib import Path

import numpy as np
import pytest

from tests.tolerance import assert_within_se

import models.pima
from models.pima import N_ROWS, REFERENCE_LOG_Z, load_data, logistic_regression


def test_zscoring_uses_population_sd_of_all_rows():
    X, y = load_data(N_ROWS)
    assert X.shape == (768, 8) and y.shape == (768,)
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0, ddof=0), 1.0, rtol=1e-12)
    assert set(np.unique(y)) == {0, 1}
    raw = np.loadtxt(
        Path(models.pima.__file__).parent / "data" / "pima-indians-diabetes.csv", delimiter=",", skiprows=1
    )
    np.testing.assert_allclose(X[:, 1], (raw[:, 1] - raw[:, 1].mean()) / raw[:, 1].std(), rtol=1e-12)
    np.testing.assert_array_equal(y, raw[:, -1].astype(int))


def test_subset_is_prefix_of_full_standardised_data():
    X_all, y_all = load_data(N_ROWS)
    for T in (1, 5, 10, 50):
        X, y = load_data(T)
        np.testing.assert_array_equal(X, X_all[:T])
        np.testing.assert_array_equal(y, y_all[:T])
    assert load_data()[0].shape == (50, 8)


@pytest.mark.parametrize("T", [0, 769, -1])
def test_T_out_of_range_raises(T):
    with pytest.raises(ValueError, match="'T' parameter of load_data"):
        load_data(T)


@pytest.mark.parametrize("T", [2.5, "50", True, None])
def test_T_wrong_type_raises(T):
    with pytest.raises(TypeError, match="'T' parameter of load_data"):
        load_data(T)


def test_fast_and_bernoulli_forms_have_identical_logp(rng):
    X, y = load_data(50)
    fast = logistic_regression(X, y)
    slow = logistic_regression(X, y, fast=False)
    f_fast, f_slow = fast.compile_logp(), slow.compile_logp()
    for _ in range(20):
        point = {"theta": rng.normal(0.0, 1.0, size=8)}
        np.testing.assert_allclose(f_fast(point), f_slow(point), rtol=1e-12, atol=1e-10)
    # also far out, where a naive log(sigmoid) would underflow
    point = {"theta": np.full(8, 40.0)}
    np.testing.assert_allclose(f_fast(point), f_slow(point), rtol=1e-12)
    assert np.isfinite(f_fast(point))


# PyTensor 3 compiles the forward sampler with numba, which runs the CustomDist likelihood in object mode and says so.
@pytest.mark.filterwarnings("ignore:Numba will use object mode:UserWarning")
def test_prior_predictive_draws_labels(rng):
    import pymc as pm

    model = logistic_regression(*load_data(10))
    with model:
        idata = pm.sample_prior_predictive(draws=5, random_seed=rng)
    y = idata.prior_predictive["y"].values
    assert y.shape == (1, 5, 10) and set(np.unique(y)) <= {0, 1}


def test_model_structure():
    X, y = load_data(5)
    model = logistic_regression(X, y, prior_var=0.05)
    assert [rv.name for rv in model.free_RVs] == ["theta"]
    assert [rv.name for rv in model.observed_RVs] == ["y"]
    logp = model.compile_logp(vars=[model["theta"]])
    theta = np.zeros(8)
    # log N(0; 0, 0.05 I_8)
    np.testing.assert_allclose(logp({"theta": theta}), -4.0 * np.log(2 * np.pi * 0.05), rtol=1e-12)


@pytest.mark.parametrize(
    "X, y, prior_var, exc, param",
    [
        (np.zeros(5), np.zeros(5), 0.05, ValueError, "'X'"),
        (np.full((5, 2), np.nan), np.zeros(5), 0.05, ValueError, "'X'"),
        (np.zeros((5, 2)), np.zeros(4), 0.05, ValueError, "'y'"),
        (np.zeros((5, 2)), np.array([0, 1, 2, 0, 1]), 0.05, ValueError, "'y'"),
        (np.zeros((5, 2)), np.array([0, 1, np.nan, 0, 1]), 0.05, ValueError, "'y'"),
        (np.zeros((5, 2)), np.zeros(5), -1.0, ValueError, "'prior_var'"),
        (np.zeros((5, 2)), np.zeros(5), "a", TypeError, "'prior_var'"),
        ([["a", "b"]], np.zeros(1), 0.05, TypeError, "'X'"),
        (np.zeros((2, 2)), np.array(["0", "x"]), 0.05, TypeError, "'y'"),
    ],
)
def test_bad_inputs_raise(X, y, prior_var, exc, param):
    with pytest.raises(exc, match=param):
        logistic_regression(X, y, prior_var=prior_var)


def test_reference_values_are_documented_pairs():
    assert {5, 10, 50} <= set(REFERENCE_LOG_Z)
    for T, (log_z, se) in REFERENCE_LOG_Z.items():
        assert 1 <= T <= N_ROWS and np.isfinite(log_z) and 0 < se < 1e-4


def test_reference_agrees_with_default_laplace_arm(rng):
    """An independent run with the arm's default proposal (nu=5) lands within 4 combined SEs."""
    from pmcbandit.arms.evidence.laplace_is import LaplaceISArm

    arm = LaplaceISArm(logistic_regression(*load_data(50)), batch_size=100_000)
    log_w = np.concatenate([arm.pull(rng).values for _ in range(4)])
    w = np.exp(log_w - log_w.max())
    log_z = np.log(w.mean()) + log_w.max()
    se = w.std(ddof=1) / w.mean() / np.sqrt(w.size)
    ref, ref_se = REFERENCE_LOG_Z[50]
    assert_within_se(log_z, ref, np.hypot(se, ref_se), log_z, se, ref)
