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

from maxmargin.claims.base import small, t_interval
from maxmargin.core.vit_learning import w_direction
from maxmargin.experiments.vit.w_svm_probe import chosen_image_count
from maxmargin.registry.vit_w_svm import JUDGED_IMAGES


def window(m: pd.DataFrame, guard: Mapping[str, Any]) -> pd.DataFrame:
    """The metrics rows of claim vit_w_direction's window (:func:`maxmargin.core.vit_learning.w_direction`: from
    ``vit.guard.direction_from`` of the run on)."""
    start = w_direction(m["epoch"].to_numpy(), m["w_cosine_final"].to_numpy(), guard).from_epoch
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
        f"- **Training loss.** {first.train_loss:.2f} at epoch 0, {small(last.train_loss)} at epoch {last.epoch:.0f} "
        f"(lowest {small(low.train_loss)}, epoch {low.epoch:.0f}); over epochs {w.epoch.min():.0f}-{last.epoch:.0f} "
        f"its mean is {small(w.train_loss.mean())} and the training accuracy {w.train_acc.min():.3f}-"
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
        f"{steepest:.0f} (the most), {small(t.iloc[-1], 1)} over the last row "
        f"({m.epoch.iloc[-2]:.0f}-{m.epoch.iloc[-1]:.0f}): {slows}{stopped}; W's cosine with its final direction "
        f"is {m.w_cosine_final.iloc[-2]:.3f} one row before the end."
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


def set_gap_line(w: pd.DataFrame, confidence: float) -> str:
    """The heads' cosine on the training images against the held-out ones at every measured epoch: the
    head-mean difference and its t-interval over heads at the last epoch (where the probe had both sets)."""
    from maxmargin.claims.base import t_interval

    sets = _sets(w)
    if set(sets) != {"train", "test"}:
        return ""
    wide = w.assign(images=sets).pivot_table(index=["epoch", "head"], columns="images", values="cosine")
    gap = (wide["train"] - wide["test"]).groupby(level="epoch")
    last = gap.get_group(max(gap.groups))
    low, high = t_interval(last.to_numpy(), confidence)
    same = "the two agree" if low <= 0 <= high else "they differ"
    means = wide.groupby(level="epoch").mean()
    epochs = ", ".join(f"{e}: {r.train:.3f} / {r.test:.3f}" for e, r in means.iterrows())
    return (
        f"- **Training images against held-out ones** (head means, train / test, by epoch: {epochs}): at the last "
        f"epoch the difference is {last.mean():+.3f} [{low:+.3f}, {high:+.3f}] ({confidence:.0%} t-interval over "
        f"{len(last)} heads): {same}."
    )


def curve_line(curve: pd.DataFrame, tol: float, chosen: int, confidence: float) -> str:
    """The cosine against the number of images at the last snapshot, per set; where it levels off on the judged set
    (:func:`chosen_image_count` without a cap), or its last step with the t-interval of the heads' own steps; the
    number the probe read from it (``chosen``: fewer than where it levels off only under the cap
    vit.w_svm.images)."""
    means = curve.groupby(["images", "n_images"])["cosine"].mean()
    sets = sorted(set(curve["images"]), key=lambda s: JUDGED_IMAGES.index(s))
    parts = [f"{name}: " + ", ".join(f"{n} -> {c:.3f}" for (_, n), c in means.loc[[name]].items()) for name in sets]
    largest = int(curve["n_images"].max())
    levelled = chosen_image_count(curve, sets[0], tol, largest)
    counts = means.loc[sets[0]]
    if levelled < largest:
        said = f"on the {sets[0]} images it levels off (moves by less than vit.w_svm.curve_tol = {tol:g})"
        said += f" from {levelled} on"
    else:
        heads = curve[curve["images"] == sets[0]].pivot(index="head", columns="n_images", values="cosine")
        steps = (heads[largest] - heads[counts.index[-2]]).to_numpy()
        low, high = t_interval(steps, confidence)
        said = (
            f"on the {sets[0]} images it has not levelled off by {largest} (still {steps.mean():+.3f} "
            f"[{low:+.3f}, {high:+.3f}] from {counts.index[-2]} to {largest}, {confidence:.0%} t-interval over "
            f"{len(steps)} heads; vit.w_svm.curve_tol = {tol:g})"
        )
    took = f"the probe's solves use {chosen} images"
    if chosen < levelled:
        took += (
            f", the run's cap vit.w_svm.images, fewer than the curve asks for: its cosines are those at {chosen} "
            f"images ({counts.loc[chosen]:.3f} on the {sets[0]} images here, {counts.iloc[-1]:.3f} at {largest})"
        )
    heading = f"- **The number of images** (head-mean cosine at the last snapshot by count; {'; '.join(parts)})"
    return f"{heading}: {said}; {took}."


