"""Figure panels of the synthetic experiments, drawn only from the experiment tables.

Paper: Figures 1, 2, 3, 4, 5 and 8. Each function takes the tables written by
:mod:`maxmargin.experiments` (never recomputes GD) and returns a matplotlib Figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Wedge
from matplotlib.ticker import FuncFormatter

from maxmargin.figures import style

KIND_LABELS = {
    "gmm": "GMM $p^{mm\\star}$",
    "lmm": "LMM $p^{mm}$",
    "p_relax": "$p^{relax}$",
    "p_mm": "$p^{mm}$",
    "v_mm": "$v^{mm}$",
}


def _paths(traj: pd.DataFrame, cols: tuple[str, str] = ("p1", "p2")) -> dict[str, np.ndarray]:
    return {label: g[list(cols)].to_numpy() for label, g in traj.groupby("label", sort=False)}


def _directions(directions: pd.DataFrame, kinds: tuple[str, ...]) -> pd.DataFrame:
    d = directions[(directions["record"] == "direction") & directions["kind"].isin(kinds)]
    return d.drop_duplicates(subset=["kind", "direction"])


def _start_label(xy: np.ndarray, polar_around: np.ndarray | None) -> str:
    """p(0) as the legend names it: its coordinates, or, for starts placed by angle around the LMM direction
    ``polar_around`` (Figure 2's cone), its angle to it and its norm."""
    if polar_around is None:
        return f"$p(0)$ = ({style.number(xy[0, 0])}, {style.number(xy[0, 1])})"
    turn = np.arctan2(xy[0, 1], xy[0, 0]) - np.arctan2(polar_around[1], polar_around[0])
    return f"$p(0)$: {round(np.degrees(turn), 1) + 0.0:+g}° off the LMM, norm {style.number(np.hypot(*xy[0, :2]))}"


def angle_to(p: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """The angle in degrees between each row p(t) of ``p`` and ``direction`` (NaN where p(t) = 0)."""
    norms = np.linalg.norm(p, axis=1) * np.linalg.norm(direction)
    with np.errstate(invalid="ignore", divide="ignore"):
        cosine = np.where(norms > 0, p @ direction / norms, np.nan)
    return np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0)))


def _draw_runs(
    ax: Any,
    angle_ax: Any,
    traj: pd.DataFrame,
    directions: pd.DataFrame,
    radius: float,
    polar_around: np.ndarray | None = None,
) -> None:
    """One colour per GD run, labelled with its start and where it went (directions.csv), drawn to ``radius`` in the
    key plane and, on ``angle_ax``, its angle to that direction against the iteration (every iteration of the
    table: each path visibly ends near its direction, however far out it is by then).

    Runs from nearby starts follow the same path (the authors' starts on the p_2 axis do): earlier runs are drawn
    wider and underneath, so overlapping paths show as nested bands instead of hiding each other.
    """
    went = directions[directions["record"] == "gd_run"].set_index("run")["kind"]
    limits = _directions(directions, tuple(set(went))).itertuples()
    limit = {row.kind: style.direction_of(row._asdict()) for row in limits}
    dims = [c for c in ("p1", "p2", "p3") if c in traj and traj[c].notna().all()]
    runs = list(traj.groupby("label", sort=False))
    lowest, largest = np.inf, 0.0
    widths = np.linspace(4.0, 1.2, len(runs)) if len(runs) > 1 else [1.2]
    for i, ((label, run), lw) in enumerate(zip(runs, widths, strict=True)):
        color = style.RUN_COLORS[i % len(style.RUN_COLORS)]
        xy = run[["p1", "p2"]].to_numpy()
        legend = f"{_start_label(xy, polar_around)} → {went[label].upper()}"
        zorder = 2 + i / len(runs)
        style.draw_trajectory(ax, style.clip_to_radius(xy, radius), color, label=legend, lw=lw, zorder=zorder)
        angle = angle_to(run[dims].to_numpy(), limit[went[label]][: len(dims)])
        angle_ax.plot(run["iteration"], angle, color=color, lw=lw, zorder=zorder, solid_capstyle="butt")
        positive = angle[angle > 0]  # a start on its direction (angle 0) has no place on a log axis
        lowest, largest = min(lowest, float(positive.min())), max(largest, float(np.nanmax(angle)))
    angle_ax.set_yscale("log")
    # whole decades, from the one below the smallest angle any path reaches: a path that comes close to its
    # direction and then turns away (claim gd_corr_increases) shows its minimum, not a floor above it
    angle_ax.set_ylim(10 ** np.floor(np.log10(lowest)), min(10 ** np.ceil(np.log10(largest)), 200.0))
    angle_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}°"))
    angle_ax.set_xlim(0, traj["iteration"].max())
    angle_ax.set_xlabel("iteration $t$")
    angle_ax.set_ylabel("angle of $p(t)$ to its limit")
    reached = " / ".join(kind.upper() for kind in ("gmm", "lmm") if kind in set(went))
    angle_ax.set_title(f"Angle to the {reached} reached", fontsize=9)


