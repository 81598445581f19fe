"""Snakemake script: draw results/figures/regpath.{pdf,png} from the regularization-path tables (rule plot_regpath)."""

import pandas as pd

from maxmargin.figures.regpath import draw_regpath
from maxmargin.figures.style import save_figure
from maxmargin.io import read_table, rule_logging

with rule_logging(snakemake) as log:
    table = pd.concat([read_table(snakemake.input.path), read_table(snakemake.input.compare)])
    fig = draw_regpath(table)
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": "maxmargin regularization paths"})
    log.info("drew the regularization paths")
