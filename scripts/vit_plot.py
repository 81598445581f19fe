"""Snakemake script: draw Figure 6 (rule vit_fig6) or Figure 7 (rule vit_fig7) from the ViT run's outputs."""

import json
from pathlib import Path

import numpy as np
import pandas as pd

from maxmargin.figures.vit import fig6, fig7
from maxmargin.io import rule_logging
from maxmargin.figures.style import save_figure

with rule_logging(snakemake) as log:  # noqa: F821 (snakemake is injected)
    sidecar = json.loads(Path(snakemake.input.sidecar).read_text())  # noqa: F821
    if snakemake.rule == "vit_fig6":  # noqa: F821
        with np.load(snakemake.input.maps) as f:  # noqa: F821
            fig = fig6({key: f[key] for key in f.files}, sidecar, list(snakemake.params.epochs))  # noqa: F821
        name = "fig6"
    else:
        fig = fig7(pd.read_csv(snakemake.input.metrics), sidecar)  # noqa: F821
        name = "fig7"
    save_figure(fig, snakemake.output.pdf, snakemake.output.png, {"Title": f"maxmargin {name}"})  # noqa: F821
    log.info("drew %s (dataset %s)", name, sidecar["dataset"])
