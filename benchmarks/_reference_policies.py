"""Per-step pure-Python bandit policies in the style of SMPyBandits (the benchmark's baseline).

SMPyBandits (``Policies/IndexPolicy.py``, ``UCB.py``, ``UCBV.py``, ``klUCB.py``,
``Thompson.py``) keeps a mutable object with per-arm numpy arrays, updates it in
place in ``getReward`` and recomputes every index in ``choice``. These classes
follow that structure (same per-step work: index of every arm, argmax with random
tie-breaking, in-place counters; KL-UCB's bisection is a Python loop per arm as in
``kullback.py``) with two departures required by this project: randomness comes
from a ``numpy.random.Generator`` instead of the global ``np.random``, and the
reward they receive is the same non-positive reward the pmcbandit policies get,
normalised to ``1 - loss/scale`` with a fixed ``scale``. They exist only to be
timed side by side with :mod:`pmcbandit.policies`; they are not part of the package.
"""

from __future__ import annotations

from math import log

import numpy as np


class IndexPolicy:
    """Shared state and ``choice``/``get_reward`` of an index policy (SMPyBandits ``IndexPolicy``).

    Subclasses set ``self.index`` in ``compute_all_index``.
    """

    def __init__(self, n_arms: int, rng: np.random.Generator, scale: float = 1.0):
        self.n_arms = n_arms
        self.rng = rng
        self.scale = scale
        self.t = 0
        self.pulls = np.zeros(n_arms, dtype=np.int64)
        self.rewards = np.zeros(n_arms)
        self.rewards_sq = np.zeros(n_arms)
        self.index = np.zeros(n_arms)

    def get_reward(self, arm: int, reward: float) -> None:
        r = 1.0 + reward / self.scale
        self.t += 1
        self.pulls[arm] += 1
        self.rewards[arm] += r
        self.rewards_sq[arm] += r * r

    def choice(self) -> int:
        self.compute_all_index()
        best = np.nonzero(self.index == np.max(self.index))[0]
        return int(best[0]) if best.shape[0] == 1 else int(self.rng.choice(best))


class UCB1(IndexPolicy):
    """``mean + sqrt(2 log t / N)`` (vectorised, as SMPyBandits ``UCB.computeAllIndex``)."""

    def compute_all_index(self) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            index = self.rewards / self.pulls + np.sqrt(2.0 * log(max(self.t, 1)) / self.pulls)
        index[self.pulls < 1] = np.inf
        self.index = index


class UCBV(IndexPolicy):
    """``mean + sqrt(2 V zeta log t / N) + 3 c zeta log t / N`` (SMPyBandits ``UCBV``)."""

    def __init__(self, n_arms, rng, scale=1.0, zeta=1.2, c=1.0):
        super().__init__(n_arms, rng, scale)
        self.zeta = zeta
        self.c = c

    def compute_all_index(self) -> None:
        e = self.zeta * log(max(self.t, 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            means = self.rewards / self.pulls
            variances = np.maximum(self.rewards_sq / self.pulls - means**2, 0.0)
            index = means + np.sqrt(2.0 * variances * e / self.pulls) + 3.0 * self.c * e / self.pulls
        index[self.pulls < 1] = np.inf
        self.index = index


def kl_bernoulli(p: float, q: float, eps: float = 1e-15) -> float:
    """Bernoulli KL with clipping (SMPyBandits ``kullback.klBern``)."""
    p = min(max(p, eps), 1 - eps)
    q = min(max(q, eps), 1 - eps)
    return p * log(p / q) + (1 - p) * log((1 - p) / (1 - q))


def kl_ucb_bern(x: float, d: float, precision: float = 1e-6, max_iterations: int = 50) -> float:
    """``sup {q >= x : KL(x, q) <= d}`` by bisection on ``[x, 1]`` (SMPyBandits ``klucb``)."""
    value, upper = x, 1.0
    it = 0
    while it < max_iterations and upper - value > precision:
        it += 1
        m = (value + upper) * 0.5
        if kl_bernoulli(x, m) > d:
            upper = m
        else:
            value = m
    return (value + upper) * 0.5


class KLUCB(IndexPolicy):
    """KL-UCB with ``f(t) = log t + c log log t`` (SMPyBandits ``klUCB``, Python bisection per arm)."""

    def __init__(self, n_arms, rng, scale=1.0, c=3.0):
        super().__init__(n_arms, rng, scale)
        self.c = c

    def compute_all_index(self) -> None:
        for arm in range(self.n_arms):
            self.index[arm] = self.compute_index(arm)

    def compute_index(self, arm: int) -> float:
        n = self.pulls[arm]
        if n < 1:
            return float("inf")
        t = max(self.t, 3)
        f = log(t) + self.c * log(log(t))
        return kl_ucb_bern(self.rewards[arm] / n, f / n)


class Thompson:
    """Thompson sampling with Bernoulli resampling and ``Beta(1, 1)`` prior (Generator.beta)."""

    def __init__(self, n_arms: int, rng: np.random.Generator, scale: float = 1.0):
        self.n_arms = n_arms
        self.rng = rng
        self.scale = scale
        self.successes = np.zeros(n_arms)
        self.failures = np.zeros(n_arms)

    def get_reward(self, arm: int, reward: float) -> None:
        if self.rng.random() < 1.0 + reward / self.scale:
            self.successes[arm] += 1
        else:
            self.failures[arm] += 1

    def choice(self) -> int:
        theta = self.rng.beta(self.successes + 1.0, self.failures + 1.0)
        best = np.nonzero(theta == np.max(theta))[0]
        return int(best[0]) if best.shape[0] == 1 else int(self.rng.choice(best))


REFERENCE = {"ucb1": UCB1, "ucb_v": UCBV, "kl_ucb": KLUCB, "thompson": Thompson}
