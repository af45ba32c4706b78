"""One model's evidence run, spent in slices: the slices' pulls merged into one result.

:func:`pmcbandit.compare_models` gives a model its budget in slices, each an
:func:`~pmcbandit.estimate_evidence` run on the model's one pool of arms with its own random
stream. Every pull of every slice is an independent draw of its arm, so the slices' histories
are concatenated and combined as one run's: :class:`~pmcbandit.result.RunResult` recomputes each
arm's mean and variance over all its pulls and combines the arms as usual, and the standard error
is that of one run of the summed length (no slice is weighted by its own estimated variance,
which would correlate the weights with the estimates).

Merging rules (:func:`merge_slices`)
------------------------------------
* rows keep their order; ``decision`` and ``selected_before`` are offset so decisions stay
  distinct, ``pull_index`` by the arm's pulls in earlier slices, ``wall``/``cpu`` by the time of
  earlier slices; faults keep their messages with their rows renumbered;
* an arm is quarantined, or flagged unreliable by its Pareto :math:`\\hat k`, if any slice flagged
  it, and :func:`slice_arms` leaves it out of later slices (as one run stops choosing it);
* its :math:`\\hat k` is the largest over the slices with one (with that slice's threshold) and its
  weight count the sum: a conservative reading, as the slices' weights are not kept.
"""

from __future__ import annotations

import json

import numpy as np

from pmcbandit.evidence.estimate import EvidenceResult
from pmcbandit.result import ArmReliability, RunResult
from pmcbandit.runtime.history import History

__all__ = ["merge_slices", "slice_arms"]


def slice_arms(n_arms: int, slices: list[tuple[list[int], RunResult]]) -> list[int]:
    """Indices of the pool's arms a new slice may use: those no earlier slice quarantined or flagged."""
    out = np.zeros(n_arms, dtype=bool)
    for index, result in slices:
        out[np.asarray(index)[result.quarantined | result.reliability.unreliable]] = True
    return [k for k in range(n_arms) if not out[k]]


def merge_slices(arm_names: list[str], slices: list[tuple[list[int], RunResult]], settings: dict,
                 notes=()) -> EvidenceResult:
    """One :class:`~pmcbandit.evidence.EvidenceResult` from a model's slices (module docstring).

    Parameters
    ----------
    arm_names : list of str
        The model's whole pool.
    slices : list of (list of int, RunResult)
        Each slice's arms (indices into the pool) and result, in the order they ran.
    settings : dict
        Settings of the merged run (the first slice's, updated by the caller).
    notes : sequence of str
        Notes on the pool (arms left out or shrunk), put before the slices' own notes.
    """
    n_arms = len(arm_names)
    diagnostics = list(dict.fromkeys(d for _, r in slices for d in r.history.diagnostics))
    columns: dict[str, list[np.ndarray]] = {}
    faults: list = []
    khat = np.full(n_arms, np.nan)
    threshold = np.full(n_arms, np.nan)
    n_weights = np.zeros(n_arms, dtype=np.int64)
    unreliable = np.zeros(n_arms, dtype=bool)
    spread = np.full(n_arms, np.nan)  # an arm in several slices: the largest spread (the cautious one)
    excess = np.full(n_arms, np.nan)  # an arm in several slices: the tails' second moments add up
    failed = np.full((n_arms, 3), np.nan)  # an arm in several slices: the k-hat it first failed with
    quarantined = np.zeros(n_arms, dtype=bool)
    pulls = np.zeros(n_arms, dtype=np.int64)
    rows = decisions = 0
    wall = cpu = 0.0
    notes: list[str] = list(notes)
    for index, result in slices:
        index = np.asarray(index, dtype=np.int64)
        h = result.history
        arrays = h.arrays()
        arm = index[arrays["arm"]]
        arrays["arm"] = arm
        arrays["pull_index"] = arrays["pull_index"] + pulls[arm]
        arrays["decision"] = arrays["decision"] + decisions
        arrays["selected_before"] = arrays["selected_before"] + decisions
        arrays["wall"] = arrays["wall"] + wall
        arrays["cpu"] = arrays["cpu"] + cpu
        n = len(h)
        for name in dict.fromkeys([*arrays, *diagnostics]):
            columns.setdefault(name, []).append(arrays[name] if name in arrays else np.full(n, np.nan))
        faults.extend((row + rows, int(index[a]), status, message) for row, a, status, message in h.faults)
        rel = result.reliability
        for local, k in enumerate(index):
            n_weights[k] += rel.n_weights[local]
            if rel.khat[local] == rel.khat[local] and not rel.khat[local] <= khat[k]:
                khat[k], threshold[k] = rel.khat[local], rel.threshold[local]
        unreliable[index] |= rel.unreliable
        if rel.failed is not None:  # the first slice in which an arm failed says at what k-hat
            first = index[~np.isnan(rel.failed[:, 0]) & np.isnan(failed[index, 0])]
            failed[first] = rel.failed[np.isin(index, first)]
        if rel.log_w_var is not None:
            spread[index] = np.fmax(spread[index], rel.log_w_var)
        if rel.tail_excess is not None:
            mine = np.isfinite(rel.tail_excess) | (rel.tail_excess == -np.inf)
            excess[index[mine]] = np.logaddexp(np.nan_to_num(excess[index[mine]], nan=-np.inf), rel.tail_excess[mine])
        quarantined[index] |= result.quarantined
        pulls += np.bincount(arm, minlength=n_arms)
        rows += n
        if n:
            decisions = int(arrays["decision"].max()) + 1
            wall = float(np.nanmax(arrays["wall"]))
            cpu = float(np.nanmax(arrays["cpu"])) if np.isfinite(arrays["cpu"]).any() else cpu
        notes.extend(m for m in result.notes if m not in notes)
    data = {f"col_{name}": np.concatenate(parts) for name, parts in columns.items()}
    data["faults_json"] = np.asarray(json.dumps(faults))
    data["diagnostics_json"] = np.asarray(json.dumps(diagnostics))
    history = History.from_npz_dict(data)
    first = slices[0][1]
    merged = RunResult(arm_names, history, first.combine, first.log_scale, quarantined, settings, None,
                       ArmReliability(khat, threshold, n_weights, unreliable, spread, excess, failed), notes)
    return EvidenceResult.from_run(merged)
