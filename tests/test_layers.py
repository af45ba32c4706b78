"""The package's layers: imports point down, and every folder says what it may import.

Layers bottom-up (``pmcbandit/__init__.py`` and each folder's ``__init__`` docstring): helpers
(``_rng``, ``_validation``, ``_compat``, ``base``, ``exceptions``) → ``stats``, ``arms``, ``policies``
→ ``runtime`` → ``identification``, ``compare``, ``full_bandit``, ``simulate`` → the doors (``run``
and its ``result``, the ``evidence`` folder) → ``diagnostics`` → the package ``__init__`` (which gathers
every part, ``read_run`` included) → ``cli``. A module may import from its own layer or below, lazy imports
(inside a function) included. The one way up: a result module (``result.py``, ``*/result.py``,
``*_result.py``) builds its InferenceData and plots through ``pmcbandit.diagnostics``, imported inside the
method that needs it; diagnostics finds the result types through :func:`pmcbandit.base.result_type`.

No import circle between files, inside a folder or across folders: the file-level graph (every ``import``,
lazy ones and ``importlib.import_module("...")`` with a literal name included; ``from pkg import name`` goes
to the submodule ``pkg.name`` when there is one, else to ``pkg/__init__``) has no strongly connected
component of more than one file (Tarjan 1972). ``python tests/test_layers.py`` prints the counts.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pmcbandit"
LAYER = {
    "_rng": 0, "_validation": 0, "_compat": 0, "base": 0, "exceptions": 0,
    "stats": 1, "arms": 1, "policies": 1,
    "runtime": 2,
    "identification": 3, "compare": 3, "full_bandit": 3, "simulate": 3,
    "run": 4, "result": 4, "result_messages": 4, "evidence": 4,
    "diagnostics": 5,
    "__init__": 6,
    "cli": 7,
}
FOLDERS = ["stats", "arms", "policies", "runtime", "identification", "compare", "full_bandit", "simulate",
           "evidence", "diagnostics"]


def _part(module: str) -> str:
    """The layer key of a module path relative to the package (``runtime.engine`` → ``runtime``)."""
    return module.split(".")[0] if module else "__init__"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        yield path, _part(".".join(rel.parts))


def test_every_module_belongs_to_a_layer():
    assert {part for _, part in _modules()} <= set(LAYER)


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name (``pkg``, ``pkg.sub``, ``pkg.sub.mod``) → file, for every ``.py`` under ``package``."""
    files = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def _nearest(name: str, files) -> str | None:
    """``name`` if it is a module, else its nearest enclosing module (``pkg.mod.attr`` → ``pkg.mod``)."""
    while name and name not in files:
        name = name.rpartition(".")[0]
    return name or None


def _dynamic_target(node: ast.Call, root: str):
    """The literal module name of ``importlib.import_module("...")``; a name built at run time
    (an f-string) counts for its literal head, which must then name a package of ``root``."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "import_module" or not node.args:
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        return str(arg.values[0].value).rstrip(".")
    return None


def import_edges(module: str, path: Path, files) -> list[tuple[str, int, bool]]:
    """``(target module, line, lazy?)`` for every import of ``path`` that lands in the package.

    ``from pkg import name`` goes to ``pkg.name`` when that is a module, else to ``pkg`` (its
    ``__init__``); relative imports are resolved against ``module``; lazy means inside a function or class.
    """
    root = next(iter(files)).split(".")[0]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    edges = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] == root:
                targets = [_nearest(f"{base}.{a.name}", files) if f"{base}.{a.name}" in files else _nearest(base, files)
                           for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [_nearest(a.name, files) for a in node.names if a.name.split(".")[0] == root]
        elif isinstance(node, ast.Call):
            name = _dynamic_target(node, root)
            if name and name.split(".")[0] == root:
                targets = [_nearest(name, files)]
        for target in targets:
            if target and target != module:
                edges.append((target, node.lineno, id(node) not in top))
    return edges


def import_graph(package: Path) -> dict[str, dict[str, list[tuple[int, bool]]]]:
    """module → {imported module: [(line, lazy?), ...]} over the files of ``package``."""
    files = module_files(package)
    graph = {m: {} for m in files}
    for module, path in files.items():
        for target, line, lazy in import_edges(module, path, files):
            graph[module].setdefault(target, []).append((line, lazy))
    return graph


def circles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan 1972, iterative), sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, ()))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def _describe(component, graph) -> str:
    inside = set(component)
    arrows = [f"    {a} -> {b} (line {', '.join(str(line) for line, _ in graph[a][b])})"
              for a in component for b in sorted(graph[a]) if b in inside]
    return "circle of " + ", ".join(component) + ":\n" + "\n".join(arrows)


def _relative(module: str) -> str:
    return module.partition(".")[2]


def _is_result_door(module: str, target: str, lazy: bool) -> bool:
    """A result module's lazy import of diagnostics (its ``to_inference_data`` / ``plot``)."""
    stem = module.rpartition(".")[2]
    return lazy and (stem == "result" or stem.endswith("_result")) and _part(_relative(target)) == "diagnostics"


