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
:func:`identify_full_bandit`    run one on an environment or a pull function, through the one run loop
:func:`simulate_full_bandit`    the same run in one numba loop, for replicated experiments
==============================  =============================================================

The environment (:class:`FullBanditEnvironment`) draws one normal per pull from the pull's own
stream, and the simulator draws the same normals (:mod:`~pmcbandit.full_bandit.pull_noise`), so it
replays a live run of :func:`identify_full_bandit` for the same seed pull for pull (same stop, same
answer). The live door is a :class:`FullBanditLearner` over one :class:`SuperArm` per support row
(:mod:`~pmcbandit.full_bandit.learner`).
Allocations (which super-arms to pull, in which shares): :func:`uniform_allocation` and the
G-allocation of App. D (:mod:`~pmcbandit.full_bandit.g_allocation`).

May import: the helpers, :mod:`pmcbandit.stats`, :mod:`pmcbandit.arms`, :mod:`pmcbandit.runtime`
(the one loop) and :mod:`pmcbandit.identification`; ArviZ only through :mod:`pmcbandit.diagnostics`,
lazily, from the result's ``to_inference_data``.
"""

from __future__ import annotations

# Eager imports: the algorithm factories share their modules' names (``sa_foa`` the function and
# ``pmcbandit.full_bandit.sa_foa`` the module), so the functions are bound here after the modules
# load. Numba compiles on first call, so importing stays cheap.
from pmcbandit.full_bandit.allocation import Allocation, check_allocation, resolve_allocation, uniform_allocation
from pmcbandit.full_bandit.base import (FullBanditIdentifier, FullBanditParams, FullBanditState, confidence_width,
                                        sum_noise_scale)
from pmcbandit.full_bandit.environment import FullBanditEnvironment
from pmcbandit.full_bandit.exhaustive import exhaustive
from pmcbandit.full_bandit.icb import icb, matroid_oracle
from pmcbandit.full_bandit.identify import identify_full_bandit
from pmcbandit.full_bandit.learner import FullBanditLearner, SuperArm
from pmcbandit.full_bandit.result import FullBanditResult
from pmcbandit.full_bandit.sa_foa import sa_foa
from pmcbandit.full_bandit.saqm import saqm
from pmcbandit.full_bandit.simulate import SimulationResult, simulate_full_bandit

__all__ = [
    "Allocation",
    "check_allocation",
    "resolve_allocation",
    "uniform_allocation",
    "FullBanditIdentifier",
    "FullBanditParams",
    "FullBanditState",
    "FullBanditLearner",
    "SuperArm",
    "confidence_width",
    "sum_noise_scale",
    "FullBanditEnvironment",
    "exhaustive",
    "icb",
    "matroid_oracle",
    "identify_full_bandit",
    "FullBanditResult",
    "sa_foa",
    "saqm",
    "SimulationResult",
    "simulate_full_bandit",
]
