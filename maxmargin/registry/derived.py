"""What is derived from the registry's declarations (:mod:`maxmargin.registry`, plain data): the target graph (each
target's panels, tables and files; a table's files; a panel's inputs), the config a declaration reads (a dotted key's
value, a table's row count, an experiment's block, a panel's options), the report's captions and categories, and its
landing page. The declarations name; this module resolves names to paths, settings and text, in one place.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from typing import Any

from maxmargin.registry import (
    FILES,
    ON_DEMAND,
    PANELS,
    RUN_SENTENCES_FILE,
    TABLES,
    declared_in,
    experiment,
    family,
    file,
    panel,
    panels_of,
    table,
)
from maxmargin.registry.claims import VERDICT_MEANINGS
from maxmargin.registry.reads import read_keys, subset
from maxmargin.registry.synthetic import EXPERIMENT_TABLES
from maxmargin.registry.types import Panel, Table

# Where the report's landing page (workflow/report/workflow.rst) lists the verdicts and sets the settings it states:
# :func:`landing_page`.
VERDICTS_MARK = "{# verdicts #}"
SETTINGS_MARK = "{# settings #}"
# The settings the landing page states, by config block, and the table whose record (the config of the job that made
# it) gives each block's: the last table the block's jobs write, so that the page states what the figures were made
# with, not what the invocation's config asks for.
LANDING_SETTINGS = {
    "census": ("n", "T", "n_trials", "dims", "n_iter", "confidence"),
    "vit": ("model.embed_dim", "model.depth", "model.patch_size", "train.epochs", "data.dataset", "data.fallback"),
}
LANDING_TABLES = {"census": "census_summary", "vit": "vit_metrics"}


def lookup(config: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted config key; through a list of mappings, the list of their values (``recipes.name``)."""
    value: Any = config
    for part in key.split("."):
        value = [item[part] for item in value] if isinstance(value, list) else value[part]
    return value


def table_paths(entry: Table, config: Mapping[str, Any]) -> list[str]:
    """The files of a table under the results root, one per value of its wildcards (from ``entry.values``) and
    per extension."""
    names = re.findall(r"\{(\w+)\}", entry.pattern)
    choices = [[str(v) for v in lookup(config, entry.values[name])] for name in names]
    paths = [entry.pattern.format(**dict(zip(names, combo, strict=True))) for combo in itertools.product(*choices)]
    return [re.sub(r"\.csv$", f".{ext}", path) for path in paths for ext in entry.extensions]


def panel_inputs(name: str) -> list[tuple[str, str]]:
    """The files a panel (not synthetic) draws, as (registry name, path under the results root), in the order its
    drawing function takes them: each table's files (``csv``, then ``json`` ...), then its other files."""
    entry = panel(name)
    found = [(t, path) for t in entry.tables for path in table_paths(table(t), {})]
    return found + [(f, file(f).path) for f in entry.files]


def targets() -> dict[str, tuple[list[str], list[str], list[str]]]:
    """Every target -> (its panels, its tables, its files): a figure's panels, what they draw, and the tables and
    files that name it."""
    found: dict[str, tuple[list[str], list[str], list[str]]] = {}

    def add(target: str, kind: int, name: str) -> None:
        entry = found.setdefault(target, ([], [], []))[kind]
        if name not in entry:
            entry.append(name)

    for p in PANELS:
        add(p.target, 0, p.name)
        suffixes = [suffix for suffix, _, _ in EXPERIMENT_TABLES.values()]
        drawn = [p.experiment + suffix for suffix in suffixes] if p.experiment else p.tables
        for t in drawn:
            add(p.target, 1, t)
        for f in p.files:
            add(p.target, 2, f)
    for t in TABLES:
        if t.target:
            add(t.target, 1, t.name)
    for f in FILES:
        if f.target:
            add(f.target, 2, f.name)
    return found


def table_outputs(entry: Table, config: Mapping[str, Any]) -> list[str]:
    """Every file of a table under the results root: each of its paths and, for a CSV with a sidecar, the sidecar."""
    found = []
    for path in table_paths(entry, config):
        found.append(path)
        if entry.sidecar and path.endswith(".csv"):
            found.append(f"{path}.provenance.json")
    return found


def target_outputs(target: str, config: Mapping[str, Any]) -> list[str]:
    """The files of a target under the results root: its panels, the tables they draw and the tables and files
    that name it."""
    panels, tables, files = targets()[target]
    found = [f"figures/{p}.{ext}" for p in panels for ext in ("pdf", "png")]
    found += [path for name in tables for path in table_outputs(table(name), config)]
    return found + [file(f).path for f in files]


