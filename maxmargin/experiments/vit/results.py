"""What a ViT run produces: the metrics table, its JSON sidecar and the Figure 6 maps, and how they are written."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from maxmargin import registry
from maxmargin.experiments.vit.settings import VitSettings

if TYPE_CHECKING:  # the docs page's job imports this module without torch
    from maxmargin.experiments.vit.snapshots import Snapshots
from maxmargin.files import file_sha256, write_json, write_npz
from maxmargin.provenance import current_provenance, table_record
from maxmargin.tables import markdown_table, write_csv

METRIC_COLUMNS = registry.columns("vit_run_metrics")

# What the sidecar says each column is: the registry's descriptions.
CONVENTIONS = {c.name: c.description for c in registry.table("vit_run_metrics").columns}


@dataclass
class TrainResult:
    """What a run produces: one metrics row per evaluated epoch (0 = initialisation), its wall-clock times, the
    Figure 6 maps, and the model's snapshots for the analyses after the run."""

    metrics: list[dict[str, Any]]
    # per row: train_seconds (the training steps), epoch_seconds (all of it), epochs (trained since the last row)
    times: list[dict[str, float]]
    maps: np.ndarray  # (rows, T): head-averaged [CLS] patch attention of the fixed image
    cls_self: np.ndarray  # (rows,): its [CLS] self-attention (dropped from ``maps``)
    image: np.ndarray  # (32, 32, 3) uint8: the fixed image
    label: int
    grid: tuple[int, int]
    info: dict[str, Any]  # device, CPU, threads, dataset, parameter count, resumed epoch
    snapshots: Snapshots | None = None  # the folder of the run's snapshots (vit.train.snapshot_every)
    snapshot_epochs: tuple[int, ...] | list[int] = ()


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
        "snapshot_epochs": list(result.snapshot_epochs),
    }
    maps = {
        "epochs": np.asarray([row["epoch"] for row in result.metrics]),
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
    snapshots_path: str | os.PathLike[str],
) -> pd.DataFrame:
    """Write a run's metrics table, its maps, its snapshots and its JSON sidecar atomically (the files:
    :func:`result_tables`, :meth:`Snapshots.gather`).

    The JSON is written last and holds the sha256 and rows of the others and the settings they were made from
    (``reads``): Snakemake's between-workflow cache keeps these files and nothing beside them.
    """
    table, sidecar, maps = result_tables(result, settings)
    write_csv(table, metrics_path)
    write_npz(maps, maps_path)
    if result.snapshots is None:
        raise ValueError("this run kept no snapshots (vit.train.snapshot_every is 0): nothing to write")
    meta = {"fingerprint": result.info["fingerprint"], "model": settings.to_dict()["model"]}
    result.snapshots.gather(snapshots_path, list(result.snapshot_epochs), meta)
    sidecar["metrics_table"] = {**table_record(metrics_path), "reads": (current_provenance() or {}).get("reads", {})}
    sidecar["maps_sha256"] = file_sha256(maps_path)
    sidecar["snapshots_sha256"] = file_sha256(snapshots_path)
    write_json(sidecar, sidecar_path)
    return table


# The metrics of the docs page, in the paper's words.
_PAGE_COLUMNS = {
    "epoch": "epoch",
    "train_loss": "train loss",
    "train_acc": "train acc",
    "test_acc": "test acc",
    "soft_sparsity": "soft-sparsity",
    "w_frobenius": "||W||_F",
    "w_cosine_previous": "cos(W, previous W)",
    "w_cosine_final": "cos(W, final W)",
    "cls_max_attention": "saturation",  # absent from runs made before it was measured
}


