"""The decisive experiment's panel (beyond the paper; tables vit_decisive_ray and vit_decisive_gd): (a) the training
loss along each head's trained and max-margin rays, (b)-(c) the cosine of W_h with the W-ATT-SVM of its selections
against ||W_h||_F under plain and normalised GD, the tokens frozen, in the network and in the one-layer model."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from maxmargin.figures import style

_ARMS = {"gd": ("plain GD", style.RUN_COLORS[0]), "normalized_gd": ("normalised GD", style.RUN_COLORS[1])}
_MODELS = {"frozen_vit": "(b) the network, tokens frozen", "one_layer": "(c) one-layer model, real tokens"}


def _rays(ax: Axes, ray: pd.DataFrame) -> None:
    """The loss against c at the last snapshot: all heads scaled (thick), each head alone (thin); the trained ray
    solid, the max-margin ray dashed."""
    last = ray[ray["epoch"] == ray["epoch"].max()]
    for direction, ls, label in (("trained", "-", "c W_h"), ("max_margin", "--", "c W_mm,h")):
        rows = last[last["direction"] == direction]
        for _, one in rows[rows["heads"] == "one"].groupby("head"):
            ax.plot(one["c"], one["loss"], ls=ls, lw=0.7, color="0.6")
        both = rows[rows["heads"] == "all"].sort_values("c")
        ax.plot(both["c"], both["loss"], ls=ls, lw=1.8, color=style.COLORS["gmm"], label=f"{label}, all heads")
    ax.axvline(1.0, color="0.4", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("scale c (grey: one head alone)")
    ax.set_ylabel("training loss")
    ax.set_title(f"(a) loss along the rays, epoch {int(last['epoch'].iloc[0])}", fontsize=9)
    ax.legend(loc="best")


def _cosines(ax: Axes, gd: pd.DataFrame, model: str) -> None:
    """Head-mean cosine with the W-ATT-SVM of the current selection (solid) and of the final one (dotted) against
    head-mean ||W_h||_F, per arm, at the last snapshot."""
    rows = gd[(gd["model"] == model) & (gd["epoch"] == gd["epoch"].max())]
    for arm, (label, color) in _ARMS.items():
        means = rows[rows["arm"] == arm].groupby("step")[["w_frobenius", "cosine", "cosine_final"]].mean()
        ax.plot(means["w_frobenius"], means["cosine"], marker="o", ms=3, color=color, label=f"{label}, current")
        ax.plot(means["w_frobenius"], means["cosine_final"], ls=":", color=color, label=f"{label}, final")
    ax.set_xscale("log")
    ax.set_xlabel("$||W_h||_F$ (mean over heads)")
    ax.set_ylabel("cos with the W-ATT-SVM")
    ax.set_ylim(min(0.0, float(rows[["cosine", "cosine_final"]].min().min())) - 0.02, 1.02)
    n = int(rows["n_images"].iloc[0]) if len(rows) else 0
    ax.set_title(f"{_MODELS[model]}, {n} images", fontsize=9)
    ax.legend(loc="lower right")


def draw_decisive(ray: pd.DataFrame, gd: pd.DataFrame) -> Figure:
    """The decisive experiment at the run's last snapshot of ``vit.decisive.at``: (a) the ray test, (b) GD on W
    with the network's tokens frozen, (c) the paper's one-layer model on the head's real tokens."""
    with style.paper_style():
        fig, axes = plt.subplots(1, 3, figsize=(12.0, 3.8), layout="constrained")
        _rays(axes[0], ray)
        for ax, model in zip(axes[1:], _MODELS, strict=True):
            _cosines(ax, gd, model)
    return fig
