"""Snakemake script: the claims table for the docs, with a line saying where it comes from, and every statement of
Appendix E (and the paper's other statements) with its claims or why none (rule docs_claims); a deviation from the
paper quotes the paper-scale config's training settings (param ``paper_train``)."""

from pathlib import Path

from maxmargin.claims.statements import claims_page
from maxmargin.files import atomic_path
from maxmargin.logs import rule_logging

with rule_logging(snakemake) as log:
    with atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(claims_page(Path(snakemake.input.table).read_text(), snakemake.params.paper_train))
    log.info("%s -> %s", snakemake.input.table, snakemake.output[0])
