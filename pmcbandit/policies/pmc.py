"""d-kernel Population Monte Carlo as an allocation rule (the PMC baseline of Sec. 6.2).

Douc, Guillin, Marin & Robert (2007), "Minimum variance importance sampling via
Population Monte Carlo" (ESAIM: P&S 11) and "Convergence of adaptive mixtures of
importance sampling schemes" (Ann. Statist. 35); Neufeld et al. (2014), Sec. 6.2.

The proposal is a mixture ``q_α = Σ_k α_k q_k`` of the arms' fixed proposals.
Each decision draws a component ``I ~ α`` (one pull of arm ``I``); after a
*population* of ``G`` returned pulls the weights become

    α_k ∝ Σ_{pulls p of the population} 1{I_p = k} ω_p,                (1)

the summed importance weights of each component (Neufeld et al. 2014, Sec. 6.2;
the non-Rao-Blackwellised d-kernel update of Douc et al.), and the counters
restart. ``rao_blackwellised=True`` uses instead the Rao-Blackwellised update
``α_k ∝ Σ_p Σ_i ω_{p,i} ρ_k(x_{p,i})`` with ``ρ_k = α_k q_k / q_α``, the version
Douc et al. (2007, Ann. Statist., Sec. 3) prove converges to the
Kullback-optimal mixture.

Which importance weight. The quantity to be integrated is ``h = P`` (the payoff)
under the target ``p``, so the density the mixture should approach is the
optimal importance density ``∝ p·|h|``, whose importance weight at a path
``x_i`` drawn from the mixture is

    ω_i = |h(x_i)| · p(x_i) / q_α(x_i),   q_α/p = Σ_j α_j exp(log(q_j/p)(x_i)),   (2)

and a pull's ``ω_p`` is the sum of (2) over its batch of paths. The mixture
weight ``p/q_α`` (not the arm's own ``p/q_I``) matters: with the own weight,
E[ω_p | I_p = k] = m·E_p|h| is the same for every arm, so (1) leaves α unchanged
in expectation — the "rudimentary" scheme that Douc et al. show does not benefit
from updating. With (2), E[Σ 1{I=k} ω] = G m ∫ p|h| ρ_k, which moves α towards
the components that carry the mass of ``p|h|``.

To evaluate (2) for the current α the policy needs per-path data, which an arm
attaches to its pull ``info`` (outside its declared diagnostics): ``pmc_h``
(h per path), ``pmc_stat`` (a per-path statistic T) and ``pmc_coef`` (one row
``(a_j, b_j)`` per arm of the pool) with ``log(q_j/p)(x) = a_j T(x) − b_j`` — the
exponential-tilting family of :mod:`models.cir` (T = Σ_t ε_t,
a_j = θ_j√Δ, b_j = θ_j²T/2). Sums are taken in log space (logsumexp). The run
loop passes ``value=`` (the decision's observation) and ``info=`` (the pull's
info) to ``update``; an arm without the PMC fields falls back to
``ω_p = |value|`` — the own-weight scheme above, with a warning.

Floor. After each population ``α ← (1 − Kα_min)·α̂ + α_min`` (α̂ the normalised
sums), so every component keeps probability ≥ ``α_min`` (default ``1e-3/K``)
and can recover; a population whose weights are all zero leaves α unchanged.

Estimation. In Douc et al. the PMC estimate is the self-normalised mixture
importance-sampling average. In pmcbandit PMC is only the *allocation rule*:
the run loop combines the arms' own observations (each unbiased by itself), so
PMC competes with the bandit policies on the same arms, budget and combiner.
Checkpoint replay sees only the declared diagnostics, so a PMC run on arms
with PMC fields cannot be resumed from a checkpoint (the replay diverges and
the run loop says so).
"""

from __future__ import annotations

import numbers
import warnings
from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from pmcbandit.policies.base import BanditState, Policy, init_state, record_loss, recentre_state

__all__ = ["PMCExtra", "policy", "population_weights", "mixture_log_weights"]


class PMCExtra(NamedTuple):
    """PMC's fields in ``BanditState.extra``.

    Attributes
    ----------
    alpha : ndarray, shape (K,)
        Current mixture weights (sum to 1).
    log_acc : ndarray, shape (K,)
        log of the summed importance weights of each component in the current population.
    filled : int
        Pulls received in the current population.
    populations : int
        Completed populations (α updates).
    """

    alpha: np.ndarray
    log_acc: np.ndarray
    filled: int
    populations: int

    per_arm_fields = ("alpha", "log_acc")  # indexed by arm (PolicyExtra)


def mixture_log_weights(alpha, h, stat, coef):
    """Per-path ``log ω_i`` of (2) and the log posterior ``log ρ_ij = log α_j q_j/q_α``.

    Parameters
    ----------
    alpha : ndarray, shape (K,)
    h, stat : ndarray, shape (m,)
        Integrand and tilting statistic of each path.
    coef : ndarray, shape (K, 2)
        ``log(q_j/p)(x) = coef[j, 0]·stat(x) − coef[j, 1]``.

    Returns
    -------
    log_omega : ndarray, shape (m,)
        ``log|h_i| − log Σ_j α_j (q_j/p)(x_i)`` (−inf where h_i = 0).
    log_rho : ndarray, shape (m, K)
    """
    log_ratio = np.outer(stat, coef[:, 0]) - coef[:, 1]
    with np.errstate(divide="ignore"):
        log_joint = np.log(alpha) + log_ratio
        log_mix = logsumexp(log_joint, axis=1)
        log_omega = np.log(np.abs(h)) - log_mix
    return log_omega, log_joint - log_mix[:, None]


