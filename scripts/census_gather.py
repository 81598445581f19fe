"""Snakemake script: gather the per-d census tables into census_trials.csv and census_summary.csv."""

import pandas as pd

from maxmargin.experiments.census_tables import summarize
from maxmargin.io import rule_logging, write_csv

with rule_logging(snakemake) as log:
    trials = pd.concat([pd.read_csv(path) for path in snakemake.input], ignore_index=True)
    trials = trials.sort_values(["d", "trial"], ignore_index=True)
    summary = summarize(trials)
    write_csv(trials, snakemake.output.trials)
    write_csv(summary, snakemake.output.summary)
    for row in summary.itertuples():
        log.info(
            "d=%d: %.1f%% not saturated, %.1f%% LMM (incl. GMM), %.1f%% GMM, %.1f%% neither; "
            "mean corr %.5f, P(gap < 0) = %.4f",
            row.d,
            row.pct_not_saturated,
            row.pct_lmm,
            row.pct_gmm,
            row.pct_neither,
            row.mean_corr,
            row.p_gap_negative,
        )
