"""Snakemake script: the basin study on the Figure 1(b) data (rule basin_tables): tables/basin{,_cone,_summary,
_paths}.csv."""

from maxmargin.experiments.basin import basin_study, fig1b_agreement
from maxmargin.logs import rule_logging
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    cfg = snakemake.params.reads
    tols = {key: cfg["census"][key] for key in ("saturation_tol", "svm_tol")}
    tables = basin_study(cfg["basin"], cfg["synthetic"]["fig1"], tols, snakemake.threads)
    for name in ("basin", "cone", "summary", "paths"):
        write_csv(getattr(tables, name), snakemake.output[name])
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
    for row in tables.summary.itertuples():
        log.info("grid, %s: %d starts -> %s", row.variant, row.n_starts, row[2])
    agreement = fig1b_agreement(tables.basin, tables.paths)
    log.info(
        "Figure 1(b) starts: %d/%d grid nodes, labels agree %d/%d, final iterates within %.1e of their paths",
        agreement["on_grid"].sum(),
        len(agreement),
        (agreement["grid_class"] == agreement["path_class"]).sum(),
        len(agreement),
        agreement["max_abs_diff"].max(),
    )
