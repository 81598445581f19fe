"""Snakemake script: the ViT's data manifest (rule vit_data): which data set, which files, their md5s."""

from maxmargin.experiments.vit import resolve_data
from maxmargin.files import write_json
from maxmargin.logs import rule_logging

with rule_logging(snakemake) as log:
    manifest = resolve_data(snakemake.params.source, snakemake.params.plan)
    write_json(manifest, snakemake.output[0])
    note = f": {manifest['note']}" if manifest["note"] else ""
    log.info("data set %s (%d files)%s", manifest["dataset"], len(manifest["md5"]), note)
    for tried in manifest["tried"]:
        log.warning("%s not used: %s", tried["dataset"], tried["message"])
