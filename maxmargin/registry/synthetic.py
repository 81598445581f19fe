"""The synthetic experiments and their panels (Figures 1-5 and 8; workflow/rules/synthetic.smk)."""

from __future__ import annotations

from maxmargin.registry.columns import cosine, count, described, flag, label, real, text, unit
from maxmargin.registry.types import Column, Experiment, Panel, Table

EXPERIMENTS: tuple[Experiment, ...] = (
    Experiment(name="fig1a", data="fig1a", run="gd_on_p", block="fig1"),
    Experiment(name="fig1b", data="fig1b", run="gd_on_p", block="fig1"),
    Experiment(name="fig1c", data="fig1c", run="gd_on_p", block="fig1c"),
    Experiment(name="fig2", data="fig1b", run="gd_in_lmm_cone", block="fig2"),
    Experiment(name="fig3a", data="fig3", run="joint_gd_on_v_and_p", block="fig3", data_args={"variant": "a"}),
    Experiment(name="fig3b", data="fig3", run="joint_gd_on_v_and_p", block="fig3", data_args={"variant": "b"}),
    Experiment(name="fig4", data="fig1c", run="normalized_vs_constant_gd", block="fig4"),
    Experiment(name="fig5", data="fig5", run="gd_under_each_loss", block="fig5"),
    Experiment(name="fig8", data="fig8", run="gd_on_p", block="fig8"),
)

