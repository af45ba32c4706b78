"""Model evidence of any PyMC model: ``log Z ± se`` from a bandit over evidence estimators.

Neufeld et al. (2014), Sec. 6.3 and App. G: AIS arms with 400 / 2000 / 8000 annealing steps
(power-of-4 schedule, one slice-sampling sweep per step) compete, with Laplace-centred
Student-t importance sampling (a heavy- and a light-tailed proposal) and prior importance
sampling beside them, under CPU-time costs
and the paired cost-aware reward of Sec. 5; observations are combined by inverse variance.
Every arm returns log-weights whose exponentials are unbiased for ``Z``, so the combination
is done on ``Z`` (shifted to avoid underflow) and reported on the log scale.

What makes the answer trustworthy on hard models (hierarchical funnels, label switching,
large data sets) is spread over the layers:

* the pool (:func:`evidence_arms`): the Laplace proposals are mixtures over the distinct
  modes of a multi-start search with a defensive prior component
  (:class:`~pmcbandit.arms.evidence.LaplaceISArm`), and are *left out* — with the reason in
  the result's notes — when the posterior has no interior mode (a funnel); AIS step counts
  are capped so that one AIS pull is predicted to take at most a share of a time budget;
* the run (:mod:`pmcbandit.runtime.guards`): every arm is tried once, cheapest first; no decision may
  take more than 10 % of the budget or more than is left; 10 % of the spending stays on the
  families other than the leading one (AIS, the importance samplers, nested sampling) as an independent
  check;
* the result (:mod:`pmcbandit.result`): arms whose importance weights fail the Pareto
  :math:`\\hat k` check get no weight; if the arms disagree beyond their SEs, the random-effects
  interval is reported and the outlying arms are named; an interval from too few observations
  is flagged, not printed.

**Budget and set-up.** A wall-time budget of :func:`estimate_evidence` is the time from the call
to the answer: building the default pool (compiling the model's density, the multi-start mode
search, timing the AIS arms) is counted in it, and the pulls get what is left, at least
:data:`MIN_RUN_SHARE` of the budget (so a set-up longer than the budget overshoots it by that
share). Set-up is announced and reported on the ``pmcbandit`` logger at INFO, and its seconds and
the run's are in ``result.settings["setup_seconds"]`` and ``["run_seconds"]``; the budget the result
reports is the one given (``settings["budget"]``), never what set-up left of it. Pull-count,
target-SE and CPU-time budgets count pulls (or this process's CPU time during the run) only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields, replace
from functools import cached_property
import warnings
from collections.abc import Callable, Sequence

from pmcbandit.arms.base import Arm
from pmcbandit.runtime.budget import Budget, WallSeconds
from pmcbandit.exceptions import logger
from pmcbandit.runtime.guards import CROSS_CHECK_SHARE, MAX_DECISION_SHARE
from pmcbandit.evidence.pool import (DEFAULT_AIS_STEPS, DEFAULT_LAPLACE_PROPOSALS, MIN_AIS_STEPS, MIN_RUN_SHARE,
                                     build_pool, evidence_arms, resolve_model, seconds_after_setup)
from pmcbandit.result import RunResult
from pmcbandit.exceptions import WarningText
from pmcbandit.runtime.door import emit_warnings
from pmcbandit.evidence.trace import read_trace

__all__ = ["evidence_arms", "estimate_evidence", "evidence_run", "resolve_model", "EvidenceResult", "EvidenceLoop",
           "DEFAULT_AIS_STEPS", "MIN_AIS_STEPS"]


@dataclass(frozen=True)
class EvidenceLoop:
    """The run-loop keywords of an evidence run besides ``budget`` and ``random_seed`` (which travel by name).

    The fields are :func:`estimate_evidence`'s keywords of the same names, with its defaults;
    :meth:`keywords` gives them to :func:`pmcbandit.run.allocate` and :func:`pmcbandit.run.check_allocation`,
    which also take an evidence run's fixed ``bounds=None``, ``ranges="auto"`` and ``centre="auto"``.
    """

    combine: str = "inverse_variance"
    reward: str = "auto"
    policy_kwargs: dict | None = None
    max_in_flight: int | None = None
    pull_timeout: float | None = None
    executor: object = None
    max_faults: int = 1
    cross_check_share: float = CROSS_CHECK_SHARE
    max_decision_share: float = MAX_DECISION_SHARE
    progressbar: bool = True
    callback: Callable | None = None
    checkpoint: object = None
    checkpoint_every: float = 30.0

    def keywords(self) -> dict:
        """The fields as :func:`estimate_evidence` keywords (values as given, not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def allocation_keywords(self) -> dict:
        """The fields and the fixed observation range of an evidence run, as :func:`pmcbandit.run.allocate`
        keywords.
        """
        return dict(self.keywords(), bounds=None, ranges="auto", centre="auto")


class EvidenceResult(RunResult):
    """A :class:`~pmcbandit.result.RunResult` read as a model evidence.

    ``log_z``/``log_z_se`` are ``log Ẑ`` and its delta-method SE (``se(Ẑ)/Ẑ``);
    ``log_z_ci(level)`` is the log-normal interval of ``Ẑ`` and its SE, which is longer above ``log Ẑ`` than
    below (see :func:`pmcbandit.stats.combine.log_interval`).

    ``posterior_draws`` is a by-product: approximate posterior draws from the importance arm whose
    weights passed the Pareto k-hat check with the largest effective sample size, resampled by
    weight (:mod:`pmcbandit.arms.evidence._draws`), or ``None`` when no arm passed; they become the
    InferenceData's ``posterior`` group.
    """

    _draw_source: tuple | None = None

    @cached_property
    def posterior_draws(self):
        """The by-product draws (class docstring), built on first access.

        Building them compiles the map to PyMC's constrained variables.
        """
        if self._draw_source is None:
            return None
        from pmcbandit.arms.evidence._draws import offer_draws

        states, arms = self._draw_source
        return offer_draws(self, states, arms)

    @classmethod
    def from_run(cls, result: RunResult) -> "EvidenceResult":
        new = cls.__new__(cls)
        new.__dict__.update(result.__dict__)
        return new

    @property
    def log_z(self) -> float:
        return self.log_estimate

    @property
    def log_z_se(self) -> float:
        return self.log_se

    def log_z_ci(self, level: float = 0.95) -> tuple[float, float]:
        return self.log_ci(level)


def estimate_evidence(
    model=None,
    policy="thompson",
    *,
    arms: Sequence[Arm] | None = None,
    budget: float | Budget = 30.0,
    combine: str = "inverse_variance",
    random_seed=None,
    reward: str = "auto",
    policy_kwargs: dict | None = None,
    max_in_flight: int | None = None,
    pull_timeout: float | None = None,
    executor=None,
    max_faults: int = 1,
    cross_check_share: float = CROSS_CHECK_SHARE,
    max_decision_share: float = MAX_DECISION_SHARE,
    progressbar: bool = True,
    callback=None,
    checkpoint=None,
    checkpoint_every: float = 30.0,
    idata=None,
) -> EvidenceResult:
    """Estimate the evidence ``Z = ∫ p(θ) p(y | θ) dθ`` of a PyMC model.

    Parameters
    ----------
    model : pymc.Model, optional
        The model; ``None`` takes it from the ``with pm.Model():`` context, as PyMC does.
    policy : str or Policy
        As in :func:`pmcbandit.run`.
    arms : sequence of Arm, optional
        Defaults to :func:`evidence_arms(model, budget_seconds=...) <evidence_arms>` with the
        time budget's horizon (AIS arms sized for the budget).
    budget, combine, random_seed, reward, policy_kwargs, max_in_flight, pull_timeout, executor, max_faults
        As in :func:`pmcbandit.run`; a float budget is seconds of wall time from the call to the
        answer: building the default pool is counted in it (the pulls get what is left, at least
        :data:`MIN_RUN_SHARE` of it; ``result.settings["setup_seconds"]`` and ``["run_seconds"]``). The result
        reports the budget as given (``settings["budget"]``, e.g. ``"20 s"``, and ``["budget_seconds"]``), and its
        advice in seconds counts the set-up. Arms passed in were built before the call and are not counted. With
        ``executor="processes"`` or a Dask ``Client`` the arms are built here and shipped to the
        workers as the ``pm.Model`` they estimate, each worker compiling one density for all of
        them (``docs/scale_out.md``).
    cross_check_share, max_decision_share, progressbar, callback, checkpoint, checkpoint_every
        As in :func:`pmcbandit.run`; the default pool's AIS arms are sized with the same shares.
    idata : InferenceData, DataTree or mapping, optional
        Posterior draws of ``model`` the user already has (what ``pm.sample`` returns, or
        ``{variable: array (chain, draw, *shape)}``): the default pool's importance arms are then fitted to them
        instead of found by a mode search and pilots (:func:`evidence_arms`' ``idata``), which shortens the set-up;
        the estimate still uses fresh proposal draws only. Not with ``arms``. A trace of another model raises
        ``ValueError`` before any compilation; a doubtful trace warns (``docs/guide/evidence_from_fits.md``).

    Returns
    -------
    EvidenceResult
        ``log_z``, ``log_z_se``, ``log_z_ci(0.95)``, ``interval_status``, per-arm table (with
        Pareto k-hat), ``to_inference_data()``; the notes of the pool (arms left out or shrunk,
        and why) are among ``result.notes``.

    Warns
    -----
    NoGuaranteeWarning
        Before the run, when the budget is too short for the independent check (with the budget
        that would let it run), and the conditions of :meth:`pmcbandit.result.RunResult.warnings`
        after it (``docs/guide/warnings.md``).
    UnreliableArmWarning
        Arms quarantined after faults, or every arm failed the Pareto k-hat check.
    """
    from pmcbandit.arms.evidence import check_model
    from pmcbandit.run import check_allocation

    door = "estimate_evidence"
    model = resolve_model(model, door)
    check_model(model, door)
    if idata is not None and arms is not None:
        raise ValueError(f"The 'idata' parameter of {door} must be None when arms are given (the trace fits the "
                         f"default pool's arms). Got a trace and {len(list(arms))} arms instead.")
    trace = None if idata is None else read_trace(idata, model, door)
    loop = EvidenceLoop(combine=combine, reward=reward, policy_kwargs=policy_kwargs, max_in_flight=max_in_flight,
                        pull_timeout=pull_timeout, executor=executor, max_faults=max_faults,
                        cross_check_share=cross_check_share, max_decision_share=max_decision_share,
                        progressbar=progressbar, callback=callback, checkpoint=checkpoint,
                        checkpoint_every=checkpoint_every)
    # Every argument is checked before the pool is compiled (seconds to minutes on a large model).
    checked = check_allocation(door, arms, policy, budget=budget, random_seed=random_seed,
                               **loop.allocation_keywords())
    options = checked[1]
    start = time.perf_counter()
    compile_loop(door, policy, loop, budget=options.budget)
    notes: list[str] = []
    alerts: list[WarningText] = []
    if arms is None:
        logger.info("%s: building the evidence pool (compiling the model's density, %s, timing the AIS "
                    "arms)%s", door, "fitting proposals to the trace" if trace is not None else "mode search",
                    "; this set-up counts in the time budget"
                    if isinstance(options.budget, WallSeconds) else "")
        arms, notes, alerts = build_pool(model, ais_steps=DEFAULT_AIS_STEPS, n_chains=1, transition="slice",
                                         laplace=True, laplace_proposals=DEFAULT_LAPLACE_PROPOSALS, prior=True,
                                         smc=False, batch_size=1000, cost="cpu_seconds",
                                         budget_seconds=options.budget.horizon, decision_share=max_decision_share,
                                         check_share=cross_check_share,
                                         started=start if isinstance(options.budget, WallSeconds) else None,
                                         trace=trace)
        setup = time.perf_counter() - start
        checked, note = _budget_after_setup(checked, setup)
        notes.append(note)
    else:
        setup = 0.0
    return evidence_run(door, arms, policy, loop, budget=budget, random_seed=random_seed, checked=checked,
                        notes=notes, alerts=alerts, setup=setup, given=options.budget)


def evidence_run(door: str, arms, policy, loop: EvidenceLoop, *, budget, random_seed, checked=None, notes=(),
                 alerts=(), setup: float = 0.0, given=None, carry=None) -> EvidenceResult:
    """The allocation run of :func:`estimate_evidence` on arms already built, and its result; also one slice of
    :func:`pmcbandit.compare_models`, which passes the guards' ``carry`` of the model's earlier slices
    (:class:`pmcbandit.runtime.guards.CheckCarry`).

    ``checked`` is what :func:`pmcbandit.run.check_allocation` returned for these arguments (``None``: checked
    here, and the budget it holds may be what the set-up left of the user's); ``notes`` and ``alerts`` are the
    pool's; ``setup`` the seconds its set-up took, ``given`` the budget the user gave (a wall budget counts the
    set-up, and the result reports the budget as given).
    """
    from pmcbandit.arms.evidence._draws import reservoir_states, reset_reservoirs
    from pmcbandit.run import allocate, check_allocation

    arms = list(arms)
    if arms and not all(getattr(a, "log_scale", False) for a in arms):
        raise ValueError(
            f"The 'arms' parameter of {door} must hold log-scale evidence arms (log-weights whose exponentials "
            f"estimate Z). Got {[getattr(a, 'name', a) for a in arms]!r} instead."
        )
    if checked is None:
        checked = check_allocation(door, arms, policy, budget=budget, random_seed=random_seed,
                                   **loop.allocation_keywords())
    # Said up front, before the budget is spent, and not again when the run ends (result.issued).
    for alert in alerts:
        warnings.warn(str(alert), alert.category, stacklevel=3)
    reset_reservoirs(arms)
    run_start = time.perf_counter()
    result = allocate(door, arms, policy, budget=budget, random_seed=random_seed, notes=list(notes),
                      checked=checked, carry=carry, **loop.allocation_keywords())
    result.settings["setup_seconds"] = setup
    result.settings["run_seconds"] = time.perf_counter() - run_start
    if setup and isinstance(given, WallSeconds):  # the time budget counted the set-up
        result.settings["budget_seconds"] = given.seconds
    result = EvidenceResult.from_run(result)
    result._draw_source = (reservoir_states(arms), arms)
    result.issued = tuple(alerts)
    emit_warnings(result, stacklevel=4)  # this function, estimate_evidence, the caller
    return result


#: (policy, reward) of the allocation loops whose numba kernels this process has compiled (:func:`compile_loop`; the
#: reward as the toy run resolved it, ``"auto"`` when no budget was given).
_COMPILED_LOOPS: set = set()
#: Pulls of the toy run that compiles them: enough for every arm's log weights to get a Pareto k-hat.
_COMPILE_PULLS = 16


def compile_loop(door: str, policy, loop: EvidenceLoop, budget: Budget | None = None) -> None:
    """Compile the numba kernels the run loop calls (the policy's select and update, the per-pull streams, the
    Pareto k-hat of the weights), once per process and policy, by a :data:`_COMPILE_PULLS`-pull run of the same
    policy and reward on two toy arms of 128 log weights a pull.

    The toy run's budget counts pulls, on which ``reward="auto"`` is the squared loss with a running centre; the
    run's ``budget``, when given, decides it as the run will (:func:`pmcbandit.policies.rewards.make_reward_rule`:
    the squared loss for a :class:`~pmcbandit.runtime.budget.Pulls` budget, the paired loss for any other). A
    time or standard-error budget thus loads the paired loss's kernels and not the re-centring kernels
    (:mod:`pmcbandit.policies.centring`) that only the squared loss calls.

    It is part of the set-up: a time budget counts it, and the AIS arms are sized for what is left. Without it, the
    first run in a fresh environment compiles them inside its first pulls, past the budget and unreported (where
    numba's cache is empty; a later process loads the cache).
    """
    from pmcbandit.arms.base import CallableArm
    from pmcbandit.run import allocate
    from pmcbandit.runtime.budget import Pulls

    reward = loop.reward
    if reward == "auto" and budget is not None:
        reward = "squared" if isinstance(budget, Pulls) else "paired"
    key = (policy if isinstance(policy, str) else type(policy).__name__, reward)
    if key in _COMPILED_LOOPS:
        return
    class ToyWeights(CallableArm):
        importance_weights = True  # declared, as the evidence arms do, so the run fits their k-hat

    toy = [ToyWeights(lambda rng, s=s: rng.normal(0.0, s, size=128), name=f"compile-{i}", log_scale=True, cost=1.0)
           for i, s in enumerate((1.0, 0.5))]
    quiet = replace(loop, reward=reward, max_in_flight=None, pull_timeout=None, executor=None, progressbar=False,
                    callback=None, checkpoint=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        allocate(door, toy, policy, budget=Pulls(_COMPILE_PULLS), random_seed=0, **quiet.allocation_keywords())
    _COMPILED_LOOPS.add(key)


def _budget_after_setup(checked, setup: float):
    """The checked options with a wall-time budget cut by the ``setup`` seconds spent building the pool (at least
    :data:`MIN_RUN_SHARE` of it left), and the note that says so; other budgets unchanged.
    """
    pol, options = checked
    budget = options.budget
    if not isinstance(budget, WallSeconds):
        return checked, f"set-up (building the evidence pool) took {setup:.3g} s, not counted in the budget {budget!r}"
    left = seconds_after_setup(budget.seconds, setup)
    note = (f"set-up (building the evidence pool) took {setup:.3g} s of the {budget.seconds:g} s budget; "
            f"the pulls had {left:.3g} s")
    if setup > (1.0 - MIN_RUN_SHARE) * budget.seconds:
        note += (f" (the least share {MIN_RUN_SHARE:g} of the budget: the answer comes about "
                 f"{setup + left - budget.seconds:.3g} s after the budget)")
    return (pol, options._replace(budget=WallSeconds(left))), note
