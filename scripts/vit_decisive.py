"""Snakemake script of rules vit_decisive_ray (the ray test) and vit_decisive_gd (GD on W with the tokens frozen, and
the one-layer model on the real tokens): the decisive experiment at the snapshots of vit.decisive.at, from the run's
snapshots and training images; trains nothing. The snapshot file is read only once it and the run's sidecar are this
config's run's (maxmargin/experiments/vit_run_snapshots.py). The times go to the table's sidecar, not into it."""

import json
from pathlib import Path

import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from maxmargin.experiments.vit import VitSettings, load_image_data
from maxmargin.experiments.vit.data import normalize
from maxmargin.experiments.vit_decisive import DecisiveSettings, decisive_rows
from maxmargin.experiments.vit_run_snapshots import run_snapshots
from maxmargin.logs import rule_logging
from maxmargin.provenance import table_record, write_provenance
from maxmargin.registry import columns
from maxmargin.tables import write_csv

PARTS = {"vit_decisive_ray": ("ray", "vit_decisive_ray"), "vit_decisive_gd": ("gd", "vit_decisive_gd")}

with rule_logging(snakemake) as log:
    part, name = PARTS[snakemake.rule]
    vit = snakemake.params.reads["vit"]
    settings, decisive = VitSettings.from_config(vit), DecisiveSettings.from_config(vit["decisive"])
    torch.set_num_threads(settings.train.threads)
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    data = load_image_data(settings.data, settings.train.seed, manifest)
    snapshots = run_snapshots(snakemake.input.snapshots, snakemake.input.sidecar, settings.fingerprint(data.identity))
    images = normalize(data.x_train, data.mean, data.std)
    log.info("%s at the snapshots of vit.decisive.at, on %d training images of %s", part, len(images), data.name)
    with threadpool_limits(settings.train.threads):  # as many BLAS threads as torch's: oversubscription costs 10x
        rows, times = decisive_rows(
            snapshots, settings.model, images, data.y_train, vit["w_svm"], decisive,
            settings.train.epochs, 2 * settings.train.batch_size, part,
        )  # fmt: skip
    names = columns(name)
    table = pd.DataFrame(rows, columns=names[:-1]).assign(dataset=data.name)[names]
    write_csv(table, snakemake.output[0])
    write_provenance(snakemake.output[0], {**table_record(snakemake.output[0]), "seconds": times})
    for epoch, seconds in times.items():
        log.info("epoch %s: %.1f s of CPU, %.1f s of wall", epoch, seconds["cpu_seconds"], seconds["wall_seconds"])
