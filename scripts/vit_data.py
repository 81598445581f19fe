"""Snakemake script: the ViT's data manifest (rule vit_data): which data set, which files, their md5s."""

from maxmargin.experiments.vit import DataSettings, resolve_data
from maxmargin.io import rule_logging, write_json

with rule_logging(snakemake) as log:
    manifest = resolve_data(DataSettings(**snakemake.params.data))
    write_json(manifest, snakemake.output[0])
    log.info(
        "data set %s (%d files)%s",
        manifest["dataset"],
        len(manifest["md5"]),
        f": {manifest['note']}" * bool(manifest["note"]),
    )
    for tried in manifest["tried"]:
        log.warning("%s not used: %s", tried["dataset"], tried["message"])
