"""Fig. 3 of Neufeld et al. (2014), Sec. 6.3: bandit allocation among three AIS arms on Pima.

Run as ``.venv/bin/python -m benchmarks.fig3_evidence`` (``--quick`` for a smoke run). The
arms are the paper's: AIS with 400 / 2000 / 8000 annealing steps (power-of-4 schedule, one
slice-sampling sweep per step, App. G), one chain per pull so that one observation is one AIS
estimate of Z, as in the paper, built by ``evidence_arms(m, laplace=False, prior=False,
n_chains=1)``. Costs are measured CPU seconds (``time.process_time``, the paper's "elapsed CPU
time"); the policies get the paired cost-aware reward ``-1/4 (D1 + D2)(X1 - X2)^2`` (Sec. 5).

Method (trace-driven, with common random numbers)
-------------------------------------------------
1. *Traces.* For each T and arm ``k``, ``runs`` independent rows of AIS estimates
   ``(log w, D)`` are drawn in fresh worker processes until each row's CPU cost exceeds the
   horizon ``H_T`` (plus a margin). Row ``r`` of arm ``k`` is what arm ``k`` returns in run ``r``.
2. *Fixed arms.* Run ``r`` of arm ``k`` alone is the prefix of row ``r`` whose cumulative cost
   is at most ``t``: :math:`\\hat\\mu_k(t)` as in Sec. 5 (0 before the first estimate).
3. *Bandits.* Run ``r`` of each policy is a real :func:`pmcbandit.run` (reward ``"paired"``)
   over replay arms whose ``j``-th pull returns entry ``j`` of row ``r`` with its recorded
   cost; it stops when the recorded cost reaches ``H_T``. Its estimate at time ``t`` combines
   the pulls completed by ``t`` (:math:`J_m \\le t`) with :func:`pmcbandit.stats.combine.combine`,
   uniformly and by inverse variance — the same allocation, two combinations (as the paper's
   solid and dashed lines).

Everything is on the relative scale :math:`\\hat Z / Z` (``Z`` from
``models.pima.REFERENCE_LOG_Z``, or a long Laplace-t importance-sampling reference computed
here when a T is missing), so ``MSE(t) = E[(\\hat Z(t)/Z - 1)^2]`` is the paper's MSE divided
by :math:`Z^2`, and the regret is the paper's :math:`R(\\mathcal A, t) = t^2 (L(\\mathcal A, t)
- \\min_k L_k(t))` (Sec. 5) divided by :math:`Z^2`; ``min_k`` is over the fixed arms' empirical
MSE with the same rows. Time is CPU seconds of AIS work (the replay's own overhead is not
counted, as in the paper's simulation of elapsed estimator time).

Outputs: ``benchmarks/results/fig3_evidence.png`` (regret and ``t * MSE(t)`` per T),
``benchmarks/results/fig3_evidence.md`` (tables + findings) and
``benchmarks/results/fig3_evidence.npz`` (curves, loaded by ``notebooks/fig3_evidence.ipynb``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

import pmcbandit
from benchmarks._common import machine, utc_now
from pmcbandit.arms.base import Arm
from pmcbandit.stats.combine import combine

AIS_STEPS = (400, 2000, 8000)
POLICIES = ("ucb1", "ucb_v", "kl_ucb", "thompson")
COMBINERS = ("uniform", "inverse_variance")
FULL = dict(Ts=(5, 10, 50), runs=20, horizons={5: 10.0, 10: 15.0, 50: 35.0})
QUICK = dict(Ts=(5,), runs=2, horizons={5: 1.0})
RESULTS = Path(__file__).resolve().parent / "results"
_ARMS: dict[int, list] = {}


# --- ground truth ---------------------------------------------------------------------
def reference_log_z(T: int, draws: int, seed: int = 20141) -> tuple[float, float, str]:
    """``(log Z, se, source)``: ``models.pima.REFERENCE_LOG_Z[T]`` or Laplace-t IS with ``draws``.

    The fallback accumulates :math:`S_1 = \\sum w_i`, :math:`S_2 = \\sum w_i^2` in log space;
    ``se = sqrt((N S_2 / S_1^2 - 1) / N)`` is the delta-method SE of :math:`\\log(S_1/N)`.
    """
    from models import pima

    if T in pima.REFERENCE_LOG_Z:
        log_z, se = pima.REFERENCE_LOG_Z[T]
        return float(log_z), float(se), "models.pima.REFERENCE_LOG_Z"
    from pmcbandit.arms.evidence import LaplaceISArm

    arm = LaplaceISArm(pima.logistic_regression(*pima.load_data(T)))
    rng = np.random.default_rng(seed)
    log_s1 = log_s2 = -np.inf
    batch = min(100_000, draws)
    n = 0
    while n < draws:
        lw = arm.log_weights(rng, batch)
        log_s1 = np.logaddexp(log_s1, np.logaddexp.reduce(lw))
        log_s2 = np.logaddexp(log_s2, np.logaddexp.reduce(2 * lw))
        n += batch
    rel_var = max(np.exp(np.log(n) + log_s2 - 2 * log_s1) - 1.0, 0.0)
    return float(log_s1 - np.log(n)), float(np.sqrt(rel_var / n)), f"Laplace-t IS, {n:.0e} draws (computed here)"


# --- step 1: traces ---------------------------------------------------------------------
def _pool(T: int) -> list:
    if T not in _ARMS:
        from models import pima
        from pmcbandit.evidence.estimate import evidence_arms

        model = pima.logistic_regression(*pima.load_data(T))
        _ARMS[T] = evidence_arms(model, ais_steps=AIS_STEPS, laplace=False, prior=False, n_chains=1)
    return _ARMS[T]


def trace_rows(T: int, arm_index: int, rows, horizon: float, seed: int):
    """Rows of ``(log w, CPU cost)`` of one AIS arm, each until its cost passes the horizon.

    Row ``r`` uses the stream ``SeedSequence([seed, T, arm_index, r])``; a row stops once its
    cost exceeds ``1.1 * horizon`` plus five of its largest pulls (room for the bandit's
    overshoot of a paired decision).
    """
    arm = _pool(T)[arm_index]
    out = []
    for r in rows:
        rng = np.random.default_rng(np.random.SeedSequence([seed, T, arm_index, r]))
        values, costs = [], []
        while not costs or sum(costs) < 1.1 * horizon + 5 * max(costs):
            pull = arm.pull(rng)
            values.append(float(pull.values[0]))
            costs.append(pull.cost)
        out.append((r, np.array(values), np.array(costs)))
    return T, arm_index, out


def collect_traces(Ts, runs, horizons, seed, workers):
    """``traces[T][k][r] = (log w, cost)`` arrays; ``workers`` fresh processes (0: in-process)."""
    traces = {T: [[None] * runs for _ in AIS_STEPS] for T in Ts}
    chunk = max(1, runs // 4)
    tasks = [(T, k, list(range(s, min(s + chunk, runs))), horizons[T], seed)
             for T in Ts for k in range(len(AIS_STEPS)) for s in range(0, runs, chunk)]
    if workers:
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("NUMBA_NUM_THREADS", "1")
        module = importlib.import_module("benchmarks.fig3_evidence")
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as ex:
            done = list(ex.map(module.trace_rows, *zip(*tasks)))
    else:
        done = [trace_rows(*t) for t in tasks]
    for T, k, rows in done:
        for r, values, costs in rows:
            traces[T][k][r] = (values, costs)
    return traces


# --- step 3: bandit runs over replayed traces ---------------------------------------------
class ReplayArm(Arm):
    """Pull ``j`` returns entry ``j`` of a recorded row with its recorded CPU cost."""

    log_scale = True

    def __init__(self, name: str, values: np.ndarray, costs: np.ndarray, spent: list):
        self.name, self.values, self.costs, self.spent, self.j = name, values, costs, spent, 0

    def draw(self, rng):
        if self.j >= self.values.size:
            raise IndexError(f"trace of {self.name!r} exhausted after {self.j} pulls: raise the margin")
        j, self.j = self.j, self.j + 1
        self.spent[0] += self.costs[j]
        return self.values[j : j + 1], {}, float(self.costs[j])


def bandit_run(rows, policy: str, horizon: float, seed):
    """One :func:`pmcbandit.run` over replay arms; returns ``(arm, log w, completion time)``."""
    spent = [0.0]
    arms = [ReplayArm(f"ais-{n}", v, c, spent) for n, (v, c) in zip(AIS_STEPS, rows)]
    result = pmcbandit.run(
        arms, policy=policy, budget=pmcbandit.Pulls(10**9), reward="paired", random_seed=seed,
        progressbar=False, callback=lambda progress, history: spent[0] >= horizon,
    )
    h = result.history
    if (h.column("status") != 0).any():
        raise RuntimeError(f"faults in a replayed run: {result.faults}")
    return h.column("arm"), h.column("obs"), np.cumsum(h.column("cost"))


def _estimates_on_grid(arms, rel, done_at, grid, method):
    """Combined ``Z-hat / Z`` of the pulls completed by each grid time (0 before the first)."""
    out = np.zeros(grid.size)
    counts = np.searchsorted(done_at, grid, side="right")
    for g, m in enumerate(counts):
        if m:
            out[g] = combine(rel[:m], arms[:m], len(AIS_STEPS), method).estimate
    return out


def analyse_T(T, rows_T, log_z, horizon, runs, seed, grid_points=50):
    """Curves for one T: relative MSE on a time grid for every fixed arm and policy x combiner."""
    grid = np.linspace(horizon / grid_points, horizon, grid_points)
    est = {}
    for k, n in enumerate(AIS_STEPS):
        e = np.zeros((runs, grid.size))
        for r in range(runs):
            values, costs = rows_T[k][r]
            m = np.searchsorted(np.cumsum(costs), grid, side="right")
            csum = np.concatenate([[0.0], np.cumsum(np.exp(values - log_z))])
            e[r] = np.divide(csum[m], m, out=np.zeros(grid.size), where=m > 0)
        est[f"ais-{n}"] = e
    pulls = {}
    for p_i, policy in enumerate(POLICIES):
        e = {c: np.zeros((runs, grid.size)) for c in COMBINERS}
        share = np.zeros((runs, len(AIS_STEPS)))
        for r in range(runs):
            rows = [rows_T[k][r] for k in range(len(AIS_STEPS))]
            arms, obs, done_at = bandit_run(rows, policy, horizon, np.random.default_rng([seed, T, r, p_i]))
            rel = np.exp(obs - log_z)
            for c in COMBINERS:
                e[c][r] = _estimates_on_grid(arms, rel, done_at, grid, c)
            share[r] = np.bincount(arms[done_at <= horizon], minlength=len(AIS_STEPS))
        for c in COMBINERS:
            est[f"{policy}/{c}"] = e[c]
        pulls[policy] = share.mean(axis=0)
    mse = {name: np.mean((e - 1.0) ** 2, axis=0) for name, e in est.items()}
    log_err = {name: np.log(np.where(e[:, -1] > 0, e[:, -1], np.nan)) for name, e in est.items()}
    fixed = np.min([mse[f"ais-{n}"] for n in AIS_STEPS], axis=0)
    regret = {name: grid**2 * (m - fixed) for name, m in mse.items()}
    all_v = [np.concatenate([rows_T[k][r][0] for r in range(runs)]) for k in range(len(AIS_STEPS))]
    all_c = [np.concatenate([rows_T[k][r][1] for r in range(runs)]) for k in range(len(AIS_STEPS))]
    arm_stats = {
        f"ais-{n}": dict(delta=float(np.mean(c)), rel_var=float(np.var(np.exp(v - log_z), ddof=1)), n=v.size)
        for n, v, c in zip(AIS_STEPS, all_v, all_c)
    }
    return dict(grid=grid, mse=mse, regret=regret, log_mse={k: float(np.nanmean(v**2)) for k, v in log_err.items()},
                pulls=pulls, arm_stats=arm_stats)


# --- outputs --------------------------------------------------------------------------------
STYLE = {"ucb1": "tab:blue", "ucb_v": "tab:orange", "kl_ucb": "tab:green", "thompson": "tab:red",
         "ais-400": "0.2", "ais-2000": "0.45", "ais-8000": "0.7"}


def plot_fig3(results: dict, path=None):
    """Regret (top) and ``t * MSE(t)`` (bottom) per T; solid = uniform, dashed = inverse variance."""
    from matplotlib.figure import Figure

    Ts = sorted(results)
    fig = Figure(figsize=(4.2 * len(Ts), 7.0), layout="constrained")
    axes = fig.subplots(2, len(Ts), squeeze=False)
    for j, T in enumerate(Ts):
        res = results[T]
        t = res["grid"]
        for name, m in res["mse"].items():
            base, _, comb = name.partition("/")
            ls = "--" if comb == "inverse_variance" else (":" if base.startswith("ais") else "-")
            label = name.replace("/inverse_variance", " (inv-var)").replace("/uniform", " (uniform)")
            axes[0, j].plot(t, res["regret"][name], ls=ls, color=STYLE[base], label=label)
            axes[1, j].plot(t, t * m, ls=ls, color=STYLE[base], label=label)
        # Before a method's first estimate its Z-hat is 0 (Sec. 5's convention), a relative
        # error of 1 that would set the scale: fit the axes to the last 80% of the horizon.
        late = t >= 0.2 * t[-1]
        reg = np.concatenate([r[late] for r in res["regret"].values()])
        nmse = np.concatenate([t[late] * m[late] for m in res["mse"].values()])
        axes[0, j].set_yscale("symlog", linthresh=max(1e-12, np.percentile(np.abs(reg), 20)))
        axes[0, j].set_ylim(min(0.0, 1.1 * reg.min()), 1.1 * reg.max())
        axes[1, j].set_yscale("log")
        axes[1, j].set_ylim(0.8 * nmse[nmse > 0].min(), 1.25 * nmse.max())
        axes[0, j].set_title(f"Pima, T = {T}")
        axes[1, j].set_xlabel("CPU seconds of AIS")
    axes[0, 0].set_ylabel(r"regret $t^2(\mathrm{MSE}(t)-\min_k \mathrm{MSE}_k(t))/Z^2$")
    axes[1, 0].set_ylabel(r"$t\cdot\mathrm{MSE}(t)/Z^2$")
    axes[0, -1].legend(fontsize=7, loc="best")
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def save_curves(results: dict, path) -> None:
    flat = {}
    for T, res in results.items():
        flat[f"{T}/grid"] = res["grid"]
        for name, m in res["mse"].items():
            flat[f"{T}/mse/{name}"] = m
            flat[f"{T}/regret/{name}"] = res["regret"][name]
    np.savez_compressed(path, **flat)


def load_curves(path) -> dict:
    """Inverse of :func:`save_curves` (grid, mse and regret per T), for the notebook."""
    results: dict = {}
    with np.load(path) as data:
        for key in data.files:
            T, kind, *name = key.split("/", 2)
            res = results.setdefault(int(T), {"mse": {}, "regret": {}})
            if kind == "grid":
                res["grid"] = data[key]
            else:
                res[kind][name[0]] = data[key]
    return results


def findings(results: dict) -> list[str]:
    """The paper's three claims, checked on the curves at the horizon."""
    lines = []
    wins = total = 0
    best = {}
    for T, res in sorted(results.items()):
        mse = {k: v[-1] for k, v in res["mse"].items()}
        for p in POLICIES:
            total += 1
            wins += mse[f"{p}/inverse_variance"] < mse[f"{p}/uniform"]
        best[T] = min((f"ais-{n}" for n in AIS_STEPS), key=mse.get)
        ranked = sorted(mse, key=mse.get)
        lines.append(f"- T={T}: best fixed arm at the horizon {best[T]}; methods ranked by MSE: "
                     + ", ".join(ranked[:5]) + ", ...; TS (inv-var) / best fixed arm MSE = "
                     f"{mse['thompson/inverse_variance'] / mse[best[T]]:.2f}")
    lines.insert(0, f"- Inverse-variance beats uniform combination (same allocation) in {wins}/{total} "
                    "policy x T cases at the horizon.")
    lines.insert(1, f"- Best fixed arm per T: {best} (no single arm best for all T: "
                    f"{'yes' if len(set(best.values())) > 1 else 'no'}).")
    return lines


