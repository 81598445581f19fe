"""Figures 6 and 7 of the ViT experiment, drawn only from the files that rules vit_train and vit_baseline write.

Paper: Section 4 ("Real experiments"). Figure 6: a test image and the [CLS] attention map of the last layer
(averaged over heads, over the patch grid) at several epochs. Figure 7: soft-sparsity d_nnz(s)/T and ||W||_F of
the last layer's combined key-query matrix against epoch, on two axes; beyond the paper, the test accuracy against
a linear baseline and the direction of W. No torch.
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter

from maxmargin.core.vit_learning import Learned, learned
from maxmargin.figures import style
from maxmargin.figures.style import plt
from maxmargin.registry.vit import DATASET_NAMES, JUDGED_IMAGES, PAPER_DATASET

MAP_CMAP = "viridis"
WARNING_COLOR = "#c00000"


def source_note(sidecar: dict[str, Any]) -> str:
    """The settings line: model, optimiser and data (a plot option: the captions carry them anyway)."""
    m, t = sidecar["settings"]["model"], sidecar["settings"]["train"]
    grid = "x".join(str(g) for g in sidecar["grid"])
    return (
        f"ViT {m['embed_dim']}-d, depth {m['depth']}, {m['num_heads']} heads, patch {m['patch_size']} "
        f"({grid} tokens); {t['optimizer']} lr {t['lr']:g}, batch {t['batch_size']}; "
        f"data: {sidecar['dataset']} ({sidecar['n_train']} train / {sidecar['n_test']} test images)"
    )


def stand_in_warning(dataset: str, note: str = "") -> str:
    """The red line of a figure not made from the paper's CIFAR-10 (empty for CIFAR-10), keyed to the data set the
    run recorded (its metrics table and data manifest), whether the config asked for it or a fallback took it;
    ``note`` says why a fallback was taken."""
    if dataset == PAPER_DATASET:
        return ""
    name, paper = DATASET_NAMES.get(dataset, dataset), DATASET_NAMES[PAPER_DATASET]
    return f"WARNING: made from {name}, a stand-in for the paper's {paper}" + (f" ({note})" if note else "")


def learned_verdict(metrics: pd.DataFrame, baseline: pd.DataFrame, sidecar: dict[str, Any], fraction: float) -> Learned:
    """The run's final test accuracy against the linear baseline's (the claim ``vit_learns``)."""
    acc = float(metrics.sort_values("epoch")["test_acc"].iloc[-1])
    classes = int(sidecar["settings"]["model"]["num_classes"])
    return learned(acc, classes, float(baseline["test_acc"].iloc[0]), fraction)


def _title(fig: Figure, verdict: Learned, sidecar: dict[str, Any], settings_footer: bool) -> None:
    """On top: the final test accuracy, or a red warning when the model did not learn. Below the axes, in red, the
    stand-in warning when the data set is not CIFAR-10; under it, optionally, the settings line."""
    width = int(fig.get_figwidth() * 14)  # ~14 bold characters an inch
    if verdict.learned:
        fig.suptitle(textwrap.fill(verdict.describe(), width=width), fontsize=8)
    else:
        fig.suptitle(textwrap.fill(verdict.warning(), width=width), fontsize=8, color=WARNING_COLOR, fontweight="bold")
    warning = stand_in_warning(sidecar["dataset"], sidecar.get("dataset_note", ""))
    lines = [(warning, WARNING_COLOR)] if warning else []
    lines += [(source_note(sidecar), "0.4")] if settings_footer else []
    _footer(fig, lines)


def _footer(fig: Figure, lines: list[tuple[str, str]]) -> None:
    """Lines of text (and colours) under the axes, each wrapped to the figure's width (at 7 pt, ~16 bold or ~19
    regular characters an inch), the constrained layout kept clear of them."""
    per_inch = {WARNING_COLOR: 16}
    lines = [
        (part, colour)
        for text, colour in lines
        for part in textwrap.wrap(text, width=int(fig.get_figwidth() * per_inch.get(colour, 19)))
    ]
    if not lines:
        return
    line_height = 9.5 / (fig.get_figheight() * 72.0)
    fig.get_layout_engine().set(rect=(0.0, len(lines) * line_height + 0.01, 1.0, 1.0 - len(lines) * line_height - 0.01))
    for k, (text, colour) in enumerate(reversed(lines)):
        weight = "bold" if colour == WARNING_COLOR else "normal"
        fig.text(0.01, 0.005 + k * line_height, text, fontsize=7, color=colour, fontweight=weight, va="bottom")


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
        _title(fig, learned_verdict(metrics, baseline, sidecar, fraction), sidecar, settings_footer)
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
        _title(fig, verdict, sidecar, settings_footer)
    return fig


RECIPE_PANELS = (
    ("test_acc", "Test accuracy"),
    ("soft_sparsity", "Soft-sparsity $d_{nnz}(s)/T$"),
    ("w_growth", "$\\|W\\|_F$ / its initial value (log scale)"),
)


def draw_recipes(table: pd.DataFrame, *, num_classes: int) -> Figure:
    """The recipe study: test accuracy, soft-sparsity and ||W||_F against optimiser steps, one line per recipe.

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
                ax.plot(runs["step"], runs[column], marker="o", ms=3, lw=1.4, label=recipe)
        for ax, (_, title) in zip(axes, RECIPE_PANELS, strict=True):
            ax.set_xlabel("Optimiser steps")
            ax.set_title(title, fontsize=9)
        axes[0].axhline(1.0 / num_classes, color="k", ls="--", lw=0.8, label=f"chance ({num_classes} classes)")
        axes[1].set_ylim(0.0, 1.05)
        axes[-1].set_yscale("log")
        for axis in (axes[-1].yaxis.set_major_formatter, axes[-1].yaxis.set_minor_formatter):
            axis(FormatStrFormatter("%.3g"))
        axes[0].legend(loc="best")
        datasets = sorted(set(table["dataset"]))
        warnings = [(w, WARNING_COLOR) for w in map(stand_in_warning, datasets) if w]
        _footer(fig, warnings or [(f"data: {', '.join(DATASET_NAMES.get(d, d) for d in datasets)}", "0.4")])
    return fig


