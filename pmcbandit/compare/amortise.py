r"""Compile time against per-run cost: which arm is fastest for a user who runs the model once or many times.

An arm with a one-off compile cost :math:`C_k` (seconds) and efficiency :math:`e_k = 1/(V_k \bar c_k)`
(:mod:`pmcbandit.compare.efficiency`) needs :math:`\tau_k = 1/(e_k v)` seconds to reach an estimate
of variance :math:`v`. Take as one *run* of the model an estimate as precise as one pull of the
selected arm :math:`s` (:math:`v = V_s`); then :math:`\tau_k = \bar c_s\,\rho_k` with
:math:`\rho_k = e_s/e_k`, and :math:`R` runs cost

.. math:: T_k(R) = C_k + R\,\bar c_s\,\rho_k .

The selected arm (the most efficient) is the fastest for every :math:`R \ge R^*`, where for each arm
:math:`k` that compiles faster (:math:`C_k < C_s`)

.. math:: R^*_k = \frac{C_s - C_k}{\bar c_s(\rho_k - 1)},

and :math:`R^* = \max(1, \lceil \max_k R^*_k \rceil)`. Computed with the lower ends of the simultaneous
ratio intervals :math:`\rho_k \ge \exp(\ell_s - u_k)` (and the lower bound of :math:`\bar c_s`), the
statement "the selection is the fastest from :math:`R^*` runs on" holds whenever the intervals
do, with probability at least :math:`1 - \delta` (``runs_guaranteed``; infinite when an interval
cannot exclude :math:`\rho_k \le 1`). With point estimates it is the break-even point
(``runs_point``). For a single run (:math:`R = 1`) the fastest arm by point estimates is
``once``. Compile seconds are measured once, as wall time, and taken as known; per-pull costs are
the arms' own unit (CPU seconds by default), so the comparison treats a CPU second as a second.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["Amortisation", "amortisation"]


class Amortisation(NamedTuple):
    """Module docstring: ``once`` (the fastest arm for one run, compile included, by point estimates),
    ``many`` (the selection: the fastest once compile is amortised), and from how many runs on
    ``many`` is the fastest: ``runs_point`` (point estimates) and ``runs_guaranteed`` (simultaneous
    intervals; ``inf`` when they do not establish it).
    """

    once: int
    many: int
    runs_point: float
    runs_guaranteed: float


def _runs(compile_seconds, selected, ratio, unit_cost) -> float:
    worst = 1.0
    for k in range(compile_seconds.size):
        if k == selected or compile_seconds[k] >= compile_seconds[selected]:
            continue
        if not ratio[k] > 1.0 or not unit_cost > 0:
            return math.inf
        worst = max(worst, (compile_seconds[selected] - compile_seconds[k]) / (unit_cost * (ratio[k] - 1.0)))
    return float(math.ceil(worst - 1e-12))


def amortisation(log_eff, log_lower, log_upper, cost, cost_lower, compile_seconds, selected: int,
                 in_play) -> Amortisation | None:
    """The statement of the module docstring for arm ``selected`` against the other arms ``in_play``.

    Parameters
    ----------
    log_eff, log_lower, log_upper : array
        Per arm: the log-efficiency and its simultaneous bounds.
    cost, cost_lower : float
        The selected arm's cost per pull and its lower bound.
    compile_seconds : array
        Per arm, seconds (NaN: unknown).
    selected : int
    in_play : array of bool
        The arms compared.

    Returns
    -------
    Amortisation or None
        ``None`` when a compared arm's compile time or efficiency is unknown.
    """
    in_play = np.asarray(in_play, dtype=bool)
    idx = np.flatnonzero(in_play)
    compile_seconds = np.asarray(compile_seconds, dtype=np.float64)
    p, lo, hi = (np.asarray(a, dtype=np.float64) for a in (log_eff, log_lower, log_upper))
    if not in_play[selected] or not np.all(np.isfinite(compile_seconds[idx])) or not np.all(np.isfinite(p[idx])):
        return None
    sub = int(np.flatnonzero(idx == selected)[0])
    rho_point = np.exp(p[selected] - p[idx])
    rho_lower = np.exp(lo[selected] - hi[idx])
    c = compile_seconds[idx]
    once = int(idx[np.argmin(c + float(cost) * rho_point)])
    return Amortisation(once, int(selected), _runs(c, sub, rho_point, float(cost)),
                        _runs(c, sub, rho_lower, float(cost_lower)))
