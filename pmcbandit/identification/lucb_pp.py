r"""LUCB++ (Simchowitz, Jamieson & Recht 2017): LUCB with LIL radii split between the top and the rest.

The radius is :math:`U(T_i, \delta/2(N-K))` for the empirical top :math:`K` and
:math:`U(T_i, \delta/2K)` for the others (the split Jiang, Li & Qiao 2017 take over in Alg. 1); every
round samples both arms of the critical pair ``(h, l)`` (:func:`~pmcbandit.identification.kernels.lucb_pair`).
The faithful parameters use the error bound :math:`c_\epsilon\delta` of Jiang et al.'s Thm 3.1, whose
proof covers this radius (Jiang et al. 2017, Sec. 3, footnote 4).
"""

from __future__ import annotations

from pmcbandit.identification._lucb import check_common, lil_confidence, lucb_identifier
from pmcbandit.identification.base import Identifier, Selection
from pmcbandit.identification.kernels import LIL

__all__ = ["lucb_pp"]


def lucb_pp(k: int = 1, delta: float = 0.05, sigma: float = 0.5, mode: str = "faithful",
            epsilon: float | None = None) -> Identifier:
    """LUCB++ for the top ``k`` arms (parameters as :func:`~pmcbandit.identification.lil_rand_lucb`)."""
    owner = "lucb_pp"
    k, delta, sigma = check_common(k, delta, sigma, owner)
    epsilon, algo_delta = lil_confidence(delta, mode, epsilon, "randlucb", owner)

    def omegas(n_arms):
        return algo_delta / (2 * (n_arms - k)), algo_delta / (2 * k)

    def sample(rng, h, l, state):
        return Selection((int(h), int(l)), (1, 1))

    params = (("mode", mode), ("epsilon", epsilon), ("algorithm_delta", algo_delta), ("sigma", sigma))
    return lucb_identifier("lucb_pp", k, delta, params, LIL, omegas, sigma, epsilon, algo_delta, sample, False, owner)
