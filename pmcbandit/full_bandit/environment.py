r"""A Gaussian full-bandit environment: single-arm means given, only the sum of a super-arm observed.

Kuroki et al. (2020), Sec. 2: pulling super-arm :math:`M` returns
:math:`r = \sum_{i\in M}(\theta_i + \eta_i)`. Here the noise is Gaussian:

* ``noise="independent"``: each member's :math:`\eta_i \sim N(0, s^2)` independently, so
  :math:`r \sim N(\chi_M^\top\theta, k s^2)`; it is drawn as one normal scaled by :math:`\sqrt k s`
  (the same distribution, one draw per pull).
* ``noise="sum"``: one additive :math:`\eta \sim N(0, s^2)` per pull (the paper's synthetic setting,
  Sec. 5: :math:`r \sim N(\chi_M^\top\theta, s^2)`).

Every pull draws exactly one ``rng.standard_normal()`` from the pull's own stream, so a live run
(:func:`~pmcbandit.full_bandit.identify.identify_full_bandit`) and the numba simulator
(:mod:`~pmcbandit.full_bandit.simulate`), which computes the same first normal of every pull's stream
(:mod:`~pmcbandit.full_bandit.pull_noise`), see the same noise for the same seed. The matching width
scale is ``sigma = noise_sd`` (the paper's :math:`R`) with the same ``noise`` name
(:func:`~pmcbandit.full_bandit.base.sum_noise_scale`), the door's default.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FullBanditEnvironment"]



class FullBanditEnvironment:
    """Gaussian full-bandit arms with means ``theta``.

    Parameters
    ----------
    theta : array_like, shape (n,)
        Single-arm means (finite).
    noise_sd : float
        Standard deviation ``s`` of each arm's noise (``noise="independent"``) or of the sum's
        (``noise="sum"``); > 0.
    noise : {"independent", "sum"}

    Examples
    --------
    >>> env = FullBanditEnvironment([0.1, 0.5, 0.9], noise_sd=1e-12)
    >>> round(env.pull([1, 2], np.random.default_rng(0)), 6)
    1.4
    """

    def __init__(self, theta, noise_sd: float = 1.0, noise: str = "independent"):
        door = "FullBanditEnvironment"
        theta = np.asarray(theta, dtype=np.float64)
        if theta.ndim != 1 or theta.shape[0] < 3 or not np.all(np.isfinite(theta)):
            raise ValueError(f"The 'theta' parameter of {door} must be a finite 1-d array of length >= 3. "
                             f"Got {theta!r} instead.")
        if isinstance(noise_sd, bool) or not isinstance(noise_sd, (int, float, np.floating)) \
                or not math.isfinite(noise_sd) or noise_sd <= 0:
            raise ValueError(f"The 'noise_sd' parameter of {door} must be a finite real number > 0. "
                             f"Got {noise_sd!r} instead.")
        if noise not in ("independent", "sum"):
            raise ValueError(f"The 'noise' parameter of {door} must be one of ('independent', 'sum'). "
                             f"Got {noise!r} instead.")
        self.theta = theta
        self.noise_sd = float(noise_sd)
        self.noise = noise

    @property
    def n(self) -> int:
        return int(self.theta.shape[0])

    def scale(self, k: int) -> float:
        """Standard deviation of one observation of a ``k``-arm super-arm."""
        return self.noise_sd * (math.sqrt(k) if self.noise == "independent" else 1.0)

    def mean(self, super_arm) -> float:
        """:math:`\\chi_M^\\top\\theta`."""
        return float(self.theta[np.asarray(super_arm, dtype=np.int64)].sum())

    def pull(self, super_arm, rng: np.random.Generator) -> float:
        """One noisy observation of the sum of ``super_arm`` (arm indices)."""
        idx = np.asarray(super_arm, dtype=np.int64)
        return self.mean(idx) + self.scale(idx.shape[0]) * rng.standard_normal()

    def best(self, k: int) -> np.ndarray:
        """The optimal super-arm: the ``k`` largest means (ties by the lower index), best first."""
        return np.argsort(-self.theta, kind="stable")[:k]

    def __repr__(self) -> str:
        return f"FullBanditEnvironment(n={self.n}, noise_sd={self.noise_sd}, noise={self.noise!r})"
