r"""lil'RandLUCB (Jiang, Li & Qiao 2017, Sec. 3, Alg. 1): LUCB++'s LIL radii with a randomised sampling rule.

After one sample of every arm, each round takes ``High`` (the empirical top ``K``) and the radius
:math:`u_i = U(T_i, \delta/2(N-K))` for :math:`i \in` High, :math:`U(T_i, \delta/2K)` otherwise
(:func:`~pmcbandit.identification.radii.lil`); :math:`h = \arg\min_{High} \hat\mu - u`,
:math:`l = \arg\max_{Low} \hat\mu + u`; it stops with High when :math:`\hat\mu_h - u_h \ge \hat\mu_l + u_l`,
else samples :math:`h` with probability :math:`T_l/(T_h + T_l)` and :math:`l` otherwise, favouring
the arm with fewer samples. Theorem 3.1: correct with probability at least :math:`1 - c_\epsilon\delta`.

>>> import numpy as np
>>> from pmcbandit.identification import lil_rand_lucb
>>> algo = lil_rand_lucb(k=1, delta=0.1, sigma=0.5, mode="heuristic")
>>> state = algo.init(3)
>>> algo.select(np.random.default_rng(0), state)  # every arm once first
Selection(arms=(0, 1, 2), pulls=(1, 1, 1))
"""

from __future__ import annotations

from pmcbandit.identification._lucb import lil_lucb_identifier, sample_fewer, split_confidence
from pmcbandit.identification.base import Identifier

__all__ = ["lil_rand_lucb"]


def lil_rand_lucb(k: int = 1, delta: float = 0.05, sigma: float = 0.5, mode: str = "faithful",
                  epsilon: float | None = None) -> Identifier:
    """Lil'RandLUCB for the top ``k`` arms with error probability at most ``delta``.

    Parameters
    ----------
    k : int
    delta : float
        Target error probability :math:`\\nu` (faithful: the algorithm's :math:`\\delta` is
        :math:`\\nu/c_\\epsilon`, Thm 3.1; heuristic: :math:`\\nu`).
    sigma : float
        Sub-Gaussian scale of the rewards (bounded in ``[a, b]``: ``(b - a) / 2``).
    mode : {"faithful", "heuristic"}
    epsilon : float, optional
        The LIL's :math:`\\epsilon` (faithful default 0.01; heuristic 0).
    """
    return lil_lucb_identifier("lil_rand_lucb", k, delta, sigma, mode, epsilon, split_confidence, sample_fewer)
