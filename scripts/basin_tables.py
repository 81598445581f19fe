"""Snakemake script: the basin study on the Figure 1(b) data (rule basin_tables): tables/basin{,_cone,_paths}.csv."""

from maxmargin.experiments.basin import basin_study
from maxmargin.experiments.basin_claims import fig1b_agreement
from maxmargin.io import rule_logging, write_csv

with rule_logging(snakemake) as log:
    tables = basin_study(snakemake.params.basin, snakemake.params.fig1, snakemake.params.tols, snakemake.threads)
    write_csv(tables.basin, snakemake.output.basin)
    write_csv(tables.cone, snakemake.output.cone)
    write_csv(tables.paths, snakemake.output.paths)
    for variant, g in tables.cone.groupby("variant", sort=False):
        top = g.iloc[-1]
        log.info(
            "%s: eta %.6g (L_p <= %.6g; nan: no GD), mu_cone at R = %g: %.6f (half-angle %.2f deg)",
            variant,
            top.eta,
            top.L_p_bound,
            top.R,
            top.mu_cone,
            top.half_angle_deg,
        )
    for (variant, label), n in tables.basin.groupby(["variant", "class"]).size().items():
        log.info("grid, %s: %d starts -> %s", variant, n, label)
    agreement = fig1b_agreement(tables.basin, tables.paths)
    log.info(
        "Figure 1(b) starts: %d/%d grid nodes, labels agree %d/%d, final iterates within %.1e of their paths",
        agreement["on_grid"].sum(),
        len(agreement),
        (agreement["grid_class"] == agreement["path_class"]).sum(),
        len(agreement),
        agreement["max_abs_diff"].max(),
    )
