r"""Replicated-run simulator: many independent seeded runs of a policy on synthetic arms.

:func:`simulate` runs ``n_replications`` independent bandit runs of
``n_rounds`` rounds each and returns per-replication pull counts (at the end
and at checkpoints) and the uniform-average estimate
:math:`\hat\mu_n = \frac1n\sum_t Y_t` (the estimator of Thm 1 of Neufeld et
al. 2014). It reproduces ``pmcbandit.run`` with a ``Pulls(n_rounds)`` budget and
the squared reward, decision for decision:

* rewards: with ``bounds=(a, b)`` the loss is ``(X - a)^2`` with the fixed scale
  ``(b - a)^2`` (App. B, footnote 1: the policy sees ``1 - (X-a)^2/(b-a)^2``);
  without bounds the centre is the replication's first observation, moved to the
  running mean after round 2, 4, 8, ... (``centre="running"``, :mod:`pmcbandit.policies.centring`),
  and each arm's scale the running maximum of its own losses (``ranges="per_arm"``,
  App. B) or of all the replication's losses (``"shared"``) (:mod:`pmcbandit.policies.rewards`);
* policies: the policy's own numba kernels decide (its ``index`` with
  :func:`~pmcbandit.policies.base.normalised_moments` and
  :func:`~pmcbandit.policies.base.argmax_random`, one uniform of the policy
  stream per decision, as ``index_policy.select`` does);
* streams: ``root = get_random_generator(random_seed)``, replication ``r`` gets
  ``rep = root.spawn(n_replications)[r]`` (:func:`replication_generators`);
  its first child ``rep.spawn(1)[0]`` is the policy stream, as in
  ``pmcbandit.run(..., random_seed=rep)``, so with the same observations
  (a :class:`~pmcbandit.simulate.RewardMatrix` replayed by
  :meth:`~pmcbandit.simulate.RewardMatrix.to_arms`) both make the same pulls.
  The synthetic families draw from one arm stream per replication, its second
  child, one draw per round used by whichever arm is pulled: the paper's
  :math:`X_{k,t} = \mu + s_k(Z_t - 1/2)` with a common :math:`Z_t` (Sec. 6.1).
  (One stream in round order keeps a block's draws in one contiguous row per
  round; per-arm streams would read ``K`` scattered rows.) The live loop gives
  each arm its own stream, so for the families the two agree in distribution,
  not draw for draw.

Replications are independent: each has its own streams and its results do not
depend on ``n_jobs``, ``block_size``, ``chunk_rounds``, ``parallel`` or the numba thread count
(``parallel=True`` runs parts of a block on numba threads, ``numba.prange``).
"""

from __future__ import annotations

import numbers
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np

from pmcbandit._rng import get_random_generator
from pmcbandit._validation import check_positive
from pmcbandit.policies.centring import empty_moments
from pmcbandit.policies import Policy, get_policy
from pmcbandit.policies import kl_ucb, thompson
from pmcbandit.policies.rewards import centre_rule, per_arm_ranges
from pmcbandit.simulate import kernel
from pmcbandit.simulate.arms import RewardMatrix, SyntheticArms

__all__ = ["simulate", "SimulationResult", "replication_generators", "log_checkpoints"]


