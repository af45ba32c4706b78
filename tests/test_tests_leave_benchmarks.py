"""No test imports ``benchmarks``: the benchmarks measure the package and may change or go; what a test needs
lives in the package, in ``models/`` or in the tests' own helpers. Every ``.py`` file under ``tests/`` is parsed
and its ``import`` statements, ``from`` imports and string arguments of ``importlib.import_module`` and
``pytest.importorskip`` are read."""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("import_module", "importorskip") and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.args[0].value


def benchmark_imports(root: Path = TESTS) -> list[str]:
    """``"path: module"`` for every import of ``benchmarks`` or a module under it in the ``.py`` files of ``root``."""
    return [f"{path.relative_to(root)}: {name}" for path in sorted(root.rglob("*.py"))
            for name in _imported(ast.parse(path.read_text(), str(path)))
            if name == "benchmarks" or name.startswith("benchmarks.")]


def test_no_test_imports_benchmarks():
    assert benchmark_imports() == []


def test_the_scan_finds_each_kind_of_import(tmp_path):
    (tmp_path / "a.py").write_text("import benchmarks.bench_x\nimport numpy\n")
    (tmp_path / "b.py").write_text("from benchmarks import _peers\nfrom benchmarksx import y\n")
    (tmp_path / "c.py").write_text("def f():\n    pytest.importorskip('benchmarks._r')\n"
                                   "    importlib.import_module('os')\n")
    assert benchmark_imports(tmp_path) == ["a.py: benchmarks.bench_x", "b.py: benchmarks", "c.py: benchmarks._r"]
