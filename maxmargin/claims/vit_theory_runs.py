"""Sentences on whether a committed ViT run meets the theory (docs/vit.md, "400 epochs on a CPU"), written from its
tables and claims: W's gradient against the optimiser's step (:func:`gradient_line`), the decisive experiment's
numbers (:func:`decisive_line`), what an optimiser does to W (:func:`w_fate`), what each combination of the decisive
verdicts means (:data:`CASES`, :func:`cases_table`) and the section's "In words" list (:func:`in_words`).

Every number is computed from the run's tables and every verdict word is read from its claims or chosen by a rule
stated here, so that a rerun with other numbers rewrites the words too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from maxmargin.claims.vit_regime import grows, regime_window, w_growth
from maxmargin.core.vit_learning import w_direction

# Adam's step on an element is lr m_hat / (sqrt(v_hat) + eps). Along the full training loss's gradient g it moves W by
# about lr g / sqrt(v_hat) a step where sqrt(v_hat) is far above eps. The rule of :func:`adam_step`:
STALLED_BELOW = 0.01  # stalled: g / sqrt(v_hat) (per-element RMS, each slice) below this over the whole window
EPS_BOUND = 0.5  # eps-bound: at least this share of a slice's elements with sqrt(v_hat) below eps at some row
SLICES = ("q", "k")  # the last layer's W_Q and W_K slices of its fused qkv weight


def _logged(m: pd.DataFrame, column: str) -> bool:
    return column in m and m[column].notna().any()


@dataclass(frozen=True)
class StepStats:
    """W's full-loss gradient and Adam's second moment (per-element RMS, per slice of :data:`SLICES`) at the run's last
    metrics row, and over the window of claim vit_w_direction: the largest g / sqrt(v_hat), the largest share of
    elements with sqrt(v_hat) below eps, the smallest sqrt(v_hat); the learning rate at the last row."""

    first: int
    last: int
    lr: float
    grad: dict[str, float]
    sqrt_v: dict[str, float] | None
    ratio: float
    below_eps: float
    smallest_sqrt_v: float


def step_stats(m: pd.DataFrame, guard: Mapping[str, Any]) -> StepStats | None:
    """:class:`StepStats` of a metrics table; None where the gradient was not logged (runs made before it was)."""
    if not _logged(m, "grad_rms_q"):
        return None
    window = regime_window(m, guard)
    end = window.iloc[-1]
    grad = {s: float(end[f"grad_rms_{s}"]) for s in SLICES}
    if not _logged(window, "adam_sqrt_v_rms_q"):
        return StepStats(window.index[0], window.index[-1], float(end["lr"]), grad, None, np.nan, np.nan, np.nan)
    ratio = max(float((window[f"grad_rms_{s}"] / window[f"adam_sqrt_v_rms_{s}"]).max()) for s in SLICES)
    below = max(float(window[f"adam_below_eps_{s}"].max()) for s in SLICES)
    smallest = min(float(window[f"adam_sqrt_v_rms_{s}"].min()) for s in SLICES)
    sqrt_v = {s: float(end[f"adam_sqrt_v_rms_{s}"]) for s in SLICES}
    return StepStats(window.index[0], window.index[-1], float(end["lr"]), grad, sqrt_v, ratio, below, smallest)


def adam_step(s: StepStats) -> str:
    """The rule's verdict on Adam's step over the window: ``eps-bound`` where at least :data:`EPS_BOUND` of a slice's
    elements have sqrt(v_hat) below eps at some row (a step there is about lr g / eps); else ``stalled`` where
    g / sqrt(v_hat) stays below :data:`STALLED_BELOW` on both slices at every row (Adam moves W along its gradient
    by less than lr / 100 a step, its denominator far above eps); else ``moving``; ``sgd`` without a second
    moment."""
    if s.sqrt_v is None:
        return "sgd"
    if s.below_eps >= EPS_BOUND:
        return "eps-bound"
    return "stalled" if s.ratio < STALLED_BELOW else "moving"


def _step_words(s: StepStats) -> str:
    """What :func:`adam_step`'s verdict says, with its numbers."""
    window = f"epochs {s.first}-{s.last}"
    return {
        "sgd": f"SGD moves W along the full gradient by lr g = {s.lr * max(s.grad.values()):.1e} per element a "
        "step at the end "
        "(a steady gradient up to 1 / (1 - momentum) times that)",
        "eps-bound": f"up to {s.below_eps:.0%} of a slice's elements have sqrt(v_hat) below Adam's eps over {window}: "
        f"**eps-bound** (the rule: from {EPS_BOUND:.0%}), a step there is about lr g / eps",
        "stalled": f"over {window} g / sqrt(v_hat) is at most {s.ratio:.1e} (the rule: **stalled** below "
        f"{STALLED_BELOW:g} while sqrt(v_hat) stays far above eps): Adam moves W along its gradient by about "
        f"lr g / sqrt(v_hat) = {s.lr * s.ratio:.1e} a step, its sqrt(v_hat) at least {s.smallest_sqrt_v:.1e} and "
        f"{s.below_eps:.0%} of the elements below eps",
        "moving": f"over {window} g / sqrt(v_hat) reaches {s.ratio:.2g} (the rule's stall is below "
        f"{STALLED_BELOW:g}): **moving**, Adam's step along the gradient is not small",
    }[adam_step(s)]


