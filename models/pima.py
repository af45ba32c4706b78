"""Bayesian logistic regression on the Pima Indians diabetes data (Neufeld et al., 2014, App. G).

The model of Sec. 6.3 / App. G of Neufeld, Gyorgy, Schuurmans and Szepesvari (2014),
"Adaptive Monte Carlo via bandit allocation":

.. math::

    \\theta \\sim \\mathcal N(0, 0.05\\, I_8), \\qquad
    y_t \\mid \\theta \\sim \\mathrm{Bernoulli}(\\sigma(\\theta^\\top x_t)), \\quad t = 1..T,

with no intercept, on the first ``T`` rows of the UCI Pima Indians diabetes data set
(768 rows, 8 features, z-scored over all 768 rows). The target is the evidence
:math:`Z = \\int p(\\theta) \\prod_t p(y_t \\mid x_t, \\theta)\\, d\\theta`.

:data:`REFERENCE_LOG_Z` holds long high-precision Laplace-t importance-sampling
values of :math:`\\log Z`, used as ground truth by the benchmarks.
"""

from __future__ import annotations

import numbers
from importlib import resources

import numpy as np

__all__ = ["load_data", "logistic_regression", "REFERENCE_LOG_Z", "N_ROWS", "N_FEATURES"]

N_ROWS = 768
N_FEATURES = 8

#: ``{T: (log Z, standard error)}`` for the default model
#: ``logistic_regression(*load_data(T))`` (prior variance 0.05, fast likelihood).
#: Computed with :class:`pmcbandit.arms.evidence.laplace_is.LaplaceISArm` with a
#: lighter-tailed proposal than the arm's default (Student-t ``df=20``,
#: ``inflation=1.1``: relative weight variance 0.105 per draw at T=50 against 0.40),
#: ``4 * 10**8`` importance weights at T=50 (two runs, seeds
#: ``numpy.random.default_rng([20141, 50])`` with ``10**8`` and ``[20142, 50]`` with
#: ``3 * 10**8``, giving -32.881411 +- 3.2e-05 and -32.881428 +- 1.9e-05, pooled by
#: their numbers of weights) and ``2 * 10**7`` at T=5 and 10 (seed ``[20141, T]``),
#: batches of ``10**5``, accumulated in log space; the SE is the delta-method SE of
#: the log of the mean weight, ``sqrt(relvar / N)``. Reproduce (about 5 + 12 CPU
#: minutes) with
#: ``.venv/bin/python -m benchmarks.bench_laplace_smc --only-reference --draws 100000000``
#: and ``... --only-reference --reference-T 50 --draws 300000000 --seed 20142``
#: (PyMC 5.28.5, PyTensor 2.38.3, 2026-11-22; ``benchmarks/results/bench_laplace_smc_reference.md``).
#: T=768 (the calibration suite's ``pima_768``, :mod:`models.evidence_suite`): the same
#: proposal (Student-t ``df=20`` at the Laplace fit, covariance x 1.1) written independently
#: of the arms in ``benchmarks/reference_evidence.py`` (from ``ModelDensity.laplace`` and
#: ``ModelDensity.compile_logp_batch``), two runs of ``10**7`` weights (seeds
#: ``numpy.random.default_rng(20141)`` and ``(20142)``, batches of ``5 * 10**4``):
#: -430.145715 +- 1.0e-04 and -430.145690 +- 1.0e-04, pooled by summing their weight sums
#: (relative variance 0.107 per draw, Pareto k -0.18). Reproduce (about 7 of the script's 19
#: CPU minutes) with ``.venv/bin/python -m benchmarks.reference_evidence`` (PyMC 5.28.5,
#: PyTensor 2.38.3, 2026-11-23; ``benchmarks/results/reference_evidence.md``).
REFERENCE_LOG_Z: dict[int, tuple[float, float]] = {
    5: (-3.235560, 6.9e-05),
    10: (-6.759725, 6.6e-05),
    50: (-32.881424, 1.6e-05),
    768: (-430.145703, 7.3e-05),
}


def _check_T(T) -> int:
    if isinstance(T, bool) or not isinstance(T, numbers.Integral):
        raise TypeError(
            f"The 'T' parameter of load_data must be an int in [1, {N_ROWS}]. Got {T!r} instead."
        )
    if not 1 <= int(T) <= N_ROWS:
        raise ValueError(
            f"The 'T' parameter of load_data must be an int in [1, {N_ROWS}]. Got {T!r} instead."
        )
    return int(T)


