"""Snakemake script: draw Figure 9(a), 9(b) or 10 from its census table (rules plot_fig9a, plot_fig9b, plot_fig10)."""

import pandas as pd

from maxmargin.figures.census import draw_census_panel
from maxmargin.io import rule_logging
from maxmargin.figures.style import save_figure

with rule_logging(snakemake) as log:  # noqa: F821 (snakemake is injected)
    panel = snakemake.params.panel  # noqa: F821
    fig = draw_census_panel(panel, pd.read_csv(snakemake.input[0]))  # noqa: F821
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})  # noqa: F821
    log.info("drew %s", panel)
