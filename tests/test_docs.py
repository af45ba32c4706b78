"""The docs keep up with the package: every warning class and every interval status has its row in
the "Warnings and what to do" tables of the "How it works" page; every how-to page is a short MyST
notebook that the docs build executes; every notebook is in the docs build's "Notebooks" toctree and
stored without outputs; and the README stays a short entry page."""

import json
import re
from pathlib import Path

import pytest

from pmcbandit import exceptions
from pmcbandit.result import INTERVAL_STATUS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
WARNINGS_PAGE = DOCS / "how_it_works.md"
GUIDE_PAGES = sorted((DOCS / "guide").glob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: A how-to page is a task, an example, what to read and links: about 600 words at most.
GUIDE_MAX_WORDS = 650


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| `")]


@pytest.mark.parametrize("name", [n for n in exceptions.__all__
                                  if isinstance(getattr(exceptions, n), type)
                                  and issubclass(getattr(exceptions, n), Warning)])
def test_every_warning_class_has_a_row(name):
    rows = _table_rows(WARNINGS_PAGE.read_text(encoding="utf-8"))
    assert any(row.startswith(f"| `{name}` |") for row in rows), f"{name} has no row in {WARNINGS_PAGE}"


@pytest.mark.parametrize("status", INTERVAL_STATUS)
def test_every_interval_status_has_a_row(status):
    rows = _table_rows(WARNINGS_PAGE.read_text(encoding="utf-8"))
    assert any(row.startswith(f'| `"{status}"` |') for row in rows), f"{status!r} has no row in {WARNINGS_PAGE}"


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250


@pytest.mark.parametrize("page", GUIDE_PAGES, ids=[p.stem for p in GUIDE_PAGES])
def test_guide_page_is_a_short_executed_notebook(page):
    text = page.read_text(encoding="utf-8")
    assert text.startswith("---\nfile_format: mystnb\n"), f"{page.name} is not a MyST-NB notebook"
    assert "```{code-cell}" in text, f"{page.name} has no executed example"
    assert len(text.split()) <= GUIDE_MAX_WORDS, f"{page.name} has {len(text.split())} words"


def test_guide_pages_are_in_the_toctree():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for page in GUIDE_PAGES:
        assert f"guide/{page.stem}\n" in index, f"{page.name} is not in docs/index.md"


def test_notebooks_are_built_and_executed_with_the_docs():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    assert re.search(r":glob:\n\nnotebooks/\*\n", index), "docs/index.md has no notebooks/* toctree"
    conf = (DOCS / "conf.py").read_text(encoding="utf-8")
    for setting in ('nb_execution_mode = "force"', "nb_execution_raise_on_error = True",
                    'os.environ["PMCBANDIT_QUICK"] = "1"'):
        assert setting in conf, f"docs/conf.py lacks {setting}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code, f"{path.name} has no code cell"
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), \
        f"{path.name} is stored with outputs"
