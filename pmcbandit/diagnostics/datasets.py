"""The datasets of a run's InferenceData, built with xarray (the ArviZ door wraps them).

:mod:`pmcbandit.diagnostics.arviz_io` is the only module that imports :mod:`arviz`; it turns the
``(attrs, groups)`` pairs built here into :class:`arviz.InferenceData` (layouts in its docstring):
:func:`run_groups` (allocation runs), :func:`identification_groups`, :func:`comparison_groups`
and :func:`full_bandit_groups`. Attrs are made netCDF-safe by :func:`encode_attrs` and read back by
:func:`decode_attrs`.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import re

import numpy as np
import xarray as xr

from pmcbandit.runtime.history import FLOAT_COLUMNS, INT_COLUMNS, REASONS, STATUS

__all__ = ["RENAMED", "run_groups", "model_comparison_groups",
           "identification_groups", "comparison_groups", "full_bandit_groups",
           "encode_attrs", "decode_attrs"]

#: History column -> sample_stats variable, where the names differ.
RENAMED = {"obs": "value", "wall": "time"}
_ARM_STATUS = ("ok", "quarantined", "unreliable", "unchecked", "not_pulled", "zero_variance", "missed_mass")
_RESERVED = {"pull", "arm_name", *(RENAMED.get(c, c) for c in (*INT_COLUMNS, *FLOAT_COLUMNS))}

_DESCRIPTIONS = {
    "decision": "index of the bandit decision the pull served (a paired-reward decision has two pulls)",
    "arm": "index of the pulled arm (names in the arm_name coordinate)",
    "pull_index": "the arm's own pull counter (pull j of arm k draws from a fixed random stream)",
    "batch_size": "number of estimates the pull returned (its batch mean is one observation)",
    "selected_before": "decisions dispatched when the pull came back (replays the order on resume)",
    "seconds": "wall seconds the pull took",
    "within_var": "variance of the batch mean estimated inside the batch; NaN for batches of one",
    "cost": "cost delta of the pull (CPU seconds, or the arm's declared cost)",
    "reward": "reward fed to the policy when this pull completed its decision, else NaN",
    "time": "wall-clock seconds since the start of the run when the pull came back",
    "cpu": "process CPU seconds since the start of the run when the pull came back (this process's clock read at "
           "most once per millisecond of wall time, so its share may lag by that millisecond's CPU)",
}


def _provenance() -> dict:
    """Who wrote the file and when (ArviZ's ``inference_library`` keys; the door adds ``arviz_version``)."""
    version = importlib.metadata.version("pmcbandit")
    return dict(pmcbandit_version=version, inference_library="pmcbandit", inference_library_version=version,
                created_at=datetime.datetime.now(datetime.timezone.utc).isoformat())


def run_groups(result) -> tuple[dict, dict]:
    """Attrs and groups (``sample_stats``, ``arm_summary``) of an allocation run."""
    attrs = _run_attrs(result)
    stats = _sample_stats(result, attrs)
    if result.log_scale:
        # Where pm.sample_smc puts it (dims chain x draw), so code written for SMC output reads it.
        stats["log_marginal_likelihood"] = xr.DataArray(
            np.array([[result.log_estimate]]), dims=("chain", "draw"),
            attrs={"description": "log evidence log Z of the run (its SE is attrs['log_se'])",
                   "log_se": result.log_se, "interval_status": result.interval_status})
    groups = dict(sample_stats=stats, arm_summary=_arm_summary(result))
    draws = getattr(result, "posterior_draws", None)
    if draws is not None:
        groups["posterior"] = _posterior(draws)
    return attrs, groups


def _posterior(draws) -> xr.Dataset:
    """The ``posterior`` group (one chain) of an evidence run's resampled importance draws."""
    data = {}
    for name, values in draws.values.items():
        values = np.asarray(values)[None, ...]
        dims = ("chain", "draw", *(f"{name}_dim_{i}" for i in range(values.ndim - 2)))
        data[name] = (dims, values)
    n = next(iter(draws.values.values())).shape[0] if draws.values else 0
    return xr.Dataset(data, coords={"chain": [0], "draw": np.arange(n)}, attrs={
        "description": "approximate posterior draws, a by-product of the evidence run: the importance points of "
                       "one arm resampled by weight (Gumbel-top-k), offered because the arm's Pareto k-hat passed",
        "arm": draws.arm, "ess": draws.ess, "khat": draws.khat, "n_weights": draws.n_weights,
        "inference_library": "pmcbandit"})


def model_comparison_groups(comparison) -> tuple[dict, dict]:
    """Attrs and groups of a :class:`~pmcbandit.evidence.comparison_result.ModelComparison`: ``model_summary``
    (dim ``model``, best first: the table's columns, ``prior``, ``slices``, ``pulls``) and
    ``sample_stats`` (dim ``slice``: the model each slice went to, the log-BF SE after it).
    """
    table = comparison.to_dataframe()
    names = np.asarray([str(n) for n in table.index], dtype=str)
    summary = xr.Dataset(
        {col: (("model",), np.asarray(table[col].to_numpy(), dtype=str if col == "interval_status" else None))
         for col in table.columns},
        coords={"model": names})
    order = [comparison.names.index(name) for _, name, _ in comparison.allocation]
    stats = xr.Dataset(
        {"model": (("slice",), np.asarray(order, dtype=np.int64), {"description": "index of the model in model_name"}),
         "log_bf_se": (("slice",), np.asarray([se for _, _, se in comparison.allocation], dtype=np.float64),
                       {"description": "SE of the two leading models' log Bayes factor after the slice"})},
        coords={"slice": np.arange(len(order)), "model_name": np.asarray(comparison.names, dtype=str)})
    raw = dict(comparison.settings, kind="model_comparison", best=comparison.best, models=comparison.names,
               warnings=[str(w) for w in comparison.warnings()], notes=list(comparison.notes), **_provenance())
    attrs = encode_attrs(raw)
    stats.attrs.update(attrs)
    return attrs, dict(sample_stats=stats, model_summary=summary)


def identification_groups(result) -> tuple[dict, dict]:
    """Attrs and groups of an :class:`~pmcbandit.identification.result.IdentificationResult`
    (layout: :func:`~pmcbandit.diagnostics.arviz_io.identification_to_inference_data`).
    """
    t = result.arm_table()
    attrs = _loop_result_attrs(result, "identification", samples=result.samples)
    spec = {
        "counts": (np.asarray(t["counts"], dtype=np.int64), "valid observations of the arm"),
        "mean": (np.asarray(t["mean"], dtype=np.float64), "mean observation"),
        "lower": (np.asarray(t["lower"], dtype=np.float64), "lower confidence bound at the stop"),
        "upper": (np.asarray(t["upper"], dtype=np.float64), "upper confidence bound at the stop"),
        "selected": (np.asarray(t["selected"], dtype=bool), "in the algorithm's answer"),
        "quarantined": (np.asarray(t["quarantined"], dtype=bool), "never pulled again after faults"),
    }
    return attrs, dict(sample_stats=_sample_stats(result, attrs), arm_summary=_arm_dataset(result.arm_names, spec))


def comparison_groups(result) -> tuple[dict, dict]:
    """Attrs and groups of a :class:`~pmcbandit.compare.ComparisonResult`, ``efficiency_ratio`` included
    (layout: :func:`~pmcbandit.diagnostics.arviz_io.comparison_to_inference_data`).
    """
    t = result.arm_table()
    a = result.amortisation()
    amortised = None if a is None else dict(once=result.arm_names[a.once], many=result.arm_names[a.many],
                                            runs_point=a.runs_point, runs_guaranteed=a.runs_guaranteed)
    attrs = _loop_result_attrs(result, "comparison", unresolved=result.unresolved, excluded=result.excluded,
                               proven_factor=result.proven_factor, amortisation=amortised)
    described = {
        "pairs": "valid pairs of pulls (variance observations 0.5 (X - X')^2)",
        "variance": "variance of one pull's estimate (mean of the pair observations)",
        "variance_lower": "lower confidence-sequence bound of the variance",
        "variance_upper": "upper confidence-sequence bound of the variance",
        "cost": "cost per pull (declared, or mean of the reported costs)",
        "cost_lower": "lower confidence-sequence bound of the cost per pull",
        "cost_upper": "upper confidence-sequence bound of the cost per pull",
        "efficiency": "1 / (variance x cost)",
        "efficiency_lower": "lower bound, simultaneous over arms and time with probability 1 - delta",
        "efficiency_upper": "upper bound, simultaneous over arms and time with probability 1 - delta",
        "compile_seconds": "one-off compile wall seconds, measured once before the run (NaN: none reported)",
        "divergent_share": "share of the chains' kept iterations that diverged, over the arm's pulls (NaN: none "
                           "reported)",
        "rhat": "potential scale reduction across the arm's pulls, one chain each (NaN: none reported)",
        "selected": "among the k most efficient arms",
        "z": "standardised deviation of the arm's estimate in the validity gate (NaN: not tested)",
    }
    spec = {name: (np.asarray(t[name]), d) for name, d in described.items()}
    summary = _arm_dataset(result.arm_names, spec, status=(t["status"], ("ranked", "excluded", "unreliable",
                           "quarantined"), "ranked, or why not (validity gate, Pareto k-hat, faults)"))
    names = np.asarray(result.arm_names, dtype=str)
    n = len(names)
    ratio = {key: np.full((n, n), np.nan) for key in ("estimate", "lower", "upper")}
    for i in range(n):
        for j in range(n):
            if i != j:
                r = result.ratio(names[i], names[j])
                ratio["estimate"][i, j], ratio["lower"][i, j], ratio["upper"][i, j] = r.estimate, r.lower, r.upper
    ratios = xr.Dataset(
        {key: (("numerator", "denominator"), v, {"description": f"{key} of efficiency(numerator) / "
                                                                "efficiency(denominator)"})
         for key, v in ratio.items()},
        coords={"numerator": names, "denominator": names},
    )
    return attrs, dict(sample_stats=_sample_stats(result, attrs), arm_summary=summary, efficiency_ratio=ratios)


def full_bandit_groups(result) -> tuple[dict, dict]:
    """Attrs and groups of a :class:`~pmcbandit.full_bandit.result.FullBanditResult`
    (layout: :func:`~pmcbandit.diagnostics.arviz_io.full_bandit_to_inference_data`).
    """
    raw = dict(result.settings)
    messages = [w[1] if isinstance(w, tuple) else w for w in result.warnings()]
    raw.update(kind="full_bandit", selected=result.selected, samples=result.samples, warnings=messages,
               **_provenance())
    attrs = encode_attrs(raw)
    stats = xr.Dataset(
        {"super_arm": (("pull", "member"), result.super_arms, {"description": "arms of the pulled super-arm"}),
         "reward": (("pull",), result.rewards, {"description": "observed sum of the super-arm's rewards"}),
         "statistic": (("pull",), result.statistics, {"description": "stopping statistic after the pull"})},
        coords={"pull": np.arange(result.samples), "member": np.arange(result.super_arms.shape[1])}, attrs=attrs)
    chosen = np.zeros(len(result.arm_names), dtype=bool)
    chosen[result.selected_indices] = True
    summary = _arm_dataset(result.arm_names, {
        "theta_hat": (result.theta_hat, "least-squares estimate at the end"),
        "width": (result.width, "C_t * sqrt((A_t^-1)_ii) at the end"),
        "pulls": (result.arm_pulls, "pulled super-arms containing the arm"),
        "selected": (chosen, "in the recommended super-arm"),
    })
    return attrs, dict(sample_stats=stats, arm_summary=summary)


# --- building blocks ------------------------------------------------------------------
def _sample_stats(result, attrs: dict) -> xr.Dataset:
    h = result.history
    cols = h.arrays()
    names = np.asarray(result.arm_names, dtype=str)
    data_vars = {}
    for col in (*INT_COLUMNS, *FLOAT_COLUMNS):
        var = RENAMED.get(col, col)
        var_attrs = {"description": _DESCRIPTIONS.get(var, "")}
        if col == "status":
            # CF flag convention: readable by any netCDF tool, no string variable needed.
            var_attrs = {
                "description": "outcome of the pull",
                "flag_values": np.arange(len(STATUS), dtype=np.int64),
                "flag_meanings": " ".join(STATUS),
            }
        elif col == "reason":
            var_attrs = {
                "description": "why the decision's arm was chosen (pmcbandit.runtime.guards)",
                "flag_values": np.arange(len(REASONS), dtype=np.int64),
                "flag_meanings": " ".join(REASONS),
            }
        elif col == "obs":
            var_attrs = {
                "description": "the observation: batch mean of the pull's estimates (NaN if the pull failed)",
                "scale": "log" if result.log_scale else "linear",
            }
            if result.log_scale:
                var_attrs["description"] = (
                    "the observation as a log: log-mean-exp of the pull's log-estimates (NaN if the pull failed)"
                )
        elif col == "within_var" and result.log_scale:
            var_attrs["description"] += "; relative (divided by the squared linear observation)"
        data_vars[var] = (("pull",), cols[col], var_attrs)
    mapping = []
    for col in h.diagnostics:
        var = _diagnostic_name(col, data_vars)
        mapping.append([col, var])
        data_vars[var] = (("pull",), cols[col], {"description": f"arm diagnostic {col!r} (NaN where not reported)"})
    arms = cols["arm"]
    coords = {
        "pull": np.arange(len(h), dtype=np.int64),
        "arm_name": (("pull",), names[arms] if names.size else np.asarray([], dtype=str)),
    }
    ds_attrs = dict(attrs)
    ds_attrs["diagnostics"] = json.dumps(mapping)
    return xr.Dataset(data_vars, coords=coords, attrs=ds_attrs)


def _diagnostic_name(col: str, taken) -> str:
    var = re.sub(r"[^0-9A-Za-z_.\-+]", "_", col) or "diag"
    if var in _RESERVED or var in taken:
        var = f"diag_{var}"
    while var in taken:
        var = f"{var}_"
    return var


def _arm_summary(result) -> xr.Dataset:
    t = result.arm_table()
    c = result.combined
    scale_note = (
        f"working scale exp(value - shift), shift = {result.shift!r}" if result.log_scale else "linear scale"
    )
    spec = {
        "pulls": (t["pulls"].astype(np.int64), "pulls of the arm, faulty ones included"),
        "faults": (t["faults"].astype(np.int64), "faulty pulls (exception, non-finite, timeout, out of bounds)"),
        "n_valid": (np.asarray(c.n, dtype=np.int64), "valid observations used by the combiner"),
        "mean": (np.asarray(t["mean"], dtype=np.float64), f"mean observation ({scale_note})"),
        "var": (np.asarray(t["var"], dtype=np.float64), f"variance V_k of one observation ({scale_note})"),
        "dof": (np.asarray(c.nu, dtype=np.float64), "degrees of freedom of var"),
        "cost": (np.asarray(t["cost"], dtype=np.float64), "mean cost delta_k of a pull"),
        "var_cost": (np.asarray(t["var_cost"], dtype=np.float64),
                     "V_k * delta_k (Neufeld et al. 2014, Sec. 5); V_k * delta_k / Z-hat^2 in a log-scale run"),
        "weight": (np.asarray(t["weight"], dtype=np.float64), "share of the arm in the combined estimate"),
        "quarantined": (np.asarray(t["quarantined"], dtype=bool), "never selected again after faults"),
        "khat": (np.asarray(t["khat"], dtype=np.float64),
                 "Pareto k-hat of the arm's importance weights (Vehtari et al. 2024); NaN where not measured"),
        "khat_threshold": (np.asarray(t["khat_threshold"], dtype=np.float64), "min(1 - 1/log10(n_weights), 0.7)"),
        "n_weights": (np.asarray(t["n_weights"], dtype=np.int64), "importance weights the k-hat was fitted to"),
        "log_w_var": (np.asarray(t["log_w_var"], dtype=np.float64),
                      "variance of the log weights of an arm with too few for a k-hat; NaN otherwise"),
        "tail_excess": (np.asarray(t["tail_excess"], dtype=np.float64),
                        "log of the second moment the weights' fitted tail adds (pmcbandit.stats.pareto_tail); "
                        "NaN where not measured"),
        "unreliable": (np.asarray(result.reliability.unreliable, dtype=bool),
                       "k-hat above its threshold: no combination weight, not chosen again"),
    }
    failed = result.reliability.failed
    if failed is not None:
        spec["khat_failed"] = (np.asarray(failed[:, 0], dtype=np.float64),
                               "k-hat at which an unreliable arm failed the check; NaN for the others")
        spec["khat_failed_threshold"] = (np.asarray(failed[:, 1], dtype=np.float64), "the threshold it exceeded")
        spec["n_weights_failed"] = (np.asarray(failed[:, 2], dtype=np.float64), "its weights then")
    status = (t["status"], _ARM_STATUS, "state of the arm at the end of the run")
    return _arm_dataset(result.arm_names, spec, status=status,
                        attrs={"shift": float(result.shift), "log_scale": int(result.log_scale)})


def _arm_dataset(arm_names, spec: dict, status=None, attrs=None) -> xr.Dataset:
    """A dataset over the ``arm`` dimension: ``spec`` maps a variable to ``(values, description)``;
    ``status = (names, meanings, description)`` adds a ``status`` variable as a CF flag (codes into
    ``meanings``: readable by any netCDF tool, no string variable needed).
    """
    data_vars = {k: (("arm",), v, {"description": d}) for k, (v, d) in spec.items()}
    if status is not None:
        names, meanings, description = status
        codes = np.asarray([meanings.index(x) for x in names], dtype=np.int64)
        data_vars["status"] = (("arm",), codes, {"description": description,
                                                 "flag_values": np.arange(len(meanings), dtype=np.int64),
                                                 "flag_meanings": " ".join(meanings)})
    return xr.Dataset(data_vars, coords={"arm": np.asarray(arm_names, dtype=str)}, attrs=attrs or {})


def _loop_result_attrs(result, kind: str, **extra) -> dict:
    """netCDF-safe attrs of an identification or comparison run: its settings, the answer, the run's
    size, warnings, faults, ``extra`` and provenance.
    """
    settings = dict(result.settings)
    raw = dict(settings)
    raw.update(settings_keys=list(settings), kind=kind, selected=result.selected, n_pulls=len(result.history),
               n_arms=len(result.arm_names), warnings=result.warnings(), notes=list(getattr(result, "notes", ())),
               faults=_faults(result), **extra,
               **_provenance())
    return encode_attrs(raw)


def _run_attrs(result) -> dict:
    """netCDF-safe attrs: settings first, then the combined estimate and provenance."""
    lo, hi = result.ci(0.95)
    llo, lhi = result.log_ci(0.95)
    settings = dict(result.settings)
    settings.setdefault("log_scale", result.log_scale)
    settings.setdefault("combine", result.combine)
    raw = dict(settings)
    raw.update(
        settings_keys=list(settings),
        combine=result.combine,
        log_scale=result.log_scale,
        estimate=result.estimate,
        se=result.se,
        ci95=[lo, hi],
        log_estimate=result.log_estimate,
        log_se=result.log_se,
        log_ci95=[llo, lhi],
        shift=result.shift,
        n_pulls=len(result.history),
        n_arms=len(result.arm_names),
        degenerate=list(result.combined.degenerate),
        interval_status=result.interval_status,
        consistency=_consistency_attrs(result),
        warnings=result.warnings(),
        notes=list(result.notes),
        faults=_faults(result),
        **_provenance(),
    )
    return encode_attrs(raw)


def _faults(result) -> list[dict]:
    return [dict(row=int(r), arm_index=int(a), arm=result.arm_names[a], status=s, message=m)
            for r, a, s, m in result.history.faults]


def _consistency_attrs(result) -> dict:
    h = result.consistency
    return dict(
        q=h.q, df=h.df, p_value=h.p_value, tau2=h.tau2, flagged=bool(h.flagged), alpha=h.alpha,
        compared=[result.arm_names[k] for k in h.compared], outliers=[result.arm_names[k] for k in h.outliers],
        random_effects_estimate=h.estimate, random_effects_se=h.se, random_effects_dof=h.dof,
        scale="log" if result.log_scale else "linear",
    )


def encode_attrs(raw: dict) -> dict:
    """Keep str/int/float (and the two-float interval lists); JSON-encode everything else."""
    out, encoded = {}, []
    for k, v in raw.items():
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool)):
            out[k] = v
        elif k in ("ci95", "log_ci95"):
            out[k] = np.asarray(v, dtype=np.float64)
        else:
            out[k] = json.dumps(v, default=_json_default)
            encoded.append(k)
    out["json_attrs"] = json.dumps(encoded)
    return out


def decode_attrs(attrs: dict) -> dict:
    """The attrs of a stored run with its JSON-encoded entries (listed in ``json_attrs``) decoded."""
    encoded = set(json.loads(str(attrs.get("json_attrs", "[]"))))
    out = {}
    for k, v in attrs.items():
        if k in encoded:
            out[k] = json.loads(str(v))
        elif isinstance(v, np.generic):
            out[k] = v.item()
        else:
            out[k] = v
    return out


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    # A setting JSON cannot hold (a user object) is kept readable; it will not round-trip.
    return repr(obj)


