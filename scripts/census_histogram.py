"""Snakemake script: distribution of the minimal score gap over saturated trials (Figures 9(b) and 10)."""

import pandas as pd

from maxmargin.experiments.census_tables import gap_distribution
from maxmargin.logs import rule_logging
from maxmargin.tables import read_table, write_csv

with rule_logging(snakemake) as log:
    histogram = snakemake.params.reads["census"]["histogram"]
    # the census runs of the histogram's d, in the order of the gathered trial table (census_gather)
    trials = pd.concat([read_table(path) for path in snakemake.input], ignore_index=True)
    trials = trials.sort_values(["d", "trial"], ignore_index=True)
    table = gap_distribution(trials, histogram["dims"], histogram["bin_width"])
    write_csv(table, snakemake.output[0])
    for d, g in table.groupby("d"):
        p_negative = g.loc[g["bin_right"] <= 0, "cumulative"].iloc[-1]
        log.info(
            "d=%d: %d saturated trials, P(gap < 0) = %s",
            d,
            g["n_saturated"].iloc[0],
            "undefined (no saturated trial)" if pd.isna(p_negative) else f"{p_negative:.4f}",
        )
