"""Snakemake script: each last-layer head at the run's last snapshot against its W-ATT-SVM solved on the first n
images of each image set, for every n of vit.w_svm.curve_images (rule vit_probe_images): trains nothing."""

import json
import time
from pathlib import Path

import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from maxmargin.experiments.vit import VitSettings, load_image_data
from maxmargin.experiments.vit.w_svm_probe import WSvmSettings, image_sets, probe_image_counts
from maxmargin.experiments.vit_image_counts import curve_counts
from maxmargin.experiments.vit_run_snapshots import run_snapshots
from maxmargin.logs import rule_logging
from maxmargin.registry import columns
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    vit = snakemake.params.reads["vit"]
    settings, probe = VitSettings.from_config(vit), WSvmSettings.from_config(vit["w_svm"])
    torch.set_num_threads(settings.train.threads)
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    data = load_image_data(settings.data, settings.train.seed, manifest)
    images = image_sets(data, probe.image_sets, settings.probe.n_images)
    # a sidecar, metrics table or snapshot file of another run (a partial restore, a sync) is refused, named
    snapshots = run_snapshots(snakemake.input.snapshots, snakemake.input.sidecar, settings.fingerprint(data.identity))
    last = max(int(e) for e in snapshots["epochs"])
    counts = {name: curve_counts(probe, name, len(x)) for name, x in images.items()}
    log.info("epoch %d; image counts of %s: %s", last, data.name, counts)
    t0, cpu0 = time.perf_counter(), time.process_time()
    with threadpool_limits(settings.train.threads):  # as many BLAS threads as torch's: oversubscription costs 10x
        rows = probe_image_counts(
            snapshots["states"][last], settings.model, images, probe, 2 * settings.train.batch_size
        )
    log.info("the curve took %.0f s (%.0f s of CPU)", time.perf_counter() - t0, time.process_time() - cpu0)
    names = columns("vit_w_svm_images")
    table = pd.DataFrame(rows, columns=names[:-1]).assign(dataset=data.name)[names]
    write_csv(table, snakemake.output[0])
    for (which, n), g in table.groupby(["images", "n_images"]):
        log.info("%s, %d images: head-mean cosine %.3f, null %.3f", which, n, g["cosine"].mean(), g["null_rank"].mean())
