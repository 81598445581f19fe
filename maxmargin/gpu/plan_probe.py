"""What the analyses after a GPU session's run cost (docs/gpu.md, "Plan"): the W-ATT-SVM probe of its snapshots
(rule vit_probe) and the ray test (rule vit_decisive_ray), priced part by part before anything starts, beside the
run's own price (:func:`maxmargin.gpu.plan.project_run`).

Three measured sources: the probe of the third session on its card (:data:`PROBE_MEASURED`, docs/gpu/session3:
its stage, the heads' seconds and the snapshots' forward passes, which the probe makes on the node's CPU); how one
W-ATT-SVM solve at the paper's width grows with its number of images (:data:`SOLVE_GROWTH`, one thread of this
project's CPU, benchmarks/w_svm_benchmark.py); and one loss of the ray test per image at the paper's width
(:data:`RAY_LOSS_MS`, one thread of the same CPU). A solve on the card is priced as session3's at its number of
images, scaled by how the CPU's grows from there: an assumption, which the session's own probe log then checks.
Standard library only: the session plans before the kit's packages are installed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from maxmargin.gpu.plan import DATASET_IMAGES, MEASURED, analytic_flops, block_parameters, snapshot_count

if TYPE_CHECKING:
    from maxmargin.gpu.record import Session


@dataclass(frozen=True)
class ProbeMeasured:
    """Rule vit_probe of the third session on its card (docs/gpu/session3: session.json's ``stages`` and ``probe``,
    session.log's progress lines, vit_w_svm.csv's ``seconds``): 2 snapshots x 12 heads of ViT-B/2 on 32 held-out
    images, each head's own W-ATT-SVM, 2 null (a) draws and 2 null (b) shuffles. tests/test_gpu_results.py reads
    each figure again from those files."""

    source: str
    card: str
    snapshots: int
    heads: int
    images: int  # each head's W-ATT-SVM on this many images
    solves: int  # a head's solves: its own, the null (a) draws, the null (b) shuffles
    head_s: float  # a head's mean seconds (its solves, span share and ceiling): the table's ``seconds``
    bar_s: float  # the heads' progress bar at its end: the heads and each snapshot's forward pass
    stage_s: float  # the probe's stage: Snakemake's start, the job's (data, snapshots), the bar, the job's end

    @property
    def solve_s(self) -> float:
        """One solve on the card at :attr:`images` images, a head's other work shared among its solves."""
        return self.head_s / self.solves

    @property
    def forward_s(self) -> float:
        """One image's forward pass to the last layer, on the node's CPU (the probe builds the model there): the
        bar's seconds that are not the heads', over the images of every snapshot."""
        return (self.bar_s - self.snapshots * self.heads * self.head_s) / (self.snapshots * self.images)

    @property
    def fixed_s(self) -> float:
        """The stage less its bar: Snakemake's start, the job's start (imports, data, the snapshots) and end."""
        return self.stage_s - self.bar_s


PROBE_MEASURED = ProbeMeasured(
    source="docs/gpu/session3",
    card="NVIDIA H200",
    snapshots=2,
    heads=12,
    images=32,
    solves=5,
    head_s=1.29,  # 31.0 s over the 24 heads
    bar_s=37.0,  # "heads 24/24 (100%), 37 s so far"
    stage_s=51.6,  # stage probe: exit 0 after 52 s
)
# CPU seconds of one W-ATT-SVM solve at width 768 (ViT-B/2: 257 tokens, a random rank-64 head and its own selection,
# LayerNorm-like random tokens) against its number of images, at one thread of this project's CPU:
# `.venv/bin/python benchmarks/w_svm_benchmark.py --images N --heads 1 --draws 1` (own solve and one null (a) draw,
# their mean). Random tokens keep more margins in the support than a trained head's (about 1,250 of 8,192 at 32
# images, against 33-101 in session3's table): an upper bound of how a solve grows.
SOLVE_GROWTH = {32: 10.1, 64: 70.0}
# CPU milliseconds of one loss of the ray test on one image at width 768 (the last block's [CLS] path in float64),
# at one thread of this project's CPU: vit_decisive.ray_losses of ViT-B/2's tail (timm, its initialisation) on 16
# images of random last-layer inputs, all its 390 losses (2 rays x 13 scalings x 15 c) in 16.5 s.
RAY_LOSS_MS = 2.65


