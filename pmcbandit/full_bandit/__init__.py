r"""Multiple-arm identification with full-bandit feedback (Kuroki, Xu, Miyauchi, Honda & Sugiyama 2020).

``n`` single arms with unknown means :math:`\theta`; each round pulls a super-arm :math:`M`
(``k`` arms) and observes only :math:`\chi_M^\top\theta + \eta`. The algorithms keep the
least-squares estimate :math:`\hat\theta_t = A_t^{-1} b_t` (:mod:`~pmcbandit.full_bandit.least_squares`)
and stop on confidence-ellipsoid bounds (:mod:`~pmcbandit.full_bandit.base`):

==============================  =============================================================
:func:`saqm`                    Alg. 2: CEM bound from the QP / densest-k-subgraph reduction
:func:`sa_foa`                  Alg. 3: first-order bound on the gap :math:`\max_M` of eq. (5)
:func:`icb`                     Alg. 4: independent (diagonal) bounds; any linear oracle class
:func:`exhaustive`              Alg. 5: eq. (5) by enumeration (small ``C(n, k)`` only)
:func:`identify_full_bandit`    run one on an environment or a pull function
:func:`simulate_full_bandit`    the same rules in one numba loop, for replicated experiments
==============================  =============================================================

Public API (stable names the benchmarks code against)::

    Allocation(support, weights, name); uniform_allocation(n, k); check_allocation(allocation, n, k, owner)
    FullBanditEnvironment(theta, noise_sd=1.0, noise="independent").pull(super_arm, rng) -> float
    simulate_full_bandit(algorithm_name, theta, k, delta, epsilon, R, allocation, max_rounds, rng,
                         record_every=None, *, noise="independent", width_scale=1.0, width="paper") -> SimulationResult
        SimulationResult: stop_round (int, -1 if max_rounds hit), stopped (bool), recommended (ndarray of
        k arm indices), correct (bool: recommended is epsilon-optimal for theta), records (dict of arrays
        at every record_every-th round once A_t has full rank, or None: "round", "saqm_approx",
        "saqm_bound", "cem_exact", "safoa_approx", "safoa_bound", "gap_exact"; see simulate.py)
"""

from __future__ import annotations

# Eager imports: the algorithm factories share their modules' names (``sa_foa`` the function and
# ``pmcbandit.full_bandit.sa_foa`` the module), so the functions are bound here after the modules
# load. Numba compiles on first call, so importing stays cheap.
from pmcbandit.full_bandit.allocation import Allocation, check_allocation, resolve_allocation, uniform_allocation
from pmcbandit.full_bandit.base import (FullBanditIdentifier, FullBanditState, confidence_width,
                                        sum_noise_scale)
from pmcbandit.full_bandit.environment import FullBanditEnvironment
from pmcbandit.full_bandit.exhaustive import exhaustive
from pmcbandit.full_bandit.icb import icb, matroid_oracle
from pmcbandit.full_bandit.identify import identify_full_bandit
from pmcbandit.full_bandit.result import FullBanditResult
from pmcbandit.full_bandit.sa_foa import sa_foa
from pmcbandit.full_bandit.saqm import saqm
from pmcbandit.full_bandit.simulate import SimulationResult, simulate_full_bandit

__all__ = ["Allocation", "check_allocation", "resolve_allocation", "uniform_allocation", "FullBanditIdentifier",
           "FullBanditState", "confidence_width", "sum_noise_scale", "FullBanditEnvironment", "exhaustive", "icb",
           "matroid_oracle", "identify_full_bandit", "FullBanditResult", "sa_foa", "saqm", "SimulationResult",
           "simulate_full_bandit"]
