"""Maximisation oracles: the best set of a decision class for given arm weights.

Combinatorial pure exploration (Chen et al. 2014; Jiang, Li & Qiao 2017, Sec. 4.2) identifies
:math:`\\arg\\max_{M \\in \\mathcal M} \\sum_{i \\in M} \\mu_i` over a decision class
:math:`\\mathcal M \\subseteq 2^{[N]}` through an oracle that, given weights :math:`v`, returns
:math:`\\arg\\max_{M \\in \\mathcal M} \\sum_{i \\in M} v_i` as a boolean mask. Best-K is the class of
all K-subsets, whose oracle is the top-K set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from pmcbandit.identification.kernels import top_k

__all__ = ["Oracle", "top_k_oracle"]


class Oracle(NamedTuple):
    """A decision class given by its maximisation oracle ``maximise(weights) -> bool mask``."""

    name: str
    maximise: Callable[[np.ndarray], np.ndarray]


def top_k_oracle(k: int) -> Oracle:
    """The K-subsets: the ``k`` largest weights (ties by the lower index).

    >>> top_k_oracle(2).maximise(np.array([0.1, 0.9, 0.5])).tolist()
    [False, True, True]
    """
    k = int(k)
    return Oracle(f"top-{k}", lambda weights: top_k(np.asarray(weights, dtype=np.float64), k))
