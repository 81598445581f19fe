"""What a ViT run produces and how it is written: the metrics table, its JSON sidecar and the Figure 6 maps."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from maxmargin.experiments.vit.settings import VitSettings
from maxmargin.io import atomic_path, file_sha256, table_record, write_csv, write_npz

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


def save_result(
    result: TrainResult,
    settings: VitSettings,
    metrics_path: str | os.PathLike[str],
    sidecar_path: str | os.PathLike[str],
    maps_path: str | os.PathLike[str],
) -> pd.DataFrame:
    """Write the metrics table, its JSON sidecar (settings, optimizer, dataset, device) and the maps, atomically.

    The maps file holds ``epochs``, ``maps`` (epochs + 1, T), ``cls_self``, ``image``, ``label`` and ``grid``.
    """
    table = pd.DataFrame(result.metrics, columns=METRIC_COLUMNS)
    write_csv(table, metrics_path)
    maps = {
        "epochs": np.arange(len(result.maps)),
        "maps": result.maps,
        "cls_self": result.cls_self,
        "image": result.image,
        "label": np.int64(result.label),
        "grid": np.asarray(result.grid),
    }
    write_npz(maps, maps_path)
    sidecar = {"settings": settings.to_dict(), **result.info, "grid": list(result.grid), "label": result.label}
    # The sha256 (and rows) of the metrics and maps travel with the run: Snakemake's cache keeps no other record.
    sidecar["metrics_table"] = table_record(metrics_path)
    sidecar["maps_sha256"] = file_sha256(maps_path)
    with atomic_path(sidecar_path) as tmp:  # last: a run whose JSON exists wrote everything
        tmp.write_text(json.dumps(sidecar, indent=2) + "\n")
    return table
