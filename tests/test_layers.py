"""The package's layers: imports point down, and every folder says what it may import.

Layers bottom-up (``pmcbandit/__init__.py`` and each folder's ``__init__`` docstring): helpers
(``_rng``, ``_validation``, ``_compat``, ``base``, ``exceptions``) → ``stats``, ``arms``, ``policies``
→ ``runtime`` → ``identification``, ``compare``, ``full_bandit``, ``simulate`` → the doors (``run``
and its ``result``, the ``evidence`` folder, the package ``__init__``) → ``diagnostics`` and ``cli``. A module may import from its own
layer or below. The one way up: results build their InferenceData and plots through ``pmcbandit.diagnostics``,
imported inside the method that needs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pmcbandit"
LAYER = {
    "_rng": 0, "_validation": 0, "_compat": 0, "base": 0, "exceptions": 0,
    "stats": 1, "arms": 1, "policies": 1,
    "runtime": 2,
    "identification": 3, "compare": 3, "full_bandit": 3, "simulate": 3,
    "run": 4, "result": 4, "result_messages": 4, "evidence": 4, "__init__": 4,
    "diagnostics": 5, "cli": 5,
}
FOLDERS = ["stats", "arms", "policies", "runtime", "identification", "compare", "full_bandit", "simulate",
           "evidence", "diagnostics"]


def _part(module: str) -> str:
    """The layer key of a module path relative to the package (``runtime.engine`` → ``runtime``)."""
    return module.split(".")[0] if module else "__init__"


def _imports(path: Path):
    """(imported pmcbandit module, line, at module level?) for every import in ``path``."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pmcbandit":
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.split(".")[0] == "pmcbandit"]
        for name in names:
            yield name.removeprefix("pmcbandit").lstrip("."), node.lineno, id(node) in top


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        yield path, _part(".".join(rel.parts))


def test_every_module_belongs_to_a_layer():
    assert {part for _, part in _modules()} <= set(LAYER)


@pytest.mark.parametrize("path, part", list(_modules()), ids=lambda v: str(v).split("pmcbandit/")[-1])
def test_imports_point_down(path, part):
    wrong = []
    for target, line, module_level in _imports(path):
        t = _part(target)
        if t == part or LAYER[t] <= LAYER[part]:
            continue
        # Results reach the ArviZ door lazily, inside to_inference_data / plot.
        if t == "diagnostics" and not module_level:
            continue
        wrong.append(f"line {line}: {part} (layer {LAYER[part]}) imports pmcbandit.{target} (layer {LAYER[t]})")
    assert not wrong, "\n".join(wrong)


def test_stats_uses_numpy_and_scipy_only():
    allowed = {"numpy", "scipy", "numba", "math", "numbers", "functools", "typing", "__future__", "collections",
               "dataclasses", "pmcbandit", "warnings"}
    for path in (PACKAGE / "stats").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            roots = []
            if isinstance(node, ast.ImportFrom) and node.module:
                roots = [node.module.split(".")[0]]
            elif isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            assert set(roots) <= allowed, f"{path.name} imports {roots}"


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_folder_says_what_lives_there_and_what_it_may_import(folder):
    doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text())) or ""
    assert "may import" in doc.lower() or "it may import" in doc.lower(), f"pmcbandit/{folder}/__init__.py"