def solve_seconds(n: int, measured: ProbeMeasured = PROBE_MEASURED) -> float:
    """One W-ATT-SVM solve on ``n`` images on the card: session3's solve at its images, times the CPU's growth
    from there (:data:`SOLVE_GROWTH`, log-log between the measured counts; beyond the last, at its last slope)."""
    counts = sorted(SOLVE_GROWTH)
    pairs = list(zip(counts[:-1], counts[1:], strict=True))

    def growth(m: float) -> float:
        lo, hi = next((p for p in pairs if m <= p[1]), pairs[-1])
        slope = math.log(SOLVE_GROWTH[hi] / SOLVE_GROWTH[lo]) / math.log(hi / lo)
        return SOLVE_GROWTH[lo] * (m / lo) ** slope

    return measured.solve_s * growth(n) / growth(measured.images)


@dataclass(frozen=True)
class PartsPlan:
    """An analysis after the run priced part by part (seconds), before anything starts."""

    what: str
    parts: dict[str, float]

    @property
    def seconds(self) -> float:
        return sum(self.parts.values())

    def text(self) -> str:
        parts = ", ".join(f"{name} {seconds:,.0f} s" for name, seconds in self.parts.items())
        return f"{self.what}: about {self.seconds:,.0f} s ({parts})"

    def record(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "parts": {k: round(v, 1) for k, v in self.parts.items()},
            "seconds": round(self.seconds, 1),
        }


def _forward_s(model: Mapping[str, Any], measured: ProbeMeasured) -> float:
    """One image's forward pass on the node's CPU, scaled from ViT-B/2's by the model's FLOPs."""
    return measured.forward_s * analytic_flops(model) / analytic_flops(MEASURED.model)


def _fixed_s(model: Mapping[str, Any], snapshots: int, measured: ProbeMeasured) -> float:
    """A stage's start and end, its job reading ``snapshots`` snapshots (each beyond session3's two at the time one
    takes to be written: a third of a checkpoint, :data:`~maxmargin.gpu.plan.MEASURED`)."""
    read = MEASURED.checkpoint_s / 3 * block_parameters(model) / block_parameters(MEASURED.model)
    return measured.fixed_s + max(snapshots - measured.snapshots, 0) * read


def n_train(vit: Mapping[str, Any]) -> int:
    """The run's training images (``vit.data.n_train``; 0: the data set's all, where it is known)."""
    data = vit["data"]
    return data["n_train"] or DATASET_IMAGES.get(data["dataset"], (0, 0))[0]


def project_probe(vit: Mapping[str, Any], measured: ProbeMeasured = PROBE_MEASURED) -> PartsPlan:
    """Rule vit_probe on the run of the config's ``vit`` block: every snapshot's forward pass on each image set, each
    head's own W-ATT-SVM and its ``null_draws`` null (a) on the images it is solved on (``whole_train``: every training
    image), null (b) at the snapshots it is due on the first ``images``; the nuclear norm is not priced (0 in the
    GPU configs)."""
    model, train, w = vit["model"], vit["train"], vit["w_svm"]
    epochs, every = int(train["epochs"]), train["snapshot_every"]
    snaps = sorted({*range(0, epochs + 1, every), epochs}) if every > 0 else []
    sets = [n_train(vit) if w["whole_train"] and name == "train" else w["images"] for name in w["image_sets"]]
    due = [e for e in snaps if e in snaps[:1] + snaps[-1:] or (w["shuffle_every"] > 0 and e % w["shuffle_every"] == 0)]
    capped = [w["shuffles"] * solve_seconds(w["images"]) + (solve_seconds(w["images"]) if n > w["images"] else 0.0)
              for n in sets]  # fmt: skip
    heads = model["num_heads"]
    what = f"the W-ATT-SVM probe of {len(snaps)} snapshots x {heads} heads on {' and '.join(map(str, sets))} images"
    return PartsPlan(
        what,
        {
            "its start and end": _fixed_s(model, len(snaps), measured),
            "forward passes": len(snaps) * sum(sets) * _forward_s(model, measured),
            "own solves and null (a)": len(snaps) * heads * sum((1 + w["null_draws"]) * solve_seconds(n) for n in sets),
            "null (b)": len(due) * heads * sum(capped),
        },
    )


