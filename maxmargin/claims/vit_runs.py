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
from maxmargin.experiments.vit_image_counts import chosen_image_count
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


def shuffled_null(last: pd.DataFrame, what: str = "a shuffled selection") -> str:
    """The shuffled-selection null (b) at a snapshot (``last``: its rows of one image set), with its number of images
    and the head's own cosine on them where the probe solved it on fewer images than the head's own W-ATT-SVM
    (``n_images_null``, ``cosine_null_images``: vit.w_svm.whole_train)."""
    said = f"{last.null_shuffled.mean():.3f} for {what}"
    if "n_images_null" not in last or last["n_images_null"].isna().all():
        return said
    n_null = int(last["n_images_null"].max())
    if n_null == int(last["n_images"].max()) or last["cosine_null_images"].isna().all():
        return said
    return f"{said} (on {n_null:,} images, where the head's own cosine is {last.cosine_null_images.mean():.3f})"


def heads_line(w: pd.DataFrame) -> str:
    """The heads against their W-ATT-SVM at the last snapshot, on the judged image set (the number of images beside
    every cosine), against the nulls and the ceiling; where the probe had both sets, the other's head mean beside it
    (on its own number of images); where it measured three epochs or more, the head mean at the first."""
    sets = _sets(w)
    judged = next(name for name in JUDGED_IMAGES if name in set(sets))
    rows = w[sets == judged]
    heads = rows[rows["epoch"] == rows["epoch"].max()]
    means = rows.groupby("epoch")["cosine"].mean()
    epochs = sorted(int(e) for e in rows["epoch"].unique())
    others = [
        f"; on {int(rows_.n_images.iloc[0]):,} {name} images {rows_.cosine.mean():.3f}"
        for name in sorted(set(sets) - {judged})
        if not (rows_ := w[(sets == name) & (w["epoch"] == heads.epoch.iloc[0])]).empty
    ]
    trend = (
        f"; the head mean {means.iloc[0]:.3f} at epoch {means.index[0]:.0f} (claim vit_w_svm_direction tests the trend)"
        if len(epochs) >= 3
        else "; no trend to read from two epochs"
    )
    return (
        f"- **The heads against their W-ATT-SVM** (measured at epochs {', '.join(map(str, epochs))}, on "
        f"{int(heads.n_images.iloc[0]):,} {judged} images): at epoch {heads.epoch.iloc[0]:.0f} the {len(heads)} heads' "
        f"cos(Wt_h, W_mm,h) is {heads.cosine.mean():.3f} (from {heads.cosine.min():.3f} to {heads.cosine.max():.3f}), "
        f"against {heads.null_rank.mean():.3f} for a random rank-d_head matrix and {shuffled_null(heads)}, under a "
        f"rank ceiling of {heads.ceiling.mean():.3f}: "
        f"{heads.cosine.mean() / heads.ceiling.mean():.0%} of the ceiling{''.join(others)}{trend}."
    )


def claim_lines(claims: pd.DataFrame, ids: list[str] | None = None) -> list[str]:
    """One bullet per claim: its verdict and measurement, and where it does not hold, its reason; a claim not run
    says why (its note: the missing table)."""
    rows = claims.set_index("claim_id")
    rows = rows.loc[ids] if ids is not None else rows
    lines = []
    for c, r in rows.iterrows():
        measured = "" if pd.isna(r.measured) else str(r.measured)
        if r.verdict == "not run" and not measured:
            measured = str(r.note)
        why = f". Why: {str(r.note).removeprefix(r.verdict + ': ')}" if r.verdict in ("differs", "inconclusive") else ""
        lines.append(f"- `{c}` (**{r.verdict}**): {measured}{why}")
    return lines


def run_lines(
    m: pd.DataFrame, w: pd.DataFrame, claims: pd.DataFrame, guard: Mapping[str, Any], n_train: int
) -> list[str]:
    """A run in bullets: loss, saturation, sparsity and ||W||_F, W's direction, the heads (where probed)."""
    holds = claims.set_index("claim_id").loc["vit_sparsity", "verdict"] == "holds"
    m = m.sort_values("epoch").reset_index(drop=True)
    lines = [loss_line(m, guard, n_train), saturation_line(m), sparsity_line(m, guard, holds), direction_line(m, guard)]
    return lines + ([heads_line(w)] if not w.empty else [])


