"""Snakemake script: the per-head W-ATT-SVM cosines of the ViT run, from its JSON sidecar (rule vit_w_svm_table)."""

import json
from pathlib import Path

from maxmargin.experiments.vit.results import w_svm_table
from maxmargin.logs import rule_logging
from maxmargin.tables import write_csv

with rule_logging(snakemake) as log:
    sidecar = json.loads(Path(snakemake.input.sidecar).read_text())
    table = w_svm_table(sidecar)
    write_csv(table, snakemake.output[0])
    seconds = sum(row["seconds"] for row in sidecar["w_svm"])
    train = sum(t["train_seconds"] for t in sidecar["epoch_times"])
    log.info(
        "W-ATT-SVM: %d rows, %.1f s (%.1f%% of the %.1f s of training)",
        len(table),
        seconds,
        100 * seconds / max(train, 1e-9),
        train,
    )
    for epoch, rows in table.groupby("epoch"):
        log.info("epoch %d: cos(Wt_h, W_mm,h) %s", epoch, " ".join(f"{c:.3f}" for c in rows["cosine"]))
