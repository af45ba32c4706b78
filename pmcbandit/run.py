"""``pmcbandit.run``: allocate a compute budget among arms and combine their estimates."""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from pmcbandit._rng import get_random_generator
from pmcbandit._validation import check_choice, check_positive
from pmcbandit.arms.base import Arm
from pmcbandit.budget import Budget, TargetSE, as_budget
from pmcbandit.combine import COMBINE_METHODS
from pmcbandit.engine import Engine
from pmcbandit.executors import make_executor
from pmcbandit.history import History
from pmcbandit.policies import get_policy
from pmcbandit.result import RunResult
from pmcbandit.rewards import make_reward_rule
from pmcbandit.streams import Streams

__all__ = ["run", "PmcBanditWarning"]

CHECKPOINT_VERSION = 1


class PmcBanditWarning(UserWarning):
    """Something about a run the user should know (quarantined arms, degenerate data)."""


def run(
    arms: Sequence[Arm],
    policy="thompson",
    budget: float | Budget = 30.0,
    combine: str = "inverse_variance",
    random_seed=None,
    *,
    reward: str = "auto",
    bounds: tuple[float, float] | None = None,
    policy_kwargs: dict | None = None,
    max_in_flight: int = 1,
    pull_timeout: float | None = None,
    max_faults: int = 1,
    progressbar: bool = True,
    callback: Callable | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: float = 30.0,
) -> RunResult:
    """Allocate ``budget`` among ``arms`` with a bandit ``policy`` and combine the estimates.

    Neufeld et al. (2014): each arm is an unbiased estimator; the bandit sees the reward
    ``-(X - c)^2`` (uniform costs, Thm 2) or the paired ``-1/4 (D1 + D2)(X1 - X2)^2``
    (non-uniform costs, Sec. 5), so it learns to pull the arm with the smallest variance
    (times cost), and the observations are combined uniformly or by inverse variance.

    Parameters
    ----------
    arms : sequence of Arm
        The estimators (all of the same target; all ``log_scale`` or none).
    policy : str or Policy
        One of ``pmcbandit.POLICY_NAMES`` or a :class:`~pmcbandit.policies.Policy`.
    budget : float or Budget
        A float is seconds of wall time; or ``Pulls(n)``, ``CpuSeconds(s)``, ``TargetSE(se)``.
    combine : {"inverse_variance", "uniform"}
    random_seed : int, Generator or None
        Converted once; the policy and every pull get their own spawned stream.
    reward : {"auto", "squared", "paired"}
        ``"auto"``: squared for ``Pulls`` budgets, paired (cost-aware) otherwise.
    bounds : (a, b), optional
        Known range of every observation (App. B): squared rewards then use centre ``a`` and
        the fixed scale ``(b - a)^2``; an observation outside is a fault.
    policy_kwargs : dict, optional
        Parameters of the policy factory (e.g. ``{"zeta": 1.2}``, ``{"arm": 2}`` for oracle).
    max_in_flight : int
        Pulls that may run at once (in threads); the policy chooses while others are pending.
        Above 1, completion order (hence allocation) depends on timing, so results are no
        longer bit-reproducible.
    pull_timeout : float, optional
        Seconds after which a pull counts as a fault (its thread is abandoned).
    max_faults : int
        Faulty pulls (exception, NaN/inf, timeout, out of bounds) after which an arm is
        quarantined: never selected again; its earlier valid observations are kept. Every
        fault is in ``result.faults`` and the InferenceData.
    progressbar : bool
    callback : callable, optional
        ``callback(progress, history)`` after each batch of completed pulls; return ``True``
        to stop the run early.
    checkpoint : path, optional
        An ``.npz`` file (no pickle) written every ``checkpoint_every`` seconds and at the end.
        If it exists when the run starts, the run resumes from it: the recorded pulls are
        replayed through the policy (consuming its stream exactly as before) and pulls that
        were in flight are redone with their original streams, so a resumed run with the same
        seed gives the same result as an uninterrupted one (for ``Pulls`` budgets).

    Returns
    -------
    RunResult
        ``estimate``, ``se``, ``ci(level)``, ``log_estimate``/``log_se``/``log_ci`` for
        positive targets, per-arm table, full history, ``to_inference_data()``.
    """
    arms = _check_arms(arms)
    pol = get_policy(policy, **(policy_kwargs or {}))
    budget = as_budget(budget)
    check_choice(combine, COMBINE_METHODS, "combine", "run")
    check_positive(max_in_flight, "max_in_flight", "run", integer=True)
    check_positive(max_faults, "max_faults", "run", integer=True)
    if pull_timeout is not None:
        check_positive(pull_timeout, "pull_timeout", "run")
    check_positive(checkpoint_every, "checkpoint_every", "run")
    if callback is not None and not callable(callback):
        raise TypeError(f"The 'callback' parameter of run must be callable or None. Got {callback!r} instead.")
    rule = make_reward_rule(reward, bounds, budget)
    engine = Engine(arms, pol, rule, None, max_faults, rule.bounds)
    engine.streams = _streams(random_seed, checkpoint)
    executor = make_executor(max_in_flight, pull_timeout)
    settings = dict(
        policy=pol.name, policy_params=list(pol.params), combine=combine, reward=rule.name,
        bounds=list(rule.bounds) if rule.bounds else None, budget=repr(budget), max_faults=max_faults,
        max_in_flight=max_in_flight, pull_timeout=pull_timeout, arm_names=[a.name for a in arms],
        log_scale=engine.log_scale, streams=engine.streams.to_json(),
    )
    if checkpoint is not None and os.path.exists(checkpoint):
        _resume(engine, checkpoint, settings, executor)
    se_every = _SEWatch(combine) if isinstance(budget, TargetSE) else None
    saved_at = time.perf_counter()
    bar = _progress_bar(progressbar, [a.name for a in arms])
    try:
        while True:
            progress = engine.progress(se_every.se(engine) if se_every else float("nan"))
            if budget.exhausted(progress):
                break
            while executor.in_flight() < executor.capacity and budget.may_dispatch(
                engine.pulls_dispatched + rule.pulls_per_decision - 1
            ) and not engine.quarantined.all():
                _, tickets = engine.dispatch()
                for ticket in tickets:
                    executor.submit(ticket, arms[ticket[1]], engine.streams.pull_rng(ticket[1], ticket[2]))
            if executor.in_flight() == 0:
                break  # nothing left to wait for: pull budget spent or every arm quarantined
            for outcome in executor.wait():
                engine.absorb(engine.record(outcome))
            if bar is not None:
                bar.n = round(100 * min(1.0, budget.fraction(progress)), 1)
                bar.refresh()
            if callback is not None and callback(engine.progress(), engine.history):
                break
            if checkpoint is not None and time.perf_counter() - saved_at >= checkpoint_every:
                _save_checkpoint(checkpoint, engine, settings)
                saved_at = time.perf_counter()
    finally:
        executor.shutdown()
        if bar is not None:
            bar.close()
    if checkpoint is not None:
        _save_checkpoint(checkpoint, engine, settings)
    if engine.quarantined.any():
        names = [arms[k].name for k in np.flatnonzero(engine.quarantined)]
        warnings.warn(f"arms quarantined after faults: {names} (see result.faults)", PmcBanditWarning, stacklevel=2)
    return RunResult(
        arm_names=[a.name for a in arms], history=engine.history, combine=combine, log_scale=engine.log_scale,
        quarantined=engine.quarantined.copy(), settings=settings, policy_state=engine.state,
    )


