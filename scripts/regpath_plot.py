"""Snakemake script: draw results/figures/regpath.{pdf,png} from the regularization-path tables (rule plot_regpath)."""

import pandas as pd

from maxmargin.figures.regpath import draw_regpath
from maxmargin.io import rule_logging
from maxmargin.figures.style import save_figure

with rule_logging(snakemake) as log:  # noqa: F821 (snakemake is injected)
    table = pd.concat([pd.read_csv(snakemake.input.path), pd.read_csv(snakemake.input.compare)])  # noqa: F821
    fig = draw_regpath(table)
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": "maxmargin regularization paths"})  # noqa: F821
    log.info("drew the regularization paths")
