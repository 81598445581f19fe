"""Snakemake script: the claims table for the docs, with a line saying where it comes from, and every statement of
Appendix E (and the other statements no claim measures) with its claims or why none (rule docs_claims)."""

from pathlib import Path

from maxmargin.claims.statements import claims_page
from maxmargin.files import atomic_path
from maxmargin.logs import rule_logging

with rule_logging(snakemake) as log:
    with atomic_path(snakemake.output[0]) as tmp:
        tmp.write_text(claims_page(Path(snakemake.input[0]).read_text()))
    log.info("%s -> %s", snakemake.input[0], snakemake.output[0])
