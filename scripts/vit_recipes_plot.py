"""Snakemake script: draw results/figures/vit_recipes.{pdf,png} from the recipe study's table."""

from maxmargin.io import read_table, rule_logging, save_figure
from maxmargin.pipeline import draw_table_panel

with rule_logging(snakemake) as log:
    fig = draw_table_panel("vit_recipes", read_table(snakemake.input[0]), snakemake.params.num_classes)
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": "maxmargin vit_recipes"})
    log.info("drew the recipe study")
