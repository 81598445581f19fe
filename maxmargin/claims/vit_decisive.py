"""The decisive experiment's claims (beyond the paper; tables vit_decisive_ray and vit_decisive_gd, rules
vit_decisive_ray and vit_decisive_gd): whether the trained heads meet the theory's premise (``vit_ray_precondition``:
the loss falls along the max-margin ray), and whether GD on W alone converges in direction to the W-ATT-SVM of its
selections with the tokens frozen, in the network (``vit_frozen_converges``) and in the paper's one-layer model on
the head's real tokens (``vit_one_layer_converges``). Each is judged at the last snapshot of ``vit.decisive.at``; the
convergence claims by bars fixed before any run (``vit.decisive.bars``)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from maxmargin.claims.base import (
    Claim,
    Config,
    Interval,
    Measurement,
    Tables,
    interval_method,
    interval_verdict,
    mean_interval,
    note_of,
)

# The logged steps of the normalised-GD arm the selections' stability and ||W||'s growth are judged over.
LAST_STEPS = 3


def _last_epoch(table: pd.DataFrame) -> tuple[int, pd.DataFrame]:
    """The last snapshot the table measured, and its rows."""
    epoch = int(table["epoch"].max())
    return epoch, table[table["epoch"] == epoch]


@dataclass(frozen=True)
class Ray:
    """The max-margin ray of one scaling from c = 1 on: its name, the losses at c = 1 and at the largest c, and the
    largest relative rise between neighbouring c (where it starts, its two losses)."""

    name: str
    first: float
    last: float
    rise: float
    at: tuple[float, float, float, float]  # c before, c after, loss before, loss after, of the largest rise


def ray_from_one(rows: pd.DataFrame, name: str) -> Ray:
    """The loss along one ray from c = 1 on (``rows``: one scaling's rows, any order)."""
    rows = rows[rows["c"] >= 1.0 - 1e-12].sort_values("c")
    c, loss = rows["c"].to_numpy(dtype=float), rows["loss"].to_numpy(dtype=float)
    rises = np.diff(loss) / loss[:-1]
    k = int(np.argmax(rises))
    return Ray(name, float(loss[0]), float(loss[-1]), float(rises[k]), (c[k], c[k + 1], loss[k], loss[k + 1]))


def _rays(last: pd.DataFrame, direction: str) -> list[Ray]:
    """Every scaling's ray of ``direction``: each head alone, then all heads together."""
    rows = last[last["direction"] == direction]
    one = rows[rows["heads"] == "one"]
    found = [ray_from_one(g, f"head {int(h)} alone") for h, g in one.groupby("head")]
    return found + [ray_from_one(rows[rows["heads"] == "all"], "all heads")]


def _lowest(last: pd.DataFrame, direction: str) -> str:
    """Where the loss along the all-heads ray of ``direction`` is lowest, against c = 1."""
    rows = last[(last["direction"] == direction) & (last["heads"] == "all")]
    low, one = rows.loc[rows["loss"].idxmin()], rows.loc[(rows["c"] - 1.0).abs().idxmin()]
    return f"lowest {low['loss']:.3g} at c = {low['c']:.3g} (c = 1: {one['loss']:.3g})"


def _precondition(t: Tables, cfg: Config) -> Measurement:
    """The loss falls along every max-margin ray from c = 1 on: holds when each scaling's loss ends lower than at
    c = 1 and never rises by more than ``vit.decisive.ray.tol`` (relative) between neighbouring c; differs when one
    rises more; inconclusive when none rises but one ends within the tolerance of its value at c = 1."""
    table, tol = t["vit_decisive_ray"], cfg["vit"]["decisive"]["ray"]["tol"]
    if table.empty:
        return "not measured: vit.decisive.at is empty", "not run", "no ray rows"
    epoch, last = _last_epoch(table)
    rays = _rays(last, "max_margin")
    risen = [r for r in rays if r.rise > tol]
    flat = [r for r in rays if r.rise <= tol and r.last >= r.first * (1 - tol)]
    verdict = "differs" if risen else "inconclusive" if flat else "holds"
    heads = last[last["heads"] == "one"].drop_duplicates("head")
    measured = (
        f"at epoch {epoch}, on {int(last['n_images'].iloc[0])} training images: the loss falls along the max-margin "
        f"ray from c = 1 on for {len(rays) - len(risen) - len(flat)} of {len(rays)} scalings (each head alone, all "
        f"heads); all heads: {_lowest(last, 'max_margin')}; along c W_h (all heads): {_lowest(last, 'trained')}; "
        f"cos(W_h, W_mm,h) {', '.join(f'{c:.3f}' for c in heads['cosine'])}"
    )
    worst = max(risen or flat or rays, key=lambda r: r.rise)
    c0, c1, l0, l1 = worst.at
    why = (
        f"along the max-margin ray of {worst.name} the loss rises by {worst.rise:.2%} from {l0:.3g} at c = {c0:.3g} "
        f"to {l1:.3g} at c = {c1:.3g} ({len(risen)} of {len(rays)} scalings rise)"
        if risen
        else f"along the max-margin ray of {worst.name} the loss ends at {worst.last:.3g} against {worst.first:.3g} "
        "at c = 1: flat within the tolerance"
    )
    rule = (
        f"holds when, at the last snapshot of vit.decisive.at, the training loss along c W_mm,h ||W_h||_F / "
        f"||W_mm,h||_F (W_mm,h the W-ATT-SVM of head h's own selection) never rises by more than "
        f"vit.decisive.ray.tol = {tol:g} (relative) between neighbouring c from c = 1 to c = {last['c'].max():g} and "
        "ends lower than at c = 1, for each head scaled alone (the others at their trained W) and for all heads "
        "scaled together; differs when one of them rises more, inconclusive when one stays flat"
    )
    return measured, verdict, note_of(verdict, why, rule)


@dataclass(frozen=True)
class Convergence:
    """What the convergence claims read of one model's normalised-GD arm at the last snapshot: the heads' cosines
    with the W-ATT-SVM of their selections at the last logged step, the share of selections equal to the final ones
    at each of the last logged steps, d ln||W||_F / d ln t over them, the steps and the rows of the last step."""

    cosines: np.ndarray
    kept: np.ndarray
    growth: float
    steps: list[int]
    final: pd.DataFrame


def convergence(rows: pd.DataFrame, model: str) -> Convergence:
    """:class:`Convergence` of ``model``'s normalised-GD rows at one snapshot. ||W||_F is the model's parameter's:
    all heads together in the frozen ViT (one parameter, one loss), each head's own in the one-layer model (each
    head its own problem: the slowest head's growth)."""
    arm = rows[(rows["model"] == model) & (rows["arm"] == "normalized_gd")]
    steps = sorted(int(s) for s in arm["step"].unique())[-LAST_STEPS:]
    window = arm[arm["step"].isin(steps)]
    kept = window.groupby("step")["selection_final"].mean().to_numpy(dtype=float)
    norms = window.pivot(index="step", columns="head", values="w_frobenius").sort_index()
    norms = np.sqrt((norms**2).sum(axis=1)).to_frame() if model == "frozen_vit" else norms
    span = np.log(steps[-1]) - np.log(max(steps[0], 1))
    growth = float((np.log(norms.iloc[-1]) - np.log(norms.iloc[0])).min() / span) if span > 0 else float("nan")
    final = window[window["step"] == steps[-1]].sort_values("head")
    return Convergence(final["cosine"].to_numpy(dtype=float), kept, growth, steps, final)


def _failures(c: Convergence, interval: Interval, bars: Config) -> list[tuple[str, str]]:
    """Each condition of the bar that fails, as (verdict it implies, reason), the cosine first."""
    cos_verdict = interval_verdict(interval.low, interval.high, bars["min_cosine"], below=False)
    found = []
    if cos_verdict != "holds":
        where = "lies below" if cos_verdict == "differs" else "contains"
        found.append((cos_verdict, f"the head-mean cosine {interval.text()} {where} {bars['min_cosine']:g}"))
    if c.kept.min() < bars["min_kept"]:
        step = c.steps[int(np.argmin(c.kept))]
        found.append(
            ("inconclusive", f"{c.kept.min():.1%} of the selections equal the final ones at step {step} (needs >= "
             f"{bars['min_kept']:.0%} at each of the last {LAST_STEPS} logged steps)")
        )  # fmt: skip
    if not c.growth >= bars["min_log_growth"]:
        found.append(
            ("inconclusive", f"||W||_F grows as t^{c.growth:.3f} over steps {c.steps[0]}-{c.steps[-1]} (needs "
             f"d ln||W||_F / d ln t >= {bars['min_log_growth']:g})")
        )  # fmt: skip
    return found


def _converges(t: Tables, cfg: Config, model: str) -> Measurement:
    """GD on W alone converges in direction to the W-ATT-SVM of its selections: at the normalised-GD arm's last
    logged step the head-mean cosine is above ``bars.min_cosine`` by its interval over heads, at least
    ``bars.min_kept`` of the selections equal the final ones at each of the last three logged steps, and ||W||_F
    grows (d ln||W||_F / d ln t at least ``bars.min_log_growth``). Differs when the cosine's interval lies below the
    bar while the other two hold (GD settled on another direction); inconclusive otherwise."""
    decisive, guard = cfg["vit"]["decisive"], cfg["vit"]["guard"]
    table = t["vit_decisive_gd"]
    table = table[table["model"] == model]
    if table.empty:
        return "not measured: vit.decisive.at is empty", "not run", "no rows of this model"
    epoch, last = _last_epoch(table)
    c, bars = convergence(last, model), decisive["bars"]
    interval = mean_interval(c.cosines, confidence=guard["confidence"], bootstrap=guard["bootstrap"])
    interval = replace(interval, low=max(interval.low, -1.0), high=min(interval.high, 1.0))  # a cosine's mean
    failures = _failures(c, interval, bars)
    verdicts = {v for v, _ in failures}
    verdict = "holds" if not failures else "differs" if verdicts == {"differs"} else "inconclusive"
    plain = last[(last["arm"] == "gd") & (last["step"] == last["step"].max())]
    n = int(c.final["n_images"].iloc[0])
    measured = (
        f"at epoch {epoch}, normalised GD at step {c.steps[-1]}: head-mean cos(W_h, W-ATT-SVM of its selection) "
        f"{interval.text()} on {n} images, ||W_h||_F {c.final['w_frobenius'].mean():.1f} (d ln||W|| / d ln t "
        f"{c.growth:.2f}), saturation {c.final['saturation'].mean():.3f}, selections equal to the final ones "
        f"{', '.join(f'{k:.1%}' for k in c.kept)} over steps {', '.join(map(str, c.steps))}; plain GD at step "
        f"{int(plain['step'].max())}: cosine {plain['cosine'].mean():.3f} on {n} images, ||W_h||_F "
        f"{plain['w_frobenius'].mean():.1f}"
    )
    if model == "one_layer":
        measured += (
            f"; final selections locally optimal on {c.final['locally_optimal'].mean():.1%} of the images, the "
            f"top-score token on {c.final['top_score'].mean():.1%} (head means)"
        )
    rule = (
        f"holds when, at the last snapshot of vit.decisive.at, normalised GD's head-mean cosine at its last logged "
        f"step is above vit.decisive.bars.min_cosine = {bars['min_cosine']:g} by its "
        f"{interval_method(interval, guard['confidence'], 'heads')}, at least min_kept = {bars['min_kept']:g} of the "
        f"selections equal the final ones at each of the last {LAST_STEPS} logged steps and d ln||W||_F / d ln t over "
        f"them is at least min_log_growth = {bars['min_log_growth']:g}; differs when the interval lies below the bar "
        "while the other two hold"
    )
    return measured, verdict, note_of(verdict, "; ".join(why for _, why in failures), rule)


CLAIMS: tuple[Claim, ...] = (
    Claim(
        "vit_ray_precondition",
        "The trained heads meet the theory's premise: the training loss falls along each head's max-margin ray "
        "(beyond the paper)",
        "Definition 2, Theorem 3 (locally-optimal tokens: the loss falls along W_mm)",
        "the loss falls from c = 1 on",
        _precondition,
    ),
    Claim(
        "vit_frozen_converges",
        "With the tokens frozen, GD on the last layer's W converges in direction to the W-ATT-SVM of its selections "
        "(beyond the paper)",
        "Theorems 2-3, Lemma 1 (W / ||W|| -> W_mm / ||W_mm||)",
        "cosine -> 1 while ||W|| grows",
        lambda t, cfg: _converges(t, cfg, "frozen_vit"),
    ),
    Claim(
        "vit_one_layer_converges",
        "Real tokens admit the theory: in the paper's one-layer model on the head's real tokens (v fixed), GD on W "
        "converges in direction to the W-ATT-SVM of its selections (beyond the paper)",
        "Theorems 2-3, Lemma 1 (the model f(X) = v^T X^T softmax(X W z))",
        "cosine -> 1 while ||W|| grows",
        lambda t, cfg: _converges(t, cfg, "one_layer"),
    ),
)


# --------------------------------------------------------------------------------------------------- the run's page

# Column names without "|": a Markdown table would split "||W||_F" into cells.
_RAYS = {"trained": "loss along c W_h", "max_margin": "loss along c W_mm,h (at the norm of W_h)"}
_GD = {"w_frobenius": "Frobenius norm of W_h", "saturation": "saturation", "cosine": "cos, current selection",
       "cosine_final": "cos, final selection", "selection_final": "selections final",
       "locally_optimal": "locally optimal", "top_score": "top score"}  # fmt: skip


def page_section(ray: pd.DataFrame, gd: pd.DataFrame) -> list[str]:
    """The run page's section on the decisive experiment (docs/results/<run>.md, rule docs_vit): per snapshot, the
    training loss along the all-heads rays, and each model's normalised-GD arm by logged step (head means) with
    plain GD's last step; the claims stand in the page's claims table."""
    from maxmargin.tables import markdown_table

    n = int(ray["n_images"].iloc[0]) if len(ray) else int(gd["n_images"].max())
    lines = [
        "## The decisive experiment (beyond the paper)",
        "",
        "From the run's snapshots, never retraining (docs/vit.md, 'The decisive experiment'; claims "
        "vit_ray_precondition, vit_frozen_converges and vit_one_layer_converges in the table above). The ray test: "
        f"the training loss on all {n} training images with all heads' key-query matrices scaled by c, along the "
        "trained W_h and along the max-margin W_mm,h (the W-ATT-SVM of the head's selection; each head alone: table "
        "`vit_decisive_ray`).",
    ]
    for epoch, rows in ray.groupby("epoch"):
        wide = rows[rows["heads"] == "all"].pivot(index="c", columns="direction", values="loss").rename(columns=_RAYS)
        lines += ["", f"Epoch {epoch}:", "", markdown_table(wide.reset_index())]
    for (epoch, model), rows in gd.groupby(["epoch", "model"]):
        arm = rows[rows["arm"] == "normalized_gd"].groupby("step")[list(_GD)].mean().dropna(axis=1, how="all")
        plain = rows[(rows["arm"] == "gd") & (rows["step"] == rows["step"].max())]
        what = "the network, tokens frozen" if model == "frozen_vit" else "the one-layer model on the real tokens"
        lines += [
            "",
            f"Epoch {epoch}, {what}, normalised GD on {int(rows['n_images'].iloc[0])} images (head means; plain GD "
            f"at step {int(plain['step'].max())}: cos {plain['cosine'].mean():.3f}, ||W_h||_F "
            f"{plain['w_frobenius'].mean():.2f}):",
            "",
            markdown_table(arm.rename(columns=_GD).reset_index()),
        ]
    return lines
