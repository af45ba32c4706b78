"""Run the benchmarks, each in a fresh process, and assemble benchmarks/RESULTS.md.

``python -m benchmarks.run_all``           the quick benchmarks (minutes)
``python -m benchmarks.run_all --full``    also the full-scale reproductions and the evidence suite (about 10 hours on 2 cores)
``python -m benchmarks.run_all --assemble`` only rebuild RESULTS.md from benchmarks/results/*.md

Every benchmark writes its own section to ``benchmarks/results/<name>.md`` (machine, date,
command and numbers); RESULTS.md is their concatenation in the order below.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUICK = [
    "bench_policies",
    "bench_run_loop",
    "bench_simulator",
    "bench_ais",
    "bench_laplace_smc",
    "bench_cir",
    "bench_psis",
    "bench_combine_skew",
    "bench_scale_out",
]
FULL = [
    "fig1_two_estimators",
    "fig2_cir",
    "check_fig2_variances",
    "exp_reward_centre",
    "fig3_evidence",
    "bench_evidence_vs_smc",
    "reference_evidence",
    "bench_evidence_suite",
    "bench_check_arm",
    "bench_posterior_pilot",
    "bench_cold_start",
    "bench_arm_calibration",
    "bench_identification",
    "bench_explore_m",
    "bench_compare",
    "bench_full_bandit",
]

HEADER = """# Benchmark results

Every section below was written by the benchmark named in its heading, run in a fresh process
with the command it states, on the machine and date it states. Ratios compare implementations
measured side by side in the same run. Rebuild this file with
`.venv/bin/python -m benchmarks.run_all --assemble`; rerun everything with `make bench`
(quick) or `.venv/bin/python -m benchmarks.run_all --full`.

**Read with care.** Sections ran on three machines, each named in its section: an Intel Xeon
2-core VM (2026-11-22; its speed varied between runs by up to ~1.8x even when idle), an AMD EPYC
2-core VM (2026-11-23 to 2026-11-26; most sections, many of them while other jobs shared its two
cores, as their sections record), and, on 2026-11-26, the 16 CPU cores of a lent GPU machine (Intel
Xeon) for the evidence suite (every run a fresh process held to one core, up to 16 side by side)
and the live `compare_samplers` runs. Timings from different sections (and machines) are not
comparable.

Ratios of variants measured side by side in the same run are the figures to trust.
"""


def assemble() -> Path:
    parts = [HEADER]
    results = HERE / "results"
    order = QUICK + FULL
    files = sorted(results.glob("*.md"), key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem))
    for f in files:
        parts.append(f.read_text().strip() + "\n")
    out = HERE / "RESULTS.md"
    out.write_text("\n\n".join(parts))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--assemble", action="store_true")
    args = parser.parse_args(argv)
    failed = []
    if not args.assemble:
        for name in QUICK + (FULL if args.full else []):
            if not (HERE / f"{name}.py").exists():
                continue
            print(f"== benchmarks.{name}", flush=True)
            if subprocess.run([sys.executable, "-m", f"benchmarks.{name}"], cwd=HERE.parent).returncode:
                failed.append(name)
    print(f"wrote {assemble()}")
    if failed:
        print(f"failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
