"""Figure panels of the synthetic experiments, drawn only from the experiment tables.

Paper: Figures 1, 2, 3, 4, 5 and 8. Each function takes the tables written by
:mod:`maxmargin.experiments` (never recomputes GD) and returns a matplotlib Figure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Wedge

from maxmargin.figures import style as P

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


def _key_plane_panel(
    title: str,
    traj: pd.DataFrame,
    tokens: pd.DataFrame,
    directions: pd.DataFrame,
    kinds: tuple[str, ...] = ("gmm", "lmm"),
    by_input: bool = False,
) -> tuple[Figure, Any, tuple]:
    """Tokens, GD trajectories with arrows, and max-margin rays in the key plane (Figures 1, 2, 8)."""
    fig, ax = P.new_axes(P.KEY_PLANE_FIGSIZE)
    starts = traj[traj["iteration"] == 0][["p1", "p2"]].to_numpy()
    box = P.key_plane_box(np.vstack([tokens[["k1", "k2"]].to_numpy(), starts, [[0.0, 0.0]]]))
    for row in _directions(directions, kinds).itertuples():
        P.draw_ray(ax, P.direction_of(row._asdict()), P.COLORS[row.kind], KIND_LABELS[row.kind])
    for i, xy in enumerate(_paths(traj).values()):
        P.draw_trajectory(
            ax, P.clip_to_box(xy, box), P.COLORS["trajectory"], label="GD trajectories" if i == 0 else None
        )
    P.draw_tokens(ax, tokens, by_input=by_input)
    P.finish_key_plane(ax, box, title)
    return fig, ax, box


def fig1(panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 1(a-c): GD on p converges in direction to the GMM (a, c) or to the GMM or an LMM (b)."""
    titles = {
        "fig1a": "(a) Global convergence",
        "fig1b": "(b) Global and local optimal directions",
        "fig1c": "(c) Multiple inputs",
    }
    fig, ax, box = _key_plane_panel(titles[panel], traj, tokens, directions, by_input=False)
    if panel == "fig1c":
        gmm = P.direction_of(_directions(directions, ("gmm",)).iloc[0])[:2]
        gmm = gmm / np.linalg.norm(gmm)
        proj = tokens[["k1", "k2"]].to_numpy() @ gmm
        opt = tokens["optimal"].to_numpy()
        offset = 0.5 * (proj[opt].min() + proj[~opt].max())
        normal = np.array([-gmm[1], gmm[0]])
        line = offset * gmm + np.outer(np.linspace(-20, 20, 2), normal)
        ax.plot(line[:, 0], line[:, 1], ls=":", color="0.5", lw=1.2, label="separating hyperplane")
        P.outside_legend(ax)
    return fig


