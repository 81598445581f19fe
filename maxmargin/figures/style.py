"""The one plotting style of every figure, and the drawing primitives the panels share."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

# Colours follow the paper: GMM and p red, LMM and v blue, p_mm (when not the limit) gray.
COLORS = {
    "gmm": "#d62728",
    "lmm": "#1f77b4",
    "p_relax": "#d62728",
    "p_mm": "#7f7f7f",
    "v_mm": "#1f77b4",
    "p": "#d62728",
    "v": "#1f77b4",
}
INPUT_COLORS = ["#2ca02c", "#17becf", "#e6b800", "#9467bd", "#8c564b"]
# One colour per GD run in the key-plane panels: no red or blue, which the paper keeps for GMM/p and LMM/v.
RUN_COLORS = ["#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#2ca02c"]
STYLE = {
    "figure.figsize": (4.2, 3.6),
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 7,
    "legend.framealpha": 0.85,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # TrueType (Type 42) fonts in PDF and PostScript: publishers reject matplotlib's default Type 3 bitmaps-as-glyphs
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
}


@contextlib.contextmanager
def paper_style() -> Iterator[None]:
    """Apply the shared style for the duration of one figure."""
    with plt.rc_context(STYLE):
        yield


KEY_PLANE_FIGSIZE = (6.4, 3.8)


def new_axes(figsize: tuple[float, float] | None = None) -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=figsize or STYLE["figure.figsize"], layout="constrained")
    return fig, ax


def direction_of(row: pd.Series) -> np.ndarray:
    return np.asarray(json.loads(row["direction"]), dtype=float)


def draw_ray(ax: Axes, direction: np.ndarray, color: str, label: str, length: float = 100.0, **kw) -> None:
    """A dashed ray from the origin along a max-margin direction (its first two coordinates)."""
    u = direction[:2] / np.linalg.norm(direction[:2])
    kw = {"ls": "--", "lw": 1.6, **kw}
    ax.plot([0, length * u[0]], [0, length * u[1]], color=color, label=label, **kw)


def draw_tokens(ax: Axes, tokens: pd.DataFrame, *, by_input: bool = True, annotate: bool = True) -> None:
    """Tokens in the key plane: stars for optimal tokens, circles for the others (Definition 1)."""
    seen = set()
    for row in tokens.itertuples():
        color = INPUT_COLORS[row.input % len(INPUT_COLORS)] if by_input else ("#2ca02c" if row.optimal else "k")
        marker = "*" if row.optimal else "o"
        label = None
        if annotate:
            label = f"({row.k1:g},{row.k2:g}), {'optimal' if row.optimal else 'non-opt'} token (γ={row.score:.3g})"
            if not by_input:
                label = f"{'Optimal' if row.optimal else 'Non-opt'} tokens (γ={row.score:.3g})"
            if label in seen:
                label = None
            seen.add(label)
        ax.scatter(
            row.k1,
            row.k2,
            s=150 if row.optimal else 55,
            marker=marker,
            color=color,
            edgecolor="k",
            linewidth=0.6,
            zorder=5,
            label=label,
        )


def draw_trajectory(
    ax: Axes,
    xy: np.ndarray,
    color: str,
    *,
    n_arrows: int = 2,
    label: str | None = None,
    lw: float = 1.1,
    zorder: float = 2.0,
) -> None:
    """A GD path with arrow heads showing the direction of travel (the paper's '->' marks)."""
    ax.plot(xy[:, 0], xy[:, 1], color=color, lw=lw, alpha=0.9, label=label, zorder=zorder, solid_capstyle="butt")
    ax.scatter(xy[0, 0], xy[0, 1], s=12 + 4 * lw, color=color, edgecolor="k", linewidth=0.4, zorder=4)
    seg = np.linalg.norm(np.diff(xy, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    for frac in np.linspace(0, 1, n_arrows + 2)[1:-1]:
        j = int(np.searchsorted(arc, frac * arc[-1]))
        j = min(max(j, 1), len(xy) - 1)
        ax.annotate(
            "", xy=xy[j], xytext=xy[j - 1], arrowprops=dict(arrowstyle="-|>", color=color, lw=1.1, mutation_scale=12)
        )


def clip_to_box(xy: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """The leading part of a path that stays within ``box`` = (xmin, xmax, ymin, ymax)."""
    xmin, xmax, ymin, ymax = box
    inside = (xy[:, 0] >= xmin) & (xy[:, 0] <= xmax) & (xy[:, 1] >= ymin) & (xy[:, 1] <= ymax)
    out = np.flatnonzero(~inside)
    stop = out[out > 0][0] + 1 if np.any(out > 0) else len(xy)
    return xy[:stop]


def key_plane_box(points: np.ndarray, pad: float = 1.0, extend: float = 4.0) -> tuple[float, float, float, float]:
    """Axis limits around tokens and starts, leaving ``extend`` room for the trajectories to leave."""
    lo = points.min(axis=0) - pad
    hi = points.max(axis=0) + pad
    return (lo[0] - 0.5, hi[0] + extend, lo[1] - 0.5, hi[1] + 0.5 * extend)


def finish_key_plane(ax: Axes, box: tuple[float, float, float, float], title: str) -> None:
    ax.set_xlim(box[0], box[1])
    ax.set_ylim(box[2], box[3])
    ax.set_aspect("equal", adjustable="datalim")
    ax.axhline(0, color="0.6", lw=0.4, zorder=0)
    ax.axvline(0, color="0.6", lw=0.4, zorder=0)
    ax.set_xlabel("$p_1$ / $k_1$")
    ax.set_ylabel("$p_2$ / $k_2$")
    ax.set_title(title, fontsize=9)
    outside_legend(ax)


def outside_legend(ax: Axes) -> None:
    """Legend to the right of the axes, so that it never hides tokens or trajectories."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def annotate_source(fig: Figure, text: str) -> None:
    """A small footnote (e.g. a data fallback) written on the figure itself."""
    fig.text(0.01, 0.005, text, fontsize=6, color="0.4", ha="left", va="bottom")
