"""Run one benchmark function against the package of another git revision, in a fresh process.

A benchmark that compares the working tree with an earlier version of the package does not keep a copy of the
earlier code: it names a revision (``--against REV``) and calls the *same* function of the benchmark twice, each
time in a fresh Python process, once with the working tree's :mod:`pmcbandit` and once with the revision's
(the practice of NumPyro's benchmarks, which compare a change with its merge base). The function must take JSON
values as keyword arguments, return a JSON value, and call only what both versions of the package offer.

How a revision is made importable: ``git worktree add --detach --no-checkout`` in a temporary folder, then only
the revision's ``pmcbandit/`` is checked out there; the process runs with that folder first on ``PYTHONPATH`` and
the working tree's root second, so it imports the revision's package, the working tree's ``benchmarks`` and
``models``, and nothing of the revision besides the package. The worktree is removed on leaving
:func:`checkout`.

Default revision (:func:`default_revision`): the merge base of ``HEAD`` and ``main``, the state a branch started
from; ``HEAD~1`` where that is ``HEAD`` itself (on ``main``, or a branch without commits of its own).

Command line (used by :func:`call`, one call per process)::

    python -m benchmarks._revision MODULE:FUNCTION '{"keyword": value}'

prints the function's JSON result as its last line of standard output.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Environment of every process: BLAS, OpenMP and numba held to one thread (the rates are per core).
ONE_THREAD = dict(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def default_revision() -> str:
    """The merge base of ``HEAD`` and ``main``; ``HEAD~1`` where that is ``HEAD`` itself."""
    head = _git("rev-parse", "HEAD")
    try:
        base = _git("merge-base", "HEAD", "main")
    except subprocess.CalledProcessError:
        base = head
    return _git("rev-parse", "HEAD~1") if base == head else base


def resolve(rev: str | None) -> str:
    """The full commit id of ``rev`` (:func:`default_revision` for ``None``); ``ValueError`` if git knows none."""
    if rev is None:
        return default_revision()
    try:
        return _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    except subprocess.CalledProcessError:
        raise ValueError(f"The 'against' parameter of benchmarks must name a git revision. Got {rev!r} instead.")


def add_argument(parser, default: str | None = None, what: str = "the package") -> None:
    """``--against REV`` on a benchmark's parser (``default``: :func:`default_revision` when ``None``)."""
    shown = default or "the merge base of HEAD and main (HEAD~1 on main)"
    parser.add_argument("--against", default=default, metavar="REV",
                        help=f"git revision whose {what} is measured beside the working tree's (default: {shown})")


@contextlib.contextmanager
def checkout(rev: str | None):
    """A temporary folder holding ``pmcbandit/`` as of ``rev`` (a git worktree, removed on exit); ``None``: the
    working tree itself (nothing checked out)."""
    if rev is None:
        yield None
        return
    commit = resolve(rev)
    with tempfile.TemporaryDirectory(prefix="pmcbandit-rev-") as tmp:
        path = Path(tmp) / commit[:12]
        _git("worktree", "add", "--detach", "--no-checkout", str(path), commit)
        try:
            subprocess.run(["git", "-C", str(path), "checkout", commit, "--", "pmcbandit"], check=True,
                           capture_output=True)
            yield path
        finally:
            _git("worktree", "remove", "--force", str(path))


def call(where: Path | None, target: str, timeout: float | None = None, **kwargs):
    """``MODULE:FUNCTION(**kwargs)`` in a fresh one-thread process, with the package of ``where`` (a folder from
    :func:`checkout`; ``None``: the working tree's); its JSON result. ``RuntimeError`` with the end of its
    standard error when it prints none."""
    path = [str(where), str(ROOT)] if where is not None else [str(ROOT)]
    env = dict(os.environ, **ONE_THREAD, PYTHONPATH=os.pathsep.join(path))
    out = subprocess.run([sys.executable, "-m", "benchmarks._revision", target, json.dumps(kwargs)],
                         capture_output=True, text=True, env=env, cwd=str(where or ROOT), timeout=timeout)
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise RuntimeError(f"{target} at {where or 'the working tree'} printed no result: {out.stderr[-600:]}")


def package_revision() -> str:
    """Where the imported :mod:`pmcbandit` comes from: the short commit of a :func:`checkout` folder, else
    ``"working tree"``."""
    import pmcbandit

    folder = Path(pmcbandit.__file__).resolve().parent.parent
    return "working tree" if folder == ROOT else folder.name


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0].startswith("-"):
        print(__doc__)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    target, kwargs = argv
    module, function = target.split(":")
    result = getattr(importlib.import_module(module), function)(**json.loads(kwargs))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
