"""Snakemake script: the linear baseline of the ViT's learning bar (rule vit_baseline)."""

import json
from pathlib import Path

from maxmargin.experiments.vit import DataSettings, load_image_data
from maxmargin.experiments.vit.baseline import linear_baseline
from maxmargin.logs import rule_logging
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    vit = snakemake.params.reads["vit"]
    manifest = json.loads(Path(snakemake.input.manifest).read_text())
    data = load_image_data(DataSettings(**vit["data"]), vit["train"]["seed"], manifest)
    baseline = vit["baseline"]
    table = linear_baseline(
        data, vit["model"]["num_classes"], baseline["max_iter"], baseline["C"], vit["train"]["threads"]
    )
    write_csv(table, snakemake.output[0])
    row = table.iloc[0]
    log.info(
        "logistic regression on %d pixels of %d %s images: test acc %.4f (train %.4f), %d iterations%s",
        row.n_features,
        row.n_train,
        row.dataset,
        row.test_acc,
        row.train_acc,
        row.n_iter,
        "" if row.converged else " (max_iter reached)",
    )
