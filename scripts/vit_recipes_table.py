"""Snakemake script: gather the recipe study's runs into results/tables/vit_recipes.csv (rule vit_recipes_table)."""

import pandas as pd

from maxmargin.logs import rule_logging
from maxmargin.tables import read_table, write_csv

with rule_logging(snakemake) as log:
    table = pd.concat([read_table(path) for path in snakemake.input], ignore_index=True)
    write_csv(table, snakemake.output[0])
    for recipe, runs in table.groupby("recipe", sort=False):
        log.info("%-28s final test acc %.3f", recipe, runs["test_acc"].iloc[-1])
