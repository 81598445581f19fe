"""Snakemake script: the default run's tables that the docs quote, copied for the docs (rule docs_tables), each
checked against its contract on the way (maxmargin.tables.read_table)."""

import shutil

from maxmargin.files import atomic_path
from maxmargin.logs import rule_logging
from maxmargin.tables import read_table

with rule_logging(snakemake) as log:
    for source, target in zip(snakemake.input, snakemake.output, strict=True):
        read_table(source)
        with atomic_path(target) as tmp:
            shutil.copyfile(source, tmp)
        log.info("%s -> %s", source, target)
