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
   not outweigh a checked arm. With no checked arm they are combined as before.
2. The other arms are combined (``combine=``; :mod:`pmcbandit.stats.combine`), and their agreement is
   tested (:mod:`pmcbandit.stats.consistency`): Cochran's Q with Welch's F reference (the arms'
   variances are estimated, with their degrees of freedom) over the arms whose variance estimate
   has at least :data:`MIN_CONSISTENCY_DOF` degrees of freedom, on the log scale for log-scale
   runs. The test treats each arm's mean as normal with its estimated standard error; an arm
   whose variance comes from the spread of a few skewed observations (AIS weights, one per pull)
   breaks that, and its disagreements would be false alarms, hence tens of degrees of freedom. If they disagree (``p <
   alpha``), the reported estimate, SE and interval are
   the random-effects ones (``"random_effects"``), which cover the disagreement, and the outlying
   arms are named.
3. Otherwise the combination is reported; its interval is flagged ``"too_few_observations"``
   (not printed as an interval by :meth:`RunResult.summary`) when its SE has fewer than
   :data:`MIN_INTERVAL_DOF` effective degrees of freedom, ``"no_reliable_arm"`` when every arm
   with observations was flagged unreliable, and ``"ok"`` otherwise.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from pmcbandit.stats.combine import MIN_WEIGHTED_DOF, Combined, combine, interval, log_interval
from pmcbandit.stats.consistency import Heterogeneity, heterogeneity
from pmcbandit.stats.consistency import interval as random_effects_interval
from pmcbandit.runtime.guards import CROSS_CHECK_SHARE
from pmcbandit.runtime.history import STATUS, History
from pmcbandit.stats.psis import ArmReliability
from pmcbandit.exceptions import NoGuaranteeWarning, UnreliableArmWarning, WarningText

__all__ = ["RunResult", "ArmReliability", "INTERVAL_STATUS", "MIN_INTERVAL_DOF", "MIN_CONSISTENCY_DOF",
           "KHAT_MIN_WEIGHTS", "check_observations"]

#: Fewest effective degrees of freedom of an SE for its interval to be reported as one.
MIN_INTERVAL_DOF = MIN_WEIGHTED_DOF
#: Fewest degrees of freedom of an arm's variance estimate for it to enter the consistency test: a
#: batched arm's many weights give that at once; an arm of one weight per pull needs 30 pulls, the
#: usual rule of thumb for a mean of skewed observations to be near normal.
MIN_CONSISTENCY_DOF = 29
#: Fewest importance weights of an arm for a Pareto k-hat (``WeightTails``' ``min_weights``): below, an
#: importance-weight arm is *unchecked* and gets no weight while a checked arm passed (step 1).
KHAT_MIN_WEIGHTS = 100
INTERVAL_STATUS = ("ok", "random_effects", "too_few_observations", "no_reliable_arm", "no_estimate")


def check_observations(n_weights: int, pulls: int) -> int:
    """Pulls an arm needs to enter the consistency test: :data:`MIN_CONSISTENCY_DOF` + 1 for its
    variance estimate and, for an importance-weight arm (``n_weights`` > 0 after ``pulls`` > 0
    pulls), enough pulls for the :data:`KHAT_MIN_WEIGHTS` weights a Pareto k-hat needs (an AIS arm
    of one chain: 100 pulls), since an unchecked arm gets no weight (step 1).
    """
    need = MIN_CONSISTENCY_DOF + 1
    if n_weights > 0 and pulls > 0:
        per_pull = max(1.0, n_weights / pulls)
        need = max(need, math.ceil(KHAT_MIN_WEIGHTS / per_pull))
    return int(need)


