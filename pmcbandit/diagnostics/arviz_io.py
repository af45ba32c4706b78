r"""The ArviZ door: a run as :class:`arviz.InferenceData` (an ``xarray.DataTree`` on ArviZ >= 1), and back.

With the ArviZ section of :mod:`pmcbandit._compat` (what differs between ArviZ 0.x and 1.x, and
:func:`~pmcbandit._compat.import_arviz`, which this module imports :mod:`arviz` through), this is
the only module of pmcbandit that uses :mod:`arviz` (a test greps the source), so
``import pmcbandit`` stays light and ArviZ's API changes touch one file. On ArviZ 1.x every
``*_to_inference_data`` returns an ``xarray.DataTree`` with the same groups (child nodes) and attrs
(on the root node) as the InferenceData of 0.x, and the netCDF layout is the same, so either version
reads a run written by the other. The groups themselves
are plain xarray datasets built by :mod:`pmcbandit.diagnostics.datasets`; this module wraps them
(allocation runs, identification, comparison and full-bandit runs) and reads allocation runs back.

Layout of the InferenceData written by :func:`to_inference_data`
------------------------------------------------------------------
``sample_stats`` (dimension ``pull``, one entry per pull in the order the pulls came back;
no ``chain``/``draw``: a bandit run is one sequential stream of pulls, not MCMC draws; an
evidence run adds ``log_marginal_likelihood`` with dims ``chain`` x ``draw`` of size 1, where
``pm.sample_smc`` puts it)
    ``arm`` (int) with coordinate ``arm_name``; ``value`` the observation (the batch mean
    :math:`Y = \frac1m\sum_i X_i`, or :math:`\log\frac1m\sum_i e^{X_i}` for log-scale
    runs, which ``value.attrs["scale"] == "log"`` says); ``cost`` (:math:`\delta` of the pull,
    Neufeld et al. 2014, Sec. 5); ``reward`` (the reward the policy received when the pull
    completed its decision: :math:`-(X-c)^2` of Thm 2 / App. B or the paired
    :math:`-\frac14(D_1+D_2)(X_1-X_2)^2` of Sec. 5; NaN otherwise); ``time`` (wall seconds
    since the start); ``cpu``; ``status`` (int code, CF ``flag_values``/``flag_meanings``
    attrs give the names); ``decision``; ``pull_index``; ``selected_before``;
    ``batch_size``; ``within_var``; and one variable per declared arm diagnostic (renamed
    ``diag_<name>`` if the name clashes; ``attrs["diagnostics"]`` maps columns to variables).
``arm_summary`` (dimension ``arm``, coordinate = arm names)
    ``pulls``, ``faults``, ``n_valid``, ``mean``, ``var`` (:math:`\hat V_k` used by the
    combiner), ``dof``, ``cost`` (mean :math:`\delta_k`), ``var_cost``
    (:math:`\hat V_k\delta_k`, the quantity the cost-aware bandit minimises, Sec. 5),
    ``weight`` (share in the combined estimate), ``quarantined``, ``khat`` (Pareto
    :math:`\hat k` of the arm's importance weights, Vehtari et al. 2024; NaN where not
    measured), ``khat_threshold``, ``n_weights``, ``log_w_var`` (variance of the log weights of an
    arm with too few for a k-hat), ``tail_excess`` (the second moment the fitted tail of an arm's
    weights adds, which the combination reads), ``unreliable`` and ``status`` (int code with
    CF ``flag_values``/``flag_meanings``: ok, quarantined, unreliable). For log-scale runs
    ``mean``/``var`` are on the working scale :math:`e^{Y-\text{shift}}` (``attrs["shift"]``).
    No group of the ArviZ schema holds per-arm summaries (``constant_data`` is for model
    inputs), so this is a custom group. ArviZ >= 0.21 accepts custom groups silently;
    older 0.x releases warn "arm_summary group is not defined in the InferenceData scheme",
    so that one message is ignored inside a scoped ``warnings.catch_warnings`` when we
    build or read an InferenceData (never a global filter).
``attrs`` (on the InferenceData and on ``sample_stats``)
    every run setting (str/int/float kept; bool, None, lists and dicts JSON-encoded, their
    keys listed in ``attrs["json_attrs"]``), ``estimate``, ``se``, ``ci95``,
    ``log_estimate``, ``log_se``, ``log_ci95``, ``interval_status``, ``consistency`` (Cochran's Q,
    its p-value, the between-arm variance, the random-effects estimate and the outlying arms),
    ``warnings`` and ``notes``, ``combine``, ``faults`` (JSON),
    ``pmcbandit_version``, ``created_at`` and ArviZ's usual ``inference_library`` keys.

Everything survives ``idata.to_netcdf(path)`` / ``az.from_netcdf(path)`` (``RunResult.to_netcdf`` returns
the path on both versions), and
:func:`from_inference_data` rebuilds the :class:`~pmcbandit.result.RunResult` (history,
settings, quarantine), so a saved run can be re-combined and re-plotted; the policy's final
state is not stored (``policy_state`` is ``None``).
"""

