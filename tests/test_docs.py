"""The user guide keeps up with the package: every warning class and every interval status has its
row in the "Warnings and what to do" table, and the README stays a short entry page."""

from pathlib import Path

import pytest

from pmcbandit import exceptions
from pmcbandit.result import INTERVAL_STATUS

ROOT = Path(__file__).resolve().parents[1]
WARNINGS_PAGE = ROOT / "docs" / "guide" / "warnings.md"


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
