"""Figures 9(a), 9(b) and 10 of the convergence census, the budget study and the phase diagram, from tables only.

Paper: Appendix E, Figures 9 and 10. Each function takes a table written by the census rules
(``census_summary.csv`` for 9(a), ``fig9b.csv`` for 9(b) and 10, ``census_budget.csv``, ``census_grid.csv``)
and returns a matplotlib Figure; nothing is recomputed here.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from maxmargin.figures import style

# Figure 9(a)'s colours in the paper: red = softmax not saturated, blue = LMM, green = GMM. Stacked from the bottom
# so that every boundary is a proportion of the summary (GMM, LMM incl. GMM, saturated = 100 - not saturated),
# whose Wilson interval is drawn there as an error bar.
SCENARIOS = [
    ("pct_gmm", "GMM (globally optimal)", style.INPUT_COLORS[0]),
    ("pct_lmm_only", "LMM (locally optimal, not GMM)", style.COLORS["lmm"]),
    ("pct_neither", "neither (an SVM-neighbour scores higher)", style.COLORS["p_mm"]),
    ("pct_not_saturated", "softmax not saturated", "#d62728"),
]
WIDE = (5.8, 3.4)  # room for the legend outside the axes


def _boundary_intervals(table: pd.DataFrame) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(height, low, high) of the stack's inner boundaries: pct GMM, pct LMM (incl. GMM), pct saturated."""
    saturated = 100.0 - table[["pct_not_saturated", "pct_not_saturated_ci_high", "pct_not_saturated_ci_low"]]
    return [
        tuple(table[f"{name}{suffix}"].to_numpy(dtype=float) for suffix in ("", "_ci_low", "_ci_high"))
        for name in ("pct_gmm", "pct_lmm")
    ] + [tuple(saturated[c].to_numpy(dtype=float) for c in saturated.columns)]


def fig9a(summary: pd.DataFrame) -> Figure:
    """Figure 9(a): percentage of trials per scenario for each d, stacked to 100%, with Wilson intervals.

    Appendix E: not saturated (finite-norm limit), saturated towards an LMM that is not the GMM,
    towards the GMM, or towards a p_mm(alpha) that is neither (Definitions 1-2).
    """
    table = summary.sort_values("d").assign(pct_lmm_only=lambda t: t["pct_lmm"] - t["pct_gmm"])
    with style.paper_style():
        fig, ax = style.new_axes(WIDE)
        x = np.arange(len(table))
        bottom = np.zeros(len(table))
        for column, label, color in SCENARIOS:
            values = table[column].to_numpy(dtype=float)
            ax.bar(x, values, bottom=bottom, width=0.65, color=color, edgecolor="k", linewidth=0.4, label=label)
            bottom += values
        for i, (height, low, high) in enumerate(_boundary_intervals(table)):
            label = "Wilson interval (at GMM, LMM, saturated)" if i == 0 else None
            err = [height - low, high - height]
            ax.errorbar(
                x + (i - 1) * 0.12, height, yerr=err, fmt="none", ecolor="k", elinewidth=0.8, capsize=2, label=label
            )
        ax.set_xticks(x, [str(int(d)) for d in table["d"]])
        ax.set_xlabel("dimension $d$")
        ax.set_ylabel("percentage of trials")
        ax.set_ylim(0, 100)
        n = ", ".join(sorted({str(int(k)) for k in table["n_trials"]}))
        ax.set_title(f"(a) Convergence scenarios of $p(t)$ ({n} trials per $d$)", fontsize=9)
        fig.legend(loc="outside lower center", ncols=2)
    return fig


def _gap_curves(hist: pd.DataFrame) -> list[tuple[int, pd.DataFrame, str]]:
    dims = sorted(hist["d"].unique())
    return [
        (int(d), hist[hist["d"] == d].sort_values("bin_left"), style.INPUT_COLORS[i % len(style.INPUT_COLORS)])
        for i, d in enumerate(dims)
    ]


def _gap_xlim(hist: pd.DataFrame, pad: float = 0.05) -> tuple[float, float]:
    used = hist[hist["count"] > 0]
    if used.empty:
        return -0.2, 1.2
    return float(min(used["bin_left"].min(), 0.0)) - pad, float(used["bin_right"].max()) + pad


def fig9b(hist: pd.DataFrame) -> Figure:
    """Figure 9(b): distribution of the minimal score gap gamma = min_i min_{t in T_i} (gamma_ia - gamma_it).

    Appendix E: over saturated trials, histogram with bins of width < 0.01 for d = 5, 10, 100; gamma < 0 (an
    SVM-neighbour scores higher, so alpha is not locally optimal) is rare and close to 0. One row per d on a shared
    x-axis, so that the distributions do not hide each other; gamma < 0 is shaded.
    """
    curves = _gap_curves(hist)
    width = float((hist["bin_right"] - hist["bin_left"]).iloc[0])
    with style.paper_style():
        fig, axes = plt.subplots(len(curves), 1, figsize=(WIDE[0], 1.1 + 1.05 * len(curves)), sharex=True,
                                 layout="constrained", squeeze=False)  # fmt: skip
        for ax, (d, g, color) in zip(axes[:, 0], curves, strict=True):
            edges = np.append(g["bin_left"].to_numpy(), g["bin_right"].to_numpy()[-1])
            ax.stairs(g["probability"].to_numpy(), edges, color=color, fill=True, alpha=0.75, lw=0.8)
            ax.axvspan(_gap_xlim(hist)[0], 0.0, color="0.85", zorder=0)
            ax.set_ylim(bottom=0)
            ax.text(0.99, 0.85, f"$d = {d}$ ({int(g['n_saturated'].iloc[0])} saturated trials)", ha="right",
                    transform=ax.transAxes, fontsize=7)  # fmt: skip
        axes[-1, 0].set_xlim(*_gap_xlim(hist))
        axes[-1, 0].set_xlabel(r"minimal score gap to the SVM-neighbours $\gamma$ (shaded: $\gamma < 0$)")
        fig.supylabel(f"probability (bins of width {width:g})", fontsize=8)
        axes[0, 0].set_title("(b) Distribution of the minimal score gap $\\gamma$ over saturated trials", fontsize=9)
    return fig


