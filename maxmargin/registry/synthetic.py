"""The synthetic experiments and their panels (Figures 1-5 and 8; workflow/rules/synthetic.smk)."""

from __future__ import annotations

from maxmargin.registry.types import Experiment, Panel, Table

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
)

TABLES: tuple[Table, ...] = (
    Table(
        "directions",
        "synthetic",
        "Directions (Figures 1-3, 5, 8)",
        "directions.rst",
        claims=(
            "gd_gmm_n1",
            "gd_local_or_global",
            "gd_lmm_cone",
            "n1_necessary",
            "joint_p_mm",
            "joint_p_relax",
            "basin_fig1b_consistent",
        ),
    ),
    Table("fig3a", "synthetic", claims=("joint_probabilities",)),
    Table("fig4", "synthetic", claims=("normalized_gd_faster", "constant_gd_levels_off")),
    Table("fig5", "synthetic", claims=("loss_transient_bias",)),
)
