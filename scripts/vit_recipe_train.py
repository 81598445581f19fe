"""Snakemake script: train one recipe of the ViT recipe study (rule vit_recipe_train)."""

import torch

from maxmargin.experiments.vit import VitSettings, load_image_data, train_vit
from maxmargin.experiments.vit_study import recipe_table
from maxmargin.io import rule_logging, write_csv

with rule_logging(snakemake) as log:
    torch.set_num_threads(snakemake.threads)
    settings = VitSettings.from_config(dict(snakemake.params.settings))
    log.info("recipe %s: %s", snakemake.wildcards.recipe, settings.train)
    data = load_image_data(settings.data, settings.train.seed)
    result = train_vit(settings, data, snakemake.params.checkpoint)
    table = recipe_table(snakemake.wildcards.recipe, settings, result)
    write_csv(table, snakemake.output[0])
    last = table.iloc[-1]
    log.info(
        "final test acc %.3f, soft-sparsity %.3f, ||W||_F %.2f", last.test_acc, last.soft_sparsity, last.w_frobenius
    )