def population_weights(log_acc, alpha_min):
    """Mixture weights after a population: normalised sums, floored by mixing with uniform.

    ``α = (1 − K α_min) · exp(log_acc − logsumexp(log_acc)) + α_min``; ``None``
    when every sum is zero (the caller keeps the old α).
    """
    total = logsumexp(log_acc)
    if not np.isfinite(total):
        return None
    k = log_acc.shape[0]
    return (1.0 - k * alpha_min) * np.exp(log_acc - total) + alpha_min


def policy(population_size: int = 10, *, alpha_min: float | None = None, rao_blackwellised: bool = False,
           scale: float | None = None) -> Policy:
    """d-kernel PMC allocation as a :class:`~pmcbandit.policies.base.Policy` named ``"pmc"``.

    Parameters
    ----------
    population_size : int
        G, returned pulls per population (each pull is a batch of the arm's paths).
    alpha_min : float, optional
        Floor of every mixture weight; default ``1e-3 / K``; must satisfy ``K·α_min < 1``.
    rao_blackwellised : bool
        Use the Rao-Blackwellised update instead of the indicator update (1).
    scale : float, optional
        Fixed loss scale of the shared statistics (see :func:`init_state`).
    """
    if isinstance(population_size, bool) or not isinstance(population_size, numbers.Integral) or population_size < 1:
        raise ValueError(
            f"The 'population_size' parameter of pmc must be an int >= 1. Got {population_size!r} instead."
        )
    if alpha_min is not None and (
        isinstance(alpha_min, bool) or not isinstance(alpha_min, numbers.Real) or not 0.0 <= alpha_min < 1.0
    ):
        raise ValueError(f"The 'alpha_min' parameter of pmc must be a float in [0, 1). Got {alpha_min!r} instead.")
    g = int(population_size)
    rb = bool(rao_blackwellised)

    def floor(k: int) -> float:
        a = 1e-3 / k if alpha_min is None else float(alpha_min)
        if k * a >= 1.0:
            raise ValueError(
                f"The 'alpha_min' parameter of pmc must be < 1/K = {1.0 / k!r} for {k} arms. Got {a!r} instead."
            )
        return a

    def init(n_arms: int, scale: float | None = scale, *, per_arm: bool = False) -> BanditState:
        state = init_state(n_arms, scale, per_arm=per_arm)
        floor(n_arms)
        extra = PMCExtra(np.full(n_arms, 1.0 / n_arms), np.full(n_arms, -np.inf), 0, 0)
        return state._replace(extra=extra)

    def select(rng: np.random.Generator, state: BanditState) -> int:
        alpha = state.extra.alpha
        # One uniform per decision; the last index absorbs rounding of the cumsum.
        return int(min(np.searchsorted(np.cumsum(alpha), rng.random() * alpha.sum(), side="right"),
                       alpha.shape[0] - 1))

    def update(rng, state, arm, reward, cost=0.0, *, value=None, info=None, **kwargs):
        state = record_loss(state, arm, reward, cost)
        ex = state.extra
        log_acc = ex.log_acc.copy()
        info = info or {}
        if all(key in info for key in ("pmc_h", "pmc_stat", "pmc_coef")):
            coef = np.asarray(info["pmc_coef"], dtype=np.float64)
            if coef.shape != (ex.alpha.shape[0], 2):
                raise ValueError(
                    f"info['pmc_coef'] of arm {arm} has shape {coef.shape}; PMC needs one row per arm of the "
                    f"pool, shape ({ex.alpha.shape[0]}, 2)"
                )
            log_omega, log_rho = mixture_log_weights(
                ex.alpha, np.asarray(info["pmc_h"], dtype=np.float64),
                np.asarray(info["pmc_stat"], dtype=np.float64), coef)
            if rb:
                log_acc = np.logaddexp(log_acc, logsumexp(log_omega[:, None] + log_rho, axis=0))
            else:
                log_acc[arm] = np.logaddexp(log_acc[arm], logsumexp(log_omega))
        elif value is not None:
            warnings.warn(
                "pmc: the pull info has no 'pmc_h'/'pmc_stat'/'pmc_coef' fields; using the arm's own "
                "observation as importance weight, which does not adapt α in expectation",
                UserWarning, stacklevel=2)
            with np.errstate(divide="ignore"):
                log_acc[arm] = np.logaddexp(log_acc[arm], np.log(abs(float(value))))
        else:
            raise ValueError(
                "pmc update needs the pull's info (with 'pmc_h', 'pmc_stat', 'pmc_coef') or value=; "
                "call it as update(rng, state, arm, reward, cost, value=..., info=...)"
            )
        filled, populations, alpha = ex.filled + 1, ex.populations, ex.alpha
        if filled >= g:
            new = population_weights(log_acc, floor(alpha.shape[0]))
            if new is not None:
                alpha = new
            log_acc = np.full_like(log_acc, -np.inf)
            filled, populations = 0, populations + 1
        return state._replace(extra=PMCExtra(alpha, log_acc, filled, populations))

    # The mixture weights come from importance weights, not losses: re-centring leaves them.
    return Policy("pmc", init, select, update, None, (float(g),), recentre=recentre_state, observes=True,
                  per_arm_ranges=True, update_reads_pending=False)