class RunResult:
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
        return np.lexsort((h.column("pull_index")[self._valid], h.column("arm")[self._valid]))

    @cached_property
    def shift(self) -> float:
        """Log of the working scale's unit (0 for linear runs)."""
        obs = self.history.column("obs")[self._valid]
        return float(obs.max()) if self.log_scale and obs.size else 0.0

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
        return combine(obs, arms, len(self.arm_names), method, within, size, self.reliability.excluded,
                       self.settings.get("deterministic"))

    @cached_property
    def consistency(self) -> Heterogeneity:
        """Do the arms agree? Cochran's Q and the random-effects combination (:mod:`pmcbandit.stats.consistency`)
        over the arms with their own variance estimate of at least ``MIN_CONSISTENCY_DOF`` dof (log
        scale for log-scale runs: ``log`` of each arm's mean, delta-method SE).
        """
        c = self.combined
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.sqrt(c.var / c.n)
            y = c.mean
            if self.log_scale:
                y = np.log(c.mean)
                se = se / c.mean
        mask = c.used & c.own & (c.nu >= MIN_CONSISTENCY_DOF) & np.isfinite(y) & np.isfinite(se) & (se > 0)
        return heterogeneity(y, se, mask=mask, nu=c.nu)

    @cached_property
    def interval_status(self) -> str:
        """One of :data:`INTERVAL_STATUS` (module docstring)."""
        c = self.combined
        if not c.estimate == c.estimate:
            return "no_estimate"
        if self.consistency.flagged:
            return "random_effects"
        if self._all_unreliable:
            return "no_reliable_arm"
        if not c.df >= MIN_INTERVAL_DOF:
            return "too_few_observations"
        return "ok"

    @property
    def interval_reliable(self) -> bool:
        """Whether the reported interval is one to print (``"ok"`` or ``"random_effects"``)."""
        return self.interval_status in ("ok", "random_effects")

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
        (:mod:`pmcbandit.stats.combine`), or the random-effects interval when the arms disagree. Check
        :attr:`interval_status` before reading it as an interval.
        """
        h = self._random_effects
        if h is None:
            c = self.combined
            lo, hi = interval(c.estimate, c.se, c.df, level)
            return self._linear(lo), self._linear(hi)
        lo, hi = random_effects_interval(h, level)
        if self.log_scale:
            return self._linear(math.exp(lo)), self._linear(math.exp(hi))
        return float(lo), float(hi)

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
        """Interval for ``log`` of a positive target: the log of the linear interval when its lower
        end is positive, else the log-normal approximation (:func:`pmcbandit.stats.combine.log_interval`);
        the random-effects interval of the logs when the arms of a log-scale run disagree.
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
        ``"zero_variance"`` (all observations identical: no weight, :mod:`pmcbandit.stats.combine`) or
        ``"not_pulled"`` (no valid observation: the budget ended, or every pull failed, before it had one).
        """
        status = np.full(len(self.arm_names), "ok", dtype=object)
        status[self.combined.n == 0] = "not_pulled"
        status[self.combined.suspect] = "zero_variance"
        rel = self.reliability
        status[rel.excluded & rel.unchecked] = "unchecked"
        status[rel.unreliable] = "unreliable"
        status[self.quarantined] = "quarantined"
        return status.astype(str)

    def arm_table(self) -> dict[str, np.ndarray]:
        """Per-arm summary: pulls, faults, mean (working scale), variance V_k of an observation,
        mean cost delta_k, V*delta, combination weight, Pareto k-hat of its importance weights with
        its threshold and weight count, quarantined flag and status.
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
            var_cost=c.var * mean_cost,
            weight=c.weights,
            khat=rel.khat,
            khat_threshold=rel.threshold,
            n_weights=rel.n_weights,
            quarantined=self.quarantined,
            status=self.arm_status(),
        )

    # --- what the user is told (docs/guide/warnings.md) -----------------------------------
    @property
    def notes(self) -> tuple[str, ...]:
        """What was adapted (given by the pool and the run loop: AIS step counts sized for the budget,
        arms left out and why) and what is sound but weaker than it could be (arms given no weight by
        the Pareto :math:`\\hat k` rule while checked arms carry the answer), each once. Logged at INFO
        on the ``pmcbandit`` logger when the door returns; never a warning.
        """
        return tuple(dict.fromkeys((*self._given_notes, *self._weaker_notes())))

    def _weaker_notes(self) -> list[str]:
        out = []
        rel = self.reliability
        bad = np.flatnonzero(rel.unreliable)
        if bad.size and self.interval_status != "no_reliable_arm":
            detail = ", ".join(
                f"{self.arm_names[k]} (k-hat {rel.khat[k]:.2f} > {rel.threshold[k]:.2f} at S = {rel.n_weights[k]})"
                for k in bad
            )
            out.append(f"arms whose importance weights fail the Pareto k-hat check were given no weight and not "
                       f"chosen again (the answer rests on the arms that passed): {detail}")
        unchecked = np.flatnonzero(rel.excluded & rel.unchecked)
        if unchecked.size:
            detail = ", ".join(f"{self.arm_names[k]} (S = {rel.n_weights[k]})" for k in unchecked)
            out.append(f"arms with too few importance weights for a Pareto k-hat were given no weight, as arms whose "
                       f"k-hat passed are combined: {detail}")
        return out

    def warnings(self) -> list[WarningText]:
        """What may make the answer wrong or leaves it without its guarantee, each with the action that
        would fix it (the door issues each once as its :class:`~pmcbandit.exceptions.PmcBanditWarning`
        subclass; :attr:`issued` ones were issued before the run and come first).

        * arms quarantined after faults (their valid observations are still combined) —
          :class:`~pmcbandit.exceptions.UnreliableArmWarning`;
        * every arm failed the Pareto :math:`\\hat k` check — ``UnreliableArmWarning``;
        * the arms disagree (random-effects interval) — :class:`~pmcbandit.exceptions.NoGuaranteeWarning`;
        * no independent check although the pool spans two estimator families (unless said before
          the run) — ``NoGuaranteeWarning``, with the budget that would let the check run, estimated
          from this run's costs;
        * too few observations for an interval — ``NoGuaranteeWarning``.
        """
        out = list(self.issued)
        if self.quarantined.any():
            names = [self.arm_names[k] for k in np.flatnonzero(self.quarantined)]
            out.append(WarningText(
                f"arms quarantined after faults: {names}; their observations before the fault are still combined: "
                "read result.faults, fix or remove these arms and run again", UnreliableArmWarning, "quarantine"))
        suspect = np.flatnonzero(self.combined.suspect)
        if suspect.size:
            out.append(
                WarningText(
                    "arms whose observations are all identical were given no weight: "
                    f"{[self.arm_names[k] for k in suspect]} "
                    "(a stuck estimator's zero variance would claim an exact answer): fix these arms, or declare one "
                    "exact with Arm.deterministic = True",
                    UnreliableArmWarning,
                    "zero_variance",
                )
            )
        status = self.interval_status
        h = self.consistency
        if status == "random_effects":
            names = [self.arm_names[k] for k in h.outliers]
            out.append(
                WarningText(
                    f"the arms disagree beyond their standard errors (Cochran's Q = {h.q:.3g} on {h.df} dof, "
                    f"p = {h.p_value:.2g}); outlying: {names or 'none singled out'}; "
                    "the reported estimate and interval "
                    "are the random-effects ones, which cover the disagreement: inspect the outlying arms "
                    "(result.arm_table(), their k-hat and traces in result.to_inference_data()) and run again without "
                    "the arm that is wrong, or with a longer budget",
                    NoGuaranteeWarning,
                    "disagreement",
                )
            )
        elif self._unchecked_families() and not any(
            getattr(m, "topic", "") == "independent_check" for m in self.issued
        ):
            out.append(
                WarningText(
                    f"no independent check: the arms compared for consistency ({self._families_compared() or 'none'}) "
                    f"do not span two estimator families of the pool ({sorted(set(self._families()) - {None})}), so an "
                    f"error every arm of one family shares would go unseen: {self._check_advice()}",
                    NoGuaranteeWarning,
                    "independent_check",
                )
            )
        if status == "too_few_observations":
            out.append(
                WarningText(
                    f"the standard error rests on too few observations ({self.combined.df:.3g} effective degrees of "
                    f"freedom < {MIN_INTERVAL_DOF}), so no interval is reported: run again with a larger budget "
                    f"(more pulls of the arms that carry the estimate)",
                    NoGuaranteeWarning,
                    "too_few_observations",
                )
            )
        elif status == "no_reliable_arm":
            out.append(
                WarningText(
                    "every arm with observations failed the Pareto k-hat check, so no interval is reported: add an arm "
                    "whose proposal fits the posterior (e.g. AIS with more annealing steps, from a larger budget) "
                    "and run again",
                    UnreliableArmWarning,
                    "no_reliable_arm",
                )
            )
        return out

    def _check_advice(self) -> str:
        """The action that would let the independent check run, estimated from this run's costs: the
        quickest arm of a family left out of the comparison must reach the observations the
        consistency test needs (:func:`check_observations`) within the cross-check share.
        """
        compared = set(self._families_compared())
        families = self._families()
        rel = self.reliability
        h = self.history
        arms, seconds = h.column("arm"), h.column("seconds")
        share = self._check_share
        if not share > 0:
            return "set cross_check_share > 0 (it is 0), so a share of the budget goes to the other family"
        best = None
        for k, family in enumerate(families):
            if family is None or family in compared or self.quarantined[k]:
                continue
            own = np.isfinite(seconds) & (arms == k)
            if not own.any():
                continue
            per_pull = float(np.mean(seconds[own]))
            if best is None or per_pull < best[1]:
                best = (k, per_pull)
        if best is None:
            return "give the run a larger budget, so an arm of the other family is pulled"
        k, per_pull = best
        need = check_observations(rel.n_weights[k], int(np.sum(arms == k)))
        name = self.arm_names[k]
        if rel.unreliable[k]:
            return (
                f"{name} failed the Pareto k-hat check: run with a larger budget, so the pool sizes the "
                "other family's arms with more annealing steps (their counts grow with the budget)"
            )
        if str(self.settings.get("budget", "")).startswith("Pulls"):
            return (
                f"run with a budget of at least {math.ceil(need / share)} pulls so {name} reaches {need} "
                f"observations in the cross-check share {share:g} (estimated from this run)"
            )
        # Two estimates from this run, the larger kept: the arm's pulls grow in proportion to the run's
        # length (1.1: a margin), and its share of the spending must pay for `need` pulls.
        pulls = int(np.sum(arms == k))
        elapsed = float(np.nanmax(h.column("wall"))) if len(h) else math.nan
        seconds_needed = need * per_pull / share
        if pulls > 0 and elapsed > 0:
            seconds_needed = max(seconds_needed, 1.1 * elapsed * need / pulls)
        return (
            f"run with a budget of at least {math.ceil(seconds_needed):d} s so {name} reaches {need} observations "
            f"in the cross-check share {share:g} — estimated from this run's costs ({pulls} pulls of "
            f"{per_pull:.3g} s in {elapsed:.3g} s)"
        )

    @property
    def _check_share(self) -> float:
        share = self.settings.get("cross_check_share")
        return float(CROSS_CHECK_SHARE if share is None else share)

    def _families(self) -> list:
        families = self.settings.get("families")
        return list(families) if families is not None else [None] * len(self.arm_names)

    def _families_compared(self) -> list[str]:
        families = self._families()
        return sorted({families[k] for k in self.consistency.compared if families[k] is not None})

    def _unchecked_families(self) -> bool:
        """The pool has two estimator families or more, but fewer were compared (:mod:`pmcbandit.runtime.guards`)."""
        pool = {f for f in self._families() if f is not None}
        return len(pool) >= 2 and len(self._families_compared()) < 2

    def summary(self) -> str:
        """A readable table (the CLI prints it): the estimate with its SE and 95% interval (or why
        there is none), then per arm its pulls, faults, V·δ (variance of an observation times its
        mean cost, the quantity the bandit minimises, Neufeld et al. 2014, Sec. 5), cost, weight,
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
            f"{'arm':>14} {'pulls':>7} {'faults':>6} {'V·δ':>11} {'cost/pull':>10} {'weight':>7} {'k-hat':>6}  status",
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

    def to_netcdf(self, path) -> str:
        return self.to_inference_data().to_netcdf(str(path))


STATUS_NAMES = STATUS
