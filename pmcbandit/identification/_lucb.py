"""What the LUCB-type algorithms share: argument checks, the first round, and the Identifier they build.

Every LUCB-type algorithm (LUCB1, lil'LUCB, LUCB++, lil'RandLUCB; :mod:`pmcbandit.identification`)
samples each arm once, then repeatedly finds the critical pair ``(h, l)`` of
:func:`~pmcbandit.identification.kernels.lucb_pair` and stops when ``h``'s lower bound reaches
``l``'s upper bound; they differ in the radius and in which of ``h`` and ``l`` they sample.
"""

from __future__ import annotations

import numbers

import numpy as np

from pmcbandit.identification.base import (
    ArmStats, Identifier, KernelSpec, Selection, empirical_means, init_stats, observe,
)
from pmcbandit.identification.kernels import LIL, LUCB_BOTH, LUCB_RANDOM, grown, lucb_coef, lucb_pair
from pmcbandit.identification.radii import check_lil, lil_delta

__all__ = ["check_common", "lil_confidence", "lucb_identifier", "lil_lucb_identifier", "first_round", "RadiusTable",
           "split_confidence", "even_confidence", "sample_both", "sample_fewer"]

MODES = ("faithful", "heuristic")


def check_common(k, delta, sigma, door: str) -> tuple[int, float, float]:
    """``k >= 1`` (``< N`` is checked at ``init``), ``delta`` in (0, 1), ``sigma > 0``."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"The 'k' parameter of {door} must be an int >= 1. Got {k!r} instead.")
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) or not 0.0 < delta < 1.0:
        raise ValueError(f"The 'delta' parameter of {door} must be in (0, 1). Got {delta!r} instead.")
    if isinstance(sigma, bool) or not isinstance(sigma, numbers.Real) or not (0.0 < sigma < np.inf):
        raise ValueError(f"The 'sigma' parameter of {door} must be a finite real > 0. Got {sigma!r} instead.")
    return int(k), float(delta), float(sigma)


def lil_confidence(delta: float, mode: str, epsilon, theorem: str, door: str, n_arms: int = 1) -> tuple[float, float]:
    """``(epsilon, algorithm delta)`` for a target error ``delta`` (:func:`~pmcbandit.identification.radii.lil_delta`).

    ``mode="heuristic"``: ``epsilon = 0`` and the algorithm's delta is the target (Jiang et al. 2017,
    Sec. 5). ``"faithful"``: ``epsilon`` (default 0.01) in (0, 1) and the largest delta whose error bound
    is at most the target, checked against Lemma 2.1's ``delta < log(1 + epsilon) / e``.
    """
    if mode not in MODES:
        raise ValueError(f"The 'mode' parameter of {door} must be one of {MODES}. Got {mode!r} instead.")
    if mode == "heuristic":
        if epsilon not in (None, 0, 0.0):
            raise ValueError(
                f"The 'epsilon' parameter of {door} must be None or 0 in heuristic mode. Got {epsilon!r} instead."
            )
        return 0.0, delta
    epsilon = 0.01 if epsilon is None else epsilon
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not 0.0 < epsilon < 1.0:
        raise ValueError(
            f"The 'epsilon' parameter of {door} must be in (0, 1) in faithful mode. Got {epsilon!r} instead."
        )
    algo_delta = lil_delta(delta, float(epsilon), theorem, n_arms)
    check_lil(algo_delta, float(epsilon), door)
    return float(epsilon), algo_delta


class RadiusTable:
    """A radius by reward count (:func:`~pmcbandit.identification.kernels.grown`), extended on demand.

    It caches a pure function of the count, so the algorithm stays a pure function of its state.
    """

    def __init__(self, kind: int, omega: float, sigma: float, epsilon: float):
        self.kind, self.omega, self.sigma, self.epsilon = kind, omega, sigma, epsilon
        self.table = grown(np.empty(0), 63, kind, omega, sigma, epsilon)

    def covering(self, n: np.ndarray) -> np.ndarray:
        """The table, long enough for every count in ``n``."""
        top = int(n.max())
        if top >= self.table.shape[0]:
            self.table = grown(self.table, top, self.kind, self.omega, self.sigma, self.epsilon)
        return self.table


def first_round(state: ArmStats) -> Selection | None:
    """Every arm not yet observed, once each (the algorithms' initialisation), or None."""
    unseen = np.flatnonzero(state.n == 0)
    if unseen.size == 0:
        return None
    return Selection(tuple(int(i) for i in unseen), (1,) * int(unseen.size))


def check_k(k: int, n_arms: int, door: str) -> None:
    if not k < n_arms:
        raise ValueError(f"The 'k' parameter of {door} must be < the number of arms ({n_arms}). Got {k!r} instead.")


def lucb_identifier(
    name: str,
    k: int,
    delta: float,
    params: tuple,
    kind: int,
    omegas,
    sigma: float,
    epsilon: float,
    lucb_delta: float,
    sample,
    randomised: bool,
    door: str,
) -> Identifier:
    """An LUCB-type :class:`Identifier`.

    ``omegas(n_arms) -> (omega_high, omega_low)`` gives the LIL confidences for the empirical top ``k``
    and the others; ``sample(rng, h, l, state) -> Selection`` is the sampling rule: both arms, or
    (``randomised``) lil'RandLUCB's one draw, as the simulator's kernel rule says.
    """
    tables = {}
    last = [None, None]  # the state the critical pair was last computed for, and the pair

    def confidences(n_arms):
        if n_arms not in tables:
            high, low = omegas(n_arms) if kind == LIL else (0.0, 0.0)
            table_high = RadiusTable(kind, high, sigma, epsilon)
            tables[n_arms] = (
                high,
                low,
                table_high,
                RadiusTable(kind, low, sigma, epsilon) if kind == LIL else table_high,
            )
        return tables[n_arms]

    def pair(state):
        # stop() and then select() ask for the pair of the same state: computed once.
        if last[0] is state:
            return last[1]
        _, _, high, low = confidences(state.n.shape[0])
        coef = 1.0 if kind == LIL else lucb_coef(max(state.t, 1), lucb_delta, state.n.shape[0], sigma)
        result = lucb_pair(state.n, state.total, k, high.covering(state.n), low.covering(state.n), coef)
        last[0], last[1] = state, result
        return result

    def init(n_arms: int) -> ArmStats:
        check_k(k, n_arms, door)
        return init_stats(n_arms)

    def select(rng, state):
        first = first_round(state)
        if first is not None:
            return first
        h, l, _, _, _ = pair(state)
        return sample(rng, h, l, state)

    def stop(state) -> bool:
        return first_round(state) is None and bool(pair(state)[2])

    def recommend(state) -> np.ndarray:
        means = empirical_means(state)
        return np.argsort(-np.nan_to_num(means, nan=-np.inf), kind="mergesort")[:k]

    def confidence(state):
        if first_round(state) is not None:
            n = state.n.shape[0]
            return np.full(n, -np.inf), np.full(n, np.inf)
        _, _, _, lower, upper = pair(state)
        return lower, upper

    def kernel(n_arms) -> KernelSpec:
        high, low, _, _ = confidences(n_arms)
        return KernelSpec(LUCB_RANDOM if randomised else LUCB_BOTH, kind, k, high, low, sigma, epsilon, lucb_delta)

    return Identifier(name, k, delta, init, select, observe, stop, recommend, confidence, params, randomised, kernel)


def split_confidence(delta: float, n_arms: int, k: int) -> tuple[float, float]:
    """LUCB++'s split: :math:`\\delta/2(N-K)` for the empirical top ``k``, :math:`\\delta/2K` for the others."""
    return delta / (2 * (n_arms - k)), delta / (2 * k)


def even_confidence(delta: float, n_arms: int, k: int) -> tuple[float, float]:
    """A union over all arms: :math:`\\delta/N` for every arm."""
    return delta / n_arms, delta / n_arms


def sample_both(rng, h: int, l: int, state) -> Selection:
    """LUCB's rule: both arms of the critical pair."""
    return Selection((int(h), int(l)), (1, 1))


def sample_fewer(rng, h: int, l: int, state) -> Selection:
    """Lil'RandLUCB's rule: ``h`` with probability :math:`T_l/(T_h + T_l)`, else ``l`` (one uniform)."""
    nh, nl = state.n[h], state.n[l]
    return Selection.one(h if rng.random() < nl / (nh + nl) else l)


def lil_lucb_identifier(name: str, k, delta, sigma, mode, epsilon, confidences, sample) -> Identifier:
    """An LUCB-type algorithm with LIL radii: checks the arguments, sets the faithful or heuristic
    parameters (error bound :math:`c_\\epsilon\\delta`, Jiang et al. 2017, Thm 3.1) and builds it.

    ``confidences(delta, n_arms, k)`` is :func:`split_confidence` or :func:`even_confidence`;
    ``sample`` is :func:`sample_both` or :func:`sample_fewer`.
    """
    k, delta, sigma = check_common(k, delta, sigma, name)
    epsilon, algo_delta = lil_confidence(delta, mode, epsilon, "randlucb", name)
    params = (("mode", mode), ("epsilon", epsilon), ("algorithm_delta", algo_delta), ("sigma", sigma))
    return lucb_identifier(
        name,
        k,
        delta,
        params,
        LIL,
        lambda n_arms: confidences(algo_delta, n_arms, k),
        sigma,
        epsilon,
        algo_delta,
        sample,
        sample is sample_fewer,
        name,
    )
