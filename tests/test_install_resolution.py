"""Installing pmcbandit next to PyMC 6 keeps PyMC 6: pip's resolver, asked for both, picks PyMC 6 with
PyTensor 3 (a dry run, nothing is installed).

It needs the package registry and Python >= 3.12 (PyMC 6's floor): marked ``slow`` and ``registry``, it runs
in the Python 3.12 job as ``pytest -m registry tests/test_install_resolution.py``; a registry that cannot be
reached fails it (pip's own error), it does not skip.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYMC_6 = "6.4.0"

pytestmark = [pytest.mark.slow, pytest.mark.registry]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="PyMC 6 needs Python >= 3.12")
def test_resolver_keeps_pymc_6_next_to_pmcbandit():
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report", "-",
           str(ROOT), f"pymc=={PYMC_6}"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)
    resolved = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report["install"]}
    assert resolved.get("pmcbandit") == "0.1.0"
    assert resolved["pymc"] == PYMC_6
    assert int(resolved["pytensor"].split(".")[0]) == 3
    assert int(resolved["arviz"].split(".")[0]) in (0, 1)
