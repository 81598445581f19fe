"""What a ViT run produces: the metrics table, its JSON sidecar and the Figure 6 maps (written by maxmargin.io)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from maxmargin.experiments.vit.settings import VitSettings

METRIC_COLUMNS = [
    "epoch",
    "train_loss",
    "train_acc",
    "test_acc",
    "soft_sparsity",
    "soft_sparsity_image",
    "w_frobenius",
    "w_cosine_previous",
    "w_cosine_final",
    "cls_self_attention",
    "lr",
    "dataset",
]

# What the sidecar says each measured column is.
CONVENTIONS = {
    "soft_sparsity": "mean over the probe images of (||s||_1^2/||s||_2^2)/T, s = last-layer [CLS] attention "
    "averaged over heads, [CLS] self-entry dropped and renormalised over the T patch tokens",
    "soft_sparsity_image": "the same for the single Figure 6 test image",
    "w_frobenius": "||sum_h W_Q,h^T W_K,h||_F of the last block's qkv weight (= ||W_Q^T W_K||_F), "
    "without the 1/sqrt(d_head) scale and the biases",
    "w_cosine_previous": "cosine (Frobenius) between W of this epoch and of the previous one (empty at epoch 0)",
    "w_cosine_final": "cosine (Frobenius) between W of this epoch and of the last epoch",
}


@dataclass
class TrainResult:
    """What a run produces: one metrics row per epoch (0 = initialisation), its wall-clock times, the Figure 6 maps."""

    metrics: list[dict[str, Any]]
    times: list[dict[str, float]]  # per epoch: train_seconds (the training step), epoch_seconds (all of it)
    maps: np.ndarray  # (epochs + 1, T): head-averaged [CLS] patch attention of the fixed image
    cls_self: np.ndarray  # (epochs + 1,): its [CLS] self-attention (dropped from ``maps``)
    image: np.ndarray  # (32, 32, 3) uint8: the fixed image
    label: int
    grid: tuple[int, int]
    info: dict[str, Any]  # device, CPU, threads, dataset, parameter count, resumed epoch


def result_tables(result: TrainResult, settings: VitSettings) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]]:
    """The metrics table, its JSON sidecar (settings, data, machine, every epoch's wall-clock times) and the
    Figure 6 maps of a run.

    The table holds only what the run computed, so that two runs of one config on one machine write the same bytes
    whatever else the machine was doing; the times and the machine go into the sidecar. The maps hold ``epochs``,
    ``maps`` (epochs + 1, T), ``cls_self``, ``image``, ``label`` and ``grid``.
    """
    table = pd.DataFrame(result.metrics, columns=METRIC_COLUMNS)
    sidecar = {
        "settings": settings.to_dict(),
        **result.info,
        "grid": list(result.grid),
        "label": result.label,
        "epoch_times": result.times,
        "columns": CONVENTIONS,
    }
    maps = {
        "epochs": np.arange(len(result.maps)),
        "maps": result.maps,
        "cls_self": result.cls_self,
        "image": result.image,
        "label": np.int64(result.label),
        "grid": np.asarray(result.grid),
    }
    return table, sidecar, maps
