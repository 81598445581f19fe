"""Snakemake script: draw one census figure from its table (rule plot_census)."""

from maxmargin.figures.census import draw_census_panel
from maxmargin.figures.style import save_figure
from maxmargin.io import read_table, rule_logging

with rule_logging(snakemake) as log:
    panel = snakemake.wildcards.census_panel
    fig = draw_census_panel(panel, read_table(snakemake.input[0]))
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})
    log.info("drew %s", panel)
