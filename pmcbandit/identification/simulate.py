r"""Stopping-time simulator: thousands of seeded identification runs on synthetic arms, in numba.

Each replication runs one algorithm to its stop on arms with known means and returns how many
samples it took, what it chose and how it spread its samples. The rule is the algorithm's own: the
simulator reads its :class:`~pmcbandit.identification.base.KernelSpec` and calls the same numba
kernels (:mod:`pmcbandit.identification.kernels`) as the live loop's ``select`` and ``stop``, in the
same order — at every round the stopping test, then the sampling rule — so a replication fed the
live run's rewards and uniforms reproduces it pull for pull (``tests/identification``).

Rewards. Every arm has its own stream, seeded from the replication's
:class:`numpy.random.Generator`: ``"gaussian"`` :math:`N(\mu_i, s^2)` by the ziggurat on a
counter-based SplitMix64 stream (:func:`pmcbandit.policies.variates.std_normal`, the arm's first
seed word as its counter); ``"bernoulli"`` :math:`\text{Bernoulli}(\mu_i)`, ``"uniform"`` on
:math:`\mu_i \pm \sqrt3 s` (standard deviation :math:`s`) from a xoshiro256** stream
(:mod:`pmcbandit.arms.evidence._kernels`). Randomised rules draw their uniforms from
a separate per-replication stream. A replication that has not stopped after ``max_samples`` is
reported with ``stopped=False``.

The EXPLORE-m algorithms (:class:`~pmcbandit.identification.base.MachineSpec`) run their numba
state machine (:mod:`pmcbandit.identification.explore_kernels`) the same way: each decision's
arms are pulled in order, the stopping rule is checked after every decision, and randomised rules
take one uniform per decision when :func:`~pmcbandit.identification.explore_kernels.wants_uniform`
says so. :func:`simulate_trace` records their progress — :math:`\delta^{\hat c}` and the
normalised sum of the selected arms' means (NSS, Kalyanakrishnan & Stone 2010, Sec. 5) — at given
pull counts, optionally running past the stopping rule.

Threads. Replications are independent, each on its own streams: with ``parallel=True`` they run on
numba threads (``numba.prange`` over parts of the replications, each part with its own state and
radius tables), with the same values whatever ``numba.set_num_threads`` says.
"""

from __future__ import annotations

import math
import threading
from typing import NamedTuple

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic

from pmcbandit._rng import get_random_generator
from pmcbandit.arms.evidence._kernels import uniform
from pmcbandit.identification import explore_kernels as ek
from pmcbandit.identification._seeds import replication_words
from pmcbandit.identification.base import Identifier, MachineSpec
from pmcbandit.policies.variates import std_normal as counter_normal
from pmcbandit.identification.kernels import (
    CLUCB, LIL, LIL_UCB, LUCB_RANDOM, clucb_step_kept, grown, lil_ucb_index, lil_ucb_stop, lucb_coef, lucb_pair_kept,
    top_k_into,
)

__all__ = ["StoppingTimes", "Trace", "simulate_stopping", "simulate_trace", "FAMILIES", "replay"]

FAMILIES = ("gaussian", "bernoulli", "uniform")
_SQRT3 = math.sqrt(3.0)  # np.sqrt(3.0) inside a kernel is a library call per reward


class StoppingTimes(NamedTuple):
    """Per replication: ``samples`` to the stop, ``stopped``, ``correct`` (every chosen arm's mean is at
    least the ``k``-th largest minus the algorithm's ``tolerance``: for tolerance 0 and distinct means,
    the chosen set is the true top ``k``), ``chosen`` (shape (reps, k), best first), per-arm
    ``counts`` (shape (reps, N)) and ``guaranteed`` (the stop met the conditions of the algorithm's
    guarantee: RACING's only within its rounds; always true for the others).
    """

    samples: np.ndarray
    stopped: np.ndarray
    correct: np.ndarray
    chosen: np.ndarray
    counts: np.ndarray
    guaranteed: np.ndarray