class SimulationResult(NamedTuple):
    """Per-replication outcomes of :func:`simulate`.

    Attributes
    ----------
    policy : str
    n_rounds : int
    pulls : ndarray of int64, shape (R, K)
        ``T_k(n)`` of every replication.
    checkpoints : ndarray of int64, shape (C,)
        Rounds at which ``pulls_at`` and ``estimate_at`` were recorded.
    pulls_at : ndarray of int64, shape (R, C, K)
        ``T_k(t)`` at each checkpoint ``t``.
    estimate : ndarray, shape (R,)
        Uniform average of all ``n`` observations.
    estimate_at : ndarray, shape (R, C)
        The running average at each checkpoint.
    arm_sum, arm_sum_sq : ndarray, shape (R, K)
        Per-arm sums of observations and of their squares (for other combiners).
    means, variances : ndarray, shape (K,)
        The arms' true means and variances (empirical ones for a ``RewardMatrix``).
    """

    policy: str
    n_rounds: int
    pulls: np.ndarray
    checkpoints: np.ndarray
    pulls_at: np.ndarray
    estimate: np.ndarray
    estimate_at: np.ndarray
    arm_sum: np.ndarray
    arm_sum_sq: np.ndarray
    means: np.ndarray
    variances: np.ndarray

    def regret_from_pulls(self, variances=None):
        """MSE-regret by the regret identity, :math:`\\sum_k E[T_k(t)](V_k - V^*)` (Thm 1, eq. 8).

        Returns ``(regret, se)``, arrays of shape (C,) over the checkpoints; ``se`` is
        the standard error of the mean over replications.
        """
        v = self.variances if variances is None else np.asarray(variances, dtype=np.float64)
        per_rep = self.pulls_at @ (v - v.min())
        return per_rep.mean(axis=0), _se(per_rep)

    def mse_regret(self, mu=None, variances=None):
        """Measured MSE-regret :math:`n^2(\\widehat{E}[(\\hat\\mu_n-\\mu)^2] - V^*/n)` at the checkpoints.

        Returns ``(regret, se)``, arrays of shape (C,).
        """
        mu = float(self.means[0]) if mu is None else float(mu)
        v = self.variances if variances is None else np.asarray(variances, dtype=np.float64)
        t = self.checkpoints.astype(np.float64)
        per_rep = (t * (self.estimate_at - mu)) ** 2 - t * v.min()
        return per_rep.mean(axis=0), _se(per_rep)

    def suboptimal_pulls(self, variances=None):
        """``T(t)`` of the arms whose variance exceeds ``V*``, shape (R, C)."""
        v = self.variances if variances is None else np.asarray(variances, dtype=np.float64)
        return self.pulls_at[:, :, v > v.min()].sum(axis=2)


def _se(per_rep: np.ndarray) -> np.ndarray:
    r = per_rep.shape[0]
    return per_rep.std(axis=0, ddof=1) / np.sqrt(r) if r > 1 else np.full(per_rep.shape[1:], np.inf)


def replication_generators(random_seed, n_replications: int) -> list[np.random.Generator]:
    """The Generator of each replication (pass one as ``random_seed`` to ``pmcbandit.run``)."""
    return get_random_generator(random_seed, "simulate").spawn(n_replications)


def log_checkpoints(n_rounds: int, count: int = 50) -> np.ndarray:
    """About ``count`` log-spaced rounds from 1 to ``n_rounds`` (both included)."""
    grid = np.unique(np.round(np.geomspace(1, n_rounds, count)).astype(np.int64))
    return grid[(grid >= 1) & (grid <= n_rounds)]


_LOW_64 = (1 << 64) - 1  # the low word of a PCG64 128-bit state or increment

# numba's default ``workqueue`` threading layer is not thread-safe: parallel kernels launched from several
# Python threads take turns.
_PARALLEL_LOCK = threading.Lock()


def _dispatch(policy: Policy, n_arms: int):
    """Which branch of the loop runs ``policy``: (kind, index, params, fixed arm, uniforms per decision)."""
    rule = policy.simulator_rule
    if rule == "index" and policy.index is kl_ucb.index:
        return kernel.KL_UCB, kernel.no_index, tuple(float(p) for p in policy.params), 0, 1
    if rule == "index" and policy.index is not None:
        return kernel.INDEX, policy.index, tuple(float(p) for p in policy.params), 0, 1
    if rule == "thompson":
        return kernel.THOMPSON, kernel.no_index, (), 0, thompson.SELECT_UNIFORMS + 1
    if rule == "round_robin":
        return kernel.ROUND_ROBIN, kernel.no_index, (), 0, 0
    if rule == "fixed" and policy.pinned_arm is not None:
        return kernel.FIXED, kernel.no_index, (), int(policy.pinned_arm), 0
    raise TypeError(
        "The 'policy' parameter of simulate must be an index policy, 'thompson' (numba sampler), "
        "'uniform' or 'oracle'. "
        f"Got {policy.name!r} instead."
    )


