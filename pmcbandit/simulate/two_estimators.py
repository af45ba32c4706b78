"""The 2-estimator scaled-Bernoulli experiment of Neufeld et al. (2014), Sec. 6.1 and Fig. 1.

Two unbiased estimators of ``mu = 0.5``: ``X_k = mu + s_k (Z - 1/2)`` with ``Z ~ Bernoulli(1/2)``
(App. E), so ``V_k = s_k^2 / 4``. A tile of Fig. 1 fixes the variance of the best
estimator ``V_1`` and the extra variance ``dV`` of the second (``V_2 = V_1 + dV``,
``V_2 < 1/4`` so that ``s_2 < 1`` and every observation lies in ``[0, 1]``). The
policies see the reward ``1 - X^2`` (footnote 1: ``bounds=(0, 1)``).

The MSE-regret of a policy is computed by the regret identity (Thm 1, eq. 8),
``R_n = sum_k E[T_k(n)] (V_k - V*) = E[T_2(n)] dV``, from the simulated pull counts;
the directly measured ``n^2 (E[(mu_n - mu)^2] - V*/n)`` is reported beside it as a
check (it has a much larger Monte Carlo error).

Every policy of a tile runs on the same replication seeds, hence the same ``Z_t``
sequences (common random numbers), so differences between policies are paired.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pmcbandit.simulate.arms import ScaledBernoulli
from pmcbandit.simulate.core import simulate

__all__ = ["MU", "POLICIES", "LABELS", "tile_arms", "TileResult", "run_tile", "run_grid", "winners",
           "plot_tiles", "plot_suboptimal"]

MU = 0.5
POLICIES = ("ucb1", "ucb_v", "kl_ucb", "thompson")
LABELS = {"ucb1": "UCB1", "ucb_v": "UCB-V", "kl_ucb": "KL-UCB", "thompson": "TS"}


def tile_arms(v_best: float, v_extra: float) -> ScaledBernoulli:
    """Arms of one tile: variances ``v_best`` and ``v_best + v_extra`` (``< 1/4``)."""
    v = np.array([v_best, v_best + v_extra], dtype=np.float64)
    if not (v_best > 0 and v_extra > 0 and v[1] < 0.25):
        raise ValueError("The 'v_best' and 'v_extra' parameters of tile_arms must be > 0 with "
                         f"v_best + v_extra < 1/4. Got {v_best!r}, {v_extra!r} instead.")
    return ScaledBernoulli(MU, 2.0 * np.sqrt(v), 0.5)


class TileResult(NamedTuple):
    """Summary of one tile: per policy (rows in ``policies`` order) and checkpoint (columns).

    ``regret``/``regret_se``: Thm 1 regret ``E[T_2(t)] dV`` and its SE;
    ``mse_regret``/``mse_regret_se``: the measured one; ``sub_mean``, ``sub_lo``, ``sub_hi``:
    mean and 0.5 % / 99.5 % empirical percentiles of the suboptimal pulls ``T_2(t)``;
    ``final_sub``: ``T_2(n)`` per policy and replication (for paired comparisons).
    """

    v_best: float
    v_extra: float
    policies: tuple
    checkpoints: np.ndarray
    regret: np.ndarray
    regret_se: np.ndarray
    mse_regret: np.ndarray
    mse_regret_se: np.ndarray
    sub_mean: np.ndarray
    sub_lo: np.ndarray
    sub_hi: np.ndarray
    final_sub: np.ndarray


def run_tile(v_best, v_extra, n_rounds, n_replications, random_seed, *, policies=POLICIES,
             checkpoints=40, n_jobs=1) -> TileResult:
    """Simulate every policy on one tile with the same replication seeds."""
    arms = tile_arms(v_best, v_extra)
    rows = {key: [] for key in TileResult._fields[4:]}
    for name in policies:
        res = simulate(name, arms, n_rounds, n_replications, random_seed, bounds=(0.0, 1.0),
                       checkpoints=checkpoints, n_jobs=n_jobs)
        regret, regret_se = res.regret_from_pulls()
        mse, mse_se = res.mse_regret(mu=MU)
        sub = res.suboptimal_pulls()
        lo, hi = np.percentile(sub, [0.5, 99.5], axis=0)
        for key, value in zip(rows, (regret, regret_se, mse, mse_se, sub.mean(axis=0), lo, hi, sub[:, -1])):
            rows[key].append(value)
    return TileResult(float(v_best), float(v_extra), tuple(policies), res.checkpoints,
                      **{k: np.array(v) for k, v in rows.items()})


def run_grid(v_best_grid, v_extra_grid, n_rounds, n_replications, random_seed, *, policies=POLICIES,
             checkpoints=40, n_jobs=1, progress=None) -> list[TileResult]:
    """All valid tiles (``v_best + v_extra < 1/4``) of the grid; ``progress(i, n, tile)`` after each."""
    pairs = [(a, b) for a in v_best_grid for b in v_extra_grid if a + b < 0.25]
    out = []
    for i, (a, b) in enumerate(pairs):
        out.append(run_tile(a, b, n_rounds, n_replications, random_seed, policies=policies,
                            checkpoints=checkpoints, n_jobs=n_jobs))
        if progress is not None:
            progress(i + 1, len(pairs), out[-1])
    return out


def winners(tiles: list[TileResult], at: int = -1) -> list[dict]:
    """Per tile: the policy with the lowest Thm 1 regret at checkpoint ``at``, and how sure.

    ``margin_se`` is the gap to the runner-up in units of the SE of the paired
    difference of their ``T_2(n)`` (same seeds); only meaningful for ``at=-1``.
    """
    rows = []
    for tile in tiles:
        reg = tile.regret[:, at]
        order = np.argsort(reg)
        best, second = order[0], order[1]
        diff = (tile.final_sub[second] - tile.final_sub[best]) * tile.v_extra
        se = diff.std(ddof=1) / np.sqrt(diff.size)
        rows.append(dict(v_best=tile.v_best, v_extra=tile.v_extra, winner=tile.policies[best],
                         runner_up=tile.policies[second],
                         regret={p: float(r) for p, r in zip(tile.policies, reg)},
                         margin_se=float(diff.mean() / se) if se > 0 else np.inf))
    return rows


def plot_tiles(tiles: list[TileResult], ax=None, highlight=None, at: int = -1):
    """Fig. 1 (left): which policy has the lowest MSE-regret on each tile."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    ax = ax if ax is not None else plt.gca()
    colours = {"ucb1": "tab:gray", "ucb_v": "tab:blue", "kl_ucb": "tab:orange", "thompson": "tab:green"}
    xs = sorted({t.v_best for t in tiles})
    ys = sorted({t.v_extra for t in tiles})
    for row in winners(tiles, at):
        i, j = xs.index(row["v_best"]), ys.index(row["v_extra"])
        ax.add_patch(plt.Rectangle((i - 0.5, j - 0.5), 1, 1, color=colours.get(row["winner"], "k"),
                                   alpha=1.0 if row["margin_se"] >= 2 else 0.45))
        ax.text(i, j, f"{LABELS.get(row['winner'], row['winner'])}\n{row['margin_se']:.1f} SE",
                ha="center", va="center", fontsize="small")
        if highlight is not None and np.allclose((row["v_best"], row["v_extra"]), highlight):
            ax.add_patch(plt.Circle((i, j), 0.42, fill=False, ls="--", color="red", lw=2))
    ax.set_xlim(-0.5, len(xs) - 0.5)
    ax.set_ylim(-0.5, len(ys) - 0.5)
    ax.set_xticks(range(len(xs)), [f"{x:g}" for x in xs], rotation=45)
    ax.set_yticks(range(len(ys)), [f"{y:g}" for y in ys])
    ax.set_xlabel("variance of the best estimator $V_1$")
    ax.set_ylabel("extra variance of the second $V_2 - V_1$")
    ax.set_title(f"lowest MSE-regret at n = {tiles[0].checkpoints[at]:,}")
    used = sorted({r["winner"] for r in winners(tiles, at)}, key=list(colours).index)
    ax.legend(handles=[Patch(color=colours[p], label=LABELS.get(p, p)) for p in used],
              loc="upper right", fontsize="small")
    return ax


def plot_suboptimal(tile: TileResult, ax=None):
    """Fig. 1 (right): expected suboptimal pulls ``E[T_2(t)]`` vs ``t`` with 99 % percentile bars."""
    import matplotlib.pyplot as plt

    ax = ax if ax is not None else plt.gca()
    t = tile.checkpoints
    for i, name in enumerate(tile.policies):
        err = np.vstack([tile.sub_mean[i] - tile.sub_lo[i], tile.sub_hi[i] - tile.sub_mean[i]])
        ax.errorbar(t * (1 + 0.03 * i), tile.sub_mean[i], yerr=err, label=LABELS.get(name, name),
                    capsize=2, lw=1.2, elinewidth=0.6)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=1.0)  # log above 1 pull, linear down to 0
    ax.set_ylim(bottom=0)
    ax.set_xlabel("round t")
    ax.set_ylabel("suboptimal pulls $T_2(t)$")
    ax.set_title(f"$V_1$ = {tile.v_best:g}, $V_2 - V_1$ = {tile.v_extra:g}")
    ax.legend(fontsize="small")
    return ax
