"""Snakemake script: run one synthetic experiment (rule synthetic_experiment) and write its tables."""

from maxmargin.io import rule_logging, write_csv
from maxmargin.pipeline import run_experiment

with rule_logging(snakemake) as log:
    name = snakemake.wildcards.experiment
    log.info("experiment %s with %s on data %s", name, snakemake.params.settings, snakemake.params.data)
    tables = run_experiment(name, dict(snakemake.params.settings), dict(snakemake.params.data))
    write_csv(tables.trajectories, snakemake.output.trajectories)
    write_csv(tables.tokens, snakemake.output.tokens)
    write_csv(tables.directions, snakemake.output.directions)
    runs = tables.directions[tables.directions["record"] == "gd_run"]
    for row in runs.itertuples():
        log.info("%s -> %s %s: cosine %.6f, ||p|| %.2f", row.run, row.kind, row.tokens, row.final_cosine, row.p_norm)