def gradient_line(m: pd.DataFrame, guard: Mapping[str, Any]) -> str:
    """W's gradient and the optimiser's step at the run's end, and :func:`adam_step`'s verdict in words."""
    s = step_stats(m.sort_values("epoch"), guard)
    if s is None:
        return "- **W's gradient and the optimiser's step.** Not logged by the code this run was made with."
    grads = " / ".join(f"{s.grad[k]:.1e}" for k in SLICES)
    moment = "" if s.sqrt_v is None else f", Adam's sqrt(v_hat) {' / '.join(f'{s.sqrt_v[k]:.1e}' for k in SLICES)}"
    return (
        f"- **W's gradient and the optimiser's step** (per-element RMS on the last layer's W_Q / W_K slices at epoch "
        f"{s.last}): the full training loss's gradient g {grads}{moment}; {_step_words(s)}."
    )


def ray_minimum(ray: pd.DataFrame, direction: str) -> tuple[float, float, float]:
    """Along one ray of all heads (``direction``: ``trained`` or ``max_margin``) at the table's last snapshot: the
    c where the training loss is lowest, that loss, and the loss at c = 1."""
    last = ray[(ray["epoch"] == ray["epoch"].max()) & (ray["heads"] == "all") & (ray["direction"] == direction)]
    low = last.loc[last["loss"].idxmin()]
    one = last.loc[(last["c"] - 1.0).abs().idxmin()]
    return float(low["c"]), float(low["loss"]), float(one["loss"])


def stop_words(s: StepStats | None, ray: pd.DataFrame) -> str:
    """Why W stops, by a stated rule on two measurements: a **finite limit** where the training loss along W's own
    ray (the ray test, all heads, last snapshot) is lowest at c = 1 itself, so that no larger ||W|| along W's
    direction lowers it; **stalled** where :func:`adam_step` says so; both, either, or neither ("" where neither was
    measured)."""
    said = []
    if not ray.empty:
        c, low, _ = ray_minimum(ray, "trained")
        said.append(
            f"along W's own ray the loss is lowest at c = 1 ({low:.3g}): a **finite limit**, every larger c of the "
            "ray test's grid has a higher loss"
            if abs(c - 1.0) < 1e-9
            else f"along W's own ray the loss is lowest at c = {c:.3g}, not at c = 1: no finite limit at W's norm"
        )
    if s is not None and adam_step(s) == "stalled":
        said.append("Adam's step along the gradient is **stalled** (the rule above)")
    return "; ".join(said)


