"""The run a GPU session plans (docs/gpu.md, "Plan" and "Pilot"): what it costs, and the epochs that fit.

Without a pilot, the config's own run priced part by part by the figures the first session measured
(:data:`MEASURED`, :func:`project_run`); with one, the epochs that fit after it (:func:`pilot_numbers`,
:func:`plan_epochs`). :func:`wants_pilot` decides which, and refuses a run that would be cut. The run's own epochs
then check the plan as they come (:mod:`maxmargin.gpu.watch`). Standard library only: the session plans before the
kit's packages are installed, and :mod:`maxmargin.claims.sessions` reads Figure 6's epochs from here.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maxmargin.experiments.vit.settings import full_pass_epochs, row_epochs
from maxmargin.gpu import paths
from maxmargin.gpu.request import UsageError

if TYPE_CHECKING:
    from maxmargin.gpu.record import Session

EPOCH_LINE = re.compile(r"epoch (\d+): train loss .*\(([0-9.]+)s\)")


@dataclass(frozen=True)
class Measured:
    """What the first session measured on its card: the inputs of every plan made without a pilot
    (:func:`project_run`). Each figure is read from that session's files (docs/gpu/session1/: session.json, and
    session.log's lines of Snakemake and of the training job), as tests/test_gpu_results.py derives it again; the
    page's stage is the longer of sessions 1 and 2 (docs/gpu/session2/), and the kit's install was measured on a
    CPU (the node's was not logged)."""

    source: str
    card: str
    model: dict[str, Any]  # the measured model (ViT-B/2): another's rates scale by the ratio of their FLOPs per image
    gflops_per_image: float  # its training FLOPs per image, as the session counted them
    parameters: int  # its parameters (session 2's page): a checkpoint holds 3 x 4 bytes of each (model, Adam's moments)
    images_per_s: float  # training, bf16, compiled: the pilot's table
    forward_images_per_s: float  # a metrics row's passes: the run's last epoch (no checkpoint) less its training
    train_compile_s: float  # the pilot's compile time: its first trained epoch less its second (cold Inductor cache)
    eval_compile_s: float  # epoch 0 with a cold cache (the pilot's) less with a warm one (the run's)
    checkpoint_s: float  # one checkpoint of the model: the run's epochs that write one less its last, which does not
    stage_start_s: float  # Snakemake's start to its first job
    data_s: float  # rule vit_data
    job_start_s: float  # a training job's start to its epoch 0, less epoch 0 (imports, CUDA, data, model), cold
    job_end_s: float  # its last epoch to its end (the last checkpoint, the outputs)
    table_s: float  # rule vit_metrics_table
    page_s: float  # the page's stage (its panels, claims and page)
    session_start_s: float  # the session's start to its first stage (nvidia-smi, the checks), without the kit
    install_s: float  # the kit's wheels installed into a temporary folder


MEASURED = Measured(
    source="docs/gpu/session1",
    card="NVIDIA H100 80GB HBM3",
    model={"patch_size": 2, "embed_dim": 768, "depth": 12, "mlp_ratio": 4.0, "img_size": 32},
    gflops_per_image=138.283213824,
    parameters=85_271_818,
    images_per_s=2352.0425502052985,
    forward_images_per_s=4600.0,  # 11,001 images (10,000 test, 1,001 probe) in 27.9 - 60,000 / 2,352 = 2.39 s
    train_compile_s=32.9,
    eval_compile_s=20.6,  # 37.7 - 17.1
    checkpoint_s=1.32,  # mean(29.3, 29.3, 29.2, 29.2, 29.1) - 27.9
    stage_start_s=3.0,
    data_s=12.0,
    job_start_s=17.3,  # the pilot's job: 55 s to its epoch 0 line, less its 37.7 s
    job_end_s=5.0,
    table_s=3.0,
    page_s=10.6,  # session 2's (session 1's: 10.1)
    session_start_s=1.9,
    install_s=3.0,  # 35 of the kit's 38 wheels in 2.1 s on this project's CPU; the kit's cvxopt adds its 21 MB
)
# The training and test images of a data set where vit.data.n_train / n_test is 0 (all of them).
DATASET_IMAGES = {"fashion_mnist": (60_000, 10_000), "cifar10": (50_000, 10_000)}


def analytic_flops(model: Mapping[str, Any]) -> float:
    """Training (forward + backward) FLOPs per image of ``vit.model``: 3 x (2 x block parameters x tokens + 4 x depth
    x tokens^2 x width), benchmarks/vit_benchmark.py's count (138.2 G for ViT-B/2; FlopCounterMode: 138.3 G)."""
    tokens = (model["img_size"] // model["patch_size"]) ** 2 + 1
    block = block_parameters(model)
    return 3.0 * (2.0 * block * tokens + 4.0 * model["depth"] * tokens**2 * model["embed_dim"])


def block_parameters(model: Mapping[str, Any]) -> float:
    """The transformer blocks' weights of ``vit.model`` (all but 0.4 % of ViT-B/2's): what a checkpoint's size
    scales with."""
    return model["depth"] * (4 + 2 * model["mlp_ratio"]) * model["embed_dim"] ** 2


def snapshot_count(epochs: int, every: int) -> int:
    """The snapshots a run keeps: epoch 0, every ``every`` epochs and the last (0: none)."""
    return len({*range(0, epochs + 1, every), epochs}) if every > 0 else 0


def checkpoint_count(epochs: int, every: int) -> int:
    """The checkpoints a run writes: after epoch 0, every ``every`` epochs before the last, and the finished one."""
    return 2 + len(range(every, epochs, every))


@dataclass(frozen=True)
class RunPlan:
    """A run's cost by the measured figures, part by part (seconds), before it starts: :func:`project_run`."""

    epochs: int
    n_train: int | None  # None: a data set of unknown size (the plan cannot be made)
    parts: dict[str, float]  # the run's stage, in order
    session_start: float  # before the first stage: the session's start and the kit's install
    page: float  # the page's stage after it
    measured: Measured

    @property
    def run_seconds(self) -> float:
        return sum(self.parts.values())

    @property
    def total(self) -> float:
        """The whole session: its start, the run's stage and the page's."""
        return self.session_start + self.run_seconds + self.page

    def text(self) -> str:
        if self.n_train is None:
            return f"{self.epochs} epochs of a data set of unknown size: no plan without a pilot"
        parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in self.parts.items())
        return (
            f"{self.epochs} epochs of {self.n_train:,} images take about {self.run_seconds:.0f} s by the figures "
            f"measured on an {self.measured.card} ({self.measured.source}): {parts}"
        )

    def record(self) -> dict[str, Any]:
        return {
            "epochs": self.epochs,
            "n_train": self.n_train,
            "parts": {k: round(v, 1) for k, v in self.parts.items()},
            "run_seconds": round(self.run_seconds, 1),
            "session_start": round(self.session_start, 1),
            "page": round(self.page, 1),
            "total": round(self.total, 1),
            "measured": asdict(self.measured),
        }


def project_run(vit: Mapping[str, Any], measured: Measured = MEASURED) -> RunPlan:
    """The run of the config's ``vit`` block as the measured figures price it, on a bare machine (every compilation
    cold): its stage's parts (Snakemake's start, the data, the job's start, epoch 0, the compilations, the
    training at the measured images/s scaled by the model's FLOPs per image, the metrics rows and each row's pass
    over the training images with a gradient, checkpoints and snapshots at their cadences, the job's end and the
    metrics table), and the session's start and page around it.
    The figures are a card's (bf16, torch.compile): a CPU, or another card, takes what it takes, which the run's own
    epochs then show (:func:`run_projection`)."""
    model, data, train = vit["model"], vit["data"], vit["train"]
    epochs = int(train["epochs"])
    full = DATASET_IMAGES.get(data["dataset"], (None, None))
    n_train, n_test = data["n_train"] or full[0], data["n_test"] or full[1]
    fwd, scale = measured.forward_images_per_s, analytic_flops(measured.model) / analytic_flops(model)
    ckpt = measured.checkpoint_s * block_parameters(model) / block_parameters(measured.model)
    probe = vit["probe"]["n_images"] + 1  # the fixed image of Figure 6 besides
    parts = {"Snakemake's start": measured.stage_start_s, "the data": measured.data_s}
    parts["the job's start"] = measured.job_start_s
    if n_train is None or n_test is None:
        return RunPlan(epochs, None, {**parts, "training": math.inf}, 0.0, measured.page_s, measured)
    parts["epoch 0"] = (n_train + n_test + probe) / (fwd * scale)
    parts["compilation"] = (measured.eval_compile_s + measured.train_compile_s) if train["compile"] else 0.0
    parts["training"] = epochs * n_train / (measured.images_per_s * scale)
    rows = len(row_epochs(epochs, train["eval_every"]))
    parts["rows"] = (rows - 1) * (n_test + probe) / (fwd * scale)
    # the training loss with the last layer's gradient (Evaluator.train_pass) on the rows vit.train.full_pass names: a
    # forward and backward pass of every training image, as a training step costs
    passes = full_pass_epochs(epochs, train["eval_every"], train["full_pass"], vit["guard"]["direction_from"])
    parts["rows' training passes"] = len(passes) * n_train / (measured.images_per_s * scale)
    parts["checkpoints"] = checkpoint_count(epochs, train["checkpoint_every"]) * ckpt
    parts["snapshots"] = 2 * snapshot_count(epochs, train["snapshot_every"]) * ckpt / 3  # written, then gathered
    parts["the job's end and the table"] = measured.job_end_s + measured.table_s
    start = measured.session_start_s + measured.install_s
    return RunPlan(epochs, n_train, parts, start, measured.page_s, measured)


def training_rate(sidecar: Mapping[str, Any]) -> tuple[float, int] | None:
    """Training images/s of a finished run from its sidecar's times (each row's ``train_seconds`` over its
    ``epochs``: the training steps alone, without rows or checkpoints), and the epochs it covers: those after the
    first row this job trained, which carries the compilation; None where no such row is left."""
    first = sidecar.get("resumed_from_epoch") or 0
    rows = [t for t in sidecar["epoch_times"] if t["epoch"] > first]
    steady = rows[1:]
    seconds, epochs = sum(t["train_seconds"] for t in steady), sum(t["epochs"] for t in steady)
    if not steady or seconds <= 0:
        return None
    return sidecar["n_train"] * epochs / seconds, epochs


def pilot_numbers(results: Path, wall: float, device: Mapping[str, Any]) -> dict[str, Any]:
    """The pilot's table row (``results``/tables/vit_pilot.csv) with its MFU, compile time and epoch times (its log:
    one line per epoch); ``wall``: the pilot stage's seconds, ``device``: the device's numbers."""
    with (results / paths.PILOT).open() as f:
        row = next(csv.DictReader(f))
    log_text = (results / paths.PILOT_LOG).read_text()
    times = {int(e): float(t) for e, t in EPOCH_LINE.findall(log_text)}
    trained = [times[e] for e in sorted(times) if e >= 1]
    images_per_s = float(row["images_per_s"])
    flops = device.get("gflops_per_image_train", math.nan) / (1e3 * device.get("peak_tflops", math.nan))
    return {
        **row,
        "stage_seconds": wall,
        "epoch_times": times,
        "steady_epoch_seconds": float(row["epoch_seconds"]),  # the mean after the first trained epoch
        "compile_seconds": trained[0] - trained[-1] if len(trained) > 1 else None,
        "mfu": images_per_s * flops,
    }


def plan_epochs(left: float, pilot: Mapping[str, Any], forced: int | None, most: int, reserve: float) -> int:
    """The run's epochs with ``left`` seconds to go: it costs the pilot's stage less its trained epochs and its compile
    time (Inductor's cache is warm by then: on the first H100 session the run's first epoch took 2 s over a steady
    one, the pilot's 33 s), plus N steady epochs; ``reserve`` seconds stay for the page. ``forced``: given."""
    epoch, n_pilot = pilot["steady_epoch_seconds"], len(pilot["epoch_times"]) - 1
    fixed = pilot["stage_seconds"] - n_pilot * epoch - (pilot["compile_seconds"] or 0.0)
    fit = math.floor((left - reserve - fixed) / max(epoch, 1e-3))
    return forced or max(1, min(fit, most))


def fig6_epochs(epochs: int, every: int = 1) -> list[int]:
    """Five epochs of Figure 6 spread over the run, as paper.yaml's [0, 100, 200, 300, 400] over 400: each the
    epoch with a metrics row (``every``: vit.train.eval_every) nearest to k/4 of the run."""
    rows = row_epochs(epochs, every)
    return sorted({min(rows, key=lambda r: (abs(r - round(epochs * k / 4)), r)) for k in range(5)})


def wants_pilot(s: Session, config: dict) -> bool:
    """Whether a pilot plans the run. The run's cost by the measured figures (:func:`project_run`: the config's
    epochs, or GPU_SESSION_EPOCHS) is logged and kept in session.json's ``plan``. GPU_SESSION_PILOT decides where
    it is given; unset, a pilot runs where GPU_SESSION_EPOCHS is given (it measures this machine) or where the
    config's run does not fit the time left with the page's reserve (it plans the epochs that fit). No pilot and
    the config's epochs that do not fit: refused (a run that would be cut)."""
    request, reserve, vit = s.request, s.request.reserve, config["vit"]
    if request.epochs is not None:
        vit = {**vit, "train": {**vit["train"], "epochs": request.epochs}}
    plan, left = project_run(vit), s.left()
    fits = plan.n_train is not None and plan.run_seconds + reserve <= left
    verdict = "fits" if fits else "does not fit"
    s.log(f"plan: {plan.text()}; it {verdict} the {left:.0f} s left with the page's {reserve:.0f} s")
    pilot = request.pilot if request.pilot is not None else request.epochs is not None or not fits
    s.summary["plan"] = {**plan.record(), "left": round(left, 1), "reserve": reserve, "fits": fits, "pilot": pilot}
    if not pilot and request.epochs is None and not fits:
        raise UsageError(
            f"GPU_SESSION_PILOT=0 trains the config's {plan.epochs} epochs, which do not fit the {left:.0f} s left "
            "by the measured figures (session.log's plan): leave GPU_SESSION_PILOT unset so that a pilot plans the "
            "epochs that fit, or give GPU_SESSION_EPOCHS (a run resumed over several allocations)"
        )
    why = "GPU_SESSION_PILOT" if request.pilot is not None else "GPU_SESSION_EPOCHS" if request.epochs else "the plan"
    s.log(
        f"plan: a pilot measures this machine ({why})"
        if pilot
        else f"plan: no pilot ({why}): the run's own epochs check the plan as they come"
    )
    return pilot
