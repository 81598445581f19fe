"""The linear baseline of the ViT's learning bar: logistic regression on the pixels of the same training images.

A ViT that learned nothing can show Figure 7's picture (attention concentrating, ||W||_F growing), and "above
chance" is a low bar on images a linear model already classifies well (logistic regression scores 0.84 on
Fashion-MNIST). The claim ``vit_learns`` therefore asks the ViT to recover at least ``vit.guard.baseline_fraction``
of this baseline's accuracy above chance.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from maxmargin import registry
from maxmargin.experiments.vit.images import ImageData

BASELINE_COLUMNS = registry.columns("vit_baseline")


def pixels(x: torch.Tensor) -> np.ndarray:
    """uint8 (N, 3, H, W) images as (N, features) floats in [0, 1]; a grey image (three equal channels, as the
    stand-ins are) keeps one channel: the same model, three times cheaper."""
    grey = bool(torch.equal(x[:, 0], x[:, 1]) and torch.equal(x[:, 0], x[:, 2]))
    x = x[:, :1] if grey else x
    return x.reshape(len(x), -1).numpy().astype(np.float64) / 255.0


def linear_baseline(data: ImageData, num_classes: int, max_iter: int, C: float, threads: int) -> pd.DataFrame:
    """Multinomial logistic regression (L2, inverse strength ``C``, lbfgs, at most ``max_iter`` iterations) on the
    standardised pixels of ``data``'s training images, scored on its test images: a one-row table.

    ``threads`` caps the BLAS threads, so that the fit is the same whatever Snakemake's ``--cores``.
    """
    x_train, x_test = pixels(data.x_train), pixels(data.x_test)
    y_train, y_test = data.y_train.numpy(), data.y_test.numpy()
    with threadpool_limits(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # reported in the table: column `converged`
        scaler = StandardScaler().fit(x_train)
        model = LogisticRegression(max_iter=max_iter, C=C).fit(scaler.transform(x_train), y_train)
        row: dict[str, Any] = {
            "dataset": data.name,
            "n_train": len(x_train),
            "n_test": len(x_test),
            "n_features": x_train.shape[1],
            "chance": 1.0 / num_classes,
            "train_acc": float(model.score(scaler.transform(x_train), y_train)),
            "test_acc": float(model.score(scaler.transform(x_test), y_test)),
            "n_iter": int(np.max(model.n_iter_)),
        }
    row["converged"] = row["n_iter"] < max_iter
    return pd.DataFrame([row], columns=BASELINE_COLUMNS)
