"""Snakemake script: draw one synthetic figure panel (rule plot_synthetic) from its tables."""

import pandas as pd

from maxmargin.figures.synthetic import draw_synthetic_panel
from maxmargin.io import rule_logging
from maxmargin.figures.style import save_figure

with rule_logging(snakemake) as log:  # noqa: F821 (snakemake is injected)
    panel = snakemake.wildcards.panel  # noqa: F821
    tables = {name: pd.read_csv(path) for name, path in snakemake.input.items()}  # noqa: F821
    fig = draw_synthetic_panel(panel, tables["trajectories"], tables["tokens"], tables["directions"],
                               dict(snakemake.params.plots))  # noqa: F821
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})  # noqa: F821
    log.info("drew %s", panel)
