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


# The PNG text key that records a figure's smallest text, in points (maxmargin.pipeline.save_figure): the gallery's
# thumbnails keep every text at 7 px or more at registry.GALLERY_SCALE (tests/test_figure_images.py).
SMALLEST_TEXT_KEY = "Smallest text (pt)"


def smallest_text(fig: Figure) -> float:
    """The size in points of the smallest visible, non-empty text of a drawn figure: titles, labels, tick labels,
    legends, notes (``inf`` for a figure without text)."""
    from matplotlib.text import Text

    texts = fig.findobj(lambda a: isinstance(a, Text) and a.get_visible() and bool(a.get_text().strip()))
    return min((float(t.get_fontsize()) for t in texts), default=float("inf"))


# A figure of several panels side by side (the regularization paths, the basins) is wider than the others, so its
# gallery thumbnail (registry.GALLERY_SCALE, then the README's width) shrinks it more: its text is larger, and such a
# figure keeps to at most WIDE_WIDTH inches.
WIDE_STYLE = {
    "font.size": 11,
    "axes.titlesize": 11,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 9.5,
}
WIDE_WIDTH = 10.5


@contextlib.contextmanager
def paper_style(wide: bool = False) -> Iterator[None]:
    """Apply the shared style for the duration of one figure (``wide``: with the larger text of :data:`WIDE_STYLE`)."""
    with plt.rc_context(STYLE | (WIDE_STYLE if wide else {})):
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


def number(x: float) -> str:
    """A coordinate or a score as a legend shows it: two decimals at most (7.99, -0.42, 0.79, 1), and 0 for what is
    0 up to rounding (not 1.2e-16 or -0)."""
    return f"{round(float(x), 2) + 0.0:g}"


def locally_optimal_tokens(directions: pd.DataFrame) -> set[tuple[int, int]]:
    """(input, token) of every token an LMM direction selects (Definition 2: locally-optimal tokens), from the
    directions table's ``tokens`` column (the selected token of each input)."""
    lmm = directions[(directions["record"] == "direction") & (directions["kind"] == "lmm")]
    return {(i, int(t)) for selected in lmm["tokens"] for i, t in enumerate(json.loads(selected))}


# Non-optimal tokens, one marker per score (Definition 1): two scores never share a legend entry's look.
NON_OPTIMAL_MARKERS = ["o", "s", "^", "D", "v", "P"]


def draw_tokens(
    ax: Axes,
    tokens: pd.DataFrame,
    *,
    by_input: bool = True,
    annotate: bool = True,
    locally_optimal: set[tuple[int, int]] = frozenset(),
) -> None:
    """Tokens in the key plane: stars for optimal tokens, and for the others one marker per score (Definition 1);
    coloured by input (``by_input``), else green (optimal) and black. A token that is not optimal but that an LMM
    selects (``locally_optimal``: (input, token) pairs) is labelled locally-optimal (Definition 2)."""
    scores = sorted({round(float(s), 9) for s in tokens.loc[~tokens["optimal"], "score"].dropna()}, reverse=True)
    seen = set()
    for row in tokens.itertuples():
        color = INPUT_COLORS[row.input % len(INPUT_COLORS)] if by_input else ("#2ca02c" if row.optimal else "k")
        score = None if pd.isna(row.score) else round(float(row.score), 9)
        marker = "*" if row.optimal else NON_OPTIMAL_MARKERS[scores.index(score) % 6] if score in scores else "o"
        label = None
        if annotate:
            local = (row.input, row.token) in locally_optimal
            kind = "optimal" if row.optimal else "locally-optimal" if local else "non-optimal"
            label = f"{kind} token, γ = {number(row.score)}"
            if by_input:
                label = f"({number(row.k1)}, {number(row.k2)}): {label}"
            label = None if label in seen else label
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


def clip_to_radius(xy: np.ndarray, radius: float) -> np.ndarray:
    """The leading part of a path that stays within ``radius`` of the origin (one point beyond it, so that the path
    reaches the view's edge)."""
    out = np.flatnonzero(np.linalg.norm(xy, axis=1) > radius)
    first = out[out > 0]
    return xy[: first[0] + 1] if first.size else xy


