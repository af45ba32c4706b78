"""Frozen copy of the stopping-time simulator's EXPLORE-m path (ADAPT, OCBA-m, ...) before the prefix-sum,
candidate-list and allotment caches of :mod:`pmcbandit.identification.explore_kernels`; timed beside the
package's by ``benchmarks.bench_explore_m``, on the same streams, so both must give the same runs.
Not part of the package.
"""

from __future__ import annotations

import numba
import numpy as np

from benchmarks._reference_simulate import explore_kernels as ek
from pmcbandit.identification.base import MachineSpec
from pmcbandit.arms.evidence._kernels import uniform
from pmcbandit.identification.simulate import FAMILIES, StoppingTimes, _check_means, _correct, _reward, _spec, _streams

__all__ = ["simulate_stopping"]


@numba.njit(cache=True)
def _nss(spec, ints, reals, means, ranked, low, high):
    """NSS of the machine's current answer: (sum of chosen means - ``low``) / (``high`` - ``low``)."""
    k = ek.recommend_into(spec, ints, reals, ranked)
    total = 0.0
    for j in range(k):
        total += means[ranked[j]]
    return (total - low) / (high - low) if high > low else 1.0


@numba.njit(cache=True)
def _machine_run(spec, schedule, means, family, scale, states, u_state, table, uniforms, max_samples, ints, reals,
                 scal, order, grid, trace_dhat, trace_nss, low, high, honour_stop):
    """One replication of an EXPLORE-m machine (module docstring): returns ``(samples, stop_samples)``,
    ``stop_samples = -1`` when the stopping rule never held. The trace arrays are filled at ``grid``.
    """
    n_arms = means.shape[0]
    out = np.empty(n_arms, dtype=np.int64)
    work = np.empty(n_arms)
    scratch = np.empty(n_arms, dtype=np.int64)
    ranked = np.empty(n_arms, dtype=np.int64)
    used = 0
    g = 0
    t = 0
    stop_t = -1
    while True:
        if stop_t < 0 and ek.stopped(spec, ints, reals, scal, scratch):
            stop_t = t
            if honour_stop:
                break
        if t >= max_samples:
            break
        u = 0.0
        if ek.wants_uniform(spec, scal):
            u = uniforms[used] if uniforms.shape[0] > 0 else uniform(u_state)
            used += 1
        count = ek.select(spec, schedule, ints, reals, scal, u, out, work)
        if count == 0:
            break
        for j in range(count):
            arm = out[j]
            if table.shape[1] > 0:
                x = table[arm, ints[ek.I_N, arm]]
            else:
                x = _reward(family, means[arm], scale, states[arm])
            ek.observe(spec, schedule, ints, reals, scal, arm, x)
            if t < order.shape[0]:
                order[t] = arm
            t += 1
            while g < grid.shape[0] and grid[g] <= t:
                trace_dhat[g] = ek.delta_hat(spec, scal)
                trace_nss[g] = _nss(spec, ints, reals, means, ranked, low, high)
                g += 1
    if g < grid.shape[0]:
        last_dhat = ek.delta_hat(spec, scal)
        last_nss = _nss(spec, ints, reals, means, ranked, low, high)
        for j in range(g, grid.shape[0]):
            trace_dhat[j] = last_dhat
            trace_nss[j] = last_nss
    return t, stop_t


@numba.njit(cache=True)
def _simulate_machine(spec, schedule, means, family, scale, seeds, u_seeds, max_samples, grid, honour_stop, low, high,
                      samples, stop_samples, chosen, counts, guaranteed, trace_dhat, trace_nss):
    n_arms = means.shape[0]
    no_table = np.zeros((n_arms, 0))
    no_uniforms = np.zeros(0)
    no_order = np.zeros(0, dtype=np.int64)
    ranked = np.empty(n_arms, dtype=np.int64)
    ints = np.zeros((ek.N_INT_ROWS, n_arms), dtype=np.int64)
    reals = np.zeros((ek.N_REAL_ROWS, n_arms))
    scal = np.zeros(ek.N_SCALARS)
    for r in range(samples.shape[0]):
        ek.reset(spec, schedule, ints, reals, scal)
        t, stop_t = _machine_run(spec, schedule, means, family, scale, seeds[r], u_seeds[r], no_table, no_uniforms,
                                 max_samples, ints, reals, scal, no_order, grid, trace_dhat[r], trace_nss[r], low,
                                 high, honour_stop)
        samples[r] = t
        stop_samples[r] = stop_t
        counts[r] = ints[ek.I_N]
        guaranteed[r] = scal[ek.SC_WITHIN] > 0
        k = ek.recommend_into(spec, ints, reals, ranked)
        for j in range(k):
            chosen[r, j] = ranked[j]


def simulate_stopping(algorithm, means, reps=1000, *, family="gaussian", scale=0.5, random_seed=None,
                      max_samples=10**7) -> StoppingTimes:
    """:func:`pmcbandit.identification.simulate.simulate_stopping` for EXPLORE-m algorithms, old kernels."""
    owner = "simulate_stopping"
    means = _check_means(means, family, owner)
    spec = _spec(algorithm, means.size)
    assert isinstance(spec, MachineSpec)
    k = algorithm.k
    seeds, u_seeds = _streams(random_seed, reps, means.size, owner)
    samples = np.zeros(reps, dtype=np.int64)
    stop_samples = np.zeros(reps, dtype=np.int64)
    chosen = np.zeros((reps, k), dtype=np.int64)
    counts = np.zeros((reps, means.size), dtype=np.int64)
    guaranteed = np.ones(reps, dtype=np.bool_)
    none = np.zeros((reps, 0))
    _simulate_machine(spec.spec, spec.schedule, means, FAMILIES.index(family), float(scale), seeds, u_seeds,
                      int(max_samples), np.zeros(0, dtype=np.int64), True, 0.0, 1.0, samples, stop_samples, chosen,
                      counts, guaranteed, none, none)
    return StoppingTimes(samples, stop_samples >= 0, _correct(means, chosen, k, algorithm.tolerance), chosen, counts,
                         guaranteed)