def fig2(panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 2: GD started in the cone C_{mu,R}(p_mm) around an LMM direction converges to it (Theorem 3)."""
    fig, ax, _ = _key_plane_panel("GD started inside the cone of an LMM", traj, tokens, directions)
    lmm = P.direction_of(_directions(directions, ("lmm",)).iloc[0])[:2]
    half = float(traj["cone_half_angle_deg"].iloc[0])
    base = np.degrees(np.arctan2(lmm[1], lmm[0]))
    radius = float(traj[traj["iteration"] == 0]["p_norm"].min())
    ax.add_patch(
        Wedge(
            (0, 0),
            50,
            base - half,
            base + half,
            color=P.COLORS["lmm"],
            alpha=0.12,
            label=f"cone (half-angle {half:g}°)",
        )
    )
    ax.add_patch(Wedge((0, 0), radius, base - half, base + half, color="white", alpha=0.9))
    P.outside_legend(ax)
    return fig


def fig3(panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 3(a, b): joint GD, p (red) -> p_relax and v (blue) -> v_mm; p_mm in gray when it differs."""
    titles = {"fig3a": "(a) All inputs are support vectors", "fig3b": "(b) (0.5,1.5) is not a support vector"}
    fig, ax = P.new_axes(P.KEY_PLANE_FIGSIZE)
    box = (-2.0, 14.0, -3.0, 8.0)
    for kind in ("v_mm", "p_relax", "p_mm"):
        for row in _directions(directions, (kind,)).itertuples():
            ls = ":" if kind == "p_mm" else "--"
            P.draw_ray(ax, P.direction_of(row._asdict()), P.COLORS[kind], KIND_LABELS[kind], ls=ls)
    for i, (xy_p, xy_v) in enumerate(zip(_paths(traj).values(), _paths(traj, ("v1", "v2")).values(), strict=True)):
        P.draw_trajectory(ax, P.clip_to_box(xy_p, box), P.COLORS["p"], label="$p(t)$" if i == 0 else None)
        P.draw_trajectory(ax, P.clip_to_box(xy_v, box), P.COLORS["v"], label="$v(t)$" if i == 0 else None)
    shown = tokens.assign(k1=tokens["k1"], k2=tokens["k2"])
    for row in shown[shown["optimal"]].itertuples():
        ax.scatter(
            row.k1,
            row.k2,
            marker="*",
            s=170,
            color=P.INPUT_COLORS[row.input],
            edgecolor="k",
            lw=0.6,
            zorder=5,
            label=f"(0,0), ({row.k1:g},{row.k2:g}), Y={row.label:+g}",
        )
    ax.scatter(0, 0, marker="o", s=50, color="k", zorder=5)
    P.finish_key_plane(ax, box, titles[panel])
    return fig


def fig3c(panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 3(c): averaged softmax probability of the selected tokens and logistic probability in 3(a)."""
    fig, ax = P.new_axes()
    t = (
        traj[traj["iteration"] <= plots["fig3c_iterations"]]
        .groupby("iteration")[["max_softmax", "logistic_prob"]]
        .mean()
    )
    ax.plot(t.index, t["max_softmax"], color=P.COLORS["p"], label="Softmax prob.")
    ax.plot(t.index, t["logistic_prob"], color=P.COLORS["v"], label="Logistic prob.")
    ax.set_xlabel("Iterations")
    ax.set_ylabel("Probabilities")
    ax.set_title("(c) Probability evolutions in (a)", fontsize=9)
    ax.legend(loc="lower right")
    return fig


def fig4(panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 4: normalized GD saturates the softmax faster; constant-step GD's ||p|| levels off."""
    column, ylabel, title = {
        "fig4a": ("max_softmax", "Softmax probability", "(a) Evolution of softmax probability"),
        "fig4b": ("p_norm", "Attention norm ||p||", "(b) Evolution of attention weights"),
    }[panel]
    fig, ax = P.new_axes()
    shown = traj[traj["iteration"] <= plots["fig4_iterations"]]
    for (label, g), color in zip(shown.groupby("label", sort=False), (P.COLORS["p"], P.COLORS["v"]), strict=True):
        ax.plot(g["iteration"], g[column], color=color, label=label)
    ax.set_xlabel("Iterations")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(loc="best")
    return fig


def fig5(panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 5: the correlation loss leans to the high-score token, the logistic loss to the low-score one."""
    import matplotlib.pyplot as plt

    fig, ax = P.new_axes((6.4, 3.8))
    Cs = sorted(traj["C"].unique())
    cmap = plt.get_cmap("viridis")
    styles = {"correlation": "-", "logistic": "--", "exponential": ":"}
    shown = traj[traj["p_norm"] <= plots["fig5_max_norm"]]
    for (loss, C), g in shown.groupby(["loss", "C"], sort=False):
        color = cmap(Cs.index(C) / max(len(Cs) - 1, 1))
        ax.plot(g["p1"], g["p2"], ls=styles[loss], color=color, lw=1.1)
    for loss in traj["loss"].unique():
        ax.plot([], [], ls=styles[loss], color="k", label=f"{loss} loss")
    for row in _directions(directions, ("gmm",)).itertuples():
        P.draw_ray(ax, P.direction_of(row._asdict()), "k", "GMM $p^{mm\\star}$", ls="-.", lw=0.8)
    first = tokens[tokens["C"] == Cs[-1]]
    P.draw_tokens(
        ax, first.assign(score=np.where(first["input"] == 0, np.nan, first["score"])), by_input=True, annotate=False
    )
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, len(Cs) - 1))
    bar = fig.colorbar(sm, ax=ax, ticks=range(len(Cs)))
    bar.ax.set_yticklabels([f"C={c:g}" for c in Cs])
    ax.set_xlim(-1, plots["fig5_max_norm"])
    ax.set_ylim(-plots["fig5_max_norm"] / 2, plots["fig5_max_norm"] / 2)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("$p_1$")
    ax.set_ylabel("$p_2$")
    ax.set_title("Optimal tokens (1,1) with γ=C and (1,-1) with γ=1", fontsize=9)
    ax.legend(loc="upper left", title="line style")
    return fig


def fig8(panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict) -> Figure:
    """Figure 8: with n = 2, two starts converge to two different directions, the GMM and an LMM."""
    fig, _, _ = _key_plane_panel(
        "GD reaches the GMM or an LMM (n = T = d = 2)", traj, tokens, directions, by_input=True
    )
    return fig


PANELS: dict[str, Callable[..., Figure]] = {
    "fig1a": fig1,
    "fig1b": fig1,
    "fig1c": fig1,
    "fig2": fig2,
    "fig3a": fig3,
    "fig3b": fig3,
    "fig3c": fig3c,
    "fig4a": fig4,
    "fig4b": fig4,
    "fig5": fig5,
    "fig8": fig8,
}


def draw_synthetic_panel(
    panel: str, traj: pd.DataFrame, tokens: pd.DataFrame, directions: pd.DataFrame, plots: dict
) -> Figure:
    """Draw one panel of Figures 1-5 or 8 in the shared style."""
    if panel not in PANELS:
        raise ValueError(f"unknown panel {panel!r}; allowed: {', '.join(PANELS)}")
    with P.paper_style():
        return PANELS[panel](panel, traj, tokens, directions, plots)
