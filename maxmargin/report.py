"""The report's entries, as the rule files hand them to Snakemake's ``report()``: each panel's and table's caption
(filled from the config that made the file, and from what the run measured), category, group and labels, and the
landing page.

Snakemake builds the report by parsing the workflow after the run (``snakemake --report``), so these are computed at
parse time from the files the run left: the claims table's sentences (``tables/claims.json``), a table's sidecar,
a panel's PNG. Nothing here imports more than the registry and the provenance records: the rule files build the DAG
without the heavy libraries.
"""

from __future__ import annotations

import json
import os
import sys
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


def png_provenance(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The provenance record a panel's PNG carries (maxmargin.pipeline.save_figure: a text chunk before the image
    data), or None."""
    with open(path, "rb") as f:
        f.read(8)
        while header := f.read(8):
            size, kind = int.from_bytes(header[:4], "big"), header[4:]
            if kind in (b"IDAT", b"IEND"):
                return None
            chunk = f.read(size + 4)[:size]
            if kind == b"tEXt" and chunk.startswith(b"Provenance\0"):
                return json.loads(chunk.split(b"\0", 1)[1].decode("latin-1"))
    return None


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
        recorded = {
            block: made_with(self.path(registry.table(name).pattern)) for block, name in derived.LANDING_TABLES.items()
        }
        page = derived.landing_page(Path(template).read_text(), self.config, recorded)
        return caption_file("workflow", page, self.captions)
