"""Figures 6 and 7 of the paper (Section 4, "Real experiments"): a test image and its [CLS] attention map of the last
layer at several epochs; soft-sparsity d_nnz(s)/T and ||W||_F of the last layer's combined key-query matrix against
epoch, and beyond the paper the test accuracy against a linear baseline and the direction of W."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from maxmargin.core.vit_learning import Learned
from maxmargin.figures import style
from maxmargin.figures.style import plt
from maxmargin.figures.vit.notes import WARNING_COLOR, learned_verdict, title

MAP_CMAP = "viridis"


def draw_figure6(
    metrics: pd.DataFrame,
    sidecar: dict[str, Any],
    baseline: pd.DataFrame,
    maps: dict[str, np.ndarray],
    *,
    fig6_epochs: list[int],
    baseline_fraction: float,
    settings_footer: bool,
) -> Figure:
    """Figure 6: (a) the input image, (b-...) its head-averaged [CLS] attention map at ``epochs``.

    The maps share one colour scale (0 to the largest entry of any of them, one colour bar), so a near-uniform map
    looks uniform rather than as solid colour; the label under each is its soft-sparsity d_nnz(s)/T, the
    ``soft_sparsity_image`` column of the metrics table. On top: the final test accuracy, or a warning when the
    model did not learn (against the linear baseline, ``baseline_fraction``), and a warning when the data is a
    stand-in.
    """
    epochs, fraction = list(fig6_epochs), baseline_fraction
    available = maps["epochs"]
    missing = [e for e in epochs if e not in set(available.tolist())]
    if missing:
        raise ValueError(
            f"Figure 6 epochs {missing} are not in the run (epochs 0..{available.max()}); "
            "set vit.plots.fig6_epochs accordingly"
        )
    grid = tuple(int(g) for g in maps["grid"])
    classes = sidecar.get("classes") or []
    label = int(maps["label"])
    n = len(epochs) + 1
    drawn = [maps["maps"][int(np.flatnonzero(available == epoch)[0])] for epoch in epochs]
    vmax = float(max(s.max() for s in drawn))
    with style.paper_style():
        fig = plt.figure(figsize=(1.55 * n + 0.6, 2.9), layout="constrained")
        axes = fig.subplots(1, n)
        axes[0].imshow(maps["image"], interpolation="nearest")
        axes[0].set_title("(a) Input image", fontsize=8)
        axes[0].set_xlabel(classes[label] if label < len(classes) else f"class {label}", fontsize=7)
        for k, (ax, epoch, s) in enumerate(zip(axes[1:], epochs, drawn, strict=True), start=1):
            image = ax.imshow(s.reshape(grid), cmap=MAP_CMAP, vmin=0.0, vmax=vmax, interpolation="nearest")
            ax.set_title(f"({chr(ord('a') + k)}) Epoch {epoch}", fontsize=8)
            sparsity = float(metrics.loc[metrics["epoch"] == epoch, "soft_sparsity_image"].iloc[0])
            ax.set_xlabel(f"$d_{{nnz}}/T$ = {sparsity:.3f}", fontsize=7)
        for ax in axes:
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
        bar = fig.colorbar(image, ax=list(axes[1:]), shrink=0.8, pad=0.01)
        bar.set_label("[CLS] attention", fontsize=7)
        bar.ax.tick_params(labelsize=7)
        title(fig, learned_verdict(metrics, baseline, sidecar, fraction), sidecar, settings_footer)
    return fig


def _sparsity_and_norm(ax: Axes, metrics: pd.DataFrame) -> None:
    """The paper's Figure 7: soft-sparsity (red, left axis, in [0, 1]) and ||W||_F (blue, right axis)."""
    ax.plot(
        metrics["epoch"], metrics["soft_sparsity"], color=style.COLORS["p"], lw=1.6, label="soft-sparsity (probe mean)"
    )
    ax.plot(
        metrics["epoch"],
        metrics["soft_sparsity_image"],
        color=style.COLORS["p"],
        lw=1.0,
        alpha=0.4,
        label="(Figure 6 image)",
    )
    ax.set_ylim(0.0, 1.05)
    ax.set_xlabel("Epoch")
    ax.set_ylabel("Sparsity level $d_{nnz}(s)/T$", color=style.COLORS["p"])
    ax.tick_params(axis="y", colors=style.COLORS["p"])
    right = ax.twinx()
    right.plot(metrics["epoch"], metrics["w_frobenius"], color=style.COLORS["v"], lw=1.6, label="$\\|W\\|_F$")
    right.set_ylabel("$\\|W\\|_F$ (last layer)", color=style.COLORS["v"])
    right.tick_params(axis="y", colors=style.COLORS["v"])
    right.spines["right"].set_visible(True)
    right.grid(False)
    right.set_ylim(bottom=0.0)
    handles = ax.get_lines() + right.get_lines()
    ax.legend(handles, [h.get_label() for h in handles], loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=3)
    ax.set_title("(a) Sparsity and $\\|W\\|_F$", fontsize=9, pad=22)