def run_page(
    metrics: pd.DataFrame,
    baseline: pd.DataFrame,
    sidecar: dict[str, Any],
    claims: pd.DataFrame,
    w_svm: pd.DataFrame,
    curve: pd.DataFrame | None = None,
) -> str:
    """The body of a ViT run's docs page (Markdown): data, model, recipe, machine and times from the run's sidecar,
    the linear baseline, every evaluated epoch's metrics (Figures 6-7's numbers), each head against its
    W-ATT-SVM solution (table ``vit_w_svm``) and the ViT claims measured from them."""
    s, times = sidecar["settings"], sidecar["epoch_times"]
    m, t = s["model"], s["train"]
    grid = "x".join(str(g) for g in sidecar["grid"])
    recipe = f"{t['optimizer']} at lr {t['lr']:g}" + (
        f", momentum {t['momentum']:g}" if t["optimizer"] == "sgd" else ""
    )
    recipe += f", batch {t['batch_size']}, {t['epochs']} epochs"
    recipe += f", warm-up {t['warmup_epochs']:g} epochs" if t["warmup_epochs"] else ""
    recipe += f", {t['schedule']} schedule, gradient clipping at {t['grad_clip']:g}" if t["grad_clip"] else ""
    recipe += f", weight decay {t['weight_decay']:g}" if t["weight_decay"] else ""
    table = metrics[[c for c in _PAGE_COLUMNS if c in metrics]].rename(columns=_PAGE_COLUMNS)
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
    sections = ["", "## Every epoch", "", markdown_table(table), *w_svm_section(w_svm, curve)]
    sections += ["## The ViT claims", "", markdown_table(claims)]
    return "\n".join(lines + sections)


def w_svm_section(table: pd.DataFrame, curve: pd.DataFrame | None = None) -> list[str]:
    """The page's per-head W-ATT-SVM cosines (table ``vit_w_svm``): for each image set, on its number of images, one
    row per measured epoch, a column per head, beside the matched null, the rank ceiling and the nuclear-norm cosine
    (head means); then, where measured, the cosine against the number of images (table ``vit_w_svm_images``)."""
    if table.empty:
        return []
    sets = table["images"].fillna("test") if "images" in table else pd.Series("test", index=table.index)
    lines = [
        "## Each head against its max-margin solution",
        "",
        "cos(Wt_h, W_mm,h) of each last-layer head with the Frobenius W-ATT-SVM solution of the tokens it selects "
        "on the images each set's line names, beside the head means of its matched rank-d_head null (on the same "
        "images), its rank ceiling, its cosine with the nuclear-norm solution (on the first vit.w_svm.nuclear_images) "
        "and the share of images whose selection is unchanged since the previous measured epoch (docs/vit.md; every "
        "column: table `vit_w_svm`; each head's seconds: rule vit_probe's log).",
    ]
    for name, rows in table.groupby(sets, sort=False):
        wide = rows.pivot(index="epoch", columns="head", values="cosine")
        wide.columns = [f"head {h}" for h in wide.columns]
        means = rows.groupby("epoch")[["null_rank", "ceiling", "cosine_nuclear", "selection_kept"]].mean()
        wide = wide.join(means.rename(columns=_W_SVM_MEANS))
        n, margins = (sorted({int(v) for v in rows[c]}) for c in ("n_images", "n_constraints"))
        counts = f"{'/'.join(f'{v:,}' for v in n)} images, {'/'.join(f'{v:,}' for v in margins)} constraints a head"
        lines += ["", f"On the {_IMAGE_SETS[name]}, {counts}:", "", markdown_table(wide.reset_index())]
    return lines + (curve_section(curve) if curve is not None and not curve.empty else [])


_IMAGE_SETS = {
    "test": "held-out probe images (the first test images)",
    "train": "training images (the first ones, or all: the ones the loss is on)",
}


def curve_section(curve: pd.DataFrame) -> list[str]:
    """The cosine at the last snapshot against the number of images the W-ATT-SVM is solved on (table
    ``vit_w_svm_images``): head means and the rank null, per image set."""
    means = curve.groupby(["n_images", "images"])[["cosine", "null_rank"]].mean().unstack("images")
    means.columns = [f"{'cosine' if c == 'cosine' else 'null'} ({s})" for c, s in means.columns]
    return [
        "",
        "### The cosine against the number of images",
        "",
        "At the last snapshot, each head against its W-ATT-SVM solved on the first n images of each set (head "
        "means; the null: random rank-d_head matrices on the same images; table `vit_w_svm_images`). Rule "
        "vit_probe read its number of images from this curve (vit.w_svm.curve_tol).",
        "",
        markdown_table(means.reset_index()),
    ]


_W_SVM_MEANS = {
    "null_rank": "null (rank d_head)",
    "ceiling": "ceiling",
    "cosine_nuclear": "cos with nuclear",
    "selection_kept": "selections kept",
}
