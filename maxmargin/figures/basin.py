"""The basin figure: where GD goes from every start of the Figure 1(b) plane, and Theorem 3's cone measured.

Paper: Theorem 3, eq. (7)-(8), Figures 1(b) and 2. Drawn only from the tables of
:mod:`maxmargin.experiments.basin` and the ``fig1b`` experiment's tokens and directions (never recomputes GD).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from maxmargin.figures import style

NO_STATIONARY = "no_stationary_point"  # the cone rows measured from the radial derivative (experiments.basin)
VARIANT_TITLES = {"normalized": "normalized GD", "constant": "constant-step GD"}
VARIANT_COLORS = {"normalized": "k", "constant": "#ff7f0e", NO_STATIONARY: "#7f7f7f"}


def _tint(color: str, weight: float) -> tuple[float, float, float]:
    """``color`` mixed with white (weight 0: white, 1: the colour)."""
    return tuple(1 - weight * (1 - c) for c in to_rgb(color))


# (class, heading) -> (legend label, colour): saturated runs in the paper's GMM red / LMM blue, unsaturated ones in
# pale tints of where they are heading (the tokens they select), anything else dark gray.
CELLS = {
    ("gmm", "gmm"): ("start → GMM", _tint(style.COLORS["gmm"], 0.45)),
    ("lmm", "lmm"): ("start → LMM", _tint(style.COLORS["lmm"], 0.45)),
    ("not_saturated", "gmm"): ("not saturated, selects the GMM token", _tint("#bdbdbd", 0.6)),
    ("not_saturated", "lmm"): ("not saturated, selects the LMM token", _tint("#9ecae1", 0.6)),
}
SHORT = {"gmm": "GMM", "lmm": "LMM", "not_saturated": "not saturated", "neither": "neither", "infeasible": "infeasible"}
OTHER = ("other (neither / infeasible)", (0.3, 0.3, 0.3))


def _cell_codes(rows: pd.DataFrame) -> tuple[np.ndarray, tuple[float, float, float, float], dict[int, int]]:
    """The grid as an image of cell codes (index into CELLS, len(CELLS) for any other label), its extent, counts."""
    keys = list(CELLS)
    code = np.array(
        [keys.index(k) if k in CELLS else len(keys) for k in zip(rows["class"], rows["heading"], strict=True)]
    )
    x, y = np.unique(rows["p1"]), np.unique(rows["p2"])
    image = np.full((y.size, x.size), len(keys))
    image[np.searchsorted(y, rows["p2"]), np.searchsorted(x, rows["p1"])] = code
    dx, dy = (x[1] - x[0]) / 2, (y[1] - y[0]) / 2
    counts = {int(c): int((code == c).sum()) for c in np.unique(code)}
    return image, (x[0] - dx, x[-1] + dx, y[0] - dy, y[-1] + dy), counts


def _cone_boundary(ax: Axes, cone: pd.DataFrame, lmm: np.ndarray, color: str, label: str, **kw) -> None:
    """The measured boundary of C_{mu,R}(p_mm): at each radius R the rays at +-arccos(1 - mu_cone(R))."""
    base = np.arctan2(lmm[1], lmm[0])
    half = np.arccos(1 - cone["mu_cone"].to_numpy())
    R = cone["R"].to_numpy()
    for sign in (1, -1):
        ax.plot(R * np.cos(base + sign * half), R * np.sin(base + sign * half), color=color, label=label, **kw)
        label = None


def _basin_map(
    ax: Axes,
    rows: pd.DataFrame,
    cone: pd.DataFrame,
    free_cone: pd.DataFrame,
    paths: pd.DataFrame,
    tokens: pd.DataFrame,
    directions: pd.DataFrame,
) -> None:
    """One variant's basin map with tokens, GMM/LMM rays, the Figure 1(b) paths and the measured cone; how many
    starts went where, in a box in its corner."""
    image, box, counts = _cell_codes(rows)
    colors = [c for _, c in CELLS.values()] + [OTHER[1]]
    ax.imshow(image, origin="lower", extent=box, cmap=ListedColormap(colors), vmin=-0.5, vmax=len(colors) - 0.5)
    ax.set_aspect("equal")
    ax.set_autoscale_on(False)
    dirs = directions[(directions["record"] == "direction") & directions["kind"].isin(["gmm", "lmm"])]
    for row in dirs.drop_duplicates(subset=["kind"]).itertuples():
        style.draw_ray(ax, style.direction_of(row._asdict()), style.COLORS[row.kind], f"{row.kind.upper()} direction")
    lmm = style.direction_of(dirs[dirs["kind"] == "lmm"].iloc[0])
    _cone_boundary(ax, cone, lmm, "k", "measured cone $C_{\\mu,R}$", lw=1.4, marker=".", ms=5)
    free = free_cone[free_cone["R"] <= np.hypot(box[1] - box[0], box[3] - box[2])]
    _cone_boundary(ax, free, lmm, VARIANT_COLORS[NO_STATIONARY], "no stationary point (d/dr L < 0)", lw=1.0, ls=":")
    for i, (_, xy) in enumerate(paths.groupby("run", sort=False)):
        label = f"$p(0)$ = ({style.number(xy.p1.iloc[0])}, {style.number(xy.p2.iloc[0])})"
        color = style.RUN_COLORS[i % len(style.RUN_COLORS)]
        points = xy[["p1", "p2"]].to_numpy()
        inside = (
            (points[:, 0] >= box[0]) & (points[:, 0] <= box[1]) & (points[:, 1] >= box[2]) & (points[:, 1] <= box[3])
        )
        end = int(np.argmin(inside[1:])) + 1 if not inside[1:].all() else len(points)
        style.draw_trajectory(ax, points[: end + 1], color, label=label, lw=1.2)
        # Starts that sit on a token ((0, 1) on the optimal one, (0, 0) on the non-optimal one) stay in sight above it
        ax.scatter(*points[0], s=16, color=color, edgecolor="w", linewidth=0.6, zorder=6)
    style.draw_tokens(ax, tokens, by_input=False, locally_optimal=style.locally_optimal_tokens(directions))
    ax.set_xlim(box[0], box[1])
    ax.set_ylim(box[2], box[3])
    ax.set_xlabel("$p_1$ / $k_1$")
    ax.set_ylabel("$p_2$ / $k_2$")
    names = [label for label, _ in CELLS.values()] + [OTHER[0]]
    text = "\n".join(f"{names[c]}: {n:,} start{'s' * (n != 1)}" for c, n in sorted(counts.items()))
    box_style = {"facecolor": "white", "alpha": 0.85, "edgecolor": "0.6", "boxstyle": "round,pad=0.3"}
    ax.text(0.02, 0.02, text, transform=ax.transAxes, fontsize="small", va="bottom", ha="left", bbox=box_style)
    if not rows["class"].isin(["gmm", "lmm"]).any():  # a map of pale tints only: say why, where it is seen
        n_iter = int(cone["n_iter"].iloc[0])
        ax.text(0.5, 0.97, f"No start saturates within {n_iter} iterations\n($\\|p\\|$ grows like log $t$): the tints "
                "show\nthe token each start selects.", transform=ax.transAxes, fontsize="small",
                va="top", ha="center", bbox=box_style)  # fmt: skip


def _mu_panel(ax: Axes, cone: pd.DataFrame) -> None:
    """mu_max(R) per variant (markers; zero at the bottom edge) and the cone's mu (running minimum, line); the axis
    starts just under the smallest positive mu_max, so that no decade is left empty."""
    positive = cone.loc[cone["mu_max"] > 0, "mu_max"]
    floor = 10 ** np.floor(np.log10(positive.min())) / 3 if len(positive) else 1e-6
    for variant, g in cone.groupby("variant", sort=False):
        color = VARIANT_COLORS.get(variant, "0.3")
        name = VARIANT_TITLES.get(variant, "no stationary point (d/dr L < 0)")
        mu = g["mu_max"].to_numpy()
        ax.plot(g["R"], np.where(g["mu_cone"] > 0, g["mu_cone"], np.nan), color=color, label=name)
        ax.scatter(g["R"][mu > 0], mu[mu > 0], color=color, s=14)
        ax.scatter(g["R"][mu == 0], np.full((mu == 0).sum(), 1.5 * floor), color=color, marker="v", s=14)
        moved = g.loc[g["n_starts"] > 0, "min_final_corr"].min()
        if moved < 0.99:  # GD left these starts almost where they were: their label is the start's, not a limit
            first = g[g["mu_max"] > 0].iloc[0]
            text = f"{name}: min final cos(p, $p_{{mm}}$) {moved:.2f},\nlabels of starts GD barely moves"
            # on the side of the point with more room (log R): the note stays inside the axes
            left = np.log(first.R / cone["R"].min()) > np.log(cone["R"].max() / first.R)
            ax.annotate(
                text,
                (first.R, first.mu_max),
                xytext=(-6, 0) if left else (6, 0),
                textcoords="offset points",
                ha="right" if left else "left",
                va="center",
                fontsize="small",
                color=color,
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(floor, 1.0)
    ax.set_xlabel("radius $R$")
    ax.set_ylabel("$\\mu_{max}(R)$  (1 - cos half-angle)")
    ax.set_title("Largest $\\mu$ whose arc of starts\nall reach the LMM (▼: none)")
    ax.legend(loc="upper left", fontsize="small")


def _variant_title(variant: str, settings: pd.Series) -> str:
    """The panel title: the variant, its step (with the L_p bound for constant-step GD) and its iterations."""
    bound = "" if settings.normalized else f" ($L_p$ ≤ {settings.L_p_bound:.3g})"
    step = f"η = {settings.eta:.3g}{bound}"
    return f"{VARIANT_TITLES.get(variant, variant)}, {step}, {int(settings.n_iter)} iterations"


def draw_basin(
    basin: pd.DataFrame, cone: pd.DataFrame, paths: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame
) -> Figure:
    """The basin map of every GD variant (Figure 1(b) plane) and mu_max against R (Theorem 3's cone), with one
    legend for the whole figure under it."""
    variants = list(basin["variant"].unique())
    with style.paper_style(wide=True):
        rows = (len(variants) + 2 + 1) // 2  # the maps, then mu_max(R) and the legend, two panels a row
        fig, grid = plt.subplots(rows, 2, figsize=(style.WIDE_WIDTH, 4.3 * rows), layout="constrained", squeeze=False)
        axes, legend_ax = list(grid.flat[: len(variants) + 1]), grid.flat[-1]
        for ax in grid.flat[len(variants) + 1 : -1]:
            ax.set_axis_off()
        for ax, variant in zip(axes, variants, strict=False):
            settings = cone[cone["variant"] == variant].iloc[0]
            _basin_map(
                ax,
                basin[basin["variant"] == variant],
                cone[cone["variant"] == variant],
                cone[cone["variant"] == NO_STATIONARY],
                paths[paths["variant"] == variant],
                tokens,
                directions,
            )
            ax.set_title(_variant_title(variant, settings))
        _mu_panel(axes[-1], cone)
        cells = [Patch(facecolor=color, edgecolor="0.5", label=label) for label, color in CELLS.values()]
        found = dict(zip(*reversed(axes[0].get_legend_handles_labels()), strict=True))
        for ax in axes[1:-1]:
            found |= {label: h for h, label in zip(*ax.get_legend_handles_labels(), strict=True) if label not in found}
        legend_ax.set_axis_off()
        legend_ax.legend(handles=cells + list(found.values()), loc="center", ncols=2, fontsize="small")
    return fig
