"""``pmcbandit warm-up``: the evidence runs' numba kernels compiled into numba's on-disk cache once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def test_cli_warm_up_runs_the_warm_up_and_exits_zero(monkeypatch, capsys):
    import pmcbandit.evidence.warm_up as warm

    from pmcbandit.cli import main

    calls = []
    monkeypatch.setattr(warm, "warm_up", lambda: calls.append(1) or 2.5)
    assert main(["warm-up"]) == 0
    assert calls == [1]
    assert "2.5 s" in capsys.readouterr().out


@pytest.mark.slow
def test_warm_up_fills_an_empty_numba_cache_with_the_kernels_a_run_loads(tmp_path):
    """A fresh process on an empty numba cache runs the warm-up; a second fresh process then runs the default
    evidence estimate on another model without compiling any of the package's cached kernels (every one it
    calls is a cache hit).
    """
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", "from pmcbandit.evidence.warm_up import warm_up; warm_up()"],
                   check=True, cwd=ROOT, env=env, capture_output=True)
    probe = """
import json, warnings
import numpy as np, pymc as pm
from numba.core.registry import CPUDispatcher
import pmcbandit as pb
with pm.Model() as m:
    b = pm.Normal("b", 0, 1, shape=2)
    pm.Normal("y", b.sum(), 0.5, observed=np.linspace(-1, 1, 15))
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pb.estimate_evidence(m, budget=pb.Pulls(30), random_seed=3, progressbar=False)
import gc
misses = sorted({d.py_func.__module__ + "." + d.py_func.__qualname__ for d in gc.get_objects()
                 if isinstance(d, CPUDispatcher) and (d.py_func.__module__ or "").startswith("pmcbandit")
                 and d.stats.cache_misses})
print(json.dumps(misses))
"""
    out = subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT, env=env, capture_output=True,
                         text=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