def load_data(T: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Load the first ``T`` rows of the z-scored Pima Indians diabetes data.

    Each of the 8 features is standardised as :math:`(x - \\bar x) / s` with the mean
    :math:`\\bar x` and the *population* standard deviation :math:`s` (``ddof=0``)
    of all 768 rows, so the features of a subset do not depend on ``T``
    (Neufeld et al., 2014, App. G use the same data at T = 5, 10, 50).

    Parameters
    ----------
    T : int, default 50
        Number of leading rows to return, in ``[1, 768]``.

    Returns
    -------
    X : ndarray, shape (T, 8), float64
        Standardised features.
    y : ndarray, shape (T,), int64
        Labels in ``{0, 1}`` (the CSV's last column).
    """
    T = _check_T(T)
    data_file = resources.files("models").joinpath("data/pima-indians-diabetes.csv")
    with data_file.open("r", encoding="utf-8") as fh:
        raw = np.loadtxt(fh, delimiter=",", skiprows=1, dtype=np.float64)
    features = raw[:, :N_FEATURES]
    X = (features - features.mean(axis=0)) / features.std(axis=0, ddof=0)
    y = raw[:, -1].astype(np.int64)
    return np.ascontiguousarray(X[:T]), np.ascontiguousarray(y[:T])


def _check_inputs(X, y, prior_var):
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"The 'X' parameter of logistic_regression must be a numeric 2-D array. Got {X!r} instead."
        ) from None
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(
            "The 'X' parameter of logistic_regression must be a non-empty 2-D array (T, d). "
            f"Got an array of shape {X.shape!r} instead."
        )
    if not np.all(np.isfinite(X)):
        raise ValueError(
            "The 'X' parameter of logistic_regression must be finite (no NaN/inf). "
            f"Got {int(np.sum(~np.isfinite(X)))} non-finite entries instead."
        )
    y_arr = np.asarray(y)
    if y_arr.shape != (X.shape[0],):
        raise ValueError(
            "The 'y' parameter of logistic_regression must be a 1-D array with one label "
            f"per row of X (shape ({X.shape[0]},)). Got shape {y_arr.shape!r} instead."
        )
    try:
        y_float = np.asarray(y_arr, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"The 'y' parameter of logistic_regression must be numeric labels in {{0, 1}}. Got {y!r} instead."
        ) from None
    if not np.all((y_float == 0.0) | (y_float == 1.0)):
        bad = y_arr[~((y_float == 0.0) | (y_float == 1.0))]
        raise ValueError(
            "The 'y' parameter of logistic_regression must contain only 0 and 1 (no NaN). "
            f"Got {bad[:5]!r} instead."
        )
    if isinstance(prior_var, bool) or not isinstance(prior_var, numbers.Real):
        raise TypeError(
            "The 'prior_var' parameter of logistic_regression must be a positive real number. "
            f"Got {prior_var!r} instead."
        )
    if not (np.isfinite(prior_var) and prior_var > 0):
        raise ValueError(
            "The 'prior_var' parameter of logistic_regression must be a positive finite "
            f"real number. Got {prior_var!r} instead."
        )
    return X, y_float.astype(np.int64), float(prior_var)


def _bernoulli_logit_logp(value, eta):
    """Log pmf of Bernoulli(sigmoid(eta)) at ``value`` in {0, 1}: ``y*eta - softplus(eta)``.

    One softplus per observation, where ``pm.Bernoulli(logit_p=eta)`` evaluates
    ``log sigmoid`` and ``log1m sigmoid`` under a switch (two softplus terms): one
    transcendental call per observation instead of two.
    """
    import pytensor.tensor as pt

    return value * eta - pt.softplus(eta)


def _bernoulli_logit_random(eta, rng=None, size=None):
    from scipy.special import expit

    return rng.binomial(1, expit(eta), size=size)


def logistic_regression(X, y, prior_var: float = 0.05, *, fast: bool = True):
    """Build the Bayesian logistic regression of Neufeld et al. (2014), App. G.

    .. math::

        \\theta \\sim \\mathcal N(0, v I_d), \\qquad
        \\log p(y_t \\mid \\theta) = y_t \\eta_t - \\log(1 + e^{\\eta_t}), \\quad
        \\eta_t = \\theta^\\top x_t,

    no intercept. ``y`` is observed data (so the model evidence is that of ``y``
    given ``X``) and ``theta`` is the only free variable.

    Parameters
    ----------
    X : array_like, shape (T, d)
        Features (finite).
    y : array_like, shape (T,)
        Labels in ``{0, 1}``.
    prior_var : float, default 0.05
        Prior variance ``v`` of each coefficient (``sigma = sqrt(v)``).
    fast : bool, default True
        ``True``: the likelihood is a ``pm.CustomDist`` with log pmf
        ``y*eta - softplus(eta)`` (one softplus per observation, ~2x faster to
        evaluate); ``False``: ``pm.Bernoulli(logit_p=eta)``. Both define the same
        density up to floating-point rounding.

    Returns
    -------
    pymc.Model
        Free variable ``theta`` (shape ``(d,)``), observed variable ``y``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    X, y, prior_var = _check_inputs(X, y, prior_var)
    d = X.shape[1]
    with pm.Model() as model:
        theta = pm.Normal("theta", mu=0.0, sigma=float(np.sqrt(prior_var)), shape=d)
        # A constant (not pm.Data) lets PyTensor fold X into the compiled logp.
        eta = pt.dot(pt.as_tensor_variable(X), theta)
        if fast:
            pm.CustomDist(
                "y",
                eta,
                logp=_bernoulli_logit_logp,
                random=_bernoulli_logit_random,
                observed=y,
                dtype="int64",
            )
        else:
            pm.Bernoulli("y", logit_p=eta, observed=y)
    return model
