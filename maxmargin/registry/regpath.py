"""The regularization paths (eq. (2), Theorems 1, 5, 6; workflow/rules/regpath.smk)."""

from __future__ import annotations

from maxmargin.registry.columns import cosine, count, label, real, text
from maxmargin.registry.types import Column, Panel, Table

# Instances of the regularization-path study (the wildcard {regpath_instance}): Theorem 1 on the Fig. 1(b) data,
# Theorems 5-6 on the Fig. 3(a)/(b) data; the config's regpath.instances picks among them.
REGPATH_INSTANCES: tuple[str, ...] = ("fig1b", "fig3a", "fig3b")

REGPATH: tuple[Column, ...] = (
    text("instance"),
    text("method", ("path", "gd", "local")),
    label("run"),
    real("R", gt=0),
    text("kind"),
    cosine("cosine"),
    real("kkt_residual", ge=0, nullable=True),
    real("loss", ge=0, nullable=True),
    real("log_excess_loss", nullable=True),
    label("active", nullable=True),  # bool on the path, empty for GD runs
    text("selected"),
    count("n_starts", nullable=True),  # empty for GD runs
    count("n_at_best", nullable=True),
)

PANELS: tuple[Panel, ...] = (
    Panel(
        "regpath",
        "regpath",
        "regpath",
        "Regularization paths",
        "draw_regpath",
        tables=("regpath", "regpath_compare"),
        caption="Regularization paths, solved on a geometric grid of {radii[num]} radii R from {radii[min]:g} to "
        "{radii[max]:g} with {n_random} random starts per R besides the previous solution rescaled and every "
        "max-margin candidate direction, each start by projected normalized gradient until its KKT residual (for the "
        "ball constraint: the gradient's component orthogonal to the iterate plus a wrong-signed multiplier, relative "
        "to the gradient's norm) is below {tol:g}; the lowest risk is kept. Left, Fig. 1(b) data with fixed v: p(R) = "
        "argmin over ||p|| <= R of L(p) (eq. (2)) goes to the GMM direction (Theorem 1) although normalized GD "
        "started inside the LMM cone goes to the LMM (Theorem 3; drawn against ||p(t)||). Middle and right, Fig. "
        "3(a)/(b) data: (v_r, p_R) = argmin over ||v|| <= r, ||p|| <= R of L(v, p) with r = R; v_r/r goes to v_mm "
        "(sklearn SVM) and p_R/R to p_mm in (a) (Theorem 5) and to p_relax of eq. (10), not p_mm, in (b) (Theorem 6). "
        "This run: {run[regpath_gmm]}; {run[regpath_joint_a]}; {run[regpath_joint_b]}. "
        "Bottom row: 1 - cosine with each direction, and the path's KKT residual on its own axis. Numbers: "
        "``tables/regpath.csv`` and ``tables/regpath_compare.csv``.",
        caption_blocks=("regpath",),
    ),
)

TABLES: tuple[Table, ...] = (
    Table(
        "regpath_run",
        "regpath",
        REGPATH,
        "regpath_instance",
        path="runs/regpath/{regpath_instance}.csv",
        values={"regpath_instance": "regpath.instances"},
        restates={"instance": "{regpath_instance}"},
    ),
    Table(
        "regpath_compare_run",
        "regpath",
        REGPATH,
        "regpath_instance",
        path="runs/regpath/{regpath_instance}_compare.csv",
        values={"regpath_instance": "regpath.instances"},
        restates={"instance": "{regpath_instance}"},
    ),
    Table(
        "regpath",
        "regpath",
        REGPATH,
        "regpath_table",
        restates={"instance": "regpath.instances"},
        label="Regularization paths",
        caption="The regularization paths, one row per instance, R and max-margin direction: its cosine with the "
        "normalized path, the path's KKT residual, the risk and log(L - inf L), the tokens the path selects and how "
        "many of the starts reached the optimum at that R.",
        claims=("regpath_gmm", "regpath_joint_a", "regpath_joint_b"),
    ),
    Table(
        "regpath_compare",
        "regpath",
        REGPATH,
        "regpath_table",
        label="Regularization paths: GD and local optima",
        caption="What the paths are compared with: ``method`` gd, the normalized GD runs (R = ||p(t)||); ``method`` "
        "local, constrained local optima that select other tokens, drawn as squares: on the Fig. 1(b) data a KKT "
        "point near the LMM from a moderate R on (the first R at which it appears is in this table), always with a "
        "higher risk than the path.",
    ),
)
