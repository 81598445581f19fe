"""What a ViT run produces: the metrics table, its JSON sidecar and the Figure 6 maps, and how they are written."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from maxmargin import registry
from maxmargin.experiments.vit.settings import VitSettings
from maxmargin.files import file_sha256, write_json, write_npz
from maxmargin.provenance import current_provenance, table_record
from maxmargin.tables import markdown_table, write_csv

METRIC_COLUMNS = registry.columns("vit_run_metrics")
W_SVM_COLUMNS = registry.columns("vit_w_svm")

# What the sidecar says each column is: the registry's descriptions.
CONVENTIONS = {c.name: c.description for c in registry.table("vit_run_metrics").columns}


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
    # per head of the last layer at the W-ATT-SVM epochs (probes.WSvmProbe); none where the probe is off
    w_svm: list[dict[str, Any]] = field(default_factory=list)


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
        "w_svm": result.w_svm,
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


def save_result(
    result: TrainResult,
    settings: VitSettings,
    metrics_path: str | os.PathLike[str],
    sidecar_path: str | os.PathLike[str],
    maps_path: str | os.PathLike[str],
) -> pd.DataFrame:
    """Write a run's metrics table, its maps and its JSON sidecar atomically (the files: :func:`result_tables`).

    The JSON is written last and holds the sha256 and rows of the other two and the settings they were made from
    (``reads``): Snakemake's between-workflow cache keeps these three files and nothing beside them.
    """
    table, sidecar, maps = result_tables(result, settings)
    write_csv(table, metrics_path)
    write_npz(maps, maps_path)
    sidecar["metrics_table"] = {**table_record(metrics_path), "reads": (current_provenance() or {}).get("reads", {})}
    sidecar["maps_sha256"] = file_sha256(maps_path)
    write_json(sidecar, sidecar_path)
    return table


# The metrics of the docs page, in the paper's words.
_PAGE_COLUMNS = {
    "epoch": "epoch",
    "test_acc": "test acc",
    "soft_sparsity": "soft-sparsity",
    "w_frobenius": "||W||_F",
    "w_cosine_previous": "cos(W, previous W)",
    "w_cosine_final": "cos(W, final W)",
}


def run_page(metrics: pd.DataFrame, baseline: pd.DataFrame, sidecar: dict[str, Any], claims: pd.DataFrame) -> str:
    """The body of a ViT run's docs page (Markdown): data, model, recipe, machine and times from the run's sidecar,
    the linear baseline, every epoch's metrics (Figures 6-7's numbers) and the ViT claims measured from them."""
    s, times = sidecar["settings"], sidecar["epoch_times"]
    m, t = s["model"], s["train"]
    grid = "x".join(str(g) for g in sidecar["grid"])
    recipe = f"{t['optimizer']} at lr {t['lr']:g}, batch {t['batch_size']}, {t['epochs']} epochs"
    recipe += f", warm-up {t['warmup_epochs']:g} epochs" if t["warmup_epochs"] else ""
    recipe += f", {t['schedule']} schedule, gradient clipping at {t['grad_clip']:g}" if t["grad_clip"] else ""
    recipe += f", weight decay {t['weight_decay']:g}" if t["weight_decay"] else ""
    table = metrics[list(_PAGE_COLUMNS)].rename(columns=_PAGE_COLUMNS)
    lines = [
        f"- Data: {sidecar['dataset']}, {sidecar['n_train']} training and {sidecar['n_test']} test images "
        f"(soft-sparsity over the first {sidecar['n_probe']}).",
        f"- Model: ViT {m['embed_dim']}-d, depth {m['depth']}, {m['num_heads']} heads, patch {m['patch_size']} "
        f"({grid} tokens + [CLS]), {sidecar['n_parameters']:,} parameters.",
        f"- Recipe: {recipe}; {sidecar['steps']} optimiser steps.",
        f"- Machine: {sidecar['device']} ({sidecar['device_name']}), {sidecar['torch_threads']} torch threads, "
        f"torch {sidecar['torch_version']}. Training took {sum(x['epoch_seconds'] for x in times) / 60:.1f} min "
        "(sum of the epoch times in the run's sidecar).",
        f"- Linear baseline (logistic regression on the same training pixels): test accuracy "
        f"{float(baseline['test_acc'].iloc[0]):.3f}; chance {1 / m['num_classes']:.3f}.",
    ]
    sections = ["", "## Every epoch", "", markdown_table(table), *_w_svm_section(sidecar)]
    sections += ["## The ViT claims", "", markdown_table(claims)]
    return "\n".join(lines + sections)


def _w_svm_section(sidecar: dict[str, Any]) -> list[str]:
    """The page's per-head W-ATT-SVM cosines (table ``vit_w_svm``): one row per measured epoch, a column per head."""
    table = w_svm_table(sidecar)
    if table.empty:
        return []
    wide = table.pivot(index="epoch", columns="head", values="cosine")
    wide.columns = [f"head {h}" for h in wide.columns]
    wide["soft-margin heads"] = table.groupby("epoch")["hard_margin"].apply(lambda h: int((~h.astype(bool)).sum()))
    n = int(table["n_constraints"].iloc[0])
    return [
        "## Each head against its max-margin solution",
        "",
        f"cos(Wt_h, W_mm,h) of each last-layer head with the Frobenius W-ATT-SVM solution of the tokens it selects "
        f"({n} constraints; docs/vit.md; epoch 0 is the null).",
        "",
        markdown_table(wide.reset_index()),
    ]


def w_svm_table(sidecar: dict[str, Any]) -> pd.DataFrame:
    """The per-head W-ATT-SVM rows of a run's sidecar (``w_svm``) as table ``vit_w_svm``, each head's epoch-0
    cosine (the null: the initialisation's own tokens) beside every epoch's."""
    table = pd.DataFrame(sidecar.get("w_svm", []), columns=[c for c in W_SVM_COLUMNS if c != "cosine_init"])
    if table.empty:
        return pd.DataFrame(columns=W_SVM_COLUMNS)
    init = table[table["epoch"] == 0].set_index("head")["cosine"]
    table["cosine_init"] = table["head"].map(init)
    table["dataset"] = sidecar["dataset"]
    return table[W_SVM_COLUMNS]