def agreement(differences: np.ndarray, confidence: float, margin: float) -> tuple[str, float, float]:
    """How two sets of per-head cosines stand to each other, from their per-head ``differences``: ``agree`` where the
    (2 confidence - 1) t-interval of the mean difference lies within +-``margin`` (two one-sided tests at level
    (1 - confidence) / 2 each, Schuirmann 1987), ``differ`` where the ``confidence`` t-interval excludes 0, else
    ``not distinguishable``; and that interval's bounds."""
    low, high = t_interval(differences, confidence)
    equivalence = t_interval(differences, 2 * confidence - 1)
    if -margin < equivalence[0] and equivalence[1] < margin:
        return "agree", low, high
    return ("differ" if low > 0 or high < 0 else "not distinguishable"), low, high


def _common_count(curve: pd.DataFrame) -> tuple[pd.DataFrame, int] | None:
    """The image-count curve's rows on the largest number of images both sets were solved on, and that number."""
    counts = [set(curve.loc[curve["images"] == name, "n_images"]) for name in ("train", "test")]
    common = counts[0] & counts[1]
    if not common:
        return None
    n = max(common)
    return curve[curve["n_images"] == n], int(n)


def set_gap_line(curve: pd.DataFrame, confidence: float, margin: float) -> str:
    """The heads' cosine on the training images against the held-out ones at the last snapshot, both solved on the
    same number of images (the image-count curve's largest count both sets hold): the head-mean difference, its
    t-interval over heads and whether the two agree within +-``margin`` (:func:`agreement`)."""
    common = _common_count(curve) if not curve.empty else None
    if common is None:
        return ""
    rows, n = common
    wide = rows.pivot(index="head", columns="images", values="cosine")
    gap = wide["train"] - wide["test"]
    verdict, low, high = agreement(gap.to_numpy(), confidence, margin)
    said = {
        "agree": f"they agree within +-{margin:g} (vit.guard.w_svm_equivalence; a {2 * confidence - 1:.0%} "
        "t-interval inside the margin)",
        "differ": "they differ",
        "not distinguishable": f"not distinguishable at +-{max(abs(low), abs(high)):.2f}; agreement within "
        f"+-{margin:g} (vit.guard.w_svm_equivalence) is not shown",
    }[verdict]
    return (
        f"- **Training images against held-out ones** (at the last snapshot, both on {n:,} images): head means "
        f"{wide['train'].mean():.3f} / {wide['test'].mean():.3f}, difference {gap.mean():+.3f}"
        f" [{low:+.3f}, {high:+.3f}] ({confidence:.0%} t-interval over {len(wide)} heads): {said}."
    )


def curve_line(
    curve: pd.DataFrame, tol: float, chosen: int, confidence: float, used: Mapping[str, int] | None = None
) -> str:
    """The cosine against the number of images at the last snapshot, per set; where it levels off on the judged set
    (:func:`chosen_image_count` without a cap), or its last step with the t-interval of the heads' own steps; the
    number the probe read from it (``chosen``: fewer than where it levels off only under the cap
    vit.w_svm.images), and where ``used`` gives each set's number of images at the probe's last snapshot (all the
    training images under vit.w_svm.whole_train), those."""
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
    if used:
        took = "the probe's solves use " + " and ".join(f"{n:,} {name} images" for name, n in used.items())
    if chosen < levelled:
        took += (
            f", the run's cap vit.w_svm.images, fewer than the curve asks for: its cosines are those at {chosen} "
            f"images ({counts.loc[chosen]:.3f} on the {sets[0]} images here, {counts.iloc[-1]:.3f} at {largest})"
        )
    heading = f"- **The number of images** (head-mean cosine at the last snapshot by count; {'; '.join(parts)})"
    return f"{heading}: {said}; {took}."


def _largest_loss(m: pd.DataFrame, guard: Mapping[str, Any]) -> str:
    """The window's largest per-sample training loss, or its mean loss where the per-sample loss was not logged."""
    w = window(m, guard)
    if "train_loss_max" in w and w["train_loss_max"].notna().all():
        return small(w["train_loss_max"].max())
    return f"mean {small(w['train_loss'].mean())} (per sample: not logged)"


