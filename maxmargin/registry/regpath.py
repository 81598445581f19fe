"""The regularization paths (eq. (2), Theorems 1, 5, 6; workflow/rules/regpath.smk)."""

from __future__ import annotations

from maxmargin.registry.columns import cosine, count, described, label, real, text
from maxmargin.registry.types import Column, Panel, Table

# Instances of the regularization-path study (the wildcard {regpath_instance}): Theorem 1 on the Fig. 1(b) data,
# Theorems 5-6 on the Fig. 3(a)/(b) data; the config's regpath.instances picks among them.
REGPATH_INSTANCES: tuple[str, ...] = ("fig1b", "fig3a", "fig3b")

_NOT_GD = "empty for a GD run"
REGPATH: tuple[Column, ...] = (
    described(
        text("instance"),
        "the data: fig1b (Theorem 1, the head v fixed) or fig3a, fig3b (Theorems 5-6, v and p solved jointly)",
    ),
    described(
        text("method", ("path", "gd", "local")),
        "path: the regularization path, argmin over ||p|| <= R of L(p) (eq. (2)), or over ||v|| <= R, ||p|| <= R of "
        "L(v, p); gd: a normalized GD run (eq. (3)); local: a constrained local optimum that selects other tokens "
        "than the path",
    ),
    described(label("run"), "the run: path, GD from its start p(0), or the tokens a local optimum selects"),
    described(real("R", gt=0), "the radius R of the ball (of both balls, jointly); for a GD run, ||p(t)||"),
    described(
        text("kind"),
        "the max-margin direction compared with: gmm, lmm (fig1b), or p_mm, p_relax (eq. (10)) for p and v_mm for v "
        "(fig3a, fig3b), at the tokens the path selects at the largest R",
    ),
    described(cosine("cosine"), "the cosine of the solution (its v for v_mm, else its p) with that direction"),
    described(
        real("kkt_residual", ge=0, nullable=True),
        "the KKT residual of the ball-constrained problem in that variable: on the sphere, the gradient's component "
        "orthogonal to the iterate plus a wrong-signed multiplier, relative to the gradient's norm; inside the ball, "
        "R times the norm of the gradient of log(L - inf L); " + _NOT_GD,
    ),
    described(real("loss", ge=0, nullable=True), "the risk L at the solution (L(p) with v fixed, or L(v, p))"),
    described(real("log_excess_loss", nullable=True), "log(L - inf L), the risk's excess over its infimum"),
    described(
        label("active", nullable=True),
        f"whether the ball constraint of that variable is active (its norm is R); {_NOT_GD}",
    ),
    described(text("selected"), "the tokens the solution selects, argmax_t (K_i p)_t per input (a JSON list)"),
    described(
        count("n_starts", nullable=True),
        "starts solved at this R (random ones, the previous solution rescaled, every max-margin candidate direction); "
        "1 for a GD run",
    ),
    described(
        count("n_at_best", nullable=True),
        "path: the starts that ended at the kept solution; local: the starts that reached a KKT point selecting these "
        f"tokens; {_NOT_GD}",
    ),
)

PANELS: tuple[Panel, ...] = (
    Panel(
        name="regpath",
        target="regpath",
        family="regpath",
        label="Regularization paths",
        draw="draw_regpath",
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
        "Bottom row: 1 - cosine with each direction (log scale); under each column, the path's largest KKT "
        "residual (one number). Numbers: "
        "``tables/regpath.csv`` and ``tables/regpath_compare.csv``.",
        caption_blocks=("regpath",),
    ),
)

TABLES: tuple[Table, ...] = (
    Table(
        name="regpath_run",
        family="regpath",
        columns=REGPATH,
        rule="regpath_instance",
        path="runs/regpath/{regpath_instance}.csv",
        values={"regpath_instance": "regpath.instances"},
        restates={"instance": "{regpath_instance}"},
    ),
    Table(
        name="regpath_compare_run",
        family="regpath",
        columns=REGPATH,
        rule="regpath_instance",
        path="runs/regpath/{regpath_instance}_compare.csv",
        values={"regpath_instance": "regpath.instances"},
        restates={"instance": "{regpath_instance}"},
    ),
    Table(
        name="regpath",
        family="regpath",
        columns=REGPATH,
        rule="regpath_table",
        restates={"instance": "regpath.instances"},
        label="Regularization paths",
        caption="The regularization paths of eq. (2) (Theorem 1) and of the joint problem (Theorems 5 and 6), one "
        "row per instance, radius R and max-margin direction, solved by projected normalized gradient from many "
        "starts per R, the lowest risk kept.",
        claims=("regpath_gmm", "regpath_joint_a", "regpath_joint_b"),
    ),
    Table(
        name="regpath_compare",
        family="regpath",
        columns=REGPATH,
        rule="regpath_table",
        label="Regularization paths: GD and local optima",
        caption="What the regularization paths are compared with: normalized GD runs, and the constrained local "
        "optima drawn as squares: on the Fig. 1(b) data a KKT point near the LMM from a moderate R on (the first R "
        "at which it appears is in this table), always with a higher risk than the path.",
    ),
)