def markdown(results, refs, cfg, command, elapsed) -> str:
    out = ["## Fig. 3: adaptive AIS on Pima (Neufeld et al. 2014, Sec. 6.3)", "",
           f"- machine: {machine()}; Python {platform.python_version()}", f"- date: {utc_now()}; "
           f"{elapsed / 60:.1f} min", f"- command: `{command}`", "",
           f"Scale: {cfg['runs']} runs per T; horizons (CPU s of AIS) {cfg['horizons']}; arms AIS "
           f"400/2000/8000, one chain per pull; paired cost-aware reward; measured CPU costs. "
           "MSE and regret are relative (divided by Z^2): regret = t^2 (MSE(t) - min_k MSE_k(t)).", ""]
    for T, res in sorted(results.items()):
        log_z, se, source = refs[T]
        out += [f"### T = {T} (log Z = {log_z:.5f} ± {se:.1e}, {source})", "",
                "| arm | cost δ (ms) | V/Z² | δV/Z² (ms) | estimates |", "|---|---|---|---|---|"]
        for name, s in res["arm_stats"].items():
            out.append(f"| {name} | {1e3 * s['delta']:.1f} | {s['rel_var']:.3g} | "
                       f"{1e3 * s['delta'] * s['rel_var']:.3g} | {s['n']} |")
        fixed = min(res["mse"][f"ais-{n}"][-1] for n in AIS_STEPS)
        out += ["", "| method | t·MSE/Z² at H | MSE / best fixed arm | regret at H | MSE of log Ẑ | "
                "pulls 400/2000/8000 |", "|---|---|---|---|---|---|"]
        H = res["grid"][-1]
        for name, m in res["mse"].items():
            share = res["pulls"].get(name.split("/")[0])
            share_s = "/".join(f"{x:.0f}" for x in share) if share is not None else "-"
            out.append(f"| {name} | {H * m[-1]:.3g} | {m[-1] / fixed:.2f} | {res['regret'][name][-1]:.3g} | "
                       f"{res['log_mse'][name]:.3g} | {share_s} |")
        out.append("")
    out += ["### Findings (computed at the horizon)", "", *findings(results), ""]
    return "\n".join(out)


