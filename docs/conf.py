"""Sphinx configuration: the how-to guide (MyST Markdown notebooks, MyST-NB), the notebooks of
``notebooks/``, the "How it works" reference and the API reference (autodoc + numpydoc, as PyMC and
ArviZ build theirs).

Built by ``make docs`` with warnings as errors. Every guide page and every notebook is executed at
build time in quick mode (``PMCBANDIT_QUICK=1``, set here before any kernel starts), and a cell
that raises fails the build (``nb_execution_raise_on_error``): the docs build is what proves that
the examples and the notebooks run. The notebooks are stored without outputs; they are copied into
``docs/notebooks/`` (ignored by git) when this file is read. The API pages are listed from
``pmcbandit.__all__`` at build time (``_write_api_lists``, run as this file is read), so a public
name added to the package is documented without editing this folder, and one removed cannot leave
a dangling entry.
"""

from __future__ import annotations

import inspect
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
# The kernels that execute the pages inherit this environment: quick mode for the notebooks, and
# the repository root on the path for the notebooks that import ``benchmarks``.
os.environ["PMCBANDIT_QUICK"] = "1"
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
import pmcbandit  # noqa: E402

project = "pmcbandit"
author = "the pmcbandit developers"
copyright = "the pmcbandit developers"
release = version = pmcbandit.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
]

root_doc = "index"
exclude_patterns = ["_build", "_templates", "README.md", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]

html_theme = "alabaster"
html_title = f"pmcbandit {release}"

# Markdown: $...$ maths and ::: fences; heading anchors so the guide's pages can link to each
# other's sections (down to the "How it works" page's fourth level).
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 4

# Execution (MyST-NB registers .md MyST notebooks and .ipynb itself). Every page runs at every build:
# a cache keyed on the cells' text would not see a change in the package they call. A cell that
# raises, or one cell running past the timeout, fails the build.
nb_execution_mode = "force"
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# API reference. autodoc imports the package; type hints go in the signature only, because the
# numpydoc "Parameters" sections already say what each argument is.
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "show-inheritance": True}
# numpydoc's own members table would list every method twice (autodoc lists them already) and
# asks for stub pages of each.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Parameter types are free text here ("float or Budget", "ndarray of bool"), not cross-references.
numpydoc_xref_param_type = False
# Unresolved references in docstrings (a private helper named in prose) are not build errors:
# strict reference checking would tie the docs build to every internal rename.
nitpicky = False
# A name documented once but importable from two modules (``pmcbandit.Pulls`` is
# ``pmcbandit.runtime.budget.Pulls``) can make a short reference in a docstring match twice; Sphinx
# then links the first match and warns. That warning says nothing about the docs' correctness.
suppress_warnings = ["ref.python"]


def _kind(obj) -> str:
    """Which section of the API reference a public object belongs to."""
    from pmcbandit.arms import Arm
    from pmcbandit.runtime.budget import Budget

    if inspect.isclass(obj):
        if issubclass(obj, Warning):
            return "warnings"
        if issubclass(obj, Budget):
            return "budgets"
        if issubclass(obj, Arm):
            return "arms"
        return "results"
    if callable(obj):
        return "functions"
    return "data"


#: Public classes documented beside ``pmcbandit.__all__``: names a user meets in results,
#: arguments and warnings without importing them from the top level.
EXTRA = (
    "pmcbandit.arms.evidence.AISArm",
    "pmcbandit.arms.evidence.LaplaceISArm",
    "pmcbandit.arms.evidence.NestedArm",
    "pmcbandit.arms.evidence.PriorISArm",
    "pmcbandit.arms.evidence.SMCArm",
    "pmcbandit.arms.evidence.TemperedSMCArm",
    "pmcbandit.arms.samplers.MCMCArm",
    "pmcbandit.arms.samplers.SMCSamplerArm",
    "pmcbandit.arms.samplers.NUTSBackendArm",
    "pmcbandit.runtime.budget.Budget",
    "pmcbandit.exceptions.PmcBanditWarning",
    "pmcbandit.exceptions.UnreliableArmWarning",
    "pmcbandit.exceptions.NoGuaranteeWarning",
    "pmcbandit.exceptions.SettingsWarning",
    "pmcbandit.compare.EfficiencyRatio",
    "pmcbandit.compare.amortise.Amortisation",
    "pmcbandit.full_bandit.FullBanditEnvironment",
    "pmcbandit.runtime.executors.processes.ProcessExecutor",
    "pmcbandit.runtime.executors.dask_cluster.DaskExecutor",
)

SECTIONS = (
    ("functions", "Doors", "Every job is one call; each returns a result object."),
    ("results", "Results and helpers", "What the doors return, and the objects they accept."),
    ("arms", "Arms", "Estimators the bandit allocates among."),
    ("budgets", "Budgets", "When a run stops (a float ``budget`` means wall seconds)."),
    ("warnings", "Warnings", "The warning family (the user guide's *Warnings and what to do*)."),
    ("data", "Constants", ""),
)


def _resolve(path: str):
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name, None)


def _write_api_lists() -> None:
    """Write ``api/generated/public.rst``: one autosummary table per section, public names from
    ``pmcbandit.__all__`` under ``pmcbandit.``, the extras under their defining module (an extra
    that is also a top-level name is listed once, at the top level).
    """
    entries: dict[str, list[str]] = {key: [] for key, _, _ in SECTIONS}
    seen = set()
    for name in pmcbandit.__all__:
        obj = getattr(pmcbandit, name)
        entries[_kind(obj)].append(f"pmcbandit.{name}")
        seen.add(id(obj))
    for path in EXTRA:
        obj = _resolve(path)
        if obj is None or id(obj) in seen:
            continue
        entries[_kind(obj)].append(path)
        seen.add(id(obj))
    lines = ["Public names", "============", ""]
    for key, title, blurb in SECTIONS:
        if not entries[key]:
            continue
        lines += [title, "-" * len(title), "", blurb, "", ".. autosummary::", "   :toctree: .",
                  "   :nosignatures:", ""]
        lines += [f"   {path}" for path in entries[key]]
        lines.append("")
    out = HERE / "api" / "generated"
    out.mkdir(parents=True, exist_ok=True)
    # A stub left from a name that is no longer public would be a page outside every toctree.
    listed = {path for paths in entries.values() for path in paths}
    for stub in out.glob("*.rst"):
        if stub.stem != "public" and stub.stem not in listed:
            stub.unlink()
    text = "\n".join(lines)
    target = out / "public.rst"
    if not target.exists() or target.read_text() != text:
        target.write_text(text)


def _copy_notebooks() -> None:
    """Copy ``notebooks/*.ipynb`` into ``docs/notebooks/`` (the "Notebooks" toctree globs that
    folder), rewriting only the changed ones and removing copies whose source is gone.
    """
    source = ROOT / "notebooks"
    target = HERE / "notebooks"
    target.mkdir(exist_ok=True)
    names = {path.name for path in source.glob("*.ipynb")}
    for stale in target.glob("*.ipynb"):
        if stale.name not in names:
            stale.unlink()
    for name in sorted(names):
        src, dst = source / name, target / name
        if not dst.exists() or dst.read_bytes() != src.read_bytes():
            shutil.copyfile(src, dst)


# Written when this file is read, before Sphinx looks for source files, so the pages are found and
# autosummary generates its stubs in the same build.
_write_api_lists()
_copy_notebooks()
