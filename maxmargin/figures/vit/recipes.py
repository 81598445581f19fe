"""The recipe study (beyond the paper): the same ViT under several optimisers and rates, against optimiser steps."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter

from maxmargin.figures import style
from maxmargin.figures.style import plt
from maxmargin.figures.vit.notes import WARNING_COLOR, footer, stand_in_warning
from maxmargin.registry.vit import DATASET_NAMES

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
        footer(fig, warnings or [(f"data: {', '.join(DATASET_NAMES.get(d, d) for d in datasets)}", "0.4")])
    return fig