def arrows_up(graph) -> list[str]:
    """Every import (lazy ones included) from a layer to a higher one, but a result's lazy door to diagnostics."""
    wrong = []
    for module, targets in graph.items():
        part = _part(_relative(module))
        for target, sites in targets.items():
            t = _part(_relative(target))
            for line, lazy in sites:
                if t != part and LAYER[t] > LAYER[part] and not _is_result_door(module, target, lazy):
                    wrong.append(f"{module} line {line}: layer {LAYER[part]} imports {target} (layer {LAYER[t]})")
    return wrong


def counts(package: Path = PACKAGE) -> dict[str, int]:
    """Modules at the top of the package (``__init__`` counted), import circles, arrows up."""
    graph = import_graph(package)
    return {"top_level_modules": len(list(package.glob("*.py"))), "circles": len(circles(graph)),
            "arrows_up": len(arrows_up(graph))}


@functools.cache
def _package_graph():
    return import_graph(PACKAGE)


@pytest.mark.parametrize("path, part", list(_modules()), ids=lambda v: str(v).split("pmcbandit/")[-1])
def test_imports_point_down(path, part):
    module = next(m for m, p in module_files(PACKAGE).items() if p == path)
    wrong = arrows_up({module: _package_graph()[module]})
    assert not wrong, "\n".join(wrong)


def test_no_import_circle():
    graph = _package_graph()
    found = circles(graph)
    assert not found, "\n".join(_describe(c, graph) for c in found)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_circle_detector_catches_an_injected_circle(tmp_path):
    """The detector on a small package, before and after one lazy import closes a circle."""
    package = _write(tmp_path, {
        "pkg/__init__.py": "from pkg.a import f\n",
        "pkg/a.py": "from pkg.sub import b\n\ndef f():\n    return b\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/b.py": "import numpy\n",
        "pkg/sub/c.py": "from pkg.sub.b import numpy\n",
    })
    assert circles(import_graph(package)) == []
    (package / "sub" / "b.py").write_text("def g():\n    from pkg.a import f\n    return f\n")
    assert circles(import_graph(package)) == [["pkg.a", "pkg.sub.b"]]
    (package / "sub" / "b.py").write_text("import importlib\n\ndef g():\n    return importlib.import_module('pkg')\n")
    assert circles(import_graph(package)) == [["pkg", "pkg.a", "pkg.sub.b"]]
    (package / "sub" / "b.py").write_text("from .c import h\n")
    (package / "sub" / "c.py").write_text("from pkg.sub import b\n")
    assert circles(import_graph(package)) == [["pkg.sub.b", "pkg.sub.c"]]


def test_from_package_import_name_resolves_to_the_module_or_the_init(tmp_path):
    package = _write(tmp_path, {
        "pkg/__init__.py": "from pkg.a import A\nVERSION = 1\n",
        "pkg/a.py": "class A:\n    pass\n",
        "pkg/b.py": "from pkg import a, VERSION\n",
    })
    assert import_graph(package)["pkg.b"] == {"pkg.a": [(1, False)], "pkg": [(1, False)]}


def test_arrows_up_count_lazy_imports_but_a_results_door(tmp_path, monkeypatch):
    package = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/result.py": "def plot():\n    from pkg.diagnostics import draw\n    return draw\n",
        "pkg/stats/__init__.py": "def f():\n    from pkg.run import go\n    return go\n",
        "pkg/run.py": "def go():\n    from pkg.diagnostics import draw\n    return draw\n",
        "pkg/diagnostics.py": "def draw():\n    pass\n",
    })
    wrong = arrows_up(import_graph(package))
    assert [w.split(":")[0] for w in sorted(wrong)] == ["pkg.run line 2", "pkg.stats line 2"]


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


if __name__ == "__main__":
    figures = counts(Path(sys.argv[1]) / "pmcbandit" if len(sys.argv) > 1 else PACKAGE)
    print("  ".join(f"{key}: {value}" for key, value in figures.items()))


def test_tests_mirror_the_package_folder_for_folder():
    """Every folder of the package has its test folder of the same path (``pmcbandit/runtime/executors`` →
    ``tests/runtime/executors``) holding tests; test files at the top of ``tests/`` are the top-level modules' and
    the repository's checks (layers, docs, public API)."""
    tests = PACKAGE.parent / "tests"
    folders = sorted(p.parent.relative_to(PACKAGE) for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE)
    missing = [str(f) for f in folders if not any((tests / f).glob("test_*.py"))]
    assert not missing, f"package folders without a test folder of their own: {missing}"
