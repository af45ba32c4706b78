"""Shared factory behind :func:`~pmcbandit.full_bandit.saqm`, ``sa_foa``, ``icb`` and ``exhaustive``:
validation, allocation, confidence width and the pure init/select/update/stop/recommend functions.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from pmcbandit.full_bandit.allocation import resolve_allocation, track
from pmcbandit.full_bandit.base import (FullBanditIdentifier, FullBanditParams, FullBanditState, check_common,
                                        check_width, log_num_super_arms, sum_noise_scale, width_constant)
from pmcbandit.full_bandit.least_squares import DEFAULT_REFRESH_EVERY, least_norm_estimate, ls_init, ls_update


def top_k_desc(theta_hat: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` largest entries' indices, best first (ties by the lower index)."""
    return np.argsort(-theta_hat, kind="stable")[:k]


def build(name: str, n, k, delta, epsilon, sigma, noise, allocation, statistic, *, per_arm: bool = False,
          recommend=None, refresh_every: int = DEFAULT_REFRESH_EVERY, width_scale: float = 1.0, width: str = "paper",
          allocation_kwargs: dict | None = None, oracle: str | None = None,
          max_super_arms: int | None = None) -> FullBanditIdentifier:
    """A :class:`FullBanditIdentifier` whose ``statistic(state)`` is
    ``statistic(W, theta_hat, C_t, full=True)`` once :math:`A_t` has full rank (``inf`` before).

    ``sigma`` is the single-arm noise scale (the paper's :math:`R`); ``allocation_kwargs`` go to the
    named allocation's builder (:func:`~pmcbandit.full_bandit.allocation.resolve_allocation`).
    """
    check_common(k, n, delta, epsilon, sigma, noise, name)
    if isinstance(refresh_every, bool) or not isinstance(refresh_every, numbers.Integral) or refresh_every < 1:
        raise ValueError(f"The 'refresh_every' parameter of {name} must be an int >= 1. Got {refresh_every!r} instead.")
    if isinstance(width_scale, bool) or not (isinstance(width_scale, numbers.Real) and math.isfinite(width_scale)
                                             and width_scale > 0):
        raise ValueError(f"The 'width_scale' parameter of {name} must be a finite real number > 0. "
                         f"Got {width_scale!r} instead.")
    rule = check_width(width, name)
    n, k = int(n), int(k)
    alloc = resolve_allocation(allocation, n, k, name, **(allocation_kwargs or {}))
    rows = [np.flatnonzero(r).astype(np.int64) for r in alloc.support]
    sigma_sum = sum_noise_scale(sigma, k, noise)
    log_classes = math.log(n) if per_arm else log_num_super_arms(n, k)
    recommend = recommend or (lambda th: top_k_desc(th, k))
    delta, epsilon, width_scale = float(delta), float(epsilon), float(width_scale)

    def init() -> FullBanditState:
        return ls_init(n, len(rows))

    def select(rng, state: FullBanditState) -> np.ndarray:
        return rows[track(state.counts, alloc.weights, state.t)]

    def update(state: FullBanditState, super_arm, reward: float) -> FullBanditState:
        idx = np.sort(np.asarray(super_arm, dtype=np.int64))
        if idx.shape != (k,) or np.unique(idx).shape[0] != k or idx[0] < 0 or idx[-1] >= n:
            raise ValueError(f"The 'super_arm' parameter of {name}.update must be {k} distinct arm indices "
                             f"in [0, {n}). Got {super_arm!r} instead.")
        expected = track(state.counts, alloc.weights, state.t)
        row = expected if np.array_equal(rows[expected], idx) else next(
            (r for r, members in enumerate(rows) if np.array_equal(members, idx)), -1)
        return ls_update(state, idx, float(reward), row, refresh_every)

    def confidence(state: FullBanditState) -> float:
        return float(width_scale * width_constant(float(state.t), log_classes, sigma_sum, delta, rule))

    def stat(state: FullBanditState) -> float:
        if not state.ready:
            return math.inf
        return float(statistic(state.A_inv, state.theta_hat, confidence(state), True))

    def stop(state: FullBanditState) -> bool:
        return state.ready and stat(state) <= epsilon

    params = FullBanditParams(
        algorithm=name, n=n, k=k, delta=delta, epsilon=epsilon, sigma=float(sigma), noise=str(noise),
        sigma_sum=float(sigma_sum), allocation=str(alloc.name), support_size=len(rows),
        refresh_every=int(refresh_every), width_scale=width_scale, width=str(width), log_classes=float(log_classes),
        oracle=oracle, max_super_arms=None if max_super_arms is None else int(max_super_arms))
    return FullBanditIdentifier(name, n, k, delta, epsilon, alloc, init, select, update, stop,
                                lambda state: recommend(least_norm_estimate(state)), stat, confidence, params)
