"""Figures 9(a), 9(b) and 10 of the convergence census, drawn only from its tables.

Paper: Appendix E, Figures 9 and 10. Each function takes a table written by the census rules
(``census_summary.csv`` for 9(a), ``fig9b.csv`` for 9(b) and 10) and returns a matplotlib Figure;
nothing is recomputed here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from maxmargin.figures import style as P

# Figure 9(a)'s colours in the paper: red = softmax not saturated, blue = LMM, green = GMM.
SCENARIOS = [
    ("pct_not_saturated", "softmax not saturated", "#d62728"),
    ("pct_lmm_only", "LMM (locally optimal, not GMM)", P.COLORS["lmm"]),
    ("pct_gmm", "GMM (globally optimal)", P.INPUT_COLORS[0]),
    ("pct_neither", "neither (an SVM-neighbour scores higher)", P.COLORS["p_mm"]),
]
WIDE = (5.8, 3.4)  # room for the legend outside the axes


def fig9a(summary: pd.DataFrame) -> Figure:
    """Figure 9(a): percentage of trials per scenario for each d, stacked to 100%.

    Appendix E: not saturated (finite-norm limit), saturated towards an LMM that is not the GMM,
    towards the GMM, or towards a p_mm(alpha) that is neither (Definitions 1-2).
    """
    table = summary.sort_values("d").assign(pct_lmm_only=lambda t: t["pct_lmm"] - t["pct_gmm"])
    with P.paper_style():
        fig, ax = P.new_axes(WIDE)
        x = np.arange(len(table))
        bottom = np.zeros(len(table))
        for column, label, color in SCENARIOS:
            values = table[column].to_numpy(dtype=float)
            ax.bar(x, values, bottom=bottom, width=0.65, color=color, edgecolor="k", linewidth=0.4, label=label)
            bottom += values
        ax.set_xticks(x, [str(int(d)) for d in table["d"]])
        ax.set_xlabel("dimension $d$")
        ax.set_ylabel("percentage of trials")
        ax.set_ylim(0, 100)
        n = ", ".join(sorted({str(int(k)) for k in table["n_trials"]}))
        ax.set_title(f"(a) Convergence scenarios of $p(t)$ ({n} trials per $d$)", fontsize=9)
        P.outside_legend(ax)
    return fig


def _gap_curves(hist: pd.DataFrame) -> list[tuple[int, pd.DataFrame, str]]:
    dims = sorted(hist["d"].unique())
    return [
        (int(d), hist[hist["d"] == d].sort_values("bin_left"), P.INPUT_COLORS[i % len(P.INPUT_COLORS)])
        for i, d in enumerate(dims)
    ]


def _gap_xlim(hist: pd.DataFrame, pad: float = 0.05) -> tuple[float, float]:
    used = hist[hist["count"] > 0]
    if used.empty:
        return -0.2, 1.2
    return float(min(used["bin_left"].min(), 0.0)) - pad, float(used["bin_right"].max()) + pad


def fig9b(hist: pd.DataFrame) -> Figure:
    """Figure 9(b): distribution of the minimal score gap gamma = min_i min_{t in T_i} (gamma_ia - gamma_it).

    Appendix E: over saturated trials, histogram with bins of width < 0.01 for d = 5, 10, 100;
    gamma < 0 (an SVM-neighbour scores higher, so alpha is not locally optimal) is rare and close to 0.
    """
    with P.paper_style():
        fig, ax = P.new_axes(WIDE)
        for d, g, color in _gap_curves(hist):
            edges = np.append(g["bin_left"].to_numpy(), g["bin_right"].to_numpy()[-1])
            ax.stairs(g["probability"].to_numpy(), edges, color=color, lw=1.0, label=f"$d = {d}$")
        width = float((hist["bin_right"] - hist["bin_left"]).iloc[0])
        ax.set_xlim(*_gap_xlim(hist))
        ax.set_ylim(bottom=0)
        ax.set_xlabel(r"min score gap to SVM-neighbours $\gamma$")
        ax.set_ylabel(f"probability (bins of width {width:g})")
        ax.set_title(r"(b) $\gamma := \min_{i,\, t \in \mathcal{T}_i} \gamma_{i\alpha_i} - \gamma_{it}$", fontsize=9)
        P.outside_legend(ax)
    return fig


def fig10(hist: pd.DataFrame) -> Figure:
    """Figure 10: cumulative probability of the minimal score gap gamma of Figure 9(b), with the gamma = 0 line.

    Appendix E: a sharp transition at 0; P(gamma < 0) (the value at 0, in the legend) is below 1%.
    """
    with P.paper_style():
        fig, ax = P.new_axes(WIDE)
        for d, g, color in _gap_curves(hist):
            x = np.append(g["bin_left"].to_numpy()[0], g["bin_right"].to_numpy())
            y = np.append(0.0, g["cumulative"].to_numpy())
            below = float(g.loc[g["bin_right"] <= 0.0, "cumulative"].max()) if (g["bin_right"] <= 0).any() else 0.0
            ax.plot(x, y, color=color, lw=1.2, label=f"$d = {d}$: $P(\\gamma < 0) = {below:.3f}$")
        ax.axvline(0.0, color="0.5", ls="--", lw=1.0, label=r"$\gamma = 0$")
        ax.set_xlim(*_gap_xlim(hist))
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(r"min score gap to SVM-neighbours $\gamma$")
        ax.set_ylabel("cumulative probability")
        ax.set_title(r"Cumulative probability of the gap $\gamma$ (Figure 9(b))", fontsize=9)
        P.outside_legend(ax)
    return fig


PANELS: dict[str, Callable[[pd.DataFrame], Figure]] = {"fig9a": fig9a, "fig9b": fig9b, "fig10": fig10}


def draw_census_panel(panel: str, table: pd.DataFrame) -> Figure:
    """Draw Figure 9(a), 9(b) or 10 from its table (the census summary, or the gap distribution)."""
    if panel not in PANELS:
        raise ValueError(f"unknown census panel {panel!r}; allowed: {', '.join(PANELS)}")
    return PANELS[panel](table)
