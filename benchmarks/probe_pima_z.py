"""Calibration of the evidence SE on Pima (all 768 rows), seed by seed: z of ``estimate_evidence`` at a wall budget.

For seeds 0..n-1, in one process, ``estimate_evidence(pima_768, budget=seconds, random_seed=seed)`` and
``z = (log Ẑ - log Z_ref) / sqrt(se² + se_ref²)`` against the suite's reference, then the root mean square z (1 for
calibrated SEs). Run it from a checkout of each version to compare (the package is imported from the current
directory): ``.venv/bin/python -m benchmarks.probe_pima_z 15 10``. It prints; it writes no results file.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np


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


if __name__ == "__main__":
    main(float(sys.argv[1]), int(sys.argv[2]))
