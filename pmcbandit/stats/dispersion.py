r"""A lower confidence bound for a variance that does not assume normal data.

The textbook bound :math:`(m-1)s^2/\chi^2_{1-\alpha,\,m-1}` holds only for normal data: :math:`s^2` of data with
excess kurtosis :math:`\kappa` has variance :math:`\sigma^4\,(2/(m-1) + \kappa/m)`, so on heavy tails the bound sits
too high and a test built on it rejects too often, the more so the larger :math:`m`. :func:`variance_lower_bound`
is the one-sided form of Bonett's interval (Bonett 2006), which reads the kurtosis from the data:

.. math::

    \hat\gamma_4 = m\,\frac{\sum_i (x_i - \tilde x)^4}{\left(\sum_i (x_i - \bar x)^2\right)^2},\qquad
    c = \frac{m}{m - z},\qquad
    \widehat{se} = c\,\sqrt{\frac{\hat\gamma_4 - (m-3)/m}{m-1}},\qquad
    L = c\,s^2 \exp(-z\,\widehat{se}),

with :math:`\tilde x` the mean trimmed by :math:`1/(2\sqrt{m-4})` at each end, :math:`z = z_{1-\alpha}` and
:math:`c` Bonett's small-sample adjustment. The level is approximate (a large-sample argument on
:math:`\log s^2`); it needs a finite fourth moment, and at :math:`m = 5` the trim is undefined, so :math:`m \ge 6`.

Bonett, D. G. (2006). Approximate confidence interval for standard deviation of nonnormal distributions.
*Computational Statistics & Data Analysis* 50(3), 775-782.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["MIN_SIZE", "variance_lower_bound"]

#: Fewest observations :func:`variance_lower_bound` takes (its trimmed mean needs :math:`m > 4`, and one more).
MIN_SIZE = 6


def variance_lower_bound(x, alpha: float, axis: int = -1):
    """One-sided ``1 - alpha`` lower confidence bound of the variance of the distribution that ``x`` samples
    along ``axis`` (module docstring). A sample with no spread gives 0.

    Parameters
    ----------
    x : array_like
        At least :data:`MIN_SIZE` observations along ``axis``.
    alpha : float
        In (0, 0.5).
    axis : int

    Returns
    -------
    float or ndarray
        The bound, one per sample (``x`` without ``axis``).
    """
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    m = x.shape[-1]
    if m < MIN_SIZE:
        raise ValueError(f"The 'x' parameter of variance_lower_bound must hold at least {MIN_SIZE} observations along "
                         f"its axis. Got {m} instead.")
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"The 'alpha' parameter of variance_lower_bound must be in (0, 0.5). Got {alpha!r} instead.")
    z = stats.norm.ppf(1.0 - alpha)
    centred = x - x.mean(axis=-1, keepdims=True)
    ss = (centred * centred).sum(axis=-1)
    s2 = ss / (m - 1)
    trimmed = stats.trim_mean(x, 1.0 / (2.0 * math.sqrt(m - 4)), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma4 = m * ((x - trimmed[..., None]) ** 4).sum(axis=-1) / (ss * ss)
        c = m / (m - z)
        se = c * np.sqrt(np.maximum(gamma4 - (m - 3) / m, 0.0) / (m - 1))
        bound = np.where(ss > 0, c * s2 * np.exp(-z * se), 0.0)
    return float(bound) if bound.ndim == 0 else bound
