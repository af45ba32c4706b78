"""Plot of a selection (:func:`pmcbandit.identify`, :func:`pmcbandit.identify_full_bandit`): each arm's
estimate with its confidence interval at the stop, the selected arms filled.

It draws the columns of the result's ``table`` (``mean`` or ``theta_hat``, ``lower``, ``upper``,
``selected``), so the figure and the table share their units.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

__all__ = ["plot_selection"]


def plot_selection(result, ax=None) -> Axes:
    """Each arm's estimate (point) and confidence interval (bar) at the stop; selected arms filled.

    Parameters
    ----------
    result : IdentificationResult or FullBanditResult
        Anything whose ``table`` has ``lower``, ``upper``, ``selected`` and ``mean`` or ``theta_hat``.
    ax : matplotlib Axes, optional

    Returns
    -------
    Axes
    """
    table = getattr(result, "table", None)
    columns = set(getattr(table, "columns", ()))
    point = "mean" if "mean" in columns else "theta_hat"
    if not {point, "lower", "upper", "selected"} <= columns:
        raise TypeError(f"The 'result' parameter of plot_selection must be an IdentificationResult or a "
                        f"FullBanditResult. Got {result!r} instead.")
    if ax is None:
        import matplotlib.pyplot as plt

        ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")[1]
    elif not isinstance(ax, Axes):
        raise TypeError(f"The 'ax' parameter of plot_selection must be a matplotlib Axes or None. Got {ax!r} instead.")
    est, lo, hi = (table[c].to_numpy(dtype=np.float64) for c in (point, "lower", "upper"))
    chosen = table["selected"].to_numpy(dtype=bool)
    rows = np.arange(len(table))
    for i in rows:
        colour = f"C{i}"
        if np.isfinite(lo[i]) and np.isfinite(hi[i]):
            ax.plot([lo[i], hi[i]], [i, i], color=colour, lw=2, solid_capstyle="butt")
        if np.isfinite(est[i]):
            ax.plot([est[i]], [i], "o", color=colour, mfc=colour if chosen[i] else "white")
    ax.set_yticks(rows, [str(name) + (" *" if chosen[i] else "") for i, name in enumerate(table.index)])
    ax.set_xlabel(f"{point} with its confidence interval at the stop (* selected)")
    ax.set_title(f"selected {[str(n) for n in table.index[chosen]]}, stopped by {result.stopped_by}")
    return ax
