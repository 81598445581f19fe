"""Snakemake script: distribution of the minimal score gap over saturated trials (Figures 9(b) and 10)."""

import pandas as pd

from maxmargin.census import gap_distribution
from maxmargin.io import rule_logging, write_csv

with rule_logging(snakemake) as log:  # noqa: F821 (snakemake is injected)
    trials = pd.read_csv(snakemake.input[0])  # noqa: F821
    table = gap_distribution(trials, snakemake.params.dims, snakemake.params.bin_width)  # noqa: F821
    write_csv(table, snakemake.output[0])  # noqa: F821
    for d, g in table.groupby("d"):
        log.info("d=%d: %d saturated trials, P(gap < 0) = %.4f", d, g["n_saturated"].iloc[0],
                 g.loc[g["bin_right"] <= 0, "cumulative"].max())  # fmt: skip
