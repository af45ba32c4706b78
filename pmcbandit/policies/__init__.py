"""Allocation policies, one module each; :func:`get_policy` resolves names."""

from __future__ import annotations

import importlib

from pmcbandit.policies.base import BanditState, Policy, add_pending

__all__ = ["BanditState", "Policy", "add_pending", "get_policy", "POLICY_NAMES"]

# name -> module under pmcbandit.policies
_MODULES = {
    "uniform": "uniform",
    "ucb1": "ucb1",
    "ucb_v": "ucb_v",
    "kl_ucb": "kl_ucb",
    "thompson": "thompson",
    "oracle": "oracle",
    "pmc": "pmc",
}
POLICY_NAMES = tuple(_MODULES)


def get_policy(policy, **params) -> Policy:
    """Return a :class:`Policy` from a name in :data:`POLICY_NAMES` or a Policy.

    ``params`` are passed to the module's ``policy(**params)`` factory
    (e.g. ``get_policy("oracle", arm=2)``, ``get_policy("ucb_v", zeta=1.2)``).
    """
    if isinstance(policy, Policy):
        if params:
            raise ValueError(f"policy parameters {params} given with a ready Policy {policy.name!r}")
        return policy
    if not isinstance(policy, str):
        raise TypeError(
            f"The 'policy' parameter must be a str among {POLICY_NAMES} or a Policy. Got {policy!r} instead."
        )
    if policy not in _MODULES:
        raise ValueError(f"The 'policy' parameter must be one of {POLICY_NAMES}. Got {policy!r} instead.")
    module = importlib.import_module(f"pmcbandit.policies.{_MODULES[policy]}")
    return module.policy(**params)
