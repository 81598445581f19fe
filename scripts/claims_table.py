"""Snakemake script: the claims table (rule claims_table) from the pipeline's own tables."""

import json

from maxmargin.claims import claims_html, claims_markdown, evaluate_claims, run_sentences
from maxmargin.files import atomic_path, file_sha256
from maxmargin.logs import rule_logging
from maxmargin.provenance import sentences_record
from maxmargin.tables import read_table, write_csv

with rule_logging(snakemake) as log:
    tables = {name: read_table(path) for name, path in snakemake.input.items()}
    claims = evaluate_claims(tables, snakemake.params.reads)
    write_csv(claims, snakemake.output.csv)
    with atomic_path(snakemake.output.md) as tmp:
        tmp.write_text(claims_markdown(claims))
    with atomic_path(snakemake.output.html) as tmp:
        tmp.write_text(claims_html(claims))
    # The captions' sentences, bound to this table and to themselves (maxmargin/report.py: run_sentences)
    sentences = sentences_record(file_sha256(snakemake.output.csv), run_sentences(claims, tables))
    with atomic_path(snakemake.output.sentences) as tmp:
        tmp.write_text(json.dumps(sentences, indent=1, ensure_ascii=False) + "\n")
    for row in claims.itertuples():
        log.info("%-24s %-8s %s", row.claim_id, row.verdict, row.measured)