def key_plane_view(
    points: np.ndarray, paths: list[np.ndarray], factor: float = 2.0, pad: float = 0.06
) -> tuple[tuple[float, float, float, float], float]:
    """The limits (xmin, xmax, ymin, ymax) of a key-plane panel, and the radius its paths are drawn to.

    The radius is ``factor`` times the largest norm of ``points`` (tokens, starts, the origin); the limits hold the
    points and every path up to that radius, padded: the data fill the axes, and no path runs off them.
    """
    radius = factor * float(np.linalg.norm(points, axis=1).max())
    drawn = np.vstack([points, *(clip_to_radius(xy, radius) for xy in paths)])
    lo, hi = drawn.min(axis=0), drawn.max(axis=0)
    margin = pad * float((hi - lo).max())
    return (lo[0] - margin, hi[0] + margin, lo[1] - margin, hi[1] + margin), radius


def key_plane_axes(limits: tuple[float, float, float, float], height: float = 3.1) -> tuple[Figure, Axes]:
    """A figure whose axes have the shape of ``limits`` at equal aspect (angles true, nothing left empty); the
    legend's room beside them is added once its labels are known (:func:`finish_key_plane`). A wide view (Figure 2's
    cone) gets a wide, short figure."""
    dx, dy = limits[1] - limits[0], limits[3] - limits[2]
    width = min(max(height * dx / dy, 2.4), 6.2)
    fig, ax = plt.subplots(figsize=(width + 0.8, max(width * dy / dx + 0.9, 2.9)), layout="constrained")
    return fig, ax


ANGLE_PANEL = (2.6, 1.7)  # inches: the angle panel's width beside a key plane, its height under a wide one


def key_plane_and_angle_axes(
    limits: tuple[float, float, float, float], height: float = 3.1
) -> tuple[Figure, Axes, Axes]:
    """As :func:`key_plane_axes`, with a second axes for the angle of each GD path to its limit direction against the
    iteration: beside the key plane, or under it when the view is wide (Figure 2's cone), so that the legend beside
    them is never taller than the panels."""
    dx, dy = limits[1] - limits[0], limits[3] - limits[2]
    width = min(max(height * dx / dy, 2.4), 6.2)
    plane = width * dy / dx
    if dx > 2.5 * dy:
        fig, (ax, angle) = plt.subplots(
            2, 1, figsize=(width + 0.8, plane + ANGLE_PANEL[1] + 1.4), height_ratios=[plane, ANGLE_PANEL[1]],
            layout="constrained",
        )  # fmt: skip
    else:
        fig, (ax, angle) = plt.subplots(
            1, 2, figsize=(width + ANGLE_PANEL[0] + 1.4, max(plane + 0.9, 2.9)), width_ratios=[width, ANGLE_PANEL[0]],
            layout="constrained",
        )  # fmt: skip
    return fig, ax, angle


def _legend_width(labels: list[str], fontsize: float = 7.0) -> float:
    """Inches a legend of these labels takes beside the axes (marker, padding, ~0.55 em per character)."""
    longest = max((len(label.replace("$", "")) for label in labels), default=0)
    return 0.55 + longest * 0.55 * fontsize / 72.0


def finish_key_plane(ax: Axes, limits: tuple[float, float, float, float], title: str) -> None:
    """Limits, equal aspect (the axes box takes the data's shape: angles are true and nothing is left empty),
    axes lines, labels, title and the legend outside."""
    ax.set_xlim(limits[0], limits[1])
    ax.set_ylim(limits[2], limits[3])
    ax.set_aspect("equal", adjustable="box")
    ax.axhline(0, color="0.6", lw=0.4, zorder=0)
    ax.axvline(0, color="0.6", lw=0.4, zorder=0)
    ax.set_xlabel("$p_1$ / $k_1$")
    ax.set_ylabel("$p_2$ / $k_2$")
    ax.set_title(title, fontsize=9)
    fig = ax.figure
    fig.set_figwidth(fig.get_figwidth() + _legend_width(ax.get_legend_handles_labels()[1]))
    outside_legend(ax)


def outside_legend(ax: Axes) -> None:
    """The figure's legend to the right of its axes (the layout makes room for it: nothing is cut), so that it never
    hides tokens or trajectories. A second call (an entry added later) replaces the first."""
    fig = ax.figure
    for old in list(fig.legends):
        old.remove()
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper")
