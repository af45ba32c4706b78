"""Best-K identification with fixed confidence: which arms have the largest means, with probability 1 - delta.

One module per algorithm, each a factory returning an :class:`Identifier` (pure functions over
:class:`ArmStats`, :mod:`pmcbandit.identification.base`); the confidence radii are in
:mod:`pmcbandit.identification.radii`, the rules' numba kernels (shared with the stopping-time
simulator) in :mod:`pmcbandit.identification.kernels`. :func:`pmcbandit.identify` runs one on a pool
of arms. Sources: Jiang, Li & Qiao (2017), "Practical Algorithms for Best-K Identification in
Multi-Armed Bandits", and the baselines they compare (each module cites its own).
"""

from __future__ import annotations

from pmcbandit._validation import resolve_named
from pmcbandit.identification.base import ArmStats, Identifier, Selection
from pmcbandit.identification.lil_clucb import lil_clucb
from pmcbandit.identification.lil_lucb import lil_lucb
from pmcbandit.identification.lil_rand_lucb import lil_rand_lucb
from pmcbandit.identification.lil_ucb import lil_ucb
from pmcbandit.identification.lucb1 import lucb1
from pmcbandit.identification.lucb_pp import lucb_pp
from pmcbandit.identification.oracles import Oracle, top_k_oracle

__all__ = ["ArmStats", "Identifier", "Selection", "Oracle", "top_k_oracle", "IDENTIFIER_NAMES", "get_identifier",
           "lucb1", "lil_lucb", "lucb_pp", "lil_rand_lucb", "lil_clucb", "lil_ucb"]

#: name -> module under pmcbandit.identification (each exports a factory of the same name)
_MODULES = {name: name for name in ("lucb1", "lil_lucb", "lucb_pp", "lil_rand_lucb", "lil_clucb", "lil_ucb")}
IDENTIFIER_NAMES = tuple(_MODULES)


def get_identifier(algorithm, **params) -> Identifier:
    """An :class:`Identifier` from a name in :data:`IDENTIFIER_NAMES` (built with ``params``) or as given."""
    return resolve_named(algorithm, Identifier, _MODULES, "pmcbandit.identification", "algorithm",
                         lambda module, name: getattr(module, name), params)
