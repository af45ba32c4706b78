"""The result of a run: estimate, honest SE and intervals, per-arm table, full history.

Everything a :class:`RunResult` reports is recomputed from its :class:`~pmcbandit.history.History`
(the combination of :mod:`pmcbandit.combine` over the valid pulls), so a result rebuilt from a
checkpoint or from InferenceData reports the same numbers.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from pmcbandit.combine import Combined, combine, interval, log_interval
from pmcbandit.history import STATUS, History

__all__ = ["RunResult"]


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
        Every pull (see :mod:`pmcbandit.history`).
    combine : str
    log_scale : bool
        Whether observations are logs (evidence runs).
    settings : dict
        Run settings (policy, reward, budget, seeds, ...); become InferenceData ``attrs``.
    quarantined : ndarray of bool
    policy_state : BanditState or None
        The policy's final state (None for results rebuilt from a file).

    Examples
    --------
    >>> import pmcbandit as pb
    >>> arms = [pb.CallableArm(lambda rng, s=s: rng.normal(1.0, s), name=f"sd{s}") for s in (0.5, 2.0)]
    >>> res = pb.run(arms, policy="ucb1", budget=pb.Pulls(200), random_seed=1, progressbar=False)
    >>> lo, hi = res.ci(0.95)
    >>> bool(lo < res.estimate < hi)
    True
    """

    def __init__(self, arm_names, history: History, combine: str, log_scale: bool, quarantined, settings, policy_state):
        self.arm_names = list(arm_names)
        self.history = history
        self.combine = combine
        self.log_scale = bool(log_scale)
        self.quarantined = np.asarray(quarantined, dtype=bool)
        self.settings = dict(settings)
        self.policy_state = policy_state

    # --- the combined estimate ------------------------------------------------------
    @cached_property
    def _valid(self) -> np.ndarray:
        return self.history.column("status") == 0

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
        obs, arms, within, size = self.working_values()
        return combine(obs, arms, len(self.arm_names), self.combine, within, size)

    def combined_with(self, method: str) -> Combined:
        """The same observations combined with another method (for comparisons)."""
        obs, arms, within, size = self.working_values()
        return combine(obs, arms, len(self.arm_names), method, within, size)

    def _linear(self, x: float) -> float:
        """``x`` on the working scale back on the target's scale: ``x * exp(shift)``, which
        overflows to ``inf`` or underflows to 0 for extreme evidences (read the log values)."""
        if not self.shift:
            return float(x)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            return float(x * np.exp(self.shift))

    @property
    def estimate(self) -> float:
        """The combined estimate (:mod:`pmcbandit.combine`); NaN without a valid observation."""
        return self._linear(self.combined.estimate)

    @property
    def se(self) -> float:
        """Its standard error (``inf`` from a single observation)."""
        return self._linear(self.combined.se)

    def ci(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided ``level`` interval ``estimate ± t_df se``, Student-t with Satterthwaite's
        degrees of freedom (see :mod:`pmcbandit.combine`)."""
        c = self.combined
        lo, hi = interval(c.estimate, c.se, c.df, level)
        return self._linear(lo), self._linear(hi)

    @property
    def log_estimate(self) -> float:
        """``log`` of the estimate of a positive target (NaN if the estimate is not positive)."""
        c = self.combined
        return float(self.shift + np.log(c.estimate)) if c.estimate > 0 else float("nan")

    @property
    def log_se(self) -> float:
        """Delta-method SE of ``log_estimate``: ``se / estimate``."""
        c = self.combined
        return float(c.se / c.estimate) if c.estimate > 0 else float("nan")

    def log_ci(self, level: float = 0.95) -> tuple[float, float]:
        """Interval for ``log`` of a positive target (:func:`pmcbandit.combine.log_interval`):
        the log of the linear interval when its lower end is positive, else the log-normal
        approximation ``log_estimate ± q sqrt(log(1 + (se/estimate)^2))``."""
        c = self.combined
        lo, hi = log_interval(c.estimate, c.se, c.df, level)
        return float(lo + self.shift), float(hi + self.shift)

    # --- per-arm view -----------------------------------------------------------------
    @property
    def faults(self) -> list[dict]:
        return [
            dict(row=r, arm=self.arm_names[a], status=s, message=m) for r, a, s, m in self.history.faults
        ]

    def arm_table(self) -> dict[str, np.ndarray]:
        """Per-arm summary: pulls, faults, mean (working scale), variance V_k of an observation,
        mean cost delta_k, V*delta, combination weight, quarantined flag."""
        k = len(self.arm_names)
        arms = self.history.column("arm")
        status = self.history.column("status")
        cost = self.history.column("cost")
        c = self.combined
        pulls = np.bincount(arms, minlength=k)
        cost_sum = np.bincount(arms[np.isfinite(cost)], weights=cost[np.isfinite(cost)], minlength=k)
        mean_cost = np.divide(cost_sum, pulls, out=np.full(k, np.nan), where=pulls > 0)
        return dict(
            arm=np.asarray(self.arm_names),
            pulls=pulls,
            faults=np.bincount(arms[status != 0], minlength=k),
            mean=c.mean,
            var=c.var,
            cost=mean_cost,
            var_cost=c.var * mean_cost,
            weight=c.weights,
            quarantined=self.quarantined,
        )

    def summary(self) -> str:
        """A readable table (the CLI prints it): the estimate with its SE and 95% interval, then
        per arm its pulls, faults, V·δ (variance of an observation times its mean cost, the
        quantity the bandit minimises, Neufeld et al. 2014, Sec. 5), cost and weight."""
        t = self.arm_table()
        if self.log_scale:
            lo, hi = self.log_ci()
            head = f"log Z = {self.log_estimate:.6f} ± {self.log_se:.6f} (95% CI {lo:.6f} .. {hi:.6f})"
        else:
            lo, hi = self.ci()
            head = f"estimate = {self.estimate:.6g} ± {self.se:.3g} (95% CI {lo:.6g} .. {hi:.6g})"
        settings = self.settings
        about = f"{len(self.history)} pulls, {len(self.history.faults)} faults, combine={self.combine!r}"
        if settings.get("policy"):
            about = f"policy={settings['policy']!r}, reward={settings.get('reward')!r}, budget={settings.get('budget')}, " + about
        lines = [head, about, f"{'arm':>14} {'pulls':>7} {'faults':>6} {'V·δ':>11} {'cost/pull':>10} {'weight':>7}"]
        for i in range(len(self.arm_names)):
            flag = "  quarantined" if t["quarantined"][i] else ""
            lines.append(
                f"{t['arm'][i]:>14} {t['pulls'][i]:>7d} {t['faults'][i]:>6d} {t['var_cost'][i]:>11.4g} "
                f"{t['cost'][i]:>10.4g} {t['weight'][i]:>7.3f}{flag}"
            )
        for flag in self.combined.degenerate:
            lines.append(f"note: {flag}")
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
