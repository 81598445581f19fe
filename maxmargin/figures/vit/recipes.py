"""The recipe study (beyond the paper): the same ViT under several optimisers and rates, against optimiser steps."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.ticker import FuncFormatter

from maxmargin.figures import style
from maxmargin.figures.style import plt
from maxmargin.figures.vit.notes import WARNING_COLOR, footer, stand_in_warning
from maxmargin.registry.vit import DATASET_NAMES

RECIPE_PANELS = (
    ("test_acc", "Test accuracy"),
    ("soft_sparsity", "Soft-sparsity $d_{nnz}(s)/T$"),
    ("w_growth", "$\\|W\\|_F$ / its initial value (log scale)"),
)

# Which ticks of the log axis get a label, richest first: every tick, then those of mantissa 1, 2, 3 or 5, of 1, 2 or
# 5, the decades alone. 0.9 and 1 sit 0.046 decades apart: over a growth of ||W||_F by more than a decade their
# labels overlap (as 9 and 10 did in the depth-12 study's figure), so the richest choice whose neighbouring labels
# stay LOG_LABEL_GAP label sizes apart on the drawn axis is labelled. Under a decade matplotlib ticks linearly
# (1.1, 1.2, ...): every tick then keeps its label.
LOG_LABEL_MANTISSAS = (None, (1, 2, 3, 5), (1, 2, 5), (1,))
LOG_LABEL_GAP = 1.3


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
        labels = log_labels(axes[-1], FontProperties(size=plt.rcParams["ytick.labelsize"]).get_size_in_points())
        axes[-1].yaxis.set_major_formatter(labels)
        axes[-1].yaxis.set_minor_formatter(labels)
        style.outside_legend(axes[0])  # beside the panels: six recipes' lines leave no free corner inside one
        datasets = sorted(set(table["dataset"]))
        warnings = [(w, WARNING_COLOR) for w in map(stand_in_warning, datasets) if w]
        footer(fig, warnings or [(f"data: {', '.join(DATASET_NAMES.get(d, d) for d in datasets)}", "0.4")])
    return fig


def log_labels(ax: Axes, size: float) -> FuncFormatter:
    """Plain-number labels (``%.3g``) of a log y axis, on the richest choice of ticks of :data:`LOG_LABEL_MANTISSAS`
    whose labels (``size`` points) keep apart at the axis' drawn height and span, decided when it is drawn."""
    chosen: dict[tuple[float, float, float], tuple[int, ...] | None] = {}  # per view and height: asked per tick

    def shown(y: float, mantissas: tuple[int, ...] | None) -> bool:
        mantissa = y / 10.0 ** math.floor(math.log10(y) + 1e-9)
        return mantissas is None or any(abs(mantissa - m) < 1e-6 * m for m in mantissas)

    def choice(low: float, high: float) -> tuple[int, ...] | None:
        ticks = sorted({t for t in (*ax.yaxis.get_majorticklocs(), *ax.yaxis.get_minorticklocs()) if low <= t <= high})
        points_per_decade = ax.bbox.height * 72.0 / ax.figure.dpi / max(math.log10(high / low), 1e-9)
        for mantissas in LOG_LABEL_MANTISSAS:
            labelled = [t for t in ticks if shown(t, mantissas)]
            if len(labelled) < 2 or np.diff(np.log10(labelled)).min() * points_per_decade >= LOG_LABEL_GAP * size:
                return mantissas
        return LOG_LABEL_MANTISSAS[-1]

    def label(y: float, _pos: int | None) -> str:
        low, high = sorted(ax.get_ylim())
        key = (low, high, ax.bbox.height)
        if key not in chosen:
            chosen[key] = choice(low, high)
        return f"{y:.3g}" if shown(y, chosen[key]) else ""

    return FuncFormatter(label)