class Trace(NamedTuple):
    r"""Per replication (rows) and pull count ``grid`` (columns): ``delta_hat`` (:math:`\delta^{\hat c}`,
    NaN for algorithms without it) and ``nss`` (normalised sum of the selected arms' means, 1 for the
    true top ``k``, 0 for the bottom ``k``); ``stop_samples``, the pulls when the stopping rule first
    held (-1: never); ``counts`` per arm at the end (shape (reps, N)). After a replication ends (its
    schedule is done, or it has nothing to pull) its last values are carried to the end of the grid.
    """

    grid: np.ndarray
    delta_hat: np.ndarray
    nss: np.ndarray
    stop_samples: np.ndarray
    counts: np.ndarray


@numba.njit(cache=True)
def _reward(family, mean, scale, state):
    if family == 0:
        # The state's first word serves as the counter of a counter-based stream (ziggurat normals).
        z, state[0] = counter_normal(state[0])
        return mean + scale * z
    if family == 1:
        return 1.0 if uniform(state) < mean else 0.0
    return mean + scale * _SQRT3 * (2.0 * uniform(state) - 1.0)


@numba.njit(cache=True)
def _pull(arm, n, total, table, family, means, scale, states):
    if table.shape[1] > 0:
        x = table[arm, n[arm]]
    else:
        x = _reward(family, means[arm], scale, states[arm])
    n[arm] += 1
    total[arm] += x


@numba.njit(cache=True)
def _tables(spec):
    """The radius tables of a KernelSpec (by reward count, for the high and the low confidence)."""
    kind, oh, ol, sigma, eps = int(spec[1]), spec[3], spec[4], spec[5], spec[6]
    return grown(np.empty(0), 63, kind, oh, sigma, eps), grown(np.empty(0), 63, kind, ol, sigma, eps)


@numba.njit(cache=True)
def _one_run(spec, means, family, scale, states, u_state, table, uniforms, max_samples, n, total, order,
             radius_high, radius_low):
    """One replication (module docstring); the pull order goes to ``order`` when it has room.
    Uniforms come from ``uniforms`` when given (replay), else from ``u_state``. The radius tables
    (:func:`_tables`) are shared by the replications: returns ``(samples, stopped, radius_high,
    radius_low)`` with the tables as grown by this run.
    """
    n_arms = means.shape[0]
    rule, kind, k = int(spec[0]), int(spec[1]), int(spec[2])
    oh, ol, sigma, eps, ldelta, beta, lam = spec[3], spec[4], spec[5], spec[6], spec[7], spec[8], spec[9]
    work_means = np.empty(n_arms)
    work_high = np.zeros(n_arms, dtype=np.bool_)
    work_tilde = np.zeros(n_arms, dtype=np.bool_)
    work_lower = np.empty(n_arms)
    work_scratch = np.empty(n_arms)
    used = 0
    t = 0
    for i in range(n_arms):
        _pull(i, n, total, table, family, means, scale, states)
        if t < order.shape[0]:
            order[t] = i
        t += 1
    # Means, top-k masks and revised means are kept between rounds and updated for the pulled
    # arms only (the kernels' ``*_kept`` variants, equal to the from-scratch ones).
    for i in range(n_arms):
        work_means[i] = total[i] / n[i]
    top_k_into(work_means, k, work_high, work_scratch)
    if rule == CLUCB:
        for i in range(n_arms):
            r = radius_high[n[i]]
            work_lower[i] = work_means[i] - r if work_high[i] else work_means[i] + r
        top_k_into(work_lower, k, work_tilde, work_scratch)
    work_before = np.zeros(n_arms, dtype=np.bool_)
    changed = -1
    while t < max_samples:
        coef = 1.0 if kind == LIL else lucb_coef(t, ldelta, n_arms, sigma)
        if rule == CLUCB:
            arm, stop = clucb_step_kept(n, radius_high, work_means, work_high, work_tilde, work_lower, work_before,
                                        changed)
            if stop:
                return t, True, radius_high, radius_low
            arms = (arm, -1)
        elif rule == LIL_UCB:
            if lil_ucb_stop(n, lam) >= 0:
                return t, True, radius_high, radius_low
            index = lil_ucb_index(n, total, beta, radius_high)
            best = index.max()
            ties = 0
            for i in range(n_arms):
                if index[i] == best:
                    ties += 1
            pick = 0
            if ties > 1:
                u = uniforms[used] if uniforms.shape[0] > 0 else uniform(u_state)
                used += 1
                pick = int(u * ties)
            arm = -1
            for i in range(n_arms):
                if index[i] == best:
                    if pick == 0:
                        arm = i
                        break
                    pick -= 1
            arms = (arm, -1)
        else:
            h, l, stop = lucb_pair_kept(n, k, radius_high, radius_low, coef, work_means, work_high)
            if stop:
                return t, True, radius_high, radius_low
            if rule == LUCB_RANDOM:
                u = uniforms[used] if uniforms.shape[0] > 0 else uniform(u_state)
                used += 1
                arms = (h if u < n[l] / (n[h] + n[l]) else l, -1)
            else:
                arms = (h, l)
        for arm in arms:
            if arm >= 0:
                _pull(arm, n, total, table, family, means, scale, states)
                work_means[arm] = total[arm] / n[arm]
                changed = arm
                if n[arm] >= radius_high.shape[0]:
                    radius_high = grown(radius_high, n[arm], kind, oh, sigma, eps)
                    radius_low = grown(radius_low, n[arm], kind, ol, sigma, eps)
                if t < order.shape[0]:
                    order[t] = arm
                t += 1
    return t, False, radius_high, radius_low


