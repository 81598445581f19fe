"""Snakemake script: gather every experiment's directions into results/tables/directions.csv."""

import pandas as pd

from maxmargin.logs import rule_logging
from maxmargin.tables import read_table, write_csv

with rule_logging(snakemake) as log:
    table = pd.concat([read_table(path) for path in snakemake.input], ignore_index=True)
    write_csv(table, snakemake.output[0])
    runs = table[table["record"] == "gd_run"]
    log.info(
        "%d directions, %d GD runs, min final cosine %.6f",
        (table["record"] == "direction").sum(),
        len(runs),
        runs["final_cosine"].min(),
    )
