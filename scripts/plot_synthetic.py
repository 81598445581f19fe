"""Snakemake script: draw one synthetic figure panel (rule plot_synthetic) from its tables."""

from maxmargin.figures.style import save_figure
from maxmargin.figures.synthetic import draw_synthetic_panel
from maxmargin.io import read_table, rule_logging

with rule_logging(snakemake) as log:
    panel = snakemake.wildcards.panel
    tables = {name: read_table(path) for name, path in snakemake.input.items()}
    fig = draw_synthetic_panel(
        panel, tables["trajectories"], tables["tokens"], tables["directions"], dict(snakemake.params.plots)
    )
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})
    log.info("drew %s", panel)
