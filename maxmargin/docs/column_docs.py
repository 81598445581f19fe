"""The docs' lists of what a table's columns measure, written from the registry's column descriptions.

A page holds a list between ``<!-- columns: TABLE -->`` and ``<!-- /columns -->``; this script rewrites each from
:attr:`maxmargin.registry.Column.description` (which a run's JSON records and the table's report caption lists
too), so that a column's meaning is declared once. Run by ``make docs``; tests/test_contributing.py checks
the pages are current.
Usage: python -m maxmargin.docs.column_docs PAGE ...   (or: python tools/column_docs.py PAGE ...)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from maxmargin import registry
from maxmargin.files import atomic_path
from maxmargin.registry import derived

BLOCK = re.compile(r"(<!-- columns: (\w+) -->\n)(.*?)(<!-- /columns -->)", re.DOTALL)


def column_list(table: str) -> str:
    """A markdown list: every column of ``table``, in order, with what it measures (the list its report caption
    ends with)."""
    return derived.column_list(registry.table(table), "`")


def rewritten(text: str) -> str:
    """``text`` with every column block written from the registry."""
    return BLOCK.sub(lambda m: m[1] + column_list(m[2]) + m[4], text)


def main(pages: list[str]) -> None:
    for page in map(Path, pages):
        text = page.read_text()
        if rewritten(text) != text:
            with atomic_path(page) as tmp:
                tmp.write_text(rewritten(text))


if __name__ == "__main__":
    main(sys.argv[1:])
