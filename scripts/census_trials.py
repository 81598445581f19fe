"""Snakemake script: normalized GD and classification of every census trial of one d (rules census_trials,
census_budget_trials and census_grid_cell: the cell's n, T, n_iter come from the job's wildcards)."""

from maxmargin.experiments.census import CensusSettings, run_trials
from maxmargin.logs import rule_logging
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    census, wildcards = snakemake.params.reads["census"], snakemake.wildcards
    changes = {key: int(wildcards[key]) for key in ("n", "T", "n_iter") if key in wildcards.keys()}
    if "grid" in census:  # a cell of the phase diagram: its own number of trials
        changes["n_trials"] = census["grid"]["n_trials"]
    settings = CensusSettings.from_config(census, **changes)
    d = int(wildcards.d)
    log.info("census d=%d with %s", d, settings)
    rows = run_trials(settings, d)  # one progress line per chunk of trials, with the time left
    write_csv(rows, snakemake.output[0])
    log.info("classes %s; solvers %s", rows["class"].value_counts().to_dict(), rows["solver"].value_counts().to_dict())
