r"""lil'CLUCB (Jiang, Li & Qiao 2017, Sec. 4, Alg. 2): CLUCB (Chen et al. 2014) with LIL radii.

After one sample of every arm, each round takes :math:`M_t` = the oracle's answer on the empirical
means, revises every mean by its radius :math:`u_i = U(T_i, \delta/N)` — down inside :math:`M_t`, up
outside — and asks the oracle again (:math:`\tilde M_t`); it stops with :math:`M_t` when both agree,
else samples the arm of largest radius in :math:`M_t \triangle \tilde M_t`. For best-K the oracle is
the top-K set (:func:`~pmcbandit.identification.oracles.top_k_oracle`); the combinatorial form (Sec. 4.2,
App. E) takes any :class:`~pmcbandit.identification.oracles.Oracle` over a decision class.
Theorem 4.1: correct with probability at least :math:`1 - c_\epsilon\delta^{1+\epsilon}/N^\epsilon`.
"""

from __future__ import annotations

import numpy as np

from pmcbandit.identification._lucb import RadiusTable, check_common, check_k, first_round, lil_confidence
from pmcbandit.identification.base import (
    ArmStats, Identifier, KernelSpec, Selection, empirical_means, init_stats, observe,
)
from pmcbandit.identification.kernels import CLUCB, LIL, clucb_step
from pmcbandit.identification.oracles import Oracle, top_k_oracle

__all__ = ["lil_clucb"]


def lil_clucb(k: int = 1, delta: float = 0.05, sigma: float = 0.5, mode: str = "faithful",
              epsilon: float | None = None, oracle: Oracle | None = None) -> Identifier:
    """Lil'CLUCB for the top ``k`` arms, or for the best set of a decision class given by ``oracle``.

    Parameters as :func:`~pmcbandit.identification.lil_rand_lucb`; the faithful algorithm delta solves
    :math:`c_\\epsilon\\delta^{1+\\epsilon}/N^\\epsilon = \\nu` (Thm 4.1) for the number of arms at ``init``.
    ``oracle`` (default: top ``k``) maximises :math:`\\sum_{i \\in M} v_i` over the decision class.
    """
    door = "lil_clucb"
    k, delta, sigma = check_common(k, delta, sigma, door)
    lil_confidence(delta, mode, epsilon, "clucb", door)  # checks the arguments before any arm is seen
    if oracle is not None and not isinstance(oracle, Oracle):
        raise TypeError(f"The 'oracle' parameter of {door} must be an Oracle or None. Got {oracle!r} instead.")
    best = oracle or top_k_oracle(k)
    cache = {}

    def confidence_for(n_arms):
        if n_arms not in cache:
            eps, algo_delta = lil_confidence(delta, mode, epsilon, "clucb", door, n_arms)
            cache[n_arms] = (eps, algo_delta, RadiusTable(LIL, algo_delta / n_arms, sigma, eps))
        return cache[n_arms]

    def step(state):
        _, _, table = confidence_for(state.n.shape[0])
        radii = table.covering(state.n)
        if oracle is None:
            return clucb_step(state.n, state.total, k, radii)
        means = state.total / state.n
        r = radii[state.n]
        m = best.maximise(means)
        m_tilde = best.maximise(np.where(m, means - r, means + r))
        differ = np.flatnonzero(m != m_tilde)
        arm = int(differ[np.argmax(r[differ])]) if differ.size else -1
        return arm, arm < 0, means - r, means + r

    def init(n_arms: int) -> ArmStats:
        check_k(k, n_arms, door)
        return init_stats(n_arms)

    def select(rng, state):
        first = first_round(state)
        return first if first is not None else Selection.one(step(state)[0])

    def stop(state) -> bool:
        return first_round(state) is None and bool(step(state)[1])

    def recommend(state) -> np.ndarray:
        means = np.nan_to_num(empirical_means(state), nan=-np.inf)
        chosen = np.flatnonzero(best.maximise(means))
        return chosen[np.argsort(-means[chosen], kind="mergesort")]

    def confidence(state):
        if first_round(state) is not None:
            n = state.n.shape[0]
            return np.full(n, -np.inf), np.full(n, np.inf)
        _, _, lower, upper = step(state)
        return lower, upper

    eps0 = 0.0 if mode == "heuristic" else (0.01 if epsilon is None else float(epsilon))
    params = (("mode", mode), ("epsilon", eps0), ("sigma", sigma), ("oracle", best.name))
    def kernel(n_arms):
        eps, algo_delta, _ = confidence_for(n_arms)
        return (
            KernelSpec(CLUCB, LIL, k, algo_delta / n_arms, algo_delta / n_arms, sigma, eps) if oracle is None else None
        )

    return Identifier(
        "lil_clucb",
        k,
        delta,
        init,
        select,
        observe,
        stop,
        recommend,
        confidence,
        params,
        False,
        None if oracle is not None else kernel,
    )
