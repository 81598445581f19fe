"""Figures 6 and 7 of the ViT experiment, drawn only from the files that rule vit_train writes (no torch).

Paper: Section 4 ("Real experiments"). Figure 6: a test image and the [CLS] attention map of the last layer
(averaged over heads, over the patch grid) at several epochs. Figure 7: soft-sparsity d_nnz(s)/T and ||W||_F of
the last layer's combined key-query matrix against epoch, on two axes.
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter

from maxmargin.core.vit_learning import Learned, learned
from maxmargin.figures import style
from maxmargin.figures.style import plt

MAP_CMAP = "viridis"
WARNING_COLOR = "#c00000"


def source_note(sidecar: dict[str, Any]) -> str:
    """One line naming the model, the optimiser and the data (with the fallback warning, if any)."""
    m, t = sidecar["settings"]["model"], sidecar["settings"]["train"]
    grid = "x".join(str(g) for g in sidecar["grid"])
    note = (
        f"ViT {m['embed_dim']}-d, depth {m['depth']}, {m['num_heads']} heads, patch {m['patch_size']} "
        f"({grid} tokens); {t['optimizer']} lr {t['lr']:g}, batch {t['batch_size']}\n"
        f"data: {sidecar['dataset']} ({sidecar['n_train']} train / {sidecar['n_test']} test images)"
    )
    if sidecar.get("dataset_note"):
        note += f"\nWARNING: {sidecar['dataset_note']}"
    return note


def learned_verdict(metrics: pd.DataFrame, sidecar: dict[str, Any], learned_margin: float) -> Learned:
    """The run's final test accuracy against chance + ``learned_margin`` (the claim ``vit_learns``)."""
    acc = float(metrics.sort_values("epoch")["test_acc"].iloc[-1])
    return learned(acc, int(sidecar["settings"]["model"]["num_classes"]), learned_margin)


def _accuracy_title(fig: Figure, verdict: Learned) -> None:
    """The final test accuracy on top of the figure; a red warning instead when the model did not learn."""
    if verdict.learned:
        fig.suptitle(verdict.describe(), fontsize=8)
    else:
        text = textwrap.fill(verdict.warning(), width=int(fig.get_figwidth() * 14))  # ~14 bold characters an inch
        fig.suptitle(text, fontsize=8, color=WARNING_COLOR, fontweight="bold")


def _footnote(fig: Figure, text: str) -> None:
    """Write the source note under the axes, keeping the constrained layout clear of it."""
    height_pt = fig.get_figheight() * 72.0
    bottom = (text.count("\n") + 1) * 7.5 / height_pt + 0.01
    fig.get_layout_engine().set(rect=(0.0, bottom, 1.0, 1.0 - bottom))
    style.annotate_source(fig, text)


def draw_figure6(
    maps: dict[str, np.ndarray],
    metrics: pd.DataFrame,
    sidecar: dict[str, Any],
    epochs: list[int],
    learned_margin: float,
) -> Figure:
    """Figure 6: (a) the input image, (b-...) its head-averaged [CLS] attention map at ``epochs``.

    The maps share one colour scale (0 to the largest entry of any of them, one colour bar), so a near-uniform map
    looks uniform rather than as solid colour; the label under each is its soft-sparsity d_nnz(s)/T, the
    ``soft_sparsity_image`` column of the metrics table. On top: the final test accuracy, or a warning when the
    model did not learn (chance + ``learned_margin``).
    """
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
        bar.ax.tick_params(labelsize=6)
        _accuracy_title(fig, learned_verdict(metrics, sidecar, learned_margin))
        _footnote(fig, source_note(sidecar))
    return fig


