"""Best-K identification with fixed confidence: which arms have the largest means, with probability 1 - delta.

One module per algorithm, each a factory returning an :class:`Identifier` (pure functions over
:class:`ArmStats`, :mod:`pmcbandit.identification.base`); the confidence radii are in
:mod:`pmcbandit.identification.radii`, the rules' numba kernels (shared with the stopping-time
simulator) in :mod:`pmcbandit.identification.kernels`. :func:`pmcbandit.identify` runs one on a pool
of arms. Sources: Jiang, Li & Qiao (2017), "Practical Algorithms for Best-K Identification in
Multi-Armed Bandits" (LUCB1, lil'LUCB, LUCB++, lil'RandLUCB, lil'CLUCB, lil'UCB), Kalyanakrishnan &
Stone (2010), "Efficient Selection of Multiple Bandit Arms" (DIRECT, INCREMENTAL, HALVING, ADAPT,
and the baselines OCBA-m and RACING), each module citing its own. The learner the run loop drives is
:mod:`~pmcbandit.identification.learner`.

May import: the helpers, :mod:`pmcbandit.stats`, :mod:`pmcbandit.arms` and :mod:`pmcbandit.runtime`;
ArviZ only through :mod:`pmcbandit.diagnostics`, lazily, from the result's ``to_inference_data``.
"""

from __future__ import annotations

from pmcbandit._validation import resolve_named
from pmcbandit.identification.adapt import adapt
from pmcbandit.identification.base import ArmStats, Identifier, Selection
from pmcbandit.identification.direct import direct
from pmcbandit.identification.halving import halving
from pmcbandit.identification.incremental import incremental
from pmcbandit.identification.lil_clucb import lil_clucb
from pmcbandit.identification.lil_lucb import lil_lucb
from pmcbandit.identification.lil_rand_lucb import lil_rand_lucb
from pmcbandit.identification.lil_ucb import lil_ucb
from pmcbandit.identification.lucb1 import lucb1
from pmcbandit.identification.lucb_pp import lucb_pp
from pmcbandit.identification.ocba_m import ocba_m
from pmcbandit.identification.oracles import Oracle, top_k_oracle
from pmcbandit.identification.racing import racing

__all__ = ["ArmStats", "Identifier", "Selection", "Oracle", "top_k_oracle", "IDENTIFIER_NAMES", "SETTINGS",
           "get_identifier", "lucb1", "lil_lucb", "lucb_pp", "lil_rand_lucb", "lil_clucb", "lil_ucb", "direct",
           "incremental", "halving", "adapt", "ocba_m", "racing"]

_SUB_GAUSSIAN = ("k", "delta", "sigma", "mode", "epsilon")
_BOUNDED = ("k", "delta", "epsilon", "reward_range")
#: name -> the settings its factory takes from :func:`pmcbandit.identify`'s arguments (``reward_range``
#: is the width of ``bounds``); the factory lives in the module of the same name.
SETTINGS = {
    "lucb1": ("k", "delta", "sigma"),
    "lil_lucb": _SUB_GAUSSIAN,
    "lucb_pp": _SUB_GAUSSIAN,
    "lil_rand_lucb": _SUB_GAUSSIAN,
    "lil_clucb": _SUB_GAUSSIAN,
    "lil_ucb": ("delta", "sigma", "mode", "epsilon"),
    "direct": _BOUNDED,
    "incremental": _BOUNDED,
    "halving": _BOUNDED,
    "adapt": _BOUNDED,
    "ocba_m": _BOUNDED,
    "racing": ("k", "delta", "reward_range"),
}
_MODULES = {name: name for name in SETTINGS}
IDENTIFIER_NAMES = tuple(_MODULES)


def get_identifier(algorithm, *, door: str = "get_identifier", **params) -> Identifier:
    """An :class:`Identifier` from a name in :data:`IDENTIFIER_NAMES` (built with ``params``) or as given;
    ``door`` is the door named in error messages.
    """
    return resolve_named(algorithm, Identifier, _MODULES, "pmcbandit.identification", "algorithm",
                         lambda module, name: getattr(module, name), params, door)