def all_outputs(config: Mapping[str, Any]) -> list[str]:
    """Every output of the default run (rule ``all``) under the results root: every target's but the on-demand
    ones', and every table and file outside them."""
    found = [f for target in targets() if target not in ON_DEMAND for f in target_outputs(target, config)]
    skip = on_demand_only()
    found += [path for entry in TABLES if entry.name not in skip for path in table_outputs(entry, config)]
    found += [f.path for f in FILES if f.name not in skip]
    return list(dict.fromkeys(found))


def on_demand_only() -> set[str]:
    """The tables and files that belong to on-demand targets only (never built by ``all``)."""
    found = targets()
    demand = {name for t in ON_DEMAND for kind in (1, 2) for name in found.get(t, ([], [], []))[kind]}
    wanted = {name for t, entry in found.items() if t not in ON_DEMAND for kind in (1, 2) for name in entry[kind]}
    return demand - wanted


def claim_tables() -> dict[str, tuple[str, ...]]:
    """Claim id -> the tables it reads, in registry order."""
    needs: dict[str, tuple[str, ...]] = {}
    for t in TABLES:
        for claim in t.claims:
            needs[claim] = (*needs.get(claim, ()), t.name)
    return needs


def figures_of(family: str) -> dict[str, list[str]]:
    """Figure target (e.g. ``fig1``) -> its panels, for the panels of one family."""
    figures: dict[str, list[str]] = {}
    for p in panels_of(family):
        figures.setdefault(p.target, []).append(p.name)
    return figures


def every(config: Mapping[str, Any], source: str) -> list[int]:
    """The whole numbers a ``restates`` source ``0..KEY`` or ``0..KEY/STEP`` names: 0 to the value of ``KEY``, every
    ``STEP``-th (the value of the key ``STEP``) and the last."""
    last, _, step = source.partition("/")
    end = int(lookup(config, last))
    return sorted({*range(0, end + 1, int(lookup(config, step)) if step else 1), end})


_FACTOR = re.compile(r"^(?:len\((?P<len>[\w.]+)\)|(?P<int>\d+)|(?P<key>[A-Za-z_][\w.]*))(?:\s*\+\s*(?P<plus>\d+))?$")


def row_count(entry: Table, config: Mapping[str, Any]) -> int | None:
    """The row count of a table that follows from the config: the product of its ``rows`` factors (None: none)."""
    if not entry.rows:
        return None
    total = 1
    for factor in entry.rows:
        m = _FACTOR.match(factor.strip())
        if m is None:
            raise ValueError(f"table {entry.name}: row factor {factor!r} is not n, key, len(key) or those + k")
        if m["len"]:
            value = len(lookup(config, m["len"]))
        else:
            value = int(m["int"]) if m["int"] else int(lookup(config, m["key"]))
        total *= value + int(m["plus"] or 0)
    return total


def _figure_numbers(family: str) -> str:
    """The paper's figure numbers a family draws, as ranges: "Figures 1-5, 8" (empty when none)."""
    numbers = sorted({p.paper_figure for p in panels_of(family) if p.paper_figure is not None})
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


class CaptionError(KeyError):
    """A caption field that the config does not fill; its message names the entry, its registry module and the
    field."""

    def __str__(self) -> str:
        return str(self.args[0])  # a KeyError would print its message quoted


class _RunSentences(dict[str, str]):
    """The ``{run[...]}`` fields of a caption: a sentence the run has not measured says so, it does not fail."""

    def __missing__(self, key: str) -> str:
        return f"(claim ``{key}``: not measured, no ``tables/{RUN_SENTENCES_FILE}`` yet)"


def caption(entry: Panel | Table, config: Mapping[str, Any], run: Mapping[str, str] | None = None) -> str:
    """The report caption of a panel or table, its ``{key}`` fields filled from the settings that were run, and its
    ``{run[claim_id]}`` fields from what the run measured (``run``: :func:`maxmargin.claims.run_sentences`), so that
    a caption states a result only as the run's own numbers and verdict.

    The fields name the config's top-level blocks (``{census[eta]}``), the keys of each block in
    ``caption_blocks`` (``{eta}``), and for a synthetic panel the keys of its experiment's block and of ``plots``.
    A table's caption ends with its columns and what each measures (:func:`column_list`): its own text says nothing
    of them.
    """
    fields: dict[str, Any] = dict(config) | {"run": _RunSentences(run or {})}
    if isinstance(entry, Panel) and entry.experiment:
        fields |= experiment_settings(entry.experiment, config) | config["plots"]
    for block in entry.caption_blocks:
        fields |= lookup(config, block)
    try:
        text = entry.caption.format(**fields)
    except (KeyError, IndexError, AttributeError, ValueError) as err:
        kind = "panel" if isinstance(entry, Panel) else "table"
        raise CaptionError(
            f"{kind} {entry.name!r} ({declared_in(entry)}): its caption's field cannot be filled "
            f"({type(err).__name__}: {err}); a caption's fields are {{block[key]}} for a top-level block of the "
            f"config, {{key}} for a key of its caption_blocks {list(entry.caption_blocks)} (a synthetic panel: of its "
            "experiment's block and of plots) and {run[claim_id]} (CONTRIBUTING.md, 'A caption's fields')"
        ) from None
    if isinstance(entry, Panel) and entry.experiment:
        text += f" Numbers: ``tables/{entry.experiment}.csv`` under the results root."
    if isinstance(entry, Table):  # after format(): a description is not a template
        columns = "Columns:\n\n" + column_list(entry)
        text = f"{text}\n\n{columns}" if text else columns
    return text


