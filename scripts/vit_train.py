"""Snakemake script: train the ViT of Figures 6-7 (rule vit_train), resuming from its checkpoint when there is one.

A finished checkpoint of the same settings, data and code restores the outputs without training, unless the run
was started with ``--forcerun vit_train`` (or ``--forceall``).
"""

import torch

from maxmargin.experiments.vit import VitSettings, load_image_data, train_vit
from maxmargin.io import rule_logging, save_result

with rule_logging(snakemake) as log:
    torch.set_num_threads(snakemake.threads)
    settings = VitSettings.from_config(dict(snakemake.params.settings))
    log.info("ViT settings %s", settings)
    data = load_image_data(settings.data, settings.train.seed)
    log.info("data %s: %d train, %d test images", data.name, len(data.x_train), len(data.x_test))
    # A finished run of the same settings (outputs lost to a later failure) is restored, not retrained.
    retrain = bool(snakemake.resources.retrain)  # --forcerun vit_train or --forceall (workflow/rules/vit.smk)
    result = train_vit(settings, data, snakemake.params.checkpoint, restore=not retrain)
    out = snakemake.output
    table = save_result(result, settings, out.metrics, out.sidecar, out.maps)
    first, last = table.iloc[0], table.iloc[-1]
    log.info(
        "soft-sparsity %.4f -> %.4f, ||W||_F %.3f -> %.3f over %d epochs on %s (%s)",
        first.soft_sparsity,
        last.soft_sparsity,
        first.w_frobenius,
        last.w_frobenius,
        last.epoch,
        data.name,
        result.info["device"],
    )
