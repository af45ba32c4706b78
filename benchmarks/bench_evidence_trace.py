"""Evidence from a posterior trace: ``estimate_evidence(model, idata=trace)`` against the no-trace pool and bridge
sampling on the same trace.

The full measurement (on a quiet 2-core machine; about 3 h: 180 traces and 360 pool runs of 15 s)::

    python -m benchmarks.bench_evidence_trace
    python -m benchmarks.bench_evidence_trace --target-se 0.01

The first runs the nine models of :data:`models.evidence_suite.SUITE`, 20 seeds, a 15 s budget, a 4 x 1000 NUTS trace
per seed (``--models``, ``--seeds``, ``--seconds``, ``--chains``, ``--draws`` to choose less; ``--one-trace`` to
sample one trace per model, seed 0, instead). Every seed has its own trace,
``pm.sample(draws, tune=draws, chains, cores=1, random_seed=seed)`` (its time is reported and counted for no
method), so the trace's own Monte Carlo error enters every method's error, as it does a user's; with
``--one-trace`` the seeds redraw only the methods' own randomness and bridge sampling's error, which rests mostly on
the posterior draws, is one draw shared by all seeds. For every seed, in one process:

``trace``        ``estimate_evidence(model, idata=trace, budget=seconds, random_seed=seed)``: the default pool with
                 the trace-fitted arms in place of the mode search and pilots, set-up counted in the budget;
``no_trace``     ``estimate_evidence(model, budget=seconds, random_seed=seed)``, the default pool as without a trace;
``bridge``       bridge sampling with a normal proposal on the same trace (:mod:`benchmarks.bridge_sampling`, Gronau
                 et al. 2017, its SE the MCSE of Micaletto & Vehtari 2025), on the model as written (as R's
                 ``bridgesampling`` on the model a user fitted);
``bridge_warp3`` its warp-3 variant.

One untimed ``estimate_evidence(model, idata=trace, budget=Pulls(5))`` first compiles the model's density, the AIS
kernels and the run loop; the no-trace pool's first run pays its mode search, which later runs reuse
(:mod:`pmcbandit.arms.evidence._cache`): the set-up columns are warm-process figures. The process holds BLAS, OpenMP
and numba to one thread (set before NumPy is imported, unless already set), as the other benchmarks' workers.

Reported per model and method: mean error and RMSE of ``log Z`` against the suite's reference, mean SE, the coverage
of the 95 % intervals (``log_z_ci`` for the pools, ``log Z +- 1.96 se`` for bridge sampling), mean wall seconds and
set-up seconds; then the MSE ratios at equal wall time (the trace's sampling time counted for neither): the trace
pool's MSE at ``seconds`` over bridge sampling's (which ends sooner: bridge sampling cannot spend more on the same
trace), and over the no-trace pool's at the same ``seconds``; then each pool's mean z-score beside that of its
most-weighted arm's answer alone (``_lean_line``: a lean both show is already in that arm's own answer, not made by
the combination).

``--target-se SE`` measures instead the time from the call to an answer with ``se <= SE`` on Pima T = 50
(:func:`models.pima.logistic_regression`, the model of ``benchmarks/bench_evidence_vs_smc.py``), given a
``chains x draws`` NUTS trace, beside the same without the trace: ``estimate_evidence(model, idata=..., budget=
TargetSE(SE, max_seconds=M))``, the seeds' wall seconds (mean, median, largest), set-up seconds, SE reached and
error against ``models.pima.REFERENCE_LOG_Z[50]``; results go to ``results/bench_evidence_trace_target.md``. The
cap ``M`` (``--max-seconds``, default 5) also sizes the AIS arms (a pull at most 0.05 of it), so a larger cap makes
the first round of pulls, which every arm gets before the first check, longer. The no-trace pool's first call in the
process (seed 0) runs its mode search, later calls reuse it: the two are reported apart.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks._common import machine, models_option, utc_now, write_section  # noqa: E402

DEFAULT_MODELS = ("conjugate", "eight_schools_centred", "mixture_label_switching", "student_t_unknown_nu",
                  "beta_binomial", "logistic_regression_d50", "pima_768", "hierarchical_normal_100",
                  "hierarchical_logistic_50")
METHODS = ("trace", "no_trace", "bridge", "bridge_warp3")


def _trace(model, chains: int, draws: int, seed: int = 0):
    import pymc as pm

    start = time.perf_counter()
    with model:
        idata = pm.sample(draws=draws, tune=draws, chains=chains, cores=1, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False)
    return idata, time.perf_counter() - start


def _per_chain(model, density, idata, chains: int) -> np.ndarray:
    """The trace's draws on ``density``'s space, ``(chain, draw, dim)``."""
    from pmcbandit.evidence.trace import read_trace, unconstrained_draws

    x = unconstrained_draws(model, density, read_trace(idata, model, "bench").values)
    return x[: (x.shape[0] // chains) * chains].reshape(chains, -1, density.dim)


def measure(name: str, seeds: int, seconds: float, chains: int, draws: int,
            one_trace: bool = False) -> tuple[str, list[dict]]:
    import pmcbandit as pb
    from benchmarks.bridge_sampling import bridge_sampling
    from models.evidence_suite import SUITE
    from pmcbandit.arms.evidence._cache import density_for

    suite = SUITE[name]()
    model = suite.model
    rows, sample_seconds = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        density = density_for(model, False, [])
        idata = None
        for seed in range(seeds):
            if idata is None or not one_trace:
                idata, took = _trace(model, chains, draws, seed)
                sample_seconds.append(took)
                per_chain = _per_chain(model, density, idata, chains)
            if seed == 0:
                # Untimed: compiles the pool's density and kernels and the run loop, as a user's earlier call would.
                pb.estimate_evidence(model, idata=idata, budget=pb.Pulls(5), random_seed=0, progressbar=False)
            for method in METHODS:
                start = time.perf_counter()
                if method in ("trace", "no_trace"):
                    r = pb.estimate_evidence(model, idata=idata if method == "trace" else None, budget=seconds,
                                             random_seed=seed, progressbar=False)
                    lo, hi = r.log_z_ci(0.95)
                    row = dict(log_z=r.log_z, se=r.log_z_se, lo=lo, hi=hi, setup=r.settings["setup_seconds"],
                               **_best_arm(r, suite.log_z))
                else:
                    b = bridge_sampling(density, per_chain, np.random.default_rng(seed),
                                        "normal" if method == "bridge" else "warp3")
                    row = dict(log_z=b["log_z"], se=b["se"], lo=b["log_z"] - 1.96 * b["se"],
                               hi=b["log_z"] + 1.96 * b["se"], setup=0.0)
                row.update(model=name, method=method, seed=seed, wall=time.perf_counter() - start)
                rows.append(row)
    traces = "one trace (seed 0)" if one_trace else f"one trace per seed (seeds 0-{seeds - 1})"
    lines = [f"### {name} (dim {suite.dim}; reference log Z {suite.log_z:.6f}; {traces} of {chains} x {draws} NUTS "
             f"draws, {np.mean(sample_seconds):.1f} s each, not counted)", "",
             "| method | runs | mean error | RMSE | mean SE | coverage 95 % | mean wall s | mean set-up s |",
             "|---|---|---|---|---|---|---|---|"]
    mse = {}
    for method in METHODS:
        m = [r for r in rows if r["method"] == method]
        err = np.array([r["log_z"] - suite.log_z for r in m])
        mse[method] = float(np.mean(err**2))
        cover = np.mean([r["lo"] <= suite.log_z <= r["hi"] for r in m])
        lines.append(f"| {method} | {len(m)} | {err.mean():+.4f} | {np.sqrt(mse[method]):.4f} | "
                     f"{np.mean([r['se'] for r in m]):.4f} | {cover:.2f} | {np.mean([r['wall'] for r in m]):.2f} | "
                     f"{np.mean([r['setup'] for r in m]):.2f} |")
    ratios = ", ".join(f"{other} {mse['trace'] / mse[other]:.3g}" if mse[other] > 0 else f"{other} -"
                       for other in ("bridge", "bridge_warp3", "no_trace"))
    lines += ["", f"MSE of the trace pool at {seconds:g} s over: {ratios}.", "", _efficiency_line(rows), "",
              _lean_line(rows, suite.log_z)]
    return "\n".join(lines), rows


def _best_arm(r, log_z: float) -> dict:
    """The arm of largest combination weight in the result ``r``, its relative variance per pull times its cost
    per pull (the table's ``var_cost``, :math:`V\\delta/\\hat Z^2` in a log-scale run: the variance of log Z an arm
    gives per second spent on it, to first order; scale-free, so two runs' arms compare), and the z-score of that
    arm's answer alone against ``log_z``: its own mean and SE as the combination reads them (``r.combined``, the
    variance scaled by the arm's tail factor), to first order on the log scale.
    """
    table = r.table
    name = table["weight"].astype(float).idxmax()
    c = r.combined
    k = list(r.arm_names).index(name)
    z = (np.log(c.mean[k]) + r.shift - log_z) / (np.sqrt(c.var[k] / c.n[k]) / c.mean[k])
    return dict(best_arm=str(name), best_rvc=float(table.loc[name, "var_cost"]), best_z=float(z))


def _lean_line(rows: list[dict], log_z: float) -> str:
    """Mean z-score of each pool's answers and of their most-weighted arms alone: where both lean the same way the
    lean is already in the arm's own answer, not made by the combination.
    """
    parts = []
    for method in ("trace", "no_trace"):
        m = [r for r in rows if r["method"] == method and np.isfinite(r.get("best_z", np.nan))]
        if m:
            z = np.array([(r["log_z"] - log_z) / r["se"] for r in m])
            za = np.array([r["best_z"] for r in m])
            parts.append(f"{method} {z.mean():+.2f} (sd {z.std(ddof=1):.2f}), its most-weighted arm alone "
                         f"{za.mean():+.2f} (sd {za.std(ddof=1):.2f})")
    return "Mean z over the seeds, the answer and its most-weighted arm alone: " + "; ".join(parts) + "." if parts else ""


def _efficiency_line(rows: list[dict]) -> str:
    """The bound the two pools' best arms put on the MSE ratio at equal wall time.

    An inverse-variance combination of arms that spent seconds :math:`t_i` at relative variance times cost
    :math:`v_i` per pull has variance :math:`1/\\sum_i t_i/v_i \\ge \\min_i v_i / \\sum_i t_i`, so a pool's MSE of log Z
    at :math:`T` seconds of pulls is at least its most efficient arm's :math:`v` over :math:`T`, and about that when
    its allocation goes to that arm. The trace pool's MSE over the no-trace pool's can then fall below the ratio of
    their best arms' :math:`v` only by the set-up seconds it saves.
    """
    per = {}
    for method in ("trace", "no_trace"):
        m = [r for r in rows if r["method"] == method and np.isfinite(r.get("best_rvc", np.nan))]
        if not m:
            return ""
        names = sorted({r["best_arm"] for r in m})
        per[method] = (float(np.median([r["best_rvc"] for r in m])), ", ".join(names))
    (vt, nt), (vn, nn) = per["trace"], per["no_trace"]
    return (f"Most-weighted arm, relative variance x seconds per pull (median over seeds): trace pool {vt:.3g} "
            f"({nt}), no-trace pool {vn:.3g} ({nn}); ratio {vt / vn:.3g}, the MSE ratio the trace pool can reach "
            f"at equal time on those arms, less what its set-up saves.")


def measure_target(target: float, seeds: int, chains: int, draws: int, max_seconds: float) -> tuple[str, list[dict]]:
    """Time to an answer with ``se <= target`` on Pima T = 50, with and without a trace (module docstring)."""
    import pmcbandit as pb
    from models import pima

    model = pima.logistic_regression(*pima.load_data(50))
    log_z = pima.REFERENCE_LOG_Z[50][0]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata, sample_seconds = _trace(model, chains, draws)
        pb.estimate_evidence(model, idata=idata, budget=pb.Pulls(5), random_seed=0, progressbar=False)
        for seed in range(seeds):
            for method in ("trace", "no_trace"):
                start = time.perf_counter()
                r = pb.estimate_evidence(model, idata=idata if method == "trace" else None,
                                         budget=pb.TargetSE(target, max_seconds=max_seconds), random_seed=seed,
                                         progressbar=False)
                if method == "no_trace":
                    method = "no_trace, first call" if seed == 0 else "no_trace, later calls"
                rows.append(dict(method=method, seed=seed, wall=time.perf_counter() - start,
                                 setup=r.settings["setup_seconds"], se=r.log_z_se, error=r.log_z - log_z))
    lines = [f"### Pima T = 50: time to se <= {target:g} (trace {chains} x {draws} NUTS draws in "
             f"{sample_seconds:.1f} s, not counted; reference log Z {log_z:.6f})", "",
             "| method | runs | mean wall s | median wall s | largest wall s | mean set-up s | mean SE | RMSE | "
             f"runs with se <= {target:g} |", "|---|---|---|---|---|---|---|---|---|"]
    for method in ("trace", "no_trace, first call", "no_trace, later calls"):
        m = [r for r in rows if r["method"] == method]
        if not m:
            continue
        wall = np.array([r["wall"] for r in m])
        err = np.array([r["error"] for r in m])
        lines.append(f"| {method} | {len(m)} | {wall.mean():.2f} | {np.median(wall):.2f} | {wall.max():.2f} | "
                     f"{np.mean([r['setup'] for r in m]):.2f} | {np.mean([r['se'] for r in m]):.4f} | "
                     f"{np.sqrt(np.mean(err**2)):.4f} | {sum(r['se'] <= target for r in m)} |")
    return "\n".join(lines), rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "), epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=15.0, help="wall budget of each pool run (default 15)")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--one-trace", action="store_true", help="one trace per model (seed 0), not one per seed")
    parser.add_argument("--target-se", type=float, default=None,
                        help="time to an answer with se <= TARGET_SE on Pima T = 50, with and without a trace")
    parser.add_argument("--max-seconds", type=float, default=5.0, help="cap of each --target-se run (default 5)")
    parser.add_argument("--out", default=None, help="name of the results/<name>.md section (default "
                        "bench_evidence_trace, or bench_evidence_trace_target with --target-se)")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    if args.target_se is not None:
        command = (f"python -m benchmarks.bench_evidence_trace --target-se {args.target_se:g} --seeds {args.seeds} "
                   f"--chains {args.chains} --draws {args.draws} --max-seconds {args.max_seconds:g}")
        text, rows = measure_target(args.target_se, args.seeds, args.chains, args.draws, args.max_seconds)
        print(text, flush=True)
        print(json.dumps(rows), file=sys.stderr, flush=True)
        header = (f"## Evidence from a posterior trace: time to an answer (bench_evidence_trace --target-se)\n\n"
                  f"Machine: {machine()}; date: {utc_now()}; commit: {commit}; command: `{command}`.\n")
        write_section(args.out or "bench_evidence_trace_target", header + "\n" + text)
        return
    command = (f"python -m benchmarks.bench_evidence_trace{models_option(args.models, DEFAULT_MODELS)} "
               f"--seeds {args.seeds} --seconds {args.seconds:g} --chains {args.chains} --draws {args.draws}"
               + (" --one-trace" if args.one_trace else ""))
    sections = []
    for name in args.models:
        text, rows = measure(name, args.seeds, args.seconds, args.chains, args.draws, args.one_trace)
        print(text, flush=True)
        print(json.dumps(rows), file=sys.stderr, flush=True)
        sections.append(text)
    header = (f"## Evidence from a posterior trace (bench_evidence_trace)\n\nMachine: {machine()}; date: {utc_now()}; "
              f"commit: {commit}; command: `{command}`.\n")
    write_section(args.out or "bench_evidence_trace", header + "\n" + "\n\n".join(sections))


if __name__ == "__main__":
    main()
