"""The mutable book-keeping of one run: decisions, pulls, faults, rewards and policy state.

:func:`pmcbandit.run` reads as the flow of a run; this module holds the steps it calls.
The same :meth:`Engine.absorb` handles a pull that just came back and a pull read from a
checkpoint, so a resumed run rebuilds exactly the state an uninterrupted run had.

Fault rule (documented in :func:`pmcbandit.run`): a pull that raises, returns NaN/+inf
(or only ``-inf`` log-weights), exceeds the per-pull timeout, or falls outside declared
``bounds`` is recorded with its status and message; its decision gets no reward; after
``max_faults`` faulty pulls an arm is quarantined — never selected again — while its earlier
valid observations stay in the combined estimate (each was a valid unbiased draw).
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from pmcbandit.budget import Progress
from pmcbandit.history import History
from pmcbandit.policies.base import BanditState, add_pending

__all__ = ["Engine"]

# Re-centre log-scale observations when one exceeds the current shift by this much, so
# exp(obs - shift) never overflows (exp(700) is near the float64 limit).
_MAX_LOG_GAP = 300.0


@dataclass
class _Decision:
    arm: int
    pull_indices: list
    rows: list = field(default_factory=list)
    values: list = field(default_factory=list)
    costs: list = field(default_factory=list)
    failed: bool = False


class Engine:
    """State of a run between pulls (see module docstring)."""

    def __init__(self, arms, policy, rule, streams, max_faults: int, bounds=None):
        self.arms = arms
        self.n_arms = len(arms)
        self.log_scale = bool(arms[0].log_scale)
        self.policy = policy
        self.rule = rule
        self.streams = streams
        self.max_faults = max_faults
        self.bounds = bounds
        self.state: BanditState = policy.init(self.n_arms, scale=rule.fixed_scale)
        self.history = History([d for a in arms for d in a.diagnostics])
        self.faults = np.zeros(self.n_arms, dtype=np.int64)
        self.quarantined = np.zeros(self.n_arms, dtype=bool)
        self.next_pull = np.zeros(self.n_arms, dtype=np.int64)
        self.decisions: dict[int, _Decision] = {}
        self.selected = 0
        self.pulls_dispatched = 0
        self.shift: float | None = None
        self.wall_offset = 0.0
        self.cpu_offset = 0.0
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()
        params = inspect.signature(policy.update).parameters
        self._update_takes_obs = "value" in params or any(
            p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
        )

    # --- time ---------------------------------------------------------------------
    def restart_clock(self) -> None:
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()

    def progress(self, se: float = float("nan")) -> Progress:
        return Progress(
            pulls=len(self.history),
            wall=self.wall_offset + time.perf_counter() - self._t0,
            cpu=self.cpu_offset + time.process_time() - self._c0,
            se=se,
        )

    # --- choosing ------------------------------------------------------------------
    def select(self) -> int:
        """The policy's choice among arms not quarantined (indices of the full pool)."""
        active = ~self.quarantined
        if active.all():
            return int(self.policy.select(self.streams.policy, self.state))
        idx = np.flatnonzero(active)
        return int(idx[self.policy.select(self.streams.policy, _restrict(self.state, idx, self.n_arms))])

    def dispatch(self) -> tuple[int, list]:
        """Choose an arm, open a decision and return ``(decision, tickets)`` to submit."""
        arm = self.select()
        self.state = add_pending(self.state, arm)
        d = self.selected
        self.selected += 1
        first = int(self.next_pull[arm])
        js = list(range(first, first + self.rule.pulls_per_decision))
        self.next_pull[arm] += len(js)
        self.pulls_dispatched += len(js)
        self.decisions[d] = _Decision(arm, js)
        return d, [(d, arm, j) for j in js]

    # --- receiving -----------------------------------------------------------------
    def record(self, outcome) -> dict:
        """History row of a pull that came back (observation reduced to one number)."""
        d, arm, j = outcome.ticket
        pull = outcome.pull
        status = outcome.status
        obs = within = np.nan
        size = 0
        cost = np.nan
        info = {}
        if pull is not None:
            size, cost, info = pull.values.size, pull.cost, pull.info
        if status == "ok":
            obs, within = _reduce(pull.values, self.log_scale)
            if self.bounds is not None and not self.bounds[0] <= obs <= self.bounds[1]:
                status = "out_of_bounds"
                outcome = outcome._replace(message=f"observation {obs!r} outside bounds {self.bounds}")
        progress = self.progress()
        return dict(
            decision=d, arm=arm, pull_index=j, status=_STATUS_CODE[status], obs=obs, within_var=within,
            batch_size=size, cost=cost, reward=np.nan, wall=progress.wall, cpu=progress.cpu,
            selected_before=self.selected, info=info, message=outcome.message,
        )

    def absorb(self, row: dict) -> None:
        """Fold one history row into faults, decisions, rewards and the policy state."""
        info = row.pop("info", None)
        message = row.pop("message", "")
        r = self.history.append(info=info, **row)
        arm, d = row["arm"], row["decision"]
        decision = self.decisions[d]
        decision.rows.append(r)
        status = _STATUS_NAME[row["status"]]
        if status != "ok":
            self.history.add_fault(r, arm, status, message)
            self.faults[arm] += 1
            if self.faults[arm] >= self.max_faults:
                self.quarantined[arm] = True
            decision.failed = True
        else:
            decision.values.append(self._working_value(row["obs"]))
            decision.costs.append(row["cost"])
        if len(decision.rows) < len(decision.pull_indices):
            return
        del self.decisions[d]
        if decision.failed:
            self.state = _release_pending(self.state, arm)
            return
        reward = self.rule.reward(decision.values, decision.costs)
        extra = {}
        if self._update_takes_obs:
            extra = dict(value=float(np.mean(decision.values)), info=info or {})
        self.state = self.policy.update(
            self.state, arm, reward, float(np.sum(decision.costs)), rng=self.streams.policy, **extra
        )
        self.history.set_reward(r, reward)

    def pending_tickets(self) -> list:
        """Tickets dispatched whose pull has not come back (re-submitted on resume)."""
        out = []
        for d, dec in sorted(self.decisions.items()):
            done = {self.history.column("pull_index")[r] for r in dec.rows}
            out += [(d, dec.arm, j) for j in dec.pull_indices if j not in done]
        return out

    def _working_value(self, obs: float) -> float:
        """Observation on the run's working scale (``exp(obs - shift)`` for log-scale arms)."""
        if not self.log_scale:
            return float(obs)
        if self.shift is None:
            self.shift = float(obs)
        elif obs - self.shift > _MAX_LOG_GAP:
            self._reshift(float(obs))
        return float(np.exp(obs - self.shift))

    def _reshift(self, new_shift: float) -> None:
        # Multiplying every working value by f multiplies losses by f^2; policies see
        # loss/scale, so rescaling sums and scale together leaves every decision unchanged.
        f = float(np.exp(self.shift - new_shift))
        s = self.state
        self.state = s._replace(
            loss_sum=s.loss_sum * f**2, loss_sq_sum=s.loss_sq_sum * f**4, scale=s.scale * f**2
        )
        for dec in self.decisions.values():
            dec.values = [v * f for v in dec.values]
        self.rule.rescale(f)
        self.shift = new_shift


