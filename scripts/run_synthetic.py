"""Snakemake script: run one synthetic experiment (rule synthetic_experiment) and write its tables."""

from maxmargin import registry
from maxmargin.logs import rule_logging
from maxmargin.pipeline import run_experiment
from maxmargin.registry import derived
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    name = snakemake.wildcards.experiment
    settings = derived.experiment_settings(name, snakemake.params.reads)
    data = derived.experiment_data(name, snakemake.params.reads)
    log.info("experiment %s with %s on data %s", name, settings, data)
    tables = run_experiment(name, settings, data)
    for kind in registry.synthetic.EXPERIMENT_TABLES:
        write_csv(getattr(tables, kind), snakemake.output[kind])
    runs = tables.directions[tables.directions["record"] == "gd_run"]
    for row in runs.itertuples():
        log.info("%s -> %s %s: cosine %.6f, ||p|| %.2f", row.run, row.kind, row.tokens, row.final_cosine, row.p_norm)
