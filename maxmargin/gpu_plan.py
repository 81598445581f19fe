"""The run a GPU session plans (tools/gpu_session.py, docs/gpu.md), and whether what it would bring back is that run.

The plan: the epochs that fit after the pilot, or, without a pilot, the config's own run projected from the figures
the first session measured (:data:`MEASURED`, :func:`project_run`), then checked against the run's own epochs as
they come (:func:`run_projection`, :func:`probe_projection`: the rule logs' lines). The judgement: a file comes
back only when it is of the planned run (its settings, its epoch count included, and its fingerprint), and it says
whether this session trained it or an earlier one did (by what the training job's own log says it did:
:func:`job_work`); a run of other settings is another run, never brought back as this one. Standard library only:
the session imports this before the kit.
"""

from __future__ import annotations

import csv
import json
import math
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from maxmargin.files import atomic_path
from maxmargin.gpu import sha256

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


def row_epochs(epochs: int, every: int) -> list[int]:
    """The epochs with a metrics row: 0, every ``every`` epochs and the last."""
    return sorted({*range(0, epochs + 1, every), epochs})


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
    training at the measured images/s scaled by the model's FLOPs per image, the metrics rows, checkpoints and
    snapshots at their cadences, the job's end and the metrics table), and the session's start and page around it.
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
    parts["rows"] = (len(row_epochs(epochs, train["eval_every"])) - 1) * (n_test + probe) / (fwd * scale)
    parts["checkpoints"] = checkpoint_count(epochs, train["checkpoint_every"]) * ckpt
    parts["snapshots"] = 2 * snapshot_count(epochs, train["snapshot_every"]) * ckpt / 3  # written, then gathered
    parts["the job's end and the table"] = measured.job_end_s + measured.table_s
    start = measured.session_start_s + measured.install_s
    return RunPlan(epochs, n_train, parts, start, measured.page_s, measured)


_STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) ")
_EPOCH = re.compile(r" epoch (\d+): train loss ")
_HEADS = re.compile(r"W-ATT-SVM probe: heads (\d+)/(\d+)")
_PROBE_START = re.compile(r" INFO snapshots of epochs ")


def stamped(lines: Iterable[str], since: float = -math.inf) -> list[tuple[float, str]]:
    """The lines of a rule log (``2026-11-26 23:30:06,288 INFO ...``, the machine's local time) with their time in
    seconds since the epoch, from ``since`` on (an earlier attempt's lines left out)."""
    out = []
    for line in lines:
        m = _STAMP.match(line)
        if m:
            t = time.mktime(time.strptime(m[1], "%Y-%m-%d %H:%M:%S")) + int(m[2]) / 1000
            if t >= since:
                out.append((t, line))
    return out


@dataclass(frozen=True)
class Progressing:
    """Where a stage's job is, from its log's lines: ``done`` of ``total`` (epochs or heads) at time ``at``, going
    at ``rate`` per second since ``since`` (of ``done - since_done`` of them), so that it ends at ``end``."""

    done: int
    total: int
    at: float
    rate: float
    since: float
    since_done: int

    @property
    def end(self) -> float:
        return self.at + (self.total - self.done) / self.rate if self.rate > 0 else math.inf

    def by(self, when: float) -> int:
        """How many are done by ``when`` at this rate."""
        return min(self.total, self.done + max(0, math.floor((when - self.at) * self.rate)))


def run_projection(lines: Iterable[str], total: int, since: float = -math.inf, few: int = 3) -> Progressing | None:
    """The training's rate and end from its rule log's epoch lines (those read back from a checkpoint left out):
    the rate of the epochs after the first two of this job (the first carries the evaluation's compilation or a
    resumed run's training's, the second the training's), once ``few`` of them are done; None before. Every row
    and checkpoint of those epochs is in the rate. An epoch past ``total`` is no line of this run (another run
    writing into the same results root from another working directory: docs/gpu.md): left out."""
    points = [
        (t, int(m[1]))
        for t, line in stamped(lines, since)
        if (m := _EPOCH.search(line)) and "(from the checkpoint)" not in line and int(m[1]) <= total
    ]
    if len(points) < 2 + few:
        return None
    (t0, e0), (t1, e1) = points[1], points[-1]
    return Progressing(e1, total, t1, (e1 - e0) / max(t1 - t0, 1e-9), t0, e0)


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


def probe_projection(lines: Iterable[str], since: float = -math.inf) -> tuple[float | None, Progressing | None]:
    """The probe's start (its line naming the snapshots: the data and the snapshots read) and its rate and end from
    its heads' progress lines (at most one every 30 s: :class:`maxmargin.core.progress.Progress`); None for what
    its log does not say yet."""
    started, last = None, None
    for t, line in stamped(lines, since):
        if _PROBE_START.search(line):
            started = t
        elif (m := _HEADS.search(line)) and started is not None:
            last = (t, int(m[1]), int(m[2]))
    if started is None or last is None:
        return started, None
    t, done, total = last
    return started, Progressing(done, total, t, done / max(t - started, 1e-9), started, 0)


def pilot_numbers(results: Path, wall: float, device: Mapping[str, Any]) -> dict[str, Any]:
    """The pilot's table row (``results``/tables/vit_pilot.csv) with its MFU, compile time and epoch times (its log:
    one line per epoch); ``wall``: the pilot stage's seconds, ``device``: the probe's numbers."""
    with (results / "tables/vit_pilot.csv").open() as f:
        row = next(csv.DictReader(f))
    log_text = (results / "logs/vit_pilot/pilot.log").read_text()
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


