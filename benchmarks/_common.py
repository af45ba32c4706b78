"""What every benchmark reports besides its numbers: the machine, the date, where it writes."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> str:
    """CPU model (from ``lscpu``) and core count, e.g. ``"Intel(R) Xeon(R) Processor, 2 cores"``."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        model = platform.processor() or "unknown CPU"
    return f"{model}, {os.cpu_count()} cores"


def utc_now() -> str:
    return f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"


def write_section(name: str, markdown: str) -> Path:
    """Write ``benchmarks/results/<name>.md`` (``run_all --assemble`` merges it into RESULTS.md)."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text(markdown.rstrip() + "\n")
    return path
