"""Snakemake script: draw results/figures/basin.{pdf,png} from the basin tables (rule plot_basin)."""

from maxmargin.io import read_table, rule_logging, save_figure
from maxmargin.pipeline import drawing_function

with rule_logging(snakemake) as log:
    tables = {name: read_table(path) for name, path in snakemake.input.items()}
    fig = drawing_function("basin")(
        tables["basin"], tables["cone"], tables["paths"], tables["tokens"], tables["directions"]
    )
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": "maxmargin basins of attraction"})
    log.info("drew the basin maps of %s", ", ".join(tables["basin"]["variant"].unique()))