_FIG1 = (
    "normalized gradient descent (eta = {eta:g}, {n_iter} iterations, {loss} loss) on the attention weights p from "
    "several starts, drawn in the key plane with the tokens (stars: optimal tokens). Dashed red: the GMM direction."
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
        name="fig1a",
        target="fig1",
        family="synthetic",
        label="Figure 1(a)",
        draw="key_plane_gd",
        title="(a) Global convergence",
        experiment="fig1a",
        caption="Figure 1(a): " + _FIG1 + " Theorem 2 (n = 1): every start converges in direction to the GMM. This "
        "run: {run[gd_gmm_n1]}. Section 2 adds that the correlation of p(t) with the GMM direction consistently "
        "increases along each path; measured along the paths of this panel (its right-hand angle plot): "
        "{run[gd_corr_increases]}.",
    ),
    Panel(
        name="fig1b",
        target="fig1",
        family="synthetic",
        label="Figure 1(b)",
        draw="key_plane_gd",
        title="(b) Global and local optimal directions",
        experiment="fig1b",
        caption="Figure 1(b): " + _FIG1 + " Dashed blue: the LMM direction. Theorem 3 states that GD started "
        "inside a cone C_{{mu,R}} around an LMM direction, far enough from the origin, converges in direction to "
        "that LMM; it does not say which of these "
        "starts lie in such a cone. Where each start on the p_2 axis went, as this run measured it (the legend says "
        "it too): {run[gd_local_or_global]}. The basin map (target basin, beyond the paper) labels every start of "
        "the plane: {run[basin_fig1b_consistent]}.",
    ),
    Panel(
        name="fig1c",
        target="fig1",
        family="synthetic",
        label="Figure 1(c)",
        draw="key_plane_gd_with_hyperplane",
        title="(c) Multiple inputs",
        experiment="fig1c",
        caption="Figure 1(c): " + _FIG1 + " With several inputs, beyond Theorem 2's directional statement (n = 1; "
        "Figure 8 shows that it can fail for n = 2), the panel illustrates GD converging in direction to the GMM "
        "from various starts (Section 2). This run: {run[gd_gmm_multi]}.",
    ),
    Panel(
        name="fig2",
        target="fig2",
        family="synthetic",
        label="Figure 2",
        draw="lmm_cone",
        title="GD started inside the cone of an LMM",
        experiment="fig2",
        caption="Figure 2: starts inside the cone of half-angle {half_angle_deg:g} degrees at radius "
        "{start_radius:g} around the LMM direction of the Figure 1(b) instance all converge to that LMM "
        "(Theorem 3); normalized GD, eta = {eta:g}, {n_iter} iterations, {loss} loss. This run: {run[gd_lmm_cone]}.",
    ),
    Panel(
        name="fig3a",
        target="fig3",
        family="synthetic",
        label="Figure 3(a)",
        draw="joint_gd",
        title="(a) All inputs are support vectors",
        experiment="fig3a",
        caption="Figure 3(a): " + _FIG3 + "every selected token is a support vector, so p_relax = p_mm (Theorem 5). "
        "This run: {run[joint_p_mm]}; {run[fig3_v_mm]}; {run[fig3_p_relax_vs_p_mm]}.",
    ),
    Panel(
        name="fig3b",
        target="fig3",
        family="synthetic",
        label="Figure 3(b)",
        draw="joint_gd",
        title="(b) (0.5,1.5) is not a support vector",
        experiment="fig3b",
        caption="Figure 3(b): " + _FIG3 + "the yellow input is not a support vector and p_relax differs from "
        "p_mm (dotted gray; Theorem 6). This run: {run[joint_p_relax]}.",
    ),
    Panel(
        name="fig3c",
        target="fig3",
        family="synthetic",
        label="Figure 3(c)",
        draw="joint_probabilities",
        title="(c) Probability evolutions in (a)",
        experiment="fig3a",
        options=("plots.fig3c_iterations",),
        caption="Figure 3(c): averaged softmax probability of the selected tokens and logistic probability of the "
        "output along the run of Figure 3(a), first {fig3c_iterations} iterations; both reach 1 (attention selects "
        "one token per input; every input is classified). This run: {run[joint_probabilities]}.",
    ),
    Panel(
        name="fig4a",
        target="fig4",
        family="synthetic",
        label="Figure 4(a)",
        draw="softmax_saturation_curves",
        title="(a) Evolution of softmax probability",
        experiment="fig4",
        options=("plots.fig4_iterations",),
        caption="Figure 4(a): " + _FIG4 + " This run, over all {n_iter} iterations (the panel draws the first "
        "{fig4_iterations}): {run[normalized_gd_faster]}.",
    ),
    Panel(
        name="fig4b",
        target="fig4",
        family="synthetic",
        label="Figure 4(b)",
        draw="attention_norm_curves",
        title="(b) Evolution of attention weights",
        experiment="fig4",
        options=("plots.fig4_iterations",),
        caption="Figure 4(b): " + _FIG4 + " This run: {run[constant_gd_levels_off]}.",
    ),
    Panel(
        name="fig5",
        target="fig5",
        family="synthetic",
        label="Figure 5",
        draw="loss_trajectories",
        title="Optimal tokens (1,1) with γ=C and (1,-1) with γ=1",
        experiment="fig5",
        options=("plots.fig5_max_norm",),
        caption="Figure 5: trajectories of p from p(0) = 0 (normalized GD, eta = {eta:g}, {n_iter} iterations, "
        "drawn while ||p|| <= {fig5_max_norm:g}) on two inputs whose optimal tokens score C and 1, under the losses "
        "{losses}: the transient bias of Section 4, where the correlation loss first leans to the high-score token "
        "(1, 1) and the logistic loss to the low-score token (1, -1). This run: {run[loss_transient_bias]}. With two "
        "inputs the panel illustrates, beyond Theorem 2's n = 1, that the limit direction is the GMM's whatever the "
        "loss and C; measured over every run: {run[loss_gmm_limit]}.",
    ),
    Panel(
        name="fig8",
        target="fig8",
        family="synthetic",
        label="Figure 8",
        draw="key_plane_gd_by_input",
        title="GD reaches the GMM or an LMM (n = T = d = 2)",
        experiment="fig8",
        caption="Figure 8: n = T = d = 2; normalized GD (eta = {eta:g}, {n_iter} iterations, {loss} loss) from "
        "two starts converges to two different directions, the GMM (red) and an LMM (blue) whose selected token of "
        "the second input has no SVM-neighbour: n = 1 in Theorem 2 is necessary. This run: {run[n1_necessary]}.",
    ),
)

