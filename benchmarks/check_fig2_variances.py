"""Check of Fig. 2's pilot: per-path variances from 10^6 paths per arm against the pilot's 2 x 10^5.

Run as ``.venv/bin/python -m benchmarks.check_fig2_variances``; writes
``benchmarks/results/check_fig2_variances.md``.

``benchmarks.fig2_cir`` estimates every policy's MSE by Thm 1's identity,
``MSE x n = sum_k V_k T_k(n) / n``, with the pilot's per-path variances ``V_k``. The identity
holds exactly; what could mislead is ``V_k`` itself if the importance weights were heavy-tailed
enough for 2 x 10^5 paths to underestimate it. This draws 10^6 fresh paths per arm (independent
of the pilot's) and reports both, with the SE of the large-sample variance from 10 batches.
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from benchmarks._common import machine, utc_now, write_section
from benchmarks.fig2_cir import STRIKES, pilot

PATHS, BATCHES, CHUNK = 1_000_000, 10, 10_000


def large_sample(strike: float) -> list[tuple[float, float]]:
    from models.cir import caplet_arms

    rng = np.random.default_rng(99)
    out = []
    for arm in caplet_arms(strike, paths_per_pull=CHUNK, pmc_info=False):
        v = np.concatenate([arm.pull(rng).values for _ in range(PATHS // CHUNK)])
        batch = v.reshape(BATCHES, -1).var(axis=1, ddof=1)
        out.append((float(v.var(ddof=1)), float(batch.std(ddof=1) / np.sqrt(BATCHES))))
    return out


def main() -> int:
    # The pilots of fig2_cir: the same seeds (2014 + i for strike i), so the same variances.
    with ProcessPoolExecutor(2) as pool:
        big = dict(zip(STRIKES, pool.map(large_sample, STRIKES)))
        pilots = dict(
            zip(STRIKES, pool.map(pilot, STRIKES, [200_000] * 3, [20_000] * 3, [2014 + i for i in range(len(STRIKES))]))
        )
    lines = [
        "## check_fig2_variances: Fig. 2's pilot variances against 10^6 paths per arm",
        "",
        f"- machine: {machine()}; date: {utc_now()}; command: `python -m benchmarks.check_fig2_variances`",
        "- pilot: 2 x 10^5 paths per arm (benchmarks.fig2_cir.pilot, its seeds); large sample: 10^6 fresh "
        "paths per arm, SE from 10 batches",
        "",
    ]
    for k in STRIKES:
        v = pilots[k]["variances"]
        lines += [
            f"### K = {k}",
            "",
            "| θ | pilot V | 10^6-path V | ± SE | pilot / large |",
            "|---|---:|---:|---:|---:|",
        ]
        for i, (vb, se) in enumerate(big[k]):
            lines.append(f"| {i / 10:.1f} | {v[i]:.4g} | {vb:.4g} | {se:.2g} | {v[i] / vb:.3f} |")
        lines.append("")
    text = "\n".join(lines)
    write_section("check_fig2_variances", text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
