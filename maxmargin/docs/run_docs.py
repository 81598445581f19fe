"""The docs' numbers of the committed runs, written from their tables: the default run's (docs/results/default/, rule
docs_tables), the ViT runs' (docs/results/<run>_*.csv, rule docs_vit) and the GPU sessions' (docs/gpu/<session>/).

A page holds each generated passage between ``<!-- run: NAME ARG ... -->`` and ``<!-- /run -->``; this module
rewrites every passage from the tables (:data:`PASSAGES`: NAME -> function, written by
:mod:`maxmargin.docs.default_passages` and :mod:`maxmargin.docs.vit_passages`), so that no number about a committed
run is typed into the prose of docs/figures.md, docs/census.md, docs/regpath.md and docs/vit.md. Run by ``make
docs``; tests/test_docs_numbers.py checks that the pages are what the tables give.

    python -m maxmargin.docs.run_docs           # rewrite the passages of the pages (or: python tools/run_docs.py)
    python -m maxmargin.docs.run_docs --check   # exit 1 where a page is not what the tables give
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from maxmargin.docs import REPO
from maxmargin.docs.default_passages import (
    TABLES,
    basin,
    census_budget,
    census_verdicts,
    claims_list,
    fig9a,
    final_angles,
    lemma1,
    regpath,
)
from maxmargin.docs.vit_passages import (
    vit_claims,
    vit_gpu,
    vit_gpu_paper_epochs,
    vit_paper_epochs,
    vit_paper_epochs_words,
    vit_run,
    vit_verdicts,
    vit_w_svm,
    vit_w_svm_reading,
)
from maxmargin.files import atomic_path

PAGES = [REPO / "docs" / name for name in ("figures.md", "census.md", "regpath.md", "vit.md")]
BLOCK = re.compile(r"(<!-- run: ([\w ]+?) -->\n)(.*?)(<!-- /run -->)", re.DOTALL)
PASSAGES: dict[str, Callable[..., str]] = {
    "vit_claims": vit_claims,
    "vit_run": vit_run,
    "vit_w_svm": vit_w_svm,
    "vit_gpu": vit_gpu,
    "vit_gpu_paper_epochs": vit_gpu_paper_epochs,
    "vit_paper_epochs": vit_paper_epochs,
    "vit_paper_epochs_words": vit_paper_epochs_words,
    "vit_verdicts": vit_verdicts,
    "vit_w_svm_reading": vit_w_svm_reading,
    "claims": claims_list,
    "census_verdicts": census_verdicts,
    "final_angles": final_angles,
    "basin": basin,
    "fig9a": fig9a,
    "census_budget": census_budget,
    "regpath": regpath,
    "lemma1": lemma1,
}


class PassageError(Exception):
    """A passage the committed files cannot give: an unknown name, a missing file, or a file without what the
    passage reads (a run committed in part); the message names the passage and the file."""


_OPENED: list[str] | None = None  # the files the passage being written has opened (an audit hook adds them)
_HOOKED = False  # the hook is added once per process, at the first passage: audit hooks cannot be removed


def _shown(path: str | os.PathLike) -> str:
    """``path`` relative to the repository where it is inside it."""
    path = Path(os.fsdecode(path)).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def _note_open(event: str, args: tuple) -> None:
    if event == "open" and _OPENED is not None and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED.append(_shown(args[0]))


def passage(spec: str, folder: Path = TABLES) -> str:
    """The text of a passage ``NAME ARG ...`` from the tables in ``folder``. Where a run's files are missing or
    partial, :class:`PassageError` names the passage and the file, instead of the bare KeyError, IndexError or
    TypeError of the line that reads it."""
    global _OPENED, _HOOKED
    name, *args = spec.split()
    if name not in PASSAGES:
        raise PassageError(f"passage `{spec}`: no passage {name!r} (tools/run_docs.py has {', '.join(PASSAGES)})")
    if not _HOOKED:
        sys.addaudithook(_note_open)
        _HOOKED = True
    _OPENED = opened = []
    try:
        return PASSAGES[name](folder, *args)
    except (OSError, LookupError, TypeError, ValueError) as err:
        if isinstance(err, FileNotFoundError) and err.filename:
            what = f"{_shown(err.filename)} is missing (a run not committed, or not all of it)"
        else:  # pandas reads a file whole: what a passage then lacks is in one of the files it read
            read = ", ".join(dict.fromkeys(opened)) or "none"
            what = f"the files it read ({read}) lack what it reads (a run committed in part)"
        raise PassageError(f"passage `{spec}` cannot be written: {what}; {type(err).__name__}: {err}") from err
    finally:
        _OPENED = None


def rewritten(text: str, folder: Path = TABLES) -> str:
    """``text`` with every passage written from the tables in ``folder``."""
    return BLOCK.sub(lambda m: m[1] + passage(m[2], folder) + m[4], text)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare the pages with the tables instead of writing")
    args = parser.parse_args(argv)
    try:
        stale = [page for page in PAGES if rewritten(page.read_text()) != page.read_text()]
    except PassageError as err:
        print(f"run_docs: {err}", file=sys.stderr)
        return 1
    for page in stale:
        if args.check:
            print(f"{page.relative_to(REPO)} is not what docs/results/default/ gives: run tools/run_docs.py")
        else:
            with atomic_path(page) as tmp:
                tmp.write_text(rewritten(page.read_text()))
            print(f"wrote {page.relative_to(REPO)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
