"""Where the pulls of an SE-target run on Pima T = 50 go: for seeds ``0..n-1``, in one process,
``estimate_evidence(model, budget=TargetSE(0.01), random_seed=seed)`` and the CPU seconds its pulls recorded (the
history's ``cost`` column), why it stopped, the interval's status, log Z, its SE and the pulls per arm; then the
median and the largest pull CPU, the seeds' standard deviation of log Z beside their mean SE, and each seed's z
against the answer of the smallest SE among them (the root mean square, the largest and how many within 1.96).
Run it from a checkout of each version to compare (the package is imported from the current directory):
``.venv/bin/python -m benchmarks.probe_pima50_pulls 10``. It prints; it writes no results file.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np


def main(seeds: int) -> None:
    import pmcbandit as pb
    from models import pima

    warnings.simplefilter("ignore")
    model = pima.logistic_regression(*pima.load_data(50))
    spent, log_z, se = [], [], []
    for seed in range(seeds):
        res = pb.estimate_evidence(model, budget=pb.TargetSE(0.01), random_seed=seed, progressbar=False)
        spent.append(float(np.nansum(res.history.column("cost"))))
        log_z.append(float(res.log_z))
        se.append(float(res.log_z_se))
        pulled = {k: int(v) for k, v in res.table["pulls"].items() if v}
        print(seed, f"pull cpu {spent[-1]:.2f} s", res.stopped_by, res.interval_status, f"log Z {log_z[-1]:.4f}",
              f"se {se[-1]:.4f}", pulled, flush=True)
    print(f"median {np.median(spent):.2f} s, largest {np.max(spent):.2f} s")
    log_z, se = np.asarray(log_z), np.asarray(se)
    if seeds > 2:
        best = int(np.argmin(se))
        others = np.arange(seeds) != best
        z = (log_z[others] - log_z[best]) / np.hypot(se[others], se[best])
        print(f"log Z sd {np.std(log_z, ddof=1):.4f} over {seeds} seeds, mean se {np.mean(se):.4f}; against seed "
              f"{best} (se {se[best]:.4f}): root mean square z {np.sqrt(np.mean(z ** 2)):.2f}, largest |z| "
              f"{np.max(np.abs(z)):.2f}, |z| < 1.96 on {int(np.sum(np.abs(z) < 1.96))} of {z.size}")


if __name__ == "__main__":
    main(int(sys.argv[1]))
