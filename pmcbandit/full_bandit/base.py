r"""The full-bandit protocol: confidence widths, the noise scale of a sum, the run state and algorithm type.

Confidence width (Kuroki et al. 2020, Prop. 1, after Soare, Lazaric & Munos 2014, Prop. 1)
-----------------------------------------------------------------------------------------
For a static (observation-independent) sequence of pulls, with :math:`\sigma`-sub-Gaussian noise on
each observation (here :math:`\sigma` is the observed sum's scale, ``sigma_sum`` =
:func:`sum_noise_scale` of the single-arm ``sigma``), with probability at least :math:`1-\delta`, for all rounds
:math:`t` and all
:math:`x` of a fixed finite set :math:`\mathcal X`,

.. math:: |x^\top(\theta - \hat\theta_t)| \le C_t \|x\|_{A_t^{-1}}, \qquad
          C_t = 2\sqrt2\,\sigma\sqrt{\log\bigl(6 t^2 |\mathcal X| / (\delta\pi^2)\bigr)}.

Why it holds here: with a static design, :math:`x^\top(\hat\theta_t-\theta) = \sum_s
(x^\top A_t^{-1}\chi_s)\eta_s` is a weighted sum of independent :math:`\sigma`-sub-Gaussian terms
with :math:`\sum_s (x^\top A_t^{-1}\chi_s)^2 = \|x\|^2_{A_t^{-1}}`, so
:math:`P(|\cdot| > c\,\sigma\|x\|) \le 2e^{-c^2/2}`; a union bound over :math:`\mathcal X` and over
:math:`t` with :math:`\delta_t = 6\delta/(\pi^2 t^2)` needs only
:math:`c^2 = 2\log(\pi^2 t^2|\mathcal X|/(3\delta))`, which Soare et al.'s :math:`C_t` exceeds once
:math:`t^2|\mathcal X|/\delta \ge 2` (always here: :math:`|\mathcal X| \ge 3`), so the paper's
width is the default (``width="paper"``, the one the paper's experiments use);
``width="tight"`` uses :math:`C_t = \sqrt2\,\sigma\sqrt{\log(\pi^2t^2|\mathcal X|/(3\delta))}`,
valid by the same argument and about half as wide (fewer samples, same guarantee).
The sets :math:`\mathcal X`: SAQM needs all :math:`\chi_M`
(:math:`|\mathcal X| = \binom nk`); SA-FOA and Exhaustive need the directions
:math:`\chi_{M} - \chi_{M^*}`, :math:`M \in \mathcal M` (:math:`M^*` fixed: again
:math:`\binom nk`); ICB needs the unit vectors :math:`e_i` (:math:`|\mathcal X| = n`, App. A,
Lemma 1: the bound on :math:`\chi_M` then follows by the triangle inequality).

Noise scale of a sum of ``k`` arms
----------------------------------
The paper bounds each single arm's noise in :math:`[-R, R]` (Sec. 2), which makes it
:math:`R`-sub-Gaussian (Hoeffding's lemma); the package calls this single-arm scale ``sigma``
(the paper's :math:`R`). The observation's noise is :math:`\sum_{i\in M}\eta_i`:

* ``noise="independent"`` (default; the arms' noises are independent): a sum of ``k`` independent
  :math:`R`-sub-Gaussian variables is :math:`\sqrt k R`-sub-Gaussian
  (:math:`E e^{\lambda\sum\eta_i} = \prod E e^{\lambda\eta_i} \le e^{k\lambda^2R^2/2}`), so the
  sum's scale is :math:`\sqrt k R`.
* ``noise="dependent"`` (any dependence between arms): by Hölder,
  :math:`E e^{\lambda\sum\eta_i} \le \prod (E e^{k\lambda\eta_i})^{1/k} \le e^{k^2\lambda^2R^2/2}`,
  so the sum's scale is :math:`kR` (also the range bound: the sum lies in :math:`[-kR, kR]`).
* ``noise="sum"``: ``sigma`` is already the scale of the observed sum's noise (one additive
  :math:`\eta` per pull, as in the paper's synthetic experiments, Sec. 5).

Gaussian noise of standard deviation :math:`R` is :math:`R`-sub-Gaussian, so the same widths hold
for the Gaussian environment (:mod:`~pmcbandit.full_bandit.environment`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

from pmcbandit._validation import param_message, check_open_unit, check_positive
from pmcbandit.full_bandit.design import check_nk

__all__ = [
    "NOISE_MODELS",
    "ALGORITHM_CODES",
    "sum_noise_scale",
    "log_num_super_arms",
    "confidence_width",
    "width_constant",
    "check_width",
    "WIDTH_RULES",
    "FullBanditState",
    "FullBanditParams",
    "FullBanditIdentifier",
    "check_common",
]

NOISE_MODELS = ("independent", "dependent", "sum")
#: Width rules: the paper's constant, or the tighter one derived in the module docstring.
WIDTH_RULES = {"paper": 0, "tight": 1}
#: Integer codes of the stopping rules inside the numba kernels.
ALGORITHM_CODES = {"saqm": 0, "sa_foa": 1, "icb": 2, "exhaustive": 3}


def sum_noise_scale(sigma: float, k: int, noise: str = "independent") -> float:
    r"""Sub-Gaussian scale of the observed sum (module docstring) for a single-arm scale ``sigma``
    (the paper's :math:`R`): :math:`\sqrt k R`, :math:`kR` or :math:`R` for ``noise`` =
    ``"independent"``, ``"dependent"``, ``"sum"``.

    >>> sum_noise_scale(1.0, 4), sum_noise_scale(1.0, 4, "dependent"), sum_noise_scale(1.0, 4, "sum")
    (2.0, 4.0, 1.0)
    """
    if noise == "independent":
        return math.sqrt(k) * float(sigma)
    if noise == "dependent":
        return k * float(sigma)
    if noise == "sum":
        return float(sigma)
    raise ValueError(param_message("noise", "sum_noise_scale", f"one of {NOISE_MODELS}", noise))


def log_num_super_arms(n: int, k: int) -> float:
    r""":math:`\log\binom nk` (through ``lgamma``: exact enough and finite for any size)."""
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


@numba.njit(cache=True)
def width_constant(t, log_classes, sigma_sum, delta, rule):
    r"""``rule`` 0 (``"paper"``): :math:`C_t = 2\sqrt2\sigma\sqrt{\log(6t^2|\mathcal X|/(\delta\pi^2))}`
    (Prop. 1); 1 (``"tight"``): :math:`\sqrt2\sigma\sqrt{\log(\pi^2t^2|\mathcal X|/(3\delta))}`;
    ``log_classes`` :math:`= \log|\mathcal X|`, ``sigma_sum`` the observation's scale :math:`\sigma`.
    """
    if rule == 1:
        arg = math.log(math.pi * math.pi / (3.0 * delta)) + 2.0 * math.log(max(t, 1.0)) + log_classes
        return math.sqrt(2.0) * sigma_sum * math.sqrt(max(arg, 0.0))
    arg = math.log(6.0 / (delta * math.pi * math.pi)) + 2.0 * math.log(max(t, 1.0)) + log_classes
    return 2.0 * math.sqrt(2.0) * sigma_sum * math.sqrt(max(arg, 0.0))


def check_width(width, door: str) -> int:
    """The code of a width rule name (:data:`WIDTH_RULES`)."""
    if width not in WIDTH_RULES:
        raise ValueError(param_message("width", door, f"one of {tuple(WIDTH_RULES)}", width))
    return WIDTH_RULES[width]


def confidence_width(
    t: int, n: int, k: int, delta: float, sigma_sum: float, per_arm: bool = False, width: str = "paper"
) -> float:
    """:math:`C_t` for ``t`` pulls and an observation scale ``sigma_sum``, over the ``C(n, k)`` super-arm
    directions (or the ``n`` unit vectors when ``per_arm``, ICB's Lemma 1), under the rule ``width``
    (``"paper"`` or ``"tight"``).
    """
    log_classes = math.log(n) if per_arm else log_num_super_arms(n, k)
    rule = check_width(width, "confidence_width")
    return float(width_constant(float(t), log_classes, float(sigma_sum), float(delta), rule))


def check_common(k, n, delta, epsilon, sigma, noise, door: str) -> None:
    """The bad-input rules shared by every algorithm: ``2 <= k < n``, ``delta`` in (0, 1),
    ``epsilon >= 0``, ``sigma > 0`` (all finite), ``noise`` among :data:`NOISE_MODELS`.
    """
    check_nk(n, k, door)
    check_open_unit(delta, "delta", door)
    check_positive(epsilon, "epsilon", door, allow_zero=True)
    check_positive(sigma, "sigma", door)
    if noise not in NOISE_MODELS:
        raise ValueError(param_message("noise", door, f"one of {NOISE_MODELS}", noise))


class FullBanditState(NamedTuple):
    """Least-squares state of a full-bandit run (immutable: ``update`` returns a new one).

    Attributes
    ----------
    A : ndarray (n, n)
        :math:`A_t = \\sum_s \\chi_s\\chi_s^\\top` (integer counts, exact in float64).
    A_inv : ndarray (n, n)
        :math:`A_t^{-1}` once ``ready`` (NaN before).
    b : ndarray (n,)
        :math:`b_t = \\sum_s \\chi_s r_s`.
    theta_hat : ndarray (n,)
        :math:`\\hat\\theta_t = A_t^{-1} b_t` once ``ready`` (NaN before; see
        :func:`~pmcbandit.full_bandit.least_squares.least_norm_estimate`).
    counts : ndarray (m,) int64
        Pulls of each support row.
    t : int
        Pulls so far.
    since_refresh : int
        Sherman–Morrison updates since the last direct (Cholesky) inverse.
    ready : bool
        Whether :math:`A_t` has full rank.
    basis : ndarray (n, n)
        Orthonormal basis (first ``rank`` rows) of the span of the super-arms pulled so far, grown by
        Gram–Schmidt at each pull until it has ``n`` rows: :math:`A_t` is invertible exactly when
        ``rank == n``, which can happen before every support row has been pulled (a G-allocation row
        of tiny weight is pulled late by tracking, and need not be waited for).
    rank : int
        Rank of :math:`A_t`.
    """

    A: np.ndarray
    A_inv: np.ndarray
    b: np.ndarray
    theta_hat: np.ndarray
    counts: np.ndarray
    t: int
    since_refresh: int
    ready: bool
    basis: np.ndarray
    rank: int


class FullBanditParams(NamedTuple):
    r"""The settings of a :class:`FullBanditIdentifier` (plain values: they become a run's settings).

    Attributes
    ----------
    algorithm : str
        ``"saqm"``, ``"sa_foa"``, ``"icb"`` or ``"exhaustive"``.
    n, k : int
        Arms and super-arm size.
    delta, epsilon : float
        Error probability and tolerance.
    sigma : float
        Single-arm noise scale (the paper's :math:`R`).
    noise : str
        How ``sigma`` enters the observation's scale (:data:`NOISE_MODELS`).
    sigma_sum : float
        The observation's scale, :func:`sum_noise_scale`.
    allocation : str
        The allocation's name; ``support_size`` its number of rows.
    support_size : int
    refresh_every : int
        Sherman–Morrison updates between direct inverses.
    width_scale : float
        Factor on :math:`C_t` (1 keeps the guarantee).
    width : str
        The width rule, a key of :data:`WIDTH_RULES`.
    log_classes : float
        :math:`\log|\mathcal X|` of the union bound.
    oracle : str or None
        ICB's decision class (its oracle's name), ``None`` for all k-sets.
    max_super_arms : int or None
        Exhaustive's enumeration cap.
    """

    algorithm: str
    n: int
    k: int
    delta: float
    epsilon: float
    sigma: float
    noise: str
    sigma_sum: float
    allocation: str
    support_size: int
    refresh_every: int
    width_scale: float
    width: str
    log_classes: float
    oracle: str | None = None
    max_super_arms: int | None = None


class FullBanditIdentifier(NamedTuple):
    r"""A full-bandit identification algorithm as pure functions (after :class:`pmcbandit.identification.Identifier`).

    ``init() -> FullBanditState``; ``select(rng, state) -> ndarray`` (the super-arm to pull, sorted arm
    indices; tracking is deterministic, ``rng`` is accepted for the protocol and not used);
    ``update(state, super_arm, reward) -> FullBanditState``; ``stop(state) -> bool``;
    ``recommend(state) -> ndarray`` (the ``k`` arm indices, best first);
    ``statistic(state) -> float``: the certified upper bound on
    :math:`\max_M \theta(M) - \theta(\hat M_t)` (on the confidence event) that ``stop`` compares
    with ``epsilon`` (``inf`` before :math:`A_t` has full rank); ``width(state) -> float``: the
    confidence width :math:`C_t` at ``state.t`` pulls. ``params`` are the algorithm's settings
    (:class:`FullBanditParams`).
    """

    name: str
    n: int
    k: int
    delta: float
    epsilon: float
    allocation: object
    init: Callable[[], FullBanditState]
    select: Callable
    update: Callable
    stop: Callable[[FullBanditState], bool]
    recommend: Callable[[FullBanditState], np.ndarray]
    statistic: Callable[[FullBanditState], float]
    width: Callable[[FullBanditState], float]
    params: FullBanditParams
