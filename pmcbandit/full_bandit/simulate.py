r"""Replicated full-bandit experiments in one numba loop: :func:`simulate_full_bandit`.

The loop does exactly what :func:`~pmcbandit.full_bandit.identify.identify_full_bandit` does with a
:class:`~pmcbandit.full_bandit.environment.FullBanditEnvironment` (same tracking, same least-squares
updates, same stopping statistics, same noise: one ``rng.standard_normal()`` per pull, drawn here in
blocks), without the Python overhead per round; the two give the same stopping round and answer for
the same seed (tested).

Approximation records (paper Sec. 5, Fig. 1): with ``record_every = r`` the loop stops every ``r``
rounds (once :math:`A_t` has full rank) and evaluates, on the current :math:`A_t^{-1}` and
:math:`\hat\theta_t` with the current :math:`C_t`:

* ``saqm_approx``: Alg. 1's CEM value :math:`Z_t = \|\chi_S\|_{A_t^{-1}}` (greedy peeling);
* ``saqm_bound``: the certified :math:`U_t` SAQM stops on;
* ``cem_exact``: :math:`\max_M\|\chi_M\|_{A_t^{-1}}` by enumeration;
* ``safoa_approx``: Alg. 3's approximate :math:`Z_t` of eq. (5);
* ``safoa_bound``: the certified bound SA-FOA stops on;
* ``gap_exact``: :math:`Z^*_t` of eq. (5) by enumeration (Exhaustive's statistic),

plus ``round``. The exact columns are NaN when :math:`\binom nk` exceeds
:data:`~pmcbandit.full_bandit.exhaustive.MAX_SUPER_ARMS`. The ratio ``saqm_approx / cem_exact`` and
the additive error ``gap_exact - safoa_approx`` are the quantities of the paper's Fig. 1.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from pmcbandit.full_bandit.allocation import _orthogonalise_into, resolve_allocation, track
from pmcbandit.full_bandit.base import (ALGORITHM_CODES, check_common, check_width, log_num_super_arms, sum_noise_scale,
                                        width_constant)
from pmcbandit.full_bandit.exhaustive import MAX_SUPER_ARMS, all_super_arms, exact_cem, exact_gap
from pmcbandit.full_bandit.icb import icb_statistic
from pmcbandit.full_bandit.least_squares import (DEFAULT_REFRESH_EVERY, accumulate, estimate,
                                                 inverse_via_cholesky, sherman_morrison)
from pmcbandit.full_bandit.sa_foa import approximate_gap, gap_bound
from pmcbandit.full_bandit.saqm import approximate_norm, bound_norm, saqm_statistic

__all__ = ["simulate_full_bandit", "SimulationResult", "RECORD_FIELDS"]

RECORD_FIELDS = ("round", "saqm_approx", "saqm_bound", "cem_exact", "safoa_approx", "safoa_bound", "gap_exact")
_BLOCK = 1 << 15


class SimulationResult(NamedTuple):
    """One simulated run: ``stop_round`` (pulls made when the rule held; -1 if ``max_rounds`` came
    first), ``stopped``, ``recommended`` (k arm indices, best first), ``correct`` (the recommended set
    is :math:`\\epsilon`-optimal for the true :math:`\\theta`), ``rounds`` (pulls made), ``statistic``
    (the stopping statistic at the final round), ``records`` (dict of arrays, or None)."""

    stop_round: int
    stopped: bool
    recommended: np.ndarray
    correct: bool
    rounds: int
    statistic: float
    records: dict | None


@numba.njit(cache=True)
def _statistic(code, W, th, k, C, eps, combos):
    if code == 0:
        return saqm_statistic(W, th, k, C)
    if code == 1:
        return gap_bound(W, th, k, C, eps, False)
    if code == 2:
        return icb_statistic(W, th, k, C)
    return exact_gap(W, th, k, C, combos)


@numba.njit(cache=True)
def _run_block(code, theta, k, eps, rows, weights, noise, scale, A, A_inv, b, th, counts, u, ints, floats,
               log_classes, sigma, delta, width_scale, rule, refresh_every, max_rounds, combos, basis):
    # ints: [t, since_refresh, ready, stopped, rank]; floats: [last statistic]
    for s in range(noise.shape[0]):
        t = ints[0]
        if t >= max_rounds:
            return
        r = track(counts, weights, t)
        idx = rows[r]
        mean = 0.0
        for a in range(k):
            mean += theta[idx[a]]
        accumulate(A, b, idx, mean + scale * noise[s])
        counts[r] += 1
        ints[0] = t + 1
        if ints[2] == 1:
            ints[1] += 1
            if ints[1] >= refresh_every:
                A_inv[:, :] = inverse_via_cholesky(A)
                ints[1] = 0
            else:
                sherman_morrison(A_inv, idx, u)
        else:
            ints[4] += _orthogonalise_into(basis, ints[4], idx, k)
            if ints[4] < A.shape[0]:
                continue
            A_inv[:, :] = inverse_via_cholesky(A)
            ints[1] = 0
            ints[2] = 1
        estimate(A_inv, b, th)
        C = width_scale * width_constant(float(t + 1), log_classes, sigma, delta, rule)
        stat = _statistic(code, A_inv, th, k, C, eps, combos)
        floats[0] = stat
        if stat <= eps:
            ints[3] = 1
            return


def simulate_full_bandit(algorithm_name: str, theta, k: int, delta: float, epsilon: float, R: float, allocation,
                         max_rounds: int, rng: np.random.Generator, record_every: int | None = None, *,
                         noise: str = "independent", width_scale: float = 1.0, width: str = "paper",
                         refresh_every: int = DEFAULT_REFRESH_EVERY, max_super_arms: int = MAX_SUPER_ARMS,
                         allocation_kwargs: dict | None = None) -> SimulationResult:
    r"""Run one algorithm on the Gaussian full-bandit instance ``theta`` until it stops or ``max_rounds``.

    The decision class is all k-sets (ICB with another oracle runs through
    :func:`~pmcbandit.full_bandit.identify.identify_full_bandit`).

    Parameters
    ----------
    algorithm_name : {"saqm", "sa_foa", "icb", "exhaustive"}
    theta : array_like (n,)
        True single-arm means.
    k, delta, epsilon, R, noise, width_scale, width, refresh_every, max_super_arms
        As for the algorithm factories (:func:`~pmcbandit.full_bandit.saqm.saqm`, ...). The noise
        drawn is Gaussian of standard deviation ``R`` per arm (``noise="independent"``: the sum's
        is :math:`\sqrt k R`) or on the sum (``noise="sum"``); ``"dependent"`` draws as
        ``"independent"`` and widens the bound to :math:`kR`.
    allocation : str or Allocation
    max_rounds : int
        Cap on pulls.
    rng : numpy.random.Generator
        Source of the noise (one standard normal per pull).
    record_every : int, optional
        Record the approximation quantities (module docstring) every so many rounds.

    Returns
    -------
    SimulationResult
    """
    owner = "simulate_full_bandit"
    if algorithm_name not in ALGORITHM_CODES:
        raise ValueError(f"The 'algorithm_name' parameter of {owner} must be one of {tuple(ALGORITHM_CODES)}. "
                         f"Got {algorithm_name!r} instead.")
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    if theta.ndim != 1 or not np.all(np.isfinite(theta)):
        raise ValueError(f"The 'theta' parameter of {owner} must be a finite 1-d array. Got {theta!r} instead.")
    n = theta.shape[0]
    check_common(k, n, delta, epsilon, R, noise, owner)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"The 'rng' parameter of {owner} must be a numpy.random.Generator. Got {rng!r} instead.")
    for name, value in (("max_rounds", max_rounds), ("record_every", record_every), ("refresh_every", refresh_every)):
        if value is None and name == "record_every":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"The {name!r} parameter of {owner} must be an int >= 1. Got {value!r} instead.")
    if not (math.isfinite(width_scale) and width_scale > 0):
        raise ValueError(f"The 'width_scale' parameter of {owner} must be a finite real number > 0. "
                         f"Got {width_scale!r} instead.")
    rule = check_width(width, owner)
    code = ALGORITHM_CODES[algorithm_name]
    alloc = resolve_allocation(allocation, n, k, owner, **(allocation_kwargs or {}))
    rows = np.ascontiguousarray([np.flatnonzero(r) for r in alloc.support], dtype=np.int64)
    weights = np.ascontiguousarray(alloc.weights)
    sigma = sum_noise_scale(R, k, noise)
    scale = float(R) * (1.0 if noise == "sum" else math.sqrt(k))
    log_classes = math.log(n) if code == 2 else log_num_super_arms(n, k)
    enumerable = math.comb(n, k) <= max_super_arms
    if code == 3:
        combos = all_super_arms(n, k, max_super_arms, owner)
    elif record_every is not None and enumerable:
        combos = all_super_arms(n, k, max_super_arms, owner)
    else:
        combos = np.zeros((0, k), dtype=np.int64)
    A = np.zeros((n, n))
    A_inv = np.full((n, n), np.nan)
    b = np.zeros(n)
    th = np.zeros(n)
    counts = np.zeros(rows.shape[0], dtype=np.int64)
    u = np.empty(n)
    ints = np.zeros(5, dtype=np.int64)
    basis = np.zeros((n, n))
    floats = np.array([np.inf])
    records = {f: [] for f in RECORD_FIELDS} if record_every is not None else None
    block = _BLOCK if record_every is None else int(record_every)
    while ints[3] == 0 and ints[0] < max_rounds:
        size = int(min(block, max_rounds - ints[0]))
        noise_block = rng.standard_normal(size)
        _run_block(code, theta, k, float(epsilon), rows, weights, noise_block, scale, A, A_inv, b, th, counts, u, ints,
                   floats, log_classes, sigma, float(delta), float(width_scale), rule, int(refresh_every),
                   int(max_rounds), combos, basis)
        if records is not None and ints[2] == 1 and ints[3] == 0:
            _record(records, int(ints[0]), A_inv, th, k, width_scale * width_constant(
                float(ints[0]), log_classes if code != 2 else log_num_super_arms(n, k), sigma, float(delta), rule),
                combos, enumerable)
        # a stop inside a block leaves the rest of its normals unused, as a pull-by-pull run would
        # never draw them; the generator's state after the run then differs, the run does not
    recommended = np.argsort(-th, kind="stable")[:k] if ints[2] == 1 else np.argsort(
        -np.linalg.lstsq(A, b, rcond=None)[0], kind="stable")[:k]
    best = np.sort(theta)[::-1][:k].sum()
    correct = bool(best - theta[recommended].sum() <= epsilon + 1e-12 * max(1.0, abs(best)))
    recs = None if records is None else {f: np.asarray(v, dtype=np.int64 if f == "round" else np.float64)
                                         for f, v in records.items()}
    return SimulationResult(int(ints[0]) if ints[3] else -1, bool(ints[3]), recommended, correct, int(ints[0]),
                            float(floats[0]), recs)


def _record(records, t, W, th, k, C, combos, enumerable):
    records["round"].append(t)
    records["saqm_approx"].append(float(approximate_norm(W, k)))
    records["saqm_bound"].append(float(bound_norm(W, k)))
    records["safoa_approx"].append(float(approximate_gap(W, th, k, C)))
    records["safoa_bound"].append(float(gap_bound(W, th, k, C, 0.0, True)))
    records["cem_exact"].append(float(exact_cem(W, combos)) if enumerable else math.nan)
    records["gap_exact"].append(float(exact_gap(W, th, k, C, combos)) if enumerable else math.nan)
