"""Snakemake script: draw Figure 6 (rule vit_fig6) from the ViT run's maps, metrics, sidecar and linear baseline."""

import json
from pathlib import Path

import numpy as np

from maxmargin.io import read_table, rule_logging, save_figure, verify_file
from maxmargin.pipeline import drawing_function

with rule_logging(snakemake) as log:
    sidecar = json.loads(Path(snakemake.input.sidecar).read_text())
    verify_file(snakemake.input.maps, sidecar.get("maps_sha256"), "vit_train")
    with np.load(snakemake.input.maps) as maps:
        arrays = {key: maps[key] for key in maps.files}
    p = snakemake.params
    fig = drawing_function("fig6")(
        arrays,
        read_table(snakemake.input.metrics),
        read_table(snakemake.input.baseline),
        sidecar,
        list(p.epochs),
        p.fraction,
        p.settings_footer,
    )
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": "maxmargin fig6"})
    log.info("drew fig6 (dataset %s)", sidecar["dataset"])
