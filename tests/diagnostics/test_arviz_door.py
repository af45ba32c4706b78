"""Only pmcbandit/diagnostics/arviz_io.py (the one ArviZ door) and the ArviZ section of pmcbandit/_compat.py
(what differs between ArviZ 0.x and 1.x, imported inside its functions) may import arviz."""

import ast
import subprocess
import warnings
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = {Path("pmcbandit/diagnostics/arviz_io.py"), Path("pmcbandit/_compat.py")}


def arviz_imports(source: str) -> list[int]:
    """Line numbers of every import of arviz in ``source``: statements and dynamic imports."""
    hits = []
    with warnings.catch_warnings():
        # Invalid escape sequences in other modules' strings are not this test's business.
        warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
        tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            names = [str(node.args[0].value)] if fname in ("import_module", "__import__") else []
        else:
            continue
        if any(n == "arviz" or n.startswith("arviz.") for n in names):
            hits.append(node.lineno)
    return hits


def test_scanner_finds_every_form_of_import():
    src = (
        "import arviz\nimport numpy, arviz.data\nfrom arviz import InferenceData\n"
        "import importlib\nimportlib.import_module('arviz')\n__import__('arviz')\n"
        "import arvizish\nfrom .arviz import x\n"
    )
    assert arviz_imports(src) == [1, 2, 3, 5, 6]


def test_only_arviz_io_imports_arviz():
    files = sorted(p for d in ("pmcbandit", "models") for p in (ROOT / d).rglob("*.py"))
    assert Path("pmcbandit/diagnostics/arviz_io.py") in {f.relative_to(ROOT) for f in files}
    offenders = {}
    for f in files:
        rel = f.relative_to(ROOT)
        lines = arviz_imports(f.read_text(encoding="utf-8"))
        if lines and rel not in ALLOWED:
            offenders[str(rel)] = lines
    assert offenders == {}, f"arviz imported outside the ArviZ door: {offenders}"
    door = (ROOT / "pmcbandit/diagnostics/arviz_io.py").read_text(encoding="utf-8")
    assert "az = _compat.import_arviz()" in door  # NumPy's global random state kept on ArviZ 1


def test_diagnostics_package_is_lazy():
    code = (
        "import sys, pmcbandit\n"
        "before = set(sys.modules)\n"
        "import pmcbandit.diagnostics as d\n"
        "new = set(sys.modules) - before\n"
        "print(sorted(m for m in new if m.split('.')[0] in ('arviz', 'matplotlib', 'xarray')))\n"
        "d.plot_run\n"
        "print('matplotlib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


def test_compat_imports_the_libraries_only_inside_its_functions():
    """``import pmcbandit._compat`` loads no ArviZ, PyMC, PyTensor or xarray: every such import is in a function."""
    tree = ast.parse((ROOT / "pmcbandit/_compat.py").read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in top if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.split(".")[0] in ("arviz", "pymc", "pytensor", "xarray")], names
    assert arviz_imports((ROOT / "pmcbandit/_compat.py").read_text(encoding="utf-8"))
