"""The ViT recipe study's settings and the pilot's projection."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG

from maxmargin.experiments import vit_study
from maxmargin.experiments.vit import TrainResult


def test_recipe_merges_the_proxy_and_the_recipe_over_the_vit_block():
    vit, study = DEFAULT_CONFIG["vit"], DEFAULT_CONFIG["vit_recipes"]
    name = study["recipes"][-1]["name"]
    s = vit_study.recipe_settings(vit, study, name)
    assert s.model.embed_dim == study["model"]["embed_dim"] and s.model.mlp_ratio == vit["model"]["mlp_ratio"]
    assert s.train.epochs == study["train"]["epochs"] and s.train.seed == vit["train"]["seed"]
    assert (s.train.optimizer, s.train.schedule) == (
        study["recipes"][-1]["optimizer"],
        study["recipes"][-1]["schedule"],
    )
    assert s.data.n_train == study["data"]["n_train"] and s.data.root == vit["data"]["root"]
    full = vit_study.recipe_settings(vit, {**study, "proxy": False}, name)
    assert full.model.embed_dim == vit["model"]["embed_dim"] and full.data.n_train == vit["data"]["n_train"]
    with pytest.raises(ValueError, match="unknown vit_recipes recipe 'nope'"):
        vit_study.recipe_config(vit, study, "nope")


def test_pilot_projects_every_part_of_an_epoch():
    metrics = [
        {"epoch": 0, "train_loss": 2.4, "test_acc": 0.1, "epoch_seconds": 5.0, "train_seconds": 0.0},
        {"epoch": 1, "train_loss": 2.0, "test_acc": 0.3, "epoch_seconds": 40.0, "train_seconds": 35.0},  # compile
        {"epoch": 2, "train_loss": 1.8, "test_acc": 0.4, "epoch_seconds": 12.0, "train_seconds": 10.0},
    ]
    info = {"n_train": 50000, "device_name": "cpu", "peak_memory_mb": 123.0, "dataset": "fashion_mnist"}
    result = TrainResult(metrics, np.zeros((3, 4)), np.zeros(3), np.zeros((32, 32, 3)), 0, (2, 2), info)
    settings = vit_study.recipe_settings(DEFAULT_CONFIG["vit"], DEFAULT_CONFIG["vit_recipes"], "adam-fixed")
    row = vit_study.pilot_row(settings, result, full_epochs=400).iloc[0]
    assert row["epoch_seconds"] == 12.0 and row["images_per_s"] == 5000.0
    assert row["projected_total_hours"] == pytest.approx((5.0 + 400 * 12.0) / 3600)
    assert (row["first_train_loss"], row["last_train_loss"], row["test_acc"]) == (2.0, 1.8, 0.4)
    assert list(vit_study.pilot_row(settings, result, 400).columns) == vit_study.PILOT_COLUMNS
    assert isinstance(row["compiled"], bool | np.bool_) and row["dtype"] == "float32"
    assert pd.notna(row["peak_memory_mb"]) and row["dataset"] == "fashion_mnist"