def _accuracy(ax: Axes, metrics: pd.DataFrame, verdict: Learned) -> None:
    """Test accuracy per epoch against the linear baseline, the learning bar and chance."""
    ax.plot(metrics["epoch"], metrics["test_acc"], color="k", lw=1.6, label="ViT test accuracy")
    ax.axhline(verdict.baseline, color="0.35", ls="--", lw=1.0, label=f"linear baseline {verdict.baseline:.3f}")
    ax.axhline(verdict.bar, color=WARNING_COLOR, ls=":", lw=1.0, label=f"learning bar {verdict.bar:.3f}")
    ax.axhline(verdict.chance, color="0.6", ls="-.", lw=0.8, label=f"chance {verdict.chance:.2f}")
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel("Epoch")
    ax.set_ylabel("Test accuracy")
    ax.legend(loc="lower right")
    ax.set_title("(b) Does it learn?", fontsize=9, pad=22)


def _direction(ax: Axes, metrics: pd.DataFrame) -> None:
    """Where W is heading: its cosine with the final W and with the previous epoch's W."""
    ax.plot(metrics["epoch"], metrics["w_cosine_final"], color=style.COLORS["v"], lw=1.6, label="cos($W$, final $W$)")
    ax.plot(
        metrics["epoch"],
        metrics["w_cosine_previous"],
        color=style.COLORS["v"],
        lw=1.0,
        ls="--",
        label="cos($W$, previous epoch's $W$)",
    )
    ax.set_ylim(min(0.0, float(metrics[["w_cosine_final", "w_cosine_previous"]].min().min())), 1.02)
    ax.set_xlabel("Epoch")
    ax.set_ylabel("Cosine")
    ax.legend(loc="lower right")
    ax.set_title("(c) Direction of $W$", fontsize=9, pad=22)


def draw_figure7(
    metrics: pd.DataFrame,
    sidecar: dict[str, Any],
    baseline: pd.DataFrame,
    *,
    baseline_fraction: float,
    settings_footer: bool,
) -> Figure:
    """Figure 7: (a) the paper's panel, soft-sparsity d_nnz(s)/T and ||W||_F per epoch on two axes; beyond the
    paper, (b) test accuracy against the linear baseline and the learning bar, (c) the cosine of W with its final
    value and with the previous epoch's. On top, the verdict of the learning bar and any stand-in warning."""
    with style.paper_style():
        fig = plt.figure(figsize=(11.5, 3.9), layout="constrained")
        axes = fig.subplots(1, 3, width_ratios=[1.25, 1.0, 1.0])
        verdict = learned_verdict(metrics, baseline, sidecar, baseline_fraction)
        _sparsity_and_norm(axes[0], metrics)
        _accuracy(axes[1], metrics, verdict)
        _direction(axes[2], metrics)
        for ax in axes:
            ax.set_xlim(metrics["epoch"].min(), metrics["epoch"].max())
        title(fig, verdict, sidecar, settings_footer)
    return fig
