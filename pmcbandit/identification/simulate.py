r"""Stopping-time simulator: thousands of seeded identification runs on synthetic arms, in numba.

Each replication runs one algorithm to its stop on arms with known means and returns how many
samples it took, what it chose and how it spread its samples. The rule is the algorithm's own: the
simulator reads its :class:`~pmcbandit.identification.base.KernelSpec` and calls the same numba
kernels (:mod:`pmcbandit.identification.kernels`) as the live loop's ``select`` and ``stop``, in the
same order — at every round the stopping test, then the sampling rule — so a replication fed the
live run's rewards and uniforms reproduces it pull for pull (``tests/identification``).

Rewards. Every arm has its own xoshiro256** stream (seeded from the replication's
:class:`numpy.random.Generator`; :mod:`pmcbandit.arms.evidence._kernels`): ``"gaussian"``
:math:`N(\mu_i, s^2)`, ``"bernoulli"`` :math:`\text{Bernoulli}(\mu_i)`, ``"uniform"`` on
:math:`\mu_i \pm \sqrt3 s` (standard deviation :math:`s`). Randomised rules draw their uniforms from
a separate per-replication stream. A replication that has not stopped after ``max_samples`` is
reported with ``stopped=False``.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pmcbandit._rng import get_random_generator
from pmcbandit.arms.evidence._kernels import chain_seeds, std_normal, uniform
from pmcbandit.identification.base import Identifier, KernelSpec
from pmcbandit.identification.kernels import (
    CLUCB, LIL, LIL_UCB, LUCB_RANDOM, clucb_step_into, grown, lil_ucb_index, lil_ucb_stop, lucb_coef, lucb_pair_into,
    top_k,
)

__all__ = ["StoppingTimes", "simulate_stopping", "FAMILIES", "replay"]

FAMILIES = ("gaussian", "bernoulli", "uniform")


class StoppingTimes(NamedTuple):
    """Per replication: ``samples`` to the stop, ``stopped``, ``correct`` (the chosen set is the true
    top ``k``), ``chosen`` (shape (reps, k), best first) and per-arm ``counts`` (shape (reps, N))."""

    samples: np.ndarray
    stopped: np.ndarray
    correct: np.ndarray
    chosen: np.ndarray
    counts: np.ndarray


@numba.njit(cache=True)
def _reward(family, mean, scale, state):
    if family == 0:
        return mean + scale * std_normal(state)
    if family == 1:
        return 1.0 if uniform(state) < mean else 0.0
    return mean + scale * np.sqrt(3.0) * (2.0 * uniform(state) - 1.0)


@numba.njit(cache=True)
def _pull(arm, n, total, table, family, means, scale, states):
    if table.shape[1] > 0:
        x = table[arm, n[arm]]
    else:
        x = _reward(family, means[arm], scale, states[arm])
    n[arm] += 1
    total[arm] += x


@numba.njit(cache=True)
def _one_run(spec, means, family, scale, states, u_state, table, uniforms, max_samples, n, total, order):
    """One replication (module docstring); the pull order goes to ``order`` when it has room.
    Uniforms come from ``uniforms`` when given (replay), else from ``u_state``."""
    n_arms = means.shape[0]
    rule, kind, k = int(spec[0]), int(spec[1]), int(spec[2])
    oh, ol, sigma, eps, ldelta, beta, lam = spec[3], spec[4], spec[5], spec[6], spec[7], spec[8], spec[9]
    radius_high = grown(np.empty(0), 63, kind, oh, sigma, eps)
    radius_low = grown(np.empty(0), 63, kind, ol, sigma, eps)
    work_means = np.empty(n_arms)
    work_high = np.zeros(n_arms, dtype=np.bool_)
    work_tilde = np.zeros(n_arms, dtype=np.bool_)
    work_lower = np.empty(n_arms)
    work_upper = np.empty(n_arms)
    work_scratch = np.empty(n_arms)
    used = 0
    t = 0
    for i in range(n_arms):
        _pull(i, n, total, table, family, means, scale, states)
        if t < order.shape[0]:
            order[t] = i
        t += 1
    while t < max_samples:
        coef = 1.0 if kind == LIL else lucb_coef(t, ldelta, n_arms, sigma)
        if rule == CLUCB:
            arm, stop = clucb_step_into(n, total, k, radius_high, work_means, work_high, work_tilde, work_lower,
                                        work_upper, work_scratch)
            if stop:
                return t, True
            arms = (arm, -1)
        elif rule == LIL_UCB:
            if lil_ucb_stop(n, lam) >= 0:
                return t, True
            index = lil_ucb_index(n, total, beta, radius_high)
            best = index.max()
            ties = 0
            for i in range(n_arms):
                if index[i] == best:
                    ties += 1
            pick = 0
            if ties > 1:
                u = uniforms[used] if uniforms.shape[0] > 0 else uniform(u_state)
                used += 1
                pick = int(u * ties)
            arm = -1
            for i in range(n_arms):
                if index[i] == best:
                    if pick == 0:
                        arm = i
                        break
                    pick -= 1
            arms = (arm, -1)
        else:
            h, l, stop = lucb_pair_into(n, total, k, radius_high, radius_low, coef, work_means, work_high,
                                        work_lower, work_upper, work_scratch)
            if stop:
                return t, True
            if rule == LUCB_RANDOM:
                u = uniforms[used] if uniforms.shape[0] > 0 else uniform(u_state)
                used += 1
                arms = (h if u < n[l] / (n[h] + n[l]) else l, -1)
            else:
                arms = (h, l)
        for arm in arms:
            if arm >= 0:
                _pull(arm, n, total, table, family, means, scale, states)
                if n[arm] >= radius_high.shape[0]:
                    radius_high = grown(radius_high, n[arm], kind, oh, sigma, eps)
                    radius_low = grown(radius_low, n[arm], kind, ol, sigma, eps)
                if t < order.shape[0]:
                    order[t] = arm
                t += 1
    return t, False


@numba.njit(cache=True)
def _simulate(spec, means, family, scale, seeds, u_seeds, max_samples, samples, stopped, chosen, counts):
    n_arms = means.shape[0]
    k = int(spec[2])
    empty_table = np.zeros((n_arms, 0))
    no_uniforms = np.zeros(0)
    no_order = np.zeros(0, dtype=np.int64)
    for r in range(samples.shape[0]):
        n = np.zeros(n_arms, dtype=np.int64)
        total = np.zeros(n_arms)
        t, ok = _one_run(spec, means, family, scale, seeds[r], u_seeds[r], empty_table, no_uniforms, max_samples,
                         n, total, no_order)
        samples[r] = t
        stopped[r] = ok
        counts[r] = n
        means_hat = total / n
        if int(spec[0]) == LIL_UCB:
            chosen[r, 0] = np.argmax(n)
        else:
            top = np.argsort(-means_hat, kind="mergesort")
            for j in range(k):
                chosen[r, j] = top[j]


def _spec(algorithm: Identifier, n_arms: int) -> np.ndarray:
    if not isinstance(algorithm, Identifier):
        raise TypeError(f"The 'algorithm' parameter of simulate_stopping must be an Identifier. Got {algorithm!r} instead.")
    if algorithm.kernel is None:
        raise ValueError(
            f"The 'algorithm' parameter of simulate_stopping must declare a kernel rule. Got {algorithm.name!r}, "
            "which has none (e.g. lil'CLUCB over a custom oracle), instead."
        )
    algorithm.init(n_arms)  # checks k < N
    spec: KernelSpec = algorithm.kernel(n_arms)
    return np.array(spec, dtype=np.float64)


def simulate_stopping(algorithm: Identifier, means, reps: int = 1000, *, family: str = "gaussian",
                      scale: float = 0.5, random_seed=None, max_samples: int = 10**7) -> StoppingTimes:
    """Run ``reps`` seeded replications of ``algorithm`` on arms with the given ``means``.

    Parameters
    ----------
    algorithm : Identifier
        With a kernel rule (every built-in algorithm; lil'CLUCB only with its top-K oracle).
    means : array_like
        The arms' means (Bernoulli: probabilities in [0, 1]).
    reps : int
    family : {"gaussian", "bernoulli", "uniform"}
    scale : float
        Standard deviation of the Gaussian and uniform rewards (unused for Bernoulli).
    random_seed : int, Generator or None
        Converted once; every replication gets its own spawned arm and uniform streams.
    max_samples : int
        A replication not stopped by then is cut off (``stopped=False``).
    """
    from pmcbandit._validation import check_choice, check_positive

    owner = "simulate_stopping"
    means = np.ascontiguousarray(means, dtype=np.float64)
    if means.ndim != 1 or means.size < 2 or not np.isfinite(means).all():
        raise ValueError(f"The 'means' parameter of {owner} must be a 1-D array of >= 2 finite means. Got {means!r} instead.")
    check_choice(family, FAMILIES, "family", owner)
    if family == "bernoulli" and not ((means >= 0) & (means <= 1)).all():
        raise ValueError(f"The 'means' parameter of {owner} must lie in [0, 1] for Bernoulli arms. Got {means!r} instead.")
    check_positive(scale, "scale", owner)
    reps = int(check_positive(reps, "reps", owner, integer=True))
    max_samples = int(check_positive(max_samples, "max_samples", owner, integer=True))
    spec = _spec(algorithm, means.size)
    k = int(spec[2])
    rng = get_random_generator(random_seed, owner)
    children = rng.spawn(reps)
    seeds = np.stack([chain_seeds(c, means.size) for c in children])
    u_seeds = np.stack([chain_seeds(c, 1)[0] for c in children])
    samples = np.zeros(reps, dtype=np.int64)
    stopped = np.zeros(reps, dtype=np.bool_)
    chosen = np.zeros((reps, k), dtype=np.int64)
    counts = np.zeros((reps, means.size), dtype=np.int64)
    _simulate(spec, means, FAMILIES.index(family), float(scale), seeds, u_seeds, max_samples, samples, stopped,
              chosen, counts)
    truth = top_k(means, k)
    if spec[0] == LIL_UCB:
        truth = np.zeros(means.size, dtype=bool)
        truth[int(np.argmax(means))] = True
    correct = np.array([truth[row].all() for row in chosen])
    return StoppingTimes(samples, stopped, correct, chosen, counts)


def replay(algorithm: Identifier, rewards: np.ndarray, uniforms: np.ndarray, max_samples: int = 10**7):
    """One replication fed given rewards (``rewards[arm, j]`` is arm's j-th reward) and uniforms:
    returns ``(samples, stopped, pull_order)``, to compare with the live loop pull for pull."""
    rewards = np.ascontiguousarray(rewards, dtype=np.float64)
    n_arms = rewards.shape[0]
    spec = _spec(algorithm, n_arms)
    order = np.full(rewards.size, -1, dtype=np.int64)
    n = np.zeros(n_arms, dtype=np.int64)
    total = np.zeros(n_arms)
    dummy = np.zeros((n_arms, 4), dtype=np.uint64)
    t, ok = _one_run(spec, np.zeros(n_arms), 0, 1.0, dummy, dummy[0], rewards,
                     np.ascontiguousarray(uniforms, dtype=np.float64), min(max_samples, rewards.shape[1] * n_arms),
                     n, total, order)
    return int(t), bool(ok), order[: min(t, order.size)]
