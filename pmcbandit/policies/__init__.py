"""Allocation policies, one module each; :func:`get_policy` resolves names.

Lives here: the policy protocol and shared state (:mod:`~pmcbandit.policies.base`), one module per
policy (UCB1, UCB-V, KL-UCB, Thompson sampling, uniform, oracle, PMC), the reward rules of Neufeld
et al. 2014 (:mod:`~pmcbandit.policies.rewards`, :mod:`~pmcbandit.policies.centring`) and the
allocation learner the run loop drives (:mod:`~pmcbandit.policies.learner`).

May import: the helpers and :mod:`pmcbandit.stats`; never the runtime (a learner reaches the loop
through :class:`pmcbandit.base.Learner`), the other algorithm families, the doors or diagnostics.
"""

from __future__ import annotations

from pmcbandit._validation import resolve_named
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


def get_policy(policy, *, door: str = "get_policy", **params) -> Policy:
    """Return a :class:`Policy` from a name in :data:`POLICY_NAMES` or a Policy.

    ``params`` are passed to the module's ``policy(**params)`` factory
    (e.g. ``get_policy("oracle", arm=2)``, ``get_policy("ucb_v", zeta=1.2)``); ``door`` is the
    door named in error messages.
    """
    return resolve_named(policy, Policy, _MODULES, "pmcbandit.policies", "policy",
                         lambda module, name: module.policy, params, door)