from __future__ import annotations

import json
import os
import warnings
from contextlib import contextmanager

import numpy as np

from pmcbandit import _compat
from pmcbandit.diagnostics.datasets import (RENAMED, comparison_groups, decode_attrs, full_bandit_groups,
                                            identification_groups, model_comparison_groups, run_groups)
from pmcbandit.runtime.history import FLOAT_COLUMNS, INT_COLUMNS, History
from pmcbandit.base import result_type
from pmcbandit.stats.psis import ArmReliability

az = _compat.import_arviz()  # NumPy's global random state kept (see pmcbandit._compat)

__all__ = ["to_inference_data", "from_inference_data", "read_run", "identification_to_inference_data",
           "comparison_to_inference_data", "full_bandit_to_inference_data",
           "model_comparison_to_inference_data"]

def to_inference_data(result):
    """Convert a run to :class:`arviz.InferenceData` (layout in the module docstring).

    Parameters
    ----------
    result : RunResult

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        (the latter on ArviZ >= 1) Groups ``sample_stats`` (dim ``pull``) and ``arm_summary`` (dim ``arm``), with the
        run's settings and combined estimate in ``attrs``.
    """
    if not isinstance(result, result_type("run")):
        raise TypeError(
            f"The 'result' parameter of to_inference_data must be a RunResult. Got {result!r} instead."
        )
    return _inference_data(*run_groups(result))


def identification_to_inference_data(result):
    """Convert an :class:`~pmcbandit.identification.result.IdentificationResult` to InferenceData.

    ``sample_stats`` is laid out as for an allocation run (one entry per pull; the rows of one
    decision share its ``decision`` index); ``arm_summary`` holds per arm ``counts``, ``mean``,
    ``lower`` and ``upper`` (the algorithm's confidence bounds at the stop), ``selected`` and
    ``quarantined``; ``attrs`` the run's settings (algorithm, ``k``, ``delta``, ``stopped_by``, ...),
    ``selected`` (names, best first), ``samples`` and ``warnings``.
    """
    return _inference_data(*identification_groups(result))


def comparison_to_inference_data(result):
    """Convert a :class:`~pmcbandit.compare.ComparisonResult` to InferenceData.

    ``sample_stats`` per pull as for an identification run (a decision's pulls share its
    ``decision`` index; ``value`` holds the pulls' estimates, logs for log-scale arms);
    ``arm_summary`` holds per arm the columns of ``result.arm_table()`` (pairs, variance and cost per
    pull with their bounds, efficiency with its bounds, compile seconds, the chains' ``divergent_share``
    and ``rhat``, ``selected``, ``status`` as a CF flag, the gate's ``z``); ``efficiency_ratio`` holds
    ``estimate``, ``lower`` and ``upper`` of every ratio (dimensions ``numerator`` x ``denominator``, NaN
    on the diagonal); ``attrs`` the settings, ``selected``, ``stopped_by``, ``guarantee``, ``proven_factor``,
    ``unresolved``, ``excluded`` (name -> reason) and ``warnings``.
    """
    return _inference_data(*comparison_groups(result))


def model_comparison_to_inference_data(comparison):
    """Convert a :class:`~pmcbandit.ModelComparison` to InferenceData: ``model_summary`` (dim ``model``,
    best first: ``log_z``, ``log_z_se``, ``log_bf``, ``log_bf_se``, ``probability`` with its interval,
    ``interval_status``, ``prior``, ``slices``, ``pulls``), ``sample_stats`` (dim ``slice``: ``model``,
    ``log_bf_se``) and the settings, ``best``, ``warnings`` in ``attrs``. Each model's own run:
    ``comparison.results[name].to_inference_data()``.
    """
    return _inference_data(*model_comparison_groups(comparison))


def full_bandit_to_inference_data(result):
    """Convert a :class:`~pmcbandit.full_bandit.result.FullBanditResult` to InferenceData.

    ``sample_stats`` (dimension ``pull``): ``super_arm`` (``pull`` x ``member``, arm indices),
    ``reward`` (the observed sum), ``statistic`` (the stopping statistic after the pull; inf before
    the design had full rank). ``arm_summary`` (dimension ``arm``): ``theta_hat``, ``width``,
    ``pulls`` (pulled super-arms containing the arm), ``selected``. ``attrs``: the settings
    (algorithm, ``n``, ``k``, ``delta``, ``epsilon``, allocation, ``stopped_by``, ...), ``selected``
    (names, best first), ``samples``, ``warnings``.
    """
    return _inference_data(*full_bandit_groups(result))