@numba.njit(cache=True)
def _simulate(spec, means, family, scale, seeds, u_seeds, max_samples, samples, stopped, chosen, counts):
    n_arms = means.shape[0]
    k = int(spec[2])
    empty_table = np.zeros((n_arms, 0))
    no_uniforms = np.zeros(0)
    no_order = np.zeros(0, dtype=np.int64)
    radius_high, radius_low = _tables(spec)
    for r in range(samples.shape[0]):
        n = np.zeros(n_arms, dtype=np.int64)
        total = np.zeros(n_arms)
        t, ok, radius_high, radius_low = _one_run(spec, means, family, scale, seeds[r], u_seeds[r], empty_table,
                                                  no_uniforms, max_samples, n, total, no_order, radius_high,
                                                  radius_low)
        samples[r] = t
        stopped[r] = ok
        counts[r] = n
        means_hat = total / n
        if int(spec[0]) == LIL_UCB:
            chosen[r, 0] = np.argmax(n)
        else:
            top = np.argsort(-means_hat, kind="mergesort")
            for j in range(k):
                chosen[r, j] = top[j]


@numba.njit(cache=True)
def _nss(spec, ints, reals, means, ranked, low, high):
    """NSS of the machine's current answer: (sum of chosen means - ``low``) / (``high`` - ``low``)."""
    k = ek.recommend_into(spec, ints, reals, ranked)
    total = 0.0
    for j in range(k):
        total += means[ranked[j]]
    return (total - low) / (high - low) if high > low else 1.0


@intrinsic
def _borrowed(typingctx, array):
    """The same array (data, shape, strides) without its reference count: passing it to inlined functions, taking
    views of it and dropping them do no atomic increments and decrements. The caller must keep the array itself
    alive for as long as the view is used, and must not return the view or store it in an object that outlives it.
    """
    if not isinstance(array, types.Array):
        return None

    def codegen(context, builder, signature, args):
        view = context.make_array(signature.args[0])(context, builder, value=args[0])
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    return array(array), codegen


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
    return _machine_loop(spec, schedule, means, family, scale, states, u_state, table, uniforms, max_samples, ints,
                         reals, scal, order, grid, trace_dhat, trace_nss, low, high, honour_stop, out, work, scratch,
                         ranked)


