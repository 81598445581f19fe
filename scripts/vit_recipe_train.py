"""Snakemake script: train one recipe of the ViT recipe study (rule vit_recipe_train)."""

import json
from pathlib import Path

from maxmargin.experiments.vit import load_image_data, train_vit
from maxmargin.experiments.vit.checkpoint import prune_kept_aside
from maxmargin.experiments.vit_study import recipe_settings, recipe_table
from maxmargin.logs import rule_logging
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    cfg, recipe = snakemake.params.reads, snakemake.wildcards.recipe
    settings = recipe_settings(cfg["vit"], cfg["vit_recipes"], recipe)
    log.info("recipe %s: %s, %s", recipe, settings.model, settings.train)
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    data = load_image_data(settings.data, settings.train.seed, manifest)
    retrain = bool(snakemake.resources.retrain)  # --forcerun vit_recipe_train or --forceall
    result = train_vit(settings, data, snakemake.params.checkpoint, restore=not retrain)
    prune_kept_aside(snakemake.params.checkpoint, cfg["vit"]["checkpoints"]["keep_aside"])
    table = recipe_table(recipe, settings, result)
    write_csv(table, snakemake.output[0])
    last = table.iloc[-1]
    log.info(
        "final test acc %.3f, soft-sparsity %.3f, ||W||_F %.2f after %d steps (%s)",
        last.test_acc,
        last.soft_sparsity,
        last.w_frobenius,
        last.step,
        result.info["seconds_this_call_text"],
    )
