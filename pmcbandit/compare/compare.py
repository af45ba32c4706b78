r"""``pmcbandit.compare_samplers``: which estimators are the most efficient for my model, with confidence 1 - delta.

The flow mirrors :func:`pmcbandit.identify`: validate and freeze the arguments
(:class:`~pmcbandit.runtime.config.RunConfig`, ``kind="comparison"``), wrap the efficiency rule
(:mod:`pmcbandit.compare.efficiency`) and the validity gate (:mod:`pmcbandit.compare.gate`) in a
:class:`~pmcbandit.compare.learner.ComparisonLearner`, drive the one loop
(:func:`pmcbandit.runtime.loop.drive`), then check the gate once more on everything the run saw.

Assumptions and guarantee (stated in ``result.guarantee``):

* pulls of an arm are i.i.d. (each pull its own stream, :mod:`pmcbandit.runtime.streams`);
* ``bounds=(a, b)`` on every pull's estimate (an estimate outside is a fault) **and** declared
  ``costs`` → the intervals are exact confidence sequences and the selection is wrong with
  probability at most ``delta`` (``"delta-correct"``);
* otherwise (unbounded or heavy-tailed estimates, measured CPU costs) every arm's *upper* efficiency
  bound still comes from an exact lower confidence sequence for a non-negative mean (variance
  observations and costs), so a heavy-tailed arm gets a finite bound, while the *lower* bounds are
  asymptotic confidence sequences: the statement holds as the pair counts grow (``"asymptotic"``).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Mapping, Sequence

from pmcbandit._validation import check_k, check_open_unit, check_positive
from pmcbandit.arms.base import Arm, check_arms
from pmcbandit.compare.efficiency import EfficiencyRule, default_min_pairs
from pmcbandit.compare.learner import ComparisonLearner
from pmcbandit.compare.result import ComparisonResult
from pmcbandit.identification.identify import check_bounds
from pmcbandit.runtime.budget import Budget, TargetSE, WallSeconds
from pmcbandit.runtime.door import drive_run, emit_warnings, loop_options

__all__ = ["compare_samplers"]

#: Default budget: five minutes of wall time (the run stops earlier when it decides).
DEFAULT_BUDGET = 300.0
#: Default tolerance on the efficiency ratio: arms proven within a factor 2 of each other are a tie.
DEFAULT_EPSILON = 1.0


def compare_samplers(
    arms: Sequence[Arm],
    *,
    k: int = 1,
    delta: float = 0.05,
    budget: float | Budget = DEFAULT_BUDGET,
    random_seed=None,
    bounds: tuple[float, float] | None = None,
    costs: Sequence[float] | Mapping[str, float] | None = None,
    reference: float | None = None,
    epsilon: float = DEFAULT_EPSILON,
    min_pairs: int | None = None,
    gate_alpha: float = 0.01,
    max_faults: int = 1,
    max_in_flight: int | None = None,
    pull_timeout: float | None = None,
    executor=None,
    progressbar: bool = True,
    callback: Callable | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: float = 30.0,
) -> ComparisonResult:
    r"""Find the ``k`` most efficient arms, efficiency :math:`1/(\mathrm{Var}(X)\,\bar c)`, with confidence 1 - delta.

    Every arm estimates the same quantity; one pull is one independent replicate :math:`X` of its
    estimator at cost :math:`c`. Pairs of pulls give unbiased variance observations
    :math:`\tfrac12(X-X')^2`; confidence sequences for the variance and the cost give an interval for
    each arm's log-efficiency valid at the data-dependent stop, and a LUCB rule pulls the two arms
    whose intervals decide the ranking (:mod:`pmcbandit.compare.efficiency`). Arms that declare the
    components of a vector estimate (:attr:`~pmcbandit.arms.base.Arm.components`: ``sampler_arms``'
    default, every scaled posterior mean) are scored on half the sum of the components' squared
    differences, :math:`d` degrees of freedom per pair. Arms whose estimates
    disagree with the others (or with ``reference``) or whose importance weights fail the Pareto
    :math:`\hat k` check are reported and not ranked (:mod:`pmcbandit.compare.gate`).

    Parameters
    ----------
    arms : sequence of Arm
        Two or more arms on one scale (all linear, or all log-scale like the evidence arms, whose
        observations are compared as logs), unique names.
    k : int
        How many arms to select, ``1 <= k < len(arms)``.
    delta : float
        Error probability in (0, 1) of the selection and of the simultaneous intervals.
    budget : float or Budget
        A cap (wall seconds, :class:`~pmcbandit.Pulls`, :class:`~pmcbandit.CpuSeconds` or
        :class:`~pmcbandit.WallSeconds`); the run stops earlier when it decides. Default
        :data:`DEFAULT_BUDGET`: 300 s of wall time. Arms that measure a one-off compile time
        (``compile_seconds``: the NUTS backends) are compiled first, and a wall-time budget counts
        those seconds (``result.compile_seconds``, ``result.amortisation()``; ``settings["budget"]`` is the
        budget as given, ``settings["run_budget"]`` what the run had after compiling).
    random_seed : int, Generator or None
        The rule's tie-breaks and every pull get their own streams; same seed, same result.
    bounds : (a, b), optional
        Known range of every pull's estimate (outside is a fault). With ``costs`` it makes the
        guarantee exact.
    costs : sequence of float or mapping name -> float, optional
        Declared cost per pull of each arm (e.g. gradient evaluations), used instead of the pulls'
        reported costs in the efficiency. ``None``: the reported costs, estimated with intervals.
    reference : float, optional
        The quantity's known value (on the arms' scale: log Z for evidence arms); the gate then
        tests each arm against it instead of against the others.
    epsilon : float
        Tolerance on the efficiency ratio, finite and >= 0. The run stops when every arm outside
        the top ``k`` is either proven less efficient or proven at most ``1 + epsilon`` times as
        efficient as the top arms' weakest (a tie at that tolerance, ``result.tied``); the selected
        arms are then each at least ``1/(1 + epsilon)`` times as efficient as every other (LUCB1's
        stopping rule, :mod:`pmcbandit.compare.efficiency`). Default :data:`DEFAULT_EPSILON` (1.0:
        efficiencies within a factor 2 need not be told apart, so near-equal arms end the run
        instead of keeping it going until the budget); 0 asks for a strict ranking.
    min_pairs : int, optional
        Pairs an arm needs before its lower efficiency bound is used (>= 2); default 3 with the
        exact guarantee, 10 with the asymptotic one
        (:func:`~pmcbandit.compare.efficiency.default_min_pairs`). Every arm gets 2 pairs first;
        after that pairs go where they shrink the deciding gap most per unit of cost.
    gate_alpha : float
        Level of the validity gate's tests, in (0, 1). Arms that report their chains (the NUTS backends of
        ``sampler_arms``) are also excluded on divergences or on the potential scale reduction across
        their pulls (:func:`pmcbandit.compare.gate.convergence`).
    max_faults, max_in_flight, pull_timeout, executor, progressbar, callback, checkpoint, checkpoint_every
        As in :func:`pmcbandit.run` (``executor``: ``None``, ``"threads"``, ``"processes"``, a Dask
        ``Client`` or an executor object; ``docs/scale_out.md``). With ``max_in_flight > 1`` the rule
        chooses while pairs are pending, so which arms get how many pairs depends on timing.

    Returns
    -------
    ComparisonResult
        ``selected``, per-arm ``efficiency`` with ``efficiency_lower``/``efficiency_upper``,
        ``ratios()`` / ``ratio(a, b)``, ``stopped_by``, ``unresolved``, ``excluded``, ``guarantee``,
        ``summary()``, ``to_inference_data()``, ``plot()``.

    Examples
    --------
    >>> import pmcbandit as pb
    >>> arms = [pb.CallableArm(lambda rng, s=s: rng.uniform(-s, s), name=f"spread{s}", cost=1.0) for s in (0.2, 1.0)]
    >>> res = pb.compare_samplers(arms, bounds=(-1, 1), costs=[1.0, 1.0], random_seed=3, progressbar=False)
    >>> res.selected, res.stopped_by, res.guarantee
    (['spread0.2'], 'confidence', 'delta-correct')
    """
    door = "compare_samplers"
    arms = check_arms(arms, door)
    if len(arms) < 2:
        raise ValueError(f"The 'arms' parameter of {door} must hold at least two arms. Got {len(arms)} instead.")
    k = check_k(k, len(arms), door)
    delta = check_open_unit(delta, "delta", door)
    options = loop_options(door, budget=budget, random_seed=random_seed, max_faults=max_faults,
                           max_in_flight=max_in_flight, pull_timeout=pull_timeout, executor=executor,
                           progressbar=progressbar, callback=callback, checkpoint=checkpoint,
                           checkpoint_every=checkpoint_every)
    budget = options.budget
    if isinstance(budget, TargetSE):
        raise ValueError(f"The 'budget' parameter of {door} must be Pulls, CpuSeconds or WallSeconds (a comparison "
                         f"has no combined standard error to target). Got {budget!r} instead.")
    bounds = check_bounds(bounds, door)
    declared = _check_costs(costs, arms)
    units = {a.name: a.cost_unit for a in arms}
    if declared is None and len(set(units.values())) > 1:
        raise ValueError(f"The 'arms' parameter of {door} must report costs in one unit (efficiencies in different "
                         f"units cannot be ranked; or pass 'costs'). Got cost units {units!r} instead.")
    if reference is not None:
        if isinstance(reference, bool) or not isinstance(reference, numbers.Real) or reference != reference \
                or abs(reference) == float("inf"):
            raise ValueError(f"The 'reference' parameter of {door} must be a finite number or None. "
                             f"Got {reference!r} instead.")
        reference = float(reference)
    check_positive(epsilon, "epsilon", door, allow_zero=True)
    exact = bounds is not None and declared is not None
    if min_pairs is None:
        min_pairs = default_min_pairs(exact)
    check_positive(min_pairs, "min_pairs", door, integer=True)
    if min_pairs < 2:
        raise ValueError(f"The 'min_pairs' parameter of {door} must be >= 2. Got {min_pairs!r} instead.")
    gate_alpha = check_open_unit(gate_alpha, "gate_alpha", door)

    rule = EfficiencyRule(k=int(k), delta=delta, n_arms=len(arms),
                          variance_bound=None if bounds is None else (bounds[1] - bounds[0]) ** 2 / 2.0,
                          costs=declared, epsilon=float(epsilon), min_pairs=int(min_pairs))
    log_scale = bool(arms[0].log_scale)
    components = _components(arms, bounds)
    compile_seconds = _compile(arms)
    budget = _after_compile(budget, compile_seconds)
    options = options._replace(budget=budget)
    learner = ComparisonLearner(rule, log_scale, reference, gate_alpha, tuple(a.name for a in arms), components,
                                _chains(arms))
    guarantee = "delta-correct" if rule.exact else "asymptotic"
    config = dict(kind="comparison", policy="efficiency_lucb",
                  policy_params=(("epsilon", rule.epsilon), ("min_pairs", rule.min_pairs), ("costs", declared),
                                 ("reference", reference), ("gate_alpha", gate_alpha)),
                  k=rule.k, delta=delta)
    done = drive_run(door, arms, learner, random_seed, options, config=config, bounds=bounds)
    engine, settings, stopped_by = done
    engine.reliability(final=True)  # an arm whose final k-hat fails is not ranked either
    learner.settle(engine.blocked())
    in_play = learner.in_play()
    if in_play.sum() <= rule.k and stopped_by in ("confidence", "budget"):
        stopped_by = "no_arm"
    status = _status(engine, learner)
    result = ComparisonResult(
        arm_names=tuple(a.name for a in arms), history=engine.history,
        settings=dict(settings, stopped_by=stopped_by, guarantee=guarantee, gate_checks=learner.gate_checks,
                      compile_seconds=compile_seconds, run_budget=repr(budget), cost_units=tuple(units.values())),
        rule=rule, state=learner.state, in_play=in_play, status=status,
        reasons=_reasons(engine, learner, status), z=learner.z,
    )
    emit_warnings(result)
    return result


def _compile(arms) -> tuple[float | None, ...]:
    """Warm up the arms that measure their one-off compile time (``compile_seconds``, e.g. the NUTS
    backends) and read it; ``None`` for arms that do not report one. A warm-up that fails is left
    to the arm's first pull, which records the failure (:func:`~pmcbandit.arms.base.warm_up_arms`).
    """
    out = []
    for arm in arms:
        if not hasattr(arm, "compile_seconds"):
            out.append(None)
            continue
        if arm.compile_seconds is None:
            try:
                arm.warm_up()
            except Exception:  # reported by the pull that needs what failed to compile
                pass
        seconds = arm.compile_seconds
        out.append(None if seconds is None else float(seconds))
    return tuple(out)


def _after_compile(budget: Budget, compile_seconds) -> Budget:
    """A wall-time budget less the compile seconds spent before the run (at least a millisecond is left,
    so the run starts and stops at once by its budget when compilation took it all).
    """
    spent = sum(s for s in compile_seconds if s is not None)
    if isinstance(budget, WallSeconds) and spent > 0:
        return WallSeconds(max(budget.seconds - spent, 1e-3))
    return budget


def _chains(arms) -> tuple[int, int] | None:
    """Positions of ``divergent_fraction`` and ``chain_variance`` among the run's diagnostics, when some
    arm reports its chains (:func:`pmcbandit.compare.gate.convergence`).
    """
    order = list(dict.fromkeys(d for a in arms for d in a.diagnostics))
    if "divergent_fraction" in order and "chain_variance" in order:
        return order.index("divergent_fraction"), order.index("chain_variance")
    return None


def _components(arms, bounds) -> tuple[int, ...]:
    """Positions of the arms' vector-estimate components among the run's diagnostics (``()``: scalar
    estimates); every arm must declare the same components, and ``bounds`` (a range of the scalar
    estimate) cannot bound their differences.
    """
    door = "compare_samplers"
    declared = {tuple(getattr(a, "components", ())) for a in arms}
    if len(declared) > 1:
        raise ValueError(f"The 'arms' parameter of {door} must all give scalar estimates or all the same vector "
                         f"components (e.g. sampler_arms of one model and quantity). Got arms with components "
                         f"{[len(getattr(a, 'components', ())) for a in arms]} instead.")
    names = declared.pop()
    if not names:
        return ()
    if bounds is not None:
        raise ValueError(f"The 'bounds' parameter of {door} must be None for arms with vector estimates (it bounds "
                         f"a scalar estimate, not the components). Got {bounds!r} instead.")
    order = list(dict.fromkeys(d for a in arms for d in a.diagnostics))
    missing = [n for n in names if n not in order]
    if missing:
        raise ValueError(f"The 'arms' parameter of {door} must declare their components among their diagnostics. "
                         f"Got components {missing!r} missing from them instead.")
    return tuple(order.index(n) for n in names)


def _check_costs(costs, arms) -> tuple | None:
    door = "compare_samplers"
    if costs is None:
        return None
    names = [a.name for a in arms]
    if isinstance(costs, Mapping):
        missing = [n for n in names if n not in costs]
        if missing or len(costs) != len(names):
            raise ValueError(f"The 'costs' parameter of {door} must name every arm exactly ({names!r}). "
                             f"Got {sorted(costs)!r} instead.")
        values = [costs[n] for n in names]
    else:
        values = list(costs)
        if len(values) != len(names):
            raise ValueError(f"The 'costs' parameter of {door} must hold one cost per arm ({len(names)}). "
                             f"Got {costs!r} instead.")
    for v in values:
        check_positive(v, "costs", door)
    return tuple(float(v) for v in values)


def _status(engine, learner) -> list[str]:
    out = []
    for i in range(engine.n_arms):
        if engine.quarantined[i]:
            out.append("quarantined")
        elif engine.unreliable[i] or engine.unreliable_since[i] >= 0:
            out.append("unreliable")
        elif learner.excluded[i]:
            out.append("excluded")
        else:
            out.append("ranked")
    return out


def _reasons(engine, learner, statuses) -> list[str]:
    rel = engine.reliability()
    out = []
    for i, status in enumerate(statuses):
        if status == "quarantined":
            out.append(f"quarantined after {int(engine.faults[i])} faulty pulls")
        elif status == "unreliable":
            khat, threshold, n = rel.failed[i]
            if khat != khat:  # flagged without a record of when: its current fit
                khat, threshold, n = rel.khat[i], rel.threshold[i], rel.n_weights[i]
            final = (f"; {rel.khat[i]:.2f} on all its {int(rel.n_weights[i])} weights"
                     if int(n) != int(rel.n_weights[i]) and rel.khat[i] == rel.khat[i] else "")
            out.append(f"khat: the Pareto k-hat of its importance weights exceeded the reliability threshold "
                       f"(k-hat {khat:.2f}, threshold {threshold:.2f} at {int(n)} weights{final})")
        else:
            out.append(learner.reasons[i])
    return out
