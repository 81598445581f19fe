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


def _draw_runs(ax: Any, paths: dict[str, np.ndarray], directions: pd.DataFrame, radius: float) -> None:
    """One colour per GD run, labelled with its start and where it went (directions.csv), drawn to ``radius``.

    Runs from nearby starts follow the same path (the authors' starts on the p_2 axis do): earlier runs are drawn
    wider and underneath, so overlapping paths show as nested bands instead of hiding each other.
    """
    went = directions[directions["record"] == "gd_run"].set_index("run")["kind"]
    widths = np.linspace(4.0, 1.2, len(paths)) if len(paths) > 1 else [1.2]
    for i, ((label, xy), lw) in enumerate(zip(paths.items(), widths, strict=True)):
        color = style.RUN_COLORS[i % len(style.RUN_COLORS)]
        legend = f"$p(0)$ = ({style.number(xy[0, 0])}, {style.number(xy[0, 1])}) → {went[label].upper()}"
        xy = style.clip_to_radius(xy, radius)
        style.draw_trajectory(ax, xy, color, label=legend, lw=lw, zorder=2 + i / len(paths))


def _key_plane_panel(
    title: str,
    traj: pd.DataFrame,
    tokens: pd.DataFrame,
    directions: pd.DataFrame,
    kinds: tuple[str, ...] = ("gmm", "lmm"),
    by_input: bool = False,
    factor: float = 2.0,
) -> tuple[Figure, Any, float]:
    """Tokens, GD trajectories with arrows, and max-margin rays in the key plane (Figures 1, 2, 8); the paths are
    drawn to ``factor`` times the largest norm of the tokens and starts (:func:`style.key_plane_view`)."""
    paths = _paths(traj)
    points = np.vstack([tokens[["k1", "k2"]].to_numpy(), [xy[0] for xy in paths.values()], [[0.0, 0.0]]])
    limits, radius = style.key_plane_view(points, list(paths.values()), factor)
    fig, ax = style.key_plane_axes(limits)
    for row in _directions(directions, kinds).itertuples():
        style.draw_ray(ax, style.direction_of(row._asdict()), style.COLORS[row.kind], KIND_LABELS[row.kind])
    _draw_runs(ax, paths, directions, radius)
    style.draw_tokens(ax, tokens, by_input=by_input)
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
    fig, ax, _ = _key_plane_panel(title, traj, tokens, directions, factor=1.6)
    lmm = style.direction_of(_directions(directions, ("lmm",)).iloc[0])[:2]
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

    fig, ax = style.new_axes((6.4, 3.8))
    Cs = sorted(traj["C"].unique())
    cmap, norm = plt.get_cmap("viridis"), LogNorm(min(Cs), max(Cs)) if min(Cs) > 0 and len(Cs) > 1 else None
    styles = {"correlation": "-", "logistic": "--", "exponential": ":"}
    shown = traj[traj["p_norm"] <= plots["fig5_max_norm"]]
    for (loss, C), g in shown.groupby(["loss", "C"], sort=False):
        ax.plot(g["p1"], g["p2"], ls=styles[loss], color=cmap(norm(C) if norm else 0.5), lw=1.1)
    for loss in traj["loss"].unique():
        ax.plot([], [], ls=styles[loss], color="k", label=f"{loss} loss")
    for row in _directions(directions, ("gmm",)).itertuples():
        style.draw_ray(ax, style.direction_of(row._asdict()), "k", "GMM $p^{mm\\star}$", ls="-.", lw=0.8)
    first = tokens[tokens["C"] == Cs[-1]]
    style.draw_tokens(
        ax, first.assign(score=np.where(first["input"] == 0, np.nan, first["score"])), by_input=True, annotate=False
    )
    bar = fig.colorbar(plt.cm.ScalarMappable(cmap=cmap, norm=norm), ax=ax, ticks=Cs)
    bar.ax.set_yticklabels([f"{c:g}" for c in Cs], fontsize=6)
    bar.set_label("score $C$ of the token (1, 1) (log scale)")
    points = np.vstack([shown[["p1", "p2"]].to_numpy(), first[["k1", "k2"]].to_numpy(), [[0.0, 0.0]]])
    lo, hi = points.min(axis=0), points.max(axis=0)
    margin = 0.05 * float((hi - lo).max())
    ax.set_xlim(lo[0] - margin, hi[0] + margin)
    ax.set_ylim(lo[1] - margin, hi[1] + margin)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel("$p_1$")
    ax.set_ylabel("$p_2$")
    ax.set_title(title, fontsize=9)
    fig.legend(loc="outside lower center", ncols=4, title="line style")
    return fig


def key_plane_gd_by_input(
    title: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict
) -> Figure:
    """Figure 8: with n = 2, two starts converge to two different directions, the GMM and an LMM."""
    fig, _, _ = _key_plane_panel(title, traj, tokens, directions, by_input=True)
    return fig
