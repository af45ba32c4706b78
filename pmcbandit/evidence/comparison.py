r"""Which model? Bayes factors and posterior model probabilities under one compute budget.

:func:`compare_models` estimates the evidence of every model with the bandit of
:func:`~pmcbandit.estimate_evidence` (Neufeld et al. 2014, Sec. 6.3) and spends **one** budget
across the models, in slices, where it reduces the error of what is reported most.

Split rule (``split="neyman"``)
-----------------------------------------
The models' runs are independent, so the variance of a reported function
:math:`f(\log Z_1, \dots, \log Z_M)` is, to first order, :math:`\sum_i g_i^2 s_i^2` with
:math:`g_i = \partial f / \partial \log Z_i` and :math:`s_i` the standard error of model
:math:`i`'s :math:`\log\hat Z`. A model's run has a variance per unit of budget
:math:`v_i = s_i^2 t_i` (variance of its estimate times the budget :math:`t_i` it consumed:
Neufeld et al.'s variance-times-cost, Sec. 5, one level up), so :math:`s_i^2 = v_i / t_i`. With
all slices of equal size and :math:`n_i` slices given to model :math:`i`, one more slice lowers
the variance by :math:`g_i^2 v_i (1/n_i - 1/(n_i+1)) = g_i^2 s_i^2 / (n_i + 1)`; the next slice goes
to the model where that is largest. This greedy rule on a separable convex objective reaches the
best integer allocation for the measured :math:`v_i` (marginal allocation, Fox 1966), which is
Neyman's optimum allocation (Neyman 1934): :math:`t_i \propto |g_i| \sqrt{v_i}`. The reported
function is chosen by ``target``:

* ``"log_bf"``: the log Bayes factor of the two leading models, :math:`g = e_a - e_b`;
* ``"probability"``: the posterior probability of the leading model,
  :math:`g_i = p_a(\mathbb 1[i=a] - p_i)` (:mod:`pmcbandit.evidence.comparison_result`).

Every model first gets one slice (to measure :math:`v_i`). A model whose evidence interval is not
yet usable (``"too_few_observations"``, no estimate, or an infinite SE) gets the next slice before
the rule applies (fewest slices first), since its :math:`s_i` cannot be trusted. With
``split="even"`` the slices go round-robin, the even split.

Slices
------
A slice is an :func:`~pmcbandit.estimate_evidence` run of ``budget / slices`` on the model's one
pool of arms (built once, before the budget starts, sized for a slice) with its own random stream;
the slices of a model are merged into one run (:mod:`pmcbandit.evidence.slices`), so its SE is
the honest SE of all its pulls. Each slice's guards start from what the model's earlier slices left
(:class:`~pmcbandit.runtime.guards.CheckCarry`: the arms' pulls and spending, the arm that held the
cross-family check's share), so the check's pulls accumulate across the slices as in one run instead of restarting
in each, where a 10 % share of a slice may never reach the pulls a check needs; the pool's check arms are sized for
the share of the slices a model can expect (``slices`` over the number of models), each pull under one slice's
decision cap. Stop rules, checked after every
slice once each model had one: the budget (its slices spent, or its time used), a :class:`~pmcbandit.TargetSE`
budget on the log Bayes factor of the two leading models once no evidence is flagged, and ``decide``: the leading
model's probability interval lies above ``decide`` and no evidence is flagged.
"""

from __future__ import annotations

import math
import numbers
import time
from dataclasses import replace
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from pmcbandit._rng import get_random_generator
from pmcbandit._validation import param_message
from pmcbandit.arms.evidence._draws import reservoir_states
from pmcbandit.evidence.pool import DEFAULT_AIS_STEPS, DEFAULT_LAPLACE_PROPOSALS, build_pool, seconds_after_setup
from pmcbandit.evidence.estimate import EvidenceLoop, compile_loop, evidence_run
from pmcbandit.evidence.slices import merge_slices, slice_arms
from pmcbandit.evidence.trace import read_trace
from pmcbandit.exceptions import PmcBanditWarning
from pmcbandit.evidence.comparison_result import ModelComparison, model_probabilities
from pmcbandit.runtime.budget import CpuSeconds, Pulls, TargetSE, WallSeconds, as_budget, budget_label
from pmcbandit.runtime.door import emit_warnings
from pmcbandit.runtime.guards import CheckCarry

