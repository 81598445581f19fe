"""Snakemake script: draw results/figures/vit_recipes.{pdf,png} from the recipe study's table."""

import pandas as pd

from maxmargin.figures.style import save_figure
from maxmargin.figures.vit import recipes_figure
from maxmargin.io import rule_logging

with rule_logging(snakemake) as log:
    fig = recipes_figure(pd.read_csv(snakemake.input[0]))
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": "maxmargin vit_recipes"})
    log.info("drew the recipe study")
