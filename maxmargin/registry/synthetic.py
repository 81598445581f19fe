"""The synthetic experiments and their panels (Figures 1-5 and 8; workflow/rules/synthetic.smk)."""

from __future__ import annotations

from maxmargin.registry.columns import cosine, count, flag, label, real, text, unit
from maxmargin.registry.types import Column, Experiment, Panel, Table

EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment("fig1a", "fig1a", "gd_on_p", "fig1"),
    Experiment("fig1b", "fig1b", "gd_on_p", "fig1"),
    Experiment("fig1c", "fig1c", "gd_on_p", "fig1c"),
    Experiment("fig2", "fig1b", "gd_in_lmm_cone", "fig2"),
    Experiment("fig3a", "fig3", "joint_gd_on_v_and_p", "fig3", {"variant": "a"}),
    Experiment("fig3b", "fig3", "joint_gd_on_v_and_p", "fig3", {"variant": "b"}),
    Experiment("fig4", "fig1c", "normalized_vs_constant_gd", "fig4"),
    Experiment("fig5", "fig5", "gd_under_each_loss", "fig5"),
    Experiment("fig8", "fig8", "gd_on_p", "fig8"),
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
        caption="Figure 1(a): " + _FIG1 + " Theorem 2: every start reaches the GMM. This run: {run[gd_gmm_n1]}.",
    ),
    Panel(
        "fig1b",
        "fig1",
        "synthetic",
        "Figure 1(b)",
        "key_plane_gd",
        "(b) Global and local optimal directions",
        experiment="fig1b",
        caption="Figure 1(b): " + _FIG1 + " Theorem 3: the starts closest to the locally-optimal token (1, 0) reach "
        "its LMM, the others the GMM; the legend says where each start went. This run: {run[gd_local_or_global]}.",
    ),
    Panel(
        "fig1c",
        "fig1",
        "synthetic",
        "Figure 1(c)",
        "key_plane_gd_with_hyperplane",
        "(c) Multiple inputs",
        experiment="fig1c",
        caption="Figure 1(c): " + _FIG1 + " Theorem 2 with n = 3 inputs: every start reaches the GMM. This run: "
        "{run[gd_gmm_multi]}.",
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
        "(Theorem 3); normalized GD, eta = {eta:g}, {n_iter} iterations, {loss} loss. This run: {run[gd_lmm_cone]}.",
    ),
    Panel(
        "fig3a",
        "fig3",
        "synthetic",
        "Figure 3(a)",
        "joint_gd",
        "(a) All inputs are support vectors",
        experiment="fig3a",
        caption="Figure 3(a): " + _FIG3 + "every selected token is a support vector, so p_relax = p_mm (Theorem 5). "
        "This run: {run[joint_p_mm]}; {run[fig3_v_mm]}; {run[fig3_p_relax_vs_p_mm]}.",
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
        "p_mm (dotted gray; Theorem 6). This run: {run[joint_p_relax]}.",
    ),
    Panel(
        "fig3c",
        "fig3",
        "synthetic",
        "Figure 3(c)",
        "joint_probabilities",
        "(c) Probability evolutions in (a)",
        experiment="fig3a",
        options=("plots.fig3c_iterations",),
        caption="Figure 3(c): averaged softmax probability of the selected tokens and logistic probability of the "
        "output along the run of Figure 3(a), first {fig3c_iterations} iterations; both reach 1 (attention selects "
        "one token per input; every input is classified). This run: {run[joint_probabilities]}.",
    ),
    Panel(
        "fig4a",
        "fig4",
        "synthetic",
        "Figure 4(a)",
        "softmax_saturation_curves",
        "(a) Evolution of softmax probability",
        experiment="fig4",
        options=("plots.fig4_iterations",),
        caption="Figure 4(a): " + _FIG4 + " This run: {run[normalized_gd_faster]}.",
    ),
    Panel(
        "fig4b",
        "fig4",
        "synthetic",
        "Figure 4(b)",
        "attention_norm_curves",
        "(b) Evolution of attention weights",
        experiment="fig4",
        options=("plots.fig4_iterations",),
        caption="Figure 4(b): " + _FIG4 + " This run: {run[constant_gd_levels_off]}.",
    ),
    Panel(
        "fig5",
        "fig5",
        "synthetic",
        "Figure 5",
        "loss_trajectories",
        "Optimal tokens (1,1) with γ=C and (1,-1) with γ=1",
        experiment="fig5",
        options=("plots.fig5_max_norm",),
        caption="Figure 5: trajectories of p from p(0) = 0 (normalized GD, eta = {eta:g}, {n_iter} iterations, "
        "drawn while ||p|| <= {fig5_max_norm:g}) with optimal-token scores C and 1, under the losses {losses}. The "
        "correlation loss first leans to the high-score token (1, 1), the logistic loss to the low-score token "
        "(1, -1); every run ends on the GMM direction (1, 0) (Theorem 2). This run: {run[loss_transient_bias]}.",
    ),
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
        "the second input has no SVM-neighbour: n = 1 in Theorem 2 is necessary. This run: {run[n1_necessary]}.",
    ),
)