def fig10(hist: pd.DataFrame) -> Figure:
    """Figure 10: cumulative probability of the minimal score gap gamma of Figure 9(b), with the gamma = 0 line.

    Appendix E: a sharp transition at 0; P(gamma < 0) (the value at 0, in the legend) is below 1%.
    """
    with style.paper_style():
        fig, ax = style.new_axes(WIDE)
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
        ax.set_title(r"Cumulative distribution of the minimal score gap $\gamma$", fontsize=9)
        style.outside_legend(ax)
    return fig


def _errorbar(ax: Axes, x: np.ndarray, g: pd.DataFrame, column: str, color: str, label: str) -> None:
    y = g[column].to_numpy(dtype=float)
    err = [y - g[f"{column}_ci_low"].to_numpy(dtype=float), g[f"{column}_ci_high"].to_numpy(dtype=float) - y]
    ax.errorbar(x, y, yerr=err, color=color, marker="o", ms=3, lw=1.0, capsize=2, label=label)


def census_budget(table: pd.DataFrame) -> Figure:
    """The iteration budget: P(gap < 0) and the share of unsaturated trials against n_iter, per small d.

    Tests the explanation of P(gap < 0) > 1% at small d (near-equal scores not separated in 1000 iterations);
    error bars are Wilson intervals, the legend counts the labels that moved from the smallest budget.
    """
    with style.paper_style():
        fig, (left, right) = plt.subplots(1, 2, figsize=(8.0, 3.5), layout="constrained")
        for i, (d, g) in enumerate(table.sort_values("n_iter").groupby("d")):
            color = style.INPUT_COLORS[i % len(style.INPUT_COLORS)]
            label = f"$d = {int(d)}$ ({int(g['n_labels_moved'].iloc[-1])} labels moved)"
            _errorbar(left, g["n_iter"].to_numpy(), g, "p_gap_negative", color, label)
            _errorbar(right, g["n_iter"].to_numpy(), g, "pct_not_saturated", color, f"$d = {int(d)}$")
        left.axhline(0.01, color="0.5", ls="--", lw=1.0, label="1% (the paper)")
        for ax, ylabel in ((left, r"$P(\gamma < 0)$ among saturated trials"), (right, "% not saturated")):
            ax.set_xscale("log")
            ax.set_xlabel("GD iterations")
            ax.set_ylabel(ylabel)
            ax.set_ylim(bottom=0)
        # under the panels, off the error bars (the d = 2 bars reach the top of the left panel)
        fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncols=3)
        fig.suptitle("Does a longer run settle the near-ties at small $d$?", fontsize=9)
    return fig


GRID_MAPS = [  # column, title, colour map, colour scale maximum (None: the panel's), cell label format
    ("pct_gmm", "% GMM", "Greens", 100.0, ".0f"),
    ("pct_not_saturated", "% not saturated", "Reds", 100.0, ".0f"),
    ("p_gap_negative", r"$P(\gamma < 0)$", "Purples", None, ".2f"),
]


def census_grid(table: pd.DataFrame) -> Figure:
    """Phase diagram of the census: heat maps of P(GMM), P(not saturated) and P(gap < 0) over (n, T), one row per d.

    Beyond Appendix E's single (n, T) = (4, 6): where does normalized GD find the global optimum?
    """
    dims = sorted(table["d"].unique())
    ns, Ts = sorted(table["n"].unique()), sorted(table["T"].unique())
    with style.paper_style():
        fig, axes = plt.subplots(len(dims), len(GRID_MAPS), figsize=(9.0, 2.3 * len(dims)), layout="constrained")
        axes = np.atleast_2d(axes)
        for row, d in zip(axes, dims, strict=True):
            cells = table[table["d"] == d].pivot(index="n", columns="T")
            for ax, (column, title, cmap, vmax, fmt) in zip(row, GRID_MAPS, strict=True):
                values = cells[column].reindex(index=ns, columns=Ts).to_numpy(dtype=float)
                image = ax.imshow(values, cmap=cmap, vmin=0, vmax=vmax, origin="lower", aspect="auto")
                dark = 0.6 * image.norm.vmax
                for (i, j), v in np.ndenumerate(values):
                    color = "w" if v > dark else "k"
                    ax.text(
                        j, i, "" if np.isnan(v) else f"{v:{fmt}}", ha="center", va="center", fontsize=7, color=color
                    )
                ax.grid(False)
                ax.set_xticks(range(len(Ts)), [str(int(t)) for t in Ts])
                ax.set_yticks(range(len(ns)), [str(int(n)) for n in ns])
                ax.set_xlabel("tokens $T$")
                ax.set_ylabel("inputs $n$")
                ax.set_title(f"{title}, $d = {int(d)}$", fontsize=8)
                fig.colorbar(image, ax=ax, shrink=0.8)
    return fig
