"""Snakemake script: copy the ViT run's metrics table and sidecar into the tables folder (rule vit_metrics_table).

Byte for byte: the run's files may come from Snakemake's between-workflow cache, and the table must not change
by a round trip through pandas. The run's table is first checked against the sha256, row count and settings its
JSON sidecar records, and against its contract.
"""

import json
import shutil
from pathlib import Path

from maxmargin.files import atomic_path
from maxmargin.logs import rule_logging
from maxmargin.provenance import write_provenance
from maxmargin.tables import read_table

with rule_logging(snakemake) as log:
    record = json.loads(Path(snakemake.input.sidecar).read_text()).get("metrics_table", {})
    read_table(snakemake.input.metrics, record)
    for name in ("metrics", "sidecar"):
        with atomic_path(snakemake.output[name]) as tmp:
            shutil.copyfile(snakemake.input[name], tmp)
        log.info("copied %s to %s", snakemake.input[name], snakemake.output[name])
    write_provenance(snakemake.output.metrics)