__all__ = ["compare_models", "next_model", "SPLITS", "TARGETS"]

SPLITS = ("neyman", "even")
TARGETS = ("log_bf", "probability")
#: Default slices per model: the first measures the model, the rest are allocated.
SLICES_PER_MODEL = 4
_UNUSABLE = ("too_few_observations", "no_estimate")


def _named_models(models) -> dict:
    """``models`` as a dict name -> pm.Model (a mapping as given; a sequence named by ``model.name`` when
    set, else by position ``model_<i>``).
    """
    import pymc as pm

    if isinstance(models, Mapping):
        bad = [k for k in models if not isinstance(k, str) or not k]
        if bad:
            raise TypeError(param_message("models", "compare_models", "a mapping with non-empty str names", bad[0]))
        named = {k: v[0] if isinstance(v, tuple) and len(v) == 2 else v for k, v in models.items()}
    elif isinstance(models, Sequence) and not isinstance(models, (str, bytes)):
        names = [getattr(m, "name", "") or f"model_{i}" if isinstance(m, pm.Model) else f"model_{i}"
                 for i, m in enumerate(models)]
        if len(set(names)) != len(names):
            raise ValueError(param_message("models", "compare_models",
                                           "models with distinct names (pass a mapping name -> model)", names))
        named = dict(zip(names, models))
    else:
        raise TypeError(param_message("models", "compare_models",
                                      "a mapping name -> pymc.Model or a sequence of pymc.Model", models))
    if len(named) < 2:
        raise ValueError(param_message("models", "compare_models", "at least two models (a comparison needs two)",
                                       list(named)))
    for name, model in named.items():
        if not isinstance(model, pm.Model):
            raise TypeError(param_message("models", "compare_models", f"pymc.Model objects (model {name!r} is not)",
                                          model))
    return named


def _named_fits(models, idata, names: list[str]) -> dict:
    """Each model's trace: the second item of a ``(model, idata)`` pair in ``models``, or ``idata[name]``."""
    fits = {}
    if isinstance(models, Mapping):
        fits = {k: v[1] for k, v in models.items() if isinstance(v, tuple) and len(v) == 2}
    if idata is None:
        return fits
    if not isinstance(idata, Mapping) or not set(idata) <= set(names):
        raise TypeError(param_message("idata", "compare_models",
                                      f"None or a mapping from model names {names} to traces", idata))
    twice = sorted(set(fits) & set(idata))
    if twice:
        raise ValueError(param_message("idata", "compare_models",
                                       "a trace per model given once (in models or in idata)", twice))
    return dict(fits, **idata)


