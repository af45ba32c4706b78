r"""``identify_full_bandit``: find the best super-arm of size k from noisy sums, with confidence 1 - delta.

The flow is the one of every door (:mod:`pmcbandit.runtime.door`): check the arguments, build the
algorithm (:func:`~pmcbandit.full_bandit.saqm.saqm`, :func:`~pmcbandit.full_bandit.sa_foa.sa_foa`,
:func:`~pmcbandit.full_bandit.icb.icb`, :func:`~pmcbandit.full_bandit.exhaustive.exhaustive`), wrap
it in a :class:`~pmcbandit.full_bandit.learner.FullBanditLearner` with one
:class:`~pmcbandit.full_bandit.learner.SuperArm` per row of the allocation's support, and drive the
one loop, which checks the stopping rule after every pull (the rules are valid at every round,
Prop. 1 holding uniformly in t) and ends the run with ``stopped_by="confidence"`` when it holds.
The budget stays a cap (``"budget"``: the answer is then the empirical best super-arm, without the
guarantee, and a :class:`~pmcbandit.exceptions.NoGuaranteeWarning` says so).

Degenerate observations follow the engine's fault rule (:mod:`pmcbandit.runtime.engine`): a pull
that raises or returns anything but one finite real number contributes nothing and counts towards
its super-arm's ``max_faults``; a quarantined super-arm ends the run (``stopped_by="no_arm"``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

from pmcbandit.full_bandit._args import check_arm_names, resolve_algorithm, resolve_environment
from pmcbandit.full_bandit.environment import FullBanditEnvironment
from pmcbandit.full_bandit.learner import FullBanditLearner, SuperArm, super_arm_names
from pmcbandit.full_bandit.least_squares import least_norm_estimate
from pmcbandit.full_bandit.result import FullBanditResult
from pmcbandit.runtime.budget import Budget, Pulls
from pmcbandit.runtime.door import drive_run, emit_warnings, loop_options

__all__ = ["identify_full_bandit", "DEFAULT_BUDGET"]

#: Default cap on the pulls of a full-bandit run.
DEFAULT_BUDGET = Pulls(1_000_000)


def identify_full_bandit(
    environment: FullBanditEnvironment | Callable,
    algorithm="sa_foa",
    *,
    k: int,
    delta: float = 0.05,
    epsilon: float = 0.0,
    sigma: float | None = None,
    n: int | None = None,
    noise: str | None = None,
    allocation="uniform",
    budget: float | Budget = DEFAULT_BUDGET,
    random_seed=None,
    arm_names: Sequence[str] | None = None,
    algorithm_kwargs: dict | None = None,
    max_faults: int = 1,
    max_in_flight: int | None = None,
    pull_timeout: float | None = None,
    executor=None,
    progressbar: bool = True,
    callback: Callable | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: float = 30.0,
) -> FullBanditResult:
    r"""Identify the best super-arm of ``k`` arms with full-bandit feedback (Kuroki et al. 2020).

    Parameters
    ----------
    environment : FullBanditEnvironment or callable
        The environment, or ``pull(super_arm, rng) -> float`` returning one noisy observation of the
        sum of the arms ``super_arm`` (sorted indices, read-only) from the pull's own stream ``rng``;
        ``n`` and ``sigma`` are then required.
    algorithm : str or FullBanditIdentifier
        ``"sa_foa"`` (Alg. 3, default), ``"saqm"`` (Alg. 2), ``"icb"`` (Alg. 4), ``"exhaustive"``
        (Alg. 5), or a ready identifier (which carries its own ``delta``, ``epsilon``, ``sigma`` and
        allocation; ``n`` and ``k`` must match).
    k : int
        Super-arm size, ``2 <= k < n``.
    delta : float
        Error probability in (0, 1).
    epsilon : float
        Tolerance >= 0 on the answer's sum of means.
    sigma : float, optional
        Sub-Gaussian noise scale of a single arm (> 0): the paper's :math:`R` (Sec. 2). With an
        environment it defaults to its ``noise_sd``.
    n : int, optional
        Number of arms (required with a pull function).
    noise : {"independent", "dependent", "sum"}, optional
        How ``sigma`` enters the observed sum's scale
        (:func:`~pmcbandit.full_bandit.base.sum_noise_scale`); with an environment it defaults to the
        environment's, otherwise to ``"independent"``.
    allocation : str or Allocation
        ``"uniform"``, ``"g"`` (G-allocation, App. D) or an
        :class:`~pmcbandit.full_bandit.allocation.Allocation`.
    budget : float or Budget
        A cap: the run stops earlier when the algorithm is confident. A float is wall seconds;
        ``Pulls(n)`` (the default, 1,000,000 pulls) makes the run reproducible.
    random_seed : int, Generator or None
        As in :func:`pmcbandit.run`: pull ``j`` of support row ``r`` draws from its own stream, so the
        same seed gives the same run on every executor with one pull in flight, and
        :func:`~pmcbandit.full_bandit.simulate.simulate_full_bandit` replays it.
    arm_names : sequence of str, optional
        Names of the ``n`` arms (``arm0``, ``arm1``, ... by default).
    algorithm_kwargs : dict, optional
        Settings of the algorithm's factory (``width``, ``width_scale``, ``refresh_every``,
        ``oracle`` for ICB, ``max_super_arms`` for Exhaustive) and of the named allocation's
        builder (``design`` for ``"uniform"``; ``max_iter``, ``tol``, ``support``, ... for ``"g"``).
    max_faults, max_in_flight, pull_timeout, executor, progressbar, callback, checkpoint, checkpoint_every
        As in :func:`pmcbandit.run` (the run's arms are the super-arms; ``docs/scale_out.md``).

    Returns
    -------
    FullBanditResult
        ``selected`` (arm names, best first), ``stopped_by``, the per-pull super-arms, rewards and
        statistics, ``history``, ``summary()``, ``to_inference_data()``.

    Examples
    --------
    >>> import pmcbandit as pb
    >>> env = pb.full_bandit.FullBanditEnvironment([1.0, 0.9, 0.2, 0.1, 0.0], noise_sd=0.1)
    >>> res = pb.identify_full_bandit(env, "sa_foa", k=2, random_seed=1, progressbar=False)
    >>> res.selected, res.stopped_by
    (['arm0', 'arm1'], 'confidence')
    """
    door = "identify_full_bandit"
    pull, n, sigma, noise = resolve_environment(environment, n, sigma, noise, door)
    options = loop_options(door, budget=budget, random_seed=random_seed, max_faults=max_faults,
                           max_in_flight=max_in_flight, pull_timeout=pull_timeout, executor=executor,
                           progressbar=progressbar, callback=callback, checkpoint=checkpoint,
                           checkpoint_every=checkpoint_every)
    names = check_arm_names(arm_names, n, door)
    algo = resolve_algorithm(algorithm, n, k, delta, epsilon, sigma, noise, allocation, algorithm_kwargs, door)
    learner = FullBanditLearner(algo)
    row_names = super_arm_names(names, learner.rows)
    arms = [SuperArm(pull, members, name) for members, name in zip(learner.rows, row_names)]
    params = algo.params._asdict()
    config = dict(kind="full_bandit", policy=algo.name, policy_params=tuple(params.items()), k=algo.k,
                  delta=algo.delta)
    done = drive_run(door, arms, learner, random_seed, options, config=config)
    state = learner.state
    width = algo.width(state) * np.sqrt(np.clip(np.diag(state.A_inv), 0.0, None)) if state.ready else \
        np.full(n, np.nan)
    history = done.engine.history
    settings = dict(done.settings, **params, super_arm_names=row_names, arm_names=names)
    result = FullBanditResult(
        names,
        [] if done.stopped_by == "no_arm" else algo.recommend(state),
        done.stopped_by,
        least_norm_estimate(state),
        width,
        learner.statistic,
        np.asarray(learner.rows)[history.column("arm")].reshape(-1, algo.k),
        history.column("obs"),
        learner.statistics,
        settings,
        history=history,
        super_arm_names=row_names,
        quarantined=done.engine.quarantined.copy(),
        state=state,
    )
    emit_warnings(result)
    return result
