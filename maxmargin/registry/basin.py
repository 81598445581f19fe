"""The basin study on the Figure 1(b) data (Theorem 3's cone, beyond the paper; workflow/rules/basin.smk)."""

from __future__ import annotations

from maxmargin.registry.census import CLASSES
from maxmargin.registry.columns import cosine, count, flag, integer, label, real, text
from maxmargin.registry.types import Column, Panel, Table

VARIANTS = ("normalized", "constant")  # experiments.basin.gd_variants: the two GD codes

BASIN: tuple[Column, ...] = (
    text("variant", VARIANTS),
    count("start"),
    real("p1"),
    real("p2"),
    text("class", CLASSES),
    text("heading", CLASSES),
    count("alpha"),
    real("final_p1"),
    real("final_p2"),
    real("log10_unsaturation"),
)
CONE: tuple[Column, ...] = (
    text("variant", (*VARIANTS, "no_stationary_point")),
    real("R", gt=0),
    real("mu_max", ge=0.0, le=1.0),
    real("half_angle_deg", ge=0.0, le=180.0),
    count("n_starts"),
    flag("all_lmm"),
    real("mu_cone", ge=0.0, le=1.0),
    cosine("min_final_corr", nullable=True),  # empty: no start inside
    real("eta", gt=0, nullable=True),  # empty on the no_stationary_point rows (no GD)
    integer("n_iter", gt=0, nullable=True),
    label("normalized", nullable=True),
    real("L_p_bound", gt=0),
)
PATHS: tuple[Column, ...] = (
    text("variant", VARIANTS),
    count("run"),
    count("iteration"),
    real("p1"),
    real("p2"),
    text("class", CLASSES),
)

PANELS: tuple[Panel, ...] = (
    Panel(
        "basin",
        "basin",
        "basin",
        "Basins of attraction (Theorem 3)",
        "draw_basin",
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
        "basin",
        "basin",
        BASIN,
        "basin_tables",
        rows=("2", "basin.grid.p1.num", "basin.grid.p2.num"),  # one row per start and GD variant
        figure="basin",
        claims=("basin_fig1b_consistent",),
    ),
    Table(
        "basin_cone",
        "basin",
        CONE,
        "basin_tables",
        rows=("3", "basin.cone.radii.num"),
        label="Basins: the cone of Theorem 3",
        caption="The cone of Theorem 3 measured on the Figure 1(b) data, per GD variant and radius R: mu_max (the "
        "largest mu whose arc of starts all reach the LMM, {cone[n_arc]} starts per arc), its half-angle in degrees, "
        "the starts inside, whether all went to the LMM, mu_cone (the minimum over the radii >= R), the lowest final "
        "correlation, the step and iterations, and the bound on L_p; the ``no_stationary_point`` rows give the mu "
        "below which d/dr L(r u) < 0 on every sampled ray out to r = {cone[r_max]:g}.",
        caption_blocks=("basin",),
        claims=("basin_lmm_cone",),
    ),
    Table(
        "basin_summary",
        "basin",
        (text("variant", VARIANTS), text("class", CLASSES), count("n_starts"), real("share", ge=0.0, le=1.0)),
        "basin_tables",
        figure="basin",
        label="Basins: starts per label",
        caption="How many of the {grid[p1][num]} x {grid[p2][num]} starts of the key plane each GD variant takes to "
        "the GMM, to an LMM, or leaves unsaturated, and their share; the one-row-per-start table ``basin.csv`` is "
        "linked from the report, not embedded.",
        caption_blocks=("basin",),
    ),
    Table("basin_paths", "basin", PATHS, "basin_tables", figure="basin"),
)
