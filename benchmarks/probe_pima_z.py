"""Calibration of the evidence SE on Pima (all 768 rows), seed by seed: z of ``estimate_evidence`` at a wall budget.

For seeds 0..n-1, in one process, ``estimate_evidence(pima_768, budget=seconds, random_seed=seed)`` and
``z = (log Ẑ - log Z_ref) / sqrt(se² + se_ref²)`` against the suite's reference, then the root mean square z (1 for
calibrated SEs). Run it from a checkout of each version to compare (the package is imported from the current
directory): ``.venv/bin/python -m benchmarks.probe_pima_z 15 10``. It prints; it writes no results file.

``.venv/bin/python -m benchmarks.probe_pima_z --arm laplace-t20 RUNS PULLS`` checks one arm of the default pool
(``evidence_arms(pima_768, budget_seconds=15)``) alone, against no reference: ``RUNS`` runs of ``PULLS`` pulls, run
``r`` from ``default_rng(1000 + r)``, each run's estimate the log of its pulls' mean weight and its SE their
relative standard error; printed: the spread of the runs' estimates beside their mean SE (a ratio near 1 for a
calibrated SE).

``.venv/bin/python -m benchmarks.probe_pima_z --run laplace-t20 SEEDS PULLS`` runs the same arm alone through
``pb.run`` (uniform policy, ``Pulls(PULLS)``, ``random_seed`` 0..SEEDS-1: the run loop's per-pull streams), and prints
each run's error against the reference with its SE and z after a quarter, half and all of its pulls, then the root
mean square z and the runs' spread beside their mean SE at ``PULLS``.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from benchmarks._common import log_mean_exp


def main(seconds: float, seeds: int) -> None:
    import pmcbandit as pb
    from models.evidence_suite import SUITE

    warnings.simplefilter("ignore")
    zs = []
    for seed in range(seeds):
        case = SUITE["pima_768"]()
        res = pb.estimate_evidence(case.model, budget=seconds, random_seed=seed, progressbar=False)
        zs.append((res.log_z - case.log_z) / np.hypot(res.log_z_se, case.log_z_se))
        print(seed, round(zs[-1], 2), round(res.log_z_se, 6), len(res.history), flush=True)
    print("root mean square z", float(np.sqrt(np.mean(np.square(zs)))))


def arm_alone(name: str, runs: int, pulls: int) -> None:
    import pmcbandit as pb
    from models.evidence_suite import SUITE

    warnings.simplefilter("ignore")
    case = SUITE["pima_768"]()
    arm = next(a for a in pb.evidence_arms(case.model, budget_seconds=15) if a.name == name)
    estimates, ses = [], []
    for r in range(runs):
        rng = np.random.default_rng(1000 + r)
        # each pull's log mean weight, then their log-mean-exp (the pulls' mean weight) with its relative SE
        log_means = [log_mean_exp(np.ravel(arm.pull(rng).values))[0] for _ in range(pulls)]
        estimate, se = log_mean_exp(log_means)
        estimates.append(estimate)
        ses.append(se)
        print(r, round(estimates[-1] - case.log_z, 5), round(ses[-1], 5), flush=True)
    spread = float(np.std(estimates, ddof=1))
    print(f"between-run sd {spread:.5f}, mean SE {np.mean(ses):.5f}, ratio {spread / np.mean(ses):.2f}")


def arm_in_run(name: str, seeds: int, pulls: int) -> None:
    import pmcbandit as pb
    from models.evidence_suite import SUITE

    warnings.simplefilter("ignore")
    case = SUITE["pima_768"]()
    arm = next(a for a in pb.evidence_arms(case.model, budget_seconds=15) if a.name == name)

    zs, errors, ses = [], [], []
    for seed in range(seeds):
        res = pb.run([arm], policy="uniform", budget=pb.Pulls(pulls), random_seed=seed, progressbar=False)
        x = res.history.column("obs")
        parts = []
        for m in (pulls // 4, pulls // 2, pulls):
            e, s = log_mean_exp(x[:m])
            e -= case.log_z
            parts.append(f"{m}: {e:+.5f}/{s:.5f} z {e / s:+.2f}")
        errors.append(e)
        ses.append(s)
        zs.append(e / np.hypot(s, case.log_z_se))
        print(seed, " | ".join(parts), flush=True)
    print(f"root mean square z {np.sqrt(np.mean(np.square(zs))):.2f}; spread {np.std(errors, ddof=1):.5f}, "
          f"mean SE {np.mean(ses):.5f}, mean error {np.mean(errors):+.5f}")


if __name__ == "__main__":
    if sys.argv[1] == "--run":
        arm_in_run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1] == "--arm":
        arm_alone(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main(float(sys.argv[1]), int(sys.argv[2]))
