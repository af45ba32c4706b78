r"""Do the arms agree? A heterogeneity test across arms and an interval that covers disagreement.

Every arm of a run estimates the same quantity, so arm estimates that differ by more than
their standard errors allow are evidence that some standard error is wrong (a biased arm, or
one whose heavy-tailed weights make its sample variance far too small). The arms are treated
as the "studies" of a meta-analysis on the scale where they are compared (for evidence the
caller passes :math:`y_k = \log\bar Z_k` with the delta-method :math:`se_k = SE_k/\bar Z_k`).

Formulas (:math:`K` compared arms, :math:`w_k = 1/se_k^2`)
------------------------------------------------------------
* Cochran's (1954) statistic :math:`Q = \sum_k w_k (y_k - \hat y_{FE})^2`,
  :math:`\hat y_{FE} = \sum_k w_k y_k / \sum_k w_k`, :math:`Q \sim \chi^2_{K-1}` under
  homogeneity with known :math:`se_k`. When the :math:`se_k` are estimated with
  :math:`\nu_k` degrees of freedom (argument ``nu``), Welch's (1951) approximate
  :math:`F` test replaces the :math:`\chi^2` reference (see :func:`heterogeneity`).
* DerSimonian & Laird (1986) between-arm variance
  :math:`\hat\tau^2 = \max\{0, (Q-(K-1))/(\sum w_k - \sum w_k^2/\sum w_k)\}`, and
  Higgins & Thompson's (2002) :math:`I^2 = \max\{0, (Q-(K-1))/Q\}`.
* Random-effects mean :math:`\hat\mu = \sum v_k y_k/\sum v_k`, :math:`v_k = 1/(se_k^2+\hat\tau^2)`,
  with the Hartung–Knapp (2001) / Sidik–Jonkman (2002) variance and :math:`t_{K-1}` quantiles,
  in Knapp & Hartung's (2003) modified form
  :math:`\widehat{Var}(\hat\mu) = \max\{1, q\}/\sum v_k`,
  :math:`q = \sum v_k(y_k-\hat\mu)^2/(K-1)`.
  The :math:`\max\{1,q\}` makes the interval never narrower than the DerSimonian–Laird normal
  interval :math:`\hat\mu \pm z\,(\sum v_k)^{-1/2}` (:math:`t_{K-1} > z`); without it, arms
  that agree more closely than their SEs predict (:math:`q < 1`) get an HKSJ interval narrower
  than the fixed-effect one, which Röver, Knapp & Friede (2015) show is common with few
  studies. With :math:`K = 2` or 3 arms the interval is wide (:math:`t_1 = 12.7`,
  :math:`t_2 = 4.3`): it covers the disagreement.
* Per-arm externally standardised (leave-one-out) deviation, the studentized deleted
  residual of Viechtbauer & Cheung (2010) (metafor's ``rstudent``):
  :math:`z_k = (y_k - \hat\mu_{-k})/\sqrt{se_k^2 + \hat\tau^2_{-k} + Var(\hat\mu_{-k})}`, the
  random-effects fit of the other arms (its own DerSimonian–Laird :math:`\hat\tau^2_{-k}`,
  0 when one other arm is left). When the others agree (:math:`\hat\tau^2_{-k} = 0`) this is
  the fixed-effect leave-one-out deviation. Refitting :math:`\tau^2` matters: with the
  fixed-effect fit, one wrong arm with a tiny :math:`se` dominates every other arm's
  reference and every arm looks outlying; with it, the others' reference is the disagreeing
  pair's midpoint, widened by their disagreement, and only the wrong arm stands out.
  Outliers: :math:`|z_k|` beyond the two-sided Bonferroni threshold :math:`\alpha/K`. Under
  homogeneity :math:`y_k` is independent of the others' fit and the denominator is at least
  the deviation's standard deviation, so the family-wise false-alarm rate is at most
  :math:`\alpha`. With :math:`K = 2`, :math:`z_1 = -z_2` and both arms are named: two arms
  cannot say which is wrong.

Rule for a run
--------------
* **Which arms enter** (``mask``): only arms whose variance estimate looks honest — an
  estimate of their own with enough degrees of freedom, and for importance-type arms a Pareto
  :math:`\hat k` below the reliability threshold. An arm whose variance is known to be
  unreliable would make the test fire for the wrong reason, or hide a real disagreement.
  Pass the arms' degrees of freedom as ``nu``: with estimated variances the :math:`\chi^2`
  reference is anti-conservative, the more so the fewer degrees of freedom and the more arms;
  Welch's test holds its level (``tests/stats/test_consistency.py`` measures both), and arms with
  :math:`\nu_k \ge 20` are best.
* **Level** :math:`\alpha` = :data:`DEFAULT_ALPHA` = 0.01, one test per result. A false alarm
  only costs width (the random-effects interval replaces the fixed-effect one) and a warning;
  a strict level keeps warnings rare enough to be read, while the failures this guards against
  (an arm tens or hundreds of its SEs away) are detected at any level (the power for one arm
  off by 10 of its SEs among three is measured in ``tests/stats/test_consistency.py``).
  Cost: the test itself is a few vector operations; a false alarm (rate :math:`\alpha`)
  replaces the fixed-effect interval by the random-effects one, several times wider for
  :math:`K \le 3`.
* **When flagged** (``p_value < alpha``): report :func:`interval` of this result (the
  random-effects estimate with the modified HKSJ :math:`t_{K-1}` interval) instead of the
  fixed-effect one, warn, and name the arms in ``outliers`` (with their ``z``).
  Not flagged: keep the fixed-effect (inverse-variance) result.

Degenerate inputs (documented rules, never a crash)
---------------------------------------------------
* An arm selected by ``mask`` with a non-finite ``y``, an ``se`` that is 0, NaN or inf, or a
  ``nu`` that is 0 or NaN, is left out of the comparison and listed in ``excluded`` (a zero
  ``se`` claims infinite precision, which no Monte Carlo arm has; an infinite one carries no
  information; ``nu = 0`` means the arm has no variance estimate).
* Fewer than two arms compared: not testable: ``flagged`` False, ``q``, ``p_value``,
  ``tau2``, ``i2`` NaN, no outliers; ``estimate``/``se`` are the single arm's (``dof`` its
  ``nu``, inf when not given), or NaN with none.
* All compared arms equal: :math:`Q = 0`, :math:`I^2 = 0`, :math:`p = 1`.
* Beyond floating-point range (arms disagreeing by more than :math:`10^{154}` standard errors,
  or standard errors differing by a factor above :math:`10^{154}` while the arms disagree):
  :math:`\tau^2` (and possibly :math:`Q`) is inf, the estimate is the unweighted mean with an
  infinite standard error (an uninformative interval, never a wrong narrow one), and a
  leave-one-out ``z`` against such a fit is 0.

References
----------
Cochran, W. G. (1954). The combination of estimates from different experiments. Biometrics 10, 101–129.
DerSimonian, R., Laird, N. (1986). Meta-analysis in clinical trials. Control. Clin. Trials 7, 177–188.
Hartung, J., Knapp, G. (2001). A refined method for the meta-analysis of controlled clinical
trials with binary outcome. Stat. Med. 20, 3875–3889.
Higgins, J. P. T., Thompson, S. G. (2002). Quantifying heterogeneity in a meta-analysis.
Stat. Med. 21, 1539–1558 (:math:`I^2 = (H^2-1)/H^2`, :math:`H^2 = Q/(K-1)`).
Knapp, G., Hartung, J. (2003). Improved tests for a random effects meta-regression with a
single covariate. Stat. Med. 22, 2693–2710 (the ad hoc :math:`\max\{1, q\}` modification).
Röver, C., Knapp, G., Friede, T. (2015). Hartung-Knapp-Sidik-Jonkman approach and its
modification for random-effects meta-analysis with few studies. BMC Med. Res. Methodol. 15, 99.
Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance components.
Biometrics Bulletin 2, 110–114.
Sidik, K., Jonkman, J. N. (2002). A simple confidence interval for meta-analysis. Stat. Med. 21, 3153–3159.
Viechtbauer, W., Cheung, M. W.-L. (2010). Outlier and influence diagnostics for meta-analysis.
Res. Synth. Methods 1, 112–125.
Welch, B. L. (1951). On the comparison of several mean values: an alternative approach.
Biometrika 38, 330–336.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy import special

from pmcbandit._validation import param_message, check_open_unit

__all__ = ["DEFAULT_ALPHA", "Heterogeneity", "heterogeneity", "interval"]

#: Level of the heterogeneity test used by a run (module docstring, "Rule for a run").
DEFAULT_ALPHA = 0.01



class Heterogeneity(NamedTuple):
    r"""Result of :func:`heterogeneity`.

    Attributes
    ----------
    q : float
        Cochran's :math:`Q` (NaN when fewer than two arms are compared).
    df : int
        :math:`K - 1` (0 when fewer than two arms are compared).
    df2 : float
        Denominator degrees of freedom of Welch's :math:`F` reference (inf: the :math:`\chi^2_{K-1}`
        reference of known standard errors).
    p_value : float
        P-value of the homogeneity test (NaN when not testable).
    tau2 : float
        DerSimonian–Laird between-arm variance.
    i2 : float
        Higgins & Thompson's :math:`I^2` in [0, 1].
    compared : ndarray of int
        Indices of the arms that entered the comparison.
    excluded : ndarray of int
        Indices selected by ``mask`` but left out (non-finite ``y``, ``se`` not in (0, inf),
        ``nu`` 0 or NaN).
    z : ndarray, shape (n_arms,)
        Leave-one-out standardised deviation of each arm (NaN for arms not compared).
    outliers : ndarray of int
        Compared arms whose ``|z|`` exceeds the two-sided Bonferroni threshold at ``alpha``.
    flagged : bool
        ``p_value < alpha``.
    estimate, se, dof : float
        Random-effects estimate, its modified Hartung–Knapp–Sidik–Jonkman standard error and
        the degrees of freedom (:math:`K - 1`) of its t interval.
    alpha : float
        Test level.
    """

    q: float
    df: int
    df2: float
    p_value: float
    tau2: float
    i2: float
    compared: np.ndarray
    excluded: np.ndarray
    z: np.ndarray
    outliers: np.ndarray
    flagged: bool
    estimate: float
    se: float
    dof: float
    alpha: float


class _Fit(NamedTuple):
    """Random-effects fits of the rows of a (m, k) array (each field has shape (m,) or (m, k))."""

    q: np.ndarray
    tau: np.ndarray  # DerSimonian-Laird tau (its square is tau^2)
    mu: np.ndarray
    se_mu: np.ndarray  # DerSimonian-Laird standard error (sum v)^(-1/2)
    spread: np.ndarray  # sqrt(sum v (y - mu)^2 / sum v): the HKSJ numerator, as a standard deviation
    share_fe: np.ndarray  # w_k / sum(w)
    share_re: np.ndarray  # v_k / sum(v)
    shrink: np.ndarray  # se_k^2 / (se_k^2 + tau^2)


def _fit(y: np.ndarray, se: np.ndarray) -> _Fit:
    """DerSimonian-Laird random-effects fit of each row of finite ``y`` with finite positive ``se``.

    Computed in units of the row's smallest ``se`` around its most precise arm's ``y``, so that
    neither ``1/se^2`` nor ``se^2`` leaves floating-point range for any scale of the inputs.
    Rows out of floating-point range (infinite ``tau``) get the unweighted mean and infinite
    standard errors.
    """
    m, k = y.shape
    rows = np.arange(m)
    best = np.argmin(se, axis=1)
    s0, y0 = se[rows, best], y[rows, best]
    ys = (y - y0[:, None]) / s0[:, None]
    ss = se / s0[:, None]  # >= 1
    w = 1.0 / ss**2  # in [0, 1]
    big_w = w.sum(axis=1)
    share_fe = w / big_w[:, None]
    finite = np.isfinite(ys).all(axis=1)
    all_finite = bool(finite.all())
    if not all_finite:
        ys[~finite] = 0.0
    y_fe = np.einsum("ij,ij->i", share_fe, ys)
    q = np.sum(((ys - y_fe[:, None]) / ss) ** 2, axis=1)  # not w (y - y_fe)^2: w can underflow to 0
    if not all_finite:
        q[~finite] = np.inf
    # sum w - sum w^2 / sum w = sum_k w_k (sum_{j != k} w_j) / sum w, without cancellation
    c = np.einsum("ij,ij->i", w, w @ _off_diagonal(k)) / big_w
    excess = np.maximum(q - (k - 1), 0.0)
    tau_s = np.zeros(m)
    pos = excess > 0
    if pos.any():
        with np.errstate(divide="ignore", invalid="ignore"):
            tau_s[pos] = np.sqrt(excess[pos] / c[pos])
    lost = ~np.isfinite(tau_s)  # out of floating-point range: uninformative, never narrow
    any_lost = bool(lost.any())
    if any_lost:
        tau_s[lost] = 0.0
    scale = np.maximum(1.0, tau_s)
    t = (tau_s / scale)[:, None]
    v = 1.0 / ((ss / scale[:, None]) ** 2 + t * t)
    share_re = v / v.sum(axis=1, keepdims=True)
    mu_s = np.einsum("ij,ij->i", share_re, ys)
    spread = s0 * np.sqrt(np.einsum("ij,ij->i", share_re, (ys - mu_s[:, None]) ** 2))
    shrink = 1.0 / (1.0 + (tau_s[:, None] / ss) ** 2)
    fit = _Fit(q, s0 * tau_s, y0 + s0 * mu_s, s0 * scale / np.sqrt(v.sum(axis=1)), spread, share_fe,
               share_re, shrink)
    if any_lost:
        fit.mu[lost] = y[lost].mean(axis=1)
        fit.share_re[lost] = 1.0 / k
        fit.shrink[lost] = 0.0
        for field in (fit.tau, fit.se_mu, fit.spread):
            field[lost] = np.inf
    return fit


@lru_cache(maxsize=None)
def _off_diagonal(k: int) -> np.ndarray:
    return 1.0 - np.eye(k)


@lru_cache(maxsize=None)
def _others(k: int) -> np.ndarray:
    """Row i: the indices ``0..k-1`` without ``i``."""
    return np.array([[j for j in range(k) if j != i] for i in range(k)], dtype=np.int64).reshape(k, k - 1)


def _welch(q: float, k: int, share: np.ndarray, nu: np.ndarray) -> tuple[float, float]:
    """P-value and denominator dof of the homogeneity test (Welch 1951 when ``nu`` is finite)."""
    if not math.isfinite(q):
        return 0.0, np.inf
    lam = float(np.sum((1.0 - share) ** 2 / nu))
    if lam == 0.0:
        return float(special.chdtrc(k - 1, q)), np.inf
    f = q / (k - 1) / (1.0 + 2.0 * (k - 2) / (k**2 - 1) * lam)
    df2 = (k**2 - 1) / (3.0 * lam)
    return float(special.fdtrc(k - 1, df2, f)), df2


def _leave_one_out(y: np.ndarray, se: np.ndarray, nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Studentized deleted residuals and the Satterthwaite dof of their denominators.

    The denominator :math:`D_k = se_k^2 + \hat\tau^2_{-k} + Var(\hat\mu_{-k})` has two
    estimated parts: :math:`se_k^2` (``nu_k`` dof) and :math:`Var(\hat\mu_{-k}) = 1/\sum v_j`,
    whose dof by the delta method (``tau^2`` held fixed) is
    :math:`1/\sum_j g_j^2/\nu_j`, :math:`g_j = (v_j/\sum v)\,se_j^2/(se_j^2+\hat\tau^2_{-k})`;
    Satterthwaite (1946) combines them. All inf when every ``nu`` is inf. A deviation from a
    fit out of floating-point range is 0.
    """
    k = y.size
    others = _others(k)
    fit = _fit(y[others], se[others])
    d = np.hypot(np.hypot(se, fit.tau), fit.se_mu)
    ok = np.isfinite(d)
    z = np.where(ok, (y - fit.mu) / np.where(ok, d, 1.0), 0.0)
    g = fit.share_re * fit.shrink
    inv_nu_mu = np.sum(g**2 / nu[others], axis=1)
    with np.errstate(under="ignore", invalid="ignore"):
        parts = (se / d) ** 4 / nu + (fit.se_mu / d) ** 4 * inv_nu_mu
    with np.errstate(divide="ignore"):
        dof = np.where(ok & (parts > 0), 1.0 / parts, np.inf)
    return z, dof