def _check_prior(prior, names: list[str]) -> np.ndarray:
    n = len(names)
    if prior is None:
        return np.full(n, 1.0 / n)
    requirement = f"a probability vector over the {n} models (non-negative, summing to 1)"
    if isinstance(prior, Mapping):
        if set(prior) != set(names):
            raise ValueError(param_message("prior", "compare_models",
                                           f"{requirement}, keyed by the model names {names}", prior))
        values = [prior[k] for k in names]
    elif isinstance(prior, (Sequence, np.ndarray)) and not isinstance(prior, str):
        values = list(prior)
    else:
        raise TypeError(param_message("prior", "compare_models", requirement, prior))
    if any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in values):
        raise TypeError(param_message("prior", "compare_models", requirement, prior))
    p = np.asarray(values, dtype=float)
    if p.shape != (n,) or not np.all(np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-8:
        raise ValueError(param_message("prior", "compare_models", requirement, prior))
    if np.count_nonzero(p) < 2:
        raise ValueError(param_message("prior", "compare_models", "positive for at least two models", prior))
    return p


def _slice_budget(budget, slices: int):
    """The budget of one slice, and the total horizon in seconds (None for pulls)."""
    if isinstance(budget, TargetSE):
        if budget.max_seconds is None:
            raise ValueError(param_message("budget", "compare_models",
                                           "a TargetSE with max_seconds (the time the slices share)", budget))
        return WallSeconds(budget.max_seconds / slices), float(budget.max_seconds)
    if isinstance(budget, Pulls):
        if budget.n < slices:
            raise ValueError(param_message("budget", "compare_models",
                                           f"at least one pull per slice ({slices} slices)", budget))
        return Pulls(budget.n // slices), None
    if isinstance(budget, (WallSeconds, CpuSeconds)):
        return type(budget)(budget.seconds / slices), float(budget.seconds)
    raise TypeError(param_message("budget", "compare_models",
                                  "seconds, WallSeconds, CpuSeconds, Pulls or TargetSE(max_seconds=...)", budget))


def _check_arms(arms, names: list[str]) -> dict:
    if arms is None:
        return {}
    if not isinstance(arms, Mapping) or not set(arms) <= set(names):
        raise TypeError(param_message("arms", "compare_models",
                                      f"None or a mapping from model names {names} to lists of evidence arms", arms))
    out = {}
    for name, pool in arms.items():
        pool = list(pool)
        if not pool or not all(getattr(a, "log_scale", False) for a in pool):
            raise ValueError(param_message("arms", "compare_models", f"log-scale evidence arms for model {name!r}",
                                           pool))
        out[name] = pool
    return out


def next_model(log_z, log_z_se, slices_given, prior, status, *, target: str = "log_bf",
               split: str = "neyman", eligible=None) -> int | None:
    """Index of the model the next slice goes to (module docstring), or ``None`` when none is eligible.

    Parameters
    ----------
    log_z, log_z_se : array of float
        Each model's current ``log Ẑ`` and its SE.
    slices_given : array of int
        Slices each model has had.
    prior : array of float
        Prior model probabilities.
    status : list of str
        Each model's interval status.
    target : {"log_bf", "probability"}
    split : {"neyman", "even"}
    eligible : array of bool, optional
        Models that can run another slice (arms left); all by default.
    """
    lz, se = np.asarray(log_z, dtype=float), np.asarray(log_z_se, dtype=float)
    n_i = np.asarray(slices_given, dtype=float)
    ok = np.ones(lz.size, dtype=bool) if eligible is None else np.asarray(eligible, dtype=bool)
    ok &= np.asarray(prior) > 0
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    unusable = idx[[status[i] in _UNUSABLE or not (np.isfinite(se[i]) and np.isfinite(lz[i])) for i in idx]]
    if split == "even" or unusable.size:
        pool = idx if split == "even" else unusable
        return int(pool[np.argmin(n_i[pool])])
    p = model_probabilities(lz, se, prior).probability
    order = np.lexsort((-lz, -np.where(np.isfinite(p), p, -np.inf)))
    lead, runner = int(order[0]), int(order[1])
    if target == "log_bf":
        g = np.zeros(lz.size)
        g[lead], g[runner] = 1.0, -1.0
    else:
        g = p[lead] * ((np.arange(lz.size) == lead) - p)
    score = g**2 * se**2 / (n_i + 1.0)
    if not np.any(score[idx] > 0):  # p_lead rounds to 1: the two leaders' log BF still orders the need
        score = np.where(np.isin(np.arange(lz.size), (lead, runner)), se**2 / (n_i + 1.0), 0.0)
    best = idx[score[idx] == score[idx].max()]
    return int(best[np.argmin(n_i[best])])


def compare_models(
    models,
    policy="thompson",
    *,
    budget=60.0,
    prior=None,
    random_seed=None,
    split: str = "neyman",
    target: str = "log_bf",
    decide: float | None = None,
    slices: int | None = None,
    level: float = 0.95,
    arms=None,
    combine: str = "inverse_variance",
    reward: str = "auto",
    policy_kwargs: dict | None = None,
    max_in_flight: int | None = None,
    pull_timeout: float | None = None,
    executor=None,
    max_faults: int = 1,
    progressbar: bool = True,
    callback=None,
    checkpoint=None,
    checkpoint_every: float = 30.0,
    idata=None,
) -> ModelComparison:
    """Compare models by their evidence: log Bayes factors and posterior model probabilities.

    Parameters
    ----------
    models : mapping of str -> pymc.Model or (pymc.Model, idata), or sequence of pymc.Model
        At least two models (a sequence is named by ``model.name`` when set, else ``model_<i>``).
        Models are always given explicitly: a ``with`` block holds one model, not two. A
        ``(model, idata)`` pair gives the model's fit (what ``pm.sample`` returned), as ``idata`` does.
    policy : str or Policy
        The bandit of each model's evidence run (:func:`pmcbandit.estimate_evidence`).
    budget : float or Budget
        The one budget of the comparison: seconds of wall time (float, :class:`~pmcbandit.WallSeconds`),
        :class:`~pmcbandit.CpuSeconds`, :class:`~pmcbandit.Pulls` (reproducible: the allocation then
        uses pull counts and no clock), or :class:`~pmcbandit.TargetSE` on the log Bayes factor of the
        two leading models (``max_seconds`` required). A wall-time budget (and ``max_seconds``) runs
        from the call to the answer: compiling the run loop (once per process) and building the default
        pools (compiling the models, mode searches) is counted, as in :func:`~pmcbandit.estimate_evidence`,
        and the slices share what is left (at least :data:`~pmcbandit.evidence.pool.MIN_RUN_SHARE` of it);
        ``settings["setup_seconds"]`` has each model's pool set-up.
    prior : sequence or mapping of float, optional
        Prior model probabilities (uniform when None).
    random_seed : int, Generator or None
        Converted once; each model's slices draw from streams spawned for it. With None, the
        drawn entropy is recorded in ``settings["seed_entropy"]``.
    split : {"neyman", "even"}
        The rule of the module docstring, or round-robin slices (the even split).
    target : {"log_bf", "probability"}
        What the allocation minimises the variance of.
    decide : float in (0.5, 1), optional
        Stop once the leading model's probability interval lies above ``decide`` (and no evidence
        is flagged).
    slices : int, optional
        Number of equal slices the budget is cut into (default 4 per model; at least one per model).
    level : float in (0, 1)
        Level of the probability intervals.
    arms : mapping of str -> sequence of Arm, optional
        A model's own pool of log-scale evidence arms (default: :func:`pmcbandit.evidence_arms`
        sized for a slice).
    combine, reward, policy_kwargs, max_in_flight, pull_timeout, executor, max_faults, progressbar, callback
        As in :func:`pmcbandit.estimate_evidence`, for every slice.
    checkpoint, checkpoint_every
        A comparison is not checkpointed: ``checkpoint`` must be None.
    idata : mapping of str -> InferenceData, DataTree or mapping, optional
        Posterior draws of some or all of the models (by name), as :func:`~pmcbandit.estimate_evidence`'s
        ``idata``: their pools' importance arms are fitted to the draws instead of found by mode searches
        and pilots (not for a model whose ``arms`` are given). A trace of another model raises ``ValueError``
        naming the model and the variable.

    Returns
    -------
    ModelComparison
        ``table``, ``log_bf(a, b)``, ``results``, ``best``, ``summary()``, ``plot()``,
        ``to_inference_data()``, ``to_dataframe()``.
    """
    from pmcbandit.arms.evidence import check_model
    from pmcbandit.run import check_allocation

    door = "compare_models"
    named = _named_models(models)
    names = list(named)
    n = len(names)
    prior = _check_prior(prior, names)
    label = budget_label(budget)
    budget = as_budget(budget, door)
    if slices is None:
        slices = SLICES_PER_MODEL * n
    if isinstance(slices, bool) or not isinstance(slices, numbers.Integral):
        raise TypeError(param_message("slices", door, "an int", slices))
    if slices < n:
        raise ValueError(param_message("slices", door, f"at least one per model (>= {n})", slices))
    slice_budget, horizon = _slice_budget(budget, int(slices))
    if split not in SPLITS:
        raise ValueError(param_message("split", door, f"one of {SPLITS}", split))
    if target not in TARGETS:
        raise ValueError(param_message("target", door, f"one of {TARGETS}", target))
    if decide is not None and (isinstance(decide, bool) or not isinstance(decide, numbers.Real)
                               or not 0.5 < decide < 1):
        raise ValueError(param_message("decide", door, "None or a probability in (0.5, 1)", decide))
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(param_message("level", door, "a probability in (0, 1)", level))
    if checkpoint is not None:
        raise ValueError(param_message("checkpoint", door,
                                       "None (a comparison is not checkpointed; run estimate_evidence with "
                              "a checkpoint per model to resume long runs)", checkpoint))
    pools = _check_arms(arms, names)
    fits = _named_fits(models, idata, names)
    both = sorted(set(fits) & set(pools))
    if both:
        raise ValueError(param_message("idata", door, "None for a model whose arms are given", both))
    # What each slice's run loop is given besides its budget and seed (estimate_evidence's defaults otherwise).
    loop = EvidenceLoop(combine=combine, reward=reward, policy_kwargs=policy_kwargs, max_in_flight=max_in_flight,
                        pull_timeout=pull_timeout, executor=executor, max_faults=max_faults, progressbar=progressbar,
                        callback=callback)
    check_allocation(door, None, policy, budget=slice_budget, random_seed=random_seed,
                     **replace(loop, checkpoint_every=checkpoint_every).allocation_keywords())
    for name, model in named.items():
        try:
            check_model(model, door)
        except (TypeError, ValueError) as err:
            raise type(err)(f"The 'models' parameter of {door} must hold models whose evidence is defined. "
                            f"Got model {name!r} instead: {err}") from None
    traces = {}
    for name, fit in fits.items():
        try:
            traces[name] = read_trace(fit, named[name], door)
        except (TypeError, ValueError) as err:
            raise type(err)(f"Model {name!r}: {err}") from None
        for alert in traces[name].alerts:  # said up front; the merged result counts them as issued
            warnings.warn(f"model {name!r}: {alert}", alert.category, stacklevel=2)

    entropy = None
    if random_seed is None:
        entropy = int(np.random.SeedSequence().entropy)
        random_seed = entropy
    streams = get_random_generator(random_seed, door).spawn(n)

    setup: dict[str, float] = {}
    pool_notes: dict[str, list[str]] = {}
    pool_alerts: dict[str, list] = {}
    started = time.perf_counter()
    compile_loop(door, policy, loop, budget=slice_budget)  # the run loop's kernels, once per process: set-up
    for name, model in named.items():
        start = time.perf_counter()
        if name not in pools:
            pools[name], pool_notes[name], pool_alerts[name] = build_pool(
                model, ais_steps=DEFAULT_AIS_STEPS, n_chains=1, transition="slice", laplace=True,
                laplace_proposals=DEFAULT_LAPLACE_PROPOSALS, prior=True, smc=False, batch_size=1000,
                cost="cpu_seconds", budget_seconds=slice_budget.horizon, trace=traces.get(name),
                decision_share=loop.max_decision_share, check_share=loop.cross_check_share, pieces=max(1, slices // n))
        setup[name] = time.perf_counter() - start
    if horizon is not None and isinstance(slice_budget, WallSeconds):
        # A wall-time budget runs from the call to the answer: the loop's compile and the pools' set-up are counted
        # (estimate_evidence).
        horizon = seconds_after_setup(horizon, time.perf_counter() - started)
        slice_budget = WallSeconds(horizon / slices)

    done: dict[str, list] = {name: [] for name in names}
    kept: dict[str, dict] = {name: {} for name in names}  # each model's posterior-draw reservoirs, all slices
    merged: dict = {}
    allocation_log: list[tuple[int, str, float]] = []
    given = np.zeros(n, dtype=np.int64)
    elapsed = 0.0
    stopped_by = "budget"
    settings_base = dict(door=door, budget=label, slice_budget=repr(slice_budget), slices=int(slices),
                         split=split, target=target, decide=decide, prior=prior.tolist(),
                         random_seed=random_seed if isinstance(random_seed, int) else repr(random_seed),
                         seed_entropy=entropy, setup_seconds=setup)
    while len(allocation_log) < slices:
        eligible = np.array([bool(slice_arms(len(pools[m]), done[m])) for m in names])
        if (given == 0).any():
            first = np.flatnonzero((given == 0) & eligible)
            k = int(first[0]) if first.size else None
        else:
            k = next_model([merged[m].log_z for m in names], [merged[m].log_z_se for m in names], given, prior,
                           [merged[m].interval_status for m in names], target=target, split=split,
                           eligible=eligible)
        if k is None:
            stopped_by = "no_arm"
            break
        name = names[k]
        index = slice_arms(len(pools[name]), done[name])
        start = time.perf_counter()
        result = _run_slice([pools[name][i] for i in index], policy, loop, budget=slice_budget,
                            random_seed=streams[k].spawn(1)[0], carry=_carry(merged.get(name), index))
        elapsed += time.perf_counter() - start
        done[name].append((index, result))
        for arm, state in reservoir_states(pools[name]).items():
            kept[name][arm] = kept[name][arm].merge(state) if arm in kept[name] else state
        given[k] += 1
        pool = pools[name]
        # Per-arm settings describe the whole pool, not the slice's arms.
        per_arm = dict(arm_names=[a.name for a in pool], families=[a.family for a in pool],
                       deterministic=[bool(getattr(a, "deterministic", False)) for a in pool])
        merged[name] = merge_slices([a.name for a in pool], done[name],
                                    dict(result.settings, **per_arm, slices=int(given[k]), model=name),
                                    pool_notes.get(name, ()))
        merged[name].issued = tuple(pool_alerts.get(name, ()))
        se = _reported_se(merged, names, prior) if len(merged) == n else math.nan
        allocation_log.append((len(allocation_log), name, se))
        if len(merged) < n:
            continue
        comparison = ModelComparison(merged, prior, allocation_log, settings_base, level=level)
        if isinstance(budget, TargetSE) and se <= budget.se and not comparison.flagged:
            stopped_by = "target_se"
            break
        if decide is not None and comparison.best is not None:
            lead = comparison.names.index(comparison.best)
            if comparison.probabilities.lower[lead] > decide:
                stopped_by = "decided"
                break
        if horizon is not None and isinstance(slice_budget, WallSeconds) and elapsed >= horizon:
            break
    for name in names:
        merged[name]._draw_source = (kept[name], pools[name])
    settings = dict(settings_base, stopped_by=stopped_by, elapsed_seconds=elapsed)
    comparison = ModelComparison({m: merged[m] for m in names}, prior, allocation_log, settings, level=level)
    emit_warnings(comparison)
    return comparison


def _reported_se(merged: dict, names: list[str], prior) -> float:
    """SE of the log Bayes factor of the two leading models."""
    lz = np.array([merged[m].log_z for m in names])
    se = np.array([merged[m].log_z_se for m in names])
    p = model_probabilities(lz, se, prior).probability
    order = np.lexsort((-lz, -np.where(np.isfinite(p), p, -np.inf)))
    return float(math.hypot(se[order[0]], se[order[1]]))


def _run_slice(arms, policy, loop: EvidenceLoop, *, budget, random_seed, carry):
    """One slice: an evidence run (:func:`~pmcbandit.evidence.estimate.evidence_run`, as
    :func:`~pmcbandit.estimate_evidence` on these arms) whose warnings are kept for the merged result.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        return evidence_run("estimate_evidence", arms, policy, loop, budget=budget, random_seed=random_seed,
                            carry=carry)


def _carry(merged, index: list[int]) -> CheckCarry | None:
    """What the model's earlier slices (merged) leave the next slice's guards, for the slice's arms ``index``
    (:class:`~pmcbandit.runtime.guards.CheckCarry`); ``None`` before the first slice.
    """
    if merged is None:
        return None
    arrays = merged.history.arrays()
    position = np.full(len(merged.arm_names), -1, dtype=np.int64)
    position[np.asarray(index, dtype=np.int64)] = np.arange(len(index))
    at = position[np.asarray(arrays["arm"], dtype=np.int64)]
    kept = at >= 0
    rows = {c: np.asarray(v)[kept] for c, v in arrays.items()}
    rows["arm"] = at[kept]
    rel = merged.reliability
    suspect = (np.asarray(rel.unreliable) | np.asarray(rel.undersampled)
               | merged.missed_mass.low)[np.asarray(index, dtype=np.int64)]
    return CheckCarry.from_history(rows, len(index), suspect)
