"""The result of a run: estimate, honest SE and intervals, per-arm table, full history.

Everything a :class:`RunResult` reports is recomputed from its :class:`~pmcbandit.runtime.history.History`
(the combination of :mod:`pmcbandit.stats.combine` over the valid pulls) and the per-arm reliability of
importance weights the run measured (:class:`ArmReliability`), so a result rebuilt from a
checkpoint or from InferenceData reports the same numbers.

What is reported (``interval_status``)
--------------------------------------
1. Arms flagged *unreliable* (Pareto :math:`\\hat k` of their importance weights above the
   sample-size-dependent threshold, :mod:`pmcbandit.stats.psis`) get no weight: their variance estimate
   cannot be trusted. Nor do *unchecked* importance-weight arms (fewer weights than the
   diagnostic needs, so :math:`\\hat k` is not yet defined: an AIS arm with a few dozen pulls)
   while an importance-weight arm whose :math:`\\hat k` passed has observations: a variance from a
   few heavy-tailed weights is the confidently wrong case the diagnostic exists for, and it must
   not outweigh a checked arm. With no checked arm they are combined as before. Nor do arms too
   spread for their number of weights (:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`:
   their average is most often too low by more than its SE) while another importance-weight arm kept,
   of at least :data:`~pmcbandit.stats.psis.SPREAD_MIN_WEIGHTS` weights, is not too spread: an AIS arm
   of a few annealing steps beside a longer one. Nor, in a log-scale run, do arms whose estimate another arm's
   importance weights show too low (:attr:`RunResult.missed_mass`, :mod:`pmcbandit.stats.missed_mass`: betting on
   those weights against the arm's upper limit, at a stated error rate): an annealing path through a phase
   transition, or a proposal that never draws part of the posterior, misses mass with weights that pass every check
   of their own. Their status is ``"missed_mass"``, and they take no part in the consistency test (step 2).
2. The other arms are combined (``combine=``; :mod:`pmcbandit.stats.combine`), each arm with a
   :math:`\\hat k` at the variance its weights' fitted tail implies, an importance arm with too few
   weights for one at the variance of log-normal weights of its log weights' spread, each when that is
   the larger (:attr:`RunResult.tail_scale`; :mod:`pmcbandit.stats.pareto_tail`, "The tail's share of the
   variance"), and their agreement is tested (:mod:`pmcbandit.stats.consistency`): Cochran's Q with
   Welch's F reference (the arms' variances are estimated, with their degrees of freedom) over the
   arms whose variance estimate has at least :data:`MIN_CONSISTENCY_DOF` degrees of freedom, on the
   log scale for log-scale runs. Unchecked arms of step 1 are compared too (not unreliable ones): an AIS arm of 30 pulls
   can show that the importance samplers carrying the estimate are wrong, though it does not
   carry the estimate itself; the random-effects estimate of a disagreement includes it. The
   test treats each arm's mean as normal with its estimated standard error; an arm
   whose variance comes from the spread of a few skewed observations (AIS weights, one per pull)
   breaks that, and its disagreements would be false alarms, hence tens of degrees of freedom,
   and no arm too spread for its number of weights
   (:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`: its average is most often too low by
   more than its SE, which the test would read as a disagreement). If they disagree (``p <
   alpha``), the reported estimate, SE and interval are
   the random-effects ones (``"random_effects"``), which cover the disagreement, and the outlying
   arms are named.
3. Otherwise the combination is reported; its interval is flagged ``"too_few_observations"``
   (not printed as an interval by :meth:`RunResult.summary`) when its SE has fewer than
   :data:`MIN_INTERVAL_DOF` effective degrees of freedom, or when arms with too few weights for the
   spread of their logs (:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`: such an average
   is most often too low by more than its SE) hold at least
   :data:`~pmcbandit.result_messages.SPREAD_WEIGHT_SHARE` of its weight; ``"ok"`` otherwise.
   ``"no_reliable_arm"`` comes first, before the consistency test: when every arm with observations
   was flagged unreliable, neither their combination nor their random-effects interval is one to
   read.
4. An estimator pool (some arm declares :attr:`~pmcbandit.arms.base.Arm.family`) whose interval would be ``"ok"`` is
   ``"no_cross_check"`` instead when the arms compared in step 2 whose own relative SE is at most
   :data:`~pmcbandit.result_messages.CHECK_RESOLUTION` do not span two declared families: the answer
   rests on one family (the others failed :math:`\\hat k`, were not pulled enough, or the pool has no other), and an
   error every arm of that family shares (an annealing path through a first-order phase transition that finds one
   of two components, Skilling 2006, Sec. 7; importance proposals that all miss a mode) cannot show in their
   agreement. The interval is printed, labelled so, and :attr:`RunResult.interval_reliable` is false. Arms of no
   declared family (``family=None``, a user's callables given to :func:`pmcbandit.run`) make no claim either way:
   a run whose arms declare none is judged by steps 1-3 alone. ``"random_effects"`` and ``"too_few_observations"``
   come first: they already say the interval is not a plain one. A check confirms the answer only to its own
   resolution: an error smaller than a few of the check arm's SEs (which, with the check's share of the budget, are
   most often wider than the combination's) can pass it, so ``"ok"`` rules out errors the check could see, not all
   errors beyond the reported interval. Nor does an arm count as a check when the posterior its weighted points
   stand for differs from the one the answer's arm (the largest weight in the combination) integrates over: their
   posterior means of the log likelihood differ by more than
   :data:`~pmcbandit.stats.posterior_check.MISMATCH_NATS` and by more than
   :data:`~pmcbandit.stats.posterior_check.MISMATCH_Z` standard errors (:attr:`RunResult.posterior_loglik`). Two
   estimators that each find a different part of the posterior can agree on :math:`Z` by chance (a spike and a slab
   of equal shares, each seen by one family, both read :math:`Z/2`); their posteriors still differ by nats.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from pmcbandit._validation import check_choice
from pmcbandit.base import declare_result
from pmcbandit.stats.combine import (COMBINE_METHODS, MIN_WEIGHTED_DOF, Combined, arm_moments, combine, interval,
                                     log_interval)
from pmcbandit.stats.consistency import Heterogeneity, heterogeneity
from pmcbandit.stats.consistency import interval as random_effects_interval
from pmcbandit.exceptions import WarningText
from pmcbandit.runtime.history import STATUS, History
from pmcbandit.stats.missed_mass import MissedMass, missed_mass
from pmcbandit.stats.pareto_tail import variance_scale
from pmcbandit.stats.posterior_check import loglik_means
from pmcbandit.stats.psis import ArmReliability
from pmcbandit.result_messages import KHAT_MIN_WEIGHTS, MIN_CONSISTENCY_DOF, SPREAD_WEIGHT_SHARE, RunMessages

__all__ = ["RunResult", "ArmReliability", "INTERVAL_STATUS", "MIN_INTERVAL_DOF", "MIN_CONSISTENCY_DOF",
           "KHAT_MIN_WEIGHTS"]

#: Fewest effective degrees of freedom of an SE for its interval to be reported as one.
MIN_INTERVAL_DOF = MIN_WEIGHTED_DOF
INTERVAL_STATUS = ("ok", "random_effects", "no_cross_check", "too_few_observations", "no_reliable_arm", "no_estimate")


@declare_result("run")
class RunResult(RunMessages):
    """What :func:`pmcbandit.run` returns.

    For log-scale runs (evidence), observations are stored as logs; the combination works on
    ``exp(obs - shift)`` with ``shift`` the largest log observation, so nothing overflows, and
    ``log_estimate = shift + log(estimate on that scale)``. ``estimate``/``se`` are then on the
    linear scale and may underflow to 0 for tiny evidences: read ``log_estimate``/``log_se``.

    Each parameter is kept as the attribute of the same name.

    Parameters
    ----------
    arm_names : list of str
    history : History
        Every pull (see :mod:`pmcbandit.runtime.history`).
    combine : str
    log_scale : bool
        Whether observations are logs (evidence runs).
    settings : dict
        Run settings (policy, reward, budget, seeds, ...); become InferenceData ``attrs``.
    quarantined : ndarray of bool
    policy_state : BanditState or None
        The policy's final state (None for results rebuilt from a file).
    reliability : ArmReliability, optional
        Per-arm Pareto k-hat of the importance weights (none measured when omitted).
    notes : sequence of str
        What was adapted before or during the run (AIS step counts sized for the budget, arms left
        out of the pool and why); :attr:`notes` adds what the result itself finds sound but weaker
        than it could be. ``issued`` (attribute, empty by default) holds the warnings a door issued
        before the run (:meth:`warnings` lists them, the door does not issue them again).

    Examples
    --------
    >>> import pmcbandit as pb
    >>> arms = [pb.CallableArm(lambda rng, s=s: rng.normal(1.0, s), name=f"sd{s}") for s in (0.5, 2.0)]
    >>> res = pb.run(arms, policy="ucb1", budget=pb.Pulls(200), random_seed=1, progressbar=False)
    >>> lo, hi = res.ci(0.95)
    >>> bool(lo < res.estimate < hi), res.interval_status
    (True, 'ok')
    """

    def __init__(self, arm_names, history: History, combine: str, log_scale: bool, quarantined, settings,
                 policy_state, reliability: ArmReliability | None = None, notes=()):
        self.arm_names = list(arm_names)
        self.history = history
        self.combine = combine
        self.log_scale = bool(log_scale)
        self.quarantined = np.asarray(quarantined, dtype=bool)
        self.settings = dict(settings)
        self.policy_state = policy_state
        self.reliability = reliability if reliability is not None else ArmReliability.empty(len(self.arm_names))
        self._given_notes = tuple(notes)
        self.issued: tuple[WarningText, ...] = ()

    # --- the combination ------------------------------------------------------------
    @cached_property
    def _valid(self) -> np.ndarray:
        return self.history.column("status") == 0

    @cached_property
    def _combine_order(self) -> np.ndarray:
        """The valid observations in (arm, pull index) order, not completion order: with pulls in
        flight the order they came back in depends on timing, and floating-point sums depend on
        their order, so the combination is a function of which pulls were made, not of when.
        """
        h = self.history
        pull_index, arm = h.column("pull_index")[self._valid], h.column("arm")[self._valid]
        # Most often each arm's pulls came back in the order of their index: then the stable sort by arm alone
        # (a radix sort on a narrow type) is that order; otherwise the sort by both keys.
        if arm.size and len(self.arm_names) <= np.iinfo(np.int16).max:
            order = np.argsort(arm.astype(np.int16), kind="stable")
            a, j = arm[order], pull_index[order]
            if ((j[1:] > j[:-1]) | (a[1:] != a[:-1])).all():
                return order
        return np.lexsort((pull_index, arm))

    @cached_property
    def shift(self) -> float:
        """Log of the working scale's unit (0 for linear runs)."""
        if not self.log_scale:
            return 0.0
        obs = self.history.column("obs")[self._valid]
        return float(obs.max()) if obs.size else 0.0

    def working_values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Valid observations on the working scale, their arms, within-batch variances and sizes."""
        h = self.history
        v = self._valid
        obs = h.column("obs")[v]
        within = h.column("within_var")[v]
        if self.log_scale:
            obs = np.exp(obs - self.shift)
            within = within * obs**2  # stored relative to the squared observation
        return obs, h.column("arm")[v], within, h.column("batch_size")[v]

    @cached_property
    def combined(self) -> Combined:
        """The combination of the reliable arms (step 2 of the module docstring)."""
        return self.combined_with(self.combine)

    def combined_with(self, method: str) -> Combined:
        """The same observations combined with another method (for comparisons)."""
        obs, arms, within, size = (a[self._combine_order] for a in self.working_values())
        return combine(obs, arms, len(self.arm_names), method, within, size, self.excluded_mask,
                       self.settings.get("deterministic"), self.tail_scale)

    @cached_property
    def excluded_mask(self) -> np.ndarray:
        """Arms the combination gives no weight by steps 1 and 2 of the module docstring: those of
        :attr:`ArmReliability.excluded <pmcbandit.stats.psis.ArmReliability.excluded>` and those whose estimate another
        arm's importance weights show too low (:attr:`missed_mass`).
        """
        return self.reliability.excluded_with(self.missed_mass.low)

    @cached_property
    def missed_mass(self) -> MissedMass:
        """Arms whose estimate another arm's importance weights show too low (:mod:`pmcbandit.stats.missed_mass`):
        each arm's upper limit (its mean and SE on the working scale, its variance scaled by :attr:`tail_scale` as in
        the combination; arms with fewer than :data:`MIN_CONSISTENCY_DOF` degrees of freedom, arms that failed the
        Pareto k-hat check and arms too spread for their number of weights are not tested) against the bets of every
        arm whose values are importance weights, which the test takes for unbiased estimates of the evidence (an
        importance sampler's weights are, or low where its proposal misses mass:
        :attr:`~pmcbandit.arms.base.Arm.importance_weights`). None in linear runs.
        """
        k = len(self.arm_names)
        rel = self.reliability
        witnesses = np.asarray(rel.n_weights) > 0
        if not self.log_scale or not witnesses.any():
            return MissedMass.none(k)
        obs, arms, within, size = self.working_values()
        n, mean, var, nu, own, _ = arm_moments(obs, arms, k, within, size)
        var = var * np.fmax(self.tail_scale, 1.0)
        # Arms step 1 already leaves out for their weights (unreliable, or too spread for their number: their SE
        # cannot be trusted, and the action differs) are not tested; they still bet.
        tested = own & (nu >= MIN_CONSISTENCY_DOF) & ~np.asarray(rel.unreliable, dtype=bool) & ~rel.undersampled
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.where(tested, np.sqrt(var / n), np.nan)
        return missed_mass(obs, arms, k, mean, se, witnesses)

    def recombined(self, method: str):
        """The same run read through another combination: a result of the same class, on the same pulls and
        reliability, whose every reported figure (estimate, SE, interval, its status, notes) follows ``method``
        (one of :data:`~pmcbandit.stats.combine.COMBINE_METHODS`). Nothing is pulled again.

        Examples
        --------
        >>> import pmcbandit as pb
        >>> arms = [pb.CallableArm(lambda rng, s=s: rng.normal(1.0, s), name=f"sd{s}") for s in (0.5, 2.0)]
        >>> res = pb.run(arms, policy="ucb1", budget=pb.Pulls(200), random_seed=1, progressbar=False)
        >>> other = res.recombined("uniform")
        >>> other.combine, other.estimate == res.combined_with("uniform").estimate
        ('uniform', True)
        """
        check_choice(method, COMBINE_METHODS, "method", "RunResult.recombined")
        cached = {name for klass in type(self).__mro__ for name, value in vars(klass).items()
                  if isinstance(value, cached_property)}
        new = type(self).__new__(type(self))
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k not in cached})
        new.combine = method
        return new

    @cached_property
    def tail_scale(self) -> np.ndarray:
        """Per arm, the factor (at least 1) on its variance estimate from what its weights say of their upper tail
        (:func:`~pmcbandit.stats.pareto_tail.variance_scale`; :mod:`pmcbandit.stats.pareto_tail`, "The tail's share
        of the variance"): with a k-hat, the second moment of the fitted tail; with too few weights for one, the
        variance of log-normal weights of the same log-weight variance. 1 for arms of neither kind and for linear runs.
        Each pull's weights enter through its mean, within-batch variance and size (working scale).
        """
        k = len(self.arm_names)
        rel = self.reliability
        if not self.log_scale or (rel.tail_excess is None and rel.log_w_var is None):
            return np.ones(k)
        obs, arms, within, size = self.working_values()
        size = size.astype(np.float64)
        spread = np.where((size > 1) & np.isfinite(within), (size - 1.0) * size * within, 0.0)
        count = np.bincount(arms, weights=size, minlength=k)
        total = np.bincount(arms, weights=size * obs, minlength=k)
        squares = np.bincount(arms, weights=size * obs**2 + spread, minlength=k)
        nan = np.full(k, np.nan)
        excess = (rel.tail_excess if rel.tail_excess is not None else nan) - 2.0 * self.shift
        return variance_scale(count, total, squares, excess, rel.log_w_var if rel.log_w_var is not None else nan)

    @cached_property
    def consistency(self) -> Heterogeneity:
        """Do the arms agree? Cochran's Q and the random-effects combination (:mod:`pmcbandit.stats.consistency`)
        over the arms with their own variance estimate of at least ``MIN_CONSISTENCY_DOF`` dof (log
        scale for log-scale runs: ``log`` of each arm's mean, delta-method SE).
        """
        return heterogeneity(*self._compared_arms, nu=self.combined.nu)

    @cached_property
    def _agreement(self) -> Heterogeneity:
        """The test of :attr:`consistency` and its random-effects estimate, without the per-arm deviations (what
        :attr:`interval_status` reads): :attr:`consistency` itself once that is computed.
        """
        full = self.__dict__.get("consistency")
        if full is not None:
            return full
        return heterogeneity(*self._compared_arms, nu=self.combined.nu, deviations=False)

    @cached_property
    def _compared_arms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per arm, the estimate and SE the consistency test compares, and the mask of the arms it compares."""
        c = self.combined
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.sqrt(c.var / c.n)
            y = c.mean
            if self.log_scale:
                y = np.log(c.mean)
                se = se / c.mean
        rel = self.reliability
        # Unchecked arms (no k-hat yet) are compared though not combined (step 2); unreliable ones are not, nor
        # arms too spread for their number of weights.
        compared = ((c.used | ((c.n > 0) & rel.unchecked & ~rel.unreliable & ~c.suspect)) & ~rel.undersampled
                    & ~self.missed_mass.low)
        mask = compared & c.own & (c.nu >= MIN_CONSISTENCY_DOF) & np.isfinite(y) & np.isfinite(se) & (se > 0)
        return y, se, mask

    @cached_property
    def interval_status(self) -> str:
        """One of :data:`INTERVAL_STATUS` (module docstring)."""
        c = self.combined
        if not c.estimate == c.estimate:
            return "no_estimate"
        if self._all_unreliable:
            return "no_reliable_arm"
        if self._agreement.flagged:
            return "random_effects"
        if not c.df >= MIN_INTERVAL_DOF or self._spread_arms.size:
            return "too_few_observations"
        if self._one_family:
            return "no_cross_check"
        return "ok"

    @cached_property
    def posterior_loglik(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per arm, the posterior mean of the log likelihood its weighted points estimate, its standard error and the
        posterior standard deviation of the log likelihood (:func:`~pmcbandit.stats.posterior_check.loglik_means`:
        each pull's weight total on the working scale with the pull's ``post_loglik`` and ``post_loglik_sd``); NaN
        for arms that report none and for linear runs.
        """
        n = len(self.arm_names)
        if not self.log_scale or "post_loglik" not in self.history.diagnostics:
            return np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        obs, arms, _, sizes = self.working_values()
        h = self.history
        sd = (h.column("post_loglik_sd")[self._valid] if "post_loglik_sd" in h.diagnostics
              else np.zeros(int(np.size(obs))))
        return loglik_means(obs * sizes, arms, h.column("post_loglik")[self._valid], sd, n)

    @property
    def interval_reliable(self) -> bool:
        """Whether the reported interval carries its guarantee (``"ok"`` or ``"random_effects"``); a
        ``"no_cross_check"`` interval is printed, labelled, but is not one (step 4 of the module docstring).
        """
        return self.interval_status in ("ok", "random_effects")

    @cached_property
    def _spread_arms(self) -> np.ndarray:
        """Arms too spread for their number of weights (:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`)
        that hold together at least :data:`~pmcbandit.result_messages.SPREAD_WEIGHT_SHARE` of the combination's
        weight (step 3 of the module docstring); empty otherwise.
        """
        short = np.flatnonzero(self.combined.used & self.reliability.undersampled)
        if short.size and float(np.sum(self.combined.weights[short])) >= SPREAD_WEIGHT_SHARE:
            return short
        return short[:0]

    @property
    def _all_unreliable(self) -> bool:
        seen = self.combined.n > 0
        return bool(seen.any() and self.reliability.unreliable[seen].all())

    @property
    def _random_effects(self) -> Heterogeneity | None:
        return self.consistency if self.interval_status == "random_effects" else None

    # --- what is reported ------------------------------------------------------------
    def _linear(self, x: float) -> float:
        """``x`` on the working scale back on the target's scale: ``x * exp(shift)``, which
        overflows to ``inf`` or underflows to 0 for extreme evidences (read the log values).
        """
        if not self.shift:
            return float(x)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            return float(x * np.exp(self.shift))

    @property
    def estimate(self) -> float:
        """The reported estimate (module docstring); NaN without a valid observation."""
        h = self._random_effects
        if h is None:
            return self._linear(self.combined.estimate)
        return self._linear(math.exp(h.estimate)) if self.log_scale else float(h.estimate)

    @property
    def se(self) -> float:
        """Its standard error (``inf`` from a single observation)."""
        h = self._random_effects
        if h is None:
            return self._linear(self.combined.se)
        return self.estimate * float(h.se) if self.log_scale else float(h.se)

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided ``level`` interval: ``estimate ± t_df se`` with Satterthwaite's degrees of freedom
        (:mod:`pmcbandit.stats.combine`), or the random-effects interval when the arms disagree. For a log-scale run
        (a positive target) it is :meth:`log_ci` on the linear scale, so the two always agree. Check
        :attr:`interval_status` before reading it as an interval.
        """
        if self.log_scale:
            lo, hi = self.log_ci(level)
            with np.errstate(over="ignore", under="ignore"):  # as _linear: extreme evidences are read as logs
                return float(np.exp(lo)), float(np.exp(hi))
        h = self._random_effects
        if h is None:
            c = self.combined
            return tuple(float(v) for v in interval(c.estimate, c.se, c.df, level))
        return tuple(float(v) for v in random_effects_interval(h, level))

    @property
    def log_estimate(self) -> float:
        """``log`` of the estimate of a positive target (NaN if the estimate is not positive)."""
        h = self._random_effects
        if h is not None and self.log_scale:
            return float(self.shift + h.estimate)
        est = self.combined.estimate if h is None else h.estimate
        return float(self.shift + np.log(est)) if est > 0 else float("nan")

    @property
    def log_se(self) -> float:
        """SE of ``log_estimate`` (delta method, ``se / estimate``, for a combination on the linear scale)."""
        h = self._random_effects
        if h is not None and self.log_scale:
            return float(h.se)
        est, se = (self.combined.estimate, self.combined.se) if h is None else (h.estimate, h.se)
        return float(se / est) if est > 0 else float("nan")

    def log_ci(self, level: float = 0.95) -> tuple[float, float]:
        """Interval for ``log`` of a positive target: the log-normal interval of the combined estimate and its
        SE (:func:`pmcbandit.stats.combine.log_interval`); the random-effects interval of the logs when the arms of
        a log-scale run disagree.
        """
        h = self._random_effects
        if h is not None and self.log_scale:
            lo, hi = random_effects_interval(h, level)
            return float(lo + self.shift), float(hi + self.shift)
        if h is None:
            c = self.combined
            lo, hi = log_interval(c.estimate, c.se, c.df, level)
        else:
            lo, hi = log_interval(h.estimate, h.se, h.dof, level)
        return float(lo + self.shift), float(hi + self.shift)

    # --- per-arm view -----------------------------------------------------------------
    @property
    def faults(self) -> list[dict]:
        return [
            dict(row=r, arm=self.arm_names[a], status=s, message=m) for r, a, s, m in self.history.faults
        ]

    def arm_status(self) -> np.ndarray:
        """Per arm: ``"ok"``, ``"quarantined"`` (faults), ``"unreliable"`` (Pareto k-hat),
        ``"unchecked"`` (too few importance weights for a k-hat while a checked arm passed: no weight),
        ``"missed_mass"`` (its estimate shown too low by another arm's importance weights, :attr:`missed_mass`: no
        weight),
        ``"zero_variance"`` (all observations identical: no weight, :mod:`pmcbandit.stats.combine`) or
        ``"not_pulled"`` (no valid observation: the budget ended, or every pull failed, before it had one).
        """
        status = np.full(len(self.arm_names), "ok", dtype=object)
        status[self.combined.n == 0] = "not_pulled"
        status[self.combined.suspect] = "zero_variance"
        rel = self.reliability
        status[self.excluded_mask & rel.unchecked] = "unchecked"
        status[self.missed_mass.low] = "missed_mass"
        status[rel.unreliable] = "unreliable"
        status[self.quarantined] = "quarantined"
        return status.astype(str)

    @property
    def stopped_by(self) -> str:
        """Why the run ended (``settings["stopped_by"]``: ``"budget"``, ``"target_se"``, ``"callback"``,
        ``"no_arm"``; :func:`pmcbandit.run`).
        """
        return str(self.settings.get("stopped_by", ""))

    @property
    def samples(self) -> int:
        """Pulls made, faulty ones included (the rows of :attr:`history`)."""
        return len(self.history)

    @property
    def table(self):
        """:meth:`arm_table` as a fresh ``pandas.DataFrame``, one row per arm, indexed by arm name."""
        import pandas as pd

        return pd.DataFrame(self.arm_table()).set_index("arm")

    def arm_table(self) -> dict[str, np.ndarray]:
        """Per-arm summary: pulls, faults, mean (working scale), variance V_k of an observation,
        mean cost delta_k, V*delta (``var_cost``; in a log-scale run the scale-free V*delta / Z-hat^2, both on
        the working scale, which :meth:`summary` heads ``V·δ/Ẑ²`` and the variance-cost plot draws),
        combination weight, Pareto k-hat of its importance weights with its threshold and weight count, the
        variance of its log weights while too few for a k-hat (``log_w_var``,
        :attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`), the second moment its fitted tail adds
        (``tail_excess``, :attr:`tail_scale`), quarantined flag and status.
        """
        k = len(self.arm_names)
        arms = self.history.column("arm")
        status = self.history.column("status")
        cost = self.history.column("cost")
        c = self.combined
        pulls = np.bincount(arms, minlength=k)
        cost_sum = np.bincount(arms[np.isfinite(cost)], weights=cost[np.isfinite(cost)], minlength=k)
        mean_cost = np.divide(cost_sum, pulls, out=np.full(k, np.nan), where=pulls > 0)
        rel = self.reliability
        return dict(
            arm=np.asarray(self.arm_names),
            pulls=pulls,
            faults=np.bincount(arms[status != 0], minlength=k),
            mean=c.mean,
            var=c.var,
            cost=mean_cost,
            var_cost=self._var_cost(c.var * mean_cost),
            weight=c.weights,
            khat=rel.khat,
            khat_threshold=rel.threshold,
            n_weights=rel.n_weights,
            log_w_var=rel.log_w_var if rel.log_w_var is not None else np.full(k, np.nan),
            tail_excess=rel.tail_excess if rel.tail_excess is not None else np.full(k, np.nan),
            quarantined=self.quarantined,
            status=self.arm_status(),
        )

    def _var_cost(self, var_cost: np.ndarray) -> np.ndarray:
        """``V·δ`` in the table's unit: as it is for a linear run; divided by the estimate squared for a log-scale run,
        whose working scale is shifted by a constant the user never sees (the ratio does not depend on it).
        """
        if not self.log_scale:
            return var_cost
        z = self.combined.estimate
        return var_cost / z**2 if z == z and z != 0 else np.full_like(var_cost, np.nan)

    def summary(self) -> str:
        """A readable table (the CLI prints it): the estimate with its SE and 95% interval (or why
        there is none), then per arm its pulls, faults, V·δ (variance of an observation times its
        mean cost, the quantity the bandit minimises, Neufeld et al. 2014, Sec. 5; ``V·δ/Ẑ²`` in a log-scale run,
        as :meth:`arm_table` and the variance-cost plot), cost, weight,
        Pareto k-hat and status, then every warning (``warning:``) and note (``note:``).
        """
        t = self.arm_table()
        status = self.interval_status
        if self.log_scale:
            lo, hi = self.log_ci()
            head = f"log Z = {self.log_estimate:.6f} ± {self.log_se:.6f}"
            band = f"95% CI {lo:.6f} .. {hi:.6f}"
        else:
            lo, hi = self.ci()
            head = f"estimate = {self.estimate:.6g} ± {self.se:.3g}"
            band = f"95% CI {lo:.6g} .. {hi:.6g}"
        if status == "random_effects":
            head += f" ({band}, random effects: the arms disagree)"
        elif status == "ok":
            head += f" ({band})"
        elif status == "no_cross_check":
            head += f" ({band}, no cross check: one estimator family, no second family checked it)"
        elif status == "no_estimate":
            head = "no estimate: no valid observation"
        else:
            head += f" (no reliable 95% interval: {status.replace('_', ' ')})"
        settings = self.settings
        about = f"{len(self.history)} pulls, {len(self.history.faults)} faults, combine={self.combine!r}"
        if settings.get("policy"):
            about = (
                f"policy={settings['policy']!r}, reward={settings.get('reward')!r}, budget={settings.get('budget')}, "
                + about
            )
        lines = [
            head,
            about,
            f"{'arm':>14} {'pulls':>7} {'faults':>6} {'V·δ/Ẑ²' if self.log_scale else 'V·δ':>11} {'cost/pull':>10} "
            f"{'weight':>7} {'k-hat':>6}  status",
        ]
        for i in range(len(self.arm_names)):
            khat = f"{t['khat'][i]:6.2f}" if np.isfinite(t["khat"][i]) else f"{'-':>6}"
            lines.append(
                f"{t['arm'][i]:>14} {t['pulls'][i]:>7d} {t['faults'][i]:>6d} {t['var_cost'][i]:>11.4g} "
                f"{t['cost'][i]:>10.4g} {t['weight'][i]:>7.3f} {khat}  {t['status'][i]}"
            )
        lines += [f"warning: {message}" for message in self.warnings()]
        lines += [f"note: {message}" for message in (*self.notes, *self.combined.degenerate)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<RunResult: {len(self.history)} pulls, {len(self.arm_names)} arms>\n{self.summary()}"

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(repr(self))}</pre>"

    # --- ArviZ door ---------------------------------------------------------------------
    def to_inference_data(self):
        """``arviz.InferenceData``: ``sample_stats`` per pull (dim ``pull``), per-arm summary, attrs."""
        from pmcbandit.diagnostics.arviz_io import to_inference_data

        return to_inference_data(self)

    def plot(self, level: float = 0.95, *, x: str = "pulls", reference: float | None = None, fig=None):
        """Allocation, running estimate with its ``level`` interval and per-arm V·δ in one figure
        (:func:`pmcbandit.diagnostics.plots.plot_run`; V·δ as in :attr:`table`'s ``var_cost``).
        """
        from pmcbandit.diagnostics.plots import plot_run

        return plot_run(self, level, x=x, reference=reference, fig=fig)

    def to_netcdf(self, path) -> str:
        """Write :meth:`to_inference_data` to the netCDF file ``path`` (h5netcdf); return the path as a str."""
        from pmcbandit._compat import write_netcdf

        return write_netcdf(self.to_inference_data(), path)


STATUS_NAMES = STATUS