_FIGURE = described(text("figure"), "the experiment the row belongs to (its name in the registry: fig1a, fig2, ...)")
_C = described(real("C", required=False), "the score C of the optimal token (1, 1) (Figure 5 only)")
_DIRECTION_ONLY = "empty on a run's row"
_RUN_ONLY = "empty on a direction's row"
TRAJECTORY: tuple[Column, ...] = (
    _FIGURE,
    described(label("run"), "index of the run within the experiment (Figure 5: within its loss)"),
    described(label("label"), "the run's legend label: its start, its GD variant and step, or its loss and C"),
    described(count("iteration"), "iteration t of GD (every one at first, then log-spaced up to the last)"),
    described(real("p1"), "p(t)_1, the first coordinate of the attention weights (the key plane's horizontal axis)"),
    described(real("p2"), "p(t)_2 (the key plane's vertical axis)"),
    described(
        real("p3", required=False),
        "p(t)_3, where d = 3 (the axis of the tokens' scores, which W = diag(1, 1, 0) keeps out of the keys)",
    ),
    described(real("p_norm", ge=0), "||p(t)||"),
    described(
        unit("max_softmax"),
        "1/n sum_i max_t S(K_i p(t))_t: the largest softmax probability, averaged over the inputs (Figures 3(c) "
        "and 4(a))",
    ),
    described(unit("one_minus_softmax"), "1 - ``max_softmax``, computed without cancellation"),
    described(real("v1", required=False), "v(t)_1, the head trained jointly with p (Figure 3 only)"),
    described(real("v2", required=False), "v(t)_2 (Figure 3 only)"),
    described(
        real("logistic_prob", required=False),
        "1/n sum_i 1 / (1 + exp(-Y_i f(X_i))): the logistic probability of the right label, averaged over the "
        "inputs (Figure 3 only, drawn in 3(c))",
    ),
    described(text("loss", required=False), "the run's loss function (Figure 5 only: one run per loss)"),
    _C,
    described(
        real("cone_half_angle_deg", required=False),
        "half-angle in degrees of the cone around the LMM direction the starts lie in (Figure 2 only)",
    ),
)
TOKENS: tuple[Column, ...] = (
    _FIGURE,
    described(count("input"), "index i of the input"),
    described(count("token"), "index t of the token within its input"),
    described(real("k1"), "the first coordinate of the token's key k_it = W x_it (the key plane's horizontal axis)"),
    described(real("k2"), "the second coordinate of k_it (the key plane's vertical axis)"),
    described(real("score"), "the token's score gamma_it = Y_i v^T x_it (Definition 1)"),
    described(label("label", nullable=True), "the input's label Y_i"),
    described(flag("optimal"), "whether the token is optimal: gamma_it = max_t gamma_it (Definition 1)"),
    _C,
)
DIRECTIONS: tuple[Column, ...] = (
    _FIGURE,
    described(text("record", ("direction", "gd_run")), "direction: a max-margin direction computed; gd_run: a GD run"),
    described(
        text("kind"),
        "a direction's kind: gmm, lmm or neither (p_mm(alpha) by Definitions 1-2), or p_mm, p_relax (eq. (10)) and "
        "v_mm (Theorems 5-6) for joint GD; a run's: the direction theory predicts it converges to",
    ),
    described(
        text("tokens"),
        "the selected tokens alpha, one per input (a JSON list): those a direction is solved at, or those a run "
        "selects at its end",
    ),
    described(
        text("direction"),
        "the unit direction (a JSON list): a max-margin solution over its norm, or a run's last iterate over its norm",
    ),
    described(
        real("norm", ge=0, nullable=True),
        f"the norm of the unnormalised max-margin solution (||p_mm||, the inverse of its margin); {_DIRECTION_ONLY}",
    ),
    described(label("run", nullable=True), f"the run's ``label`` in the trajectories table; {_RUN_ONLY}"),
    described(
        text("start", nullable=True), f"where the run started: p(0), or v(0) for a run of v (a JSON list); {_RUN_ONLY}"
    ),
    described(
        cosine("final_cosine", nullable=True),
        f"the cosine of the run's last iterate with the direction of its ``kind`` and ``tokens``; {_RUN_ONLY}",
    ),
    described(real("p_norm", ge=0, nullable=True), f"the norm of the run's last iterate, ||p|| (||v||); {_RUN_ONLY}"),
    described(
        real("kkt_residual", ge=0, nullable=True),
        f"the relative residual of the max-margin problem's KKT conditions at its solution; {_DIRECTION_ONLY}",
    ),
)

# The tables whose claims read them (by the experiment's name), and what each claim reads.
_CLAIMS = {
    "fig1a": ("gd_corr_increases",),
    "fig2": ("gd_lmm_cone",),  # which paths leave the cone on the way
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
        name=e.name + suffix,
        family="synthetic",
        columns=columns,
        rule="synthetic_experiment",
        path=pattern.format(experiment=e.name),
        claims=_CLAIMS.get(e.name + suffix, ()),
    )
    for e in EXPERIMENTS
    for suffix, pattern, columns in EXPERIMENT_TABLES.values()
) + (
    Table(
        name="directions",
        family="synthetic",
        columns=DIRECTIONS,
        rule="directions_table",
        label="Directions (Figures 1-3, 5, 8)",
        caption="Every max-margin direction the synthetic experiments compute, and every gradient-descent run next "
        "to the direction theory predicts for it, gathered from every experiment. Backs the claims of Theorems 2, 3, "
        "5 and 6 that GD converges in direction to these max-margin solutions.",
        claims=(
            "gd_gmm_n1",
            "gd_corr_increases",
            "gd_gmm_multi",
            "gd_local_or_global",
            "gd_lmm_cone",
            "n1_necessary",
            "joint_p_mm",
            "joint_p_relax",
            "fig3_v_mm",
            "fig3_p_relax_vs_p_mm",
            "basin_fig1b_consistent",
            "loss_gmm_limit",
        ),
    ),
)
