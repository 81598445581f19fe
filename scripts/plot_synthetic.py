"""Snakemake script: draw one synthetic figure panel (rule plot_synthetic) from its tables."""

from maxmargin.io import read_table, rule_logging, save_figure
from maxmargin.pipeline import draw_synthetic_panel

with rule_logging(snakemake) as log:
    panel = snakemake.wildcards.panel
    tables = {name: read_table(path) for name, path in snakemake.input.items()}
    fig = draw_synthetic_panel(
        panel, tables["trajectories"], tables["tokens"], tables["directions"], dict(snakemake.params.plots)
    )
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})
    log.info("drew %s", panel)
