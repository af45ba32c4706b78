r"""lil'UCB (Jamieson, Malloy, Nowak & Bubeck 2014, Alg. 1): the best arm by a LIL index and a pull-count stop.

After one sample of every arm, each round samples the arm maximising
:math:`\hat\mu_i + (1+\beta)\,U(T_i, \delta)` (:func:`~pmcbandit.identification.radii.lil`) and stops
as soon as some arm has :math:`T_i \ge 1 + \lambda\sum_{j\ne i} T_j`; it recommends the most-sampled
arm. Faithful parameters (their Sec. 5): :math:`\epsilon = 0.01`, :math:`\beta = 1`,
:math:`\lambda = ((2+\beta)/\beta)^2`, and :math:`\delta` solving :math:`4\sqrt{c_\epsilon\delta} +
4c_\epsilon\delta = \nu` (their Thm 2's error bound), i.e. :math:`\delta = (\sqrt{1+\nu}-1)^2/(4c_\epsilon)`.
Heuristic ("lil'UCB heuristic", their Sec. 5): :math:`\epsilon = 0`, :math:`\beta = 1/2`,
:math:`\lambda = 1 + 10/N`, :math:`\delta = \nu/5`. Best-1 only.
"""

from __future__ import annotations

import math

import numpy as np

from pmcbandit.identification._lucb import RadiusTable, check_common, check_k, first_round
from pmcbandit.identification.base import ArmStats, Identifier, KernelSpec, Selection, init_stats, observe
from pmcbandit.identification.kernels import LIL, LIL_UCB, lil_ucb_index, lil_ucb_stop
from pmcbandit.identification.radii import c_epsilon, check_lil

__all__ = ["lil_ucb"]


def lil_ucb(delta: float = 0.05, sigma: float = 0.5, mode: str = "faithful", epsilon: float | None = None,
            beta: float | None = None, lam: float | None = None) -> Identifier:
    """Lil'UCB for the best arm (module docstring for the two parameterisations).

    ``beta`` and ``lam`` override the mode's :math:`\\beta` and :math:`\\lambda` (``lam`` as a number,
    or None for the mode's rule).
    """
    door = "lil_ucb"
    _, delta, sigma = check_common(1, delta, sigma, door)
    if mode == "faithful":
        eps = 0.01 if epsilon is None else float(epsilon)
        if not 0.0 < eps < 1.0:
            raise ValueError(
                f"The 'epsilon' parameter of {door} must be in (0, 1) in faithful mode. Got {epsilon!r} instead."
            )
        b = 1.0 if beta is None else float(beta)
        algo_delta = (math.sqrt(1.0 + delta) - 1.0) ** 2 / (4.0 * c_epsilon(eps))
        check_lil(algo_delta, eps, door)
    elif mode == "heuristic":
        if epsilon not in (None, 0, 0.0):
            raise ValueError(
                f"The 'epsilon' parameter of {door} must be None or 0 in heuristic mode. Got {epsilon!r} instead."
            )
        eps, b, algo_delta = 0.0, 0.5 if beta is None else float(beta), delta / 5.0
    else:
        raise ValueError(f"The 'mode' parameter of {door} must be 'faithful' or 'heuristic'. Got {mode!r} instead.")
    if not b > 0:
        raise ValueError(f"The 'beta' parameter of {door} must be > 0. Got {beta!r} instead.")

    table = RadiusTable(LIL, algo_delta, sigma, eps)

    def lam_for(n_arms):
        if lam is not None:
            return float(lam)
        return ((2.0 + b) / b) ** 2 if mode == "faithful" else 1.0 + 10.0 / n_arms

    def init(n_arms: int) -> ArmStats:
        check_k(1, n_arms, door)
        return init_stats(n_arms)

    def select(rng, state):
        first = first_round(state)
        if first is not None:
            return first
        index = lil_ucb_index(state.n, state.total, b, table.covering(state.n))
        best = np.flatnonzero(index == index.max())
        return Selection.one(int(best[int(rng.random() * best.size)]) if best.size > 1 else int(best[0]))

    def stop(state) -> bool:
        return first_round(state) is None and lil_ucb_stop(state.n, lam_for(state.n.shape[0])) >= 0

    def recommend(state) -> np.ndarray:
        return np.array([int(np.argmax(state.n))])

    def confidence(state):
        means = np.divide(state.total, state.n, out=np.full(state.n.shape, np.nan), where=state.n > 0)
        r = table.covering(state.n)[state.n]
        return means - r, means + r

    params = (
        ("mode", mode),
        ("epsilon", eps),
        ("beta", b),
        ("lambda", lam),
        ("algorithm_delta", algo_delta),
        ("sigma", sigma),
    )

    def kernel(n_arms):
        return KernelSpec(LIL_UCB, LIL, 1, algo_delta, algo_delta, sigma, eps, beta=b, lam=lam_for(n_arms))

    return Identifier("lil_ucb", 1, delta, init, select, observe, stop, recommend, confidence, params, True, kernel)
