"""Snakemake script: draw one synthetic figure panel (rule plot_synthetic) from its experiment's tables."""

from maxmargin import registry
from maxmargin.logs import rule_logging
from maxmargin.pipeline import draw_synthetic_panel, save_figure
from maxmargin.registry import derived
from maxmargin.tables import read_table

with rule_logging(snakemake) as log:
    panel = snakemake.wildcards.panel
    tables = {name: read_table(path) for name, path in snakemake.input.items()}
    options = derived.options(panel, snakemake.params.reads)
    fig = draw_synthetic_panel(panel, *(tables[kind] for kind in registry.synthetic.EXPERIMENT_TABLES), options)
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {panel}"})
    log.info("drew %s", panel)
