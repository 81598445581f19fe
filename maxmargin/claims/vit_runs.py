"""Sentences about a committed ViT run, written from its own tables (docs/vit.md's generated passages).

Each function reads a run's metrics table (``vit_metrics``), its W-ATT-SVM table (``vit_w_svm``) or its claims and
returns one Markdown bullet; every number and every judgement in it ("slows", "memorises", "above both nulls") is
computed from those tables, so that a rerun with other numbers rewrites the words too. The window of "the last
epochs" is claim ``vit_w_direction``'s (``vit.guard.direction_from``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from maxmargin.registry.vit import JUDGED_IMAGES


def window(m: pd.DataFrame, guard: Mapping[str, Any]) -> pd.DataFrame:
    """The metrics rows from ``vit.guard.direction_from`` of the run on (claim vit_w_direction's window)."""
    start = m.loc[m["epoch"] <= guard["direction_from"] * m["epoch"].max(), "epoch"].max()
    return m[m["epoch"] >= start]


def turns(m: pd.DataFrame) -> pd.Series:
    """The angle (degrees) W turned between consecutive metrics rows, indexed by the later row's epoch."""
    angles = np.degrees(np.arccos(np.clip(m["w_cosine_previous"].to_numpy(dtype=float), -1, 1)))
    return pd.Series(angles, index=m["epoch"].to_numpy()).dropna()


def loss_line(m: pd.DataFrame, guard: Mapping[str, Any], n_train: int) -> str:
    """The training loss from the first row to the last, its lowest, its mean over the window, the training and
    test accuracies; "memorises" where the test accuracy falls from its peak while the training accuracy is above
    it."""
    first, last, w = m.iloc[0], m.iloc[-1], window(m, guard)
    low, best = m.loc[m["train_loss"].idxmin()], m.loc[m["test_acc"].idxmax()]
    memorises = last.test_acc < best.test_acc and w.train_acc.min() > best.test_acc
    return (
        f"- **Training loss.** {first.train_loss:.2f} at epoch 0, {last.train_loss:.3f} at epoch {last.epoch:.0f} "
        f"(lowest {low.train_loss:.3f}, epoch {low.epoch:.0f}); over epochs {w.epoch.min():.0f}-{last.epoch:.0f} "
        f"its mean is {w.train_loss.mean():.3f} and the training accuracy {w.train_acc.min():.3f}-"
        f"{w.train_acc.max():.3f}. The test accuracy peaks at {best.test_acc:.3f} (epoch {best.epoch:.0f}) and ends "
        f"at {last.test_acc:.3f}" + (f": the model memorises its {n_train:,} training images." if memorises else ".")
    )


def saturation_line(m: pd.DataFrame) -> str:
    """The attention's saturation (``cls_max_attention``) from the first row to the last, where measured."""
    if "cls_max_attention" not in m or m["cls_max_attention"].isna().all():
        return "- **Saturation.** Not measured by the code this run was made with."
    s = m["cls_max_attention"]
    return (
        f"- **Saturation** (each head's largest [CLS] softmax probability, mean): {s.iloc[0]:.3f} at epoch 0, "
        f"{s.max():.3f} at its highest (epoch {m.loc[s.idxmax(), 'epoch']:.0f}), {s.iloc[-1]:.3f} at the end; the "
        "theory's limit is 1."
    )


def sparsity_line(m: pd.DataFrame, guard: Mapping[str, Any], sparsity_holds: bool) -> str:
    """Soft-sparsity and ||W||_F from the first row to the last, and the growth of ||W||_F over the window."""
    first, last, w = m.iloc[0], m.iloc[-1], window(m, guard)
    return (
        f"- **Soft-sparsity and ||W||_F.** Soft-sparsity {first.soft_sparsity:.3f} -> {last.soft_sparsity:.3f} while "
        f"||W||_F grows {first.w_frobenius:.3g} -> {last.w_frobenius:.3g} (x{last.w_frobenius / first.w_frobenius:.1f}"
        f"; x{w.w_frobenius.iloc[-1] / w.w_frobenius.iloc[0]:.2f} over epochs {w.epoch.min():.0f}-{last.epoch:.0f})"
        + (": the paper's Figure 7." if sparsity_holds else ".")
    )


def direction_line(m: pd.DataFrame, guard: Mapping[str, Any]) -> str:
    """How much W turns between rows: its largest turn, its last, whether the turning slows, and W's cosine with
    its final direction a row before the end."""
    t = turns(m)
    steepest, limit = t.idxmax(), guard["max_direction_angle"]
    before = m.loc[m["epoch"] < steepest, "epoch"].max()
    slows = "the turning slows" if t.iloc[-1] < t.loc[steepest] else "the turning does not slow"
    stopped = (
        f" but has not stopped (its last row alone turns more than vit.guard.max_direction_angle = {limit:g} degrees, "
        "the claim's bound over the whole window)"
        if t.iloc[-1] > limit
        else ""
    )
    return (
        f"- **W's direction.** W turns {t.loc[steepest]:.1f} degrees between the rows of epochs {before:.0f} and "
        f"{steepest:.0f} (the most), {t.iloc[-1]:.1f} over the last row ({m.epoch.iloc[-2]:.0f}-{m.epoch.iloc[-1]:.0f})"
        f": {slows}{stopped}; W's cosine with its final direction is {m.w_cosine_final.iloc[-2]:.3f} one row before "
        "the end."
    )


def _sets(w: pd.DataFrame) -> pd.Series:
    return w["images"].fillna("test") if "images" in w else pd.Series("test", index=w.index)


def heads_line(w: pd.DataFrame) -> str:
    """The heads against their W-ATT-SVM at the last snapshot, on the judged image set, against the nulls and the
    ceiling; where the probe had both sets, the other's head mean beside it; where it measured three epochs or more,
    the epoch of the highest head mean."""
    sets = _sets(w)
    judged = next(name for name in JUDGED_IMAGES if name in set(sets))
    rows = w[sets == judged]
    heads = rows[rows["epoch"] == rows["epoch"].max()]
    means = rows.groupby("epoch")["cosine"].mean()
    epochs = sorted(int(e) for e in rows["epoch"].unique())
    others = [
        f"; on the {name} images {w[(sets == name) & (w['epoch'] == heads.epoch.iloc[0])].cosine.mean():.3f}"
        for name in sorted(set(sets) - {judged})
    ]
    peak = (
        f"; the head mean is highest at epoch {means.idxmax():.0f} ({means.max():.3f})"
        if len(epochs) >= 3
        else "; no trend to read from two epochs"
    )
    return (
        f"- **The heads against their W-ATT-SVM** (measured at epochs {', '.join(map(str, epochs))}, on "
        f"{int(heads.n_images.iloc[0])} {judged} images): at epoch {heads.epoch.iloc[0]:.0f} the {len(heads)} heads' "
        f"cos(Wt_h, W_mm,h) is {heads.cosine.mean():.3f} (from {heads.cosine.min():.3f} to {heads.cosine.max():.3f}), "
        f"against {heads.null_rank.mean():.3f} for a random rank-d_head matrix and {heads.null_shuffled.mean():.3f} "
        f"for a shuffled selection, under a rank ceiling of {heads.ceiling.mean():.3f}: "
        f"{heads.cosine.mean() / heads.ceiling.mean():.0%} of the ceiling{''.join(others)}{peak}."
    )


def claim_lines(claims: pd.DataFrame, ids: list[str] | None = None) -> list[str]:
    """One bullet per claim: its verdict and measurement, and where it does not hold, its reason."""
    rows = claims.set_index("claim_id")
    rows = rows.loc[ids] if ids is not None else rows
    return [
        f"- `{c}` (**{r.verdict}**): {r.measured}"
        + (f". Why: {str(r.note).removeprefix(r.verdict + ': ')}" if r.verdict in ("differs", "inconclusive") else "")
        for c, r in rows.iterrows()
    ]


def run_lines(
    m: pd.DataFrame, w: pd.DataFrame, claims: pd.DataFrame, guard: Mapping[str, Any], n_train: int
) -> list[str]:
    """A run in bullets: loss, saturation, sparsity and ||W||_F, W's direction, the heads (where probed)."""
    holds = claims.set_index("claim_id").loc["vit_sparsity", "verdict"] == "holds"
    m = m.sort_values("epoch").reset_index(drop=True)
    lines = [loss_line(m, guard, n_train), saturation_line(m), sparsity_line(m, guard, holds), direction_line(m, guard)]
    return lines + ([heads_line(w)] if not w.empty else [])