def draw_figure7(metrics: pd.DataFrame, sidecar: dict[str, Any], learned_margin: float) -> Figure:
    """Figure 7: soft-sparsity d_nnz(s)/T (red, left axis, in [0, 1]) and ||W||_F (blue, right axis) per epoch.

    The legend sits above the axes, off the curves; on top, the final test accuracy, or a warning when the model
    did not learn (chance + ``learned_margin``).
    """
    with style.paper_style():
        fig, ax = style.new_axes((4.6, 4.0))
        ax.plot(
            metrics["epoch"],
            metrics["soft_sparsity"],
            color=style.COLORS["p"],
            lw=1.6,
            label="soft-sparsity $d_{nnz}(s)/T$ (probe mean)",
        )
        if "soft_sparsity_image" in metrics:  # the single Figure 6 image, as the paper may have drawn it
            ax.plot(
                metrics["epoch"],
                metrics["soft_sparsity_image"],
                color=style.COLORS["p"],
                lw=1.0,
                alpha=0.4,
                label="soft-sparsity (Figure 6 image)",
            )
        ax.set_ylim(0.0, 1.05)
        ax.set_xlabel("Epoch")
        ax.set_ylabel("Sparsity level $d_{nnz}(s)/T$", color=style.COLORS["p"])
        ax.tick_params(axis="y", colors=style.COLORS["p"])
        right = ax.twinx()
        right.plot(
            metrics["epoch"], metrics["w_frobenius"], color=style.COLORS["v"], lw=1.6, label="$\\|W\\|_F$ (last layer)"
        )
        right.set_ylabel("$\\|W\\|_F$", color=style.COLORS["v"])
        right.tick_params(axis="y", colors=style.COLORS["v"])
        right.spines["right"].set_visible(True)
        right.grid(False)
        right.set_ylim(bottom=0.0)
        handles = ax.get_lines() + right.get_lines()
        labels = [h.get_label() for h in handles]
        ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0.0, 1.02, 1.0, 0.1), ncols=2, fontsize=7)
        ax.set_xlim(metrics["epoch"].min(), metrics["epoch"].max())
        _accuracy_title(fig, learned_verdict(metrics, sidecar, learned_margin))
        _footnote(fig, source_note(sidecar))
    return fig


RECIPE_PANELS = (
    ("test_acc", "Test accuracy"),
    ("soft_sparsity", "Soft-sparsity $d_{nnz}(s)/T$"),
    ("w_growth", "$\\|W\\|_F$ / its initial value (log scale)"),
)


def draw_recipes(table: pd.DataFrame, num_classes: int) -> Figure:
    """The recipe study: test accuracy, soft-sparsity and ||W||_F against epoch, one line per recipe.

    Chance accuracy (1 / ``num_classes``) is the dashed line of the first panel: a recipe near it has not learned,
    whatever its attention does. ||W||_F is drawn relative to its initial value on a log scale, so that a flat 1.0
    (SGD) and a jump to several times it (Adam at a high rate) both stay readable.
    """
    table = table.assign(w_growth=table["w_frobenius"] / table.groupby("recipe")["w_frobenius"].transform("first"))
    with style.paper_style():
        fig = plt.figure(figsize=(11.0, 3.4), layout="constrained")
        axes = fig.subplots(1, len(RECIPE_PANELS))
        for recipe, runs in table.groupby("recipe", sort=False):
            for ax, (column, _) in zip(axes, RECIPE_PANELS, strict=True):
                ax.plot(runs["epoch"], runs[column], marker="o", ms=3, lw=1.4, label=recipe)
        for ax, (_, title) in zip(axes, RECIPE_PANELS, strict=True):
            ax.set_xlabel("Epoch")
            ax.set_title(title, fontsize=9)
        axes[0].axhline(1.0 / num_classes, color="k", ls="--", lw=0.8, label=f"chance ({num_classes} classes)")
        axes[1].set_ylim(0.0, 1.05)
        axes[-1].set_yscale("log")
        for axis in (axes[-1].yaxis.set_major_formatter, axes[-1].yaxis.set_minor_formatter):
            axis(FormatStrFormatter("%.3g"))
        axes[0].legend(fontsize=6, loc="best")
        style.annotate_source(fig, f"data: {', '.join(sorted(set(table['dataset'])))}")
    return fig
