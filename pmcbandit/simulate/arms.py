"""Synthetic arm families for the replicated-run simulator.

Each family says how one observation of an arm is made from one draw of a
random stream, in a single numba function (:func:`observation`) that the
simulator's loop and the live-loop arms of :meth:`SyntheticArms.to_arms` both
call:

``ScaledBernoulli(mid, scale, p)``
    ``X = mid + scale (Z - 1/2)`` with ``Z = 1{U < p}``, ``U`` one uniform
    (Neufeld et al. 2014, App. E; Sec. 6.1 uses ``mid = 0.5``, ``p = 1/2``).
    Mean ``mid + scale (p - 1/2)``, variance ``scale^2 p (1 - p)``.
``Gaussian(mean, sd)``
    ``X = mean + sd N``, ``N`` one standard normal.
``RewardMatrix(values)``
    pre-drawn observations (common random numbers, as SMPyBandits' evaluator
    uses): the ``j``-th pull of arm ``k`` in replication ``r`` returns
    ``values[r, k, j]`` (``values[k, j]`` for every replication when 2-D).
"""

from __future__ import annotations

import abc

import numba
import numpy as np

from pmcbandit.arms.base import CallableArm

__all__ = ["SyntheticArms", "ScaledBernoulli", "Gaussian", "RewardMatrix", "observation"]

# Families: what one draw of an arm stream is, and how it becomes an observation.
BERNOULLI, GAUSSIAN, MATRIX = 0, 1, 2


@numba.njit(cache=True, nogil=True)
def observation(family, a, b, c, draw):
    """One observation from one stream draw ``draw`` (a uniform, a normal or the value).

    ``(a, b, c)`` are the arm's parameters: ``(mid, scale, p)`` for the scaled
    Bernoulli, ``(mean, sd, -)`` for the Gaussian; unused for a matrix.
    """
    if family == BERNOULLI:
        z = 1.0 if draw < c else 0.0
        return a + b * (z - 0.5)
    if family == GAUSSIAN:
        return a + b * draw
    return draw


