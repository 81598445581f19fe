"""Snakemake script: draw one census figure from its table (rule plot_census)."""

import pandas as pd

from maxmargin.figures.census import draw_census_panel
from maxmargin.figures.style import save_figure
from maxmargin.io import rule_logging

with rule_logging(snakemake) as log:
    panel = snakemake.wildcards.census_panel
    fig = draw_census_panel(panel, pd.read_csv(snakemake.input[0]))
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})
    log.info("drew %s", panel)
