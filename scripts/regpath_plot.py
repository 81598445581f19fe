"""Snakemake script: draw results/figures/regpath.{pdf,png} from the regularization-path tables (rule plot_regpath)."""

import pandas as pd

from maxmargin.io import read_table, rule_logging, save_figure
from maxmargin.pipeline import draw_table_panel

with rule_logging(snakemake) as log:
    table = pd.concat([read_table(snakemake.input.path), read_table(snakemake.input.compare)])
    fig = draw_table_panel("regpath", table)
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": "maxmargin regularization paths"})
    log.info("drew the regularization paths")
