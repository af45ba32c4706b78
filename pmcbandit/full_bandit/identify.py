r"""``identify_full_bandit``: find the best super-arm of size k from noisy sums, with confidence 1 - delta.

The loop is the one of the identification protocol (:mod:`pmcbandit.identification.base`)::

    state = algo.init()
    while state.t < max_rounds:
        super_arm = algo.select(rng, state)
        state = algo.update(state, super_arm, pull(super_arm, rng))
        if algo.stop(state): break
    algo.recommend(state)

``stop`` is checked after every pull (the rules of :mod:`~pmcbandit.full_bandit.saqm`,
:mod:`~pmcbandit.full_bandit.sa_foa`, :mod:`~pmcbandit.full_bandit.icb`,
:mod:`~pmcbandit.full_bandit.exhaustive` are valid at every round, Prop. 1 holding uniformly in t).
An observation that is not a finite number raises ``ValueError``: least squares cannot use it and
dropping it silently would bias nothing but hide a broken source, so the run refuses it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np

from pmcbandit._rng import get_random_generator
from pmcbandit.full_bandit.base import FullBanditIdentifier, width_constant
from pmcbandit.full_bandit.environment import FullBanditEnvironment
from pmcbandit.full_bandit.least_squares import least_norm_estimate
from pmcbandit.full_bandit.result import FullBanditResult

__all__ = ["identify_full_bandit", "ALGORITHMS"]

ALGORITHMS = ("saqm", "sa_foa", "icb", "exhaustive")
_OWNER = "identify_full_bandit"


def _factory(name):
    import importlib

    return getattr(importlib.import_module(f"pmcbandit.full_bandit.{name}"), name)


def identify_full_bandit(pull: FullBanditEnvironment | Callable, k: int, algorithm="sa_foa", delta: float = 0.05,
                         epsilon: float = 0.0, R: float | None = None, *, n: int | None = None,
                         noise: str | None = None, allocation="uniform", max_rounds: int = 1_000_000,
                         random_seed=None, arm_names=None, algorithm_kwargs: dict | None = None) -> FullBanditResult:
    r"""Identify the best super-arm of ``k`` arms with full-bandit feedback (Kuroki et al. 2020).

    Parameters
    ----------
    pull : FullBanditEnvironment or callable
        The environment, or ``pull(super_arm, rng) -> float`` returning one noisy observation of the
        sum of the arms ``super_arm`` (sorted indices); ``n`` is then required.
    k : int
        Super-arm size, ``2 <= k < n``.
    algorithm : str or FullBanditIdentifier
        ``"sa_foa"`` (default), ``"saqm"``, ``"icb"``, ``"exhaustive"``, or a ready identifier
        (which carries its own ``k``, ``delta``, ``epsilon``, ``R``, allocation).
    delta : float
        Error probability in (0, 1).
    epsilon : float
        Tolerance >= 0 on the answer's sum of means.
    R : float, optional
        Noise scale of a single arm (> 0). With an environment it defaults to its ``noise_sd``.
    n : int, optional
        Number of arms (required with a callable ``pull``).
    noise : {"independent", "dependent", "sum"}, optional
        How ``R`` enters the sum's scale (:func:`~pmcbandit.full_bandit.base.sum_noise_scale`); with an
        environment it defaults to the environment's, otherwise to ``"independent"``.
    allocation : str or Allocation
        ``"uniform"``, ``"g"`` or an :class:`~pmcbandit.full_bandit.allocation.Allocation`.
    max_rounds : int
        Cap on pulls; reaching it ends the run with ``stopped_by="max_rounds"``.
    random_seed : int, Generator or None
    arm_names : sequence of str, optional
    algorithm_kwargs : dict, optional
        Extra settings for the algorithm factory (``refresh_every``, ``oracle`` for ICB, ...).

    Returns
    -------
    FullBanditResult

    Examples
    --------
    >>> env = FullBanditEnvironment([1.0, 0.9, 0.2, 0.1, 0.0], noise_sd=0.1)
    >>> res = identify_full_bandit(env, k=2, random_seed=1)
    >>> res.selected, res.stopped_by
    (['arm0', 'arm1'], 'confidence')
    """
    rng = get_random_generator(random_seed, _OWNER)
    if isinstance(pull, FullBanditEnvironment):
        env_n = pull.n
        if n is not None and n != env_n:
            raise ValueError(f"The 'n' parameter of {_OWNER} must match the environment's {env_n}. Got {n!r} instead.")
        n = env_n
        R = pull.noise_sd if R is None else R
        noise = pull.noise if noise is None else noise
        source = pull.pull
    elif callable(pull):
        if n is None:
            raise ValueError(f"The 'n' parameter of {_OWNER} must be given with a pull function. Got None instead.")
        if R is None:
            raise ValueError(f"The 'R' parameter of {_OWNER} must be given with a pull function. Got None instead.")
        source = pull
    else:
        raise TypeError(f"The 'pull' parameter of {_OWNER} must be a FullBanditEnvironment or a callable. "
                        f"Got {pull!r} instead.")
    noise = "independent" if noise is None else noise
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, numbers.Integral) or max_rounds < 1:
        raise ValueError(f"The 'max_rounds' parameter of {_OWNER} must be an int >= 1. Got {max_rounds!r} instead.")
    if isinstance(algorithm, FullBanditIdentifier):
        if algorithm_kwargs:
            raise ValueError(f"The 'algorithm_kwargs' parameter of {_OWNER} must be empty with a ready identifier. "
                             f"Got {algorithm_kwargs!r} instead.")
        algo = algorithm
    elif algorithm in ALGORITHMS:
        algo = _factory(algorithm)(n, k, delta, epsilon, 1.0 if R is None else R, noise=noise, allocation=allocation,
                                   **(algorithm_kwargs or {}))
    else:
        raise ValueError(f"The 'algorithm' parameter of {_OWNER} must be one of {ALGORITHMS} or a "
                         f"FullBanditIdentifier. Got {algorithm!r} instead.")
    if algo.n != n:
        raise ValueError(f"The 'algorithm' parameter of {_OWNER} must be built for n = {n} arms. Got {algo.n} instead.")
    names = [f"arm{i}" for i in range(n)] if arm_names is None else [str(a) for a in arm_names]
    if len(names) != n or len(set(names)) != n:
        raise ValueError(f"The 'arm_names' parameter of {_OWNER} must hold {n} unique names. "
                         f"Got {arm_names!r} instead.")

    cap = int(max_rounds)
    super_arms = np.empty((min(cap, 4096), algo.k), dtype=np.int64)
    rewards = np.empty(super_arms.shape[0])
    stats = np.empty(super_arms.shape[0])
    state = algo.init()
    stopped_by = "max_rounds"
    statistic = math.inf
    while state.t < cap:
        chosen = algo.select(rng, state)
        reward = source(chosen, rng)
        if isinstance(reward, bool) or not isinstance(reward, numbers.Real) or not math.isfinite(reward):
            raise ValueError(f"The 'pull' parameter of {_OWNER} must return finite real numbers. "
                             f"Got {reward!r} for super-arm {chosen.tolist()} at pull {state.t} instead.")
        state = algo.update(state, chosen, float(reward))
        statistic = algo.statistic(state)
        t = state.t - 1
        if t >= super_arms.shape[0]:
            grow = min(cap, 2 * super_arms.shape[0])
            super_arms = np.concatenate([super_arms, np.empty((grow - super_arms.shape[0], algo.k), np.int64)])
            rewards = np.concatenate([rewards, np.empty(grow - rewards.shape[0])])
            stats = np.concatenate([stats, np.empty(grow - stats.shape[0])])
        super_arms[t], rewards[t], stats[t] = chosen, reward, statistic
        if state.ready and statistic <= algo.epsilon:
            stopped_by = "confidence"
            break
    p = algo.params
    if state.ready:
        C = p.get("width_scale", 1.0) * width_constant(float(state.t), p["log_classes"], p["sigma_sum"], algo.delta,
                                                    p.get("width_rule", 0))
        width = C * np.sqrt(np.clip(np.diag(state.A_inv), 0.0, None))
    else:
        width = np.full(n, np.nan)
    settings = dict(p, max_rounds=cap, random_seed=random_seed if isinstance(random_seed, int) else None)
    return FullBanditResult(names, algo.recommend(state), stopped_by, least_norm_estimate(state), width, statistic,
                            super_arms[:state.t], rewards[:state.t], stats[:state.t], settings)