NO_W_SVM = "No W-ATT-SVM measurement in this run: it kept no snapshots (vit.train.snapshot_every: 0)."


def _heads(ax: Axes, table: pd.DataFrame) -> None:
    """Panel (a): each head's cosine (hollow: soft-margin) and its rank ceiling (dotted), per measured epoch."""
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for head, rows in table.sort_values("epoch").groupby("head"):
        color = colors[int(head) % len(colors)]
        ax.plot(rows["epoch"], rows["cosine"], color=color, lw=1.4, label=f"head {int(head)}")
        soft = ~rows["hard_margin"].astype(bool)
        ax.scatter(rows["epoch"][~soft], rows["cosine"][~soft], color=color, s=14, zorder=3)
        ax.scatter(rows["epoch"][soft], rows["cosine"][soft], facecolors="none", edgecolors=color, s=18)
        ax.plot(rows["epoch"], rows["ceiling"], color=color, ls=":", lw=1.0)
    ax.plot([], [], color="0.4", ls=":", lw=1.0, label="rank ceiling")


def _means(ax: Axes, table: pd.DataFrame, min_w_svm_gain: float) -> float:
    """Panel (b): head means of the cosine against the matched nulls, the span share, the ceiling, the nuclear-norm
    cosine, and the bar of claim ``vit_w_svm_direction`` (the null + ``min_w_svm_gain``); the lowest value drawn
    (the shuffled null can be negative: the axis goes below 0 then)."""
    m = table.groupby("epoch").mean(numeric_only=True).sort_index()
    e = m.index.to_numpy()
    ax.plot(e, m["cosine"], "o-", color="k", ms=3, lw=1.4, label="heads", zorder=3)
    ax.fill_between(e, m["null_rank"] - m["null_rank_sd"], m["null_rank"] + m["null_rank_sd"], color="0.8", lw=0)
    ax.plot(e, m["null_rank"], color="0.45", lw=1.0, label="null: random rank $d_h$")
    ax.plot(e, m["null_shuffled"], color="C1", ls="--", lw=1.0, label="null: shuffled selection")
    ax.plot(e, m["span_cosine"], color="C0", ls="-.", lw=1.0, label="share in the constraints' span")
    ax.plot(e, m["ceiling"], color="k", ls=":", lw=1.0, label="rank ceiling")
    nuclear = m[["cosine_nuclear", "cosine_frobenius_nuclear_images"]].dropna()
    if len(nuclear):
        ax.plot(nuclear.index, nuclear["cosine_nuclear"], "D", color="C4", ms=4, label="nuclear-norm SVM (few images)")
        ax.plot(nuclear.index, nuclear["cosine_frobenius_nuclear_images"], "s", mfc="none", color="C4", ms=5,
                label="Frobenius SVM (the same images)")  # fmt: skip
    ax.plot(e[-1:], m["null_rank"].iloc[-1:] + min_w_svm_gain, "_", color=WARNING_COLOR, ms=14, mew=2, zorder=1.5,
            label=f"claim bar (null + {min_w_svm_gain:g})")  # fmt: skip  # under the heads' markers (zorder 2+)
    return float(m[["cosine", "null_rank", "null_shuffled"]].min().min())


