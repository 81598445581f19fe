"""The report's entries, as the rule files hand them to Snakemake's ``report()``: each panel's and table's caption
(filled from the config that made the file, and from what the run measured), category, group and labels, the
landing page, and what the report's screenshots (docs/report/) show.

Snakemake builds the report by parsing the workflow after the run (``snakemake --report``), so these are computed at
parse time from the files the run left: the claims table's sentences (``tables/claims.json``), a table's sidecar,
a panel's PNG. Nothing here imports more than the registry and the provenance records: the rule files build the DAG
without the heavy libraries.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import os
import sys
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maxmargin import registry
from maxmargin.files import atomic_path
from maxmargin.provenance import checked_sentences
from maxmargin.registry import derived
from maxmargin.registry.types import Panel, Table

# Where the generated caption files go (Snakemake reads a caption from a file).
CAPTIONS = Path(".snakemake/captions")


def caption_file(name: str, text: str, folder: Path = CAPTIONS) -> str:
    """A generated caption file of the report (``folder``/``name``.rst, rewritten only when its text changes, so that
    a parse does not touch it), its absolute path."""
    path = folder / f"{name}.rst"
    if not path.exists() or path.read_text() != text:
        with atomic_path(path) as tmp:
            tmp.write_text(text)
    return str(path.resolve())


def png_text(path: str | os.PathLike[str], keyword: str) -> str | None:
    """The text a PNG carries under ``keyword`` (a tEXt chunk before the image data), or None."""
    with open(path, "rb") as f:
        f.read(8)
        while header := f.read(8):
            size, kind = int.from_bytes(header[:4], "big"), header[4:]
            if kind in (b"IDAT", b"IEND"):
                return None
            chunk = f.read(size + 4)[:size]
            if kind == b"tEXt" and chunk.startswith(keyword.encode("latin-1") + b"\0"):
                return chunk.split(b"\0", 1)[1].decode("latin-1")
    return None


def png_with_text(png: bytes, keyword: str, text: str) -> bytes:
    """``png`` with ``text`` under ``keyword`` in a tEXt chunk right after its header chunk (IHDR), where
    :func:`png_text` finds it: the image data are untouched."""
    end_of_header = 8 + 8 + int.from_bytes(png[8:12], "big") + 4  # signature, IHDR's length and type, data, CRC
    data = b"tEXt" + keyword.encode("latin-1") + b"\0" + text.encode("latin-1")
    chunk = (len(data) - 4).to_bytes(4, "big") + data + zlib.crc32(data).to_bytes(4, "big")
    return png[:end_of_header] + chunk + png[end_of_header:]


def png_provenance(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The provenance record a panel's PNG carries (maxmargin.pipeline.save_figure: a text chunk before the image
    data), or None."""
    text = png_text(path, "Provenance")
    return None if text is None else json.loads(text)


# The report's screenshots (docs/report/, tools/report_browser.py --screenshots): each PNG carries, under this
# keyword, a record of what it shows (screenshot_sources, as JSON), so that a test can tell one older than its source.
SCREENSHOT_KEYWORD = "Shows"


def screenshot_sources(
    template: str | os.PathLike[str],
    config: Mapping[str, Any],
    recorded: Mapping[str, Mapping[str, Any] | None] | None,
    claims_csv: str | os.PathLike[str],
    claims_rows: int,
) -> dict[str, dict[str, Any]]:
    """What each screenshot of the report shows, by file name, as the sha256 of its source: ``landing.png`` the
    landing page (``template``, workflow/report/workflow.rst, with the settings and verdicts of
    derived.landing_page and the results root it names: ``config`` and ``recorded`` as ReportEntries.landing_page
    passes them), ``claims.png`` the header and first ``claims_rows`` rows of the claims table ``claims_csv`` (the
    report's claims page is written from it; the rows in the window, which the record keeps).

    Only what decides the text in view is hashed, not the report file (Snakemake writes a new one, with its date and
    paths, on every build), nor a claim below the window: the same sources give the same records on any machine,
    and a claim added at the end of the table leaves the screenshot true."""
    page = derived.landing_page(Path(template).read_text(), config, recorded)
    landing = json.dumps({"page": page, "results": config["results"]}, sort_keys=True).encode()
    with open(claims_csv, newline="") as f:
        in_view = list(itertools.islice(csv.reader(f), claims_rows + 1))
    return {
        "landing.png": {"sha256": hashlib.sha256(landing).hexdigest()},
        "claims.png": {"sha256": hashlib.sha256(json.dumps(in_view).encode()).hexdigest(), "claims_rows": claims_rows},
    }


def made_with(path: str) -> dict[str, Any] | None:
    """The config of the job that made ``path`` (a table: its sidecar; a panel: its PNG), or None (none yet)."""
    try:
        record = (
            png_provenance(path) if path.endswith(".png") else json.loads(Path(f"{path}.provenance.json").read_text())
        )
    except (OSError, ValueError):
        return None
    return (record or {}).get("config")


