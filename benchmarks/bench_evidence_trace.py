"""Evidence from a posterior trace: ``estimate_evidence(model, idata=trace)`` against the no-trace pool and bridge
sampling on the same trace.

Run as ``.venv/bin/python -m benchmarks.bench_evidence_trace`` (``--models``, ``--seeds``, ``--seconds``,
``--chains``, ``--draws`` to choose; the defaults are the full measurement: the nine models of
:data:`models.evidence_suite.SUITE`, 20 seeds, a 15 s budget, a 4 x 1000 NUTS trace). For every model, one
``pm.sample(chains, draws, tune=draws, cores=1, random_seed=0)`` trace (its time is reported and counted for no
method), then for every seed, in one process:

``trace``        ``estimate_evidence(model, idata=trace, budget=seconds, random_seed=seed)``: the default pool with
                 the trace-fitted arms in place of the mode search and pilots, set-up counted in the budget;
``no_trace``     ``estimate_evidence(model, budget=seconds, random_seed=seed)``, the default pool as without a trace;
``bridge``       bridge sampling with a normal proposal on the same trace (:mod:`benchmarks.bridge_sampling`, Gronau
                 et al. 2017), on the model as written (as R's ``bridgesampling`` on the model a user fitted);
``bridge_warp3`` its warp-3 variant.

The runs share one process per benchmark call, and one untimed ``estimate_evidence(model, idata=trace,
budget=Pulls(5))`` first compiles the model's density, the AIS kernels and the run loop; the no-trace pool's first run
pays its mode search, which later runs reuse (:mod:`pmcbandit.arms.evidence._cache`): the set-up columns are
warm-process figures. Reported per model and method: mean error and RMSE
of ``log Z`` against the suite's reference, mean SE, the coverage of the 95 % intervals (``log_z_ci`` for the pools,
``log Z +- 1.96 se`` for bridge sampling), mean wall seconds and set-up seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings

import numpy as np

from benchmarks._common import machine, models_option, utc_now, write_section

DEFAULT_MODELS = ("conjugate", "eight_schools_centred", "mixture_label_switching", "student_t_unknown_nu",
                  "beta_binomial", "logistic_regression_d50", "pima_768", "hierarchical_normal_100",
                  "hierarchical_logistic_50")
METHODS = ("trace", "no_trace", "bridge", "bridge_warp3")


def _trace(model, chains: int, draws: int):
    import pymc as pm

    start = time.perf_counter()
    with model:
        idata = pm.sample(draws=draws, tune=draws, chains=chains, cores=1, random_seed=0, progressbar=False,
                          compute_convergence_checks=False)
    return idata, time.perf_counter() - start


def measure(name: str, seeds: int, seconds: float, chains: int, draws: int) -> tuple[str, list[dict]]:
    import pmcbandit as pb
    from benchmarks.bridge_sampling import bridge_sampling
    from models.evidence_suite import SUITE
    from pmcbandit.arms.evidence._cache import density_for
    from pmcbandit.evidence.trace import read_trace, unconstrained_draws

    suite = SUITE[name]()
    model = suite.model
    idata, sample_seconds = _trace(model, chains, draws)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = read_trace(idata, model, "bench")
        density = density_for(model, False, [])
        x = unconstrained_draws(model, density, trace.values)
        per_chain = x[: (x.shape[0] // chains) * chains].reshape(chains, -1, density.dim)
        # Untimed: compiles the pool's density and kernels and the run loop, as a user's earlier call would have.
        pb.estimate_evidence(model, idata=idata, budget=pb.Pulls(5), random_seed=0, progressbar=False)
        for seed in range(seeds):
            for method in METHODS:
                start = time.perf_counter()
                if method in ("trace", "no_trace"):
                    r = pb.estimate_evidence(model, idata=idata if method == "trace" else None, budget=seconds,
                                             random_seed=seed, progressbar=False)
                    lo, hi = r.log_z_ci(0.95)
                    row = dict(log_z=r.log_z, se=r.log_z_se, lo=lo, hi=hi, setup=r.settings["setup_seconds"])
                else:
                    b = bridge_sampling(density, per_chain, np.random.default_rng(seed),
                                        "normal" if method == "bridge" else "warp3")
                    row = dict(log_z=b["log_z"], se=b["se"], lo=b["log_z"] - 1.96 * b["se"],
                               hi=b["log_z"] + 1.96 * b["se"], setup=0.0)
                row.update(model=name, method=method, seed=seed, wall=time.perf_counter() - start)
                rows.append(row)
    lines = [f"### {name} (dim {suite.dim}; reference log Z {suite.log_z:.6f}; trace {chains} x {draws} NUTS draws "
             f"in {sample_seconds:.1f} s, not counted)", "",
             "| method | runs | mean error | RMSE | mean SE | coverage 95 % | mean wall s | mean set-up s |",
             "|---|---|---|---|---|---|---|---|"]
    for method in METHODS:
        m = [r for r in rows if r["method"] == method]
        err = np.array([r["log_z"] - suite.log_z for r in m])
        cover = np.mean([r["lo"] <= suite.log_z <= r["hi"] for r in m])
        lines.append(f"| {method} | {len(m)} | {err.mean():+.4f} | {np.sqrt(np.mean(err**2)):.4f} | "
                     f"{np.mean([r['se'] for r in m]):.4f} | {cover:.2f} | {np.mean([r['wall'] for r in m]):.2f} | "
                     f"{np.mean([r['setup'] for r in m]):.2f} |")
    return "\n".join(lines), rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--out", default="bench_evidence_trace", help="name of the results/<name>.md section")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    command = (f"python -m benchmarks.bench_evidence_trace{models_option(args.models, DEFAULT_MODELS)} "
               f"--seeds {args.seeds} --seconds {args.seconds:g} --chains {args.chains} --draws {args.draws}")
    sections = []
    for name in args.models:
        text, rows = measure(name, args.seeds, args.seconds, args.chains, args.draws)
        print(text, flush=True)
        print(json.dumps(rows), file=sys.stderr, flush=True)
        sections.append(text)
    header = (f"## Evidence from a posterior trace (bench_evidence_trace)\n\nMachine: {machine()}; date: {utc_now()}; "
              f"commit: {commit}; command: `{command}`.\n")
    write_section(args.out, header + "\n" + "\n\n".join(sections))


if __name__ == "__main__":
    main()
