"""The regularization-path figure, drawn only from results/tables/regpath.csv and regpath_compare.csv.

Paper: Theorem 1 (Fig. 1(b) data: the path goes to the GMM while GD started in the LMM cone goes to
the LMM, Theorem 3, and a constrained local optimum near the LMM exists at large R) and Theorems 5-6
(Fig. 3(a)/(b) data: p_R/R -> p_mm resp. p_relax, v_r/r -> v_mm).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from maxmargin.core.directions import BLOCK_OF_KIND
from maxmargin.figures import style
from maxmargin.figures.synthetic import KIND_LABELS

TITLES = {
    "fig1b": "Fig. 1(b) data (Thm 1):\n$p(R)$, fixed $v$",
    "fig3a": "Fig. 3(a) data (Thm 5):\n$(v_r, p_R)$, $r = R$",
    "fig3b": "Fig. 3(b) data (Thm 6):\n$(v_r, p_R)$, $r = R$",
}
FLOOR = 1e-16  # 1 - cosine is drawn at least at this value (log axis)


def _label(kind: str, method: str, run: str) -> str:
    block = "v_r" if BLOCK_OF_KIND[kind] == "v" else "p"
    if method == "path":
        what = f"${block}(R)$" if kind in ("gmm", "lmm") else f"${block}$ path"
    elif method == "local":
        what = f"local optimum ({run})"
    else:
        what = run
    return f"{what} vs {KIND_LABELS[kind]}"


# Colour is the series (the path of p red and of v blue, as in the paper's Figure 3, gray against p_mm where p_relax
# is its limit; the local optima and each GD run a colour of their own), line style the direction it is compared
# with: solid for the limit the theorem names (GMM, p_relax, v_mm), dashed for the other (LMM, p_mm). The local
# optima are squares, filled against the GMM.
REFERENCE_STYLE = {"gmm": "-", "p_relax": "-", "v_mm": "-", "lmm": "--", "p_mm": "--"}
LOCAL_COLOR = "#9467bd"
GD_COLORS = ("#ff7f0e", "#e377c2")


def _style(kind: str, method: str, run_index: int) -> dict:
    ls = REFERENCE_STYLE[kind]
    if method == "path":
        color = style.COLORS["p_mm" if kind == "p_mm" else BLOCK_OF_KIND[kind]]
        return {"color": color, "ls": ls, "lw": 1.6, "marker": "o", "ms": 2.5}
    if method == "local":
        return {
            "color": LOCAL_COLOR,
            "ls": "none",
            "marker": "s",
            "ms": 3.5,
            "mfc": LOCAL_COLOR if ls == "-" else "none",
        }
    return {"color": GD_COLORS[run_index % len(GD_COLORS)], "ls": ls, "lw": 1.2}


def _panel(ax_cos: Axes, ax_gap: Axes, frame: pd.DataFrame, instance: str) -> None:
    """Cosine (top) and 1 - cosine (bottom, log) against R; local optima as squares; the path's largest KKT
    residual (solver noise at the tolerance) in one line under the axes; the column's legend under it."""
    shown = frame[frame["method"].isin(["path", "local", "gd"])]
    gd_runs = list(dict.fromkeys(shown.loc[shown["method"] == "gd", "run"]))
    order = {"p_mm": 1}  # p_mm dashed on top: it coincides with p_relax on the Fig. 3(a) data
    groups = sorted(shown.groupby(["method", "run", "kind"], sort=False), key=lambda item: order.get(item[0][2], 0))
    for (method, run, kind), g in groups:
        g = g.sort_values("R")
        line_style = _style(kind, method, gd_runs.index(run) if run in gd_runs else 0)
        ax_cos.plot(g["R"], g["cosine"], label=_label(kind, method, run), **line_style)
        ax_gap.plot(g["R"], np.maximum(1.0 - g["cosine"], FLOOR), **line_style)
    for ax in (ax_cos, ax_gap):
        ax.set_xscale("log")
    ax_gap.set_yscale("log")
    ax_cos.set_title(TITLES.get(instance, instance))
    ax_cos.set_ylabel("cosine")
    ax_gap.set_ylabel("1 - cosine")
    kkt = float(frame.loc[frame["method"] == "path", "kkt_residual"].max())
    x = "$R$ (GD: $\\|p(t)\\|$)" if gd_runs else "$R = r$"
    ax_gap.set_xlabel(f"{x}\npath's KKT residual ≤ {kkt:.0e}", linespacing=1.5)
    handles, labels = ax_cos.get_legend_handles_labels()
    ax_gap.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.42), ncols=1)


def draw_regpath(path: pd.DataFrame, compare: pd.DataFrame) -> Figure:
    """One column per instance of the path (regpath.csv): the path's cosine with each max-margin direction, and
    what it is compared with (regpath_compare.csv: GD runs, local optima)."""
    table = pd.concat([path, compare], ignore_index=True)
    instances = list(dict.fromkeys(table["instance"]))
    with style.paper_style(wide=True):
        import matplotlib.pyplot as plt

        width = min(3.5 * len(instances), style.WIDE_WIDTH)
        fig, axes = plt.subplots(
            2, len(instances), figsize=(width, 8.6), layout="constrained", squeeze=False, sharex="col"
        )
        for j, instance in enumerate(instances):
            _panel(axes[0, j], axes[1, j], table[table["instance"] == instance], instance)
    return fig
