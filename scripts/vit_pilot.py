"""Snakemake script: the pilot of the configured ViT run (rule vit_pilot_run): time, memory, projected hours."""

import dataclasses
import json
from pathlib import Path

from maxmargin.experiments.vit import VitSettings, load_image_data, resolve_device, train_vit
from maxmargin.experiments.vit.checkpoint import remove_checkpoint
from maxmargin.experiments.vit_study import pilot_row, reset_peak_memory
from maxmargin.logs import rule_logging
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    vit = snakemake.params.reads["vit"]
    full = VitSettings.from_config(vit)
    # every epoch measured (the pilot's times are per epoch), no snapshots (no analysis reads a pilot)
    train = dataclasses.replace(full.train, epochs=vit["pilot"]["epochs"], eval_every=1, snapshot_every=0)
    pilot = dataclasses.replace(full, train=train)
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    data = load_image_data(pilot.data, pilot.train.seed, manifest)
    reset_peak_memory(resolve_device(pilot.train.device))
    checkpoint = Path(snakemake.params.checkpoint)
    result = train_vit(pilot, data, checkpoint)
    remove_checkpoint(checkpoint)  # the pilot's own: never resumed by the real run
    row = pilot_row(pilot, result, full.train.epochs)
    write_csv(row, snakemake.output[0])
    r = row.iloc[0].to_dict()
    log.info(
        "pilot of %s on %s (%s, compiled %s): %.1f images/s, %.1f s per epoch, projected %.2f h for %d epochs, "
        "peak memory %.0f MB",
        r["dataset"],
        r["device"],
        r["dtype"],
        r["compiled"],
        r["images_per_s"],
        r["epoch_seconds"],
        r["projected_total_hours"],
        full.train.epochs,
        r["peak_memory_mb"],
    )
