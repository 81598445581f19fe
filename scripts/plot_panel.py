"""Snakemake script: draw one panel from its registered tables and files (rule plot_<family> of plots.smk: plot_census,
plot_regpath, plot_vit, plot_basin)."""

from maxmargin.logs import rule_logging
from maxmargin.pipeline import draw_panel, save_figure
from maxmargin.registry import derived

with rule_logging(snakemake) as log:
    panel = snakemake.wildcards.panel
    fig = draw_panel(panel, list(snakemake.input), derived.options(panel, snakemake.params.reads))
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})
    log.info("drew %s", panel)
