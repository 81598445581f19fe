"""The figure registry: every figure panel, every table and file, and every synthetic experiment of the pipeline,
declared once, family by family (one module each), and indexed here: plain data, and its look-ups by name.

This is the one list from which the rest is derived (:mod:`maxmargin.registry.derived`): the Snakemake rule lists,
the per-figure targets and `all` (derived.target_outputs, all_outputs), the tables' columns and contracts
(:mod:`maxmargin.tables`), the report captions, categories and labels, the claims rule's inputs, the gallery and the
test lists. Functions are named by strings: importing it costs nothing, so that the rule files build the DAG without
the heavy libraries, and it sits below the library in the import graph (tests/test_layers.py). The names are
resolved once, in one place (:mod:`maxmargin.pipeline`); tests/test_registry.py checks that every name resolves and
that nothing is left unregistered. CONTRIBUTING.md says how to add a figure.
"""

from __future__ import annotations

from typing import Any

from maxmargin.registry import basin, census, claims, lemma1, regpath, synthetic, vit, vit_decisive, vit_w_svm
from maxmargin.registry.types import GALLERY_SCALE, Column, Experiment, Family, File, Panel, Table

__all__ = ["GALLERY_SCALE", "Column", "Experiment", "Family", "File", "Panel", "Table"]

FAMILIES: tuple[Family, ...] = (
    Family(name="claims", order=1, title="Claims"),
    Family(name="synthetic", order=2, title="Synthetic"),
    Family(name="census", order=3, title="Census"),
    Family(name="regpath", order=4, title="Regularization paths and Lemma 1"),
    Family(name="lemma1", order=4, title="Regularization paths and Lemma 1"),
    Family(name="vit", order=5, title="ViT"),
    Family(name="basin", order=6, title="Beyond the paper"),
)

# Targets kept off `all` (minutes of compute each), run by their own name.
ON_DEMAND: tuple[str, ...] = ("census_grid", "vit_recipes", "vit_pilot", vit_decisive.TARGET)

# Every entry, family by family (maxmargin/registry/<family>.py).
EXPERIMENTS: tuple[Experiment, ...] = synthetic.EXPERIMENTS
PANELS: tuple[Panel, ...] = (
    synthetic.PANELS + census.PANELS + regpath.PANELS + vit.PANELS + vit_decisive.PANELS + basin.PANELS
)
TABLES: tuple[Table, ...] = (
    synthetic.TABLES
    + census.TABLES
    + regpath.TABLES
    + lemma1.TABLES
    + vit.TABLES
    + vit_w_svm.TABLES
    + vit_decisive.TABLES
    + basin.TABLES
    + claims.TABLES
)
FILES: tuple[File, ...] = vit.FILES
# Every panel of the default run: each has a thumbnail in the README gallery (docs/gallery/{name}.png, at
# GALLERY_SCALE of its figure's pixels) and a baseline image (tests/baseline_images/); tools/gallery.py makes both.
GALLERY: tuple[str, ...] = tuple(p.name for p in PANELS if p.target not in ON_DEMAND)
REGPATH_INSTANCES = regpath.REGPATH_INSTANCES
# The default run's tables the docs quote: copied to docs/results/default/ (rule docs_tables, committed), from which
# tools/run_docs.py writes every number of docs/figures.md, docs/census.md and docs/regpath.md about that run.
DOCS_TABLES: tuple[str, ...] = (
    "claims",
    "directions",
    "census_summary",
    "census_budget",
    "basin_summary",
    "basin_cone",
    "regpath",
    "regpath_compare",
    "lemma1",
)
VERDICTS = claims.VERDICTS
# The sentences of what a run measured (maxmargin.claims.run_sentences), written beside the claims table and read by
# the report's captions.
RUN_SENTENCES_FILE = "claims.json"


# The modules that declare the entries, each a family's (the ViT's W-ATT-SVM tables: a module of their own).
MODULES = (synthetic, census, regpath, lemma1, vit, vit_w_svm, vit_decisive, basin, claims)


def declared_in(entry: Experiment | Panel | Table | File) -> str:
    """The registry module that declares an entry of ``entry``'s kind and name (an unknown name: its family's), for
    the messages that name a mistake's place."""
    kind = {Experiment: "EXPERIMENTS", Panel: "PANELS", Table: "TABLES", File: "FILES"}[type(entry)]
    for module in MODULES:
        if any(e.name == entry.name for e in getattr(module, kind, ())):
            return f"maxmargin/registry/{module.__name__.rsplit('.', 1)[-1]}.py"
    return f"maxmargin/registry/{getattr(entry, 'family', 'synthetic')}.py"


def _find(entries: tuple[Any, ...], name: str, what: str) -> Any:
    found = [e for e in entries if e.name == name]
    if not found:
        raise ValueError(f"unknown {what} {name!r}; registered: {', '.join(e.name for e in entries)}")
    return found[0]


def experiment(name: str) -> Experiment:
    """The registry entry of a synthetic experiment."""
    return _find(EXPERIMENTS, name, "experiment")


def panel(name: str) -> Panel:
    """The registry entry of a figure panel."""
    return _find(PANELS, name, "panel")


def table(name: str) -> Table:
    """The registry entry of a table."""
    return _find(TABLES, name, "table")


def file(name: str) -> File:
    """The registry entry of a file that is not a table."""
    return _find(FILES, name, "file")


def family(name: str) -> Family:
    """The registry entry of a family."""
    return _find(FAMILIES, name, "family")


def columns(name: str) -> list[str]:
    """The columns of a registered table, in order: what its producer writes."""
    return table(name).column_names


def panels_of(family: str) -> tuple[Panel, ...]:
    """The panels one rule family draws, in registry order."""
    return tuple(p for p in PANELS if p.family == family)
