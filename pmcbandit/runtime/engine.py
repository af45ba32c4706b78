r"""The mutable book-keeping of one run: decisions, pulls, faults and the learner's state.

:mod:`pmcbandit.runtime.loop` reads as the flow of a run; this module holds the steps it calls.
The same :meth:`Engine.absorb` handles a pull that just came back and a pull read from a
checkpoint, so a resumed run rebuilds exactly the state an uninterrupted run had.

Decisions. One decision (:meth:`Engine.dispatch`) is a
:class:`~pmcbandit.identification.Selection`: one or more arms and how many pulls of each,
chosen by the run's learner (:mod:`pmcbandit.policies.learner`) — for an allocation policy one arm
pulled ``pulls_per_decision`` times (2 for the paired reward of Neufeld et al. 2014, Sec. 5),
for an identification algorithm e.g. both LUCB arms once. Every pull's history row carries its
decision's index, so a decision's arms are the rows that share it. When the last pull of a
decision comes back, the decision is closed and handed to the learner: a policy gets the
decision's reward — or, if any of its pulls was faulty, no reward goes anywhere and the pending
decision is released; an identification algorithm gets every valid observation.

Fault rule (documented in :func:`pmcbandit.run`): a pull that raises, returns NaN/+inf
(or only ``-inf`` log-weights), exceeds the per-pull timeout, or falls outside declared
``bounds`` is recorded with its status and message; its decision gets no reward; after
``max_faults`` faulty pulls an arm is quarantined — never selected again — while its earlier
valid observations stay in the combined estimate (each was a valid unbiased draw). While
some arms are quarantined the policy chooses among the others: it sees its state restricted
to them (every per-arm array, also inside ``state.extra``, indexed by the active arms) and
its choice is mapped back. An oracle policy (``pinned_arm``) whose arm is quarantined has no
valid choice left: the run stops dispatching; so does an identification run with a quarantined
arm (an arm it cannot pull anymore leaves its answer unfounded).

Guards and reliability. :meth:`Engine.plan` asks the run's guards (:mod:`pmcbandit.runtime.guards`)
first: they may force a decision (every arm's first one under a time budget; the cross-check
share on a second estimator family) or narrow the policy's choice (arms whose decision would
take too large a share of the budget, or more than is left). Guards whose only rule is every arm's first decision
(an SE target without a time limit, one family, no importance weights) are dropped once every arm has had it
(:meth:`~pmcbandit.runtime.guards.Guards.idle`): the later decisions are the policy's, as without guards.
For arms whose values are importance weights (``Arm.importance_weights``) the engine accumulates the weights' upper tail
(:class:`pmcbandit.stats.psis.WeightTails`). An arm whose Pareto :math:`\hat k` exceeds the
sample-size-dependent threshold gets no weight in the combination (:mod:`pmcbandit.result`) while
it does; it stays in play while it is only short of draws, and once it is hopeless (:math:`\hat k > 0.7`
on 2155 weights or more, or :math:`\hat k \ge 1`: :mod:`pmcbandit.stats.psis`) it is
*unreliable* from the next decision on: like a quarantined arm it is no longer chosen. At the end
every arm above its threshold is flagged. A learner with a stop rule (``learner.stops``:
identification, ``compare_samplers``) takes an arm out at its first :math:`\hat k` above the
threshold instead: its stop rule reads the arms in play, and a variance estimate above the
threshold must not decide a ranking, while an allocation run decides an arm's weight only at the
end, on all its draws. ``unreliable_since`` records the decision count at which
each arm was flagged, so a checkpoint replays the restriction where the original run applied it.
Before each decision the engine also marks the arms whose weights do not support their variance
estimate yet (:meth:`Engine.untrusted`), for the guards' rule 5, and logs each change for the replay.

Centre. With a running centre (:mod:`pmcbandit.policies.centring`) the reward rule keeps per-arm power
sums of the observations; after the 2nd, 4th, 8th, ... reward the policy's ``recentre`` gets
every arm's losses re-scored against the mean of all observations so far.

Observations of log-scale arms (evidence) stay logs here: the engine hands every learner the
decision's observations as recorded; the allocation learner puts them on its working scale
(:mod:`pmcbandit.policies.learner`).
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from pmcbandit.base import new_tuple as _new

from pmcbandit.runtime.budget import Progress
from pmcbandit.runtime.executors.base import Ticket
from pmcbandit.runtime.guards import POLICY, Guards, Plan
from pmcbandit.runtime.history import History, PullRecord
from pmcbandit.stats.psis import WeightTails
from pmcbandit.stats.psis import ArmReliability

__all__ = ["Engine", "Row"]


_STATUS_CODE = {"ok": 0, "nonfinite": 1, "error": 2, "timeout": 3, "out_of_bounds": 4, "lost": 5}
# A pull lost with its worker (after the executor's retries) says nothing about its arm.
_NOT_THE_ARMS_FAULT = {_STATUS_CODE["lost"]}
_STATUS_NAME = {v: k for k, v in _STATUS_CODE.items()}
_REWARD = PullRecord._fields.index("reward")
_NAN = math.nan
# Wall seconds between two reads of the process clock for the history's ``cpu`` column (a system call each).
CPU_READ_EVERY = 1e-3


class Row(NamedTuple):
    """One pull as the engine folds it in (:meth:`Engine.absorb`): from a pull that came back
    (:meth:`Engine.record`) or from a checkpoint (``info=None``).
    """

    record: PullRecord
    diagnostics: tuple
    message: str
    info: dict | None


class _Decision:
    """One open decision: its arms, why it was chosen, its tickets, and what came back so far."""

    __slots__ = ("arms", "reason", "tickets", "size", "rows", "values", "value_arms", "value_diagnostics", "costs",
                 "failed", "diagnostics", "info")

    def __init__(self, arms: tuple, reason: int, tickets: list):
        self.arms = arms
        self.reason = reason
        self.tickets = tickets
        self.size = len(tickets)
        self.rows: list[int] = []
        self.values: list[float] = []
        self.value_arms: list[int] = []
        self.value_diagnostics: list[tuple] = []  # each valid pull's declared diagnostics, as recorded
        self.costs: list[float] = []
        self.failed = False
        self.diagnostics: dict = {}  # the declared diagnostics of its last pull, as recorded
        self.info = None  # the raw info of its last pull (None when replayed from a checkpoint)


class Engine:
    """State of a run between pulls (see module docstring).

    Parameters
    ----------
    arms : list of Arm
    learner : PolicyLearner or IdentifierLearner
        What chooses the decisions and learns from them (:mod:`pmcbandit.policies.learner`).
    streams : Streams or None
        Set before the first dispatch.
    max_faults : int
        Faulty pulls after which an arm is quarantined.
    bounds : (float, float), optional
        Range of valid observations; outside is an ``out_of_bounds`` fault.
    guards : Guards, optional
        The rules around the learner (:mod:`pmcbandit.runtime.guards`); ``None``: the learner alone.
    """

    def __init__(self, arms, learner, streams, max_faults: int, bounds=None, guards: Guards | None = None):
        self.arms = arms
        self.n_arms = len(arms)
        self.log_scale = bool(arms[0].log_scale)
        self.learner = learner
        self.streams = streams
        self.max_faults = max_faults
        self.bounds = bounds
        self.history = History([d for a in arms for d in a.diagnostics])
        self._diagnostics = bool(self.history.diagnostics)
        self._append_row = self.history.row_appender()  # None with diagnostics: append_row then
        self.faults = np.zeros(self.n_arms, dtype=np.int64)
        self.quarantined = np.zeros(self.n_arms, dtype=bool)
        self.next_pull = [0] * self.n_arms
        self.decisions: dict[int, _Decision] = {}
        self.selected = 0
        self.pulls_dispatched = 0
        self.rows = 0  # pulls recorded in the history (its length, read without a call)
        self.wall_offset = 0.0
        self.cpu_offset = 0.0
        self.remote_cpu = 0.0  # CPU seconds remote workers reported for the pulls since the run started or resumed
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()
        self._cpu_read = 0.0  # this process's CPU seconds since _c0 at the cpu column's last read
        self._cpu_next = -math.inf  # the wall clock (perf_counter) from which the next row reads it again
        self.guards = guards if guards is not None and guards.active else None
        self.weighted = np.array([bool(a.importance_weights) for a in arms])
        self.tails = WeightTails(self.n_arms) if self.weighted.any() else None
        self.unreliable_since = np.full(self.n_arms, -1, dtype=np.int64)
        self.failed_khat = np.full((self.n_arms, 3), np.nan)  # (k-hat, threshold, weights) when an arm was flagged
        self.untrusted_log: list[tuple[int, int]] = []  # (decision, arm) where an arm's untrusted flag changed
        self.untrusted_replay = 0  # decisions whose untrusted masks come from the log (a resumed run)
        self._untrusted_now = np.zeros(self.n_arms, dtype=bool)
        self._stale = np.zeros(self.n_arms, dtype=bool)  # arms given weights since their untrusted flag was computed
        # While no arm was ever quarantined or flagged, every arm is in play: the policy's plan is this one
        # (read-only, shared by the decisions) instead of masks recomputed at every decision.
        self.any_out = False
        every = np.ones(self.n_arms, dtype=bool)
        every.flags.writeable = False
        self._open_plan = Plan(None, POLICY, every)
        # The learner's stop rule, evaluated once per closed decision (never twice for one state).
        self.stopped = bool(learner.stops and learner.done(self.blocked()))

    @property
    def state(self):
        """The learner's state (a policy's :class:`~pmcbandit.policies.BanditState` or
        identification statistics).
        """
        return self.learner.state

    @property
    def info_replayable(self) -> bool:
        return self.learner.info_replayable

    # --- time ---------------------------------------------------------------------
    def restart_clock(self) -> None:
        self._t0 = time.perf_counter()
        self._c0 = time.process_time()
        self._cpu_read, self._cpu_next = 0.0, -math.inf
        self.remote_cpu = 0.0

    def cpu_seconds(self) -> float:
        """CPU seconds of the run: this process's (the driver, and pulls run in it) plus what remote
        workers reported for the pulls that came back (:attr:`pmcbandit.runtime.executors.local.Outcome.cpu`).
        """
        return self.cpu_offset + time.process_time() - self._c0 + self.remote_cpu

    def progress(self, se: float = float("nan"), cpu: bool = True) -> Progress:
        """Pulls done, wall and CPU seconds of the run (CPU is NaN when ``cpu=False``: the
        process clock is a system call, and most budgets do not read it).
        """
        return _new(Progress, (
            self.rows,
            self.wall_offset + time.perf_counter() - self._t0,
            self.cpu_seconds() if cpu else math.nan,
            se,
        ))

    # --- choosing ------------------------------------------------------------------
    @property
    def unreliable(self) -> np.ndarray:
        """Arms flagged unreliable at or before the current decision (see module docstring)."""
        return (self.unreliable_since >= 0) & (self.unreliable_since <= self.selected)

    def blocked(self) -> np.ndarray:
        """Arms out of play: quarantined or unreliable."""
        if not self.any_out:
            return np.zeros(self.n_arms, dtype=bool)
        return self.quarantined | self.unreliable

    def note_out_of_play(self) -> None:
        """Recompute :attr:`any_out` after ``quarantined`` or ``unreliable_since`` were set from outside (a
        checkpoint's restore).
        """
        self.any_out = bool(self.quarantined.any() or (self.unreliable_since >= 0).any())

    def plan(self, seconds_left: float | None = None) -> Plan | None:
        """The next decision (:class:`~pmcbandit.runtime.guards.Plan`), or ``None`` when no arm may be chosen
        (or an identification algorithm has stopped).

        ``seconds_left`` is the time budget's remainder (``None`` without a time limit).
        """
        learner = self.learner
        if self.stopped:
            return None
        if learner.halts_on_quarantine:
            return None if self.quarantined.any() else Plan(None, POLICY, ~self.quarantined)
        if learner.pinned is not None:  # an oracle plays its arm until it is quarantined, reliable or not
            return None if self.quarantined[learner.pinned] else Plan(None, POLICY, ~self.quarantined)
        if self.guards is None and not self.any_out:
            return self._open_plan
        blocked = self.blocked()
        if self.guards is None:
            return Plan(None, POLICY, ~blocked) if not blocked.all() else None
        untrusted = self.untrusted() if self.guards.untrusted_rule else None
        return self.guards.plan(blocked, seconds_left, learner.mean_loss(),
                                None if untrusted is None else untrusted & ~blocked, decision=self.selected)

    def untrusted(self) -> np.ndarray | None:
        """Arms whose importance weights do not support their variance estimate at this decision
        (:meth:`~pmcbandit.stats.psis.WeightTails.untrusted`; the guards' rule 5); ``None`` without such arms.

        Each change is logged (``untrusted_log``: the decision and the arm), so a resumed run replays the
        masks the original run saw, from the log, while it re-makes the decisions the checkpoint holds (the
        weight tails it restores are those of the last decision).
        """
        if self.tails is None:
            return None
        if self.selected < self.untrusted_replay:
            mask = np.zeros(self.n_arms, dtype=bool)
            for decision, arm in self.untrusted_log:
                if decision > self.selected:
                    break
                mask[arm] = not mask[arm]
            return mask
        stale = np.flatnonzero(self._stale)  # an arm's flag is a function of its weights so far
        if stale.size:
            self._stale[:] = False
            now = self._untrusted_now.copy()
            for arm in stale:
                now[arm] = self.tails.untrusted(int(arm))
                if now[arm] != self._untrusted_now[arm]:
                    self.untrusted_log.append((self.selected, int(arm)))
            self._untrusted_now = now
        return self._untrusted_now

    def replay_untrusted(self, log, decisions: int) -> None:
        """Take the untrusted log of a checkpoint whose ``decisions`` are about to be re-made (:meth:`untrusted`)."""
        self.untrusted_log = [(int(d), int(a)) for d, a in log]
        self.untrusted_replay = int(decisions)
        self._untrusted_now = np.zeros(self.n_arms, dtype=bool)
        for _, arm in self.untrusted_log:
            self._untrusted_now[arm] = not self._untrusted_now[arm]
        self._stale[:] = self.weighted  # recomputed from the restored tails once the replay is done

    def dispatch(self, plan: Plan | None = None) -> list[Ticket]:
        """Open the decision ``plan`` names (the learner's choice when ``plan.arm`` is None;
        :meth:`plan` when ``plan`` is None) and return the tickets to submit, in order.
        """
        if plan is None:
            plan = self.plan()
            if plan is None:
                raise RuntimeError("no decision may be made: every arm is out of play, or the learner stopped")
        learner = self.learner
        selection = learner.choose(self.streams.policy, plan.eligible) if plan.arm is None else learner.forced(plan.arm)
        learner.opened(selection)
        arms, counts = selection
        d = self.selected
        self.selected = d + 1
        next_pull = self.next_pull
        if len(arms) == 1 and counts[0] == 1 and self.guards is None:  # one pull of one arm: most decisions
            arm = arms[0]
            first = next_pull[arm]
            next_pull[arm] = first + 1
            tickets = [_new(Ticket, (d, arm, first))]
        else:
            tickets = []
            for arm, pulls in zip(arms, counts):
                first = next_pull[arm]
                tickets += [_new(Ticket, (d, arm, j)) for j in range(first, first + pulls)]
                next_pull[arm] = first + pulls
                if self.guards is not None:
                    self.guards.dispatched(arm, plan.reason)
            if self.guards is not None and self.guards.idle():
                self.guards = None  # no rule applies to a later decision: the policy alone, as without guards
        self.pulls_dispatched += len(tickets)
        self.decisions[d] = _Decision(arms if type(arms) is tuple else tuple(arms), plan.reason, tickets)
        return tickets

    # --- receiving -----------------------------------------------------------------
    def record(self, outcome) -> Row:
        """History row of a pull that came back (a :class:`Row`).

        ``record`` is a :class:`~pmcbandit.runtime.history.PullRecord` (the observation reduced to one
        number; the reward is filled in by :meth:`absorb`). The pull's log weights, for an arm that
        declares ``importance_weights``, go into its weight tail here: a replayed checkpoint
        restores the tails from the file instead.
        """
        fields, diag, message, info = self._fields(outcome)
        return _new(Row, (_new(PullRecord, fields), diag, message, info))

    def receive(self, outcome) -> None:
        """Record a pull that came back and fold it into the run (:meth:`record`, then :meth:`absorb`)."""
        self._fold(*self._fields(outcome))

    def _fields(self, outcome) -> tuple[list, tuple, str, dict | None]:
        """:meth:`record` with the row's fields as a list (:meth:`_fold` sets the reward in it)."""
        (d, arm, j), status, pull, message, seconds, remote_cpu = outcome
        if pull is None:
            obs = within = cost = math.nan
            size = 0
            info = None
        else:
            values, cost, info = pull
            size = values.size
            if status == "ok":
                # One value is its own observation on either scale (_reduce's batch of one), without the call.
                if size == 1:
                    obs, within = values.item(), _NAN  # values are float64 (Arm.pull): a Python float
                else:
                    obs, within = _reduce(values, self.log_scale)
                if self.bounds is not None and not self.bounds[0] <= obs <= self.bounds[1]:
                    status = "out_of_bounds"
                    message = f"observation {obs!r} outside bounds {self.bounds}"
                elif self.tails is not None and self.weighted[arm]:
                    self._add_weights(arm, values)
            else:
                obs = within = math.nan
        if remote_cpu == remote_cpu:
            self.remote_cpu += remote_cpu
        wall = time.perf_counter()
        if wall >= self._cpu_next:  # the cpu column's clock, read at most every CPU_READ_EVERY (history docstring)
            self._cpu_read = time.process_time() - self._c0
            self._cpu_next = wall + CPU_READ_EVERY
        fields = [d, arm, j, _STATUS_CODE[status], size, self.selected, self.decisions[d].reason, obs, within, cost,
                  _NAN, self.wall_offset + wall - self._t0, self.cpu_offset + self._cpu_read + self.remote_cpu,
                  seconds]
        return fields, self.history.diagnostic_values(info) if self._diagnostics else (), message, info

    def reliability(self, final: bool = False) -> ArmReliability:
        """Per-arm Pareto k-hat of the accumulated importance weights (NaN for other arms and
        while an arm has too few weights), its threshold, the weight counts, the flags, and the
        tail's second moment the combination reads (:meth:`~pmcbandit.stats.psis.WeightTails.tail_excess`).

        ``final``: refit every k-hat on all the weights (during the run a fit is refreshed only
        once an arm's weights grew by 10 %, :class:`~pmcbandit.stats.psis.WeightTails`), and flag an
        arm whose final k-hat exceeds its threshold. During the run the flags also mark the arms
        above their threshold that are still in play (short of draws), so an interim combination
        leaves them out as the final one would.
        """
        k = self.n_arms
        khat = np.full(k, np.nan)
        threshold = np.full(k, np.nan)
        counts = np.zeros(k, dtype=np.int64)
        spread = np.full(k, np.nan)
        excess = np.full(k, np.nan)
        flagged = self.unreliable_since >= 0
        if self.tails is not None:
            for arm in np.flatnonzero(self.weighted):
                khat[arm] = self.tails.khat(arm, refresh=final)
                above = self.tails.unreliable(arm)
                if final and self.unreliable_since[arm] < 0 and above:
                    self._flag(arm)
                flagged[arm] |= above
                threshold[arm] = self.tails.threshold(arm)
                counts[arm] = self.tails.counts[arm]
                if khat[arm] != khat[arm]:
                    spread[arm] = self.tails.log_weight_variance(arm)
                else:
                    excess[arm] = self.tails.tail_excess(arm)
        return ArmReliability(khat, threshold, counts, flagged, spread, excess, self.failed_khat.copy())

    def _flag(self, arm: int) -> None:
        """Mark ``arm`` unreliable from the current decision on, keeping the k-hat it failed with."""
        self.unreliable_since[arm] = self.selected
        self.any_out = True
        self.failed_khat[arm] = (self.tails.khat(arm), self.tails.threshold(arm), self.tails.counts[arm])

    def _add_weights(self, arm: int, log_weights: np.ndarray) -> None:
        """Accumulate an arm's log weights; take it out of play once it is hopeless, or above its threshold under a
        learner that stops (module docstring).
        """
        self.tails.add(arm, log_weights)
        self._stale[arm] = True
        retire = self.tails.unreliable(arm) if self.learner.stops else self.tails.hopeless(arm)
        if self.unreliable_since[arm] < 0 and retire:
            self._flag(arm)

    def absorb(self, row: Row) -> None:
        """Fold one history row (from :meth:`record`, or from a checkpoint with ``info=None``)
        into faults, decisions, the guards' book-keeping and the learner's state.
        """
        rec, diag, message, raw_info = row
        self._fold(list(rec), diag, message, raw_info)

    def _fold(self, fields: list, diag: tuple, message: str, raw_info) -> None:
        """:meth:`absorb` of the row's fields (a list: the reward is set in it)."""
        d, arm, _, status, _, _, _, obs, _, cost, _, _, _, seconds = fields
        decision = self.decisions[d]
        if status:
            decision.failed = True
        else:
            decision.values.append(obs)
            decision.value_arms.append(arm)
            decision.value_diagnostics.append(diag)
            decision.costs.append(cost)
        if self.guards is not None:
            self.guards.observe(arm, seconds, cost if not status else math.nan)
        rows = decision.rows
        r = self.rows
        rows.append(r)
        closes = len(rows) == decision.size
        if closes:
            decision.diagnostics = dict(zip(self.history.diagnostics, diag)) if diag else {}
            decision.info = raw_info
            fields[_REWARD] = self.learner.close(self.streams.policy, decision)
        if self._append_row is None:
            self.history.append_row(_new(PullRecord, fields), diag)
        else:
            self._append_row(fields)
        self.rows = r + 1
        if status:
            self._fault(r, arm, status, message)
        if closes:
            del self.decisions[d]
            if self.learner.stops:
                self.stopped = bool(self.learner.done(self.blocked()))

    def _fault(self, row: int, arm: int, status: int, message: str) -> None:
        self.history.add_fault(row, arm, _STATUS_NAME[status], message)
        if status in _NOT_THE_ARMS_FAULT:
            return
        self.faults[arm] += 1
        if self.faults[arm] >= self.max_faults and not self.quarantined[arm]:
            self.quarantined[arm] = True
            self.any_out = True

    def pending_tickets(self) -> list[Ticket]:
        """Tickets dispatched whose pull has not come back (re-submitted on resume)."""
        out = []
        if not self.decisions:
            return out
        pull_index = self.history.column("pull_index")
        arm = self.history.column("arm")
        for d, dec in sorted(self.decisions.items()):
            done = {(int(arm[r]), int(pull_index[r])) for r in dec.rows}
            out += [t for t in dec.tickets if (t.arm, t.pull_index) not in done]
        return out


def _reduce(values: np.ndarray, log_scale: bool) -> tuple[float, float]:
    r"""One observation per pull: the batch mean and the within-batch variance of that mean.

    Linear: :math:`\bar x` and :math:`s^2/m`. Log-scale (``values`` are log-weights):
    :math:`\log \frac1m \sum_i e^{x_i}` (log-sum-exp about the maximum), and the variance
    of the mean of the weights relative to the squared mean, :math:`s^2_{w/\bar w}/m`.
    ``nan`` variance for batches of one. Sums of squares are NumPy's pairwise sums, never BLAS's ``dot``, whose
    kernel (and so the last bit) can depend on the array's alignment: a pull reduced in a worker process must give
    the same bits as in this one.
    """
    m = values.size
    if log_scale:
        top = values.max()
        if m == 1:
            return float(top), math.nan
        rel = np.exp(values - top)
        total = rel.sum()
        obs = float(top + math.log(total / m))
        rel *= m / total  # weights relative to their mean
        dev = rel - 1.0
        return obs, float(np.sum(dev * dev) / (m - 1) / m)
    if m == 1:
        return float(values[0]), math.nan
    mean = values.sum() / m
    dev = values - mean
    return float(mean), float(np.sum(dev * dev) / (m - 1) / m)
