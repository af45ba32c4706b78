"""The result of a full-bandit identification run: the selected super-arm, why the run stopped, its history."""

from __future__ import annotations

import numpy as np

__all__ = ["FullBanditResult"]


class FullBanditResult:
    """What :func:`~pmcbandit.full_bandit.identify.identify_full_bandit` returns.

    The answer carries the algorithm's guarantee (:math:`\\epsilon`-optimal with probability at least
    :math:`1-\\delta`) only when ``stopped_by == "confidence"``; with ``"max_rounds"`` it is the
    empirical best super-arm at the cap, without the guarantee (:meth:`warnings` says so).

    Parameters
    ----------
    arm_names : list of str
    selected_indices : array_like of int
        The recommended super-arm, best first (by :math:`\\hat\\theta`).
    stopped_by : {"confidence", "max_rounds"}
    theta_hat : ndarray (n,)
        Least-squares estimate at the end.
    width : ndarray (n,)
        :math:`C_t\\sqrt{(A_t^{-1})_{ii}}`, the half-width of each arm's interval at the end (the
        ICB-type per-arm bound under this run's :math:`C_t`; NaN before :math:`A_t` had full rank).
    statistic : float
        The stopping statistic at the final round (the run stops when it is <= ``epsilon``).
    super_arms : ndarray (rounds, k) int
        The super-arm of every pull.
    rewards, statistics : ndarray (rounds,)
        Every observation and the statistic after it (inf before :math:`A_t` had full rank).
    settings : dict
        The algorithm's parameters, the seed, ``max_rounds`` and ``stopped_by``.
    """

    def __init__(self, arm_names, selected_indices, stopped_by, theta_hat, width, statistic, super_arms, rewards,
                 statistics, settings):
        self.arm_names = list(arm_names)
        self.selected_indices = np.asarray(selected_indices, dtype=np.int64)
        self.stopped_by = str(stopped_by)
        self.theta_hat = np.asarray(theta_hat, dtype=np.float64)
        self.width = np.asarray(width, dtype=np.float64)
        self.statistic = float(statistic)
        self.super_arms = np.asarray(super_arms, dtype=np.int64)
        self.rewards = np.asarray(rewards, dtype=np.float64)
        self.statistics = np.asarray(statistics, dtype=np.float64)
        self.settings = dict(settings, stopped_by=self.stopped_by)

    @property
    def selected(self) -> list[str]:
        """Names of the selected arms, best first."""
        return [self.arm_names[i] for i in self.selected_indices]

    @property
    def rounds(self) -> int:
        """Pulls made (the sample complexity when ``stopped_by == "confidence"``)."""
        return int(self.rewards.shape[0])

    @property
    def confident(self) -> bool:
        return self.stopped_by == "confidence"

    @property
    def arm_pulls(self) -> np.ndarray:
        """How many pulled super-arms contained each arm."""
        return np.bincount(self.super_arms.ravel(), minlength=len(self.arm_names))

    def warnings(self) -> list[str]:
        if self.confident:
            return []
        return [f"the run ended by {self.stopped_by!r} (after {self.rounds} pulls) before the stopping rule held: "
                f"the selection {self.selected} is the empirical best super-arm, without the 1 - delta guarantee"]

    def summary(self) -> str:
        """The selection, the stop, and per arm its estimate, interval half-width and pulls."""
        s = self.settings
        head = (f"selected (k={s.get('k')}, delta={s.get('delta')}, epsilon={s.get('epsilon')}): {self.selected}; "
                f"stopped by {self.stopped_by} after {self.rounds} pulls; algorithm {s.get('algorithm')!r} "
                f"(allocation {s.get('allocation')!r}, statistic {self.statistic:.4g})")
        lines = [head, f"{'arm':>14} {'theta_hat':>10} {'+/-':>10} {'pulls':>8}  selected"]
        chosen = set(self.selected_indices.tolist())
        pulls = self.arm_pulls
        for i, name in enumerate(self.arm_names):
            lines.append(f"{name:>14} {self.theta_hat[i]:>10.4g} {self.width[i]:>10.4g} {pulls[i]:>8d}  "
                         f"{'*' if i in chosen else ''}")
        lines += [f"warning: {m}" for m in self.warnings()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<FullBanditResult: {self.rounds} pulls, {len(self.arm_names)} arms>\n{self.summary()}"

    def to_inference_data(self):
        """``arviz.InferenceData``: ``sample_stats`` per pull (``super_arm``, ``reward``, ``statistic``),
        ``arm_summary`` per arm (``theta_hat``, ``width``, ``pulls``, ``selected``), settings in attrs."""
        from pmcbandit.diagnostics.arviz_io import full_bandit_to_inference_data

        return full_bandit_to_inference_data(self)
