"""Snakemake script: Lemma 1, GD on W against GD on p (rule lemma1_table)."""

from maxmargin.experiments.lemma1 import DEVIATION_COLUMN, lemma1_table
from maxmargin.logs import rule_logging
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    settings = dict(snakemake.params.reads["lemma1"])
    log.info("Lemma 1 check with %s", settings)
    table = lemma1_table(**settings, data=dict(snakemake.params.reads["synthetic"]["data"]))
    write_csv(table, snakemake.output[0])
    for row in table.itertuples():
        log.info(
            "%s: max_t ||W(t) - u p(t)^T/||u||^2||_F = %.2e (relative %.2e), final ||p|| %.3f",
            row.instance,
            getattr(row, DEVIATION_COLUMN),
            row.relative_max_deviation,
            row.final_p_norm,
        )
