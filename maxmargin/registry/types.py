"""The kinds of entries of the figure registry (:mod:`maxmargin.registry`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Family:
    """A family of figures and tables: one rule file (workflow/rules/{name}.smk), one report category.

    ``title`` names the category; the figure numbers its panels cover are appended by :func:`category`.
    """

    name: str
    order: int
    title: str


@dataclass(frozen=True)
class Experiment:
    """One synthetic computation: a data set, an experiment function, and its block of the config.

    ``name`` is the Snakemake wildcard ``{experiment}`` (results/tables/{name}.csv) and the ``figure`` column of
    its tables. ``instance`` names a function of :mod:`maxmargin.experiments.instances`, called with
    ``instance_args`` and the data parameters ``synthetic.data.<instance>`` of the config; ``function`` names a
    function of :mod:`maxmargin.experiments.synthetic`, called with the config block ``synthetic.<config>``. A key
    listed in ``selected_by`` holds a list of experiment names in that block: the function gets ``True`` for it
    when this experiment is listed (:func:`experiment_settings`).
    """

    name: str
    instance: str
    function: str
    config: str
    instance_args: Mapping[str, Any] = field(default_factory=dict)
    selected_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Panel:
    """One figure file, results/figures/{name}.{pdf,png}.

    ``figure`` is the target it belongs to (``snakemake fig1``), ``family`` the rule file that draws it, ``label``
    its report name, ``function`` its drawing function in ``maxmargin.figures.<family>``. Synthetic panels name the
    ``experiment`` whose three tables they draw, a ``title`` drawn above the axes and a report ``caption`` whose
    ``{key}`` fields are filled from the experiment's config block and the ``plots`` block; the other panels draw
    the registered ``tables`` and take their caption from workflow/report/{family}.rst. ``gallery``: shown in the
    README gallery (docs/gallery/{name}.png, ``gallery_width`` pixels wide; set it once its thumbnail is
    committed: ``snakemake docs/gallery/{name}.png``).
    """

    name: str
    figure: str
    family: str
    label: str
    function: str
    title: str = ""
    experiment: str = ""
    caption: str = ""
    tables: tuple[str, ...] = ()
    gallery: bool = False
    gallery_width: int = 480

    @property
    def figure_label(self) -> str:
        """The figure's name without the panel letter ("Figure 1" for "Figure 1(a)"): its report subcategory.

        The report lists subcategories in text order, where "Figure 10" precedes "Figure 9"; a one-digit number is
        padded with a figure space (U+2007, the width of a digit, sorted before digits) so they list in numeric order.
        """
        name, _, number = self.label.split("(")[0].rstrip().rpartition(" ")
        return f"{name} {number:\u2007>2}" if number.isdigit() else self.label.split("(")[0].rstrip()


@dataclass(frozen=True)
class Table:
    """One table, results/tables/{name}.{ext} for each of ``extensions``.

    ``label`` names it in the report (empty: not in the report), ``caption`` is its file in workflow/report/,
    ``claims`` the claims (:mod:`maxmargin.claims`) that read it, ``figure`` the target it also belongs to.
    """

    name: str
    family: str
    label: str = ""
    caption: str = ""
    claims: tuple[str, ...] = ()
    figure: str = ""
    extensions: tuple[str, ...] = ("csv",)
