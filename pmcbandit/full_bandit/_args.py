"""The checks :func:`~pmcbandit.full_bandit.identify.identify_full_bandit` and
:func:`~pmcbandit.full_bandit.simulate.simulate_full_bandit` share: the environment, the algorithm
and its keywords. Every message names the door the user called.
"""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Mapping

from pmcbandit._validation import param_message, check_choice, check_k, check_open_unit, check_positive
from pmcbandit.full_bandit.allocation import ALLOCATION_NAMES, Allocation, allocation_builder
from pmcbandit.full_bandit.base import NOISE_MODELS, FullBanditIdentifier
from pmcbandit.full_bandit.environment import FullBanditEnvironment
from pmcbandit.full_bandit.exhaustive import exhaustive
from pmcbandit.full_bandit.icb import icb
from pmcbandit.full_bandit.sa_foa import sa_foa
from pmcbandit.full_bandit.saqm import saqm
from pmcbandit.runtime.budget import Pulls

__all__ = ["ALGORITHMS", "resolve_environment", "resolve_algorithm", "check_arm_names", "check_pull_budget"]

_FACTORIES = {"saqm": saqm, "sa_foa": sa_foa, "icb": icb, "exhaustive": exhaustive}
ALGORITHMS = tuple(_FACTORIES)
# The door's own parameters, which algorithm_kwargs may not repeat.
_DOOR_PARAMS = ("n", "k", "delta", "epsilon", "sigma", "noise", "allocation", "allocation_kwargs")


def factory(name: str):
    """The factory of a named algorithm (:data:`ALGORITHMS`)."""
    return _FACTORIES[name]


def resolve_environment(environment, n, sigma, noise, door: str):
    """``(pull, n, sigma, noise)`` of an environment or a pull function (defaults from the environment)."""
    if n is not None:
        check_positive(n, "n", door, integer=True)
    if sigma is not None:
        check_positive(sigma, "sigma", door)
    if noise is not None:
        check_choice(noise, NOISE_MODELS, "noise", door)
    if isinstance(environment, FullBanditEnvironment):
        if n is not None and n != environment.n:
            raise ValueError(param_message("n", door, f"None or the environment's {environment.n}", n))
        return (environment.pull, environment.n, environment.noise_sd if sigma is None else sigma,
                environment.noise if noise is None else noise)
    if not callable(environment):
        raise TypeError(param_message("environment", door, "a FullBanditEnvironment or a callable pull(super_arm, rng)",
                                      environment))
    if n is None:
        raise ValueError(param_message("n", door, "given (the number of arms) with a pull function", n))
    if sigma is None:
        raise ValueError(param_message("sigma", door, "given (the single-arm noise scale, the paper's R) with a pull "
                                       "function", sigma))
    return environment, int(n), sigma, "independent" if noise is None else noise


def resolve_algorithm(algorithm, n: int, k, delta, epsilon, sigma, noise, allocation, algorithm_kwargs,
                      door: str) -> FullBanditIdentifier:
    """The named algorithm built for ``n`` arms (``algorithm_kwargs`` split between the factory's own
    settings and the allocation builder's), or a ready identifier checked against ``n`` and ``k``.
    """
    check_k(k, n, door)
    if k < 2:
        raise ValueError(param_message("k", door, f"an int with 2 <= k < {n} (k = 1 is best-arm identification: use "
                                       "identify)", k))
    delta = check_open_unit(delta, "delta", door)
    check_positive(epsilon, "epsilon", door, allow_zero=True)
    if not (isinstance(allocation, Allocation) or (isinstance(allocation, str) and allocation in ALLOCATION_NAMES)):
        kind = ValueError if isinstance(allocation, str) else TypeError
        raise kind(param_message("allocation", door, f"one of {ALLOCATION_NAMES} or an Allocation", allocation))
    if algorithm_kwargs is not None and not isinstance(algorithm_kwargs, Mapping):
        raise TypeError(param_message("algorithm_kwargs", door, "a dict or None", algorithm_kwargs))
    extra = dict(algorithm_kwargs or {})
    if isinstance(algorithm, FullBanditIdentifier):
        if extra:
            raise ValueError(param_message("algorithm_kwargs", door, "empty for a ready FullBanditIdentifier", extra))
        if algorithm.n != n or algorithm.k != k:
            raise ValueError(param_message("algorithm", door, f"an identifier built for n = {n} arms and k = {k}",
                                           f"n = {algorithm.n}, k = {algorithm.k}"))
        return algorithm
    if not isinstance(algorithm, str):
        raise TypeError(param_message("algorithm", door, f"a str among {ALGORITHMS} or a FullBanditIdentifier",
                                      algorithm))
    if algorithm not in ALGORITHMS:
        raise ValueError(param_message("algorithm", door, f"one of {ALGORITHMS} or a FullBanditIdentifier", algorithm))
    make = factory(algorithm)
    own, of_allocation = _keywords(algorithm, allocation if isinstance(allocation, str) else None)
    repeated = sorted(set(extra) & set(_DOOR_PARAMS))
    if repeated:
        raise ValueError(param_message("algorithm_kwargs", door, f"free of {door}'s own parameters", repeated))
    unknown = sorted(set(extra) - own - of_allocation)
    if unknown:
        raise TypeError(param_message("algorithm_kwargs", door, f"settings of {algorithm} {sorted(own)} or of the "
                                      f"allocation {sorted(of_allocation)}", unknown))
    alloc_kwargs = {key: extra.pop(key) for key in list(extra) if key not in own}
    return make(n, k, delta, float(epsilon), sigma, noise=noise, allocation=allocation,
                allocation_kwargs=alloc_kwargs, **extra)


@functools.lru_cache(maxsize=None)
def _keywords(algorithm: str, allocation: str | None) -> tuple[frozenset, frozenset]:
    """The keywords of an algorithm's factory beyond the door's, and those of a named allocation's builder."""
    own = frozenset(inspect.signature(factory(algorithm)).parameters) - set(_DOOR_PARAMS)
    if allocation is None:
        return own, frozenset()
    return own, frozenset(inspect.signature(allocation_builder(allocation)).parameters) - {"n", "k"}


def check_arm_names(arm_names, n: int, door: str) -> list[str]:
    """``arm_names`` as ``n`` unique strings (``arm0``, ``arm1``, ... when None)."""
    if arm_names is None:
        return [f"arm{i}" for i in range(n)]
    if isinstance(arm_names, str) or not all(isinstance(a, str) for a in _as_list(arm_names, door)):
        raise TypeError(param_message("arm_names", door, f"a sequence of {n} unique str", arm_names))
    names = list(arm_names)
    if len(names) != n or len(set(names)) != n:
        raise ValueError(param_message("arm_names", door, f"a sequence of {n} unique str", arm_names))
    return names


def _as_list(values, door: str) -> list:
    try:
        return list(values)
    except TypeError:
        raise TypeError(param_message("arm_names", door, "a sequence of str", values)) from None


def check_pull_budget(budget, door: str) -> int:
    """The number of pulls of a simulator's ``budget`` (a :class:`~pmcbandit.runtime.budget.Pulls`)."""
    if not isinstance(budget, Pulls):
        raise TypeError(param_message("budget", door, "a Pulls budget (a simulation counts pulls, not seconds)",
                                      budget))
    if not isinstance(budget.n, numbers.Integral) or budget.n >= 2**32:
        raise ValueError(param_message("budget", door, "Pulls(n) with n < 2**32", budget))
    return int(budget.n)
