"""Run the benchmarks, each in a fresh process, and assemble benchmarks/RESULTS.md.

``python -m benchmarks.run_all``           the quick benchmarks (minutes)
``python -m benchmarks.run_all --full``    also the full-scale reproductions and the evidence suite (about 10 hours on 2 cores)
``python -m benchmarks.run_all --assemble`` only rebuild RESULTS.md from benchmarks/results/*.md

Every benchmark writes its own section to ``benchmarks/results/<name>.md`` (machine, date,
command and numbers); RESULTS.md is their index in the order below: per file its title, a link, and its
headline (a line starting ``Headline:`` where the file has one, else its first line of prose).
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
    "bench_which_nuts",
    "bench_full_bandit",
]

HEADER = """# Benchmark results

An index of `benchmarks/results/`: one entry per results file, with its headline and a link to the full
tables (machine, date, command and commit in each). Rebuild with `.venv/bin/python -m benchmarks.run_all
--assemble`; rerun everything with `make bench` (quick) or `.venv/bin/python -m benchmarks.run_all --full`.
Run logs (`.json`, `.jsonl`) go to `--runs-dir` (default `benchmarks/out/`) and are not kept in the
repository; comparisons with an earlier package take `--against REV` (`benchmarks/_revision.py`).

**Read with care.** Sections ran on different machines and days, many while other jobs shared the cores,
as each file records: timings from different files are not comparable. Ratios of variants measured side by
side in the same run are the figures to trust.
"""

_SKIP = ("#", ">", "|", "- machine", "- date", "- command", "Machine:", "```", "<!--")


def headline(text: str, limit: int = 260) -> tuple[str, str]:
    """``(title, headline)`` of a results file: its first heading, and its ``Headline:`` line or else its first
    line of prose (not a note, table, machine, date or command line), cut at ``limit`` characters."""
    lines = [line.strip() for line in text.splitlines()]
    title = next((line.lstrip("#").strip() for line in lines if line.startswith("#")), "")
    marked = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Headline:")]
    prose = marked or [line.lstrip("- ").strip() for line in lines if line and not line.startswith(_SKIP)]
    first = prose[0] if prose else ""
    return title, first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def assemble() -> Path:
    results = HERE / "results"
    order = QUICK + FULL
    files = sorted(results.glob("*.md"), key=lambda p: (order.index(p.stem) if p.stem in order else len(order), p.stem))
    parts = [HEADER]
    for f in files:
        title, first = headline(f.read_text())
        parts.append(f"- [{f.stem}](results/{f.name}): **{title}**. {first}")
    out = HERE / "RESULTS.md"
    out.write_text("\n".join(parts) + "\n")
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
