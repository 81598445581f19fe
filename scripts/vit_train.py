"""Snakemake script: train the ViT of Figures 6-7 (rule vit_train), resuming from its checkpoint when there is one.

A finished checkpoint of the same settings, data and training code restores the outputs without training, unless
the run was started with ``--forcerun vit_train`` (or ``--forceall``).
"""

import json
from pathlib import Path

from maxmargin.experiments.vit import VitSettings, load_image_data, train_vit
from maxmargin.experiments.vit.checkpoint import prune_kept_aside
from maxmargin.experiments.vit.results import save_result
from maxmargin.logs import rule_logging

with rule_logging(snakemake) as log:
    settings = VitSettings.from_config(snakemake.params.reads["vit"])
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    data = load_image_data(settings.data, settings.train.seed, manifest)
    log.info("data %s: %d train, %d test images; settings %s", data.name, len(data.x_train), len(data.x_test), settings)
    retrain = bool(snakemake.resources.retrain)  # --forcerun vit_train or --forceall (workflow/rules/vit.smk)
    result = train_vit(settings, data, snakemake.params.checkpoint, restore=not retrain)
    prune_kept_aside(snakemake.params.checkpoint, snakemake.params.reads["vit"]["checkpoints"]["keep_aside"])
    out = snakemake.output
    table = save_result(result, settings, out.metrics, out.sidecar, out.maps, out.snapshots)
    first, last = table.iloc[0], table.iloc[-1]
    log.info(
        "soft-sparsity %.4f -> %.4f, ||W||_F %.3f -> %.3f, test acc %.3f over %d epochs on %s (%s, %d threads, %s)",
        first.soft_sparsity,
        last.soft_sparsity,
        first.w_frobenius,
        last.w_frobenius,
        last.test_acc,
        last.epoch,
        data.name,
        result.info["device_name"],
        result.info["torch_threads"],
        result.info["seconds_this_call_text"],
    )