def _ray_words(ray: pd.DataFrame) -> str:
    if ray.empty:
        return "the ray test: not run"
    mm, own = ray_minimum(ray, "max_margin"), ray_minimum(ray, "trained")
    return (
        f"on {int(ray['n_images'].iloc[0]):,} training images the loss along the max-margin ray (all heads, at the "
        f"norm of W_h) is lowest at c = {mm[0]:.3g} ({mm[1]:.3g}; {mm[2]:.3g} at c = 1), along W's own ray at "
        f"c = {own[0]:.3g} ({own[1]:.3g}; {own[2]:.3g} at c = 1)"
    )


def _gd_words(gd: pd.DataFrame, model: str, what: str) -> str:
    rows = gd[(gd["model"] == model) & (gd["arm"] == "normalized_gd")] if not gd.empty else gd
    if rows.empty:
        return f"{what}: not run"
    rows = rows[rows["epoch"] == rows["epoch"].max()]
    end = rows[rows["step"] == rows["step"].max()]
    return (
        f"{what}, normalised GD at step {int(end['step'].iloc[0]):,}: head-mean cosine {end['cosine_final'].mean():.3f}"
        f" with the W-ATT-SVM of its final selections on {int(end['n_images'].iloc[0]):,} images, "
        f"||W_h||_F {end['w_frobenius'].mean():.3g}"
    )


def decisive_line(ray: pd.DataFrame, gd: pd.DataFrame) -> str:
    """The decisive experiment at its last snapshot: where the loss along the max-margin ray and along W's own ray is
    lowest against c = 1 (table vit_decisive_ray), and the head-mean cosine of normalised GD with the W-ATT-SVM of
    its final selections at its last logged step, the tokens frozen and in the one-layer model (vit_decisive_gd);
    ``not run`` for a table the run did not make."""
    if ray.empty and gd.empty:
        return (
            "- **The decisive experiment.** Not run on this run's snapshots (its tables are not among the committed "
            "files: target vit_decisive)."
        )
    epoch = int(max(t["epoch"].max() for t in (ray, gd) if not t.empty))
    parts = [
        _ray_words(ray),
        _gd_words(gd, "frozen_vit", "the tokens frozen"),
        _gd_words(gd, "one_layer", "the one-layer model on the heads' real tokens"),
    ]
    return f"- **The decisive experiment** (at epoch {epoch}): {'; '.join(parts)}."


def w_fate(m: pd.DataFrame, guard: Mapping[str, Any]) -> str:
    """What happens to W over the window of claim vit_w_direction, by that claim's two conditions: whether
    ||W||_F grows (d ln||W||_F / d ln t against ``vit.guard.min_w_log_growth``, :func:`grows`) and whether W's
    direction settles (``vit.guard.max_direction_angle``); a direction that settles while the norm's interval
    reaches 0 is a finite matrix."""
    m = m.sort_values("epoch")
    window = regime_window(m, guard)
    growth = w_growth(window, guard["confidence"])
    grown = grows(growth, guard["min_w_log_growth"])
    d = w_direction(m["epoch"].to_numpy(), m["w_cosine_final"].to_numpy(), guard)
    turn = "its direction settles" if d.settled else f"it still turns ({d.angle:.1f} deg over the window)"
    slope = f"d ln||W||_F / d ln t {growth.text()}"
    if grown == "differs" and growth.low <= 0:
        fate = "W settles as a finite matrix" if d.settled else "||W||_F stops growing while W turns"
        return f"{fate} ({slope}; {turn})"
    norm = {"holds": "||W||_F grows", "inconclusive": "whether ||W||_F grows is not decided",
            "differs": "||W||_F grows more slowly than vit.guard.min_w_log_growth"}[grown]  # fmt: skip
    return f"{norm} ({slope}) and {turn}"


# What a claim's verdict answers to the question docs/vit.md asks of it.
ANSWER = {"holds": "yes", "differs": "no", "inconclusive": "not shown", "not run": "not run"}


