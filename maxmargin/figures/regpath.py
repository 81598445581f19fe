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
    "fig1b": "Fig. 1(b) data: $p(R)$, fixed $v$ (Thm 1)",
    "fig3a": "Fig. 3(a) data: $(v_r, p_R)$, $r = R$ (Thm 5)",
    "fig3b": "Fig. 3(b) data: $(v_r, p_R)$, $r = R$ (Thm 6)",
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


def _style(kind: str, method: str, run_index: int) -> dict:
    if method == "path":
        ls = "--" if kind == "p_mm" else "-"
        return {"color": style.COLORS[kind], "ls": ls, "lw": 1.6, "marker": "o", "ms": 2.5}
    if method == "local":
        return {"color": style.COLORS[kind], "ls": "none", "marker": "s", "ms": 3.5, "mfc": "none"}
    return {"color": style.COLORS[kind], "ls": (":", "-.")[run_index % 2], "lw": 1.2}


def _panel(ax_cos: Axes, ax_gap: Axes, frame: pd.DataFrame, instance: str) -> None:
    """Cosine (top) and 1 - cosine with the KKT residual of the path (bottom) against R; local optima as squares."""
    shown = frame[frame["method"].isin(["path", "local", "gd"])]
    gd_runs = list(dict.fromkeys(shown.loc[shown["method"] == "gd", "run"]))
    order = {"p_mm": 1}  # p_mm dashed on top: it coincides with p_relax on the Fig. 3(a) data
    groups = sorted(shown.groupby(["method", "run", "kind"], sort=False), key=lambda item: order.get(item[0][2], 0))
    for (method, run, kind), g in groups:
        g = g.sort_values("R")
        line_style = _style(kind, method, gd_runs.index(run) if run in gd_runs else 0)
        label = _label(kind, method, run)
        ax_cos.plot(g["R"], g["cosine"], label=label, **line_style)
        ax_gap.plot(g["R"], np.maximum(1.0 - g["cosine"], FLOOR), **line_style)
    path = frame[frame["method"] == "path"].groupby("R")["kkt_residual"].max()
    ax_gap.plot(
        path.index,
        np.maximum(path.to_numpy(), FLOOR),
        color="k",
        lw=0.8,
        marker="x",
        ms=3,
        label="KKT residual of the path",
    )
    for ax in (ax_cos, ax_gap):
        ax.set_xscale("log")
    ax_gap.set_yscale("log")
    ax_cos.set_title(TITLES.get(instance, instance), fontsize=9)
    ax_cos.set_ylabel("cosine")
    ax_gap.set_ylabel("1 - cosine; KKT residual")
    ax_gap.set_xlabel("$R$ (GD: $\\|p(t)\\|$)" if gd_runs else "$R = r$")
    ax_cos.legend(loc="center right" if gd_runs else "lower right", fontsize=6.5)
    ax_gap.legend(loc="lower left", fontsize=6.5)


def draw_regpath(table: pd.DataFrame) -> Figure:
    """One column per instance of ``table`` (regpath.csv): the path's cosine with each max-margin direction."""
    instances = list(dict.fromkeys(table["instance"]))
    with style.paper_style():
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(
            2, len(instances), figsize=(4.3 * len(instances), 6.2), layout="constrained", squeeze=False, sharex="col"
        )
        for j, instance in enumerate(instances):
            _panel(axes[0, j], axes[1, j], table[table["instance"] == instance], instance)
    return fig
