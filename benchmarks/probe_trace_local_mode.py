"""A Laplace-t arm at a local mode found from the trace's mean, beside the trace pool's arms and the no-trace pool's
Laplace arms, on one suite model and one NUTS trace: relative variance x CPU seconds per pull of each arm.

    PYTHONPATH=. python -m benchmarks.probe_trace_local_mode eight_schools_centred 0 --pulls 60

The trace is :mod:`benchmarks.probe_trace_arms`' (saved under the system's temporary folder). The arms:
``evidence_arms(model, idata=trace, budget_seconds=15)``'s importance arms (its own ``local-t`` arms left out: they
are built here by hand, unrefined and refined); ``evidence_arms(model, budget_seconds=15)``'s ``laplace-t*`` arms;
and ``local-t*``, one per default proposal, at the end point of one trust-region Newton search (:func:`~pmcbandit.arms.evidence.modes.search_mode`) started at the mean of the trace's
draws on the density's (non-centred) unconstrained space, with the Hessian there, and the same refined
(``local-t*-r``, :func:`~pmcbandit.arms.evidence.refine.refine_proposal`, seed 7), and the ``trace-t*`` arms
refined the same way where that changes them (``trace-t*-r``). Each arm is pulled ``--pulls`` times,
the arms taken in turn (alternating, so a busy machine slows them alike), from ``default_rng(123)``; a pull's CPU
seconds by ``time.process_time``. ``var_cost``: the weights' relative variance per pull (per weight over the
batch size) times the median CPU seconds per pull. One JSON line.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402


def _trace(suite, name: str, seed: int) -> dict:
    import numpy as np
    import pymc as pm

    path = os.path.join(tempfile.gettempdir(), f"pmcbandit_trace_{name}_{seed}.npz")
    if not os.path.exists(path):
        with suite.model:
            idata = pm.sample(1000, tune=1000, chains=4, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False)
        np.savez(path, **{v: np.asarray(idata.posterior[v]) for v in idata.posterior.data_vars})
    saved = np.load(path)
    return {k: saved[k] for k in saved.files}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("seed", type=int)
    parser.add_argument("--pulls", type=int, default=60)
    parser.add_argument("--max-iter", type=int, default=200)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import numpy as np

    import pmcbandit as pb
    from models.evidence_suite import SUITE
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence.modes import Mode, ModeSearch, _laplace_log_evidence, search_mode
    from pmcbandit.arms.evidence.refine import refine_proposal
    from pmcbandit.evidence.importance import DEFAULT_LAPLACE_PROPOSALS, arm_name
    from pmcbandit.evidence.trace import read_trace, unconstrained_draws
    from pmcbandit.stats.psis import pareto_khat

    suite = SUITE[args.model]()
    trace = _trace(suite, args.model, args.seed)
    with_trace = pb.evidence_arms(suite.model, idata=trace, budget_seconds=15)
    arms = [a for a in with_trace if hasattr(a, "log_weights") and not a.name.startswith("local")]
    arms += [a for a in pb.evidence_arms(suite.model, budget_seconds=15) if a.name.startswith("laplace")]
    density = arms[0].density
    x = unconstrained_draws(suite.model, density, read_trace(trace, suite.model, "probe").values)
    start = time.perf_counter()
    end = search_mode(density, 1.0, x.mean(axis=0), max_iter=args.max_iter)
    search_s = time.perf_counter() - start
    local = dict(search_s=round(search_s, 4), n_iter=end.n_iter, stationary=end.stationary,
                 positive_definite=end.positive_definite, condition=float(f"{end.condition:.3g}"),
                 log_density=round(end.log_density, 4), message=end.message)
    if end.positive_definite:
        mode = Mode(end.location, end.precision, end.log_density, _laplace_log_evidence(end.log_density,
                                                                                         end.precision))
        search = ModeSearch((mode,), True, "local", 1, 1, 1, search_s)
        made = [LaplaceISArm(density, df=df, inflation=inf, defensive=dfn, name=arm_name("local-t", df),
                             modes=search) for df, inf, dfn in DEFAULT_LAPLACE_PROPOSALS]
        start = time.perf_counter()
        done = refine_proposal(made[0], np.random.default_rng(7))
        local["refine_s"] = round(time.perf_counter() - start, 3)
        if done.modes is not None:
            made += [a.with_modes(done.modes, a.name + "-r") for a in made]
        arms += made
    for arm in [a for a in arms if a.name in ("trace-t", "trace-t20")]:
        start = time.perf_counter()
        done = refine_proposal(arm, np.random.default_rng(7))
        local[f"refine_{arm.name}_s"] = round(time.perf_counter() - start, 3)
        local[f"refine_{arm.name}"] = done.reason
        if done.modes is not None:
            arms.append(arm.with_modes(done.modes, arm.name + "-r"))
    logs = {a.name: [] for a in arms}
    secs = {a.name: [] for a in arms}
    rng = np.random.default_rng(123)
    for _ in range(args.pulls):
        for arm in arms:
            t0 = time.process_time()
            lw = arm.log_weights(rng, arm.batch_size)
            secs[arm.name].append(time.process_time() - t0)
            logs[arm.name].append(lw)
    out = {}
    for arm in arms:
        log_w = np.concatenate(logs[arm.name])
        top = log_w.max()
        w = np.exp(log_w - top)
        relvar = w.var(ddof=1) / w.mean() ** 2
        per_pull = float(np.median(secs[arm.name]))
        out[arm.name] = dict(var_cost=float(f"{relvar / arm.batch_size * per_pull:.3g}"),
                             relvar_w=round(float(relvar), 4), s_pull=float(f"{per_pull:.3g}"),
                             khat=round(pareto_khat(log_w), 3),
                             error=round(float(np.log(w.mean()) + top - suite.log_z), 5))
    print(json.dumps(dict(model=args.model, seed=args.seed, local=local, arms=out)))


if __name__ == "__main__":
    main()
