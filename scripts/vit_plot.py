"""Snakemake script: draw Figure 6 (rule vit_fig6) or Figure 7 (rule vit_fig7) from the ViT run's outputs."""

import json
from pathlib import Path

import numpy as np
import pandas as pd

from maxmargin.figures.style import save_figure
from maxmargin.figures.vit import fig6, fig7
from maxmargin.io import rule_logging

with rule_logging(snakemake) as log:
    sidecar = json.loads(Path(snakemake.input.sidecar).read_text())
    if snakemake.rule == "vit_fig6":
        with np.load(snakemake.input.maps) as f:
            fig = fig6({key: f[key] for key in f.files}, sidecar, list(snakemake.params.epochs))
        name = "fig6"
    else:
        fig = fig7(pd.read_csv(snakemake.input.metrics), sidecar)
        name = "fig7"
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {name}"})
    log.info("drew %s (dataset %s)", name, sidecar["dataset"])
