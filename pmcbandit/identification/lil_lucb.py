r"""lil'LUCB (Jamieson & Nowak 2014): LUCB with the LIL radius :math:`U(T_i, \delta/N)` for every arm.

Stated for the best arm; Jiang, Li & Qiao (2017, footnote 2) use its direct top-K generalisation,
as here: every round samples both arms of the critical pair ``(h, l)``
(:func:`~pmcbandit.identification.kernels.lucb_pair`). With :math:`K = N/2` it coincides with LUCB++
(:math:`\delta/2(N-K) = \delta/2K = \delta/N`). The faithful parameters use the error bound
:math:`c_\epsilon\delta` of Jiang et al.'s Thm 3.1, whose union over arms this radius also takes.
"""

from __future__ import annotations

from pmcbandit.identification._lucb import even_confidence, lil_lucb_identifier, sample_both
from pmcbandit.identification.base import Identifier

__all__ = ["lil_lucb"]


def lil_lucb(k: int = 1, delta: float = 0.05, sigma: float = 0.5, mode: str = "faithful",
             epsilon: float | None = None) -> Identifier:
    """Lil'LUCB for the top ``k`` arms (parameters as :func:`~pmcbandit.identification.lil_rand_lucb`)."""
    return lil_lucb_identifier("lil_lucb", k, delta, sigma, mode, epsilon, even_confidence, sample_both)
