r"""LUCB1 (Kalyanakrishnan, Tewari, Auer & Stone 2012, Sec. 3): anytime Hoeffding radii, both arms sampled.

The radius of arm :math:`i` after :math:`T_i` rewards at time :math:`t` is
:math:`\beta(T_i, t) = \sigma\sqrt{2\log(k_1 N t^4/\delta)/T_i}`, :math:`k_1 = 5/4`
(:func:`~pmcbandit.identification.radii.lucb_radius`; the paper's
:math:`\sqrt{\ln(k_1 n t^4/\delta)/(2u)}` for rewards in [0, 1] is :math:`\sigma = 1/2`); a union
bound over arms and times makes it correct with probability at least :math:`1 - \delta` (their
Thm 1 with :math:`\epsilon = 0`). :math:`t` here counts rewards, which is at least the paper's
round count, so the radius is only wider. Every round samples both arms of the critical pair.
There is no heuristic form: ``delta`` is used as given.
"""

from __future__ import annotations

from pmcbandit.identification._lucb import check_common, lucb_identifier, sample_both
from pmcbandit.identification.base import Identifier
from pmcbandit.identification.kernels import LUCB

__all__ = ["lucb1"]


def lucb1(k: int = 1, delta: float = 0.05, sigma: float = 0.5) -> Identifier:
    """LUCB1 for the top ``k`` arms with error probability at most ``delta``; ``sigma`` as in
    :func:`~pmcbandit.identification.lil_rand_lucb`.
    """
    door = "lucb1"
    k, delta, sigma = check_common(k, delta, sigma, door)
    return lucb_identifier("lucb1", k, delta, (("sigma", sigma),), LUCB, None, sigma, 0.0, delta, sample_both, False,
                           door)