@numba.njit(cache=True)
def _machine_loop(spec, schedule, means, family, scale, states, u_state, table, uniforms, max_samples, ints, reals,
                  scal, order, grid, trace_dhat, trace_nss, low, high, honour_stop, out, work, scratch, ranked):
    """:func:`_machine_run`'s loop, with its scratch arrays (``out``, ``work``, ``scratch``, ``ranked``) given. Every
    array is held by the caller for the whole call, so the loop works on :func:`_borrowed` views: the state passed
    to the inlined kernels on every pull, and the per-arm reward streams taken as rows, count no references.
    """
    spec, schedule, means, states, u_state = _borrowed(spec), _borrowed(schedule), _borrowed(means), \
        _borrowed(states), _borrowed(u_state)
    table, uniforms, ints, reals, scal = _borrowed(table), _borrowed(uniforms), _borrowed(ints), _borrowed(reals), \
        _borrowed(scal)
    order, grid, trace_dhat, trace_nss = _borrowed(order), _borrowed(grid), _borrowed(trace_dhat), \
        _borrowed(trace_nss)
    out, work, scratch, ranked = _borrowed(out), _borrowed(work), _borrowed(scratch), _borrowed(ranked)
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


# Parts of the replications per thread of the parallel kernels, scheduled one part per division
# (``numba.parallel_chunksize(1)``): a threading layer that balances its divisions (tbb) can then even out
# runs to a stop of different lengths; omp and workqueue give each thread a contiguous range of parts.
_PARTS_PER_THREAD = 8
# numba's default ``workqueue`` threading layer is not thread-safe: parallel kernels launched from several
# Python threads take turns.
_PARALLEL_LOCK = threading.Lock()


@numba.njit(cache=True, parallel=True)
def _simulate_parallel(parts, spec, means, family, scale, seeds, u_seeds, max_samples, samples, stopped, chosen,
                       counts):
    """:func:`_simulate` on numba threads: ``prange`` over parts of the replications, each part run by
    :func:`_simulate` with its own radius tables (the tables' entries do not depend on how far they were
    grown), each replication on its own streams: the same values whatever the thread count.
    """
    reps = samples.shape[0]
    for p in numba.prange(parts):
        lo = p * reps // parts
        hi = (p + 1) * reps // parts
        _simulate(spec, means, family, scale, seeds[lo:hi], u_seeds[lo:hi], max_samples, samples[lo:hi],
                  stopped[lo:hi], chosen[lo:hi], counts[lo:hi])


@numba.njit(cache=True, parallel=True)
def _simulate_machine_parallel(parts, spec, schedule, means, family, scale, seeds, u_seeds, max_samples, grid,
                               honour_stop, low, high, samples, stop_samples, chosen, counts, guaranteed, trace_dhat,
                               trace_nss):
    """:func:`_simulate_machine` on numba threads (as :func:`_simulate_parallel`; each part has its own state)."""
    reps = samples.shape[0]
    for p in numba.prange(parts):
        lo = p * reps // parts
        hi = (p + 1) * reps // parts
        _simulate_machine(spec, schedule, means, family, scale, seeds[lo:hi], u_seeds[lo:hi], max_samples, grid,
                          honour_stop, low, high, samples[lo:hi], stop_samples[lo:hi], chosen[lo:hi], counts[lo:hi],
                          guaranteed[lo:hi], trace_dhat[lo:hi], trace_nss[lo:hi])


def _check_parallel(parallel, door: str) -> bool:
    if not isinstance(parallel, bool):
        raise TypeError(f"The 'parallel' parameter of {door} must be a bool. Got {parallel!r} instead.")
    return parallel