def from_inference_data(idata):
    """Rebuild the :class:`~pmcbandit.result.RunResult` of a run saved by :func:`to_inference_data`.

    Parameters
    ----------
    idata : arviz.InferenceData, xarray.DataTree, str or os.PathLike
        The InferenceData, or the path of a netCDF file written by ``idata.to_netcdf``.

    Returns
    -------
    RunResult
        Same history, settings, arm names and quarantine flags; the combined estimate and SE
        are recomputed from the history and equal the original ones. ``policy_state`` is None.
    """
    if isinstance(idata, (str, os.PathLike)):
        with _custom_group_ok():
            idata = _compat.read_netcdf(idata)
    if not _compat.is_inference_data(idata):
        raise TypeError(
            "The 'idata' parameter of from_inference_data must be an InferenceData or a netCDF path. "
            f"Got {idata!r} instead."
        )
    groups = _compat.group_names(idata)
    if "sample_stats" not in groups or "arm_summary" not in groups or "pull" not in idata["sample_stats"].dims:
        raise ValueError(
            "The 'idata' parameter of from_inference_data must be an InferenceData written by "
            f"pmcbandit (groups sample_stats with dim 'pull' and arm_summary). Got {idata!r} instead."
        )
    stats = _compat.group(idata, "sample_stats")
    summary = _compat.group(idata, "arm_summary")
    attrs = decode_attrs(dict(idata.attrs) if idata.attrs else dict(stats.attrs))
    diag = json.loads(str(stats.attrs.get("diagnostics", "[]")))
    data = {}
    for col in (*INT_COLUMNS, *FLOAT_COLUMNS):
        dtype = np.int64 if col in INT_COLUMNS else np.float64
        var = RENAMED.get(col, col)
        if var in stats:  # files of an earlier layout lack the newer columns: History fills them in
            data[f"col_{col}"] = np.asarray(stats[var].values, dtype=dtype)
    for col, var in diag:
        data[f"col_{col}"] = np.asarray(stats[var].values, dtype=np.float64)
    faults = [(f["row"], f["arm_index"], f["status"], f["message"]) for f in attrs.get("faults", [])]
    data["faults_json"] = np.asarray(json.dumps(faults))
    data["diagnostics_json"] = np.asarray(json.dumps([col for col, _ in diag]))
    history = History.from_npz_dict(data)
    settings = {k: attrs[k] for k in attrs.get("settings_keys", [])}
    n_arms = summary.sizes["arm"]
    reliability = ArmReliability.empty(n_arms)
    if "khat" in summary:
        reliability = ArmReliability(
            np.asarray(summary["khat"].values, dtype=np.float64),
            np.asarray(summary["khat_threshold"].values, dtype=np.float64),
            np.asarray(summary["n_weights"].values, dtype=np.int64),
            np.asarray(summary["unreliable"].values, dtype=bool),
            np.asarray(summary["log_w_var"].values, dtype=np.float64) if "log_w_var" in summary else None,
            np.asarray(summary["tail_excess"].values, dtype=np.float64) if "tail_excess" in summary else None,
            np.stack([np.asarray(summary[v].values, dtype=np.float64) for v in
                      ("khat_failed", "khat_failed_threshold", "n_weights_failed")], axis=1)
            if "khat_failed" in summary else None,
        )
    return result_type("run")(
        arm_names=[str(a) for a in summary["arm"].values],
        history=history,
        combine=str(attrs["combine"]),
        log_scale=bool(attrs["log_scale"]),
        quarantined=np.asarray(summary["quarantined"].values, dtype=bool),
        settings=settings,
        policy_state=None,
        reliability=reliability,
        notes=attrs.get("notes", []),
    )


def read_run(path):
    """Load a run saved with ``result.to_netcdf(path)`` (the netCDF holds no code: no pickle)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"The 'path' parameter of read_run must be a str or os.PathLike. Got {path!r} instead.")
    return from_inference_data(path)


@contextmanager
def _custom_group_ok():
    """Scoped filter for the custom-group warning of ArviZ < 0.21 (see module docstring)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="arm_summary group is not defined", category=UserWarning)
        warnings.filterwarnings("ignore", message="model_summary group is not defined", category=UserWarning)
        yield


def _inference_data(attrs: dict, groups: dict):
    """The InferenceData of built groups, stamped with the ArviZ version on it and on ``sample_stats``."""
    attrs = dict(attrs, arviz_version=az.__version__)
    if "sample_stats" in groups:
        groups["sample_stats"].attrs["arviz_version"] = az.__version__
    with _custom_group_ok():
        return _compat.inference_data(attrs, groups)
