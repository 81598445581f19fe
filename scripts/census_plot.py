"""Snakemake script: draw one census figure from its registered tables (rule plot_census)."""

from maxmargin.io import read_table, rule_logging, save_figure
from maxmargin.pipeline import draw_table_panel

with rule_logging(snakemake) as log:
    panel = snakemake.wildcards.census_panel
    fig = draw_table_panel(panel, *(read_table(path) for path in snakemake.input))
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})
    log.info("drew %s", panel)
