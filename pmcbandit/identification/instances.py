r"""The test instances of Jiang, Li & Qiao (2017, Sec. 5) and Jamieson et al. (2014), as arrays of means.

``one_sparse(n, k)``
    :math:`\mu_{[1]} = \dots = \mu_{[K]} = 1/2`, the others 0 (Sec. 5.1 and 5.2).
``exponential(n, k, alpha)``
    :math:`\mu_{[i]} = \frac{N-K}{N} + \frac KN(\frac{K-i}{K})^\alpha` for :math:`i \le K` and
    :math:`\frac{N-K}{N} - \frac{N-K}{N}(\frac{i-K}{N-K})^\alpha` for :math:`i > K` (Sec. 5.1; the
    paper uses :math:`\alpha = 0.3`).
``lil_exponential(n, alpha)``
    :math:`\mu_{[1]} = 1`, :math:`\mu_{[i]} = 1 - ((i-1)/N)^\alpha` for :math:`i > 1` (Sec. 5.2,
    after Jamieson et al. 2014; :math:`\alpha \in \{0.3, 0.6\}`).

Arms are listed best first.
"""

from __future__ import annotations

import numpy as np

__all__ = ["one_sparse", "exponential", "lil_exponential"]


def one_sparse(n: int, k: int) -> np.ndarray:
    """``k`` arms of mean 1/2 and ``n - k`` of mean 0.

    >>> one_sparse(4, 1).tolist()
    [0.5, 0.0, 0.0, 0.0]
    """
    return np.r_[np.full(k, 0.5), np.zeros(n - k)]


def exponential(n: int, k: int, alpha: float = 0.3) -> np.ndarray:
    """The alpha-exponential instance (module docstring)."""
    i = np.arange(1, n + 1)
    top = (n - k) / n + k / n * ((k - i[:k]) / k) ** alpha
    low = (n - k) / n - (n - k) / n * ((i[k:] - k) / (n - k)) ** alpha
    return np.r_[top, low]


def lil_exponential(n: int, alpha: float) -> np.ndarray:
    """The lil-exponential instance (module docstring)."""
    i = np.arange(1, n + 1)
    return np.where(i == 1, 1.0, 1.0 - ((i - 1) / n) ** alpha)
