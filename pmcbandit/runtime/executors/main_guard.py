"""The main script's ``if __name__ == "__main__":`` guard, which spawned worker processes need.

A :class:`~pmcbandit.runtime.executors.processes.ProcessExecutor` starts its workers with
multiprocessing's ``"spawn"`` method: each is a fresh interpreter that first imports the driver's main
module again (as ``__mp_main__``), so that what the script defines exists there too (Python's
:mod:`multiprocessing` documentation, "Safe importing of main module"). Top-level code of the script runs
again in every worker; a script that starts a run at its top level, outside ``if __name__ ==
"__main__":``, would start it again in each worker, which multiprocessing refuses with a traceback per
worker. The guard is checked in two places, so the user gets one message that names it:

* :func:`check_main_guard`, in the driver before any worker starts (every door calls it when its
  ``executor`` is ``"processes"``): when the call comes from a line of the main script's top-level code
  that is not under the guard, and ``"spawn"`` would re-import that script (not for ``python -m pkg``,
  whose ``pkg.__main__`` is not re-imported, nor an interactive session or notebook, which has no main
  script), it raises ``RuntimeError`` naming the script, the line and the fix;
* in a worker, the same call made while the worker imports the main script (multiprocessing's
  bootstrapping phase) ends that worker quietly with exit code :data:`MAIN_GUARD_EXIT`, and the driver,
  at the first worker that ends before it served anything, raises the error of :func:`start_failure`
  (the fallback when the driver could not read the script's source).
"""

from __future__ import annotations

import ast
import inspect
import multiprocessing
import os
import sys
from pathlib import Path

__all__ = ["MAIN_GUARD_EXIT", "check_main_guard", "main_script", "start_failure"]

#: Exit code of a worker that found the run being started again while it imported the main script.
MAIN_GUARD_EXIT = 113

_FIX = ('put the script\'s top-level code under `if __name__ == "__main__":` (docs/scale_out.md), or pass '
        'executor=None or "threads"')


def main_script() -> Path | None:
    """The main script that multiprocessing's ``"spawn"`` method imports again in each worker, or ``None`` when
    it imports none (an interactive session or notebook, ``python -c``, ``python -m pkg``).

    The rule of :func:`multiprocessing.spawn.get_preparation_data`: the main module is re-imported by its module
    name when it has one (``python -m pkg.mod``; never a ``pkg.__main__``), else from its file.
    """
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    path = getattr(main, "__file__", None)
    if path is None:
        return None
    if name is not None and (name == "__main__" or name.endswith(".__main__")):
        return None
    if name is None and os.path.splitext(os.path.basename(path))[0] == "ipython":
        return None
    return Path(path).resolve()


def _bootstrapping() -> bool:
    """Whether this is a spawned process still importing its parent's main module (the flag ``multiprocessing``
    itself reads before it lets a process start another; it is set before the process knows its parent).
    """
    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def _is_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = (test.left, test.comparators[0])
    names = [s.id for s in sides if isinstance(s, ast.Name)]
    values = [s.value for s in sides if isinstance(s, ast.Constant)]
    return names == ["__name__"] and values == ["__main__"]


def _guarded(body: list[ast.stmt], line: int) -> bool:
    """Whether ``line`` of a statement in ``body`` lies inside an ``if __name__ == "__main__":`` block."""
    for node in body:
        if not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        if isinstance(node, ast.If) and _is_guard(node.test):
            return any(s.lineno <= line <= (s.end_lineno or s.lineno) for s in node.body)
        blocks = [getattr(node, field, None) for field in ("body", "orelse", "finalbody")]
        blocks += [h.body for h in getattr(node, "handlers", [])] + [c.body for c in getattr(node, "cases", [])]
        return any(_guarded(b, line) for b in blocks if isinstance(b, list) and b and isinstance(b[0], ast.stmt))
    return False


def _unguarded_line(script: Path) -> int | None:
    """The line of ``script``'s top-level code running now, when it is not under the guard; ``None`` when the
    script's top level is not on the call stack, its source cannot be read, or the line is guarded.
    """
    line = None
    frame = inspect.currentframe()
    while frame is not None:  # the outermost top-level frame of the script
        code = frame.f_code
        if code.co_name == "<module>" and Path(code.co_filename).resolve() == script:
            line = frame.f_lineno
        frame = frame.f_back
    del frame
    if line is None:
        return None
    try:
        tree = ast.parse(script.read_text(encoding="utf-8"), filename=str(script))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return None if _guarded(tree.body, line) else line


def check_main_guard(door: str) -> None:
    """Raise ``RuntimeError`` when ``door`` is called with spawned worker processes from top-level code of the
    main script outside ``if __name__ == "__main__":`` (module docstring); in a worker importing that script,
    end the worker with :data:`MAIN_GUARD_EXIT` instead.
    """
    if _bootstrapping():
        raise SystemExit(MAIN_GUARD_EXIT)
    script = main_script()
    line = None if script is None else _unguarded_line(script)
    if line is not None:
        raise RuntimeError(
            f"{door} with executor='processes' was called at line {line} of {script}, outside "
            f'`if __name__ == "__main__":`. Each worker process is started with multiprocessing\'s "spawn" '
            f"method, which runs the script's top-level code again, so every worker would start this run again: "
            f"{_FIX}."
        )


def start_failure(exit_code: int | None) -> str:
    """The error message for a worker that ended with ``exit_code`` before it served anything: it failed while
    it imported the main script (with :data:`MAIN_GUARD_EXIT`: it found the run started again there).
    """
    script = main_script()
    where = f"the main script {script}" if script is not None else "the main module"
    if exit_code == MAIN_GUARD_EXIT:
        return (f"pmcbandit worker processes found {where} starting a run with executor='processes' outside "
                f'`if __name__ == "__main__":` while they imported it (multiprocessing\'s "spawn" method runs '
                f"its top-level code again in each worker): {_FIX}.")
    return (f"a pmcbandit worker process ended (exit code {exit_code}) while it imported {where}, before it "
            f"could make a pull: multiprocessing's \"spawn\" method runs the script's top-level code again in each "
            f"worker, and it failed there (its traceback is printed above); {_FIX}.")
