"""The result of a full-bandit identification run: the selected super-arm, why the run stopped, its history."""

from __future__ import annotations

import numpy as np

from pmcbandit.exceptions import NoGuaranteeWarning, UnreliableArmWarning

__all__ = ["FullBanditResult"]

_WHY = {
    "budget": "ran out of budget",
    "callback": "was ended by its callback",
    "no_arm": "stopped because a super-arm was quarantined after faults",
}
_FIX = {
    "budget": "raise the budget (e.g. budget=Pulls(...)) or epsilon",
    "callback": "let the run continue (the callback returned True)",
    "no_arm": "fix the pull function (see result.faults) or raise max_faults",
}


class FullBanditResult:
    """What :func:`~pmcbandit.full_bandit.identify.identify_full_bandit` returns.

    The answer carries the algorithm's guarantee (:math:`\\epsilon`-optimal with probability at least
    :math:`1-\\delta`, Kuroki et al. 2020, Thm. 2) only when ``stopped_by == "confidence"``; otherwise
    it is the empirical best super-arm when the run ended, without the guarantee (:meth:`warnings`
    says so and what to do).

    Parameters
    ----------
    arm_names : list of str
        The single arms.
    selected_indices : array_like of int
        The recommended super-arm, best first (by :math:`\\hat\\theta`).
    stopped_by : {"confidence", "budget", "callback", "no_arm"}
    theta_hat : ndarray (n,)
        Least-squares estimate at the end.
    width : ndarray (n,)
        :math:`C_t\\sqrt{(A_t^{-1})_{ii}}`, the half-width of each arm's interval at the end (the
        ICB-type per-arm bound under this run's :math:`C_t`; NaN before :math:`A_t` had full rank).
    statistic : float
        The stopping statistic at the end (the run stops when it is <= ``epsilon``).
    super_arms : ndarray (pulls, k) int
        The super-arm of every pull, in the history's order.
    rewards, statistics : ndarray (pulls,)
        Every observation (NaN for a faulty pull) and the statistic after it (inf before
        :math:`A_t` had full rank).
    settings : dict
        The run's settings (plain JSON values): the algorithm's parameters, the loop's, ``stopped_by``.
    history : History
        The run loop's per-pull table (:mod:`pmcbandit.runtime.history`); its ``arm`` column indexes
        ``super_arm_names``, and its ``faults`` keep every fault's message.
    super_arm_names : list of str
        The support rows as the run's arms.
    quarantined : ndarray (rows,) bool
        Super-arms quarantined after faults.
    state : FullBanditState
        The algorithm's final least-squares state.
    """

    def __init__(self, arm_names, selected_indices, stopped_by, theta_hat, width, statistic, super_arms, rewards,
                 statistics, settings, history=None, super_arm_names=(), quarantined=None, state=None):
        self.arm_names = list(arm_names)
        self.selected_indices = np.asarray(selected_indices, dtype=np.int64)
        self.theta_hat = np.asarray(theta_hat, dtype=np.float64)
        self.width = np.asarray(width, dtype=np.float64)
        self.statistic = float(statistic)
        self.super_arms = np.asarray(super_arms, dtype=np.int64)
        self.rewards = np.asarray(rewards, dtype=np.float64)
        self.statistics = np.asarray(statistics, dtype=np.float64)
        self.settings = dict(settings, stopped_by=str(stopped_by))
        self.history = history
        self.super_arm_names = list(super_arm_names)
        self.quarantined = np.zeros(len(self.super_arm_names), dtype=bool) if quarantined is None else \
            np.asarray(quarantined, dtype=bool)
        self.state = state

    @property
    def stopped_by(self) -> str:
        """Why the run ended (``settings["stopped_by"]``; class docstring)."""
        return str(self.settings["stopped_by"])

    @property
    def selected(self) -> list[str]:
        """Names of the selected arms, best first."""
        return [self.arm_names[i] for i in self.selected_indices]

    @property
    def samples(self) -> int:
        """Pulls made, faulty ones included (the sample complexity when ``stopped_by == "confidence"``
        and no pull was faulty).
        """
        return int(self.rewards.shape[0])

    @property
    def confident(self) -> bool:
        return self.stopped_by == "confidence"

    @property
    def faults(self) -> list[dict]:
        """Every faulty pull: its history row, super-arm, status and message."""
        if self.history is None:
            return []
        return [dict(row=r, arm=self.super_arm_names[a], status=s, message=m) for r, a, s, m in self.history.faults]

    @property
    def arm_pulls(self) -> np.ndarray:
        """How many valid observations were sums containing each arm."""
        valid = np.isfinite(self.rewards)
        return np.bincount(self.super_arms[valid].ravel(), minlength=len(self.arm_names))

    def arm_table(self) -> dict[str, np.ndarray]:
        """Per arm: ``theta_hat``, the interval half-width ``width`` and its bounds ``lower``/``upper``
        (``theta_hat`` -/+ ``width``), ``pulls`` (:attr:`arm_pulls`), ``selected``.
        """
        chosen = np.zeros(len(self.arm_names), dtype=bool)
        chosen[self.selected_indices] = True
        return dict(arm=np.asarray(self.arm_names), theta_hat=self.theta_hat, width=self.width,
                    lower=self.theta_hat - self.width, upper=self.theta_hat + self.width, pulls=self.arm_pulls,
                    selected=chosen)

    @property
    def table(self):
        """:meth:`arm_table` as a fresh ``pandas.DataFrame``, one row per arm, indexed by arm name."""
        import pandas as pd

        return pd.DataFrame(self.arm_table()).set_index("arm")

    def warnings(self) -> list[tuple[type, str]]:
        """What the user must know, as ``(warning class, message)`` pairs (the run issues each)."""
        out = []
        if not self.confident:
            why = _WHY.get(self.stopped_by, f"ended by {self.stopped_by!r}")
            fix = _FIX.get(self.stopped_by, "let the run reach its stopping rule")
            out.append((NoGuaranteeWarning,
                        f"identify_full_bandit {why} after {self.samples} pulls, before its stopping rule held: the "
                        f"selection {self.selected} is the empirical best super-arm, without the 1 - delta "
                        f"guarantee; {fix}."))
        if self.quarantined.any():
            names = [self.super_arm_names[r] for r in np.flatnonzero(self.quarantined)]
            out.append((UnreliableArmWarning,
                        f"super-arms quarantined after faults: {names}; fix the pull function or raise max_faults."))
        return out

    def summary(self) -> str:
        """The selection, the stop, and per arm its estimate, interval half-width and pulls."""
        s = self.settings
        head = (f"selected (k={s.get('k')}, delta={s.get('delta')}, epsilon={s.get('epsilon')}): {self.selected}; "
                f"stopped by {self.stopped_by} after {self.samples} pulls; algorithm {s.get('algorithm')!r} "
                f"(allocation {s.get('allocation')!r}, statistic {self.statistic:.4g})")
        lines = [head, f"{'arm':>14} {'theta_hat':>10} {'+/-':>10} {'pulls':>8}  selected"]
        chosen = set(self.selected_indices.tolist())
        pulls = self.arm_pulls
        for i, name in enumerate(self.arm_names):
            lines.append(f"{name:>14} {self.theta_hat[i]:>10.4g} {self.width[i]:>10.4g} {pulls[i]:>8d}  "
                         f"{'*' if i in chosen else ''}")
        lines += [f"warning: {message}" for _, message in self.warnings()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<FullBanditResult: {self.samples} pulls, {len(self.arm_names)} arms>\n{self.summary()}"

    def to_inference_data(self):
        """``arviz.InferenceData``: ``sample_stats`` per pull (``super_arm``, ``reward``, ``statistic``),
        ``arm_summary`` per arm (``theta_hat``, ``width``, ``pulls``, ``selected``), settings in attrs.
        """
        from pmcbandit.diagnostics.arviz_io import full_bandit_to_inference_data

        return full_bandit_to_inference_data(self)

    def plot(self, ax=None):
        """Each arm's ``theta_hat`` with its interval at the stop, the selected arms filled
        (:func:`pmcbandit.diagnostics.selection_plots.plot_selection`; the columns of :attr:`table`).
        """
        from pmcbandit.diagnostics.selection_plots import plot_selection

        return plot_selection(self, ax=ax)
