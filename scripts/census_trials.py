"""Snakemake script: normalized GD and classification of every census trial of one d (rule census_trials)."""

from maxmargin.experiments.census import CensusSettings, run_trials
from maxmargin.io import rule_logging, write_csv

with rule_logging(snakemake) as log:
    d = int(snakemake.wildcards.d)
    settings = CensusSettings.from_config(snakemake.params.census, **snakemake.params.changes)
    log.info("census d=%d with %s", d, settings)
    rows = run_trials(settings, d)  # one progress line per chunk of trials in the log
    write_csv(rows, snakemake.output[0])
    log.info("classes %s; solvers %s", rows["class"].value_counts().to_dict(), rows["solver"].value_counts().to_dict())