def _vector(value, name: str, size: int | None = None) -> np.ndarray:
    door = "heterogeneity"
    requirement = "a 1-D array of real numbers" + ("" if size is None else f" of length {size} (one per arm)")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise TypeError(param_message(name, door, requirement, value)) from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(param_message(name, door, requirement, value))
    if arr.ndim != 1 or (size is not None and arr.size != size):
        raise ValueError(param_message(name, door, requirement, value))
    return arr.astype(np.float64)


def heterogeneity(y, se, mask=None, alpha: float = DEFAULT_ALPHA, *, nu=None,
                  deviations: bool = True) -> Heterogeneity:
    r"""Test whether per-arm estimates agree, and give a random-effects interval that covers them.

    Parameters
    ----------
    y : array_like of float, shape (n_arms,)
        Per-arm estimates on the scale where they are compared (log of each arm's mean for
        evidence).
    se : array_like of float, shape (n_arms,)
        Their standard errors (>= 0; 0, NaN or inf leave the arm out, see the module docstring).
    mask : array_like of bool, shape (n_arms,), optional
        Arms that enter the comparison (default all): arms with an honest-looking variance.
    alpha : float, default 0.01
        Level of the test and of the Bonferroni outlier threshold.
    nu : array_like of float, shape (n_arms,), optional
        Degrees of freedom of each arm's variance estimate (inf for a known variance; 0 or NaN,
        no variance estimate, leave the arm out).
        Given, the test is Welch's (1951) approximate F test,
        :math:`F = \frac{Q/(K-1)}{1 + \frac{2(K-2)}{K^2-1}\Lambda} \sim F_{K-1,\,(K^2-1)/(3\Lambda)}`,
        :math:`\Lambda = \sum_k (1 - w_k/W)^2/\nu_k`, which reduces to
        :math:`Q \sim \chi^2_{K-1}` as :math:`\nu_k \to \infty`; the outlier threshold uses
        Student t quantiles with the Satterthwaite degrees of freedom of each :math:`z_k`'s
        denominator.
    deviations : bool, default True
        Whether to compute the per-arm leave-one-out deviations (``z``, ``outliers``). ``False``: ``z`` is
        all NaN and ``outliers`` empty, every other field the same; for a caller that reads only the test
        and the random-effects estimate (a run's interim status, evaluated again and again).

    Returns
    -------
    Heterogeneity
        See the class; formulas and references in the module docstring.

    Examples
    --------
    >>> h = heterogeneity([0.0, 0.1, 5.0], [0.1, 0.1, 0.1])
    >>> bool(h.flagged), h.outliers.tolist()
    (True, [2])
    """
    door = "heterogeneity"
    alpha = check_open_unit(alpha, "alpha", door)
    if not isinstance(deviations, (bool, np.bool_)):
        raise TypeError(param_message("deviations", door, "a bool", deviations))
    y = _vector(y, "y")
    n_arms = y.size
    se = _vector(se, "se", n_arms)
    if (se < 0).any():
        raise ValueError(param_message("se", door, "non-negative (0, NaN or inf leave an arm out)", se))
    if nu is None:
        nu = np.full(n_arms, np.inf)
    else:
        nu = _vector(nu, "nu", n_arms)
        if (nu < 0).any():
            raise ValueError(param_message("nu", door, "non-negative (0 or NaN: no variance estimate)", nu))
    if mask is None:
        mask = np.ones(n_arms, dtype=bool)
    else:
        raw = mask
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(param_message("mask", door, "a 1-D array of bool", raw))
        if mask.shape != (n_arms,):
            raise ValueError(param_message("mask", door, f"a 1-D array of bool of length {n_arms} (one per arm)", raw))

    valid = np.isfinite(y) & np.isfinite(se) & (se > 0) & (nu > 0)
    compared = np.nonzero(mask & valid)[0]
    excluded = np.nonzero(mask & ~valid)[0]
    k = compared.size
    z = np.full(n_arms, np.nan)
    none = np.array([], dtype=np.int64)
    if k < 2:
        estimate, est_se, dof = (np.nan, np.nan, np.nan) if k == 0 else (
            float(y[compared[0]]), float(se[compared[0]]), float(nu[compared[0]]))
        return Heterogeneity(np.nan, 0, np.inf, np.nan, np.nan, np.nan, compared, excluded, z, none, False,
                             estimate, est_se, dof, alpha)

    yc, sc, nc = y[compared], se[compared], nu[compared]
    # overflow (inputs beyond floating-point range) has a documented rule, not a warning
    with np.errstate(over="ignore"):
        fit = _fit(yc[None], sc[None])
        tau2 = float(np.square(fit.tau[0]))  # numpy, not float ** 2, which raises on overflow
    q, mu = float(fit.q[0]), float(fit.mu[0])
    p_value, df2 = _welch(q, k, fit.share_fe[0], nc)
    if q <= k - 1:
        i2 = 0.0
    else:
        i2 = (q - (k - 1)) / q if math.isfinite(q) else 1.0
    # Knapp & Hartung (2003): sqrt(max(1, q) / sum v) = max(DL se, HKSJ se)
    est_se = max(float(fit.se_mu[0]), float(fit.spread[0]) / np.sqrt(k - 1))

    outliers = none
    if deviations:
        with np.errstate(over="ignore"):
            z_c, z_dof = _leave_one_out(yc, sc, nc)
        z[compared] = z_c
        threshold = special.stdtrit(z_dof, 1.0 - alpha / (2 * k))
        outliers = compared[np.abs(z_c) > threshold]
    return Heterogeneity(q, k - 1, float(df2), p_value, tau2, float(i2), compared, excluded, z,
                         outliers, bool(p_value < alpha), mu, float(est_se), float(k - 1), alpha)


def interval(h: Heterogeneity, level: float = 0.95) -> tuple[float, float]:
    r"""Two-sided interval of the random-effects estimate, :math:`\hat\mu \pm t_{dof}\,se`.

    With :math:`K \ge 2` compared arms this is the modified Hartung–Knapp–Sidik–Jonkman
    interval (Knapp & Hartung 2003) with :math:`t_{K-1}` quantiles; with one arm, the arm's own
    interval (t with its ``nu``, normal when not given); with none, ``(nan, nan)``.

    Parameters
    ----------
    h : Heterogeneity
    level : float, default 0.95

    Returns
    -------
    (lo, hi) : tuple of float
    """
    if not isinstance(h, Heterogeneity):
        raise TypeError(param_message("h", "interval", "a Heterogeneity (from heterogeneity())", h))
    level = check_open_unit(level, "level", "interval")
    if np.isnan(h.estimate) or np.isnan(h.se):
        return np.nan, np.nan
    if not np.isfinite(h.se):
        return -np.inf, np.inf
    q = float(special.stdtrit(h.dof, 0.5 + level / 2)) if np.isfinite(h.dof) else float(special.ndtri(0.5 + level / 2))
    return float(h.estimate - q * h.se), float(h.estimate + q * h.se)
