r"""Replicated full-bandit experiments in one numba loop: :func:`simulate_full_bandit`.

The loop does exactly what :func:`~pmcbandit.full_bandit.identify.identify_full_bandit` does with a
:class:`~pmcbandit.full_bandit.environment.FullBanditEnvironment` and one pull in flight: the same
tracking, least-squares updates and stopping statistics, and the same noise — pull ``j`` of support
row ``r`` takes the first standard normal of that pull's own stream
(:mod:`pmcbandit.runtime.streams`), computed inside numba by
:mod:`~pmcbandit.full_bandit.pull_noise` — without the run loop's overhead per pull. For the same
``random_seed`` the two give the same pulls, the same stopping round and the same answer (tested).
Its arguments are the door's: ``environment``, ``algorithm``, ``k``, ``delta``, ``epsilon``,
``sigma``, ``noise``, ``allocation``, ``budget`` (a :class:`~pmcbandit.runtime.budget.Pulls`),
``random_seed``, ``algorithm_kwargs``.

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

from pmcbandit._rng import get_random_generator
from pmcbandit._validation import param_message, check_positive
from pmcbandit.full_bandit._args import ALGORITHMS, check_pull_budget, resolve_algorithm
from pmcbandit.full_bandit.design import _orthogonalise_into, track
from pmcbandit.full_bandit.base import ALGORITHM_CODES, WIDTH_RULES, log_num_super_arms, width_constant
from pmcbandit.full_bandit.environment import FullBanditEnvironment
from pmcbandit.full_bandit.exhaustive import MAX_SUPER_ARMS, all_super_arms, exact_cem, exact_gap
from pmcbandit.full_bandit.icb import icb_statistic
from pmcbandit.full_bandit.least_squares import accumulate, estimate, inverse_via_cholesky, sherman_morrison
from pmcbandit.full_bandit.pull_noise import arm_seed_sequence, pull_normal_into, pull_normal_matches_numpy, row_pools
from pmcbandit.full_bandit.sa_foa import approximate_gap, gap_bound
from pmcbandit.full_bandit.saqm import approximate_norm, bound_norm, saqm_statistic
from pmcbandit.runtime.budget import Budget, Pulls

__all__ = ["simulate_full_bandit", "SimulationResult", "RECORD_FIELDS"]

RECORD_FIELDS = ("round", "saqm_approx", "saqm_bound", "cem_exact", "safoa_approx", "safoa_bound", "gap_exact")
_BLOCK = 1 << 15


class SimulationResult(NamedTuple):
    """One simulated run: ``stop_round`` (pulls made when the rule held; -1 if the budget came
    first), ``stopped``, ``recommended`` (k arm indices, best first), ``correct`` (the recommended set
    is :math:`\\epsilon`-optimal for the true :math:`\\theta`), ``rounds`` (pulls made), ``statistic``
    (the stopping statistic at the final round), ``records`` (dict of arrays, or None).
    """

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
def _run_block(code, k, eps, rows, weights, row_means, scale, pools, hashes, A, A_inv, b, th, counts, u, ints,
               floats, log_classes, sigma_sum, delta, width_scale, rule, refresh_every, max_pulls, block, combos,
               basis):
    # ints: [t, since_refresh, ready, stopped, rank]; floats: [last statistic]
    rng_state = np.empty(4, dtype=np.uint64)
    for _ in range(block):
        t = ints[0]
        if t >= max_pulls:
            return
        r = track(counts, weights, t)
        idx = rows[r]
        # the environment's pull: the row's mean plus the scaled first normal of pull counts[r] of row r
        reward = row_means[r] + scale * pull_normal_into(rng_state, pools, hashes, r, counts[r])
        accumulate(A, b, idx, reward)
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
        C = width_scale * width_constant(float(t + 1), log_classes, sigma_sum, delta, rule)
        stat = _statistic(code, A_inv, th, k, C, eps, combos)
        floats[0] = stat
        if stat <= eps:
            ints[3] = 1
            return


def simulate_full_bandit(environment, algorithm: str = "sa_foa", *, k: int, delta: float = 0.05,
                         epsilon: float = 0.0, sigma: float | None = None, noise: str | None = None,
                         allocation="uniform", budget: Budget = Pulls(1_000_000), random_seed=None,
                         algorithm_kwargs: dict | None = None, record_every: int | None = None) -> SimulationResult:
    r"""Run one algorithm on a Gaussian full-bandit instance until it stops or the budget is spent.

    The arguments mean what they mean for
    :func:`~pmcbandit.full_bandit.identify.identify_full_bandit`, which this replays pull for pull.
    The decision class is all k-sets (ICB with another oracle runs through the door).

    Parameters
    ----------
    environment : FullBanditEnvironment or array_like (n,)
        The environment, or its single-arm means :math:`\theta`: then the noise is Gaussian of
        standard deviation ``sigma`` per arm (``noise="independent"`` or ``"dependent"``, which draws
        as independent and widens the bound) or on the sum (``noise="sum"``).
    algorithm : {"saqm", "sa_foa", "icb", "exhaustive"}
    k, delta, epsilon, sigma, noise, allocation, algorithm_kwargs
        As for :func:`~pmcbandit.full_bandit.identify.identify_full_bandit` (``sigma``, the paper's
        :math:`R`, defaults to the environment's ``noise_sd``).
    budget : Pulls
        Cap on pulls.
    random_seed : int, Generator or None
        The run's seed, converted as the live door converts it.
    record_every : int, optional
        Record the approximation quantities (module docstring) every so many rounds.

    Returns
    -------
    SimulationResult
    """
    door = "simulate_full_bandit"
    if not isinstance(environment, FullBanditEnvironment):
        theta = np.asarray(environment, dtype=np.float64) if not callable(environment) else None
        if theta is None or theta.ndim != 1 or theta.shape[0] < 3 or not np.all(np.isfinite(theta)):
            raise ValueError(param_message("environment", door, "a FullBanditEnvironment or a finite 1-d array of >= 3 "
                                           "means", environment))
        if sigma is None:
            raise ValueError(param_message("sigma", door,
                                           "given (the noise's standard deviation) with an array of means",
                                  sigma))
        check_positive(sigma, "sigma", door)
        environment = FullBanditEnvironment(theta, noise_sd=sigma, noise="sum" if noise == "sum" else "independent")
    if algorithm not in ALGORITHMS:
        kind = ValueError if isinstance(algorithm, str) else TypeError
        raise kind(param_message("algorithm", door, f"one of {ALGORITHMS}", algorithm))
    if algorithm_kwargs and "oracle" in algorithm_kwargs:
        raise ValueError(param_message("algorithm_kwargs", door,
                                       "free of 'oracle' (the simulator's class is all k-sets)",
                              sorted(algorithm_kwargs)))
    max_pulls = check_pull_budget(budget, door)
    if record_every is not None:
        check_positive(record_every, "record_every", door, integer=True)
    algo = resolve_algorithm(algorithm, environment.n, k, delta, epsilon,
                             environment.noise_sd if sigma is None else sigma,
                             environment.noise if noise is None else noise, allocation, algorithm_kwargs, door)
    p = algo.params
    arm_seq = arm_seed_sequence(get_random_generator(random_seed, door))
    theta = environment.theta
    n, k = algo.n, algo.k
    rows = np.ascontiguousarray([np.flatnonzero(r) for r in algo.allocation.support], dtype=np.int64)
    weights = np.ascontiguousarray(algo.allocation.weights)
    row_means = np.array([environment.mean(members) for members in rows])
    pools, hashes = row_pools(arm_seq, rows.shape[0])
    if not pull_normal_matches_numpy(arm_seq, pools, hashes):
        raise RuntimeError("the simulator's per-pull normals differ from NumPy's on this platform; run "
                           "identify_full_bandit instead")
    code = ALGORITHM_CODES[algorithm]
    rule = WIDTH_RULES[p.width]
    cap = MAX_SUPER_ARMS if p.max_super_arms is None else p.max_super_arms
    enumerable = math.comb(n, k) <= cap
    if code == 3 or (record_every is not None and enumerable):
        combos = all_super_arms(n, k, cap, door)
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
    while ints[3] == 0 and ints[0] < max_pulls:
        _run_block(code, k, p.epsilon, rows, weights, row_means, environment.scale(k), pools, hashes, A, A_inv, b,
                   th, counts, u, ints, floats, p.log_classes, p.sigma_sum, p.delta, p.width_scale, rule,
                   p.refresh_every, max_pulls, block, combos, basis)
        if records is not None and ints[2] == 1 and ints[3] == 0:
            _record(records, int(ints[0]), A_inv, th, k, p.width_scale * width_constant(
                float(ints[0]), log_num_super_arms(n, k), p.sigma_sum, p.delta, rule), combos, enumerable)
    recommended = np.argsort(-th, kind="stable")[:k] if ints[2] == 1 else np.argsort(
        -np.linalg.lstsq(A, b, rcond=None)[0], kind="stable")[:k]
    best = np.sort(theta)[::-1][:k].sum()
    correct = bool(best - theta[recommended].sum() <= p.epsilon + 1e-12 * max(1.0, abs(best)))
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
