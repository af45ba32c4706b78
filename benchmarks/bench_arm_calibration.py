"""Is an importance arm's own standard error honest? The default Laplace arms alone, against the exact log Z.

For each model, the default pool's Laplace arms (their t refined at set-up, as ``estimate_evidence`` builds them;
with ``--arms laplace pilot`` also its pilot-t arms, their t at the posterior pilot's moments)
are pulled on their own: ``--groups`` independent groups of ``n`` weights for each size ``n`` of ``--sizes``.
Each group gives log Ẑ = log of the mean weight, its delta-method standard error from the sample variance, and
the Pareto k-hat of its weights. Reported per arm and size: the k-hat of the groups (median and range), their mean
standard error against the standard deviation of log Ẑ across the groups, the groups within 1.96 standard
errors of the exact log Z, the mean z and the largest abs z. Where the weights' tail has k near 1/2, the sample
variance understates the error and the groups read low: that is what this measures.

    .venv/bin/python -m benchmarks.bench_arm_calibration
    .venv/bin/python -m benchmarks.bench_arm_calibration --models gamma_poisson20 --groups 20 --sizes 200000 1000000
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from benchmarks._common import machine, utc_now, write_section
from benchmarks.bench_pool_hierarchies import model_and_log_z

CHUNK = 10_000


def _groups(arm, groups: int, size: int, seed: int):
    from pmcbandit.stats.psis import pareto_khat

    rows = []
    for g in range(groups):
        rng = np.random.default_rng([seed, g, size])
        lw = np.concatenate([arm.log_weights(rng, CHUNK) for _ in range(size // CHUNK)])
        top = lw.max()
        w = np.exp(lw - top)
        mean = w.mean()
        rows.append((np.log(mean) + top, np.sqrt(w.var(ddof=1) / w.size) / mean, pareto_khat(lw)))
    return np.array(rows)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gamma_poisson20", "beta_binomial"])
    parser.add_argument("--groups", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200_000, 1_000_000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arms", nargs="+", default=["laplace"], choices=["laplace", "pilot"],
                        help="arm families: the Laplace-t arms, the pilot-t arms on the posterior pilot's moments")
    args = parser.parse_args(argv)
    if any(n % CHUNK for n in args.sizes):
        parser.error(f"every size must be a multiple of {CHUNK}")
    import pmcbandit as pb

    command = "python -m benchmarks.bench_arm_calibration " + " ".join(sys.argv[1:] if argv is None else argv)
    start = time.perf_counter()
    lines = ["## Importance arms alone: is their own standard error honest? (`bench_arm_calibration`)", "",
             f"- machine: {machine()}; one process", f"- date: {utc_now()}; command: `{command}`",
             "- the default pool's Laplace arms (`evidence_arms(model, ais_steps=[], prior=False)`, their t refined at "
             "set-up)" + (" and its pilot-t arms (`pilot_is=True`: their t at the posterior pilot's moments)"
                          if "pilot" in args.arms else "") + f", {args.groups} groups of n weights per size; z = (log Ẑ - log Z) / se, se from the group's "
             "sample variance", "",
             "| model | arm | n | k-hat: median (range) | mean se | sd of log Ẑ | covered (abs z < 1.96) | mean z | "
             "largest abs z |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for name in args.models:
        model, log_z = model_and_log_z(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arms = pb.evidence_arms(model, ais_steps=[], prior=False, pilot_is="pilot" in args.arms)
        for arm in arms:
            if not arm.name.startswith(tuple(args.arms)):
                continue
            for size in args.sizes:
                g = _groups(arm, args.groups, size, args.seed)
                z = (g[:, 0] - log_z) / g[:, 1]
                lines.append(f"| {name} | {arm.name} | {size:,} | {np.median(g[:, 2]):.2f} ({g[:, 2].min():.2f}-"
                             f"{g[:, 2].max():.2f}) | {g[:, 1].mean():.3g} | {g[:, 0].std(ddof=1):.3g} | "
                             f"{int(np.sum(np.abs(z) < 1.96))}/{len(z)} | {z.mean():+.2f} | {np.abs(z).max():.2f} |")
    lines += ["", f"Total wall time {time.perf_counter() - start:.0f} s."]
    md = "\n".join(lines) + "\n"
    write_section("bench_arm_calibration", md)
    print(md)
    return md


if __name__ == "__main__":
    main()
