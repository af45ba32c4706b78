"""The trace arms of one suite model on one NUTS trace, pulled directly: relative variance per weight, error of
their pooled estimate against the reference, its SE, Pareto k-hat and the spread of the pulls' log estimates.

    PYTHONPATH=. python -m benchmarks.probe_trace_arms hierarchical_logistic_50 2
    PYTHONPATH=<checkout of another commit> python benchmarks/probe_trace_arms.py hierarchical_logistic_50 2

The trace is ``pm.sample(1000, tune=1000, chains=4, cores=1, random_seed=SEED)``, saved under the system's temporary
folder so that a second checkout reads the same draws; the arms are ``evidence_arms(model, idata=trace,
budget_seconds=15)``'s ``trace-*`` arms, each pulled ``--pulls`` times from ``default_rng(123)``. One JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import warnings


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("seed", type=int)
    parser.add_argument("--pulls", type=int, default=40)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import numpy as np
    import pymc as pm

    import pmcbandit as pb
    from models.evidence_suite import SUITE
    from pmcbandit.stats.psis import pareto_khat

    suite = SUITE[args.model]()
    path = os.path.join(tempfile.gettempdir(), f"pmcbandit_trace_{args.model}_{args.seed}.npz")
    if not os.path.exists(path):
        with suite.model:
            idata = pm.sample(1000, tune=1000, chains=4, cores=1, random_seed=args.seed, progressbar=False,
                              compute_convergence_checks=False)
        np.savez(path, **{v: np.asarray(idata.posterior[v]) for v in idata.posterior.data_vars})
    saved = np.load(path)
    trace = {k: saved[k] for k in saved.files}
    out = {}
    for arm in pb.evidence_arms(suite.model, idata=trace, budget_seconds=15):
        if not arm.name.startswith("trace"):
            continue
        rng = np.random.default_rng(123)
        pulls = [np.ravel(arm.pull(rng).values) for _ in range(args.pulls)]
        log_w = np.concatenate(pulls)
        top = log_w.max()
        w = np.exp(log_w - top)
        relvar = w.var(ddof=1) / w.mean() ** 2
        per_pull = np.array([np.log(np.mean(np.exp(p - top))) for p in pulls])
        out[arm.name] = dict(relvar_per_weight=round(float(relvar), 3),
                             error=round(float(np.log(w.mean()) + top - suite.log_z), 5),
                             se=round(float(np.sqrt(relvar / log_w.size)), 5), khat=round(pareto_khat(log_w), 3),
                             pulls_sd=round(float(per_pull.std()), 4))
    print(json.dumps(dict(package=pb.__file__, arms=out)))


if __name__ == "__main__":
    main()
