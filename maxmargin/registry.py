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
        """The figure's name without the panel letter ("Figure 1" for "Figure 1(a)"): its report subcategory."""
        return self.label.split("(")[0].rstrip()


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


FAMILIES: tuple[Family, ...] = (
    Family("claims", 1, "Claims"),
    Family("synthetic", 2, "Synthetic"),
    Family("census", 3, "Census"),
    Family("regpath", 4, "Regularization paths and Lemma 1"),
    Family("lemma1", 4, "Regularization paths and Lemma 1"),
    Family("vit", 5, "ViT"),
)

# Figure targets kept off `all` (minutes of compute each), run by their own target.
ON_DEMAND: tuple[str, ...] = ("census_grid", "vit_recipes")

EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("fig1a", "fig1a", "gd_on_p_from_starts", "fig1", selected_by=("on_circle",)),
    Experiment("fig1b", "fig1b", "gd_on_p_from_starts", "fig1", selected_by=("on_circle",)),
    Experiment("fig1c", "fig1c", "gd_on_p_from_starts", "fig1", selected_by=("on_circle",)),
    Experiment("fig2", "fig1b", "gd_in_lmm_cone", "fig2"),
    Experiment("fig3a", "fig3", "joint_gd_on_v_and_p", "fig3", {"variant": "a"}),
    Experiment("fig3b", "fig3", "joint_gd_on_v_and_p", "fig3", {"variant": "b"}),
    Experiment("fig4", "fig1c", "normalized_vs_constant_gd", "fig4"),
    Experiment("fig5", "fig5", "gd_under_each_loss", "fig5"),
    Experiment("fig8", "fig8", "gd_on_p_given_starts", "fig8"),
)

_FIG1 = (
    "normalized gradient descent (eta = {eta:g}, {n_iter} iterations, {loss} loss) on the attention weights p from "
    "several starts, drawn in the key plane with the tokens (stars: optimal tokens). Dashed red: the GMM direction; "
    "dashed blue: LMM directions."
)
_FIG3 = (
    "joint normalized GD (eta = {eta:g}, {n_iter} iterations, {loss} loss) on the head v (blue) and the attention "
    "weights p (red). v converges to v_mm (sklearn SVM) and p to p_relax of eq. (10); "
)
_FIG4 = (
    "normalized GD (eta = {eta_normalized:g}) vs constant-step GD (eta = {eta_constant:g}) on the Figure 1(c) data, "
    "first {fig4_iterations} iterations: normalized GD saturates the softmax faster while constant-step GD's ||p|| "
    "levels off (vanishing gradients)."
)

