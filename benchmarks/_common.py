"""What every benchmark reports besides its numbers: the machine, the date, where it writes; and the log-mean-exp
estimate with its relative SE that the probes of log-scale arms share (:func:`log_mean_exp`)."""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
#: Default folder of the run logs (``.json``/``.jsonl``/``.npz``), git-ignored: the tables in :data:`RESULTS`
#: are what the repository keeps.
OUT = Path(__file__).resolve().parent / "out"


def add_runs_dir(parser) -> None:
    """``--runs-dir PATH`` on a benchmark's parser: where its run logs go (default :data:`OUT`)."""
    parser.add_argument("--runs-dir", type=Path, default=OUT, metavar="PATH",
                        help="folder of the run logs (default: benchmarks/out/, not kept in the repository)")


def run_file(directory: Path, name: str) -> Path:
    """``directory / name``, the folder made if missing."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name


def machine() -> str:
    """CPU model (from ``lscpu``) and core count, e.g. ``"Intel(R) Xeon(R) Processor, 2 cores"``."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        model = next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        model = platform.processor() or "unknown CPU"
    return f"{model}, {os.cpu_count()} cores"


def log_mean_exp(log_values) -> tuple[float, float]:
    """``(log of the mean of exp(log_values), its relative standard error)``: the estimate of ``log Z`` from a log-scale
    arm's pulls and its delta-method SE (the standard error of the mean of the exponentials over their mean).
    """
    import numpy as np

    log_values = np.asarray(log_values, dtype=np.float64)
    top = log_values.max()
    scaled = np.exp(log_values - top)
    mean = scaled.mean()
    return float(top + np.log(mean)), float(scaled.std(ddof=1) / np.sqrt(scaled.size) / mean)


def utc_now() -> str:
    return f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC"


def model_sections(names, measure) -> str:
    """``measure(name)`` for each model in turn, each section printed as it comes, joined by blank lines."""
    sections = []
    for name in names:
        sections.append(measure(name))
        print(sections[-1], flush=True)
    return "\n\n".join(sections)


def models_option(names, default) -> str:
    """The ``--models`` part of a benchmark's command line: empty where ``names`` are the ``default`` models."""
    return "" if list(names) == list(default) else " --models " + " ".join(names)


def write_section(name: str, markdown: str) -> Path:
    """Write ``benchmarks/results/<name>.md`` (``run_all --assemble`` merges it into RESULTS.md)."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text(markdown.rstrip() + "\n")
    return path


def run_fresh(module: str, args: list[str], failed: dict, compiledir: str | None = None,
              env: dict | None = None) -> dict:
    """``python -m module *args`` in a fresh single-threaded process (BLAS, OpenMP and numba held to one thread),
    its last stdout line read as JSON; ``failed`` with the end of its stderr under ``"status"`` when it printed
    none. ``compiledir``: a PyTensor compile cache of its own, so processes side by side do not wait on one
    another's compile lock. ``env``: more environment variables for the process.
    """
    import json
    import os
    import sys

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
               **(env or {}))
    if compiledir is not None:
        env["PYTENSOR_FLAGS"] = ",".join(f for f in (env.get("PYTENSOR_FLAGS", ""), f"compiledir={compiledir}") if f)
    out = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=env)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return dict(failed, status=f"failed: {out.stderr.strip()[-300:]}")

