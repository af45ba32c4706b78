r"""The centre of the squared loss, moved to the running mean at doubling times.

The squared reward of Neufeld et al. (2014, Thm 2) is :math:`-(X - c)^2`, with
:math:`\mathbb{E}[(X_k - c)^2] = V_k + (\mu - c)^2`: any constant ``c`` leaves the best arm and
the regret unchanged (App. B), but the offset :math:`(\mu - c)^2` is added to every arm's mean
loss, and the term :math:`2(X - \mu)(\mu - c)` to its noise, while the range of the losses (the
normaliser of :mod:`pmcbandit.policies.base`) grows with :math:`|\mu - c|`. A policy then needs
more pulls to see the same differences of variance. With ``c`` the first observation, the
offset is a draw of :math:`(X - \mu)^2` itself; for the CIR caplet out of the money (K = 0.06)
the first path usually pays 0 against a price of 18, an offset of ~340 beside per-path
variances from 1.4.

The *running* centre is the mean of all observations so far,
:math:`c_t = \frac1t \sum_{s \le t} X_s`, re-applied after the ``t``-th reward for ``t`` a
power of two (2, 4, 8, ...): every arm's loss statistics are recomputed as if all its past
observations had been scored against :math:`c_t`. That needs the observations, not the losses,
so per arm we keep the power sums :math:`\sum y^p` (p = 1..4) and the extremes of
:math:`y = X - o` about the run's first observation :math:`o` (shifted data keep the
expansions below well conditioned when :math:`|X| \gg` the spread). With
:math:`d = c_t - o`,

.. math::

    \sum (X - c_t)^2 = \textstyle\sum y^2 - 2d\sum y + n d^2, \qquad
    \sum (X - c_t)^4 = \textstyle\sum y^4 - 4d\sum y^3 + 6d^2\sum y^2 - 4d^3\sum y + n d^4,

and the largest loss is :math:`\max((y_{max} - d)^2, (y_{min} - d)^2)`. Between re-centrings
the centre is fixed, so each reward is still a function of its own observation and the
policies' updates are unchanged; doubling times cost :math:`O(K \log n)` in all and leave a
policy long stretches under one centre (Thompson sampling's resampled coins between
re-centrings follow Alg. 2; :func:`pmcbandit.policies.thompson.policy` says what it does at
one). The centre is a function of past observations only, so the allocation stays
predictable and Thm 1's identity :math:`\mathbb{E}[(S_n - n\mu)^2] = \sum_k V_k
\mathbb{E}[T_k(n)]` still holds for the uniform average.

Measured on Fig. 2's CIR pool (``python -m benchmarks.exp_reward_centre --reps 8``, 10^5
single-path pulls; ``benchmarks/RESULTS.md``): Thompson sampling's MSE over the best arm's went
from 1.93 ± 0.51 / 1.21 / 1.06 with the first observation as centre to 1.14 ± 0.01 / 1.05 / 1.02
with the running centre at K = 0.06 / 0.07 / 0.08 (an oracle centre at the price, without the
count reset: 1.17 / 1.22 / 1.02), and KL-UCB's from 23 / 1.6 / 1.17 to 2.8 / 1.24 / 1.08. UCB1 and
UCB-V, whose shared range is set by the widest arm, did not change. The same functions serve the live loop
(:class:`ObservationMoments`, used by :class:`pmcbandit.policies.rewards.RewardRule`) and the
replicated-run simulator (:mod:`pmcbandit.simulate.kernel`), which therefore make the same
decisions.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["ObservationMoments", "recentre_due", "running_shift", "centred_losses", "recentred_scale"]

#: Rows of the per-arm moment array: sums of y, y^2, y^3, y^4, then min and max of y.
N_MOMENT_ROWS = 6


@numba.njit(cache=True)
def recentre_due(count):
    """Whether the centre moves after the ``count``-th reward: ``count`` >= 2 and a power of two."""
    return count >= 2 and (count & (count - 1)) == 0


@numba.njit(cache=True)
def running_shift(y1, count):
    """:math:`d = c_t - o = \\frac1t \\sum_k \\sum y_k` from the per-arm sums ``y1`` (arm order)."""
    total = 0.0
    for i in range(y1.shape[0]):
        total += y1[i]
    return total / count


@numba.njit(cache=True)
def accumulate(moments, arm, y):
    """Add the shifted observation ``y`` of ``arm`` to ``moments`` (shape (6, K)) in place."""
    y2 = y * y
    moments[0, arm] += y
    moments[1, arm] += y2
    moments[2, arm] += y2 * y
    moments[3, arm] += y2 * y2
    if y < moments[4, arm]:
        moments[4, arm] = y
    if y > moments[5, arm]:
        moments[5, arm] = y


@numba.njit(cache=True)
def centred_losses(n, moments, d, loss_sum, loss_sq_sum, max_loss):
    """Per-arm :math:`\\sum (y-d)^2`, :math:`\\sum (y-d)^4` and :math:`\\max (y-d)^2`, in place.

    ``n`` holds the arms' observation counts, ``moments`` their rows of
    :data:`N_MOMENT_ROWS`. Rounding can make an expanded sum a hair negative when
    the spread is tiny; such sums are clamped at 0. Arms without observations get 0.
    """
    for i in range(n.shape[0]):
        m = float(n[i])
        if m <= 0.0:
            loss_sum[i] = 0.0
            loss_sq_sum[i] = 0.0
            max_loss[i] = 0.0
            continue
        s1, s2, s3, s4 = moments[0, i], moments[1, i], moments[2, i], moments[3, i]
        d2 = d * d
        loss_sum[i] = max(s2 - 2.0 * d * s1 + m * d2, 0.0)
        loss_sq_sum[i] = max(s4 - 4.0 * d * s3 + 6.0 * d2 * s2 - 4.0 * d2 * d * s1 + m * d2 * d2, 0.0)
        lo = moments[4, i] - d
        hi = moments[5, i] - d
        max_loss[i] = max(lo * lo, hi * hi)


@numba.njit(cache=True)
def recentred_scale(max_loss, per_arm, scale):
    """The loss ranges after a re-centring, in place: each arm's largest loss when ``per_arm``
    (App. B), else the largest over all arms in every entry.
    """
    widest = 0.0
    for i in range(max_loss.shape[0]):
        widest = max(widest, max_loss[i])
    for i in range(max_loss.shape[0]):
        scale[i] = max_loss[i] if per_arm else widest


def empty_moments(n_arms: int) -> np.ndarray:
    """Moment rows for ``n_arms`` arms with no observation (extremes at +/-inf)."""
    m = np.zeros((N_MOMENT_ROWS, n_arms))
    m[4] = np.inf
    m[5] = -np.inf
    return m


@numba.njit(cache=True)
def accumulate_all(moments, n, arms, ys):
    """:func:`accumulate` of every ``(arms[i], ys[i])`` in order, counting each in ``n``, in place."""
    for i in range(arms.shape[0]):
        accumulate(moments, arms[i], ys[i])
        n[arms[i]] += 1


class ObservationMoments:
    """Per-arm power sums of the observations about the run's first one (live loop).

    Observations are kept in a short buffer and folded into the sums (:func:`accumulate_all`, the same
    operations in the same order as one :func:`accumulate` per observation, so the sums are the same to the
    bit) when the sums are read, when they are rescaled, and every :data:`FOLD_EVERY` observations: one call of
    the compiled kernel per block instead of one per reward.

    Attributes
    ----------
    origin : float or None
        The first observation ``o``.
    count : int
        Observations added.
    n : ndarray of int64, shape (K,)
    moments : ndarray, shape (6, K)
        Sums of ``y, y^2, y^3, y^4`` and min, max of ``y = x - o``.
    """

    #: Observations buffered at most before they are folded into the sums.
    FOLD_EVERY = 256

    def __init__(self, n_arms: int):
        self.origin: float | None = None
        self.count = 0
        self._n = np.zeros(n_arms, dtype=np.int64)
        self._moments = empty_moments(n_arms)
        self._arms: list[int] = []  # observations not folded in yet: their arms and shifted values
        self._ys: list[float] = []

    @property
    def n(self) -> np.ndarray:
        self._fold()
        return self._n

    @property
    def moments(self) -> np.ndarray:
        self._fold()
        return self._moments

    def add(self, arm: int, x: float) -> None:
        if self.origin is None:
            self.origin = float(x)
        self._arms.append(arm)
        self._ys.append(x - self.origin)
        self.count += 1
        if len(self._ys) >= self.FOLD_EVERY:
            self._fold()

    def _fold(self) -> None:
        """Fold the buffered observations into the sums."""
        if self._ys:
            accumulate_all(self._moments, self._n, np.array(self._arms, dtype=np.int64),
                           np.array(self._ys, dtype=np.float64))
            self._arms.clear()
            self._ys.clear()

    def centre_and_losses(self) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """The running centre and every arm's loss sum, squared-loss sum and largest loss about it."""
        d = running_shift(self.moments[0], self.count)
        k = self.n.shape[0]
        loss_sum, loss_sq_sum, max_loss = np.empty(k), np.empty(k), np.empty(k)
        centred_losses(self.n, self.moments, d, loss_sum, loss_sq_sum, max_loss)
        return self.origin + d, loss_sum, loss_sq_sum, max_loss

    def rescale(self, factor: float) -> None:
        """Every observation was multiplied by ``factor`` > 0 (a log-scale run's re-shift)."""
        moments = self.moments  # folded in first: they were observed before the rescaling
        if self.origin is not None:
            self.origin *= factor
        f = factor
        for p in range(4):
            moments[p] *= f
            f *= factor
        moments[4:] *= factor