def draw_w_svm(table: pd.DataFrame, *, min_w_svm_gain: float) -> Figure:
    """Companion of Figure 7 (beyond the paper): (a) each last-layer head's cos(Wt_h, W_mm,h) with its W-ATT-SVM
    solution per measured epoch and its rank ceiling; (b) the head means against the matched nulls, the span
    share, the ceiling, the nuclear-norm cosine and the bar of claim ``vit_w_svm_direction``. A run without
    snapshots (an empty table) gets a panel that says so.
    """
    with style.paper_style():
        fig = plt.figure(figsize=(9.6, 3.8), layout="constrained")
        if table.empty:
            fig.text(0.5, 0.5, NO_W_SVM, ha="center", va="center", fontsize=9)
            return fig
        axes = fig.subplots(1, 2)
        sets = table["images"].fillna("test") if "images" in table else pd.Series("test", index=table.index)
        judged = next(name for name in JUDGED_IMAGES if name in set(sets))
        _heads(axes[0], table[sets == judged])
        lowest = _means(axes[1], table[sets == judged], min_w_svm_gain)
        for name in sorted(set(sets) - {judged}):  # the other set's head means, beside the judged set's
            other = table[sets == name].groupby("epoch")["cosine"].mean()
            axes[1].plot(other.index, other, "o--", color="0.3", ms=2.5, lw=1.0, label=f"heads ({name} images)")
            lowest = min(lowest, float(other.min()))
        titles = (
            f"(a) $\\cos(\\tilde W_h, W^{{mm}}_h)$ per head ({judged} images)",
            "(b) mean over heads, against the nulls",
        )
        for ax, title in zip(axes, titles, strict=True):
            ax.set_xlabel("Epoch")
            ax.set_title(title, fontsize=9)
            ax.set_ylim(0.0 if lowest >= 0 else lowest - 0.05, 1.05)
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.91), fontsize=7, ncols=2, frameon=False)
        axes[0].set_ylabel("Cosine with the W-ATT-SVM solution")
        warnings = [(w, WARNING_COLOR) for w in map(stand_in_warning, sorted(set(table["dataset"]))) if w]
        if warnings:
            _footer(fig, warnings)
    return fig


def _loss(ax: Axes, metrics: pd.DataFrame, regime_loss: float) -> None:
    """Panel (a): the training loss on a log scale (left) and the training accuracy (right), with claim
    ``vit_regime``'s bar on the loss."""
    ax.semilogy(metrics["epoch"], metrics["train_loss"], color="k", lw=1.4, label="training loss")
    ax.axhline(regime_loss, color=WARNING_COLOR, ls=":", lw=1.0, label=f"regime bar {regime_loss:g}")
    ax.set_ylabel("Training loss (log scale)")
    right = ax.twinx()
    right.plot(metrics["epoch"], metrics["train_acc"], color="C2", lw=1.0, label="training accuracy")
    right.set_ylim(0.0, 1.02)
    right.set_ylabel("Training accuracy", color="C2")
    right.tick_params(axis="y", colors="C2")
    right.spines["right"].set_visible(True)
    right.grid(False)
    handles = ax.get_lines() + right.get_lines()
    ax.legend(handles, [h.get_label() for h in handles], loc="center right", fontsize=7)
    ax.set_title("(a) Training loss and accuracy", fontsize=9)


