"""The basin study on the Figure 1(b) data (Theorem 3's cone, beyond the paper; workflow/rules/basin.smk)."""

from __future__ import annotations

from maxmargin.registry.census import CLASS, CLASSES, UNSATURATION
from maxmargin.registry.columns import cosine, count, described, flag, integer, label, real, text
from maxmargin.registry.types import Column, Panel, Table

VARIANTS = ("normalized", "constant")  # experiments.basin.gd_variants: the two GD codes

VARIANT = described(
    text("variant", VARIANTS),
    "the GD code: normalized (the authors' step, ``synthetic.fig1``) or constant (Theorem 3's step, eta = "
    "``basin.constant.step_fraction`` / L_p)",
)
_NO_GD = "empty on the no_stationary_point rows"
BASIN: tuple[Column, ...] = (
    VARIANT,
    described(count("start"), "index of the start on the grid, p_1 varying fastest"),
    described(real("p1"), "the start p(0)_1 (the key plane's horizontal axis)"),
    described(real("p2"), "the start p(0)_2 (the key plane's vertical axis)"),
    CLASS,
    described(
        text("heading", CLASSES),
        "the kind of p_mm(alpha) at the last iterate's tokens, saturated or not: where the run is heading",
    ),
    described(count("alpha"), "the token the last iterate selects, argmax_t (K p)_t"),
    described(real("final_p1"), "the last iterate's p_1"),
    described(real("final_p2"), "the last iterate's p_2"),
    UNSATURATION,
)
CONE: tuple[Column, ...] = (
    described(
        text("variant", (*VARIANTS, "no_stationary_point")),
        "the GD code (normalized or constant) whose starts are labelled, or no_stationary_point: the sign of the "
        "radial derivative d/dr L(r u) instead of GD",
    ),
    described(real("R", gt=0), "the radius R: the arc of starts at norm R, the cone's norm bound of eq. (8)"),
    described(
        real("mu_max", ge=0.0, le=1.0),
        "the largest mu such that every start of the arc of radius R with correlation at least 1 - mu with p_mm "
        "reaches the LMM (no_stationary_point: every sampled ray has d/dr L(r u) < 0 from R out)",
    ),
    described(
        real("half_angle_deg", ge=0.0, le=180.0), "the cone's half-angle in degrees, mu_max = 1 - cos(half-angle)"
    ),
    described(count("n_starts"), "the arc's starts inside the cone (no_stationary_point: its rays)"),
    described(
        flag("all_lmm"),
        "whether every start of the arc reached the LMM (no_stationary_point: d/dr L(r u) < 0 on every ray from R out)",
    ),
    described(
        real("mu_cone", ge=0.0, le=1.0),
        "the minimum of ``mu_max`` over the radii >= R: the mu for which the whole of C_{mu,R} (every norm >= R) was "
        "sampled",
    ),
    described(
        cosine("min_final_corr", nullable=True),
        "the lowest cosine with p_mm of the last iterates of the starts inside (empty when none is inside, and on "
        "the no_stationary_point rows)",
    ),
    described(real("eta", gt=0, nullable=True), f"the GD step; {_NO_GD}"),
    described(integer("n_iter", gt=0, nullable=True), f"GD iterations; {_NO_GD}"),
    described(label("normalized", nullable=True), f"whether the gradient is normalized; {_NO_GD}"),
    described(
        real("L_p_bound", gt=0),
        "an upper bound on L_p, the Lipschitz constant of grad L(p), from the data (Theorem 3's step: eta <= 1/L_p)",
    ),
)
PATHS: tuple[Column, ...] = (
    VARIANT,
    described(count("run"), "index of the Figure 1(b) start (``synthetic.fig1.starts``)"),
    described(count("iteration"), "iteration t (every one at first, then log-spaced up to the last)"),
    described(real("p1"), "p(t)_1 (the key plane's horizontal axis)"),
    described(real("p2"), "p(t)_2 (the key plane's vertical axis)"),
    CLASS,
)