def _run(serial, threaded, parallel: bool, reps: int, *args) -> None:
    """``serial(*args)``, or ``threaded(parts, *args)`` with one part per division of the parallel loop."""
    if not parallel:
        serial(*args)
        return
    with _PARALLEL_LOCK, numba.parallel_chunksize(1):
        threaded(min(reps, _PARTS_PER_THREAD * numba.get_num_threads()), *args)


def _machine_runs(spec: MachineSpec, k, means, family, scale, seeds, u_seeds, max_samples, grid, honour_stop,
                  parallel=False):
    """Replications of an EXPLORE-m machine: ``(samples, stop_samples, chosen, counts, guaranteed, delta_hat,
    nss)``, the last two recorded at ``grid``.
    """
    reps = seeds.shape[0]
    samples = np.zeros(reps, dtype=np.int64)
    stop_samples = np.zeros(reps, dtype=np.int64)
    chosen = np.zeros((reps, k), dtype=np.int64)
    counts = np.zeros((reps, means.size), dtype=np.int64)
    guaranteed = np.ones(reps, dtype=np.bool_)
    dhat = np.zeros((reps, grid.size))
    nss = np.zeros((reps, grid.size))
    low, high = _nss_bounds(means, k)
    _run(_simulate_machine, _simulate_machine_parallel, parallel, reps, spec.spec, spec.schedule, means,
         FAMILIES.index(family), float(scale), seeds, u_seeds, max_samples, grid, honour_stop, low, high, samples,
         stop_samples, chosen, counts, guaranteed, dhat, nss)
    return samples, stop_samples, chosen, counts, guaranteed, dhat, nss


def _spec(algorithm: Identifier, n_arms: int, door: str = "simulate_stopping"):
    """The algorithm's rule as numbers: a float array (the LUCB family's KernelSpec) or a MachineSpec."""
    if not isinstance(algorithm, Identifier):
        raise TypeError(f"The 'algorithm' parameter of {door} must be an Identifier. Got {algorithm!r} instead.")
    if algorithm.kernel is None:
        raise ValueError(
            f"The 'algorithm' parameter of {door} must declare a kernel rule. Got {algorithm.name!r}, "
            "which has none (e.g. lil'CLUCB over a custom oracle), instead."
        )
    algorithm.init(n_arms)  # checks k < N
    spec = algorithm.kernel(n_arms)
    if isinstance(spec, MachineSpec):
        return spec
    return np.array(spec, dtype=np.float64)


def _check_means(means, family, door):
    from pmcbandit._validation import check_choice

    means = np.ascontiguousarray(means, dtype=np.float64)
    if means.ndim != 1 or means.size < 2 or not np.isfinite(means).all():
        raise ValueError(f"The 'means' parameter of {door} must be a 1-D array of >= 2 finite means. "
                         f"Got {means!r} instead.")
    check_choice(family, FAMILIES, "family", door)
    if family == "bernoulli" and not ((means >= 0) & (means <= 1)).all():
        raise ValueError(
            f"The 'means' parameter of {door} must lie in [0, 1] for Bernoulli arms. Got {means!r} instead."
        )
    return means


def _streams(random_seed, reps, n_arms, door):
    """Per replication: the arms' stream states (shape (reps, N, 4)) and the uniform stream's (reps, 4),
    the words ``chain_seeds`` would draw from each of ``rng.spawn(reps)`` (:mod:`._seeds`).
    """
    rng = get_random_generator(random_seed, door)
    words = replication_words(rng, reps, n_arms, private=not isinstance(random_seed, np.random.Generator))
    return np.ascontiguousarray(words[:, :n_arms]), np.ascontiguousarray(words[:, n_arms])


def _correct(means, chosen, k, tolerance):
    """Whether every chosen arm's mean is at least the k-th largest minus ``tolerance``."""
    kth = np.sort(means)[::-1][k - 1]
    return (means[chosen] >= kth - tolerance).all(axis=1)


