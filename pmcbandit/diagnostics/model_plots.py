"""Plot of a model comparison (:func:`pmcbandit.compare_models`): evidences, Bayes factors, allocation."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from scipy import stats

from pmcbandit._validation import check_open_unit
from pmcbandit.base import result_type

__all__ = ["plot_model_comparison"]


def plot_model_comparison(comparison, level: float = 0.95, fig=None) -> Figure:
    """Three panels, models best first: ``log Z`` with its ``level`` interval (``estimate ± z se``),
    the log Bayes factor against the best model with its interval (``hypot`` of the two SEs,
    independent runs), and the slices of the budget each model got, in the order they were run.

    Models whose evidence interval is flagged are drawn hollow, with their status in the label.

    Parameters
    ----------
    comparison : ModelComparison
    level : float in (0, 1)
    fig : matplotlib Figure, optional
        Drawn into (must be empty); a new one if omitted.

    Returns
    -------
    Figure
    """
    if not isinstance(comparison, result_type("model_comparison")):
        raise TypeError("The 'comparison' parameter of plot_model_comparison must be a ModelComparison. "
                        f"Got {comparison!r} instead.")
    level = check_open_unit(level, "level", "plot_model_comparison")
    if fig is None:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(15, 4.2), layout="constrained")
    elif not isinstance(fig, Figure):
        raise TypeError(f"The 'fig' parameter of plot_model_comparison must be a matplotlib Figure or None. "
                        f"Got {fig!r} instead.")
    z = stats.norm.ppf(0.5 + level / 2)
    t = comparison.table
    names = [str(n) for n in t.index]
    flagged = set(comparison.flagged)
    labels = [n if n not in flagged else f"{n}\n({t.loc[n, 'interval_status'].replace('_', ' ')})" for n in names]
    y = np.arange(len(names))[::-1]
    a1, a2, a3 = fig.subplots(1, 3)
    for ax, col, se_col, title in ((a1, "log_z", "log_z_se", "log evidence"),
                                   (a2, "log_bf", "log_bf_se", f"log Bayes factor vs {names[0]}")):
        for yi, name in zip(y, names):
            est, se = float(t.loc[name, col]), float(t.loc[name, se_col])
            hollow = name in flagged
            ax.errorbar(est, yi, xerr=z * se, fmt="o", color="C0", mfc="white" if hollow else "C0", capsize=4)
        ax.set_yticks(y, labels)
        ax.set_title(f"{title} ({100 * level:g}% intervals)")
        ax.grid(alpha=0.3)
    a2.axvline(0.0, color="k", lw=0.8)
    order = [comparison.names.index(name) for _, name, _ in comparison.allocation]
    lookup = {comparison.names.index(n): yi for n, yi in zip(names, y)}
    a3.scatter(np.arange(len(order)), [lookup[k] for k in order], marker="s", color="C1")
    a3.set_yticks(y, names)
    a3.set_xlabel("slice")
    a3.set_title(f"slices ({comparison.settings.get('split')} split)")
    a3.grid(alpha=0.3)
    return fig
