"""The ViT recipe study's settings and the pilot's projection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG, REPO

from maxmargin.experiments import vit_study
from maxmargin.experiments.vit import TrainResult
from maxmargin.experiments.vit.settings import recipe_config


def test_recipe_merges_the_proxy_and_the_recipe_over_the_vit_block():
    vit, study = DEFAULT_CONFIG["vit"], DEFAULT_CONFIG["vit_recipes"]
    (recipe,) = [r for r in study["recipes"] if r["name"] == "adamw-cosine"]
    name = recipe["name"]
    s = vit_study.recipe_settings(vit, study, name)
    assert s.model.embed_dim == study["model"]["embed_dim"] and s.model.mlp_ratio == vit["model"]["mlp_ratio"]
    assert s.train.epochs == study["train"]["epochs"] and s.train.seed == vit["train"]["seed"]
    assert (s.train.optimizer, s.train.schedule) == (
        recipe["optimizer"],
        recipe["schedule"],
    )
    assert s.data.n_train == study["data"]["n_train"] and s.data.root == vit["data"]["root"]
    full = vit_study.recipe_settings(vit, {**study, "proxy": False}, name)
    assert full.model.embed_dim == vit["model"]["embed_dim"] and full.data.n_train == vit["data"]["n_train"]
    with pytest.raises(ValueError, match="unknown vit_recipes recipe 'nope'"):
        recipe_config(vit, study, "nope")


def test_pilot_projects_every_part_of_an_epoch():
    metrics = [
        {"epoch": 0, "train_loss": 2.4, "test_acc": 0.1},
        {"epoch": 1, "train_loss": 2.0, "test_acc": 0.3},
        {"epoch": 2, "train_loss": 1.8, "test_acc": 0.4},
    ]
    times = [
        {"epoch": 0, "epoch_seconds": 5.0, "train_seconds": 0.0},
        {"epoch": 1, "epoch_seconds": 40.0, "train_seconds": 35.0},  # compilation
        {"epoch": 2, "epoch_seconds": 12.0, "train_seconds": 10.0},
    ]
    info = {"n_train": 50000, "device_name": "cpu", "peak_memory_mb": 123.0, "dataset": "fashion_mnist"}
    result = TrainResult(metrics, times, np.zeros((3, 4)), np.zeros(3), np.zeros((32, 32, 3)), 0, (2, 2), info)
    settings = vit_study.recipe_settings(DEFAULT_CONFIG["vit"], DEFAULT_CONFIG["vit_recipes"], "adam-3e-3-fixed")
    row = vit_study.pilot_row(settings, result, full_epochs=400).iloc[0]
    assert row["epoch_seconds"] == 12.0 and row["images_per_s"] == 5000.0
    assert row["projected_total_hours"] == pytest.approx((5.0 + 400 * 12.0) / 3600)
    assert (row["first_train_loss"], row["last_train_loss"], row["test_acc"]) == (2.0, 1.8, 0.4)
    assert list(vit_study.pilot_row(settings, result, 400).columns) == vit_study.PILOT_COLUMNS
    assert isinstance(row["compiled"], bool | np.bool_) and row["dtype"] == "float32"
    assert pd.notna(row["peak_memory_mb"]) and row["dataset"] == "fashion_mnist"


def test_the_docs_recipe_table_is_read_from_the_study_table():
    rows = []
    for recipe, optimizer, w_end, acc in (("sgd-fixed", "sgd", 8.5, 0.535), ("adam-fixed", "adam", 42.48, 0.095)):
        for epoch, (sparsity, w, test_acc, cos) in enumerate([(1.0, 8.5, 0.1, np.nan), (0.5, w_end, acc, 0.97)]):
            rows.append(
                {"recipe": recipe, "optimizer": optimizer, "lr": 0.003, "warmup_epochs": 0.0, "schedule": "constant",
                 "weight_decay": 0.0, "grad_clip": 0.0, "lr_base_width": 0 if optimizer == "sgd" else 96,
                 "embed_dim": 768, "depth": 12, "patch_size": 8, "batch_size": 16, "n_train": 480, "epoch": epoch,
                 "step": 30 * epoch, "train_loss": 2.0, "test_acc": test_acc, "soft_sparsity": sparsity,
                 "w_frobenius": w, "w_cosine_previous": cos, "dataset": "fashion_mnist"}
            )  # fmt: skip
    lines = vit_study.recipes_markdown(pd.DataFrame(rows, columns=vit_study.RECIPE_COLUMNS)).splitlines()
    assert len(lines) == 4 and lines[1].count("|") == lines[2].count("|") == 15
    assert lines[2] == (
        "| `sgd-fixed` | 768-d, depth 12, patch 8 | sgd | 0.003 | 0 | constant | 0 | 0 | 30 | 0.535 | 1.00 -> 0.50 | "
        "8.50 -> 8.50 (1.00x) | 0.970 | fashion_mnist |"
    )
    assert "| 0.003 x 96/768 |" in lines[3] and "| 0.095 |" in lines[3] and "8.50 -> 42.48 (5.00x)" in lines[3]


def test_docs_vit_md_types_no_recipe_numbers():
    text = (REPO / "docs" / "vit.md").read_text()
    for page in ("vit_recipes_vitb_cpu", "vit_depth12_study", "cpu_depth12"):  # the generated pages, linked
        assert f"(results/{page}.md)" in text and (REPO / "docs" / "results" / f"{page}.md").exists()
    assert "| `sgd-fixed` |" not in text and "final test acc |" not in text
