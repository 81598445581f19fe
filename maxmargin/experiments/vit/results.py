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
    "cls_self_attention",
    "lr",
    "dataset",
    "train_seconds",
    "epoch_seconds",
]


@dataclass
class TrainResult:
    """What a run produces: one metrics row per epoch (0 = initialisation) and the Figure 6 maps."""

    metrics: list[dict[str, Any]]
    maps: np.ndarray  # (epochs + 1, T): head-averaged [CLS] patch attention of the fixed image
    cls_self: np.ndarray  # (epochs + 1,): its [CLS] self-attention (dropped from ``maps``)
    image: np.ndarray  # (32, 32, 3) uint8: the fixed image
    label: int
    grid: tuple[int, int]
    info: dict[str, Any]  # device, dataset, parameter count, resumed epoch, conventions


def result_tables(result: TrainResult, settings: VitSettings) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]]:
    """The metrics table, its JSON sidecar (settings, optimizer, dataset, device) and the Figure 6 maps of a run.

    The maps hold ``epochs``, ``maps`` (epochs + 1, T), ``cls_self``, ``image``, ``label`` and ``grid``; they are
    written by :func:`maxmargin.io.save_result`.
    """
    table = pd.DataFrame(result.metrics, columns=METRIC_COLUMNS)
    sidecar = {"settings": settings.to_dict(), **result.info, "grid": list(result.grid), "label": result.label}
    maps = {
        "epochs": np.arange(len(result.maps)),
        "maps": result.maps,
        "cls_self": result.cls_self,
        "image": result.image,
        "label": np.int64(result.label),
        "grid": np.asarray(result.grid),
    }
    return table, sidecar, maps
