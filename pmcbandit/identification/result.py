"""The result of an identification run: the selected arms, per-arm statistics, why the run stopped."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from pmcbandit.exceptions import NoGuaranteeWarning, UnreliableArmWarning, WarningText
from pmcbandit.runtime.history import History

__all__ = ["IdentificationResult"]


class IdentificationResult:
    """What :func:`pmcbandit.identify` returns.

    The answer carries the algorithm's guarantee (wrong with probability at most ``delta``) only when
    ``stopped_by == "confidence"``; otherwise it is the algorithm's best guess when the budget, the
    callback or a quarantined arm ended the run, and :meth:`warnings` says so.

    Parameters
    ----------
    arm_names : list of str
    history : History
        Every pull (:mod:`pmcbandit.runtime.history`); a decision's arms are the rows sharing its index.
    settings : dict
        The run's settings (:class:`pmcbandit.runtime.config.RunConfig`) with ``stopped_by``.
    selected_indices : array_like of int
        The algorithm's recommendation, best first.
    lower, upper : ndarray
        Each arm's confidence bounds under the algorithm's radii at the stop.
    quarantined : ndarray of bool
    state : ArmStats or None
        The algorithm's final statistics (None for results read from a file).
    """

    log_scale = False

    def __init__(self, arm_names, history: History, settings: dict, selected_indices, lower, upper, quarantined,
                 state=None):
        self.arm_names = list(arm_names)
        self.history = history
        self.settings = dict(settings)
        self.selected_indices = np.asarray(selected_indices, dtype=np.int64)
        self.lower = np.asarray(lower, dtype=np.float64)
        self.upper = np.asarray(upper, dtype=np.float64)
        self.quarantined = np.asarray(quarantined, dtype=bool)
        self.state = state

    @property
    def selected(self) -> list[str]:
        """Names of the selected arms, best first."""
        return [self.arm_names[i] for i in self.selected_indices]

    @property
    def stopped_by(self) -> str:
        return str(self.settings.get("stopped_by"))

    @property
    def report(self) -> dict:
        """The algorithm's own figures at the stop (e.g. ADAPT's ``delta_hat``, RACING's ``rounds``)."""
        return dict(self.settings.get("algorithm_report") or {})

    @property
    def confident(self) -> bool:
        """Whether the algorithm's stopping rule held and its 1 - delta guarantee applies (RACING's
        only when the race ended within its rounds).
        """
        return self.stopped_by == "confidence" and bool(self.report.get("guarantee", True))

    @cached_property
    def _valid(self) -> tuple[np.ndarray, np.ndarray]:
        ok = self.history.column("status") == 0
        return self.history.column("arm")[ok], self.history.column("obs")[ok]

    @property
    def counts(self) -> np.ndarray:
        """Valid observations per arm."""
        arms, _ = self._valid
        return np.bincount(arms, minlength=len(self.arm_names))

    @property
    def samples(self) -> int:
        """Valid observations in all (the sample complexity of the run)."""
        return int(self.counts.sum())

    @property
    def means(self) -> np.ndarray:
        """Per-arm mean observation (NaN for arms without one)."""
        arms, obs = self._valid
        k = len(self.arm_names)
        n = np.bincount(arms, minlength=k)
        return np.divide(np.bincount(arms, weights=obs, minlength=k), n, out=np.full(k, np.nan), where=n > 0)

    @property
    def table(self):
        """:meth:`arm_table` as a fresh ``pandas.DataFrame``, one row per arm, indexed by arm name."""
        import pandas as pd

        return pd.DataFrame(self.arm_table()).set_index("arm")

    def arm_table(self) -> dict[str, np.ndarray]:
        """Per arm: counts, mean, lower and upper bounds, selected flag, quarantined flag."""
        chosen = np.zeros(len(self.arm_names), dtype=bool)
        chosen[self.selected_indices] = True
        return dict(arm=np.asarray(self.arm_names), counts=self.counts, mean=self.means, lower=self.lower,
                    upper=self.upper, selected=chosen, quarantined=self.quarantined)

    def warnings(self) -> list[WarningText]:
        """What may make the answer wrong or leaves it without its guarantee, each with the action that
        fixes it (the run issues each once as its class: :class:`~pmcbandit.exceptions.NoGuaranteeWarning`
        for a selection without the 1 - delta guarantee, :class:`~pmcbandit.exceptions.UnreliableArmWarning`
        for arms quarantined after faults; ``docs/guide/warnings.md``).
        """
        out = []
        if self.stopped_by == "no_arm":
            names = [self.arm_names[i] for i in np.flatnonzero(self.quarantined)]
            out.append(WarningText(
                f"no arm left to identify from: {names or 'every arm'} could not be pulled any more, so nothing "
                "is selected: read result.faults, fix or remove these arms and run again", UnreliableArmWarning,
                "no_arm"))
            return out
        if self.stopped_by == "confidence" and not self.confident:
            out.append(WarningText(
                f"the algorithm stopped, but outside the conditions of its guarantee ({self.report}): the "
                f"selection {self.selected} is its answer without the 1 - delta guarantee: run again with more "
                f"rounds than the {self.report.get('rounds')} it took (algorithm_kwargs=dict(rounds=...)), so "
                "the race ends within them", NoGuaranteeWarning, "no_guarantee"))
        elif not self.confident:
            out.append(WarningText(
                f"the run ended by {self.stopped_by!r} before the algorithm's stopping rule held: the selection "
                f"{self.selected} is its best guess, without the 1 - delta guarantee: run again with a larger "
                "budget (or a larger epsilon), so the stopping rule can hold", NoGuaranteeWarning, "no_guarantee"))
        if self.quarantined.any():
            names = [self.arm_names[i] for i in np.flatnonzero(self.quarantined)]
            out.append(WarningText(f"arms quarantined after faults: {names}: read result.faults, fix or remove "
                                   "these arms and run again", UnreliableArmWarning, "quarantine"))
        return out

    def summary(self) -> str:
        """The selection, the stop, and per arm its pulls, mean and confidence bounds."""
        s = self.settings
        head = (f"selected (top {s.get('k')}, delta={s.get('delta')}): {self.selected}; stopped by "
                f"{self.stopped_by} after {self.samples} samples; algorithm {s.get('policy')!r}")
        if self.report:
            head += "; " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                                     for k, v in self.report.items())
        t = self.arm_table()
        lines = [head, f"{'arm':>14} {'pulls':>8} {'mean':>10} {'lower':>10} {'upper':>10}  selected"]
        for i in range(len(self.arm_names)):
            lines.append(f"{t['arm'][i]:>14} {t['counts'][i]:>8d} {t['mean'][i]:>10.4g} {t['lower'][i]:>10.4g} "
                         f"{t['upper'][i]:>10.4g}  {'*' if t['selected'][i] else ''}")
        lines += [f"warning: {m}" for m in self.warnings()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<IdentificationResult: {self.samples} samples, {len(self.arm_names)} arms>\n{self.summary()}"

    def to_inference_data(self):
        """``arviz.InferenceData``: ``sample_stats`` per pull, ``arm_summary`` per arm, settings in attrs."""
        from pmcbandit.diagnostics.arviz_io import identification_to_inference_data

        return identification_to_inference_data(self)

    def plot(self, ax=None):
        """Each arm's mean with its confidence bounds at the stop, the selected arms filled
        (:func:`pmcbandit.diagnostics.selection_plots.plot_selection`; the columns of :attr:`table`).
        """
        from pmcbandit.diagnostics.selection_plots import plot_selection

        return plot_selection(self, ax=ax)