def ray_points(ray: Mapping[str, Any]) -> int:
    """The c values of the ray test's grid (vit_decisive.ray_grid): ``points`` geometric ones, c = 1 added where
    missing."""
    low, high, points = ray["low"], ray["high"], ray["points"]
    grid = [low * (high / low) ** (k / (points - 1)) for k in range(points)]
    return points + all(abs(c - 1.0) > 1e-9 for c in grid)


def project_ray(vit: Mapping[str, Any], measured: ProbeMeasured = PROBE_MEASURED) -> PartsPlan | None:
    """Rule vit_decisive_ray on the run of the config's ``vit`` block, where ``vit.decisive.parts`` has it: at each
    snapshot of ``vit.decisive.at``, the forward pass of every training image, each head's W-ATT-SVM on all of them,
    and the losses along both rays (each head alone and all, at every c) on the node's CPU at ``vit.train.threads``
    (:data:`RAY_LOSS_MS` scaled by the width squared, as the [CLS] path's matrices grow). None where not asked."""
    model, train, decisive = vit["model"], vit["train"], vit["decisive"]
    if "ray" not in decisive["parts"] or not decisive["at"] or not train["snapshot_every"]:
        return None
    n, heads, at = n_train(vit), model["num_heads"], len(decisive["at"])
    losses = 2 * (heads + 1) * ray_points(decisive["ray"])
    width = (model["embed_dim"] / MEASURED.model["embed_dim"]) ** 2
    what = f"the ray test at {at} snapshot(s) on {n:,} training images, {losses} losses"
    return PartsPlan(
        what,
        {
            "its start and end": _fixed_s(
                model, snapshot_count(int(train["epochs"]), train["snapshot_every"]), measured
            ),
            "forward passes": at * n * _forward_s(model, measured),
            "each head's W-ATT-SVM": at * heads * solve_seconds(n),
            "the losses": at * losses * n * RAY_LOSS_MS / 1e3 * width / train["threads"],
        },
    )


def plan_analyses(s: Session, config: dict) -> None:
    """The probe's and the ray test's prices (:func:`project_probe`, :func:`project_ray`) against the seconds the run's
    plan leaves before the page's reserve (session.json's ``plan``: the time left less the run and the reserve), in
    the order the session runs them, each said to fit or not with its seconds: logged and kept in session.json's
    ``plan`` (``analyses``) before anything starts. They are not gated on it (each stage still starts where its own
    start fits, and is stopped at the reserve): a card faster than the measured one does more."""
    plan, vit = s.summary["plan"], config["vit"]
    if s.request.epochs is not None:
        vit = {**vit, "train": {**vit["train"], "epochs": s.request.epochs}}
    probe = project_probe(vit) if vit["train"]["snapshot_every"] else None
    found = [part for part in (probe, project_ray(vit)) if part is not None]
    if not found or plan["n_train"] is None:
        return
    after, used, records = plan["left"] - plan["run_seconds"] - plan["reserve"], 0.0, []
    for part in found:
        used += part.seconds
        records.append({**part.record(), "fits": used <= after})
        before = f" after the {used - part.seconds:,.0f} s of the part before it" if records[:-1] else ""
        verdict = "fits" if used <= after else f"does not fit (short by {used - after:,.0f} s)"
        s.log(f"plan: {part.text()}; it {verdict} the {after:,.0f} s the run leaves before the page's reserve{before}")
    plan["analyses"] = {"after_run": round(after, 1), "parts": records}