def _nss_bounds(means, k):
    ordered = np.sort(means)
    return float(ordered[:k].sum()), float(ordered[-k:].sum())


def simulate_stopping(
    algorithm: Identifier,
    means,
    reps: int = 1000,
    *,
    family: str = "gaussian",
    scale: float = 0.5,
    random_seed=None,
    max_samples: int = 10**7,
    parallel: bool = False,
) -> StoppingTimes:
    """Run ``reps`` seeded replications of ``algorithm`` on arms with the given ``means``.

    Parameters
    ----------
    algorithm : Identifier
        With a kernel rule (every built-in algorithm; lil'CLUCB only with its top-K oracle).
    means : array_like
        The arms' means (Bernoulli: probabilities in [0, 1]).
    reps : int
    family : {"gaussian", "bernoulli", "uniform"}
    scale : float
        Standard deviation of the Gaussian and uniform rewards (unused for Bernoulli).
    random_seed : int, Generator or None
        Converted once; every replication gets its own spawned arm and uniform streams.
    max_samples : int
        A replication not stopped by then is cut off (``stopped=False``).
    parallel : bool
        Run the replications on numba threads (``numba.prange`` over parts of the replications; the
        thread count is ``numba.get_num_threads()``, set with ``numba.set_num_threads``). Every
        replication keeps its own streams, so the results are identical to the serial run's whatever
        the thread count. Serial by default: the parallel kernel compiles longer, and numba's default
        ``workqueue`` threading layer is not thread-safe: parallel calls of this module's simulators
        from several Python threads take turns, and other parallel numba work (``AISArm(parallel=True)``,
        ``pmcbandit.simulate.simulate(parallel=True)``) must not run beside them in another thread (or
        choose the ``omp`` or ``tbb`` layer).
    """
    from pmcbandit._validation import check_positive

    door = "simulate_stopping"
    means = _check_means(means, family, door)
    check_positive(scale, "scale", door)
    reps = int(check_positive(reps, "reps", door, integer=True))
    max_samples = int(check_positive(max_samples, "max_samples", door, integer=True))
    parallel = _check_parallel(parallel, door)
    spec = _spec(algorithm, means.size)
    k = algorithm.k
    seeds, u_seeds = _streams(random_seed, reps, means.size, door)
    if isinstance(spec, MachineSpec):
        samples, stop_samples, chosen, counts, guaranteed, _, _ = _machine_runs(
            spec, k, means, family, scale, seeds, u_seeds, max_samples, np.zeros(0, dtype=np.int64), True, parallel
        )
        return StoppingTimes(
            samples, stop_samples >= 0, _correct(means, chosen, k, algorithm.tolerance), chosen, counts, guaranteed
        )
    samples = np.zeros(reps, dtype=np.int64)
    stopped = np.zeros(reps, dtype=np.bool_)
    chosen = np.zeros((reps, k), dtype=np.int64)
    counts = np.zeros((reps, means.size), dtype=np.int64)
    guaranteed = np.ones(reps, dtype=np.bool_)  # the LUCB family's guarantee has no conditions beyond the stop
    _run(_simulate, _simulate_parallel, parallel, reps, spec, means, FAMILIES.index(family), float(scale), seeds,
         u_seeds, max_samples, samples, stopped, chosen, counts)
    if spec[0] == LIL_UCB:
        correct = means[chosen[:, 0]] >= means.max()
    else:
        correct = _correct(means, chosen, k, algorithm.tolerance)
    return StoppingTimes(samples, stopped, correct, chosen, counts, guaranteed)