def _as_vector(x, name: str, door: str) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(x, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0 or not np.isfinite(arr).all():
        raise ValueError(f"The {name!r} parameter of {door} must be a non-empty 1-D array of finite floats. "
                         f"Got {x!r} instead.")
    return arr


class SyntheticArms(abc.ABC):
    """Base of the arm families: ``n_arms``, true ``means``/``variances`` and streams.

    Attributes
    ----------
    family : int
        Code read by the simulator's loop.
    params : ndarray, shape (K, 3)
        Per-arm parameters passed to :func:`observation`.
    draw : {"uniform", "normal", None}
        What one pull consumes from the arm's stream (``None``: nothing, pre-drawn).
    """

    family: int
    params: np.ndarray
    draw: str | None

    @property
    def n_arms(self) -> int:
        return self.params.shape[0]

    @property
    @abc.abstractmethod
    def means(self) -> np.ndarray:
        """True mean of each arm, shape (K,)."""

    @property
    @abc.abstractmethod
    def variances(self) -> np.ndarray:
        """True variance of each arm, shape (K,)."""

    @abc.abstractmethod
    def value_bounds(self) -> tuple[float, float]:
        """Smallest and largest value an observation can take (``±inf`` if unbounded)."""

    def to_arms(self) -> list[CallableArm]:
        """Live-loop arms that make each observation as the simulator does.

        Arm ``k`` takes one draw of the stream ``pmcbandit.run`` gives the pull and
        maps it with :func:`observation`: the same law as in the simulator (which
        draws from one stream per replication instead, see
        :mod:`pmcbandit.simulate.core`), so regret agrees in distribution. For
        draw-for-draw agreement, pre-draw the values into a :class:`RewardMatrix`.
        """
        if self.draw is None:
            raise TypeError("a RewardMatrix has no stream to draw from; use RewardMatrix.to_arms(replication)")
        arms = []
        for k, (a, b, c) in enumerate(self.params):
            draw = self.draw

            def fn(rng, a=float(a), b=float(b), c=float(c), draw=draw):
                u = rng.random() if draw == "uniform" else rng.standard_normal()
                return observation(self.family, a, b, c, u)

            arms.append(CallableArm(fn, name=f"arm-{k}", cost=1.0))
        return arms


class ScaledBernoulli(SyntheticArms):
    """Scaled-Bernoulli arms ``mid + scale (Z - 1/2)``, ``Z ~ Bernoulli(p)`` (App. E).

    Parameters
    ----------
    mid, scale, p : float or array_like, shape (K,)
        Broadcast against each other; ``scale >= 0``, ``p`` in [0, 1].
    """

    family = BERNOULLI
    draw = "uniform"

    def __init__(self, mid, scale, p=0.5):
        mid, scale, p = np.broadcast_arrays(_as_vector(mid, "mid", "ScaledBernoulli"),
                                            _as_vector(scale, "scale", "ScaledBernoulli"),
                                            _as_vector(p, "p", "ScaledBernoulli"))
        if (scale < 0).any():
            raise ValueError(f"The 'scale' parameter of ScaledBernoulli must be >= 0. Got {scale!r} instead.")
        if ((p < 0) | (p > 1)).any():
            raise ValueError(f"The 'p' parameter of ScaledBernoulli must lie in [0, 1]. Got {p!r} instead.")
        self.params = np.stack([mid, scale, p], axis=1).astype(np.float64)

    @property
    def means(self):
        mid, s, p = self.params.T
        return mid + s * (p - 0.5)

    @property
    def variances(self):
        _, s, p = self.params.T
        return s * s * p * (1.0 - p)

    def value_bounds(self):
        mid, s, _ = self.params.T
        return float(np.min(mid - s / 2)), float(np.max(mid + s / 2))


class Gaussian(SyntheticArms):
    """Gaussian arms ``mean + sd N`` (unbounded: simulate them without ``bounds``)."""

    family = GAUSSIAN
    draw = "normal"

    def __init__(self, mean, sd):
        mean, sd = np.broadcast_arrays(_as_vector(mean, "mean", "Gaussian"), _as_vector(sd, "sd", "Gaussian"))
        if (sd < 0).any():
            raise ValueError(f"The 'sd' parameter of Gaussian must be >= 0. Got {sd!r} instead.")
        self.params = np.stack([mean, sd, np.zeros_like(mean)], axis=1).astype(np.float64)

    @property
    def means(self):
        return self.params[:, 0].copy()

    @property
    def variances(self):
        return self.params[:, 1] ** 2

    def value_bounds(self):
        return -np.inf, np.inf


class RewardMatrix(SyntheticArms):
    """Pre-drawn observations: ``values[r, k, j]`` is the ``j``-th pull of arm ``k`` in replication ``r``.

    Parameters
    ----------
    values : array_like, shape (R, K, L) or (K, L)
        Finite observations; a 2-D matrix is shared by every replication (they
        then differ only through the policy's stream). ``L`` must cover the most
        pulls an arm can get, i.e. ``n_rounds`` unless the policy is known to
        spread its pulls.
    """

    family = MATRIX
    draw = None

    def __init__(self, values):
        values = np.asarray(values, dtype=np.float64)
        if values.ndim not in (2, 3) or values.size == 0 or not np.isfinite(values).all():
            raise ValueError("The 'values' parameter of RewardMatrix must be a finite array of shape "
                             f"(R, K, L) or (K, L). Got an array of shape {values.shape} instead.")
        self.values = values
        k = values.shape[-2]
        self.params = np.zeros((k, 3))

    @property
    def length(self) -> int:
        return self.values.shape[-1]

    @property
    def means(self):
        return self.values.mean(axis=-1) if self.values.ndim == 2 else self.values.mean(axis=(0, 2))

    @property
    def variances(self):
        return self.values.var(axis=-1) if self.values.ndim == 2 else self.values.var(axis=(0, 2))

    def value_bounds(self):
        return float(self.values.min()), float(self.values.max())

    def replication(self, r: int) -> np.ndarray:
        """The ``(K, L)`` matrix replication ``r`` sees."""
        return self.values if self.values.ndim == 2 else self.values[r]

    def to_arms(self, replication: int = 0) -> list[CallableArm]:
        """Live-loop arms replaying replication ``replication``'s values in pull order."""
        arms = []
        for k, row in enumerate(self.replication(replication)):
            it = iter(row.tolist())
            arms.append(CallableArm(lambda rng, it=it: next(it), name=f"arm-{k}", cost=1.0))
        return arms
