r"""Plots of a run: allocation over time, running estimate ± CI, per-arm :math:`V\delta`.

Every function takes a :class:`~pmcbandit.result.RunResult`, an ``arviz.InferenceData``
written by :func:`~pmcbandit.diagnostics.arviz_io.to_inference_data`, or the path of its
netCDF file, and an optional matplotlib ``ax``; it returns the Axes (or the Figure for
:func:`plot_run`). Nothing here calls :mod:`matplotlib.pyplot` unless a function must
create its own Axes, and :func:`save_run_plots` never does, so it is safe on headless
machines (Agg) and does not leak figures.

Arm ``k`` is drawn in colour ``C{k}`` in every panel; quarantined arms are dashed (lines)
or hatched (bars).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pmcbandit._validation import check_choice, check_open_unit, check_positive
from pmcbandit.stats.combine import combine, interval, log_interval
from pmcbandit.base import result_type

__all__ = [
    "plot_allocation",
    "plot_running_estimate",
    "plot_variance_cost",
    "plot_run",
    "save_run_plots",
    "running_estimate",
    "plot_efficiency",
]

_MAX_POINTS = 2000  # points per allocation line: more than a figure can show


def _as_result(obj, door: str):
    if isinstance(obj, result_type("run")):
        return obj
    if isinstance(obj, (str, os.PathLike)) or type(obj).__name__ in ("InferenceData", "DataTree"):
        # Only arviz_io may import arviz; it is loaded here on demand.
        from pmcbandit.diagnostics.arviz_io import from_inference_data

        return from_inference_data(obj)
    raise TypeError(
        f"The 'result' parameter of {door} must be a RunResult, an InferenceData or a netCDF path. "
        f"Got {obj!r} instead."
    )


def _axes(ax, door: str) -> Axes:
    if ax is None:
        import matplotlib.pyplot as plt

        return plt.subplots(figsize=(6.4, 4.2), layout="constrained")[1]
    if not isinstance(ax, Axes):
        raise TypeError(f"The 'ax' parameter of {door} must be a matplotlib Axes or None. Got {ax!r} instead.")
    return ax


def _arm_label(result, k: int) -> str:
    return f"{result.arm_names[k]} (quarantined)" if result.quarantined[k] else result.arm_names[k]


def plot_allocation(result, x: str = "pulls", ax=None, *, yscale: str = "linear") -> Axes:
    """Cumulative pulls :math:`T_k(t)` of every arm against the pull count ``t`` or wall time.

    A good policy's curves separate: the lowest-:math:`V_k\\delta_k` arm's slope tends to 1
    while the others grow like :math:`\\log t` (Neufeld et al. 2014, Thm 1 and Sec. 5).
    Faulty pulls are marked with ``x``.

    Parameters
    ----------
    result : RunResult, InferenceData or path
    x : {"pulls", "time"}
        Horizontal axis: pulls completed, or wall seconds since the start.
    ax : matplotlib Axes, optional
    yscale : {"linear", "log"}
        ``"log"`` shows the :math:`\\log t` growth of the arms the policy gives up on.

    Returns
    -------
    Axes
        One line per arm.
    """
    result = _as_result(result, "plot_allocation")
    check_choice(x, ("pulls", "time"), "x", "plot_allocation")
    check_choice(yscale, ("linear", "log"), "yscale", "plot_allocation")
    ax = _axes(ax, "plot_allocation")
    h = result.history
    arms = h.column("arm")
    n = arms.size
    xs = np.arange(1, n + 1) if x == "pulls" else h.column("wall")
    keep = np.unique(np.linspace(0, n - 1, min(n, _MAX_POINTS)).round().astype(np.int64)) if n else arms
    faulty = h.column("status") != 0
    for k in range(len(result.arm_names)):
        counts = np.cumsum(arms == k)
        style = "--" if result.quarantined[k] else "-"
        ax.plot(xs[keep], counts[keep], style, color=f"C{k}", label=_arm_label(result, k))
        bad = faulty & (arms == k)
        if bad.any():
            ax.scatter(xs[bad], counts[bad], marker="x", color=f"C{k}", zorder=3)
    ax.set_yscale(yscale)
    ax.set_xlabel("pulls" if x == "pulls" else "wall time [s]")
    ax.set_ylabel("cumulative pulls of the arm")
    ax.set_title("Allocation")
    ax.legend(loc="upper left", fontsize="small")
    return ax


def running_estimate(result, level: float = 0.95, n_checkpoints: int = 200) -> dict[str, np.ndarray]:
    """The combined estimate and its ``level`` interval after the first ``m`` pulls.

    Re-running the combiner (:func:`pmcbandit.stats.combine.combine`, same method as the run) on
    every prefix would cost :math:`O(n^2)`; it is evaluated at ``n_checkpoints`` log-spaced
    prefix lengths :math:`m` between 2 and ``n`` instead. Each prefix is combined as the run
    combines its pulls: the arms the run excluded get no weight, and each arm's variance is read
    at the run's factor from its weights' tails (:attr:`~pmcbandit.result.RunResult.tail_scale`),
    both as judged on all the run's pulls. At ``m = n`` the point is the run's own reported
    estimate and interval (the random-effects ones when its arms disagree). Faulty pulls count
    towards ``m`` but are not combined. For log-scale runs every quantity is
    :math:`\\log\\hat Z` with the interval of :func:`pmcbandit.stats.combine.log_interval`.

    Parameters
    ----------
    result : RunResult, InferenceData or path
    level : float in (0, 1)
    n_checkpoints : int

    Returns
    -------
    dict
        ``pulls`` (prefix lengths ``m``), ``time`` (wall seconds at pull ``m``),
        ``estimate``, ``lower``, ``upper`` (NaN where no interval exists yet).
    """
    result = _as_result(result, "running_estimate")
    level = check_open_unit(level, "level", "running_estimate")
    check_positive(n_checkpoints, "n_checkpoints", "running_estimate", integer=True)
    h = result.history
    n = len(h)
    obs, arms, within, size = result.working_values()
    valid_rows = np.flatnonzero(h.column("status") == 0)
    if n == 0:
        empty = np.zeros(0)
        return dict(pulls=empty.astype(np.int64), time=empty, estimate=empty, lower=empty, upper=empty)
    ms = np.unique(np.geomspace(min(2, n), n, n_checkpoints).round().astype(np.int64))
    est, lo, hi = (np.full(ms.size, np.nan) for _ in range(3))
    k = len(result.arm_names)
    for i, m in enumerate(ms):
        c_ = int(np.searchsorted(valid_rows, m))  # valid observations among the first m pulls
        if c_ == 0:
            continue
        c = combine(obs[:c_], arms[:c_], k, result.combine, within[:c_], size[:c_], result.excluded_mask,
                    result.settings.get("deterministic"), result.tail_scale)
        if result.log_scale:
            if c.estimate > 0:
                est[i] = result.shift + np.log(c.estimate)
                lo[i], hi[i] = np.add(log_interval(c.estimate, c.se, c.df, level), result.shift)
        else:
            est[i] = c.estimate
            lo[i], hi[i] = interval(c.estimate, c.se, c.df, level)
    if ms[-1] == n:  # the run's own reported values
        est[-1] = result.log_estimate if result.log_scale else result.estimate
        lo[-1], hi[-1] = result.log_ci(level) if result.log_scale else result.ci(level)
    bad = ~(np.isfinite(lo) & np.isfinite(hi))
    lo[bad] = hi[bad] = np.nan
    return dict(pulls=ms, time=h.column("wall")[ms - 1], estimate=est, lower=lo, upper=hi)


def plot_running_estimate(
    result, level: float = 0.95, ax=None, *, x: str = "pulls", reference: float | None = None,
    n_checkpoints: int = 200,
) -> Axes:
    """Running combined estimate ± ``level`` interval (log :math:`\\hat Z` for log-scale runs).

    See :func:`running_estimate` for the checkpoints. Lines: the running estimate, the final
    estimate (dashed), and ``reference`` (dotted) if given; the interval is a shaded band.

    Parameters
    ----------
    result : RunResult, InferenceData or path
    level : float in (0, 1)
    ax : matplotlib Axes, optional
    x : {"pulls", "time"}
    reference : float, optional
        A known true value (on the log scale for log-scale runs).
    n_checkpoints : int

    Returns
    -------
    Axes
    """
    result = _as_result(result, "plot_running_estimate")
    level = check_open_unit(level, "level", "plot_running_estimate")
    check_choice(x, ("pulls", "time"), "x", "plot_running_estimate")
    run = running_estimate(result, level, n_checkpoints)
    return _draw_running(result, run, level, _axes(ax, "plot_running_estimate"), x, reference)


def _draw_running(result, run: dict, level: float, ax: Axes, x: str, reference) -> Axes:
    xs = run["pulls"] if x == "pulls" else run["time"]
    name = "log Ẑ" if result.log_scale else "estimate"
    ax.plot(xs, run["estimate"], color="C0", label=f"running {name}")
    ax.fill_between(xs, run["lower"], run["upper"], color="C0", alpha=0.25, linewidth=0, label=f"{level:.0%} CI")
    final = result.log_estimate if result.log_scale else result.estimate
    if np.isfinite(final):
        ax.axhline(final, color="k", linestyle="--", linewidth=1, label=f"final {final:.6g}")
    else:
        ax.text(0.5, 0.5, "no valid observation", transform=ax.transAxes, ha="center")
    if reference is not None:
        ax.axhline(float(reference), color="C3", linestyle=":", linewidth=1.5, label=f"reference {reference:.6g}")
    if x == "pulls" and np.isfinite(run["estimate"]).any():
        ax.set_xscale("log")  # the checkpoints are log-spaced in pulls
    ax.set_xlabel("pulls" if x == "pulls" else "wall time [s]")
    ax.set_ylabel(name)
    ax.set_title(f"Running {name} ({result.combine})")
    # Early intervals can be huge: zoom on the second half of the checkpoints (and the
    # reference) so the end of the run, where the answer is, reads well.
    late = np.isfinite(run["lower"]) & (np.arange(xs.size) >= xs.size // 2)
    if late.any():
        marks = [v for v in (final, reference) if v is not None and np.isfinite(v)]
        lo = min(np.min(run["lower"][late]), *marks)
        hi = max(np.max(run["upper"][late]), *marks)
        pad = max(hi - lo, 1e-12 * max(abs(lo), abs(hi), 1.0))
        ax.set_ylim(lo - pad, hi + pad)
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_variance_cost(result, ax=None) -> Axes:
    """Per-arm :math:`\\hat V_k\\delta_k` (variance of one observation times mean cost), log scale.

    The cost-aware bandit of Neufeld et al. (2014), Sec. 5, converges on the arm minimising
    :math:`V_k\\delta_k`; each bar is annotated with the arm's pulls. For log-scale runs the
    bars show the relative :math:`V_k\\delta_k/\\hat Z^2` (scale-free; the ranking is the
    same). The bars are the ``var_cost`` column of :meth:`~pmcbandit.result.RunResult.arm_table` and the
    summary's, in the same unit. Arms without a variance estimate get no bar.

    Parameters
    ----------
    result : RunResult, InferenceData or path
    ax : matplotlib Axes, optional

    Returns
    -------
    Axes
        One bar per arm (``ax.containers[0]``).
    """
    result = _as_result(result, "plot_variance_cost")
    ax = _axes(ax, "plot_variance_cost")
    t = result.arm_table()
    vd = np.asarray(t["var_cost"], dtype=np.float64)  # the summary's column: V·δ/Ẑ² in a log-scale run
    height = np.where(np.isfinite(vd) & (vd > 0), vd, np.nan)
    k = len(result.arm_names)
    bars = ax.bar(np.arange(k), height, color=[f"C{i}" for i in range(k)], edgecolor="k", linewidth=0.5)
    for i, patch in enumerate(bars.patches):
        if result.quarantined[i]:
            patch.set_hatch("//")
            patch.set_alpha(0.6)
    labels = [f"{p} pull{'s' if p != 1 else ''}" + (f"\n{f} fault{'s' if f > 1 else ''}" if f else "")
              for p, f in zip(t["pulls"], t["faults"])]
    ax.bar_label(bars, labels=labels, fontsize="small", padding=2)
    if np.isfinite(height).any():
        ax.set_yscale("log")
        # Log bars have no natural base: start a decade below the shortest so every bar shows,
        # and leave room for the labels above the tallest.
        ax.set_ylim(np.nanmin(height) / 10, np.nanmax(height) * 8)
    else:
        ax.text(0.5, 0.5, "no arm has a variance estimate", transform=ax.transAxes, ha="center")
    ax.set_xticks(np.arange(k), [_arm_label(result, i) for i in range(k)], rotation=30, ha="right")
    ax.set_ylabel("V·δ/Ẑ²  (variance / Ẑ² × cost per pull)" if result.log_scale
                  else "V·δ  (variance × cost per pull)")
    ax.set_title("Variance × cost per arm")
    return ax


def plot_efficiency(result, ax=None) -> Axes:
    """Forest plot of a comparison: each arm's efficiency with its simultaneous interval (log axis).

    Arms are sorted by point efficiency, the selected ones drawn filled; arms not ranked (validity
    gate, divergences, R-hat, Pareto k-hat, faults) are grey with their status and the first word of
    the reason. An infinite bound is drawn to the axis edge with an arrow. Arms that report a compile
    time have it in their label, and the title says by what factor the selection is proven
    (:attr:`~pmcbandit.compare.ComparisonResult.proven_factor`) and which arm is fastest for one run and once
    compile is amortised (:meth:`~pmcbandit.compare.ComparisonResult.amortisation`).

    Parameters
    ----------
    result : ComparisonResult
    ax : matplotlib Axes, optional

    Returns
    -------
    Axes
    """
    if not isinstance(result, result_type("comparison")):
        raise TypeError(f"The 'result' parameter of plot_efficiency must be a ComparisonResult. "
                        f"Got {result!r} instead.")
    ax = _axes(ax, "plot_efficiency")
    t = result.arm_table()
    eff, lo, hi = (np.asarray(t[c], dtype=np.float64) for c in ("efficiency", "efficiency_lower", "efficiency_upper"))
    finite = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in (eff, lo, hi)])
    if finite.size == 0:
        ax.text(0.5, 0.5, "no arm has an efficiency estimate", transform=ax.transAxes, ha="center")
        return ax
    left, right = finite.min() / 3, finite.max() * 3
    order = np.argsort(np.nan_to_num(eff, nan=-np.inf), kind="stable")
    for row, i in enumerate(order):
        ranked = t["status"][i] == "ranked"
        colour = f"C{i}" if ranked else "0.6"
        a = lo[i] if np.isfinite(lo[i]) and lo[i] > 0 else left
        b = hi[i] if np.isfinite(hi[i]) else right
        ax.plot([a, b], [row, row], color=colour, lw=2, solid_capstyle="butt")
        if not np.isfinite(hi[i]):
            ax.annotate("", xy=(right, row), xytext=(right / 1.5, row), arrowprops=dict(arrowstyle="->", color=colour))
        if np.isfinite(eff[i]) and eff[i] > 0:
            ax.plot([min(eff[i], right)], [row], "o", color=colour, mfc=colour if t["selected"][i] else "white")
    compiled = np.asarray(t.get("compile_seconds", np.full(len(order), np.nan)), dtype=np.float64)

    def label(i):
        text = t["arm"][i]
        if np.isfinite(compiled[i]):
            text += f" [compile {compiled[i]:.3g} s]"
        if t["status"][i] != "ranked":
            why = result.reasons[i].split(":")[0] if result.reasons[i] else t["status"][i]
            text += f" ({t['status'][i]}: {why})"
        return text

    ax.set_yticks(np.arange(order.size), [label(i) for i in order])
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.set_xlabel("efficiency 1 / (variance × cost per pull)")
    s = result.settings
    title = f"Top {s.get('k')} at delta = {s.get('delta')} ({result.guarantee}), stopped by {result.stopped_by}"
    factor = result.proven_factor
    if np.isfinite(factor):
        title += f"; the others proven at most {factor:.3g}x as efficient"
    a = result.amortisation() if np.isfinite(compiled).any() else None
    if a is not None:
        runs = "" if a.runs_point <= 1 else f" from {a.runs_point:.0f} runs"
        title += (f"\none run (compile included): {t['arm'][a.once]}; many runs: {t['arm'][a.many]}{runs}")
    ax.set_title(title)
    return ax


def plot_run(result, level: float = 0.95, *, x: str = "pulls", reference: float | None = None, fig=None) -> Figure:
    """A 3-panel figure: :func:`plot_allocation`, :func:`plot_running_estimate`, :func:`plot_variance_cost`.

    Parameters
    ----------
    result : RunResult, InferenceData or path
    level : float in (0, 1)
    x : {"pulls", "time"}
    reference : float, optional
    fig : matplotlib Figure, optional
        Drawn into (must be empty); a new one if omitted.

    Returns
    -------
    Figure
    """
    result = _as_result(result, "plot_run")
    level = check_open_unit(level, "level", "plot_run")
    check_choice(x, ("pulls", "time"), "x", "plot_run")
    if fig is None:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(16, 4.6), layout="constrained")
    elif not isinstance(fig, Figure):
        raise TypeError(f"The 'fig' parameter of plot_run must be a matplotlib Figure or None. Got {fig!r} instead.")
    _draw_run(result, fig, level, x, reference)
    return fig


def _draw_run(result, fig: Figure, level: float, x: str, reference, run=None) -> None:
    a1, a2, a3 = fig.subplots(1, 3)
    plot_allocation(result, x=x, ax=a1)
    _draw_running(result, run if run is not None else running_estimate(result, level), level, a2, x, reference)
    plot_variance_cost(result, ax=a3)
    if result.log_scale:
        lo, hi = result.log_ci(level)
        head = f"log Ẑ = {result.log_estimate:.6g} ± {result.log_se:.3g}"
    else:
        lo, hi = result.ci(level)
        head = f"estimate = {result.estimate:.6g} ± {result.se:.3g}"
    status = result.interval_status
    label = "" if status == "ok" else f", {status.replace('_', ' ')}"  # a flagged interval says why
    fig.suptitle(
        f"{head}  ({level:.0%} CI {lo:.6g} .. {hi:.6g}{label});  {len(result.history)} pulls, "
        f"policy {result.settings.get('policy', '?')}"
    )


def save_run_plots(
    result,
    folder,
    *,
    level: float = 0.95,
    x: str = "pulls",
    reference: float | None = None,
    dpi: int = 110,
    prefix: str = "",
) -> list[Path]:
    """Write ``allocation.png``, ``running_estimate.png``, ``variance_cost.png`` and ``run.png``.

    Figures are built without :mod:`matplotlib.pyplot` (no global figure state, no GUI) and
    released after saving.

    Parameters
    ----------
    result : RunResult, InferenceData or path
    folder : str or os.PathLike
        Created if missing.
    level, x, reference
        As in :func:`plot_run`.
    dpi : int
    prefix : str
        Prepended to every file name (``"run1-"`` -> ``run1-allocation.png``).

    Returns
    -------
    list of Path
        The files written, in the order above.
    """
    result = _as_result(result, "save_run_plots")
    check_open_unit(level, "level", "save_run_plots")
    check_choice(x, ("pulls", "time"), "x", "save_run_plots")
    check_positive(dpi, "dpi", "save_run_plots", integer=True)
    if not isinstance(folder, (str, os.PathLike)):
        raise TypeError(f"The 'folder' parameter of save_run_plots must be a path. Got {folder!r} instead.")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    run = running_estimate(result, level)  # the costly part: computed once for both figures
    panels = {
        "allocation": lambda ax: plot_allocation(result, x=x, ax=ax),
        "running_estimate": lambda ax: _draw_running(result, run, level, ax, x, reference),
        "variance_cost": lambda ax: plot_variance_cost(result, ax=ax),
    }
    paths = []
    for name, draw in panels.items():
        fig = Figure(figsize=(6.4, 4.2), layout="constrained")
        draw(fig.add_subplot())
        paths.append(_save(fig, folder / f"{prefix}{name}.png", dpi))
    fig = Figure(figsize=(16, 4.6), layout="constrained")
    _draw_run(result, fig, level, x, reference, run)
    paths.append(_save(fig, folder / f"{prefix}run.png", dpi))
    return paths


def _save(fig: Figure, path: Path, dpi: int) -> Path:
    fig.savefig(path, dpi=dpi)
    fig.clear()
    return path
