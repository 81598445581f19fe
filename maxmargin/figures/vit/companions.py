"""The companions of Figure 7 (beyond the paper): each last-layer head against its W-ATT-SVM solution, and whether
the run is in the regime the theory is about (loss, saturation of the attention, W's turning)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from maxmargin.figures import style
from maxmargin.figures.style import plt
from maxmargin.figures.vit.notes import WARNING_COLOR, footer, source_note, stand_in_warning
from maxmargin.registry.vit_w_svm import JUDGED_IMAGES

NO_W_SVM = "No W-ATT-SVM measurement in this run: it kept no snapshots (vit.train.snapshot_every: 0)."
# A line through fewer measured points than this reads as a trend that nothing measured (two epochs joined look like
# a steady rise): such a series is drawn as its points alone.
MIN_JOINED = 3
TITLE_PAD = 30  # points: room for the two-row legend above panel (a), the same for every panel of the regime figure
CEILING_COLOR = "0.4"  # every head's rank ceiling, as the legend keys it (the ceilings of the heads overlap)


def _series(ax: Axes, x: Any, y: Any, *, ls: str = "-", marker: str = "", unjoined: str = "o", **kw: Any) -> None:
    """A measured series: a line (``ls``) through its points where it has :data:`MIN_JOINED` or more, else its
    points alone, each drawn as ``marker`` (``unjoined`` where the line has none)."""
    joined = len(x) >= MIN_JOINED
    ax.plot(x, y, ls=ls if joined else "none", marker=marker or ("" if joined else unjoined), **kw)


def _band(ax: Axes, x: Any, y: Any, sd: Any) -> None:
    """The +-1 sd of a null around its mean: a band where it is joined (:data:`MIN_JOINED`), else error bars."""
    if len(x) >= MIN_JOINED:
        ax.fill_between(x, y - sd, y + sd, color="0.8", lw=0)
    else:
        ax.errorbar(x, y, yerr=sd, fmt="none", ecolor="0.7", elinewidth=2, capsize=0)


def _measured_at(ax: Axes, epochs: Any) -> None:
    """Where the probe measured fewer than :data:`MIN_JOINED` epochs (the first and the last snapshot only), the
    panel says so: its points are not joined, and no trend between them was measured."""
    if len(epochs) >= MIN_JOINED:
        return
    which = " and ".join(str(int(e)) for e in sorted(epochs))
    ax.text(
        0.5,
        0.45,
        f"measured at epoch{'s' if len(epochs) > 1 else ''} {which} only:\nno trend between them was measured",
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=7,
        color="0.3",
    )


def _heads(ax: Axes, table: pd.DataFrame) -> None:
    """Panel (a): each head's cosine (hollow: soft-margin) and its rank ceiling (dotted), per measured epoch."""
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    joined = True
    for head, rows in table.sort_values("epoch").groupby("head"):
        color = colors[int(head) % len(colors)]
        joined = len(rows) >= MIN_JOINED  # else the head's points alone, which the scatters below draw
        if joined:
            ax.plot(rows["epoch"], rows["cosine"], color=color, lw=1.4)
        ax.plot([], [], color=color, lw=1.4, ls="-" if joined else "none", marker="" if joined else "o", ms=4,
                label=f"head {int(head)}")  # fmt: skip
        soft = ~rows["hard_margin"].astype(bool)
        ax.scatter(rows["epoch"][~soft], rows["cosine"][~soft], color=color, s=14, zorder=3)
        ax.scatter(rows["epoch"][soft], rows["cosine"][soft], facecolors="none", edgecolors=color, s=18)
        _series(ax, rows["epoch"], rows["ceiling"], color=CEILING_COLOR, ls=":", lw=1.0, unjoined="_")
    ax.plot([], [], color=CEILING_COLOR, ls=":" if joined else "none", marker="" if joined else "_", lw=1.0,
            label="rank ceiling")  # fmt: skip


def _means(ax: Axes, table: pd.DataFrame, min_w_svm_gain: float) -> float:
    """Panel (b): head means of the cosine against the matched nulls, the span share, the ceiling, the nuclear-norm
    cosine, and the bar of claim ``vit_w_svm_direction`` (the null + ``min_w_svm_gain``); the lowest value drawn
    (the shuffled null can be negative: the axis goes below 0 then)."""
    m = table.groupby("epoch").mean(numeric_only=True).sort_index()
    e = m.index.to_numpy()
    _series(ax, e, m["cosine"], marker="o", color="k", ms=3, lw=1.4, label="heads", zorder=3)
    _band(ax, e, m["null_rank"], m["null_rank_sd"])
    _series(ax, e, m["null_rank"], color="0.45", lw=1.0, unjoined="_", label="null: random rank $d_h$")
    shuffled = m["null_shuffled"].dropna()  # measured at some epochs only (vit.w_svm.shuffle_every)
    _series(
        ax, shuffled.index, shuffled, ls="--", marker="x", color="C1", ms=4, lw=1.0, label="null: shuffled selection"
    )
    _series(
        ax, e, m["span_cosine"], ls="-.", unjoined="^", color="C0", lw=1.0, ms=4, label="share in the constraints' span"
    )
    _series(ax, e, m["ceiling"], ls=":", unjoined="_", color="k", lw=1.0, label="rank ceiling")
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
            _series(axes[1], other.index, other, ls="--", marker="o", color="0.3", ms=2.5, lw=1.0,
                    label=f"heads ({name} images)")  # fmt: skip
            lowest = min(lowest, float(other.min()))
        titles = (
            f"(a) $\\cos(\\tilde W_h, W^{{mm}}_h)$ per head ({judged} images)",
            "(b) mean over heads, against the nulls",
        )
        epochs = table.loc[sets == judged, "epoch"].unique()
        for ax, title in zip(axes, titles, strict=True):
            _measured_at(ax, epochs)
            ax.set_xlabel("Epoch")
            ax.set_title(title, fontsize=9)
            ax.set_ylim(0.0 if lowest >= 0 else lowest - 0.05, 1.05)
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, 0.91), fontsize=7, ncols=2, frameon=False)
        axes[0].set_ylabel("Cosine with the W-ATT-SVM solution")
        warnings = [(w, WARNING_COLOR) for w in map(stand_in_warning, sorted(set(table["dataset"]))) if w]
        if warnings:
            footer(fig, warnings)
    return fig


