"""Snakemake script: copy the ViT run's metrics table and sidecar into the tables folder (rule vit_metrics_table).

Byte for byte: the run's files may come from Snakemake's between-workflow cache, and the table must not change
by a round trip through pandas.
"""

import shutil

from maxmargin.io import atomic_path, current_provenance, provenance_path, rule_logging, write_json

with rule_logging(snakemake) as log:
    for name in ("metrics", "sidecar"):
        with atomic_path(snakemake.output[name]) as tmp:
            shutil.copyfile(snakemake.input[name], tmp)
        log.info("copied %s to %s", snakemake.input[name], snakemake.output[name])
    write_json(current_provenance(), provenance_path(snakemake.output.metrics))
