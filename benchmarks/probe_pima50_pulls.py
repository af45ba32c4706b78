"""Where the pulls of an SE-target run on Pima T = 50 go: for seeds ``0..n-1``, in one process,
``estimate_evidence(model, budget=TargetSE(0.01), random_seed=seed)`` and the CPU seconds its pulls recorded (the
history's ``cost`` column), why it stopped, the interval's status, the SE and the pulls per arm; then the median
and the largest pull CPU. Run it from a checkout of each version to compare (the package is imported from the
current directory): ``.venv/bin/python -m benchmarks.probe_pima50_pulls 10``. It prints; it writes no results file.
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
    spent = []
    for seed in range(seeds):
        res = pb.estimate_evidence(model, budget=pb.TargetSE(0.01), random_seed=seed, progressbar=False)
        spent.append(float(np.nansum(res.history.column("cost"))))
        pulled = {k: int(v) for k, v in res.table["pulls"].items() if v}
        print(seed, f"pull cpu {spent[-1]:.2f} s", res.stopped_by, res.interval_status, f"se {res.log_z_se:.4f}",
              pulled, flush=True)
    print(f"median {np.median(spent):.2f} s, largest {np.max(spent):.2f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]))