def _check_arms(arms) -> list[Arm]:
    if isinstance(arms, Arm):
        arms = [arms]
    try:
        arms = list(arms)
    except TypeError:
        raise TypeError(f"The 'arms' parameter of run must be a sequence of Arm. Got {arms!r} instead.") from None
    if not arms:
        raise ValueError("The 'arms' parameter of run must be a non-empty sequence of Arm. Got [] instead.")
    for a in arms:
        if not isinstance(a, Arm):
            raise TypeError(
                f"The 'arms' parameter of run must contain Arm objects (wrap a function in CallableArm). "
                f"Got {a!r} instead."
            )
    if len({bool(a.log_scale) for a in arms}) > 1:
        raise ValueError("The 'arms' parameter of run must not mix log-scale and linear-scale arms.")
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise ValueError(f"The 'arms' parameter of run must have unique names. Got {names!r} instead.")
    return arms


def _streams(random_seed, checkpoint) -> Streams:
    """Streams from the seed; when resuming with no seed, from the checkpoint."""
    if random_seed is None and checkpoint is not None and os.path.exists(checkpoint):
        with np.load(checkpoint, allow_pickle=False) as data:
            return Streams.from_json(json.loads(str(data["settings_json"]))["streams"])
    return Streams.from_generator(get_random_generator(random_seed, "run"))