def write_rows(rows: list[Mapping[str, Any]], path: Path) -> None:
    """A checkpoint's metrics rows as CSV (a cut run's table)."""
    with atomic_path(path) as tmp, tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def planned_settings(vit: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a run of the config's ``vit`` block records (its sidecar's and its checkpoint's ``settings``)."""
    from maxmargin.experiments.vit.settings import VitSettings

    return json.loads(json.dumps(VitSettings.from_config(vit).to_dict()))


def _flat(value: Any, key: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        return {k: v for name, item in value.items() for k, v in _flat(item, f"{key}.{name}" if key else name).items()}
    return {key: value}


def differences(found: Mapping[str, Any], planned: Mapping[str, Any]) -> list[str]:
    """The settings in which a run differs from the planned one, as ``key found (planned value)``."""
    a, b = _flat(found), _flat(planned)
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return [f"{k} {a.get(k, 'absent')} (planned {b.get(k, 'absent')})" for k in keys]


@dataclass
class Verdict:
    """Whether a file the session would bring back is of the run it planned (``returned``), and its record for
    session.json: the run's fingerprint, its epochs, whether this session made it, and why not where it is not."""

    returned: bool
    record: dict[str, Any]
    message: str


@dataclass(frozen=True)
class JobWork:
    """What a stage's training job did, by its own rule log (:func:`job_work`): the first epoch it trained (None:
    none), and whether it restored a finished run's outputs from its checkpoint instead."""

    trained_from: int | None
    restored: bool = False


_RESUMED = re.compile(r" INFO resuming from .* at epoch (\d+)$")
_RESTORED = " INFO restoring the outputs of the finished run "


def job_work(lines: Iterable[str], since: float) -> JobWork:
    """What the training job did, by its rule log's lines from ``since`` on (the stage's start: an earlier job's
    lines left out). It trained from epoch 0 where its first metrics row is its own (a fresh start: the
    initialisation), from k + 1 where it says it resumed at epoch k; it trained nothing where it restored a finished
    run, where it wrote no line (it did not run: Snakemake had nothing to do) or failed before its first row. The
    job's word, not a file's time: a checkpoint taken back from aside, or a file copied in, is not this session's
    training."""
    for _, line in stamped(lines, since):
        if _RESTORED in line:
            return JobWork(None, restored=True)
        if m := _RESUMED.search(line):
            return JobWork(int(m[1]) + 1)
        if (m := _EPOCH.search(line)) and "(from the checkpoint)" not in line:
            return JobWork(int(m[1]))
    return JobWork(None)


def judge_run(
    settings: Mapping[str, Any], fingerprint: str, epochs: int, planned: Mapping[str, Any], job: JobWork
) -> Verdict:
    """A run's file against the plan: the same settings (its epoch count included) is the planned run, made by this
    session where its job trained up to ``epochs`` (``job``: what the job did, by its log), else by an earlier one
    (nothing trained here: said so, and how); other settings are another run, never returned."""
    made_here = job.trained_from is not None and job.trained_from <= epochs
    record = {"fingerprint": fingerprint, "epochs": epochs, "made_here": made_here}
    wrong = differences(settings, planned)
    if wrong:
        record["status"] = "another run"
        record["differences"] = wrong
        return Verdict(False, record, f"of another run (fingerprint {fingerprint}): {'; '.join(wrong[:4])}")
    if not made_here:
        how = (
            "restored by this session's job from its finished checkpoint"
            if job.restored
            else "taken as it stood (this session's job did not run or trained no epoch)"
        )
        record["status"] = f"this run, trained by an earlier session and {how}: nothing trained here"
        return Verdict(True, record, f"of this run (fingerprint {fingerprint}), trained by an earlier session, {how}")
    record["status"] = "this session's run"
    record["trained_from"] = job.trained_from
    return Verdict(True, record, f"this session's run (fingerprint {fingerprint}, {epochs} epochs)")


def judge_finished(sidecar: Path, table: Path, planned: Mapping[str, Any], job: JobWork) -> Verdict:
    """A finished run's metrics table against the plan, by its sidecar (settings, fingerprint, the table's sha256);
    ``job``: what this session's training job did (:func:`job_work`). Its last row is the planned last epoch."""
    if not sidecar.is_file() or not table.is_file():
        return Verdict(False, {"status": "missing"}, f"{table.name} or its sidecar is missing")
    record = json.loads(sidecar.read_text())
    if record.get("metrics_table", {}).get("sha256") != sha256(table):
        return Verdict(False, {"status": "not its sidecar's table"}, f"{table} differs from its sidecar's record")
    with table.open(newline="") as f:
        epochs = max((int(row["epoch"]) for row in csv.DictReader(f)), default=-1)
    verdict = judge_run(record.get("settings", {}), str(record.get("fingerprint")), epochs, planned, job)
    if verdict.returned and epochs != planned["train"]["epochs"]:
        message = f"its last epoch is {epochs}, not the planned {planned['train']['epochs']}"
        return Verdict(False, {**verdict.record, "status": "unfinished"}, message)
    return verdict


def judge_checkpoint(state: Mapping[str, Any], planned: Mapping[str, Any], job: JobWork) -> Verdict:
    """A cut run's checkpoint (its ``settings``, ``fingerprint`` and ``epoch``) against the plan; ``job``: what this
    session's training job did (:func:`job_work`)."""
    return judge_run(state.get("settings", {}), str(state.get("fingerprint")), int(state["epoch"]), planned, job)
