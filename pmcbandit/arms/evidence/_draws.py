r"""Posterior draws as a by-product of importance sampling: a bounded weighted reservoir per arm.

An importance-sampling arm draws :math:`x_i \sim q` and weights :math:`w_i = \tilde p(x_i)/q(x_i)`
to estimate the evidence; resampled by their weights, the same points are approximate posterior
draws. Each arm keeps at most ``capacity`` of them, chosen by the **Gumbel-top-k** rule: point
:math:`i` gets the key :math:`\log w_i + G_i` with :math:`G_i` standard Gumbel, and the
``capacity`` largest keys are kept. This is sampling without replacement with probabilities
proportional to the weights (Efraimidis & Spirakis 2006; Vieira 2014; Kool et al. 2019, Sec. 2),
over every point the arm ever drew, in bounded memory (``capacity x dim`` floats), and two
reservoirs merge by keeping the largest keys of both. The running :math:`\log\sum w` and
:math:`\log\sum w^2` give Kish's effective sample size :math:`(\sum w)^2/\sum w^2` of all the weights.

The Gumbel noise comes from a child stream spawned from the pull's generator
(:meth:`numpy.random.Generator.spawn`), which leaves the pull's own stream untouched: keeping the
draws changes no estimate. Draws are kept only where the arm runs in this process (threads); a
copy shipped to a worker process starts empty and its draws are not returned.

Whether draws are offered at all is decided by the run's Pareto :math:`\hat k` of the arm's
weights (:func:`posterior_draws`): only an arm whose :math:`\hat k` was measured and passed.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np

__all__ = ["DrawReservoir", "ReservoirState", "keep_draws", "posterior_draws", "PosteriorDraws", "DRAW_CAPACITY",
           "reservoir_states", "reset_reservoirs", "offer_draws"]

#: Draws kept per arm.
DRAW_CAPACITY = 1000


class ReservoirState(NamedTuple):
    """A reservoir's content: points (unconstrained, ``(m, dim)``), their keys, the log sums of
    ``w`` and ``w^2`` over every weight seen, and how many there were.
    """

    x: np.ndarray
    keys: np.ndarray
    log_s1: float
    log_s2: float
    count: int

    @property
    def ess(self) -> float:
        """Kish's effective sample size of all the weights seen (0 before any)."""
        return float(np.exp(2 * self.log_s1 - self.log_s2)) if self.count else 0.0

    def merge(self, other: "ReservoirState", capacity: int = DRAW_CAPACITY) -> "ReservoirState":
        if not self.count:
            return other
        if not other.count:
            return self
        return _top(np.concatenate([self.x, other.x]), np.concatenate([self.keys, other.keys]),
                    float(np.logaddexp(self.log_s1, other.log_s1)), float(np.logaddexp(self.log_s2, other.log_s2)),
                    self.count + other.count, capacity)

    @classmethod
    def empty(cls) -> "ReservoirState":
        return cls(np.empty((0, 0)), np.empty(0), -np.inf, -np.inf, 0)


def _top(x, keys, log_s1, log_s2, count, capacity) -> ReservoirState:
    if keys.size > capacity:
        keep = np.argpartition(keys, keys.size - capacity)[keys.size - capacity:]
        x, keys = x[keep], keys[keep]
    return ReservoirState(x, keys, log_s1, log_s2, count)


class DrawReservoir:
    """The Gumbel-top-k reservoir of one arm (module docstring); thread-safe; pickles empty."""

    def __init__(self, capacity: int = DRAW_CAPACITY):
        self.capacity = int(capacity)
        self._lock = threading.Lock()
        self._state = ReservoirState.empty()

    def add(self, rng: np.random.Generator, x: np.ndarray, log_w: np.ndarray) -> None:
        """Offer the points ``x`` (``(n, dim)``) with log weights ``log_w``; ``-inf`` weights are never kept."""
        log_w = np.asarray(log_w, dtype=float)
        finite = np.isfinite(log_w)
        if not finite.any():
            return
        # A stream of its own, keyed off the pull's seed with a reserved spawn key: neither the pull's
        # stream nor its spawn counter (which the model's samplers use) is touched.
        seq = getattr(rng.bit_generator, "seed_seq", None)
        if seq is None or not hasattr(seq, "entropy") or not hasattr(seq, "spawn_key"):
            return  # a generator without a seed sequence: keep nothing rather than perturb it
        noise = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            seq.entropy, spawn_key=tuple(seq.spawn_key) + (_RESERVOIR_KEY,))))
        keys = log_w[finite] + noise.gumbel(size=int(finite.sum()))
        new = _top(np.asarray(x, dtype=float)[finite], keys, float(np.logaddexp.reduce(log_w[finite])),
                   float(np.logaddexp.reduce(2 * log_w[finite])), int(finite.sum()), self.capacity)
        with self._lock:
            self._state = self._state.merge(new, self.capacity)

    def state(self) -> ReservoirState:
        with self._lock:
            return self._state

    def reset(self) -> None:
        with self._lock:
            self._state = ReservoirState.empty()

    def __getstate__(self):
        return {"capacity": self.capacity}

    def __setstate__(self, state):
        self.__init__(state["capacity"])


