"""The main script's ``if __name__ == "__main__":`` guard with ``executor="processes"``.

Each case runs a real script in a fresh interpreter (``subprocess.run`` returns when it has exited, which
is the only synchronisation). Without the guard, the run raises one ``RuntimeError`` naming the guard: before
any worker starts when the calling line can be read, else (a script run from its ``.pyc``) at the first worker
that ends while importing the script. With the guard, the run is made.
"""

import ast
import os
import py_compile
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pmcbandit
from pmcbandit.runtime.executors.main_guard import _guarded

ROOT = Path(pmcbandit.__file__).resolve().parent.parent

RUN = """
import numpy as np
import pmcbandit as pb

arms = [pb.CallableArm(lambda rng: rng.normal(0.0, 1.0), name="a", cost=1.0),
        pb.CallableArm(lambda rng: rng.normal(0.0, 2.0), name="b", cost=1.0)]
print("run started", flush=True)
res = pb.run(arms, "uniform", budget=pb.Pulls(4), random_seed=0, progressbar=False, executor="processes")
print("pulls", len(res.history))
"""


def run_script(tmp_path, source: str, compiled: bool = False) -> subprocess.CompletedProcess:
    """Run ``source`` as a main script; ``compiled``: as a ``.pyc`` whose source the driver cannot find."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    if compiled:
        script = Path(py_compile.compile(str(script), cfile=str(tmp_path / "script.pyc"), dfile="<no source>"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)


def test_a_script_without_the_guard_is_told_before_any_worker_starts(tmp_path):
    done = run_script(tmp_path, RUN)
    assert done.returncode == 1
    assert done.stdout.count("run started") == 1  # no worker ran the script again
    assert done.stderr.count("Traceback") == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: run with executor='processes' was called at line 8 of ")
    assert str(tmp_path / "script.py") in last and 'if __name__ == "__main__":' in last
    assert "keep dying" not in done.stderr


def test_a_worker_that_finds_the_run_started_again_names_the_guard(tmp_path):
    # no source to read: the driver cannot see the calling line, so the first worker that imports the script tells
    done = run_script(tmp_path, RUN, compiled=True)
    assert done.returncode == 1
    assert done.stderr.count("Traceback") == 1  # the driver's only: the workers ended quietly
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: pmcbandit worker processes found the main script ")
    assert 'outside `if __name__ == "__main__":`' in last and "keep dying" not in done.stderr


def test_a_worker_failing_to_import_the_script_is_named_at_its_first_death(tmp_path):
    source = RUN.replace('print("run started"', 'import multiprocessing\n'
                         'if multiprocessing.current_process().name != "MainProcess":\n'
                         '    raise ValueError("only in a worker")\nprint("run started"')
    done = run_script(tmp_path, source, compiled=True)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: a pmcbandit worker process ended (exit code 1) while it imported the main "
                           "script ")
    assert "keep dying" not in done.stderr


@pytest.mark.slow
def test_a_guarded_script_runs(tmp_path):
    body = textwrap.indent(textwrap.dedent(RUN), "    ")
    done = run_script(tmp_path, f"if __name__ == '__main__':\n{body}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("run started") == 1 and "pulls 4" in done.stdout


@pytest.mark.parametrize("source, line, guarded", [
    ("import x\nif __name__ == '__main__':\n    run()\n", 3, True),
    ("import x\nif '__main__' == __name__:\n    run()\n", 3, True),
    ("import x\nrun()\n", 2, False),
    ("if __name__ == '__main__':\n    pass\nelse:\n    run()\n", 4, False),
    ("try:\n    if __name__ == '__main__':\n        run()\nexcept E:\n    pass\n", 3, True),
    ("with c:\n    run()\n", 2, False),
    ("if __name__ != '__main__':\n    run()\n", 2, False),
])
def test_which_lines_are_guarded(source, line, guarded):
    assert _guarded(ast.parse(source).body, line) is guarded