def _loss(ax: Axes, metrics: pd.DataFrame, regime_loss: float) -> None:
    """Panel (a): the training loss on a log scale (left) and the training accuracy (right), with claim
    ``vit_regime``'s bar on what the claim bounds: the largest per-sample loss at each row's weights
    (``train_loss_max``). Where only some rows carry the full pass (``vit.train.full_pass: window``), the mean over
    each epoch's batches is drawn on every row beside it; a table without the full pass (older runs) shows that mean
    alone, and says that the bar's quantity was not measured."""
    measured = metrics["train_loss_max"].notna() if "train_loss_max" in metrics else pd.Series(False, metrics.index)
    full = bool(measured.all())
    if measured.any():
        epoch = metrics["epoch"]
        if not full:  # the rows without the pass break the lines (NaN); each measured row gets a dot
            ax.semilogy(epoch, metrics["train_loss"], color="0.7", lw=1.0, label="mean loss (epoch's batches)")
        dots = {} if full else {"marker": ".", "ms": 3}
        ax.semilogy(epoch, metrics["train_loss_max"], color="k", lw=1.4, label="largest per-sample loss", **dots)
        ax.semilogy(epoch, metrics["train_loss_full"], color="0.45", ls="--", lw=1.0, label="mean loss", **dots)
    else:
        ax.semilogy(metrics["epoch"], metrics["train_loss"], color="k", lw=1.4, label="mean loss (epoch's batches)")
        ax.text(0.97, 0.12, "largest per-sample loss\nnot measured in this run", transform=ax.transAxes, ha="right",
                fontsize=8)  # fmt: skip
    ax.axhline(regime_loss, color=WARNING_COLOR, ls=":", lw=1.0, label=f"regime bar {regime_loss:g}")
    ax.set_ylabel("Training loss (log scale)")
    right = ax.twinx()
    accuracy = "train_acc_full" if full and "train_acc_full" in metrics else "train_acc"
    right.plot(metrics["epoch"], metrics[accuracy], color="C2", lw=1.0, label="training accuracy")
    right.set_ylim(0.0, 1.02)
    right.set_ylabel("Training accuracy", color="C2")
    right.tick_params(axis="y", colors="C2")
    right.spines["right"].set_visible(True)
    right.grid(False)
    handles = ax.get_lines() + right.get_lines()
    # above the axes, as panel (b)'s: the curves cross the whole panel; two rows, a third would reach the title
    ax.legend(handles, [h.get_label() for h in handles], loc="lower left", bbox_to_anchor=(0.0, 1.0),
              ncols=math.ceil(len(handles) / 2),
              fontsize=7, frameon=False, borderaxespad=0.2, handlelength=1.5, columnspacing=1.0)  # fmt: skip
    ax.set_title("(a) Training loss and accuracy", fontsize=9, pad=TITLE_PAD)


def _saturation(ax: Axes, metrics: pd.DataFrame, tokens: int) -> None:
    """Panel (b): the attention's saturation, each head's largest [CLS] softmax probability averaged over heads and
    probe images, between the uniform attention's 1 / (1 + T) and the theory's limit 1."""
    ax.axhline(1.0, color="k", ls=":", lw=1.0, label="limit (one token)")
    ax.axhline(1.0 / tokens, color="0.6", ls="-.", lw=0.8, label=f"uniform (1/{tokens})")
    if "cls_max_attention" in metrics and metrics["cls_max_attention"].notna().any():
        ax.plot(metrics["epoch"], metrics["cls_max_attention"], color=style.COLORS["p"], lw=1.4, label="saturation")
    else:
        ax.text(0.5, 0.5, "not measured in this run", transform=ax.transAxes, ha="center", fontsize=8)
    ax.set_ylim(0.0, 1.05)
    ax.set_ylabel("Largest [CLS] softmax probability")
    # above the axes: the curve can be anywhere between the two lines
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=3, fontsize=7, frameon=False, borderaxespad=0.2,
              handlelength=1.5, columnspacing=1.0)  # fmt: skip
    ax.set_title("(b) Saturation of the attention", fontsize=9, pad=TITLE_PAD)


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
    ax.set_title("(c) Does W's direction settle?", fontsize=9, pad=TITLE_PAD)


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
        footer(fig, [(warning, WARNING_COLOR)] * bool(warning) + [(source_note(sidecar), "0.4")] * settings_footer)
    return fig
