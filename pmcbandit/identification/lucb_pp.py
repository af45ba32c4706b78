r"""LUCB++ (Simchowitz, Jamieson & Recht 2017): LUCB with LIL radii split between the top and the rest.

The radius is :math:`U(T_i, \delta/2(N-K))` for the empirical top :math:`K` and
:math:`U(T_i, \delta/2K)` for the others (the split Jiang, Li & Qiao 2017 take over in Alg. 1); every
round samples both arms of the critical pair ``(h, l)`` (:func:`~pmcbandit.identification.kernels.lucb_pair`).
The faithful parameters use the error bound :math:`c_\epsilon\delta` of Jiang et al.'s Thm 3.1, whose
proof covers this radius (Jiang et al. 2017, Sec. 3, footnote 4).
"""

from __future__ import annotations

from pmcbandit.identification._lucb import lil_lucb_identifier, sample_both, split_confidence
from pmcbandit.identification.base import Identifier

__all__ = ["lucb_pp"]


def lucb_pp(k: int = 1, delta: float = 0.05, sigma: float = 0.5, mode: str = "faithful",
            epsilon: float | None = None) -> Identifier:
    """LUCB++ for the top ``k`` arms (parameters as :func:`~pmcbandit.identification.lil_rand_lucb`)."""
    return lil_lucb_identifier("lucb_pp", k, delta, sigma, mode, epsilon, split_confidence, sample_both)
