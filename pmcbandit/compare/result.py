"""The result of :func:`pmcbandit.compare_samplers`: the ranking, its intervals, the excluded arms."""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import numpy as np

from pmcbandit.base import declare_result
from pmcbandit.compare import efficiency
from pmcbandit.compare.amortise import Amortisation, amortisation
from pmcbandit.compare.gate import chain_readings
from pmcbandit.exceptions import NoGuaranteeWarning, UnreliableArmWarning, WarningText
from pmcbandit.runtime.history import History

__all__ = ["ComparisonResult", "EfficiencyRatio"]


class EfficiencyRatio(NamedTuple):
    """``numerator`` is ``estimate`` times as efficient as ``denominator``, within [``lower``, ``upper``]
    (simultaneous with every other interval of the result).
    """

    numerator: str
    denominator: str
    estimate: float
    lower: float
    upper: float


@declare_result("comparison")
class ComparisonResult:
    """What :func:`pmcbandit.compare_samplers` returns.

    Efficiency is :math:`1/(\\sigma^2 \\bar c)`: the inverse variance of one pull's estimate per unit
    of cost (:mod:`pmcbandit.compare.efficiency`). Every interval of the result (per arm, and every
    pairwise ratio) holds simultaneously, at every time, with probability at least ``1 - delta``
    — exactly when ``guarantee == "delta-correct"`` (bounded estimates, declared costs),
    approximately for large pair counts when ``"asymptotic"``. ``selected`` carries that guarantee
    only when ``stopped_by == "confidence"``.

    Parameters
    ----------
    arm_names : list of str
    history : History
    settings : dict
        The run's settings with ``stopped_by`` and ``guarantee``.
    rule : EfficiencyRule
    state : EfficiencyState
    in_play : ndarray of bool
        Arms ranked at the end (not quarantined, unreliable or excluded by the gate).
    status : ndarray of str
        Per arm: ``"ranked"``, ``"excluded"`` (validity gate), ``"unreliable"`` (Pareto k-hat) or
        ``"quarantined"`` (faults).
    reasons : sequence of str
        Why each arm is not ranked (``""`` for ranked arms).
    z : ndarray
        Each arm's standardised deviation in the gate's last test (NaN if not tested).
    """

    log_scale = False  # the history's observations are shown as they are (log estimates for log-scale arms)

    def __init__(self, arm_names, history: History, settings: dict, rule, state, in_play, status, reasons, z):
        self.arm_names = list(arm_names)
        self.history = history
        self.settings = dict(settings)
        self.rule = rule
        self.state = state
        self.in_play = np.asarray(in_play, dtype=bool)
        self.status = np.asarray(status, dtype=str)
        self.reasons = list(reasons)
        self.z = np.asarray(z, dtype=np.float64)

    # --- the answer ------------------------------------------------------------------
    @cached_property
    def selected_indices(self) -> np.ndarray:
        if not self.in_play.any():  # no arm left: nothing is selected, as in identify
            return np.zeros(0, dtype=np.int64)
        chosen = np.asarray(efficiency.recommend(self.rule, self.state, self.in_play), dtype=np.int64)
        if self.stopped_by == "no_arm":  # what is left, but never an arm without a measurement
            chosen = chosen[self.state.pairs[chosen] > 0]
        return chosen

    @property
    def selected(self) -> list[str]:
        """Names of the ``k`` most efficient arms among those ranked, best first."""
        return [self.arm_names[i] for i in self.selected_indices]

    @property
    def stopped_by(self) -> str:
        """``"confidence"`` (the intervals separated the top ``k``), ``"budget"``, ``"callback"`` or
        ``"no_arm"`` (at most ``k`` arms were left to rank).
        """
        return str(self.settings.get("stopped_by"))

    @property
    def guarantee(self) -> str:
        """``"delta-correct"`` or ``"asymptotic"`` (class docstring)."""
        return str(self.settings.get("guarantee"))

    @property
    def confident(self) -> bool:
        return self.stopped_by == "confidence"

    @property
    def proven_factor(self) -> float:
        """How sure the selection is, whatever stopped the run: every other ranked arm is proven at most this
        many times as efficient as each selected arm, by the same simultaneous intervals
        (:func:`~pmcbandit.compare.efficiency.proven_factor`); at most ``1 + epsilon`` after a confident stop,
        larger after a budget or callback stop that came before the intervals separated; ``inf`` while an
        arm's bound is still open; NaN when no other arm is ranked (nor, then, any selection to compare).
        """
        return efficiency.proven_factor(self.rule, self.state, self.in_play)

    @property
    def unresolved(self) -> list[str]:
        """Ranked arms whose interval still straddles the boundary of the top ``k`` (empty after a
        confident stop): the arms the run could not separate.
        """
        return [self.arm_names[i] for i in efficiency.unresolved(self.rule, self.state, self.in_play)]

    @property
    def tied(self) -> list[str]:
        """Ranked arms outside ``selected`` not proven less efficient than the selected arms' weakest,
        but proven at most ``1 + epsilon`` times as efficient as it (the upper end of their ratio
        interval, :meth:`ratio`, is at most ``1 + epsilon``): a tie at tolerance ``epsilon``,
        :mod:`pmcbandit.compare.efficiency`. Empty when ``epsilon`` is 0.
        """
        return [self.arm_names[i] for i in efficiency.tied(self.rule, self.state, self.in_play)]

    @property
    def cost(self) -> float:
        """Total cost of the pulls behind the statistics (declared costs when given, else reported)."""
        if self.rule.costs is not None:
            return float(np.dot(self.state.pulls, np.asarray(self.rule.costs, dtype=np.float64)))
        return float(self.state.c_sum.sum())

    @property
    def compile_seconds(self) -> np.ndarray:
        """Each arm's one-off compile seconds, measured once before the run (NaN: the arm reports none)."""
        values = self.settings.get("compile_seconds") or (None,) * len(self.arm_names)
        return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)

    def amortisation(self) -> Amortisation | None:
        """Which arm is fastest for one run of the model, compile included, and from how many runs on
        the selection is (:mod:`pmcbandit.compare.amortise`); ``None`` without a selection or when a
        ranked arm has no compile time or no efficiency yet.
        """
        if self.selected_indices.size == 0 or self.cost_unit_is_count:
            return None
        s = int(self.selected_indices[0])
        c, c_lo, _ = _containing(*efficiency.cost_bounds(self.rule, self.state))
        p, lo, hi = self._log_eff
        lower = c_lo[s] if np.isfinite(c_lo[s]) and c_lo[s] > 0 else c[s]
        return amortisation(p, lo, hi, c[s], lower, self.compile_seconds, s, self.in_play)

    @property
    def cost_unit_is_count(self) -> bool:
        """Whether the pulls' costs are counts (declared, or a count unit), not seconds comparable with
        compile seconds.
        """
        return self.rule.costs is not None or any(
            u not in (None, "cpu_seconds") for u in self.settings.get("cost_units", ()) or ())

    @property
    def excluded(self) -> dict[str, str]:
        """Arms not ranked, with the reason."""
        return {self.arm_names[i]: self.reasons[i] for i in np.flatnonzero(~self.in_play)}

    # --- per-arm figures -----------------------------------------------------------
    @cached_property
    def _log_eff(self):
        return efficiency.log_efficiency(self.rule, self.state)

    @property
    def efficiency(self) -> np.ndarray:
        """Point estimate :math:`1/(\\bar V \\bar c)` per arm (NaN before its first pair)."""
        return np.exp(self._log_eff[0])

    @property
    def efficiency_lower(self) -> np.ndarray:
        return np.exp(_containing(*self._log_eff)[1])

    @property
    def efficiency_upper(self) -> np.ndarray:
        return np.exp(_containing(*self._log_eff)[2])

    @property
    def pairs(self) -> np.ndarray:
        """Valid pairs (variance observations) per arm."""
        return self.state.pairs.copy()

    @property
    def samples(self) -> int:
        """Valid pulls that entered the efficiency statistics (twice the pairs)."""
        return int(2 * self.state.pairs.sum())

    def ratio(self, numerator: str, denominator: str) -> EfficiencyRatio:
        """How many times as efficient ``numerator`` is as ``denominator``, with its interval."""
        i, j = self._index(numerator, "numerator"), self._index(denominator, "denominator")
        p, lo, hi = self._log_eff
        return EfficiencyRatio(numerator, denominator, float(np.exp(p[i] - p[j])), float(np.exp(lo[i] - hi[j])),
                               float(np.exp(hi[i] - lo[j])))

    def ratios(self) -> list[EfficiencyRatio]:
        """Every ordered pair of ranked arms, the more efficient (by point estimate) as numerator."""
        p = self._log_eff[0]
        idx = [i for i in np.argsort(-np.where(np.isnan(p), -np.inf, p), kind="stable") if self.in_play[i]]
        return [self.ratio(self.arm_names[a], self.arm_names[b]) for n, a in enumerate(idx) for b in idx[n + 1:]]

    def _index(self, name: str, parameter: str) -> int:
        if name not in self.arm_names:
            raise ValueError(f"The '{parameter}' parameter of ratio must be one of {self.arm_names!r}. "
                             f"Got {name!r} instead.")
        return self.arm_names.index(name)

    @property
    def table(self):
        """:meth:`arm_table` as a fresh ``pandas.DataFrame``, one row per arm, indexed by arm name."""
        import pandas as pd

        return pd.DataFrame(self.arm_table()).set_index("arm")

    @cached_property
    def chains(self) -> tuple[np.ndarray, np.ndarray]:
        """Per arm, over its valid pulls that report their chains (the NUTS backends of
        :func:`~pmcbandit.arms.samplers.sampler_arms`): the share of kept iterations that diverged and the
        potential scale reduction across the pulls (:func:`pmcbandit.compare.gate.chain_readings`). These are the
        point readings that the gate's tests flag an arm by only when its pulls show them above the limits; NaN
        where an arm reports none.
        """
        n = len(self.arm_names)
        h = self.history
        if not {"divergent_fraction", "chain_variance"} <= set(h.diagnostics):
            return np.full(n, np.nan), np.full(n, np.nan)
        ok = h.column("status") == 0
        return chain_readings(h.column("obs")[ok], h.column("arm")[ok].astype(np.int64),
                              h.column("divergent_fraction")[ok], h.column("chain_variance")[ok], n)

    def arm_table(self) -> dict[str, np.ndarray]:
        """Per arm: pairs, variance per pull and cost per pull (point and bounds), efficiency and its
        bounds, compile seconds (NaN: none reported), the divergent share and R-hat of its chains (:attr:`chains`;
        NaN: none reported), selected, status.
        """
        v, v_lo, v_hi = _containing(*efficiency.variance_bounds(self.rule, self.state))
        c, c_lo, c_hi = _containing(*efficiency.cost_bounds(self.rule, self.state))
        chosen = np.zeros(len(self.arm_names), dtype=bool)
        chosen[self.selected_indices] = True
        return dict(arm=np.asarray(self.arm_names), pairs=self.pairs, variance=v, variance_lower=v_lo,
                    variance_upper=v_hi, cost=c, cost_lower=c_lo, cost_upper=c_hi, efficiency=self.efficiency,
                    efficiency_lower=self.efficiency_lower, efficiency_upper=self.efficiency_upper,
                    compile_seconds=self.compile_seconds, divergent_share=self.chains[0], rhat=self.chains[1],
                    selected=chosen, status=self.status, z=self.z)

    # --- reporting -------------------------------------------------------------------
    def warnings(self) -> list[WarningText]:
        """What leaves the ranking without its guarantee, each with the action that fixes it (the run
        issues each once as its class; ``docs/guide/warnings.md``): nothing left to rank, a stop
        before the intervals separated, asymptotic intervals (:class:`~pmcbandit.exceptions.NoGuaranteeWarning`),
        arms quarantined after faults (:class:`~pmcbandit.exceptions.UnreliableArmWarning`).
        """
        out = []
        k = self.settings.get("k")
        if self.stopped_by == "no_arm":
            out.append(WarningText(
                f"at most k = {k} arms were left to rank (the others are excluded, unreliable or quarantined): "
                f"{self.selected} is what is left, not a ranking: read result.excluded, fix or replace those arms, "
                "or ask for a smaller k", NoGuaranteeWarning, "no_arm"))
        elif not self.confident:
            f = self.proven_factor
            proven = (f"every other ranked arm is proven at most {f:.3g}x as efficient (result.proven_factor)"
                      if np.isfinite(f) else "no other arm is ranked" if np.isnan(f) else "no factor is proven yet")
            out.append(WarningText(
                f"the run ended by {self.stopped_by!r} before the intervals separated the top {k}: {self.selected} "
                f"is a best guess without the 1 - delta guarantee at a factor {1 + self.rule.epsilon:g}, and "
                f"{proven}; not separated: {self.unresolved}: run again with a "
                f"larger budget, or with an epsilon above {self.rule.epsilon:g} if efficiencies within a factor "
                f"{1 + self.rule.epsilon:g} of each other need not be told apart",
                NoGuaranteeWarning, "no_guarantee"))
        quarantined = [self.arm_names[i] for i in np.flatnonzero(self.status == "quarantined")]
        if quarantined:
            out.append(WarningText(f"arms quarantined after faults, not ranked: {quarantined}: read result.faults, "
                                   "fix or remove these arms and run again", UnreliableArmWarning, "quarantine"))
        if self.guarantee == "asymptotic":
            out.append(WarningText(
                "the intervals are asymptotic confidence sequences (no bounds on the estimates or no declared "
                "costs): their coverage holds as the pair counts grow: pass bounds=(a, b) and costs=... to "
                "compare_samplers for the exact 1 - delta guarantee", NoGuaranteeWarning, "asymptotic"))
        return out

    @property
    def notes(self) -> tuple[str, ...]:
        """Arms left out of the ranking with the reason (validity gate, Pareto k-hat): the ranking of the
        others keeps its guarantee, so these are notes, logged at INFO on the ``pmcbandit`` logger,
        not warnings (quarantined arms are warned about).
        """
        return tuple(f"arm {name!r} not ranked: {why}" for name, why in self.excluded.items()
                     if self.status[self.arm_names.index(name)] != "quarantined")

    def summary(self) -> str:
        s = self.settings
        head = (f"most efficient (top {s.get('k')}, delta={s.get('delta')}, {self.guarantee}): {self.selected}; "
                f"stopped by {self.stopped_by} after {len(self.history)} pulls")
        factor = self.proven_factor
        if np.isfinite(factor):
            head += f"; every other ranked arm proven at most {factor:.3g}x as efficient"
        if self.tied:
            head += (f"; tied (not separated, proven at most {1 + self.rule.epsilon:g}x as efficient as the "
                     f"selection): {self.tied}")
        t = self.arm_table()
        compiled = np.isfinite(t["compile_seconds"]).any()
        chains = np.isfinite(t["divergent_share"]).any()
        lines = [head, f"{'arm':>18} {'pairs':>6} {'variance':>10} {'cost':>10} {'efficiency':>10} "
                       f"{'[lower':>10} {'upper]':>10}" + (f" {'compile s':>10}" if compiled else "")
                 + (f" {'diverged':>9} {'R-hat':>7}" if chains else "") + "  status"]
        for i in np.argsort(-np.nan_to_num(t["efficiency"], nan=-1.0), kind="stable"):
            mark = " *" if t["selected"][i] else ""
            lines.append(f"{t['arm'][i]:>18} {t['pairs'][i]:>6d} {t['variance'][i]:>10.3g} {t['cost'][i]:>10.3g} "
                         f"{t['efficiency'][i]:>10.3g} {t['efficiency_lower'][i]:>10.3g} "
                         f"{t['efficiency_upper'][i]:>10.3g}" + (f" {t['compile_seconds'][i]:>10.3g}" if compiled
                                                                  else "")
                         + (f" {100 * t['divergent_share'][i]:>8.2g}% {t['rhat'][i]:>7.4g}" if chains else "")
                         + f"  {t['status'][i]}{mark}")
        ratios = self.ratios()
        if ratios:
            lines.append("pairwise efficiency ratios (simultaneous intervals):")
            lines += [f"  {r.numerator} / {r.denominator}: {r.estimate:.3g} [{r.lower:.3g}, {r.upper:.3g}]"
                      for r in ratios]
        if compiled:
            lines += self._amortisation_lines()
        lines += [f"warning: {m}" for m in self.warnings()] + [f"note: {m}" for m in self.notes]
        return "\n".join(lines)

    def _amortisation_lines(self) -> list[str]:
        a = self.amortisation()
        if a is None:
            return ["compile time: not compared (no selection, declared or counted costs, or an arm without a "
                    "compile time)"]
        name = self.arm_names
        runs = "the first run" if a.runs_point <= 1 else f"{a.runs_point:.0f} runs"
        if not np.isfinite(a.runs_guaranteed):
            sure = "not established by the intervals"
        elif a.runs_guaranteed <= 1:
            sure = "guaranteed from the first run by the 1 - delta intervals"
        else:
            sure = f"guaranteed from {a.runs_guaranteed:.0f} runs on by the 1 - delta intervals"
        return [f"compile time included: for one run of the model the fastest is {name[a.once]} (point "
                f"estimates); once compile is amortised the fastest is {name[a.many]}, from {runs} on "
                f"({sure}); a run = an estimate as precise as one pull of {name[a.many]}"]

    def __repr__(self) -> str:
        return f"<ComparisonResult: {len(self.arm_names)} arms>\n{self.summary()}"

    def to_inference_data(self):
        """``arviz.InferenceData``: ``sample_stats`` per pull, ``arm_summary`` per arm (the table of
        :meth:`arm_table`), ``efficiency_ratio`` (arm x arm), settings in attrs.
        """
        from pmcbandit.diagnostics.arviz_io import comparison_to_inference_data

        return comparison_to_inference_data(self)

    def plot(self, ax=None):
        """Forest plot of the efficiencies and their intervals (log axis), excluded arms marked."""
        from pmcbandit.diagnostics.plots import plot_efficiency

        return plot_efficiency(self, ax=ax)


def _containing(point, lower, upper):
    """``(point, lower, upper)`` with each interval widened to contain its point estimate where both are
    known: a confidence bound from a different statistic than the point (a bias-corrected or
    sequential bound) can miss it, and an interval that excludes its own estimate reads as an error.
    Widening keeps the coverage.
    """
    point, lower, upper = (np.asarray(a, dtype=np.float64) for a in (point, lower, upper))
    known = ~np.isnan(point)
    lower = np.where(known & ~np.isnan(lower), np.minimum(lower, point), lower)
    upper = np.where(known & ~np.isnan(upper), np.maximum(upper, point), upper)
    return point, lower, upper