def save_traces(traces: dict, horizons: dict, path) -> None:
    """All AIS estimates, their CPU costs and the horizons, to re-analyse (``--from-traces``)."""
    flat = {f"{T}/{k}/{r}/{part}": arr for T, arms in traces.items() for k, rows in enumerate(arms)
            for r, row in enumerate(rows) for part, arr in zip(("values", "costs"), row)}
    flat.update({f"horizon/{T}": np.float64(h) for T, h in horizons.items()})
    np.savez_compressed(path, **flat)


def load_traces(path) -> tuple[dict, dict]:
    """Inverse of :func:`save_traces`: ``(traces, horizons)``."""
    traces: dict = {}
    horizons = {}
    with np.load(path) as data:
        for key in data.files:
            if key.startswith("horizon/"):
                horizons[int(key.split("/")[1])] = float(data[key])
                continue
            T, k, r, part = key.split("/")
            rows = traces.setdefault(int(T), {}).setdefault(int(k), {}).setdefault(int(r), {})
            rows[part] = data[key]
    traces = {T: [[(arms[k][r]["values"], arms[k][r]["costs"]) for r in sorted(arms[k])] for k in sorted(arms)]
              for T, arms in traces.items()}
    return traces, horizons


def run_experiment(Ts, runs, horizons, seed=2014, workers=2, reference_draws=10**7, traces=None):
    """Reference values, traces (unless given) and the curves of :func:`analyse_T` for each T."""
    refs = {T: reference_log_z(T, reference_draws) for T in Ts}
    if traces is None:
        traces = collect_traces(Ts, runs, horizons, seed, workers)
    results = {T: analyse_T(T, traces[T], refs[T][0], horizons[T], runs, seed) for T in Ts}
    return results, refs, traces


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="T=5, 2 runs, 1 CPU-second horizon")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--Ts", type=int, nargs="+", default=None)
    parser.add_argument("--horizon-scale", type=float, default=1.0, help="multiply the horizons")
    parser.add_argument("--workers", type=int, default=2, help="trace processes (0: in-process)")
    parser.add_argument("--seed", type=int, default=2014)
    parser.add_argument("--from-traces", type=Path, default=None, metavar="NPZ",
                        help="re-analyse saved traces (fig3_evidence_traces.npz) instead of drawing new ones")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"output folder (default {RESULTS}; --quick: a temporary folder)")
    args = parser.parse_args(argv)
    cfg = dict(QUICK if args.quick else FULL)
    Ts = tuple(args.Ts or cfg["Ts"])
    runs = args.runs or cfg["runs"]
    horizons = {T: args.horizon_scale * cfg["horizons"].get(T, 20.0) for T in Ts}
    start = time.perf_counter()
    traces = None
    if args.from_traces is not None:
        traces, horizons = load_traces(args.from_traces)
        Ts, runs = tuple(sorted(traces)), len(traces[min(traces)][0])
    results, refs, traces = run_experiment(Ts, runs, horizons, args.seed, args.workers,
                                   reference_draws=2 * 10**5 if args.quick else 10**7, traces=traces)
    if args.out is None:
        args.out = Path(tempfile.mkdtemp(prefix="fig3-quick-")) if args.quick else RESULTS
    args.out.mkdir(parents=True, exist_ok=True)
    plot_fig3(results, args.out / "fig3_evidence.png")
    save_curves(results, args.out / "fig3_evidence.npz")
    if args.from_traces is None:
        save_traces(traces, horizons, args.out / "fig3_evidence_traces.npz")
    command = "python -m benchmarks.fig3_evidence " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(results, refs, dict(runs=runs, horizons=horizons), command.strip(), time.perf_counter() - start)
    (args.out / "fig3_evidence.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
