"""Snakemake script: draw one census figure from its registered tables (rule plot_census)."""

import pandas as pd

from maxmargin.io import rule_logging, save_figure
from maxmargin.pipeline import draw_table_panel

with rule_logging(snakemake) as log:
    panel = snakemake.wildcards.census_panel
    fig = draw_table_panel(panel, *(pd.read_csv(path) for path in snakemake.input))
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})
    log.info("drew %s", panel)