def _saturation(ax: Axes, metrics: pd.DataFrame, tokens: int) -> None:
    """Panel (b): the attention's saturation, each head's largest [CLS] softmax probability averaged over heads and
    probe images, between the uniform attention's 1 / (1 + T) and the theory's limit 1."""
    ax.axhline(1.0, color="k", ls=":", lw=1.0, label="one token (the limit)")
    ax.axhline(1.0 / tokens, color="0.6", ls="-.", lw=0.8, label=f"uniform (1/{tokens})")
    if "cls_max_attention" in metrics and metrics["cls_max_attention"].notna().any():
        ax.plot(metrics["epoch"], metrics["cls_max_attention"], color=style.COLORS["p"], lw=1.4, label="saturation")
    else:
        ax.text(0.5, 0.5, "not measured in this run", transform=ax.transAxes, ha="center", fontsize=8)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("Largest [CLS] softmax probability")
    ax.legend(loc="center right", fontsize=7)
    ax.set_title("(b) Saturation of the attention", fontsize=9)


def _turning(ax: Axes, metrics: pd.DataFrame, max_direction_angle: float) -> None:
    """Panel (c): the angle W turns between consecutive metrics rows and its angle to the final W, in degrees."""
    step = int(metrics["epoch"].diff().median()) if len(metrics) > 1 else 1
    angles = {
        f"between rows ({step} epoch{'s' * (step != 1)})": metrics["w_cosine_previous"],
        "to the final W": metrics["w_cosine_final"],
    }
    for (label, cosine), ls in zip(angles.items(), ("-", "--"), strict=True):
        ax.plot(metrics["epoch"], np.degrees(np.arccos(np.clip(cosine, -1, 1))), color=style.COLORS["v"], ls=ls,
                lw=1.4 if ls == "-" else 1.0, label=label)  # fmt: skip
    ax.axhline(max_direction_angle, color=WARNING_COLOR, ls=":", lw=1.0, label=f"{max_direction_angle:g} degrees")
    ax.set_ylim(0.0, 95.0)
    ax.set_ylabel("Angle of W (degrees)")
    ax.legend(loc="upper right", fontsize=7)
    ax.set_title("(c) Does W's direction settle?", fontsize=9)


def draw_regime(
    metrics: pd.DataFrame,
    sidecar: dict[str, Any],
    *,
    regime_loss: float,
    max_direction_angle: float,
    settings_footer: bool,
) -> Figure:
    """Companion of Figure 7 (beyond the paper): is the run in the regime the theory is about? (a) the training loss
    (log scale) and accuracy, (b) the attention's saturation, (c) W's turning between rows and to its final value."""
    metrics = metrics.sort_values("epoch")
    tokens = 1 + int(np.prod(sidecar["grid"]))
    with style.paper_style():
        fig = plt.figure(figsize=(11.5, 3.6), layout="constrained")
        axes = fig.subplots(1, 3, width_ratios=[1.2, 1.0, 1.0])
        _loss(axes[0], metrics, regime_loss)
        _saturation(axes[1], metrics, tokens)
        _turning(axes[2], metrics, max_direction_angle)
        for ax in axes:
            ax.set_xlabel("Epoch")
            ax.set_xlim(metrics["epoch"].min(), metrics["epoch"].max())
        warning = stand_in_warning(sidecar["dataset"], sidecar.get("dataset_note", ""))
        _footer(fig, [(warning, WARNING_COLOR)] * bool(warning) + [(source_note(sidecar), "0.4")] * settings_footer)
    return fig
