"""What a run tells its user: warnings (the answer may be wrong), notes (sound but weaker, or adapted).

:class:`RunMessages` is the part of :class:`pmcbandit.result.RunResult` that turns the run's state into
messages, by the rule of ``docs/guide/warnings.md``: a :class:`~pmcbandit.exceptions.PmcBanditWarning`
subclass, always naming the action that fixes it, when the answer may be wrong or lacks its guarantee;
a note (``result.notes``, ``summary()``, the InferenceData and an INFO record on the ``pmcbandit``
logger) when it is sound but weaker than it could be, or when a setting was adapted. It also holds the
rule for which arms enter the consistency test (:data:`MIN_CONSISTENCY_DOF`: an arm of one observation
per pull enters with :data:`pmcbandit.runtime.guards.CHECK_PULLS` pulls, the count the guards and the
evidence pool size the check arm for).
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from pmcbandit.exceptions import NoGuaranteeWarning, UnreliableArmWarning, WarningText
from pmcbandit.runtime.guards import CHECK_PULLS, CROSS_CHECK_SHARE
from pmcbandit.stats.combine import MIN_WEIGHTED_DOF as MIN_INTERVAL_DOF
from pmcbandit.stats.posterior_check import MISMATCH_SHARE, differ

__all__ = ["RunMessages", "MIN_CONSISTENCY_DOF", "KHAT_MIN_WEIGHTS", "SPREAD_WEIGHT_SHARE"]

#: Fewest degrees of freedom of an arm's variance estimate for it to enter the consistency test: a
#: batched arm's many weights give that at once; an arm of one weight per pull needs 30 pulls, the
#: usual rule of thumb for a mean of skewed observations to be near normal (``CHECK_PULLS``). An
#: importance-weight arm without a Pareto k-hat yet is compared too, though not combined.
MIN_CONSISTENCY_DOF = CHECK_PULLS - 1
#: Fewest importance weights of an arm for a Pareto k-hat (``WeightTails``' ``min_weights``): below, an
#: importance-weight arm is *unchecked* and gets no weight while a checked arm passed (step 1).
KHAT_MIN_WEIGHTS = 100
#: Share of the combination's weight that arms too spread for their number of weights
#: (:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`) must hold together for the warning: an
#: arm whose spread already gives it almost no weight cannot pull the answer down.
SPREAD_WEIGHT_SHARE = 0.1
#: Weights (or pulls) past which the spread warning gives no budget at the run's settings.
SPREAD_HOPELESS = 1e6

#: The coarsest relative standard error (of ``log Z`` for log-scale runs, of ``estimate / |estimate|`` otherwise) at
#: which an arm of another family still counts as a cross-family check (:mod:`pmcbandit.result`, step 4): at 0.1 an
#: error of 0.4 (a factor 1.5 in ``Z``) shows at ``z = 4``; a check coarser than that (a few nested-sampling runs
#: of sd near 1 in ``log Z`` each) agrees with almost any answer and confirms nothing.
CHECK_RESOLUTION = 0.1

#: Fewest pulls from whose SE :meth:`RunMessages.widen_pulls` estimates the pulls a check needs (fewer: it asks
#: for :data:`~pmcbandit.runtime.guards.CHECK_PULLS`).
WIDEN_MIN_PULLS = 10

#: The most pulls :meth:`RunMessages.check_pulls_needed` reports (more than any run makes).
MAX_CHECK_PULLS = 10**15


def _steps_factor(s2: float, n: int) -> float:
    r"""How many times its annealing steps an AIS arm whose log weights have variance ``s2`` needs for ``n`` weights
    to pass the spread rule (:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`: variance at most
    :math:`2\log n`), at least 1: the variance of AIS log weights falls as the steps grow, about as their inverse
    once they are many (Neal 2001, Sec. 4).
    """
    return max(s2 / (2.0 * math.log(max(n, 2))), 1.0)


class RunMessages:
    """Warnings and notes of a :class:`~pmcbandit.result.RunResult` (module docstring)."""

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
            detail = ", ".join(self._failed_text(k) for k in bad)
            out.append(f"arms whose importance weights failed the Pareto k-hat check were given no weight and not "
                       f"chosen again (the answer rests on the arms that passed): {detail}")
        low = self.missed_mass
        if low.low.any():
            detail = ", ".join(f"{self.arm_names[k]} (by {self.arm_names[int(low.witness[k])]}'s weights, log "
                               f"evidence {low.log_evidence[k]:.3g} against {low.threshold:.3g})"
                               for k in np.flatnonzero(low.low))
            out.append("arms whose estimate another arm's importance weights show too low were given no weight: "
                       "each missed part of the posterior that the other reaches (an annealing path through a phase "
                       "transition, a proposal that never draws a region; pmcbandit.stats.missed_mass): " + detail)
        unchecked = np.flatnonzero(self.excluded_mask & rel.unchecked)
        if unchecked.size:
            detail = ", ".join(f"{self.arm_names[k]} (S = {rel.n_weights[k]})" for k in unchecked)
            out.append(f"arms with too few importance weights for a Pareto k-hat were given no weight, as arms whose "
                       f"k-hat passed are combined: {detail}")
        return out

    def _failed_text(self, k: int) -> str:
        """How arm ``k`` failed the Pareto k-hat check: the k-hat and threshold at the weight count where it failed
        (an arm taken out during the run is judged on the weights it had then), and its final k-hat on all its
        weights when that count differs (it may have come back below the threshold).
        """
        rel = self.reliability
        failed = rel.failed[k] if rel.failed is not None else np.full(3, np.nan)
        if np.isnan(failed[0]):  # not recorded (a run read from an earlier file): the final fit
            failed = (rel.khat[k], rel.threshold[k], rel.n_weights[k])
        khat, threshold, n = float(failed[0]), float(failed[1]), int(failed[2])
        text = f"{self.arm_names[k]} (k-hat {khat:.2f} above the threshold {threshold:.2f} at S = {n}"
        if n != int(rel.n_weights[k]) and rel.khat[k] == rel.khat[k]:
            text += f"; {rel.khat[k]:.2f} on all its {int(rel.n_weights[k])} weights"
        return text + ")"

    def warnings(self) -> list[WarningText]:
        """What may make the answer wrong or leaves it without its guarantee, each with the action that
        would fix it (the door issues each once as its :class:`~pmcbandit.exceptions.PmcBanditWarning`
        subclass; :attr:`issued` ones were issued before the run and come first).

        * arms quarantined after faults (their valid observations are still combined) —
          :class:`~pmcbandit.exceptions.UnreliableArmWarning`;
        * every arm failed the Pareto :math:`\\hat k` check — ``UnreliableArmWarning``;
        * arms that carry the answer have too few weights for the spread of their logs
          (:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`) — ``UnreliableArmWarning``, with
          the budget that would give them enough at this run's settings;
        * the arms disagree (random-effects interval) — :class:`~pmcbandit.exceptions.NoGuaranteeWarning`;
        * no independent check: the arms compared (at a relative SE of at most :data:`CHECK_RESOLUTION`) span
          fewer than two of the estimator families the pool
          declares (interval status ``"no_cross_check"``; unless said before the run) — ``NoGuaranteeWarning``,
          with the budget that would let the check run, estimated from this run's costs, or, for a pool of one
          family, the advice to add another;
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
        short = self._spread_arms
        if short.size:
            out.append(WarningText(self._spread_text(short), UnreliableArmWarning, "weight_spread"))
        status = self.interval_status
        if status == "random_effects":
            h = self.consistency
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
        elif self._one_family and not any(getattr(m, "topic", "") == "independent_check" for m in self.issued):
            pool = self._pool_families()
            other = self._other_posterior
            if other:
                est = self.posterior_loglik[0]
                a = self.answer_arm
                seen = ", ".join(f"{self.arm_names[k]} {est[k]:.4g}" for k in other)
                text = (f"no independent check: arms see another posterior than the "
                        f"answer's arm {self.arm_names[a]} (posterior mean of the log likelihood {est[a]:.4g}; "
                        f"{seen}), so their agreement on the evidence, if any, checks nothing: each estimator finds "
                        "a different part of the posterior (a phase transition or modes of very different widths, "
                        "docs/guide/phase_transitions.md); at most one of them can be right, and the answer is "
                        "not to be trusted: give the run a larger budget, so that the nested-sampling arm of the "
                        "default pool, which does not temper, reaches the precision of a check, or add a proposal "
                        "that covers both parts")
            elif len(pool) >= 2:
                text = (f"no independent check: the arms compared for consistency at a relative SE of at most "
                        f"{CHECK_RESOLUTION:g} ({self._families_compared() or 'none'}) do not span two estimator "
                        f"families of the pool "
                        f"({pool}), so an error every arm of one family shares would go unseen: "
                        f"{self._check_advice()}")
            else:
                text = (f"no independent check: every arm of the pool is of the estimator family {pool[0]!r}, so an "
                        "error they all share would go unseen: add arms of another family (estimate_evidence's "
                        "default pool has importance and annealing arms)")
            out.append(WarningText(text, NoGuaranteeWarning, "independent_check"))
        if status == "too_few_observations" and not short.size:  # the spread warning says why
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

    def _spread_text(self, arms) -> str:
        """The warning for arms that carry the answer with too few weights for their spread
        (:attr:`~pmcbandit.stats.psis.ArmReliability.undersampled`), with the budget that would give the
        worst of them the weights it needs at this run's settings, estimated from this run's costs.
        """
        rel = self.reliability
        h = self.history
        parts, factor = [], 1.0
        for k in arms:
            n, s2 = int(rel.n_weights[k]), float(rel.log_w_var[k])
            need = math.exp(min(s2 / 2.0, 700.0))
            factor = max(factor, need / n)
            count = f"about {need:.3g}" if need < SPREAD_HOPELESS else f"over {SPREAD_HOPELESS:.0e}"
            parts.append(f"{self.arm_names[k]} ({n} weights, variance of their logs {s2:.3g}: {count} needed)")
        elapsed, pulls_budget = self._elapsed, self._pulls_budget
        grow = max(_steps_factor(float(rel.log_w_var[k]), int(rel.n_weights[k])) for k in arms)
        steps = (f"give annealing arms about {grow:.3g}x their annealing steps at this number of weights (the "
                 "variance of AIS log weights falls about as the inverse of the steps)")
        if not pulls_budget and elapsed > 0:
            steps += (f"; estimate_evidence's pool sizes its AIS arms' steps in proportion to a time budget (up to "
                      f"the counts asked for): there, about {grow:.3g}x the budget (about {elapsed * grow:.3g} s of "
                      "pulls)")
        if factor * len(h) >= SPREAD_HOPELESS:
            action = f"no practical budget gives them enough weights at these settings: {steps}"
        elif pulls_budget:
            action = f"run with a budget of at least {math.ceil(len(h) * factor):d} pulls at these settings, or {steps}"
        else:
            setup, given = self._counted_setup
            counted = "" if setup is None else f" ({self._setup_text(setup, given)})"
            action = (f"run with a larger budget, about {(setup or 0.0) + elapsed * factor:.3g} s at these settings"
                      f"{counted}, estimated from this run's costs, or {steps}")
        withheld = ", so no interval is reported" if self.interval_status == "too_few_observations" else ""
        return (
            "the answer rests on arms whose log weights are too spread for their number, so the estimate is "
            f"most likely too low by more than its standard error{withheld} (an importance average needs about "
            f"exp(s²/2) weights when their logs have variance s²): {', '.join(parts)}: {action}"
        )

    def _check_advice(self) -> str:
        """The action that would let the independent check run, estimated from this run's costs: the arm of a
        family left out of the comparison whose check costs least (the pulls it needs, :meth:`check_pulls_needed`,
        times their measured duration) must reach them within the cross-check share.
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
        needed = self.check_pulls_needed()
        for k, family in enumerate(families):
            if family is None or family in compared or self.quarantined[k] or self.missed_mass.low[k]:
                continue
            own = np.isfinite(seconds) & (arms == k)
            if not own.any():
                continue
            per_pull = float(np.mean(seconds[own]))
            # The arm whose check costs least: its pulls needed times their duration.
            if best is None or needed[k] * per_pull < needed[best[0]] * best[1]:
                best = (k, per_pull)
        if best is None:
            return "give the run a larger budget, so an arm of the other family is pulled"
        k, per_pull = best
        need = int(needed[k])
        name = self.arm_names[k]
        if rel.unreliable[k] and families[k] == "importance":
            return (
                "add an importance arm whose proposal fits this posterior "
                "(estimate_evidence(model, arms=[*evidence_arms(model), your_arm])), so a second family checks the "
                f"answer: {name} failed the Pareto k-hat check, and more draws from its proposal do not help"
            )
        if rel.unreliable[k]:
            return (
                f"{name} failed the Pareto k-hat check: run with a larger budget, so the pool sizes the "
                "other family's arms with more annealing steps (their counts grow with the budget)"
            )
        if rel.undersampled[k]:
            return self._spread_check_advice(k)
        if self._pulls_budget:
            return (
                f"run with a budget of at least {math.ceil(need / share)} pulls so {name} reaches {need} "
                f"observations in the cross-check share {share:g} (estimated from this run)"
            )
        # Two estimates from this run, the larger kept: the arm's pulls grow in proportion to the run's
        # length (1.1: a margin), and its share of the spending must pay for `need` pulls.
        pulls = int(np.sum(arms == k))
        elapsed = self._elapsed
        seconds_needed = need * per_pull / share
        if pulls > 0 and elapsed > 0:
            seconds_needed = max(seconds_needed, 1.1 * elapsed * need / pulls)
        costs = f"estimated from this run's costs ({pulls} pulls of {per_pull:.3g} s in {elapsed:.3g} s)"
        setup, given = self._counted_setup
        if setup is None:
            return (f"run with a budget of at least {math.ceil(seconds_needed):d} s so {name} reaches {need} "
                    f"observations in the cross-check share {share:g} — {costs}")
        # Never less than the budget the run had: set-up, not the budget, left the pulls too little.
        advised = max(math.ceil(setup + seconds_needed), math.floor(given) + 1)
        return (
            f"run with a budget of at least {advised:d} s so {name} reaches {need} "
            f"observations in the cross-check share {share:g}: {self._setup_text(setup, given)}, and the pulls need "
            f"about {seconds_needed:.3g} s — {costs}"
        )

    def _relative_se(self) -> np.ndarray:
        """Each arm's SE relative to its estimate (of ``log Z`` for log-scale runs; NaN for arms without one)."""
        c = self.combined
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.sqrt(c.var / c.n)
            return se / c.mean if self.log_scale else se / abs(c.estimate)

    def check_pulls_needed(self, trusted_from: int = 1) -> np.ndarray:
        """Valid pulls each arm needs to count as a cross-family check (:mod:`pmcbandit.result`, step 4):
        :data:`~pmcbandit.runtime.guards.CHECK_PULLS`, and enough for its relative SE to reach
        :data:`CHECK_RESOLUTION` (the SE falling as one over the root of its pulls), estimated from the SE of an arm
        with at least ``trusted_from`` pulls (fewer: :data:`~pmcbandit.runtime.guards.CHECK_PULLS`).
        """
        pulls = np.bincount(np.asarray(self.history.column("arm"), dtype=np.int64), minlength=len(self.arm_names))
        rel = self._relative_se()
        need = np.full(len(self.arm_names), CHECK_PULLS, dtype=np.int64)
        coarse = (pulls >= max(trusted_from, 1)) & np.isfinite(rel) & (rel > CHECK_RESOLUTION)
        with np.errstate(over="ignore"):  # an arm of SE 1e10 needs more pulls than any run makes: capped
            wanted = np.minimum(np.ceil(pulls[coarse] * (rel[coarse] / CHECK_RESOLUTION) ** 2), MAX_CHECK_PULLS)
        need[coarse] = np.maximum(CHECK_PULLS, wanted)
        return need

    def widen_pulls(self) -> np.ndarray | None:
        """Valid pulls each arm needs to count as a cross-family check (:meth:`check_pulls_needed`), 0 for an arm
        that cannot be one (of the answer's family or of none, out of play, or seeing another posterior than the
        answer's); ``None`` when no number of pulls gives a check (an arm that is no candidate sees another
        posterior). What the guards widen the check's share by under a time budget
        (:meth:`~pmcbandit.runtime.guards.Guards.widen_check`).
        """
        other = set(self._other_posterior)
        if other - set(self._check_candidates):
            return None
        families = self._families()
        a = self.answer_arm
        # An SE from a few pulls does not say how many a check needs: such an arm is asked for CHECK_PULLS, and
        # judged again once it has them.
        need = self.check_pulls_needed(trusted_from=WIDEN_MIN_PULLS)
        out = (np.asarray(self.quarantined, dtype=bool) | np.asarray(self.reliability.unreliable, dtype=bool)
               | self.missed_mass.low)
        for k, family in enumerate(families):
            if family is None or family == families[a] or k in other or out[k]:
                need[k] = 0
        return need

    def _spread_check_advice(self, k: int) -> str:
        r"""The action for a check arm left out of the consistency test as too spread for its weights: more
        annealing steps. The variance of AIS log weights falls as the steps grow, about as their inverse once
        they are many (Neal 2001, Sec. 4), and the pool sizes the check arm's steps in proportion to the
        budget, so the budget must grow by the factor that brings the variance to :math:`2\log n` for
        :math:`n` = :data:`~pmcbandit.runtime.guards.CHECK_PULLS` weights (the spread rule's bound at that
        count), and at least by the factor that brings its weights to that count.
        """
        s2 = float(self.reliability.log_w_var[k])
        n = int(self.reliability.n_weights[k])
        factor = max(_steps_factor(s2, CHECK_PULLS), CHECK_PULLS / max(n, 1))
        elapsed = self._elapsed
        what = (f"{self.arm_names[k]} was left out of the comparison: its log weights are too spread for their "
                f"number (variance {s2:.3g} over {n} weights)")
        if self._pulls_budget or not elapsed > 0:
            return (f"{what}: give it weights about {factor:.3g}x less spread in their logs (for AIS, as many more "
                    "annealing steps)")
        return (f"{what}: run with about {factor:.3g}x the budget, so the pool sizes it with that many more annealing "
                f"steps (about {elapsed * factor:.3g} s of pulls, estimated from this run's costs)")

    @property
    def _counted_setup(self) -> tuple[float | None, float | None]:
        """``(set-up seconds, the time budget in seconds)`` when the budget counted the door's set-up
        (``estimate_evidence`` building its pool under a time budget), else ``(None, None)``.
        """
        setup, given = self.settings.get("setup_seconds"), self.settings.get("budget_seconds")
        if setup is None or given is None:
            return None, None
        return float(setup), float(given)

    def _setup_text(self, setup: float, given: float) -> str:
        """What the set-up took of a time budget, for advice in seconds: the pulls had only what it left. A first
        call in a fresh environment compiles the model's density and the run's numba kernels, which later calls
        take from the caches, so its set-up is the longest.
        """
        return (f"set-up took {setup:.3g} s of the {given:g} s budget, leaving the pulls {self._elapsed:.3g} s (a "
                "first call in a fresh environment also compiles the model's density and the run's kernels, which "
                "later calls load from the cache)")

    @property
    def _elapsed(self) -> float:
        """Wall seconds of the run so far (its history's last ``wall``; NaN before the first pull)."""
        h = self.history
        return float(np.nanmax(h.column("wall"))) if len(h) else math.nan

    @property
    def _pulls_budget(self) -> bool:
        """Whether the run's budget counts pulls (its advice is then in pulls, not seconds)."""
        return str(self.settings.get("budget", "")).startswith("Pulls")

    @property
    def _check_share(self) -> float:
        share = self.settings.get("cross_check_share")
        return float(CROSS_CHECK_SHARE if share is None else share)

    def _families(self) -> list:
        families = self.settings.get("families")
        return list(families) if families is not None else [None] * len(self.arm_names)

    def _families_compared(self) -> list[str]:
        """The families of the arms compared for consistency whose own relative SE is at most
        :data:`CHECK_RESOLUTION` (a coarser arm agrees with almost any answer).
        """
        other = set(self._other_posterior)
        candidates = self._check_candidates
        if other - set(candidates):
            return []  # a region the answer's posterior misses carries a share of the evidence: nothing checks it
        families = self._families()
        return sorted({families[k] for k in candidates if k not in other})

    @cached_property
    def _check_candidates(self) -> list[int]:
        """The arms compared for consistency that declare a family and whose relative SE is at most
        :data:`CHECK_RESOLUTION`.
        """
        families = self._families()
        rel = self._relative_se()
        return [int(k) for k in self._agreement.compared if families[k] is not None and rel[k] <= CHECK_RESOLUTION]

    @property
    def answer_arm(self) -> int:
        """The arm with the largest weight in the combination: the one the answer rests on."""
        return int(np.argmax(np.nan_to_num(np.asarray(self.combined.weights, dtype=float), nan=-1.0)))

    @cached_property
    def _other_posterior(self) -> list[int]:
        """Arms whose weighted points stand for another posterior than the answer's arm's (their posterior means of
        the log likelihood differ, :func:`~pmcbandit.stats.posterior_check.differ`): check candidates, which then
        check nothing, and any other arm whose own estimate of the evidence is at least
        :data:`~pmcbandit.stats.posterior_check.MISMATCH_SHARE` of the answer's arm's. Such an arm found points at
        likelihoods the answer's posterior all but never reaches (many of its standard deviations away), in a region
        that by the arm's own account (a lower bound in expectation where its weights are heavy-tailed, as its
        failed k-hat says) holds a share of the evidence: the answer misses that region, and no arm that agrees with
        it can say otherwise.
        """
        post = np.column_stack(self.posterior_loglik)
        a = self.answer_arm
        mean = np.asarray(self.combined.mean, dtype=float)
        candidates = set(self._check_candidates)
        share = np.divide(mean, mean[a], out=np.zeros_like(mean), where=mean[a] > 0)
        return [k for k in range(len(self.arm_names))
                if k != a and (k in candidates or share[k] >= MISMATCH_SHARE) and differ(post[a], post[k])]

    def _pool_families(self) -> list[str]:
        """The estimator families the pool's arms declare (``None`` left out)."""
        return sorted({f for f in self._families() if f is not None})

    @property
    def _one_family(self) -> bool:
        """Some arm declares an estimator family, and the arms compared for consistency span fewer than two
        (``"no_cross_check"``, step 4 of :mod:`pmcbandit.result`).
        """
        return bool(self._pool_families()) and len(self._families_compared()) < 2