def simulate(
    policy,
    arms: SyntheticArms,
    n_rounds: int,
    n_replications: int = 1,
    random_seed=None,
    *,
    bounds=None,
    ranges="auto",
    centre="auto",
    checkpoints=50,
    policy_params: dict | None = None,
    n_jobs: int = 1,
    block_size: int = 128,
    chunk_rounds: int = 4096,
    parallel: bool = False,
) -> SimulationResult:
    """Run ``n_replications`` independent runs of ``policy`` for ``n_rounds`` rounds each.

    Parameters
    ----------
    policy : str or Policy
        A name of :data:`pmcbandit.POLICY_NAMES` (with ``policy_params``) or a Policy:
        any index policy (UCB1, UCB-V, KL-UCB, ...), ``"thompson"`` (numba sampler),
        ``"uniform"`` or ``"oracle"``; others raise ``TypeError``.
    arms : SyntheticArms
        :class:`~pmcbandit.simulate.ScaledBernoulli`, :class:`~pmcbandit.simulate.Gaussian`
        or :class:`~pmcbandit.simulate.RewardMatrix`.
    n_rounds, n_replications : int
    random_seed : int, Generator or None
        Root of every replication's streams (see the module docstring).
    bounds : (float, float), optional
        Known range ``[a, b]`` of every observation: loss ``(X - a)^2``, fixed
        scale ``(b - a)^2`` — ``pmcbandit.run(..., bounds=(a, b))``.
    ranges : {"auto", "per_arm", "shared"}
        As ``pmcbandit.run``: ``"auto"`` is the policy's ``ranges`` without bounds (per arm,
        App. B, for Thompson sampling and KL-UCB), shared with them.
    centre : {"auto", "running", "first"} or float
        Centre ``c`` of the squared loss ``(X - c)^2``, as ``pmcbandit.run``: ``"auto"`` is
        ``a`` with bounds, else ``"running"`` (the first observation, then the running mean
        after round 2, 4, 8, ..., every past loss re-scored; :mod:`pmcbandit.policies.centring`);
        ``"first"`` keeps the first observation; a float is a known centre (for experiments:
        ``E[(X - c)^2] = V_k + (mu - c)^2``, so a centre far from the mean adds a common offset
        that the policy must see through).
    checkpoints : int or array_like of int
        Number of log-spaced checkpoints (see :func:`log_checkpoints`) or the rounds.
    n_jobs : int
        Python threads; blocks of ``block_size`` replications run in parallel (results
        are identical for any ``n_jobs``).
    block_size, chunk_rounds : int
        Replications advanced in lock-step, and rounds of randomness drawn at once.
    parallel : bool
        Run the replications on numba threads: ``numba.prange`` over parts of a block of
        ``block_size`` replications per thread (the thread count is ``numba.get_num_threads()``,
        set with ``numba.set_num_threads``), each part run by the serial loop on its own
        replications, and each chunk's randomness drawn from the replications' streams on as
        many Python threads. Every replication keeps its own streams, so the results are
        identical to the serial run's whatever the thread count. Serial by default: the parallel
        kernels compile longer, a block then holds ``block_size`` replications per thread (as much
        more memory for the pre-drawn randomness), and under numba's default ``workqueue``
        threading layer, which is not thread-safe, parallel kernels must not be launched from
        several Python threads at once: ``n_jobs`` must be 1 with it, parallel calls of
        ``simulate`` from several threads take turns, and other parallel numba work
        (``AISArm(parallel=True)``, ``simulate_stopping(parallel=True)``) must not run beside
        it in another thread (or choose the ``omp`` or ``tbb`` layer).

    Returns
    -------
    SimulationResult
    """
    door = "simulate"
    if not isinstance(arms, SyntheticArms):
        raise TypeError(f"The 'arms' parameter of simulate must be a SyntheticArms family. Got {arms!r} instead.")
    n_rounds = int(check_positive(n_rounds, "n_rounds", door, integer=True))
    n_rep = int(check_positive(n_replications, "n_replications", door, integer=True))
    n_jobs = int(check_positive(n_jobs, "n_jobs", door, integer=True))
    block_size = int(check_positive(block_size, "block_size", door, integer=True))
    chunk_rounds = int(check_positive(chunk_rounds, "chunk_rounds", door, integer=True))
    if not isinstance(parallel, bool):
        raise TypeError(f"The 'parallel' parameter of simulate must be a bool. Got {parallel!r} instead.")
    if parallel and n_jobs > 1:
        raise ValueError("The 'n_jobs' parameter of simulate must be 1 with parallel=True (numba threads run the "
                         f"replications; numba's workqueue layer is not thread-safe). Got {n_jobs} instead.")
    policy = get_policy(policy, **(policy_params or {}))
    k = arms.n_arms
    kind, index, params, fixed_arm, per_decision = _dispatch(policy, k)
    if isinstance(checkpoints, numbers.Integral) and not isinstance(checkpoints, bool):
        ck = log_checkpoints(n_rounds, int(checkpoints))
    else:
        ck = np.unique(np.asarray(checkpoints, dtype=np.int64))
        if ck.size == 0 or ck[0] < 1 or ck[-1] > n_rounds:
            raise ValueError(f"The 'checkpoints' parameter of simulate must be rounds in [1, {n_rounds}]. "
                             f"Got {checkpoints!r} instead.")
    if bounds is not None:
        lo, hi = (float(b) for b in bounds)
        vlo, vhi = arms.value_bounds()
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi and lo <= vlo and vhi <= hi):
            raise ValueError(f"The 'bounds' parameter of simulate must be finite (a, b), a < b, containing "
                             f"every observation (range [{vlo}, {vhi}]). Got {bounds!r} instead.")
        centre0, scale0, fixed = lo, (hi - lo) ** 2, True
    else:
        centre0, scale0, fixed = np.nan, 0.0, False
    rule = centre_rule(centre, bounds, policy.recentre is not None, door)
    if not isinstance(rule, str):
        centre0 = rule
    per_arm = per_arm_ranges(ranges, bounds, policy.ranges, door)

    reps = replication_generators(random_seed, n_rep)
    streams = [(rep.spawn(1)[0], rep.spawn(1)[0]) for rep in reps]
    chunk = min(chunk_rounds, n_rounds)
    if isinstance(arms, RewardMatrix):
        _check_matrix(arms, n_rep)
    setup = dict(kind=kind, index=index, params=params, kl_c=params[0] if kind == kernel.KL_UCB else 0.0,
                 fixed_arm=fixed_arm, per_decision=per_decision,
                 n_rounds=n_rounds, chunk=chunk, arms=arms, checkpoints=ck, centre0=centre0,
                 scale0=scale0, fixed=fixed, per_arm=per_arm, running=rule == "running", pool=None,
                 threads=numba.get_num_threads())
    # At least one block per thread; numba compiles once (the others wait on its lock).
    size = min(block_size, -(-n_rep // n_jobs))
    if parallel:
        size = block_size * setup["threads"]
    work = [(b, [streams[r] for r in b]) for b in (range(s, min(s + size, n_rep)) for s in range(0, n_rep, size))]
    if parallel:
        with _PARALLEL_LOCK, ThreadPoolExecutor(max_workers=setup["threads"]) as pool:
            setup["pool"] = pool
            outs = [_run_block(setup, *w) for w in work]
    elif n_jobs > 1 and len(work) > 1:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            outs = list(pool.map(lambda w: _run_block(setup, *w), work))
    else:
        outs = [_run_block(setup, *w) for w in work]
    stats = np.concatenate([o[0] for o in outs], axis=0)
    return SimulationResult(
        policy=policy.name,
        n_rounds=n_rounds,
        pulls=stats[:, 0].astype(np.int64),
        checkpoints=ck,
        pulls_at=np.concatenate([o[1] for o in outs]),
        estimate=stats[:, 3].sum(axis=1) / n_rounds,
        estimate_at=np.concatenate([o[2] for o in outs]),
        arm_sum=stats[:, 3],
        arm_sum_sq=stats[:, 4],
        means=np.asarray(arms.means, dtype=np.float64),
        variances=np.asarray(arms.variances, dtype=np.float64),
    )


def _run_block(setup: dict, block: range, streams: list, lockstep: bool = False):
    """All chunks of one block of replications; returns (stats (B,5,K), pulls_at, estimate_at).

    KL-UCB, Thompson sampling, round robin and a fixed arm run one replication at a time
    (:func:`~pmcbandit.simulate.kernel.run_replications`, each replication's randomness in its own
    contiguous row); the other index policies, or all with ``lockstep``, in lock-step
    (:func:`~pmcbandit.simulate.kernel.run_block`). Both loops make the same decisions. One replication at
    a time with numpy ``PCG64`` streams (the default), the loop draws the policy's uniforms and the uniform
    arm draws itself from copies of the streams' states, the doubles the Generators would give (the
    Generators are not advanced: nothing draws from them afterwards); otherwise they are pre-drawn here. With a thread
    pool in ``setup["pool"]`` (``parallel=True``) the randomness is drawn on its threads and the loops run
    on numba threads (``kernel.run_replications_parallel``, ``kernel.run_block_parallel``), one part of the
    block per thread.
    """
    arms = setup["arms"]
    k = arms.n_arms
    n_b = len(block)
    chunk, n_rounds, per_decision = setup["chunk"], setup["n_rounds"], setup["per_decision"]
    kind = setup["kind"]
    by_rep = kind != kernel.INDEX and not lockstep
    ck = setup["checkpoints"]
    stats = np.zeros((5, n_b * k))
    scale = np.full(n_b * k, setup["scale0"])
    centre = np.full(n_b, setup["centre0"])
    origin = np.full(n_b, np.nan)
    moments = np.tile(empty_moments(k), (1, n_b))
    pos = np.zeros((n_b, k), dtype=np.int64)
    is_matrix = isinstance(arms, RewardMatrix)
    if is_matrix:
        v = arms.values
        matrix = np.ascontiguousarray(np.broadcast_to(v, (n_b,) + v.shape) if v.ndim == 2
                                      else v[block.start:block.stop])
        draws = np.zeros((n_b, 1) if by_rep else (1, n_b))
    else:
        matrix = np.zeros((n_b, k, 1))
        # Lock-step: round-major, so that one round of the whole block reads one contiguous row;
        # one replication at a time: replication-major, each replication's rounds in one row.
        draws = np.empty((n_b, chunk) if by_rep else (chunk, n_b))
    # One replication at a time, from numpy PCG64 streams: the kernel draws the uniforms itself, from the
    # streams' states (``kernel._pcg64_random``); the Gaussian families' normals are still pre-drawn.
    inline = by_rep and all(type(g.bit_generator) is np.random.PCG64 for pair in streams for g in pair)
    arm_inline = inline and not is_matrix and arms.draw == "uniform"
    rng_state = np.zeros((n_b, 8), dtype=np.uint64)
    if inline:
        for r, pair in enumerate(streams):
            for i, g in enumerate(pair):
                st = g.bit_generator.state["state"]
                rng_state[r, 4 * i: 4 * i + 4] = (st["state"] >> 64, st["state"] & _LOW_64, st["inc"] >> 64,
                                                  st["inc"] & _LOW_64)
        if arm_inline:
            draws = np.zeros((n_b, 1))
    # Each decision reads its M uniforms: M rows (lock-step) or M consecutive values of its row.
    width = per_decision * chunk if per_decision and not inline else 1
    policy_u = np.zeros((n_b, width) if by_rep else (width, n_b))
    beta_counts = np.zeros((2, n_b * k))
    constants = np.empty((4, n_b * k))
    for i in range(n_b * k):
        thompson.refresh_constants(beta_counts[0], beta_counts[1], i, constants)
    kl_state = np.zeros((6, n_b * k))
    kl_state[2] = np.nan
    kl_n = np.zeros((2, n_b * k), dtype=np.int64)
    kl_n[0] = -1
    row_buf = np.empty(max(per_decision, 1) * chunk)
    # Thompson's Gamma constants of whole counts (a count grows by at most one a round).
    g_table = kernel.gamma_table(min(n_rounds + 1, 1 << 16) if kind == kernel.THOMPSON and by_rep else 1)
    pulls_at = np.zeros((n_b, ck.size, k), dtype=np.int64)
    estimate_at = np.zeros((n_b, ck.size))
    t, ck_next = 0, 0
    pool = setup.get("pool")
    parts = min(n_b, setup["threads"]) if pool is not None else 1

    def draw(lo: int, hi: int, c: int) -> None:
        """The next ``c`` rounds' randomness of replications ``lo .. hi - 1``, from their own streams."""
        buf = row_buf if pool is None else np.empty_like(row_buf)
        for r in range(lo, hi):
            prng, arm_rng = streams[r]
            if by_rep:
                if per_decision and not inline:
                    prng.random(out=policy_u[r, : per_decision * c])
                if not is_matrix and not arm_inline:
                    if arms.draw == "uniform":
                        arm_rng.random(out=draws[r, :c])
                    else:
                        arm_rng.standard_normal(out=draws[r, :c])
                continue
            if per_decision:
                prng.random(out=buf[: per_decision * c])
                policy_u[: per_decision * c, r] = buf[: per_decision * c]
            if not is_matrix:
                if arms.draw == "uniform":
                    arm_rng.random(out=buf[:c])
                else:
                    arm_rng.standard_normal(out=buf[:c])
                draws[:c, r] = buf[:c]

    while t < n_rounds:
        c = min(chunk, n_rounds - t)
        if pool is None:
            draw(0, n_b, c)
        else:
            list(pool.map(lambda p: draw(p * n_b // parts, (p + 1) * n_b // parts, c), range(parts)))
        if by_rep:
            f_t = (kl_ucb.exploration_table(t + 1, c, setup["kl_c"]) if kind == kernel.KL_UCB
                   else np.zeros(1))
            run, first = ((kernel.run_replications_parallel, (parts,)) if pool is not None
                          else (kernel.run_replications, ()))
            ck_next = run(
                *first, kind, setup["fixed_arm"], per_decision, k, t, t + c, f_t, stats, scale, centre, setup["fixed"],
                setup["per_arm"], setup["running"], origin, moments, inline, arm_inline, rng_state, policy_u,
                beta_counts, constants,
                kl_state, kl_n, g_table, arms.family, arms.params, draws, matrix, pos, ck, ck_next, pulls_at,
                estimate_at,
            )
        else:
            run, first = (kernel.run_block_parallel, (parts,)) if pool is not None else (kernel.run_block, ())
            ck_next = run(
                *first, kind, setup["index"], setup["params"], setup["kl_c"], setup["fixed_arm"], per_decision, k,
                t, t + c, stats, scale, centre, setup["fixed"], setup["per_arm"], setup["running"], origin,
                moments, policy_u, beta_counts, arms.family, arms.params, draws, matrix, pos,
                ck, ck_next, pulls_at, estimate_at,
            )
        if ck_next < 0:
            raise ValueError(
                f"The 'arms' parameter of simulate (RewardMatrix) must hold a value for every pull: "
                f"replication {block.start - 1 - ck_next} pulled an arm more than {matrix.shape[2]} times."
            )
        t += c
    return stats.reshape(5, n_b, k).transpose(1, 0, 2), pulls_at, estimate_at


def _check_matrix(arms: RewardMatrix, n_rep: int) -> None:
    if arms.values.ndim == 3 and arms.values.shape[0] != n_rep:
        raise ValueError(f"The 'arms' parameter of simulate has values for {arms.values.shape[0]} replications; "
                         f"n_replications is {n_rep}. Got a RewardMatrix of shape {arms.values.shape} instead.")