def simulate_trace(
    algorithm: Identifier,
    means,
    grid,
    reps: int = 1000,
    *,
    family: str = "uniform",
    scale: float = 1.0,
    random_seed=None,
    past_stop: bool = True,
    parallel: bool = False,
) -> Trace:
    r"""Record an EXPLORE-m algorithm's :math:`\delta^{\hat c}` and NSS at the pull counts ``grid``.

    Parameters
    ----------
    algorithm : Identifier
        An EXPLORE-m algorithm (:class:`~pmcbandit.identification.base.MachineSpec` kernel).
    means : array_like
    grid : array_like of int
        Increasing pull counts; the replication runs to the last.
    reps : int
    family, scale, random_seed
        As in :func:`simulate_stopping` (the default is K&S's arms: uniform, standard deviation 1).
    past_stop : bool
        Keep pulling after the stopping rule holds (K&S's curves run to 30,000 pulls); the pulls
        at which it first held are in ``stop_samples`` either way.
    parallel : bool
        As in :func:`simulate_stopping`: numba threads over the replications, the same values.
    """
    from pmcbandit._validation import check_positive

    door = "simulate_trace"
    means = _check_means(means, family, door)
    check_positive(scale, "scale", door)
    reps = int(check_positive(reps, "reps", door, integer=True))
    grid = np.asarray(grid, dtype=np.int64)
    if grid.ndim != 1 or grid.size == 0 or grid[0] < 1 or (np.diff(grid) <= 0).any():
        raise ValueError(f"The 'grid' parameter of {door} must be increasing pull counts >= 1. Got {grid!r} instead.")
    if not isinstance(past_stop, bool):
        raise TypeError(f"The 'past_stop' parameter of {door} must be a bool. Got {past_stop!r} instead.")
    parallel = _check_parallel(parallel, door)
    spec = _spec(algorithm, means.size, door)
    if not isinstance(spec, MachineSpec):
        raise ValueError(
            f"The 'algorithm' parameter of {door} must be an EXPLORE-m algorithm (direct, incremental, "
            f"halving, adapt, ocba_m, racing). Got {algorithm.name!r} instead."
        )
    seeds, u_seeds = _streams(random_seed, reps, means.size, door)
    _, stop_samples, _, counts, _, dhat, nss = _machine_runs(
        spec, algorithm.k, means, family, scale, seeds, u_seeds, int(grid[-1]), grid, not past_stop, parallel
    )
    return Trace(grid, dhat, nss, stop_samples, counts)


def replay(algorithm: Identifier, rewards: np.ndarray, uniforms: np.ndarray, max_samples: int = 10**7):
    """One replication fed given rewards (``rewards[arm, j]`` is arm's j-th reward) and uniforms:
    returns ``(samples, stopped, pull_order)``, to compare with the live loop pull for pull.
    """
    rewards = np.ascontiguousarray(rewards, dtype=np.float64)
    n_arms = rewards.shape[0]
    spec = _spec(algorithm, n_arms)
    order = np.full(rewards.size, -1, dtype=np.int64)
    uniforms = np.ascontiguousarray(uniforms, dtype=np.float64)
    limit = min(max_samples, rewards.shape[1] * n_arms)
    dummy = np.zeros((n_arms, 4), dtype=np.uint64)
    if isinstance(spec, MachineSpec):
        ints, reals, scal = ek.new_state(spec.spec, spec.schedule, n_arms)
        none = np.zeros(0)
        t, stop_t = _machine_run(
            spec.spec,
            spec.schedule,
            np.zeros(n_arms),
            0,
            1.0,
            dummy,
            dummy[0],
            rewards,
            uniforms,
            limit,
            ints,
            reals,
            scal,
            order,
            np.zeros(0, dtype=np.int64),
            none,
            none,
            0.0,
            1.0,
            True,
        )
        return int(t), stop_t >= 0, order[: min(t, order.size)]
    n = np.zeros(n_arms, dtype=np.int64)
    total = np.zeros(n_arms)
    high, low = _tables(spec)
    t, ok, _, _ = _one_run(
        spec, np.zeros(n_arms), 0, 1.0, dummy, dummy[0], rewards, uniforms, limit, n, total, order, high, low
    )
    return int(t), bool(ok), order[: min(t, order.size)]
