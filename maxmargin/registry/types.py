"""The kinds of entries of the figure registry (:mod:`maxmargin.registry`): plain data, no library imported.

Each is declared with keywords only (``Panel(name=..., target=..., draw=...)``): a declaration reads as what it holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Thumbnails of the README gallery are this fraction of their figure's pixels: one scale for every figure, so that
# their text has one size (a fixed width would shrink a six-panel figure's text below reading and enlarge a small
# one's).
GALLERY_SCALE = 0.5


@dataclass(frozen=True, kw_only=True)
class Family:
    """A family of figures and tables: one rule file (workflow/rules/{name}.smk), one report category.

    ``order`` places the category in the report; ``title`` names it (the figure numbers its panels cover are
    appended: :func:`maxmargin.registry.derived.category`).
    """

    name: str
    order: int
    title: str


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """One synthetic computation: a data set, an experiment function, and its block of the config.

    ``name`` is the Snakemake wildcard ``{experiment}`` (results/tables/{name}.csv) and the ``figure`` column of
    its tables. ``data`` names the data set: a function of :mod:`maxmargin.experiments.instances`, called with
    ``data_args`` and the data parameters ``synthetic.data.<data>`` of the config; ``run`` names the function of
    :mod:`maxmargin.experiments.synthetic` that runs it, called with the config block ``synthetic.<block>``.
    """

    name: str
    data: str
    run: str
    block: str
    data_args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Column:
    """One column of a table: its name, its kind (``int``, ``float``, ``str``, ``bool``, ``any``), whether it may be
    empty (NaN) or absent, the values it may take (a range, or a set of strings), and ``description``: what it
    measures, in the paper's terms (``columns.described``), which every column has: its table's report caption lists
    it, a run's JSON records it as the column's convention, and the docs' column lists are written from it.

    A nullable ``int`` column reads back from CSV as floats holding whole numbers; ``any`` holds labels that may read
    back as numbers or strings.
    """

    name: str
    kind: str
    nullable: bool = False
    required: bool = True
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    isin: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class Table:
    """One table: its one declaration, from which its producer takes its columns and its contract is built.

    ``path`` is where it lives under the results root (``{wildcard}`` fields allowed; default
    ``tables/{name}.csv``); ``values`` says where each wildcard's values come from (a dotted config key, through
    lists of mappings too, or ``registry:<list>``), for ``all`` and for matching a path to its table; ``rule``
    writes it. ``rows``: its row count as a product of factors (a whole number, a dotted config key, ``len(key)``,
    each optionally ``+ k``); empty: not fixed by the config. ``label``/``caption``: its name and caption in the
    report (empty label: not in the report); the caption's ``{key}`` fields are filled from the config, and the list
    of its columns with their descriptions is appended (see :func:`maxmargin.registry.derived.caption`): the caption
    itself says what the table is, not what its columns measure. ``claims`` read it; ``target`` is a target it
    belongs to besides the targets of the panels that draw it. ``extensions``: its files (a ViT run's table has a
    JSON sidecar).
    ``restates``: columns that restate a setting, checked on every read against ``{wildcard}`` (the path's), a
    dotted config key (its value, or the set of its list's values), ``0..key`` (every whole number up to it) or
    ``0..key/step`` (every ``step``-th of them and the last).
    ``sidecar``: its provenance record is a declared output beside it (a ViT run's lives in its JSON instead).
    """

    name: str
    family: str
    columns: tuple[Column, ...]
    rule: str
    path: str = ""
    values: Mapping[str, str] = field(default_factory=dict)
    rows: tuple[str, ...] = ()
    label: str = ""
    caption: str = ""
    caption_blocks: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    target: str = ""
    extensions: tuple[str, ...] = ("csv",)
    restates: Mapping[str, str] = field(default_factory=dict)
    sidecar: bool = True

    @property
    def pattern(self) -> str:
        """Its path under the results root, ``{wildcard}`` fields left in."""
        return self.path or f"tables/{self.name}.csv"

    @property
    def column_names(self) -> list[str]:
        """Its columns in order: what its producer writes."""
        return [c.name for c in self.columns]


@dataclass(frozen=True, kw_only=True)
class File:
    """An output that is not a table (arrays, a manifest): its path under the results root, the rule writing it,
    the ``target`` it belongs to besides ``all``, and ``record``: the key of its run's JSON that holds its sha256
    (read against it), where it has no sidecar of its own."""

    name: str
    family: str
    path: str
    rule: str
    target: str = ""
    record: str = ""


@dataclass(frozen=True, kw_only=True)
class Panel:
    """One figure file, results/figures/{name}.{pdf,png}.

    ``target`` is the target it belongs to (``snakemake fig1``), ``family`` the rule file that draws it, ``label``
    its report name, ``draw`` its drawing function in ``maxmargin.figures.<family>``. Synthetic panels name the
    ``experiment`` whose three tables they draw and a ``title`` drawn above the axes; the other panels draw the
    registered ``tables`` (and ``files``), in that order. ``options``: the dotted config keys the drawing function
    takes as keyword arguments (their last part is the argument's name): a job gets only the keys it reads.
    ``caption``: its report caption, whose ``{key}`` fields are filled from the config blocks ``caption_blocks``
    (and the whole config by its top-level names; :func:`maxmargin.registry.derived.caption`). ``subcategory``: its
    group in the report (default: :attr:`figure_label`). A panel of the default run is in the README gallery
    (:data:`maxmargin.registry.GALLERY`).
    """

    name: str
    target: str
    family: str
    label: str
    draw: str
    title: str = ""
    experiment: str = ""
    tables: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    caption: str = ""
    caption_blocks: tuple[str, ...] = ()
    subcategory: str = ""

    @property
    def paper_figure(self) -> int | None:
        """The number N of the paper's figure this is a panel of: a label "Figure N..." with the target ``figN``;
        None for a panel beyond the paper, whatever its label says ("Figure 1(a) data, new starts" of target
        ``circle``)."""
        number = re.match(r"Figure (\d+)\b", self.label)
        return int(number[1]) if number and self.target == f"fig{number[1]}" else None

    @property
    def figure_label(self) -> str:
        """Its report subcategory: ``subcategory``, else its label up to the first "(" ("Figure 1(a)" and "Figure
        1(b)" form "Figure 1"); a label starting "Figure" of a panel beyond the paper forms a group of its own."""
        if self.subcategory:
            return self.subcategory
        name = self.label.split("(")[0].rstrip()
        return self.label if name.startswith("Figure") and self.paper_figure is None else name
