"""Snakemake script: draw Figure 7 (rule vit_fig7) from the ViT run's metrics and sidecar and the linear baseline."""

import json
from pathlib import Path

from maxmargin.io import read_table, rule_logging, save_figure
from maxmargin.pipeline import drawing_function

with rule_logging(snakemake) as log:
    sidecar = json.loads(Path(snakemake.input.sidecar).read_text())
    metrics, baseline = read_table(snakemake.input.metrics), read_table(snakemake.input.baseline)
    fig = drawing_function("fig7")(
        metrics, baseline, sidecar, snakemake.params.fraction, snakemake.params.settings_footer
    )
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": "maxmargin fig7"})
    log.info("drew fig7 (dataset %s)", sidecar["dataset"])
