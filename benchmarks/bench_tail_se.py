"""Coverage of the default pool's log Z intervals with and without the Pareto-smoothed tail moment above the cap.

On ``gamma_poisson20`` (:mod:`benchmarks.bench_ais_hmc`, dim 22, exact log Z by quadrature) at 20 s, one process, a
5 s warm-up run first. Each run is read twice on the same pulls: with the variance rule of
:mod:`pmcbandit.stats.pareto_tail` as it is ("after": above :data:`~pmcbandit.stats.pareto_tail.TAIL_SHAPE_CAP`, the
larger of the capped shape's moment and the Pareto-smoothed weights' one) and with the capped shape's moment alone
("before"), so the two columns differ only by the rule. Reported: runs within 1.96 SE, mean z, mean SE, and the
carrying arm's k-hat.

    .venv/bin/python -m benchmarks.bench_tail_se --seeds 10
    .venv/bin/python -m benchmarks.bench_tail_se --synthetic 400   # one arm of Pareto weights, no PyMC

``--synthetic R`` runs nothing of the pool: for Pareto weights :math:`w = (1-k)U^{-k}` (mean 1) of shapes 0.4-0.65 and
2000 or 8000 weights, ``R`` replicates each, it prints the share of 95 % intervals (mean ± 1.96 SE, the SE from the
sample variance plus the fitted tail's excess, :func:`~pmcbandit.stats.pareto_tail.tail_excess`) that cover 1, and
the mean SE, before and after.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def _capped_only(fn, *args):
    """``fn(*args)`` with the capped shape's moment alone (the rule before the smoothed moment)."""
    from pmcbandit.stats import pareto_tail

    keep = pareto_tail.smoothed_second_moment
    pareto_tail.smoothed_second_moment = lambda *a: 0.0
    try:
        return fn(*args)
    finally:
        pareto_tail.smoothed_second_moment = keep


def synthetic(reps: int) -> None:
    """The ``--synthetic`` table (module docstring)."""
    import math

    from pmcbandit.stats.pareto_tail import tail_excess

    rng = np.random.default_rng(0)
    print("shape  weights  covered before/after  mean se before/after")
    for k in (0.4, 0.5, 0.55, 0.6, 0.65):
        for size in (2000, 8000):
            cover = {"before": 0, "after": 0}
            se_sum = {"before": 0.0, "after": 0.0}
            for _ in range(reps):
                log_w = math.log(1.0 - k) - k * np.log(rng.random(size))
                w = np.exp(log_w)
                var = w.var(ddof=1)
                for tag, excess in (("before", _capped_only(tail_excess, log_w)), ("after", tail_excess(log_w))):
                    se = math.sqrt((var + math.exp(excess) / (size - 1)) / size)
                    cover[tag] += abs(w.mean() - 1.0) < 1.96 * se
                    se_sum[tag] += se
            print(f"{k:5.2f} {size:8d}  {cover['before'] / reps:.3f}/{cover['after'] / reps:.3f}"
                  f"  {se_sum['before'] / reps:.4f}/{se_sum['after'] / reps:.4f}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--synthetic", type=int, default=0, metavar="R")
    args = parser.parse_args(argv)
    if args.synthetic:
        synthetic(args.synthetic)
        return

    import pmcbandit as pb
    from pmcbandit.stats import psis
    from benchmarks import bench_ais_hmc

    model, log_z = bench_ais_hmc.gp_model(), bench_ais_hmc.gp_log_z()[0]
    before: dict[int, float] = {}
    original = psis.WeightTails.tail_excess

    def both(self, arm):
        before[int(arm)] = _capped_only(original, self, arm)
        return original(self, arm)

    psis.WeightTails.tail_excess = both
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pb.estimate_evidence(model, budget=5.0, random_seed=999, progressbar=False)
        for seed in range(args.seeds):
            before.clear()
            start = time.perf_counter()
            res = pb.estimate_evidence(model, budget=args.budget, random_seed=seed, progressbar=False)
            old = res.recombined(res.combine)
            excess = np.array([before.get(k, np.nan) for k in range(len(res.arm_names))])
            old.reliability = res.reliability._replace(tail_excess=excess)
            lead = int(np.argmax(res.combined.weights))
            row = dict(seed=seed, khat=float(res.reliability.khat[lead]), arm=res.arm_names[lead],
                       status=res.interval_status, wall=time.perf_counter() - start)
            for tag, r in (("before", old), ("after", res)):
                row[tag] = ((r.log_z - log_z) / r.log_z_se, r.log_z_se)
            rows.append(row)
            print(row, flush=True)
    for tag in ("before", "after"):
        z = np.array([r[tag][0] for r in rows])
        se = np.array([r[tag][1] for r in rows])
        print(f"{tag}: {int(np.sum(np.abs(z) < 1.96))}/{len(rows)} within 1.96 SE, mean z {z.mean():.3f}, "
              f"mean se {se.mean():.4f}")


if __name__ == "__main__":
    main()