class _SEWatch:
    """Standard error of the combined estimate for TargetSE budgets, recomputed sparingly."""

    def __init__(self, combine: str):
        self.combine = combine
        self._n = -1
        self._se = float("nan")

    def se(self, engine: Engine) -> float:
        n = len(engine.history)
        if n != self._n and (n < 200 or n - self._n >= n // 50):
            res = RunResult(
                arm_names=[a.name for a in engine.arms], history=engine.history, combine=self.combine,
                log_scale=engine.log_scale, quarantined=engine.quarantined, settings={}, policy_state=None,
            )
            self._se = res.log_se if engine.log_scale else res.se
            self._n = n
        return self._se


def _progress_bar(enabled: bool, names):
    if not enabled:
        return None
    from tqdm.std import tqdm

    return tqdm(total=100, desc=f"pmcbandit ({len(names)} arms)", unit="%", leave=False,
                bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f}% [{elapsed}<{remaining}]")


def _save_checkpoint(path, engine: Engine, settings: dict) -> None:
    """Write history and settings atomically to an ``.npz`` (loads without running code)."""
    data = engine.history.to_npz_dict()
    data["settings_json"] = np.asarray(json.dumps(settings))
    data["selected"] = np.asarray(engine.selected)
    data["version"] = np.asarray(CHECKPOINT_VERSION)
    tmp = f"{os.fspath(path)}.tmp.npz"
    np.savez(tmp, **data)
    os.replace(tmp, path)


def _resume(engine: Engine, path, settings: dict, executor) -> None:
    """Replay a checkpoint through ``engine`` and re-submit the pulls that were in flight."""
    with np.load(path, allow_pickle=False) as data:
        saved = json.loads(str(data["settings_json"]))
        history = History.from_npz_dict(data)
        selected = int(data["selected"])
    for key in ("policy", "policy_params", "reward", "bounds", "arm_names", "log_scale", "streams"):
        if saved.get(key) != settings.get(key):
            raise ValueError(
                f"The checkpoint {os.fspath(path)!r} was written with {key}={saved.get(key)!r}, but this run has "
                f"{key}={settings.get(key)!r}; use the same arms, policy, reward and seed to resume."
            )
    cols = history.arrays()
    fault_msgs = {row: msg for row, _, _, msg in history.faults}
    for r in range(len(history)):
        while engine.selected < cols["selected_before"][r]:
            engine.dispatch()
        row = {c: cols[c][r].item() for c in cols if c not in history.diagnostics}
        row["info"] = {d: cols[d][r].item() for d in history.diagnostics}
        row["message"] = fault_msgs.get(r, "")
        if engine.decisions[row["decision"]].arm != row["arm"]:
            raise ValueError(f"The checkpoint {os.fspath(path)!r} does not replay: the policy chose differently.")
        engine.absorb(row)
    while engine.selected < selected:
        engine.dispatch()
    engine.wall_offset = float(cols["wall"][-1]) if len(history) else 0.0
    engine.cpu_offset = float(cols["cpu"][-1]) if len(history) else 0.0
    engine.restart_clock()
    for ticket in engine.pending_tickets():
        executor.submit(ticket, engine.arms[ticket[1]], engine.streams.pull_rng(ticket[1], ticket[2]))