def column_list(entry: Table, quote: str = "``") -> str:
    """Every column of a table, in order, with what it measures (:attr:`Column.description`): a list of
    ``- NAME: description`` lines, the names between ``quote`` (reST's double backquote for the report's captions,
    Markdown's single one for the docs' lists, tools/column_docs.py)."""
    return "".join(f"- {quote}{c.name}{quote}: {c.description}\n" for c in entry.columns)


def options(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The config values a panel's drawing function takes (``Panel.options``), by the last part of their key."""
    return {key.rsplit(".", 1)[-1]: lookup(config, key) for key in panel(name).options}


class MissingBlock(KeyError):
    """A config block that a registered entry reads and the config lacks; its message says what to add."""

    def __str__(self) -> str:
        return str(self.args[0])  # a KeyError would print its message quoted


def experiment_settings(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a synthetic experiment's function: its config block (a missing block: a
    :class:`MissingBlock` that names it and says what to add)."""
    block = experiment(name).block
    if block not in config.get("synthetic", {}):
        raise MissingBlock(
            f"synthetic experiment {name!r} (maxmargin/registry/) reads the config block 'synthetic.{block}', "
            f"which this config lacks: add `{block}:` at the end of the `synthetic:` section of "
            "workflow/config/default.yaml, every value commented (eta, n_iter, loss, starts: CONTRIBUTING.md, "
            "'Add a synthetic figure')"
        )
    return dict(config["synthetic"][block])


def experiment_data(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The data parameters of the data set an experiment runs on (Figure 4 runs on the Figure 1(c) tokens)."""
    return dict(config["synthetic"].get("data", {}).get(experiment(name).data, {}))


def claims_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``config`` the claims read (the keys of rule claims_table, :mod:`maxmargin.registry.reads`),
    nested as in the config."""
    return subset(config, read_keys("claims_table"))


def landing_page(
    template: str, config: Mapping[str, Any], recorded: Mapping[str, Mapping[str, Any] | None] | None = None
) -> str:
    """The report's landing page: its template (workflow/report/workflow.rst, Jinja, which Snakemake renders) with
    the settings it states set at :data:`SETTINGS_MARK` and the list of verdicts, one line each, written from
    :data:`VERDICT_MEANINGS` at :data:`VERDICTS_MARK`.

    Each block of :data:`LANDING_SETTINGS` is set (a Jinja variable of the block's name) as ``recorded`` has it
    (block -> the config recorded by the job that made its table, :data:`LANDING_TABLES`; None before a run), else
    as ``config`` (the invocation's) has it. Where they differ, ``settings_note`` says so, naming each key with both
    values; it is empty where they agree."""
    sets, differ = [], []
    for block, keys in LANDING_SETTINGS.items():
        own = {key: lookup(config, f"{block}.{key}") for key in keys}
        made = own
        if recorded and recorded.get(block) is not None:
            try:
                made = {key: lookup(recorded[block], f"{block}.{key}") for key in keys}
            except (KeyError, TypeError, IndexError):
                differ.append(f"the record of {LANDING_TABLES[block]} lacks {block} settings (shown: this config's)")
        differ += [f"{block}.{key} {made[key]} (this config: {own[key]})" for key in keys if made[key] != own[key]]
        sets.append(f"{{%- set {block} = {json.dumps(_nested(made))} -%}}")
    note = (
        f"**Made by other settings than this config's (as this page states them: {'; '.join(differ)}): run the "
        "workflow.** "
        if differ
        else ""
    )
    sets.append(f"{{%- set settings_note = {json.dumps(note)} -%}}")
    verdicts = "\n".join(f"- ``{verdict}``: {meaning}." for verdict, meaning in VERDICT_MEANINGS.items())
    return template.replace(SETTINGS_MARK, "".join(sets)).replace(VERDICTS_MARK, verdicts)


def _nested(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"model.depth": 2}`` as ``{"model": {"depth": 2}}``."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, last = key.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return nested