def _key_plane_panel(
    title: str,
    traj: pd.DataFrame,
    tokens: pd.DataFrame,
    directions: pd.DataFrame,
    kinds: tuple[str, ...] = ("gmm", "lmm"),
    by_input: bool = False,
    factor: float = 2.0,
    polar_around: np.ndarray | None = None,
) -> tuple[Figure, Any, float]:
    """Tokens, GD trajectories with arrows, and max-margin rays in the key plane (Figures 1, 2, 8), and beside them
    the angle of each path to its limit against the iteration; the paths are drawn to ``factor`` times the largest
    norm of the tokens and starts (:func:`style.key_plane_view`). Starts labelled by angle around ``polar_around``
    when given (Figure 2)."""
    paths = _paths(traj)
    points = np.vstack([tokens[["k1", "k2"]].to_numpy(), [xy[0] for xy in paths.values()], [[0.0, 0.0]]])
    limits, radius = style.key_plane_view(points, list(paths.values()), factor)
    fig, ax, angle_ax = style.key_plane_and_angle_axes(limits)
    for row in _directions(directions, kinds).itertuples():
        style.draw_ray(ax, style.direction_of(row._asdict()), style.COLORS[row.kind], KIND_LABELS[row.kind])
    _draw_runs(ax, angle_ax, traj, directions, radius, polar_around)
    style.draw_tokens(ax, tokens, by_input=by_input, locally_optimal=style.locally_optimal_tokens(directions))
    style.finish_key_plane(ax, limits, title)
    return fig, ax, radius


