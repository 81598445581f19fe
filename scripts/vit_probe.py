"""Snakemake script: each last-layer head of the finished ViT run against its W-ATT-SVM solution, at every snapshot
(rule vit_probe): reads the run's snapshots and probe images, trains nothing. The snapshot file is read only once it
and the run's sidecar are this config's run's (maxmargin/experiments/vit_run_snapshots.py)."""

import json
import time
from pathlib import Path

import pandas as pd
import torch
from threadpoolctl import threadpool_limits

from maxmargin.experiments.vit import VitSettings, load_image_data
from maxmargin.experiments.vit.w_svm_probe import WSvmSettings, image_sets, probe_snapshots
from maxmargin.experiments.vit_image_counts import chosen_image_count, solved_images
from maxmargin.experiments.vit_run_snapshots import run_snapshots
from maxmargin.logs import rule_logging
from maxmargin.registry import columns
from maxmargin.tables import read_table, write_csv

with rule_logging(snakemake) as log:
    vit = snakemake.params.reads["vit"]
    settings, probe = VitSettings.from_config(vit), WSvmSettings.from_config(vit["w_svm"])
    torch.set_num_threads(settings.train.threads)
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    data = load_image_data(settings.data, settings.train.seed, manifest)
    images = image_sets(data, probe.image_sets, settings.probe.n_images)
    n = probe.images
    if "curve" in snakemake.input.keys():
        chosen_on = "train" if "train" in probe.image_sets else "test"
        n = chosen_image_count(read_table(snakemake.input.curve), chosen_on, probe.curve_tol, probe.images)
        log.info(
            "%d images, read from the image-count curve of the %s images (vit.w_svm.curve_tol; at most "
            "vit.w_svm.images = %d)",
            n,
            chosen_on,
            probe.images,
        )
    # a sidecar, metrics table or snapshot file of another run (a partial restore, a sync) is refused, named
    snapshots = run_snapshots(snakemake.input.snapshots, snakemake.input.sidecar, settings.fingerprint(data.identity))
    solved = {name: solved_images(probe, name, len(x), n) for name, x in images.items()}
    log.info("snapshots of epochs %s; images of %s: %s", snapshots["epochs"], data.name, solved)
    t0, cpu0 = time.perf_counter(), time.process_time()
    with threadpool_limits(settings.train.threads):  # as many BLAS threads as torch's: oversubscription costs 10x
        rows = probe_snapshots(snapshots, settings.model, images, probe, 2 * settings.train.batch_size, n)
    log.info("the probe took %.0f s (%.0f s of CPU)", time.perf_counter() - t0, time.process_time() - cpu0)
    names = columns("vit_w_svm")
    table = pd.DataFrame(rows, columns=names[:-1]).assign(dataset=data.name)[names]
    write_csv(table, snakemake.output[0])
    for (epoch, which), g in table.groupby(["epoch", "images"]):
        log.info(
            "epoch %d, %s images (%d): cos(Wt_h, W_mm,h) %s; null (rank d_head) %s; ceiling %s; %d null solves failed",
            epoch,
            which,
            g["n_images"].iloc[0],
            " ".join(f"{c:.3f}" for c in g["cosine"]),
            " ".join(f"{c:.3f}" for c in g["null_rank"]),
            " ".join(f"{c:.3f}" for c in g["ceiling"]),
            g["null_failed"].sum(),
        )
