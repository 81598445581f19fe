"""The figure registry: every figure panel, every table and every synthetic experiment of the pipeline.

This is the one list from which the rest is derived: the Snakemake rule lists, the per-figure targets and `all`
(workflow/rules/common.smk), the report captions, categories and labels, the claims rule's inputs, the gallery and
the test lists. It is plain data (functions named by strings): importing it costs nothing, so that the rule files
build the DAG without the heavy libraries, and it sits below the library in the import graph. The names are
resolved once, in one place (:mod:`maxmargin.pipeline`); tests/test_registry.py checks that every name resolves
and that nothing is left unregistered. CONTRIBUTING.md says how to add a figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from maxmargin.registry import basin, census, lemma1, regpath, synthetic, vit
from maxmargin.registry.types import Experiment, Family, Panel, Table

FAMILIES: tuple[Family, ...] = (
    Family("claims", 1, "Claims"),
    Family("synthetic", 2, "Synthetic"),
    Family("census", 3, "Census"),
    Family("regpath", 4, "Regularization paths and Lemma 1"),
    Family("lemma1", 4, "Regularization paths and Lemma 1"),
    Family("vit", 5, "ViT"),
    Family("basin", 6, "Beyond the paper"),
)

# Figure targets kept off `all` (minutes of compute each), run by their own target.
ON_DEMAND: tuple[str, ...] = ("census_grid", "vit_recipes")

# Every entry, family by family (maxmargin/registry/<family>.py).
EXPERIMENTS: tuple[Experiment, ...] = synthetic.EXPERIMENTS
PANELS: tuple[Panel, ...] = synthetic.PANELS + census.PANELS + regpath.PANELS + vit.PANELS + basin.PANELS
TABLES: tuple[Table, ...] = (
    synthetic.TABLES + census.TABLES + regpath.TABLES + lemma1.TABLES + vit.TABLES + basin.TABLES
)
REGPATH_INSTANCES = regpath.REGPATH_INSTANCES

# The config keys the claims read (their notes quote the settings that ran): the claims table depends on these
# only, and the claims rule passes only these (the report's parameter panel, and reruns, follow them).
CLAIMS_CONFIG_KEYS: tuple[tuple[str, ...], ...] = (
    ("synthetic", "fig1"),
    ("synthetic", "fig2"),
    ("plots", "fig3c_iterations"),
    ("plots", "fig4_iterations"),
    ("census", "confidence"),
    ("vit", "model", "num_classes"),
    ("vit", "guard"),
    ("basin", "constant"),
    ("basin", "cone"),
)


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


def family(name: str) -> Family:
    """The registry entry of a family."""
    return _find(FAMILIES, name, "family")


def panels_of(family: str) -> tuple[Panel, ...]:
    """The panels one rule family draws, in registry order."""
    return tuple(p for p in PANELS if p.family == family)


def tables_of(family: str) -> tuple[Table, ...]:
    """The registered tables of one rule family, in registry order."""
    return tuple(t for t in TABLES if t.family == family)


def figures_of(family: str) -> dict[str, list[str]]:
    """Figure target (e.g. ``fig1``) -> its panels, for the panels of one family."""
    figures: dict[str, list[str]] = {}
    for p in panels_of(family):
        figures.setdefault(p.figure, []).append(p.name)
    return figures


def targets() -> dict[str, tuple[list[str], list[str]]]:
    """Every figure target -> (its panels, its tables), in registry order."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    for p in PANELS:
        found.setdefault(p.figure, ([], []))[0].append(p.name)
    for t in TABLES:
        if t.figure:
            found.setdefault(t.figure, ([], []))[1].append(t.name)
    return found


def claim_tables() -> dict[str, tuple[str, ...]]:
    """Claim id -> the tables it reads, in registry order."""
    needs: dict[str, tuple[str, ...]] = {}
    for t in TABLES:
        for claim in t.claims:
            needs[claim] = (*needs.get(claim, ()), t.name)
    return needs


def _figure_numbers(family: str) -> str:
    """The paper's figure numbers a family draws, as ranges: "Figures 1-5, 8" (empty when none)."""
    numbers = sorted({int(m.group(1)) for p in panels_of(family) if (m := re.match(r"Figure (\d+)", p.label))})
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][-1] + 1:
            spans[-1].append(n)
        else:
            spans.append([n])
    text = ", ".join(f"{s[0]}-{s[-1]}" if len(s) > 1 else f"{s[0]}" for s in spans)
    return f"Figures {text}" if len(numbers) > 1 else f"Figure {text}" if numbers else ""


def category(name: str) -> str:
    """The report category of a family: "2 Synthetic (Figures 1-5, 8)"."""
    entry = family(name)
    numbers = _figure_numbers(name)
    return f"{entry.order} {entry.title}" + (f" ({numbers})" if numbers else "")


def caption(name: str, config: Mapping[str, Any]) -> str:
    """The report caption of a synthetic panel, its ``{key}`` fields filled from the settings that were run."""
    entry = panel(name)
    settings = config["synthetic"][experiment(entry.experiment).config]
    text = entry.caption.format(**settings, **config["plots"])
    return f"{text} Numbers: ``tables/{entry.experiment}.csv`` under the results root."


def experiment_settings(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a synthetic experiment's function: its config block, each ``selected_by`` key as
    whether this experiment is listed there."""
    entry = experiment(name)
    block = dict(config["synthetic"][entry.config])
    return {**block, **{key: name in block[key] for key in entry.selected_by}}


def experiment_data(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The data parameters of the data set an experiment runs on (Figure 4 runs on the Figure 1(c) tokens)."""
    return dict(config["synthetic"]["data"].get(experiment(name).instance, {}))


def claims_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``config`` the claims read (:data:`CLAIMS_CONFIG_KEYS`), nested as in the config."""
    subset: dict[str, Any] = {}
    for path in CLAIMS_CONFIG_KEYS:
        value: Any = config
        for key in path:
            value = value[key]
        node = subset
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return subset
