"""The learner of a comparison run: pairs of pulls, the efficiency rule, the validity gate.

It plugs into the one run loop (:mod:`pmcbandit.runtime.loop`) like the learners of
:mod:`pmcbandit.policies.learner`: a decision is a pair of pulls of one arm (two LUCB arms once the
initial round is over, :mod:`pmcbandit.compare.efficiency`); a closed decision gives every arm
whose two pulls came back valid one variance observation; ``done`` holds when the rule stops on
the arms still in play, after the validity gate (:mod:`pmcbandit.compare.gate`) had its say, and
no arm in play that reports its chains is still short of the pulls the convergence rules need to
test it (:data:`~pmcbandit.compare.gate.MIN_PULLS`). Until then the decisions go to such an arm: when
the others are excluded, the one left would otherwise be "what is left" without ever having been
tested, and a backend that does not converge must not win that way. An arm still short of them when the
budget ends is not ranked (``"untested"``).
Observations of log-scale arms are taken as they are (logs), as the engine records them.
"""

from __future__ import annotations

import math

import numpy as np

from pmcbandit.compare import efficiency
from pmcbandit.compare.gate import MIN_PULLS, GateResult, arm_estimates, convergence, gate
from pmcbandit.base import Selection

__all__ = ["ComparisonLearner"]