@dataclass(frozen=True)
class Case:
    """A combination of the decisive verdicts and what it means for the theory: each field the verdicts of its claim
    that match (None: any)."""

    one_layer: frozenset[str] | None
    ray: frozenset[str] | None
    frozen: frozenset[str] | None
    heads: frozenset[str] | None
    reading: str

    def matches(self, v: Mapping[str, str]) -> bool:
        wanted = zip((self.one_layer, self.ray, self.frozen, self.heads), CASE_CLAIMS, strict=True)
        return all(allowed is None or v.get(claim, "not run") in allowed for allowed, claim in wanted)


CASE_CLAIMS = ("vit_one_layer_converges", "vit_ray_precondition", "vit_frozen_converges", "vit_w_svm_direction")
_HOLDS, _NOT = frozenset({"holds"}), frozenset({"differs", "inconclusive"})
_RUN = frozenset({"holds", "differs", "inconclusive"})
# A run's case is the first that matches its verdicts (a decisive claim not run matches the first only).
CASES: tuple[Case, ...] = (
    Case(None, None, None, None, "the decisive experiment has not run on these snapshots: nothing is read yet"),
    Case(frozenset({"differs"}), _RUN, _RUN, None,
         "the real tokens do not admit the theory: even the one-layer model it is proved for settles on another "
         "direction than its W-ATT-SVM on them, so the network cannot test it further"),
    Case(frozenset({"inconclusive"}), _RUN, _RUN, None,
         "whether the real tokens admit the theory is not shown (the one-layer model's bar is not met by its "
         "interval, or its selections still change): nothing about the network follows"),
    Case(_HOLDS, frozenset({"differs"}), _RUN, None,
         "the tokens admit the max-margin solution, but the network's loss does not fall along its ray: the theory's "
         "premise fails for the trained network, and its theorems say nothing about these heads"),
    Case(_HOLDS, frozenset({"inconclusive"}), _RUN, None,
         "the tokens admit the max-margin solution; whether the network's loss falls along its ray is not shown "
         "(a ray flat within vit.decisive.ray.tol)"),
    Case(_HOLDS, _HOLDS, _NOT, None,
         "the premise holds, yet GD on the network's W with its tokens frozen is not shown to converge to the "
         "W-ATT-SVM: the network's loss after the attention differs from the one-layer model's"),
    Case(_HOLDS, _HOLDS, _HOLDS, _NOT | {"not run"},
         "with its tokens frozen the network's W converges to the W-ATT-SVM, but trained with the rest its heads are "
         "not shown to approach it: the moving tokens are why"),
    Case(_HOLDS, _HOLDS, _HOLDS, _HOLDS, "the theory's picture in the network: its heads approach their W-ATT-SVM"),
)  # fmt: skip


def decisive_case(verdicts: Mapping[str, str]) -> int:
    """The index in :data:`CASES` of the first case a run's verdicts (claim id -> verdict) match: the first where
    any decisive claim is not run."""
    if any(verdicts.get(c, "not run") == "not run" for c in CASE_CLAIMS[:3]):
        return 0
    return next(i for i, case in enumerate(CASES) if i and case.matches(verdicts))


def _cell(allowed: frozenset[str] | None) -> str:
    return "any" if allowed is None or allowed == _RUN else " or ".join(sorted(allowed))


def cases_table(runs: Mapping[str, Mapping[str, str]]) -> list[str]:
    """:data:`CASES` as a Markdown table, each run (name -> its verdicts) marked in the row of its case."""
    marked = {i: [name for name, v in runs.items() if decisive_case(v) == i] for i in range(len(CASES))}
    head = "| " + " | ".join(f"`{c}`" for c in CASE_CLAIMS) + " | what it means for the theory | runs |"
    lines = [head, "|" + " --- |" * (len(CASE_CLAIMS) + 2)]
    for i, case in enumerate(CASES):
        cells = ["any decisive claim not run", "", "", ""] if i == 0 else [
            _cell(f) for f in (case.one_layer, case.ray, case.frozen, case.heads)
        ]  # fmt: skip
        runs_cell = ", ".join(f"**{name}**" for name in marked[i]) or "-"
        lines.append(f"| {' | '.join(cells)} | {case.reading} | {runs_cell} |")
    return lines


