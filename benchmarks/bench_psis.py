"""Cost of the running Pareto k-hat (``pmcbandit.stats.psis``) next to ``arviz.psislw`` on the same sample.

Run as ``.venv/bin/python -m benchmarks.bench_psis``. One process, after a warm-up that compiles
the numba kernels: the CPU time (``time.process_time``: the machine is shared) of

* ``WeightTails.add`` of a 1000-value batch of log-normal log weights (sigma = 1.5), averaged
  over the first 10^4 batches of an arm (S from 0 to 10^7: filling, compactions, steady state);
* a forced k-hat refit of ``WeightTails`` (``khat(arm, refresh=True)``) at S = 10^3 ... 10^7;
* ``pareto_khat`` and ``arviz.psislw(x, reff=1.0)`` on the full sample at the same S,

with the ratio ``psislw / refit`` and the largest |k-hat - ArviZ's k| as a check. The markdown section
is printed and written to ``benchmarks/results/bench_psis.md``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import pmcbandit  # noqa: F401  (BLAS configuration before anything imports pytensor)
from benchmarks._common import machine, utc_now, write_section
from pmcbandit.stats.psis import WeightTails, pareto_khat

SIZES = (10**3, 10**4, 10**5, 10**6, 10**7)
BATCH = 1000


def cpu_time(fn, min_reps: int = 3, min_seconds: float = 0.3) -> float:
    """Median CPU seconds of one call of ``fn`` over at least ``min_reps`` calls."""
    times = []
    while len(times) < min_reps or sum(times) < min_seconds:
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
        if len(times) >= 3 and sum(times) > 10 * min_seconds:
            break
    return float(np.median(times))


def main() -> str:
    import arviz as az

    rng = np.random.default_rng(2024)
    warm = WeightTails(1, min_weights=10)
    warm.add(0, rng.standard_normal(100))
    warm.khat(0)
    pareto_khat(rng.standard_normal(100))

    x = 1.5 * rng.standard_normal(max(SIZES))
    tails = WeightTails(1)
    n_batches = max(SIZES) // BATCH
    rows, worst = [], 0.0
    add_seconds = 0.0
    for size in SIZES:
        start = int(tails.counts[0]) // BATCH
        t0 = time.process_time()
        for b in range(start, size // BATCH):
            tails.add(0, x[b * BATCH : (b + 1) * BATCH])
        add_seconds += time.process_time() - t0
        sample = x[:size]

        def refit():
            tails.add(0, -np.inf)  # a zero weight changes S, so that refresh=True refits
            tails.khat(0, refresh=True)

        t_refit = cpu_time(refit)
        t_full = cpu_time(lambda: pareto_khat(sample))
        with np.errstate(all="ignore"):  # ArviZ's GPD grid overflows harmlessly in exp
            t_arviz = cpu_time(lambda: az.psislw(sample, reff=1.0))
            k_arviz = float(az.psislw(sample, reff=1.0)[1])
        worst = max(worst, abs(pareto_khat(sample) - k_arviz))
        rows.append((size, t_refit, t_full, t_arviz, k_arviz))
        # Undo the zero weights the refits added, so the next size fits the same sample as ArviZ.
        tails = _rebuild(x, size)
    t_add = add_seconds / n_batches

    lines = [
        "## bench_psis: running Pareto k-hat vs arviz.psislw",
        "",
        f"Machine: {machine()}. Date: {utc_now()}. Command: `.venv/bin/python -m benchmarks.bench_psis`.",
        "CPU time per call (`time.process_time`, median of repeats), one process, numba compiled first.",
        f"Log weights: log-normal, sigma = 1.5; batches of {BATCH}.",
        "",
        f"`WeightTails.add` of a {BATCH}-value batch: **{1e6 * t_add:.2f} µs** (mean over the first "
        f"{n_batches} batches of an arm, S = 0 to {max(SIZES):.0e}, compactions included).",
        "",
        "| S | WeightTails refit (ms) | pareto_khat, full sample (ms) | arviz.psislw (ms) "
        "| psislw / refit | psislw / pareto_khat | k-hat |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, t_refit, t_full, t_arviz, k in rows:
        lines.append(
            f"| {size:.0e} | {1e3 * t_refit:.3f} | {1e3 * t_full:.2f} | {1e3 * t_arviz:.1f} | "
            f"{t_arviz / t_refit:.1f}x | {t_arviz / t_full:.1f}x | {k:.4f} |"
        )
    size, t_refit = rows[-1][:2]
    lines += [
        "",
        f"With the default schedule (refit when S grew by 10 %), the refit at S = {size:.0e} costs "
        f"{1e9 * t_refit / (0.1 * size):.1f} ns per added value.",
        "",
        f"Largest |pareto_khat - arviz.psislw k| over the sizes: {worst:.1e}.",
    ]
    return "\n".join(lines)


def _rebuild(x: np.ndarray, size: int) -> WeightTails:
    tails = WeightTails(1)
    for b in range(size // BATCH):
        tails.add(0, x[b * BATCH : (b + 1) * BATCH])
    return tails


if __name__ == "__main__":
    markdown = main()
    print(markdown)
    write_section("bench_psis", markdown)
    sys.exit(0)