PANELS: tuple[Panel, ...] = (
    Panel(
        name="basin",
        target="basin",
        family="basin",
        label="Basins of attraction (Theorem 3)",
        draw="draw_basin",
        tables=("basin", "basin_cone", "basin_paths", "fig1b_tokens", "fig1b_directions"),
        caption="Basins of attraction on the Figure 1(b) data (beyond the paper). **What Theorem 3 guarantees:** "
        "there are mu in (0, 1) and R > 0 such that the cone C_{{mu,R}}(p_mm) of eq. (7)-(8) (correlation with the "
        "LMM direction p_mm at least 1 - mu, norm at least R) contains no stationary point of the loss, and "
        "constant-step GD with eta <= 1/L_p started anywhere in it converges in direction to p_mm; the theorem gives "
        "neither mu nor R. **What the maps measure:** GD from every start of a {grid[p1][num]} x {grid[p2][num]} "
        "grid of the key plane, normalized GD with the authors' step (eta = {synthetic[fig1][eta]:g}, "
        "{synthetic[fig1][n_iter]} iterations, {synthetic[fig1][loss]} loss) and constant-step GD with eta = "
        "{constant[step_fraction]:g} / L_p ({constant[n_iter]} iterations; L_p is bounded from the data, the bound "
        "and eta are in ``basin_cone.csv``), each start coloured by the census's label of where it ends: GMM (red), "
        "LMM (blue), or not saturated (mean selected softmax probability below 1 - {census[saturation_tol]:g}; "
        "pale, tinted by the token it selects). Constant-step GD's norm grows only like log t, so within its budget "
        "no start of this plane saturates: its map shows where GD is heading, not a limit. Drawn over each map: the "
        "tokens, the GMM and LMM directions, the six starts of Figure 1(b) with their paths, and the measured cone "
        "(black): at each radius R of a geometric grid, the largest mu such that every start of the arc of radius "
        "R within the cone ({cone[n_arc]} starts over +-{cone[max_half_angle_deg]:g} degrees) is labelled LMM, "
        "taken as the minimum over the radii >= R so that the whole of C_{{mu,R}} was sampled. Right: mu_max(R) per "
        "variant, and the mu below which the radial derivative d/dr L(r u) is negative on every sampled ray of the "
        "cone from R out to r = {cone[r_max]:g} (no stationary point there). This run: {run[basin_lmm_cone]}; "
        "{run[basin_fig1b_consistent]}. Numbers: ``tables/basin_cone.csv`` "
        "(variant, R, mu_max, half_angle_deg, n_starts, all_lmm, ...), ``tables/basin_summary.csv`` (starts per "
        "variant and label) and ``tables/basin.csv`` (one row per start, linked, not embedded).",
        caption_blocks=("basin",),
    ),
)

TABLES: tuple[Table, ...] = (
    Table(
        name="basin",
        family="basin",
        columns=BASIN,
        rule="basin_tables",
        rows=("2", "basin.grid.p1.num", "basin.grid.p2.num"),  # one row per start and GD variant
        target="basin",
        claims=("basin_fig1b_consistent",),
    ),
    Table(
        name="basin_cone",
        family="basin",
        columns=CONE,
        rule="basin_tables",
        rows=("3", "basin.cone.radii.num"),
        label="Basins: the cone of Theorem 3",
        caption="The cone C_{{mu,R}}(p_mm) of Theorem 3 (eq. (7)-(8)) measured on the Figure 1(b) data, one row "
        "per GD variant (and the radial-derivative test) and radius R, from arcs of {cone[n_arc]} starts over "
        "+-{cone[max_half_angle_deg]:g} degrees around the LMM direction and rays out to r = {cone[r_max]:g}.",
        caption_blocks=("basin",),
        claims=("basin_lmm_cone",),
    ),
    Table(
        name="basin_summary",
        family="basin",
        columns=(
            VARIANT,
            CLASS,
            described(count("n_starts"), "the grid's starts of that variant with that label"),
            described(real("share", ge=0.0, le=1.0), "their share of the variant's starts"),
        ),
        rule="basin_tables",
        target="basin",
        label="Basins: starts per label",
        caption="The basin study's {grid[p1][num]} x {grid[p2][num]} starts of the key plane counted per GD variant "
        "and label of where GD ends; the one-row-per-start table ``basin.csv`` is linked from the report, not "
        "embedded.",
        caption_blocks=("basin",),
    ),
    Table(name="basin_paths", family="basin", columns=PATHS, rule="basin_tables", target="basin"),
)