def _per_run(runs: Mapping[str, Mapping[str, str]], claim: str, words: Mapping[str, str]) -> str:
    """Each run's answer to a claim's question: the answer word, the verdict and what it says."""
    return "; ".join(
        f"{name}: {ANSWER[v.get(claim, 'not run')]} (`{claim}` {v.get(claim, 'not run')}: "
        f"{words[v.get(claim, 'not run')]})"
        for name, v in runs.items()
    )


ONE_LAYER_WORDS = {
    "holds": "in the paper's one-layer model on the last layer's real tokens GD on W converges in direction to the "
    "W-ATT-SVM of its selections",
    "differs": "on those tokens the one-layer model's GD settles on another direction",
    "inconclusive": "the one-layer model's convergence is not shown within the steps run (the claim names the "
    "condition)",
    "not run": "the one-layer model was not run on this run's snapshots",
}
RAY_WORDS = {
    "holds": "the training loss falls along every head's max-margin ray from c = 1 on",
    "differs": "along a head's max-margin ray the training loss rises from c = 1 on: its selections are not locally "
    "optimal for the network's loss",
    "inconclusive": "a max-margin ray stays flat within the tolerance",
    "not run": "the ray test was not run on this run's snapshots",
}
MARKER_WORDS = {
    "holds": "the theory's markers move: it reaches the theory's regime",
    "differs": "the theory's markers do not both move",
    "inconclusive": "the theory's markers are not shown to move",
    "not run": "its markers were not measured",
}


def optimiser_line(name: str, r: Mapping[str, Any], guard: Mapping[str, Any]) -> str:
    """What a run's optimiser does to W: :func:`w_fate`, the verdicts of vit_regime_markers and vit_w_direction,
    the optimiser's step (:func:`adam_step`) where the gradient was logged, and why W stops (:func:`stop_words`)
    where the ray test ran. ``r``: the run's ``metrics``, ``verdicts`` and ``ray`` (table vit_decisive_ray)."""
    m, verdicts = r["metrics"].sort_values("epoch"), r["verdicts"]
    markers, direction = verdicts.get("vit_regime_markers", "not run"), verdicts.get("vit_w_direction", "not run")
    s = step_stats(m, guard)
    step = "" if s is None else f"; {_step_words(s)}"
    stop = stop_words(s, r["ray"])
    return (
        f"{name}: {w_fate(m, guard)}; `vit_regime_markers` {markers} ({MARKER_WORDS[markers]}), `vit_w_direction` "
        f"{direction}{step}" + (f"; why W stops: {stop}" if stop else "")
    )


def in_words(
    runs: Mapping[str, Mapping[str, Any]], guard: Mapping[str, Any], optimiser: Callable[[str], str]
) -> list[str]:
    """The 400-epoch section's "In words": do real tokens admit the theory (vit_one_layer_converges), do the heads
    meet its premise (vit_ray_precondition), what each run's optimiser does to W (:func:`optimiser_line`; its name
    from ``optimiser``), and what the decisive verdicts mean (:func:`cases_table`). ``runs``: name -> ``metrics``
    (its table), ``verdicts`` (claim id -> verdict) and ``ray`` (its table vit_decisive_ray, empty where not run)."""
    verdicts = {name: r["verdicts"] for name, r in runs.items()}
    lines = [
        f"- **Do real tokens admit the theory?** {_per_run(verdicts, 'vit_one_layer_converges', ONE_LAYER_WORDS)}.",
        f"- **Do the network's heads meet its premise?** {_per_run(verdicts, 'vit_ray_precondition', RAY_WORDS)}.",
        "- **What each optimiser does to W** (over the window of `vit_w_direction`):",
        *(f"  - {optimiser_line(f'{optimiser(name)} ({name})', r, guard)}." for name, r in runs.items()),
        "- **What the decisive verdicts mean** (a run's case is the first row its verdicts match; "
        "`vit_w_svm_direction` asks whether the trained network's heads approach their W-ATT-SVM):",
        "",
        *cases_table(verdicts),
    ]
    return lines