def arm_row(name: str, m: pd.DataFrame, w: pd.DataFrame, claims: pd.DataFrame, guard: Mapping[str, Any]) -> list:
    """One run in a row of the arms' table: the window's mean loss and claim vit_regime, the saturation and
    soft-sparsity at the end, ||W||_F, W's last turn and claim vit_w_direction, the heads' cosine on the judged set
    at the last snapshot against the null and the ceiling, and claim vit_w_svm_direction."""
    m = m.sort_values("epoch")
    verdict = claims.set_index("claim_id")["verdict"]
    saturation = m["cls_max_attention"].iloc[-1] if "cls_max_attention" in m else float("nan")
    heads = "-"
    if not w.empty:
        sets = _sets(w)
        judged = next(s for s in JUDGED_IMAGES if s in set(sets))
        last = w[(sets == judged) & (w["epoch"] == w["epoch"].max())]
        heads = f"{last.cosine.mean():.3f} / {last.null_rank.mean():.3f} / {last.ceiling.mean():.3f} ({judged})"
    return [
        name,
        small(window(m, guard).train_loss.mean()),
        verdict.get("vit_regime", "-"),
        "-" if np.isnan(saturation) else f"{saturation:.3f}",
        f"{m.soft_sparsity.iloc[-1]:.3f}",
        f"{m.w_frobenius.iloc[0]:.3g} -> {m.w_frobenius.iloc[-1]:.3g}",
        small(turns(m).iloc[-1], 1),
        verdict.get("vit_w_direction", "-"),
        heads,
        verdict.get("vit_w_svm_direction", "-"),
    ]


ARM_HEADER = [
    "run",
    "train loss (window mean)",
    "vit_regime",
    "saturation (end)",
    "soft-sparsity (end)",
    "\\|\\|W\\|\\|_F",
    "W's last turn (deg)",
    "vit_w_direction",
    "heads: cos / null / ceiling (last snapshot)",
    "vit_w_svm_direction",
]


def contrast_line(a: str, ma: pd.DataFrame, b: str, mb: pd.DataFrame, guard: Mapping[str, Any]) -> str:
    """Two runs of the same model and images under two optimisers, side by side at their ends: the loss over the
    window, ||W||_F's growth, the saturation and soft-sparsity, and how far W turns over its last row."""

    def end(m: pd.DataFrame) -> dict[str, float]:
        m = m.sort_values("epoch")
        sat = m["cls_max_attention"].iloc[-1] if "cls_max_attention" in m else float("nan")
        growth = m.w_frobenius.iloc[-1] / m.w_frobenius.iloc[0]
        return {"loss": window(m, guard).train_loss.mean(), "growth": growth, "sat": sat,
                "sparsity": m.soft_sparsity.iloc[-1], "turn": turns(m).iloc[-1]}  # fmt: skip

    x, y = end(ma), end(mb)
    lower = a if x["loss"] < y["loss"] else b
    sat = {k: "not measured" if np.isnan(v["sat"]) else f"{v['sat']:.3f}" for k, v in (("a", x), ("b", y))}
    return (
        f"- **{a} against {b}** (the same model and images): the window's mean training loss {small(x['loss'])} "
        f"against {small(y['loss'])} (lower under {lower}); ||W||_F grows x{x['growth']:.1f} against "
        f"x{y['growth']:.1f}; the saturation ends at {sat['a']} against {sat['b']} and soft-sparsity at "
        f"{x['sparsity']:.3f} against {y['sparsity']:.3f}; W turns {small(x['turn'], 1)} against "
        f"{small(y['turn'], 1)} degrees over its last row."
    )


GROWING = 1.05  # ||W||_F "keeps growing" over the window where it ends more than 5 % above where the window starts


def _answers(m: pd.DataFrame, w: pd.DataFrame, claims: pd.DataFrame, guard: Mapping[str, Any]) -> list[str]:
    """One run's answers to the questions of the answers table, each a verdict or a measured word and its number."""
    m = m.sort_values("epoch")
    win, verdict = window(m, guard), claims.set_index("claim_id")["verdict"]
    growth = win.w_frobenius.iloc[-1] / win.w_frobenius.iloc[0]
    heads = "-"
    if not w.empty:
        sets = _sets(w)
        rows = w[sets == next(s for s in JUDGED_IMAGES if s in set(sets))]
        means = rows.groupby("epoch")["cosine"].mean()
        heads = f"{verdict.get('vit_w_svm_direction', '-')}: {means.iloc[0]:.3f} -> {means.iloc[-1]:.3f}"
    return [
        f"{verdict.get('vit_regime', '-')}: {win.train_loss.mean():.2g}",
        f"{'keeps growing' if growth > GROWING else 'no'}: x{growth:.2f}",
        f"{verdict.get('vit_w_direction', '-')}: {turns(m).iloc[-1]:.2g} deg last row",
        f"{verdict.get('vit_fig6_concentrates', '-')}: {m.soft_sparsity_image.iloc[0]:.2f} -> "
        f"{m.soft_sparsity_image.iloc[-1]:.2f}",
        heads,
    ]


ANSWERS = (
    "Does the training loss go to zero? (vit_regime: the window's mean loss)",
    f"Does ||W||_F keep growing? (over the window; more than x{GROWING:g})",
    "Does W's direction settle? (vit_w_direction)",
    "Does the Figure 6 image's attention concentrate? (vit_fig6_concentrates: its soft-sparsity)",
    "Do the heads approach their W-ATT-SVM? (vit_w_svm_direction: head-mean cosine, first -> last snapshot)",
)


def answers_table(
    runs: Mapping[str, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]], guard: Mapping[str, Any]
) -> list[str]:
    """The questions of docs/vit.md's 400-epoch section, a row each, a column per run (``runs``: name -> its metrics,
    W-ATT-SVM table and claims)."""
    cells = {name: _answers(*tables, guard) for name, tables in runs.items()}
    lines = ["| question | " + " | ".join(cells) + " |", "|" + " --- |" * (len(cells) + 1)]
    rows = [[q, *(cells[name][k] for name in cells)] for k, q in enumerate(ANSWERS)]
    return lines + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
