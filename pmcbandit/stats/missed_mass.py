r"""Is an arm's estimate of the evidence too low? A one-sided test by betting on another arm's importance weights.

An estimator of :math:`Z` can be confidently wrong in one direction only. An annealing path through a first-order
phase transition that finds one of two components, or an importance proposal that never reaches a part of the
posterior, *misses mass*: its weights are well behaved (a small Pareto :math:`\hat k`, a tight interval) and their
mean is too low, because the points that would have raised it are never drawn (Skilling 2006, Sec. 7). An estimate
too *high* by many standard errors needs rare large weights, which its own spread and :math:`\hat k` show. So where
two arms disagree, the direction is evidence: the arm below can be shown to have missed mass by the arm above, with
no assumption on the arm above but that its values are unbiased.

The test
--------
Let arm :math:`b` report the upper limit :math:`U_b = \hat Z_b + z\,\mathrm{se}_b` (:data:`UPPER_Z`, one-sided),
and let arm :math:`a` (the *witness*) have pulls whose values :math:`X_1, \dots, X_n \ge 0` are each the mean of
importance weights: independent, each unbiased for :math:`Z` (for a proposal that misses part of the posterior,
each has mean *below* :math:`Z`). For a bet :math:`\lambda \in [0, 1]`,

.. math::  E_n(U) = \prod_{i \le n} \bigl(1 + \lambda\,(X_i / U - 1)\bigr)

is non-negative, and under :math:`Z \le U` each factor has mean at most 1, whatever arms and pulls came before:
:math:`E_n(U)` is a non-negative supermartingale in the run's pulls, so by Ville's inequality
:math:`P(\sup_n E_n(U) \ge 1/\alpha) \le \alpha` — at any time the run stops, however it chose its pulls
(testing by betting: Ramdas, Grünwald, Vovk & Shafer 2023, "Game-theoretic statistics and safe anytime-valid
inference", Statist. Sci. 38(4); Waudby-Smith & Ramdas 2024, "Estimating means of bounded random variables by
betting", J. R. Stat. Soc. B 86(1)). It is the one-sided counterpart of the stochastic lower bound of Grosse,
Ghahramani & Adams 2015 ("Sandwiching the marginal likelihood using bidirectional Monte Carlo"): the log of an
unbiased estimate of :math:`Z` rarely exceeds :math:`\log Z` by much. The test averages :math:`E_n` over the bets
:data:`BETS` (a mixture of supermartingales with fixed weights is one). :math:`E_n(U)` falls as :math:`U` grows,
so where :math:`Z \le U_b`, :math:`E_n(U_b) \le E_n(Z)`, and

.. math::  P(\text{b flagged}) \le P(Z > U_b) + \alpha ,

with :math:`\alpha` = :data:`ALPHA` shared by the witnesses (Bonferroni). ``b`` is flagged (:func:`missed_mass`)
when some witness's :math:`E_n(U_b)` reaches :math:`m/\alpha` for :math:`m` witnesses. Nothing here reads the
witness's variance or :math:`\hat k`: a witness whose weights are heavy-tailed bets as validly (its values are
still unbiased) and wins only when most of its pulls sit above :math:`U_b`. By Jensen's inequality :math:`E_n`
stays at most 1 while the witness's mean is at most :math:`U_b`, so only such pairs are tested.

May import: NumPy only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["MissedMass", "missed_mass", "log_evidence_against", "ALPHA", "UPPER_Z", "BETS"]

#: Probability, under a correct upper limit, that betting on the witnesses flags an arm (shared by them).
ALPHA = 1e-3
#: The one-sided normal quantile of an arm's upper limit :math:`U_b` (:math:`P(Z > U_b) \approx 10^{-3}`).
UPPER_Z = 3.090232306167813
#: The bets :math:`\lambda` whose wealth processes the test averages (module docstring).
BETS = (0.25, 0.5, 0.75)


class MissedMass(NamedTuple):
    r"""What :func:`missed_mass` found, per arm.

    Attributes
    ----------
    low : ndarray of bool
        Arms whose estimate a witness showed too low.
    witness : ndarray of int
        For each flagged arm, the witness whose bets showed it (the one with the largest evidence); -1 otherwise.
    log_evidence : ndarray of float
        For each flagged arm, the log of that witness's wealth :math:`\log E_n(U_b)`; NaN otherwise.
    threshold : float
        The log wealth a witness had to reach, :math:`\log(m/\alpha)`.
    wanted : ndarray of int
        For each witness whose mean is above an untested arm's upper limit but whose wealth against it is still
        below the threshold, the pulls it would have when that wealth reaches it at its growth per pull so far
        (twice its pulls where the wealth has not grown); 0 otherwise. What a run gives such a witness to settle the
        question (:meth:`pmcbandit.runtime.guards.Guards.widen_check`).
    """

    low: np.ndarray
    witness: np.ndarray
    log_evidence: np.ndarray
    threshold: float
    wanted: np.ndarray

    @classmethod
    def none(cls, n_arms: int) -> MissedMass:
        """No arm flagged."""
        return cls(np.zeros(n_arms, dtype=bool), np.full(n_arms, -1, dtype=np.int64), np.full(n_arms, np.nan),
                   float("inf"), np.zeros(n_arms, dtype=np.int64))


def log_evidence_against(x: np.ndarray, upper: float, bets=BETS) -> float:
    r""":math:`\log` of the witness values ``x``'s wealth against the bound ``upper``, averaged over ``bets``
    (module docstring): the log of an e-value for "the mean of ``x`` is at most ``upper``".
    """
    x = np.asarray(x, dtype=np.float64)
    if not x.size or not upper > 0:
        return 0.0 if x.size == 0 else float("inf")
    r = x / upper - 1.0
    with np.errstate(divide="ignore"):
        logs = np.array([np.log1p(lam * r).sum() for lam in bets])
    top = logs.max()
    if not np.isfinite(top):
        return float(top)
    return float(top + np.log(np.mean(np.exp(logs - top))))


def missed_mass(values, arms, n_arms: int, mean, se, witnesses, alpha: float = ALPHA) -> MissedMass:
    r"""The arms whose estimates the witnesses' bets show too low (module docstring).

    Parameters
    ----------
    values : array_like of float
        Each valid pull's value on a linear scale (a mean of weights, non-negative), one per pull.
    arms : array_like of int
        The arm of each value.
    n_arms : int
    mean, se : array_like of float, shape (n_arms,)
        Each arm's estimate and standard error on the same scale; an arm with a non-finite one is not tested.
    witnesses : array_like of bool, shape (n_arms,)
        Arms whose values are means of importance weights (unbiased, or low where the proposal misses mass).
    alpha : float
        :data:`ALPHA` by default.

    Returns
    -------
    MissedMass

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.gamma(50.0, 2.0 / 50.0, 40), rng.gamma(50.0, 1.0 / 50.0, 40)])  # Z 2, then Z 1
    >>> arm = np.repeat([0, 1], 40)
    >>> m = missed_mass(x, arm, 2, [2.0, 1.0], [0.02, 0.02], [True, True])
    >>> m.low.tolist(), int(m.witness[1])
    ([False, True], 0)
    """
    values = np.asarray(values, dtype=np.float64)
    arms = np.asarray(arms, dtype=np.int64)
    mean, se = np.asarray(mean, dtype=np.float64), np.asarray(se, dtype=np.float64)
    witness = np.asarray(witnesses, dtype=bool)
    out = MissedMass.none(n_arms)
    n_witness = int(witness.sum())
    if not n_witness:
        return out
    threshold = float(np.log(n_witness / alpha))
    out = out._replace(threshold=threshold)
    upper = mean + UPPER_Z * se
    testable = np.isfinite(upper) & (upper > 0) & np.isfinite(mean)
    by_arm = None
    pending = []  # (witness, arm, pulls): bets not yet decided
    for b in np.flatnonzero(testable):
        for a in np.flatnonzero(witness):
            # Jensen: the wealth stays at most 1 while the witness's mean is at most the bound.
            if a == b or not mean[a] > upper[b]:
                continue
            if by_arm is None:
                order = np.argsort(arms, kind="stable")
                bounds = np.searchsorted(arms[order], np.arange(n_arms + 1))
                by_arm = [values[order[bounds[k]:bounds[k + 1]]] for k in range(n_arms)]
            e = log_evidence_against(by_arm[a], float(upper[b]))
            if e >= threshold and not (out.log_evidence[b] >= e):
                out.low[b], out.witness[b], out.log_evidence[b] = True, a, e
            elif e < threshold:
                n = by_arm[a].size
                pending.append((a, b, 2 * n if not e > 0 else int(np.ceil(n * threshold / e))))
    for a, b, need in pending:
        if not out.low[b] and not out.low[a]:
            out.wanted[a] = max(int(out.wanted[a]), need)
    return out