_STATUS_CODE = {"ok": 0, "nonfinite": 1, "error": 2, "timeout": 3, "out_of_bounds": 4}
_STATUS_NAME = {v: k for k, v in _STATUS_CODE.items()}


def _reduce(values: np.ndarray, log_scale: bool) -> tuple[float, float]:
    """One observation per pull: batch mean and the within-batch variance of that mean."""
    m = values.size
    if log_scale:
        obs = float(logsumexp(values) - np.log(m))
        if m < 2:
            return obs, np.nan
        rel = np.exp(values - obs)  # weights relative to their mean
        return obs, float(np.var(rel, ddof=1) / m)
    if m < 2:
        return float(values[0]), np.nan
    return float(values.mean()), float(np.var(values, ddof=1) / m)


def _restrict(state: BanditState, idx: np.ndarray, n_arms: int) -> BanditState:
    """The state seen by the policy when only arms ``idx`` may be chosen."""

    def cut(v):
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == n_arms:
            return v[idx]
        if isinstance(v, tuple) and not isinstance(v, BanditState):
            return type(v)(*map(cut, v)) if hasattr(v, "_fields") else tuple(map(cut, v))
        return v

    return BanditState(*map(cut, state))


def _release_pending(state: BanditState, arm: int) -> BanditState:
    """A decision that will never get a reward (a faulty pull) stops counting as pending."""
    if state.pending[arm] == 0:
        return state
    pending = state.pending.copy()
    pending[arm] -= 1
    return state._replace(pending=pending)
