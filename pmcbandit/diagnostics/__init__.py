"""Looking at a run: ArviZ InferenceData export/import and matplotlib plots.

Names are resolved lazily (PEP 562), so importing this package loads neither ArviZ nor
matplotlib; :mod:`pmcbandit.diagnostics.arviz_io` is the only module that imports ArviZ.

ArviZ door (:mod:`~pmcbandit.diagnostics.arviz_io`)
    :func:`to_inference_data`, :func:`from_inference_data`, :func:`read_run`.
Plots (:mod:`~pmcbandit.diagnostics.plots`)
    :func:`plot_allocation`, :func:`plot_running_estimate`, :func:`plot_variance_cost`,
    :func:`plot_run`, :func:`save_run_plots`, :func:`running_estimate`; a selection's estimates and
    intervals, :func:`plot_selection` (:mod:`~pmcbandit.diagnostics.selection_plots`).

Above the doors, below the package ``__init__`` (which re-exports :func:`read_run`) and the CLI.
May import: the helpers, :mod:`pmcbandit.stats` and :mod:`pmcbandit.runtime`; never a result's module,
a door or the package ``__init__``, not even lazily, since the results' ``to_inference_data``/``plot`` methods
import it (lazily): the result classes are found with :func:`pmcbandit.base.result_type` and the version
in the package metadata.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "to_inference_data": "arviz_io",
    "from_inference_data": "arviz_io",
    "read_run": "arviz_io",
    "plot_allocation": "plots",
    "plot_running_estimate": "plots",
    "plot_variance_cost": "plots",
    "plot_run": "plots",
    "save_run_plots": "plots",
    "running_estimate": "plots",
    "plot_model_comparison": "model_plots",
    "plot_selection": "selection_plots",
    "model_comparison_to_inference_data": "arviz_io",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