PANELS: tuple[Panel, ...] = (
    Panel(
        "fig1a",
        "fig1",
        "synthetic",
        "Figure 1(a)",
        "key_plane_gd",
        "(a) Global convergence",
        experiment="fig1a",
        caption="Figure 1(a): " + _FIG1 + " Backs Theorem 2: every start reaches the GMM.",
        gallery=True,
    ),
    Panel(
        "fig1b",
        "fig1",
        "synthetic",
        "Figure 1(b)",
        "key_plane_gd",
        "(b) Global and local optimal directions",
        experiment="fig1b",
        caption="Figure 1(b): " + _FIG1 + " Backs Theorem 3: the starts closest to the locally-optimal token (1, 0) "
        "reach its LMM, the others the GMM; the legend says where each start went.",
        gallery=True,
    ),
    Panel(
        "fig1c",
        "fig1",
        "synthetic",
        "Figure 1(c)",
        "key_plane_gd_with_hyperplane",
        "(c) Multiple inputs",
        experiment="fig1c",
        caption="Figure 1(c): " + _FIG1 + " Backs Theorem 2 with n = 3 inputs: every start reaches the GMM.",
        gallery=True,
    ),
    Panel(
        "fig2",
        "fig2",
        "synthetic",
        "Figure 2",
        "lmm_cone",
        "GD started inside the cone of an LMM",
        experiment="fig2",
        caption="Figure 2: starts inside the cone of half-angle {half_angle_deg:g} degrees at radius "
        "{start_radius:g} around the LMM direction of the Figure 1(b) instance all converge to that LMM "
        "(Theorem 3); normalized GD, eta = {eta:g}, {n_iter} iterations, {loss} loss.",
        gallery=True,
    ),
    Panel(
        "fig3a",
        "fig3",
        "synthetic",
        "Figure 3(a)",
        "joint_gd",
        "(a) All inputs are support vectors",
        experiment="fig3a",
        caption="Figure 3(a): " + _FIG3 + "every selected token is a support vector, so p_relax = p_mm (Theorem 5).",
        gallery=True,
    ),
    Panel(
        "fig3b",
        "fig3",
        "synthetic",
        "Figure 3(b)",
        "joint_gd",
        "(b) (0.5,1.5) is not a support vector",
        experiment="fig3b",
        caption="Figure 3(b): " + _FIG3 + "the yellow input is not a support vector and p_relax differs from "
        "p_mm (dotted gray; Theorem 6).",
        gallery=True,
    ),
    Panel(
        "fig3c",
        "fig3",
        "synthetic",
        "Figure 3(c)",
        "joint_probabilities",
        "(c) Probability evolutions in (a)",
        experiment="fig3a",
        caption="Figure 3(c): averaged softmax probability of the selected tokens and logistic probability of the "
        "output along the run of Figure 3(a), first {fig3c_iterations} iterations; both reach 1 (attention selects "
        "one token per input; every input is classified).",
        gallery=True,
    ),
    Panel(
        "fig4a",
        "fig4",
        "synthetic",
        "Figure 4(a)",
        "softmax_saturation_curves",
        "(a) Evolution of softmax probability",
        experiment="fig4",
        caption="Figure 4(a): " + _FIG4,
        gallery=True,
    ),
    Panel(
        "fig4b",
        "fig4",
        "synthetic",
        "Figure 4(b)",
        "attention_norm_curves",
        "(b) Evolution of attention weights",
        experiment="fig4",
        caption="Figure 4(b): " + _FIG4,
        gallery=True,
    ),
    Panel(
        "fig5",
        "fig5",
        "synthetic",
        "Figure 5",
        "loss_trajectories",
        "Optimal tokens (1,1) with γ=C and (1,-1) with γ=1",
        experiment="fig5",
        caption="Figure 5: trajectories of p from p(0) = 0 (normalized GD, eta = {eta:g}, {n_iter} iterations, "
        "drawn while ||p|| <= {fig5_max_norm:g}) with optimal-token scores C and 1, under the losses {losses}. The "
        "correlation loss first leans to the high-score token (1, 1), the logistic loss to the low-score token "
        "(1, -1); every run ends on the GMM direction (1, 0) (Theorem 2).",
        gallery=True,
    ),
    Panel("fig6", "fig6", "vit", "Figure 6", "draw_figure6", gallery=True),
    Panel("fig7", "fig7", "vit", "Figure 7", "draw_figure7", gallery=True),
    Panel(
        "fig8",
        "fig8",
        "synthetic",
        "Figure 8",
        "key_plane_gd_by_input",
        "GD reaches the GMM or an LMM (n = T = d = 2)",
        experiment="fig8",
        caption="Figure 8: n = T = d = 2; normalized GD (eta = {eta:g}, {n_iter} iterations, {loss} loss) from "
        "two starts converges to two different directions, the GMM (red) and an LMM (blue) whose selected token of "
        "the second input has no SVM-neighbour. Shows that n = 1 in Theorem 2 is necessary.",
        gallery=True,
    ),
    Panel("fig9a", "fig9", "census", "Figure 9(a)", "fig9a", tables=("census_summary",), gallery=True),
    Panel("fig9b", "fig9", "census", "Figure 9(b)", "fig9b", tables=("fig9b",), gallery=True),
    Panel("fig10", "fig10", "census", "Figure 10", "fig10", tables=("fig9b",), gallery=True),
    Panel(
        "census_budget",
        "census_budget",
        "census",
        "Iteration budget",
        "census_budget",
        tables=("census_budget",),
    ),
    Panel("census_grid", "census_grid", "census", "Phase diagram", "census_grid", tables=("census_grid",)),
    Panel(
        "regpath",
        "regpath",
        "regpath",
        "Regularization paths",
        "draw_regpath",
        tables=("regpath", "regpath_compare"),
        gallery=True,
    ),
    Panel("vit_recipes", "vit_recipes", "vit", "ViT recipe study", "draw_recipes", gallery_width=1200, gallery=True),
)

TABLES: tuple[Table, ...] = (
    Table(
        "directions",
        "synthetic",
        "Directions (Figures 1-3, 5, 8)",
        "directions.rst",
        claims=("gd_gmm_n1", "gd_local_or_global", "gd_lmm_cone", "n1_necessary", "joint_p_mm", "joint_p_relax"),
    ),
    Table("fig3a", "synthetic", claims=("joint_probabilities",)),
    Table("fig4", "synthetic", claims=("normalized_gd_faster", "constant_gd_levels_off")),
    Table("fig5", "synthetic", claims=("loss_transient_bias",)),
    Table(
        "census_trials",
        "census",
        "census trials",
        "census_trials.rst",
        claims=("census_mean_corr", "census_gap_negative"),
    ),
    Table(
        "census_summary",
        "census",
        "census summary",
        "census_summary.rst",
        claims=(
            "census_mean_corr",
            "census_gap_negative",
            "census_gmm_grows",
            "census_small_d",
            "census_lmm",
        ),
    ),
    Table("fig9b", "census", "Figure 9(b), 10", "census_summary.rst"),
    Table(
        "census_budget",
        "census",
        "census budget",
        "census_summary.rst",
        claims=("census_budget",),
        figure="census_budget",
    ),
    Table("census_grid", "census", "census grid", "census_summary.rst", figure="census_grid"),
    Table(
        "regpath",
        "regpath",
        "Regularization paths",
        "regpath.rst",
        claims=("regpath_gmm", "regpath_joint_a", "regpath_joint_b"),
        figure="regpath",
    ),
    Table(
        "regpath_compare",
        "regpath",
        "Regularization paths: GD and local optima",
        "regpath.rst",
        figure="regpath",
    ),
    Table("lemma1", "lemma1", "Lemma 1", "lemma1.rst", claims=("lemma1",), figure="lemma1"),
    Table("vit_metrics", "vit", claims=("vit_sparsity", "vit_learns"), extensions=("csv", "json")),
    Table("vit_recipes", "vit", figure="vit_recipes"),
)

# Instances of the regularization-path study (the wildcard {regpath_instance}): Theorem 1 on the Fig. 1(b) data,
# Theorems 5-6 on the Fig. 3(a)/(b) data; the config's regpath.instances picks among them.
REGPATH_INSTANCES: tuple[str, ...] = ("fig1b", "fig3a", "fig3b")


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