#: The spawn-key word of the reservoir's stream (past any count of children a pull spawns).
_RESERVOIR_KEY = 2**32 - 1


def keep_draws(arm, rng, x, log_w) -> None:
    """Offer a pull's points to ``arm.draw_store`` (created on first use)."""
    store = arm.__dict__.get("draw_store")
    if store is None:
        store = arm.__dict__["draw_store"] = DrawReservoir()
    store.add(rng, x, log_w)


def reservoir_states(arms) -> dict:
    """Arm name -> :class:`ReservoirState` of the arms that keep draws."""
    return {a.name: a.__dict__["draw_store"].state() for a in arms if a.__dict__.get("draw_store") is not None}


def reset_reservoirs(arms) -> None:
    """Empty the arms' reservoirs (a run offers the draws of its own pulls only)."""
    for a in arms:
        store = a.__dict__.get("draw_store")
        if store is not None:
            store.reset()


def offer_draws(result, states: dict, arms) -> PosteriorDraws | None:
    """:func:`posterior_draws` with the density of the arms that kept the draws (``None`` without one)."""
    density = next((a.density for a in arms if a.name in states and getattr(a, "density", None) is not None), None)
    return None if density is None else posterior_draws(result, states, density)


class PosteriorDraws(NamedTuple):
    """Posterior draws offered with an evidence run: ``values`` maps each free variable (constrained
    scale, PyMC's names) to an array ``(n_draws, *shape)``; ``arm`` the arm they came from, its
    ``ess`` (Kish, of all its weights), ``khat`` and the number of weights ``n_weights`` behind them.
    """

    values: dict
    arm: str
    ess: float
    khat: float
    n_weights: int


def posterior_draws(result, states: dict, density) -> PosteriorDraws | None:
    """Draws of the arm whose weights passed the Pareto :math:`\\hat k` check with the largest ESS, or
    ``None`` when no such arm kept draws (no measured :math:`\\hat k`, flagged, or quarantined).

    ``states``: arm name -> :class:`ReservoirState`; ``density``: the
    :class:`~pmcbandit.arms.evidence.ModelDensity` whose unconstrained space the points are on.
    """
    rel = result.reliability
    best = None
    for k, name in enumerate(result.arm_names):
        state = states.get(name)
        ok = (state is not None and state.keys.size >= 2 and rel.khat[k] == rel.khat[k]
              and not rel.unreliable[k] and not result.quarantined[k] and rel.khat[k] <= rel.threshold[k])
        if ok and (best is None or state.ess > best[1].ess):
            best = (k, state)
    if best is None:
        return None
    k, state = best
    order = np.argsort(-state.keys)  # Gumbel-top-k order: a weighted sample, not sorted by value
    return PosteriorDraws(constrained(density, state.x[order]), result.arm_names[k], state.ess,
                          float(rel.khat[k]), int(state.count))


def constrained(density, x: np.ndarray) -> dict:
    """Unconstrained points ``(n, dim)`` as ``{variable: (n, *shape)}`` on the constrained scale: the
    free variables and deterministics, PyMC's names, transformed value variables left out.
    """
    from pymc.util import get_default_varnames

    model = density.model
    outs = [v for v in model.unobserved_value_vars
            if v.name in get_default_varnames([v.name], include_transformed=False)]
    fn = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore", point_fn=True)
    rows = [fn(density.unravel(point)) for point in x]
    return {v.name: np.stack([np.asarray(r[i]) for r in rows]) for i, v in enumerate(outs)}
