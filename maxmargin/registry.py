"""The figure registry: every figure panel of the pipeline, and every synthetic experiment behind one.

This table is the one list from which the rest is derived: the Snakemake rule lists and the per-figure targets
(workflow/rules/common.smk, synthetic.smk), ``EXPERIMENTS`` in :mod:`maxmargin.experiments.synthetic`, ``PANELS``
in :mod:`maxmargin.figures.synthetic`, the gallery (workflow/rules/claims.smk), the report captions and the test
lists. It is plain data (function names as strings), so that importing it costs nothing and it sits below the
library in the import graph; tests/test_workflow_synthetic.py checks that every name resolves and that nothing
is left unregistered. CONTRIBUTING.md says how to add a figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Experiment:
    """One synthetic computation: a data set, an experiment function, and its block of the config.

    ``name`` is the Snakemake wildcard ``{experiment}`` (results/tables/{name}.csv) and the ``figure`` column of
    its tables. ``instance`` names a function of :mod:`maxmargin.experiments.instances`, called with
    ``instance_args`` and the data parameters ``synthetic.data.<instance>`` of the config; ``function`` names a
    function of :mod:`maxmargin.experiments.synthetic`, called with the config block ``synthetic.<config>``.
    """

    name: str
    instance: str
    function: str
    config: str
    instance_args: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Panel:
    """One figure file, results/figures/{name}.{pdf,png}.

    ``family`` is the rule file that draws it; ``label`` names it in the report. Synthetic panels have a
    ``title`` drawn above the axes, name the ``experiment`` whose tables they draw,
    their ``function`` in :mod:`maxmargin.figures.synthetic` and a report ``caption`` whose ``{key}`` fields are
    filled from the experiment's config block and the ``plots`` block. ``gallery``: shown in the README gallery
    (docs/gallery/{name}.png, ``gallery_width`` pixels wide).
    """

    name: str
    figure: str
    family: str
    label: str
    title: str = ""
    experiment: str = ""
    function: str = ""
    caption: str = ""
    gallery: bool = True
    gallery_width: int = 480

    @property
    def figure_label(self) -> str:
        """The figure's name without the panel letter ("Figure 1" for "Figure 1(a)"): its report subcategory.

        The report lists subcategories in text order, where "Figure 10" precedes "Figure 9"; a one-digit number is
        padded with a figure space (U+2007, the width of a digit, sorted before digits) so they list in numeric order.
        """
        name, _, number = self.label.split("(")[0].rstrip().rpartition(" ")
        return f"{name} {number:\u2007>2}" if number.isdigit() else self.label.split("(")[0].rstrip()


EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("fig1a", "fig1a", "gd_on_p_from_starts", "fig1"),
    Experiment("fig1b", "fig1b", "gd_on_p_from_starts", "fig1"),
    Experiment("fig1c", "fig1c", "gd_on_p_from_starts", "fig1"),
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
        "(a) Global convergence",
        experiment="fig1a",
        function="key_plane_gd",
        caption="Figure 1(a): " + _FIG1 + " Backs Theorem 2: every start reaches the GMM.",
    ),
    Panel(
        "fig1b",
        "fig1",
        "synthetic",
        "Figure 1(b)",
        "(b) Global and local optimal directions",
        experiment="fig1b",
        function="key_plane_gd",
        caption="Figure 1(b): " + _FIG1 + " Backs Theorem 3: the starts closest to the locally-optimal token (1, 0) "
        "reach its LMM, the others the GMM; the legend says where each start went.",
    ),
    Panel(
        "fig1c",
        "fig1",
        "synthetic",
        "Figure 1(c)",
        "(c) Multiple inputs",
        experiment="fig1c",
        function="key_plane_gd_with_hyperplane",
        caption="Figure 1(c): " + _FIG1 + " Backs Theorem 2 with n = 3 inputs: every start reaches the GMM.",
    ),
    Panel(
        "fig2",
        "fig2",
        "synthetic",
        "Figure 2",
        "GD started inside the cone of an LMM",
        experiment="fig2",
        function="lmm_cone",
        caption="Figure 2: starts inside the cone of half-angle {half_angle_deg:g} degrees at radius "
        "{start_radius:g} around the LMM direction of the Figure 1(b) instance all converge to that LMM "
        "(Theorem 3); normalized GD, eta = {eta:g}, {n_iter} iterations, {loss} loss.",
    ),
    Panel(
        "fig3a",
        "fig3",
        "synthetic",
        "Figure 3(a)",
        "(a) All inputs are support vectors",
        experiment="fig3a",
        function="joint_gd",
        caption="Figure 3(a): " + _FIG3 + "every selected token is a support vector, so p_relax = p_mm (Theorem 5).",
    ),
    Panel(
        "fig3b",
        "fig3",
        "synthetic",
        "Figure 3(b)",
        "(b) (0.5,1.5) is not a support vector",
        experiment="fig3b",
        function="joint_gd",
        caption="Figure 3(b): " + _FIG3 + "the yellow input is not a support vector and p_relax differs from "
        "p_mm (dotted gray; Theorem 6).",
    ),
    Panel(
        "fig3c",
        "fig3",
        "synthetic",
        "Figure 3(c)",
        "(c) Probability evolutions in (a)",
        experiment="fig3a",
        function="joint_probabilities",
        caption="Figure 3(c): averaged softmax probability of the selected tokens and logistic probability of the "
        "output along the run of Figure 3(a), first {fig3c_iterations} iterations; both reach 1 (attention selects "
        "one token per input; every input is classified).",
    ),
    Panel(
        "fig4a",
        "fig4",
        "synthetic",
        "Figure 4(a)",
        "(a) Evolution of softmax probability",
        experiment="fig4",
        function="softmax_saturation_curves",
        caption="Figure 4(a): " + _FIG4,
    ),
    Panel(
        "fig4b",
        "fig4",
        "synthetic",
        "Figure 4(b)",
        "(b) Evolution of attention weights",
        experiment="fig4",
        function="attention_norm_curves",
        caption="Figure 4(b): " + _FIG4,
    ),
    Panel(
        "fig5",
        "fig5",
        "synthetic",
        "Figure 5",
        "Optimal tokens (1,1) with γ=C and (1,-1) with γ=1",
        experiment="fig5",
        function="loss_trajectories",
        caption="Figure 5: trajectories of p from p(0) = 0 (normalized GD, eta = {eta:g}, {n_iter} iterations, "
        "drawn while ||p|| <= {fig5_max_norm:g}) with optimal-token scores C and 1, under the losses {losses}. The "
        "correlation loss first leans to the high-score token (1, 1), the logistic loss to the low-score token "
        "(1, -1); every run ends on the GMM direction (1, 0) (Theorem 2).",
    ),
    Panel("fig6", "fig6", "vit", "Figure 6"),
    Panel("fig7", "fig7", "vit", "Figure 7"),
    Panel(
        "fig8",
        "fig8",
        "synthetic",
        "Figure 8",
        "GD reaches the GMM or an LMM (n = T = d = 2)",
        experiment="fig8",
        function="key_plane_gd_by_input",
        caption="Figure 8: n = T = d = 2; normalized GD (eta = {eta:g}, {n_iter} iterations, {loss} loss) from "
        "two starts converges to two different directions, the GMM (red) and an LMM (blue) whose selected token of "
        "the second input has no SVM-neighbour. Shows that n = 1 in Theorem 2 is necessary.",
    ),
    Panel("fig9a", "fig9", "census", "Figure 9(a)"),
    Panel("fig9b", "fig9", "census", "Figure 9(b)"),
    Panel("fig10", "fig10", "census", "Figure 10"),
    Panel("census_budget", "census_budget", "census", "Iteration budget", gallery=False),
    Panel("census_grid", "census_grid", "census", "Phase diagram", gallery=False),
    Panel("regpath", "regpath", "regpath", "Regularization paths"),
    Panel("vit_recipes", "vit_recipes", "vit", "ViT recipe study", gallery_width=1200),
    Panel("basin", "basin", "basin", "Basins of attraction (Theorem 3)", gallery=False),
)


def experiment(name: str) -> Experiment:
    """The registry entry of a synthetic experiment."""
    found = [e for e in EXPERIMENTS if e.name == name]
    if not found:
        raise ValueError(f"unknown experiment {name!r}; registered: {', '.join(e.name for e in EXPERIMENTS)}")
    return found[0]


def panel(name: str) -> Panel:
    """The registry entry of a figure panel."""
    found = [p for p in PANELS if p.name == name]
    if not found:
        raise ValueError(f"unknown panel {name!r}; registered: {', '.join(p.name for p in PANELS)}")
    return found[0]


def panels_of(family: str) -> tuple[Panel, ...]:
    """The panels one rule family draws, in registry order."""
    return tuple(p for p in PANELS if p.family == family)


def figures_of(family: str) -> dict[str, list[str]]:
    """Figure target (e.g. ``fig1``) -> its panels, for the panels of one family."""
    figures: dict[str, list[str]] = {}
    for p in panels_of(family):
        figures.setdefault(p.figure, []).append(p.name)
    return figures


def caption(name: str, config: Mapping[str, Any]) -> str:
    """The report caption of a synthetic panel, its ``{key}`` fields filled from the settings that were run."""
    entry = panel(name)
    settings = config["synthetic"][experiment(entry.experiment).config]
    text = entry.caption.format(**settings, **config["plots"])
    return f"{text} Numbers: ``tables/{entry.experiment}.csv`` under the results root."