TRAJECTORY: tuple[Column, ...] = (
    text("figure"),
    label("run"),
    label("label"),
    count("iteration"),
    real("p1"),
    real("p2"),
    real("p3", required=False),  # d = 3 only
    real("p_norm", ge=0),
    unit("max_softmax"),
    unit("one_minus_softmax"),
    real("v1", required=False),  # joint GD (Figure 3)
    real("v2", required=False),
    real("logistic_prob", required=False),
    text("loss", required=False),  # one run per loss (Figure 5)
    real("C", required=False),
    real("cone_half_angle_deg", required=False),  # Figure 2
)
TOKENS: tuple[Column, ...] = (
    text("figure"),
    count("input"),
    count("token"),
    real("k1"),
    real("k2"),
    real("score"),
    label("label", nullable=True),
    flag("optimal"),
    real("C", required=False),
)
DIRECTIONS: tuple[Column, ...] = (
    text("figure"),
    text("record", ("direction", "gd_run")),
    text("kind"),
    text("tokens"),
    text("direction"),
    real("norm", ge=0, nullable=True),
    label("run", nullable=True),
    text("start", nullable=True),
    cosine("final_cosine", nullable=True),
    real("p_norm", ge=0, nullable=True),
    real("kkt_residual", ge=0, nullable=True),
)
# The tables whose claims read them (by the experiment's name), and what each claim reads.
_CLAIMS = {
    "fig3a": ("joint_probabilities",),
    "fig4": ("normalized_gd_faster", "constant_gd_levels_off"),
    "fig5": ("loss_transient_bias",),
}

# Every experiment writes three tables (rule synthetic_experiment), registered as <name>, <name>_tokens and
# <name>_directions. Kind (the rule's output name, the field of ExperimentTables, the drawing function's argument, in
# its order) -> (suffix of the table's name, path, columns).
EXPERIMENT_TABLES = {
    "trajectories": ("", "tables/{experiment}.csv", TRAJECTORY),
    "tokens": ("_tokens", "tables/{experiment}_tokens.csv", TOKENS),
    "directions": ("_directions", "runs/{experiment}/directions.csv", DIRECTIONS),
}
TABLES: tuple[Table, ...] = tuple(
    Table(
        e.name + suffix,
        "synthetic",
        columns,
        "synthetic_experiment",
        path=pattern.format(experiment=e.name),
        claims=_CLAIMS.get(e.name + suffix, ()),
    )
    for e in EXPERIMENTS
    for suffix, pattern, columns in EXPERIMENT_TABLES.values()
) + (
    Table(
        "directions",
        "synthetic",
        DIRECTIONS,
        "directions_table",
        label="Directions (Figures 1-3, 5, 8)",
        caption="Every max-margin direction the synthetic experiments compute (GMM, LMM, p_mm, p_relax, v_mm; "
        "``record = direction``, with the norm of the unnormalised SVM solution and its KKT residual) and every "
        "gradient-descent run (``record = gd_run``): where it started (``start``, p(0), or v(0) for the runs of v), "
        "the direction theory predicts for it (``kind``, ``tokens``), its final cosine with that direction and its "
        "final ||p||. Backs the claims of Theorems 2, 3, 5 and 6 that GD converges in direction to these max-margin "
        "solutions.",
        claims=(
            "gd_gmm_n1",
            "gd_gmm_multi",
            "gd_local_or_global",
            "gd_lmm_cone",
            "n1_necessary",
            "joint_p_mm",
            "joint_p_relax",
            "fig3_v_mm",
            "fig3_p_relax_vs_p_mm",
            "basin_fig1b_consistent",
        ),
    ),
)
