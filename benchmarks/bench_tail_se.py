"""Coverage of the default pool's log Z intervals with and without the Pareto-smoothed tail moment above the cap.

On ``gamma_poisson20`` (:mod:`benchmarks.bench_ais_hmc`, dim 22, exact log Z by quadrature) at 20 s, one process, a
5 s warm-up run first. Each run is read twice on the same pulls: with the variance rule of
:mod:`pmcbandit.stats.pareto_tail` as it is ("after": above :data:`~pmcbandit.stats.pareto_tail.TAIL_SHAPE_CAP`, the
larger of the capped shape's moment and the Pareto-smoothed weights' one) and with the capped shape's moment alone
("before"), so the two columns differ only by the rule. Reported: runs within 1.96 SE, mean z, mean SE, and the
carrying arm's k-hat.

    .venv/bin/python -m benchmarks.bench_tail_se --seeds 10
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--budget", type=float, default=20.0)
    args = parser.parse_args(argv)

    import pmcbandit as pb
    from pmcbandit.stats import pareto_tail, psis
    from benchmarks import bench_ais_hmc

    model, log_z = bench_ais_hmc.gp_model(), bench_ais_hmc.gp_log_z()[0]
    before: dict[int, float] = {}
    original = psis.WeightTails.tail_excess

    def both(self, arm):
        new = original(self, arm)
        keep = pareto_tail.smoothed_second_moment
        pareto_tail.smoothed_second_moment = lambda *a: 0.0  # the capped moment alone
        try:
            before[int(arm)] = original(self, arm)
        finally:
            pareto_tail.smoothed_second_moment = keep
        return new

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