def key_plane_gd(title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 1(a, b): GD on p converges in direction to the GMM (a) or to the GMM or an LMM (b)."""
    fig, _, _ = _key_plane_panel(title, traj, tokens, directions, by_input=False)
    return fig


def key_plane_gd_with_hyperplane(
    title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict
) -> Figure:
    """Figure 1(c): as Figure 1(a), with the hyperplane orthogonal to the GMM that separates optimal tokens."""
    fig, ax, _ = _key_plane_panel(title, traj, tokens, directions, by_input=False)
    gmm = style.direction_of(_directions(directions, ("gmm",)).iloc[0])[:2]
    gmm = gmm / np.linalg.norm(gmm)
    proj = tokens[["k1", "k2"]].to_numpy() @ gmm
    opt = tokens["optimal"].to_numpy()
    offset = 0.5 * (proj[opt].min() + proj[~opt].max())
    normal = np.array([-gmm[1], gmm[0]])
    line = offset * gmm + np.outer(np.linspace(-20, 20, 2), normal)
    ax.plot(line[:, 0], line[:, 1], ls=":", color="0.5", lw=1.2, label="separating hyperplane")
    style.outside_legend(ax)
    return fig


def lmm_cone(title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 2: GD started in the cone C_{mu,R}(p_mm) around an LMM direction converges to it (Theorem 3)."""
    lmm = style.direction_of(_directions(directions, ("lmm",)).iloc[0])[:2]
    fig, ax, _ = _key_plane_panel(title, traj, tokens, directions, factor=1.6, polar_around=lmm)
    half = float(traj["cone_half_angle_deg"].iloc[0])
    base = np.degrees(np.arctan2(lmm[1], lmm[0]))
    radius = float(traj[traj["iteration"] == 0]["p_norm"].min())
    ax.add_patch(
        Wedge(
            (0, 0),
            50,
            base - half,
            base + half,
            color=style.COLORS["lmm"],
            alpha=0.12,
            label=f"cone (half-angle {half:g}°)",
        )
    )
    ax.add_patch(Wedge((0, 0), radius, base - half, base + half, color="white", alpha=0.9))
    style.outside_legend(ax)
    return fig


def joint_gd(title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 3(a, b): joint GD, p (red) -> p_relax and v (blue) -> v_mm; p_mm in gray when it differs."""
    p_paths, v_paths = list(_paths(traj).values()), list(_paths(traj, ("v1", "v2")).values())
    points = np.vstack([tokens[["k1", "k2"]].to_numpy(), [[0.0, 0.0]], [xy[0] for xy in p_paths + v_paths]])
    limits, radius = style.key_plane_view(points, p_paths + v_paths, factor=5.0)
    fig, ax = style.key_plane_axes(limits)
    for kind in ("v_mm", "p_relax", "p_mm"):
        for row in _directions(directions, (kind,)).itertuples():
            ls = ":" if kind == "p_mm" else "--"
            style.draw_ray(ax, style.direction_of(row._asdict()), style.COLORS[kind], KIND_LABELS[kind], ls=ls)
    for i, (xy_p, xy_v) in enumerate(zip(p_paths, v_paths, strict=True)):
        p_label, v_label = ("$p(t)$", "$v(t)$") if i == 0 else (None, None)
        style.draw_trajectory(ax, style.clip_to_radius(xy_p, radius), style.COLORS["p"], label=p_label)
        style.draw_trajectory(ax, style.clip_to_radius(xy_v, radius), style.COLORS["v"], label=v_label)
    for row in tokens[tokens["optimal"]].itertuples():
        ax.scatter(
            row.k1,
            row.k2,
            marker="*",
            s=170,
            color=style.INPUT_COLORS[row.input],
            edgecolor="k",
            lw=0.6,
            zorder=5,
            label=f"(0, 0), ({style.number(row.k1)}, {style.number(row.k2)}), Y = {row.label:+g}",
        )
    ax.scatter(0, 0, marker="o", s=50, color="k", zorder=5)
    style.finish_key_plane(ax, limits, title)
    return fig


def joint_probabilities(
    title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict
) -> Figure:
    """Figure 3(c): averaged softmax probability of the selected tokens and logistic probability in 3(a)."""
    fig, ax = style.new_axes()
    t = (
        traj[traj["iteration"] <= plots["fig3c_iterations"]]
        .groupby("iteration")[["max_softmax", "logistic_prob"]]
        .mean()
    )
    ax.plot(t.index, t["max_softmax"], color=style.COLORS["p"], label="Softmax prob.")
    ax.plot(t.index, t["logistic_prob"], color=style.COLORS["v"], label="Logistic prob.")
    ax.set_xlabel("Iterations")
    ax.set_ylabel("Probabilities")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="lower right")
    return fig


def _curves(title: str, traj: pd.DataFrame, column: str, ylabel: str, plots: dict) -> Figure:
    """One curve per run of Figure 4 over its first ``plots.fig4_iterations`` iterations."""
    fig, ax = style.new_axes()
    shown = traj[traj["iteration"] <= plots["fig4_iterations"]]
    colors = (style.COLORS["p"], style.COLORS["v"])
    for (label, g), color in zip(shown.groupby("label", sort=False), colors, strict=True):
        ax.plot(g["iteration"], g[column], color=color, label=label)
    ax.set_xlabel("Iterations")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(loc="best")
    return fig


def softmax_saturation_curves(
    title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict
) -> Figure:
    """Figure 4(a): normalized GD saturates the softmax faster than constant-step GD."""
    return _curves(title, traj, "max_softmax", "Softmax probability", plots)


def attention_norm_curves(
    title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict
) -> Figure:
    """Figure 4(b): constant-step GD's ||p|| levels off (vanishing gradients)."""
    return _curves(title, traj, "p_norm", "Attention norm ||p||", plots)


def loss_trajectories(
    title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict
) -> Figure:
    """Figure 5: the correlation loss leans to the high-score token, the logistic loss to the low-score one.

    Each trajectory is drawn while ||p|| <= ``fig5_max_norm``, and the axes hold all of them; the colour of a score C
    is on a log scale (C from 1 to 100), its bar ticked at the C that ran.
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    Cs = sorted(traj["C"].unique())
    shown = traj[traj["p_norm"] <= plots["fig5_max_norm"]]
    first = tokens[tokens["C"] == Cs[-1]]
    points = np.vstack([shown[["p1", "p2"]].to_numpy(), first[["k1", "k2"]].to_numpy(), [[0.0, 0.0]]])
    lo, hi = points.min(axis=0), points.max(axis=0)
    margin = 0.05 * float((hi - lo).max())
    limits = (lo[0] - margin, hi[0] + margin, lo[1] - margin, hi[1] + margin)
    fig, ax = style.key_plane_axes(limits)
    fig.set_figwidth(fig.get_figwidth() + 1.0)  # the colour bar's room (the legend's is added by finish_key_plane)
    cmap, norm = plt.get_cmap("viridis"), LogNorm(min(Cs), max(Cs)) if min(Cs) > 0 and len(Cs) > 1 else None
    styles = {"correlation": "-", "logistic": "--", "exponential": ":"}
    for (loss, C), g in shown.groupby(["loss", "C"], sort=False):
        ax.plot(g["p1"], g["p2"], ls=styles[loss], color=cmap(norm(C) if norm else 0.5), lw=1.1)
    for loss in traj["loss"].unique():
        ax.plot([], [], ls=styles[loss], color="k", label=f"{loss} loss")
    for row in _directions(directions, ("gmm",)).itertuples():
        style.draw_ray(ax, style.direction_of(row._asdict()), "k", "GMM $p^{mm\\star}$", ls="-.", lw=0.8)
    style.draw_tokens(
        ax, first.assign(score=np.where(first["input"] == 0, np.nan, first["score"])), by_input=True, annotate=False
    )
    bar = fig.colorbar(plt.cm.ScalarMappable(cmap=cmap, norm=norm), ax=ax, ticks=Cs, shrink=0.9)
    # every C that ran is ticked; on a log scale 1, 2, 5, 10, ... are labelled, so that the labels never overlap
    bar.ax.set_yticklabels([f"{c:g}" if f"{c / 10 ** np.floor(np.log10(c)):g}" in ("1", "2", "5") else "" for c in Cs])
    bar.ax.minorticks_off()
    bar.set_label("score $C$ of the token (1, 1)")
    style.finish_key_plane(ax, limits, title)
    ax.set_xlabel("$p_1$")
    ax.set_ylabel("$p_2$")
    return fig


def key_plane_gd_by_input(
    title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict
) -> Figure:
    """Figure 8: with n = 2, two starts converge to two different directions, the GMM and an LMM."""
    fig, _, _ = _key_plane_panel(title, traj, tokens, directions, by_input=True)
    return fig