class ComparisonLearner:
    """See the module docstring.

    Parameters
    ----------
    rule : EfficiencyRule
    log_scale : bool
        Whether the arms' observations are logs (the gate compares log-mean-exp estimates).
    reference : float or None
        Known value of the common quantity (same scale as the observations), for the gate.
    gate_alpha : float
        Level of the gate's tests.
    arm_names : tuple of str
        For :meth:`progress_text`.
    components : tuple of int
        Positions, among the run's declared diagnostics, of the components of the arms' vector
        estimates (:attr:`~pmcbandit.arms.base.Arm.components`); ``()`` for scalar estimates.
    chains : (int, int) or None
        Positions, among the run's declared diagnostics, of ``divergent_fraction`` and
        ``chain_variance`` (arms that report their chains, :func:`~pmcbandit.compare.gate.convergence`);
        ``None`` when no arm declares them.
    """

    stops = True
    halts_on_quarantine = False  # a quarantined arm is simply not ranked
    replays_exactly = True  # the rule reads no clock
    pinned = None
    info_replayable = True
    pulls_per_decision = 2

    def __init__(self, rule: efficiency.EfficiencyRule, log_scale: bool, reference: float | None, gate_alpha: float,
                 arm_names: tuple = (), components: tuple[int, ...] = (), chains: tuple[int, int] | None = None):
        self.rule = rule
        self.chains = chains
        self._chain_stats: list[tuple[float, float]] = []
        self._reported = np.zeros(rule.n_arms, dtype=np.int64)  # per arm, the pulls that reported both chain stats
        self.components = tuple(components)
        self.arm_names = tuple(arm_names) or tuple(f"arm {i}" for i in range(rule.n_arms))
        self.n_arms = rule.n_arms
        self.log_scale = log_scale
        self.reference = reference
        self.gate_alpha = gate_alpha
        self.algorithm = efficiency.efficiency_lucb(rule)
        self.state = self.algorithm.init()
        self.excluded = np.zeros(self.n_arms, dtype=bool)
        self.reasons = [""] * self.n_arms
        self.z = np.full(self.n_arms, np.nan)
        self.gate_checks = 0
        self._values: list[float] = []
        self._arms: list[int] = []
        self.blocked = np.zeros(self.n_arms, dtype=bool)  # the engine's out-of-play arms, as last seen
        self._gated_at = -1  # observations at the last gate check (same data, same verdict)

    def in_play(self) -> np.ndarray:
        """Arms still ranked: not blocked by the engine (as last seen), not excluded by the gate."""
        return ~(self.blocked | self.excluded)

    def settle(self, blocked: np.ndarray) -> GateResult:
        """The final verdict: the engine's out-of-play arms at the end of the run, and the gate on
        everything the run saw.
        """
        self.blocked = np.asarray(blocked, dtype=bool).copy()
        self.check_gate()
        for i in np.flatnonzero(self.untested()):  # the budget ended before the convergence rules could test them
            self.excluded[i] = True
            self.reasons[i] = (f"untested: {int(self._reported[i])} of its pulls reported their chains, fewer than "
                               f"the {MIN_PULLS} the convergence rules need; give the run a larger budget")
        return GateResult(self.excluded.copy(), tuple(self.reasons), self.z.copy())

    def untested(self) -> np.ndarray:
        """Arms in play that report their chains (a pull with both diagnostics) with fewer such pulls than the
        convergence rules need (:data:`~pmcbandit.compare.gate.MIN_PULLS`).
        """
        return self.in_play() & (self._reported > 0) & (self._reported < MIN_PULLS)

    def choose(self, rng: np.random.Generator, eligible: np.ndarray) -> Selection:
        pending = self.untested() & eligible
        if pending.any() and self.algorithm.stop(self.state, self.in_play()):
            return Selection.one(int(np.flatnonzero(pending)[0]), 2)  # module docstring: tested before the stop
        return self.algorithm.select(rng, self.state, eligible & ~self.excluded)

    def forced(self, arm: int) -> Selection:
        return Selection.one(arm, 2)

    def opened(self, selection: Selection) -> None:
        pass

    def close(self, rng: np.random.Generator, decision) -> float:
        """One variance observation per arm of the decision whose two pulls are both valid; no reward."""
        self._values += decision.values
        self._arms += decision.value_arms
        if self.chains is not None:
            stats = [(float(d[self.chains[0]]), float(d[self.chains[1]])) for d in decision.value_diagnostics]
            self._chain_stats += stats
            for arm, (frac, var) in zip(decision.value_arms, stats):
                self._reported[arm] += math.isfinite(frac) and math.isfinite(var)
        got = np.asarray(decision.value_arms, dtype=np.int64)
        state = self.state
        for arm in decision.arms:
            mine = np.flatnonzero(got == arm)
            if mine.size == 2:
                (i, j) = mine
                x1, x2 = decision.values[i], decision.values[j]
                if self.components:
                    x1, x2 = (np.take(decision.value_diagnostics[m], self.components) for m in (i, j))
                state = self.algorithm.update(state, arm, x1, x2, decision.costs[i], decision.costs[j])
        self.state = state
        return math.nan

    def check_gate(self) -> GateResult:
        """Run the validity gate on the arms in play (once per new data) and exclude what it rejects."""
        if self._gated_at != len(self._values):
            self._gated_at = len(self._values)
            self.gate_checks += 1
            # Chains that did not converge leave first, so they take no part in the agreement test.
            if self.chains is not None and self._chain_stats:
                frac, var = np.asarray(self._chain_stats, dtype=np.float64).T
                flags = convergence(self._values, self._arms, frac, var, self.n_arms, self.in_play())
                for i in np.flatnonzero(flags.excluded):
                    self.excluded[i] = True
                    self.reasons[i] = flags.reasons[i]
            est = arm_estimates(self._values, self._arms, self.n_arms, self.log_scale)
            verdict = gate(est, self.in_play(), self.reference, self.gate_alpha)
            tested = np.isfinite(verdict.z)
            self.z[tested] = verdict.z[tested]
            for i in np.flatnonzero(verdict.excluded):
                self.excluded[i] = True
                self.reasons[i] = verdict.reasons[i]
        return GateResult(self.excluded.copy(), tuple(self.reasons), self.z.copy())

    def done(self, blocked: np.ndarray) -> bool:
        """The rule stops on the arms in play, and still does after the gate checked them."""
        self.blocked = blocked
        if not self.algorithm.stop(self.state, self.in_play()):
            return False
        self.check_gate()
        return self.algorithm.stop(self.state, self.in_play()) and not self.untested().any()

    def progress_text(self) -> str:
        """The leader and the interval of its efficiency ratio to the runner-up, for the progress bar."""
        r = efficiency.ratio_to_runner_up(self.rule, self.state, self.in_play())
        if r is None:
            return "initial pairs"
        a, b, lo, hi = r
        return f"leader {self.arm_names[a]}: x[{lo:.3g}, {hi:.3g}] vs {self.arm_names[b]}"

    def mean_loss(self) -> np.ndarray:
        return np.full(self.n_arms, np.nan)