def arm_row(name: str, m: pd.DataFrame, w: pd.DataFrame, claims: pd.DataFrame, guard: Mapping[str, Any]) -> list:
    """One run in a row of the arms' table: the window's largest per-sample loss and claim vit_regime, the saturation
    and soft-sparsity at the end, ||W||_F and its log-t growth over the window with claim vit_regime_markers, W's last
    turn and claim vit_w_direction, the heads' cosine on the judged set at the last snapshot (with its number of
    images) against the null and the ceiling, and claim vit_w_svm_direction."""
    from maxmargin.claims.vit_regime import regime_window, w_growth

    m = m.sort_values("epoch")
    verdict = claims.set_index("claim_id")["verdict"]
    saturation = m["cls_max_attention"].iloc[-1] if "cls_max_attention" in m else float("nan")
    heads = "-"
    if not w.empty:
        sets = _sets(w)
        judged = next(s for s in JUDGED_IMAGES if s in set(sets))
        last = w[(sets == judged) & (w["epoch"] == w["epoch"].max())]
        heads = (
            f"{last.cosine.mean():.3f} / {last.null_rank.mean():.3f} / {last.ceiling.mean():.3f} "
            f"({int(last.n_images.iloc[0]):,} {judged})"
        )
    growth = w_growth(regime_window(m, guard), guard["confidence"])
    return [
        name,
        _largest_loss(m, guard),
        verdict.get("vit_regime", "-"),
        "-" if np.isnan(saturation) else f"{saturation:.3f}",
        f"{m.soft_sparsity.iloc[-1]:.3f}",
        f"{m.w_frobenius.iloc[0]:.3g} -> {m.w_frobenius.iloc[-1]:.3g}",
        growth.text(),
        verdict.get("vit_regime_markers", "-"),
        small(turns(m).iloc[-1], 1),
        verdict.get("vit_w_direction", "-"),
        heads,
        verdict.get("vit_w_svm_direction", "-"),
    ]


ARM_HEADER = [
    "run",
    "largest per-sample train loss (window)",
    "vit_regime",
    "saturation (end)",
    "soft-sparsity (end)",
    "\\|\\|W\\|\\|_F",
    "d ln\\|\\|W\\|\\|_F / d ln t (window)",
    "vit_regime_markers",
    "W's last turn (deg)",
    "vit_w_direction",
    "heads: cos / null / ceiling (last snapshot, images)",
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


# docs/vit.md's questions of the 400-epoch runs, one per claim, in the order the section answers them.
QUESTIONS = {
    "vit_learns": "Does the ViT learn (against a linear baseline)?",
    "vit_regime": "Does every training sample's loss go under the regime bar, and not rise?",
    "vit_regime_markers": "Do the theory's markers move: ||W||_F grows (log-t aware) and the attention saturates?",
    "vit_w_direction": "Does W's direction converge while ||W||_F grows?",
    "vit_sparsity": "Does the [CLS] attention sparsify as ||W||_F grows (Figure 7)?",
    "vit_fig6_concentrates": "Does the Figure 6 image's attention concentrate?",
    "vit_w_svm_direction": "Do the heads approach their W-ATT-SVM (above null (a), rising over the last half)?",
    "vit_w_svm_specific": "Does training make a head's alignment specific to its own selection?",
    "vit_w_svm_nuclear": "Is a head closer to the nuclear-norm W-ATT-SVM than a random matrix of its rank?",
    "vit_ray_precondition": "Do the trained heads meet the theory's premise: does the loss fall along their "
    "max-margin ray?",
    "vit_frozen_converges": "With the tokens frozen, does GD on W converge in direction to the W-ATT-SVM of its "
    "selections?",
    "vit_one_layer_converges": "Do real tokens admit the theory: does the paper's one-layer model on them converge "
    "to its W-ATT-SVM?",
}


def answers_table(claims: Mapping[str, pd.DataFrame], questions: Mapping[str, str] = QUESTIONS) -> list[str]:
    """The questions of docs/vit.md's 400-epoch section, a row per claim (``questions``: claim id -> question), a
    column per run (``claims``: name -> its claims table), each cell the claim's verdict (``not run`` where the run's
    claims table has no such claim: its tables were not made)."""
    verdicts = {name: table.set_index("claim_id")["verdict"] for name, table in claims.items()}
    lines = ["| question (claim) | " + " | ".join(verdicts) + " |", "|" + " --- |" * (len(verdicts) + 1)]
    for claim_id, question in questions.items():
        cells = [str(v.get(claim_id, "not run")) for v in verdicts.values()]
        lines.append(f"| {question} (`{claim_id}`) | " + " | ".join(cells) + " |")
    return [line.replace("||W||", "\\|\\|W\\|\\|") for line in lines]