def run_sentences(sentences: str | os.PathLike[str], claims_sidecar: str | os.PathLike[str]) -> dict[str, str]:
    """What the last run measured (the claims table's sentences, ``sentences``: registry.RUN_SENTENCES_FILE), for
    the captions' {run[...]} fields: `snakemake --report` reads the workflow after the run, so its captions state the
    run's numbers; before a run, each such field says it is not measured. A damaged file, one not of the claims table
    whose sidecar is ``claims_sidecar``, or one whose sentences were edited since (provenance.checked_sentences)
    never stops the parse: it is reported, the captions say their claims are not measured, and its time is set back
    so that the next run's claims_table writes it again."""
    path = Path(sentences)
    if not path.exists():
        return {}
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        problem = f"it cannot be read ({type(err).__name__}: {err})"
    else:
        try:
            return checked_sentences(found, _sha256(claims_sidecar))
        except ValueError as err:
            problem = str(err)
    print(
        f"{path}: {problem}; the report's captions say their claims are not measured until rule claims_table "
        "writes it again (set to rerun: `snakemake --cores all` does it)",
        file=sys.stderr,
    )
    os.utime(path, (0, 0))  # older than the tables it is made from: its job reruns
    return {}


def _sha256(sidecar: str | os.PathLike[str]) -> str | None:
    """The sha256 a table's sidecar records (it binds the sentences file to the claims table), or None."""
    try:
        return json.loads(Path(sidecar).read_text()).get("sha256")
    except (OSError, ValueError, AttributeError):
        return None


def report_caption(
    entry: Panel | Table, made: str | None, config: Mapping[str, Any], sentences: Mapping[str, str]
) -> str:
    """A report caption filled from the config that made the file ``made`` (so that a report built without a rerun
    after a config change describes its data, not the new config), else from ``config``; a note in bold says where
    the two differ."""
    recorded = made_with(made) if made else None
    own = derived.caption(entry, config, sentences)
    if recorded is None:
        return own
    try:
        text = derived.caption(entry, recorded, sentences)
    except (KeyError, IndexError, TypeError, ValueError):
        return (
            f"**Made by another configuration, whose settings this caption cannot show: run the workflow again.** {own}"
        )
    if own != text:
        text = f"**Made by other settings than this config's (as this caption says): run the workflow.** {text}"
    return text


@dataclass(frozen=True)
class ReportEntries:
    """The ``report()`` keywords of this run's panels and tables, and its landing page: ``config`` is the run's,
    ``results`` its results root, ``sentences`` what it measured (:func:`run_sentences`)."""

    config: Mapping[str, Any]
    results: str
    sentences: Mapping[str, str] = field(default_factory=dict)
    captions: Path = CAPTIONS

    def path(self, path: str) -> str:
        return f"{self.results}/{path}"

    def table(self, name: str) -> dict[str, Any]:
        """A registered table's caption (filled from the config that made it), category, group and labels."""
        entry = registry.table(name)
        paths = [self.path(p) for p in derived.table_paths(entry, self.config)]
        made = next((p for p in paths if p.endswith(".csv")), None) if entry.sidecar else None
        return dict(
            caption=caption_file(
                f"table-{name}", report_caption(entry, made, self.config, self.sentences), self.captions
            ),
            category=derived.category(entry.family),
            subcategory="Tables",
            labels={"figure": entry.label, "type": "table"},
        )

    def panel(self, rule: str, panels: list[str]) -> dict[str, Any]:
        """The keywords of the rule drawing ``panels`` (wildcard ``panel``): each panel's caption (filled from the
        config that drew it), looked up by the wildcard in one generated caption file; category, group, labels."""
        captions = {
            p: report_caption(registry.panel(p), self.path(f"figures/{p}.png"), self.config, self.sentences)
            for p in panels
        }
        lookup = "{{ captions[snakemake.wildcards.panel] }}"
        text = f"{{% set captions = {json.dumps(captions, ensure_ascii=False)} %}}{lookup}\n"
        return dict(
            caption=caption_file(f"rule-{rule}", text, self.captions),
            category=derived.category(registry.panel(panels[0]).family),
            subcategory=lambda wildcards: registry.panel(wildcards.panel).figure_label,
            labels=lambda wildcards: {"figure": registry.panel(wildcards.panel).label, "type": "figure"},
        )

    def landing_page(self, template: str | os.PathLike[str]) -> str:
        """The report's landing page file: ``template`` (workflow/report/workflow.rst) with the list of verdicts and
        the settings it states, each block's from the record of the table its jobs made last
        (derived.landing_page, LANDING_TABLES): `snakemake --report` describes the run's figures, not what this
        invocation's config would make."""
        page = derived.landing_page(Path(template).read_text(), self.config, self.recorded())
        return caption_file("workflow", page, self.captions)

    def recorded(self) -> dict[str, dict[str, Any] | None]:
        """Each settings block of the landing page -> the config recorded by the job that made its table
        (derived.LANDING_TABLES; None before a run)."""
        return {
            block: made_with(self.path(registry.table(name).pattern)) for block, name in derived.LANDING_TABLES.items()
        }

    def screenshot_sources(self, template: str | os.PathLike[str], claims_rows: int) -> dict[str, dict[str, Any]]:
        """What the screenshots of this run's report show (:func:`screenshot_sources`): its landing page, from
        ``template`` as :meth:`landing_page` writes it, and the first ``claims_rows`` rows of its claims table."""
        claims = self.path(registry.table("claims").pattern)
        return screenshot_sources(template, self.config, self.recorded(), claims, claims_rows)
