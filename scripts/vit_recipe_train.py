"""Snakemake script: train one recipe of the ViT recipe study (rule vit_recipe_train)."""

import torch

from maxmargin.io import rule_logging, write_csv
from maxmargin.experiments.vit import VitSettings, load_image_data, train_vit
from maxmargin.experiments.vit_study import recipe_table

with rule_logging(snakemake) as log:  # noqa: F821 (snakemake is injected)
    torch.set_num_threads(snakemake.threads)  # noqa: F821
    settings = VitSettings.from_config(dict(snakemake.params.settings))  # noqa: F821
    log.info("recipe %s: %s", snakemake.wildcards.recipe, settings.train)  # noqa: F821
    data = load_image_data(settings.data, settings.train.seed)
    result = train_vit(settings, data, snakemake.params.checkpoint)  # noqa: F821
    table = recipe_table(snakemake.wildcards.recipe, settings, result)  # noqa: F821
    write_csv(table, snakemake.output[0])  # noqa: F821
    last = table.iloc[-1]
    log.info("final test acc %.3f, soft-sparsity %.3f, ||W||_F %.2f", last.test_acc, last.soft_sparsity,
             last.w_frobenius)  # fmt: skip
