"""Snakemake script: gather census runs into one trial table and its summary with Wilson intervals.

Rules census_gather (per d: census_trials.csv, census_summary.csv), census_budget_gather (per d and n_iter:
census_budget.csv) and census_grid_gather (per n, T and d: census_grid.csv).
"""

import pandas as pd

from maxmargin.experiments.census_tables import census_table
from maxmargin.logs import rule_logging
from maxmargin.tables import read_table, write_csv

with rule_logging(snakemake) as log:
    by = list(snakemake.params.by)
    trials = pd.concat([read_table(path) for path in snakemake.input], ignore_index=True)
    trials = trials.sort_values([*by, "trial"], ignore_index=True)
    summary = census_table(trials, snakemake.params.reads["census"]["confidence"], by)
    write_csv(trials, snakemake.output.trials)
    write_csv(summary, snakemake.output.summary)
    for row in summary.to_dict("records"):
        log.info(
            "%s: %.1f%% not saturated, %.1f%% LMM (incl. GMM) [%.1f, %.1f], %.1f%% GMM, %.1f%% neither; "
            "mean corr %.5f, P(gap < 0) = %.4f [%.4f, %.4f]",
            ", ".join(f"{key}={row[key]}" for key in by),
            row["pct_not_saturated"],
            row["pct_lmm"],
            row["pct_lmm_ci_low"],
            row["pct_lmm_ci_high"],
            row["pct_gmm"],
            row["pct_neither"],
            row["mean_corr"],
            row["p_gap_negative"],
            row["p_gap_negative_ci_low"],
            row["p_gap_negative_ci_high"],
        )
