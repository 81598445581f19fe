"""The ViT training loop: epochs, per-epoch measurements (logged to the rule's log), checkpoints and resume.

Paper: Section 4, Figures 6 and 7: the model is trained with a fixed learning rate (SGD with momentum, Adam or
AdamW), and the metrics of every epoch are measured from epoch 0 (the initialisation) on. Beyond the paper, the
direction of the last layer's key-query matrix W is followed (the theory is about W / ||W||_F): its cosine with
the previous epoch's W and with the final W.
"""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from maxmargin.core.progress import Progress, duration, progress
from maxmargin.core.w_svm import frobenius_cosine
from maxmargin.experiments.vit.checkpoint import CHECKPOINT_FORMAT, load_checkpoint, save_checkpoint
from maxmargin.experiments.vit.data import augment, normalize
from maxmargin.experiments.vit.images import ImageData
from maxmargin.experiments.vit.machine import blas_kernels, cpu_name, peak_memory_mb
from maxmargin.experiments.vit.model import (
    build_vit,
    key_query_matrix,
    last_attention,
    patch_grid,
    soft_sparsity,
)
from maxmargin.experiments.vit.optim import make_optimizer, make_scheduler, resolve_device
from maxmargin.experiments.vit.probes import NO_FULL_PASS, Evaluator, WHistory
from maxmargin.experiments.vit.results import TrainResult
from maxmargin.experiments.vit.settings import GuardSettings, VitSettings, row_epochs
from maxmargin.experiments.vit.snapshots import Snapshots, snapshot_epochs

log = logging.getLogger("maxmargin")


def rng_state(generator: torch.Generator) -> dict[str, Any]:
    """The random states a resumed run needs to continue as an uninterrupted one: torch's, the loop's generator's
    (shuffling, augmentation) and CUDA's."""
    state = {"torch": torch.get_rng_state(), "generator": generator.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any], generator: torch.Generator) -> None:
    torch.set_rng_state(state["torch"])
    generator.set_state(state["generator"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@dataclass
class _History:
    """The record of a run, one entry per evaluated epoch (``vit.train.eval_every``): metrics rows, wall-clock
    times, the Figure 6 maps and [CLS] self-entries of the fixed image. The times are kept apart from the metrics,
    which do not depend on the machine's speed; each covers the epochs since the previous entry (``epochs``)."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    times: list[dict[str, float]] = field(default_factory=list)
    maps: list[np.ndarray] = field(default_factory=list)
    selfs: list[float] = field(default_factory=list)

    def append(self, row: dict[str, Any], times: dict[str, float], fixed_map: np.ndarray, fixed_self: float) -> None:
        self.rows.append(row)
        self.times.append(times)
        self.maps.append(fixed_map)
        self.selfs.append(fixed_self)


class _Trainer:
    """One ViT run: model, optimiser, schedule and evaluator on one device; epochs, measurements, checkpoints."""

    def __init__(self, settings: VitSettings, data: ImageData, checkpoint: str | os.PathLike[str]) -> None:
        ts = self.ts = settings.train
        self.settings, self.data, self.checkpoint = settings, data, checkpoint
        self.device = resolve_device(ts.device)
        torch.set_num_threads(ts.threads)  # fixed by the config: the numbers do not depend on --cores
        torch.manual_seed(ts.seed)
        self.model = build_vit(settings.model).to(self.device)
        self.optimizer = make_optimizer(self.model, ts, settings.model.embed_dim)
        self.n_batches = math.ceil(len(data.x_train) / ts.batch_size)
        self.scheduler = make_scheduler(self.optimizer, ts, self.n_batches)
        self.forward: Callable = torch.compile(self.model) if ts.compile else self.model
        self.generator = torch.Generator().manual_seed(ts.seed + 1)  # shuffling and augmentation
        self.ev = Evaluator(self.model, self.forward, data, settings, self.device)
        self.x_train, self.y_train = data.x_train.to(self.device), data.y_train.to(self.device)
        self.fingerprint = settings.fingerprint(data.identity)
        self.history = _History()
        self.w_history = WHistory(checkpoint, settings.model.embed_dim)
        self.previous_w: np.ndarray | None = None
        self.snapshots = Snapshots(checkpoint)
        self.snapshot_epochs = snapshot_epochs(ts.epochs, ts.snapshot_every)
        self.rows = set(row_epochs(ts.epochs, ts.eval_every))
        self.full_passes = set(settings.full_pass_epochs())
        # the wall time and the training since the last metrics row (its times entry)
        self.row_started, self.pending = time.perf_counter(), {"train_seconds": 0.0, "epochs": 0}

    def key_query(self) -> np.ndarray:
        """The last layer's W, in float64."""
        return key_query_matrix(last_attention(self.model)).cpu().numpy()

    def evaluated(self, epoch: int) -> bool:
        """Whether ``epoch`` gets a metrics row (``vit.train.eval_every``; epoch 0 and the last always do)."""
        return epoch in self.rows

    def measure(self, epoch: int, train_loss: float, train_acc: float) -> None:
        """Test accuracy, probe, ||W||_F and W's cosine with the previous row's, and the full pass
        (the training loss at the weights of ``epoch`` and its Q/K gradient statistics, :meth:`.Evaluator.full_pass`)
        on the rows ``vit.train.full_pass`` names, NaN on the others: one more row."""
        _, test_acc = self.ev.loss_acc(self.data.x_test, self.data.y_test)
        due = epoch in self.full_passes
        full = self.ev.full_pass(self.x_train, self.y_train, self.optimizer) if due else NO_FULL_PASS
        sparsity, self_mean, fixed_map, fixed_self, saturation = self.ev.probe()
        w = self.key_query()
        w32 = w.astype(np.float32)  # as the W history stores it: a resumed run computes the same cosines
        self.w_history.append(w32)
        row = {
            "epoch": epoch,
            "train_loss": train_loss,
            "train_acc": train_acc,
            "test_acc": test_acc,
            "soft_sparsity": sparsity,
            "soft_sparsity_image": float(soft_sparsity(torch.from_numpy(fixed_map))),
            "w_frobenius": float(np.linalg.norm(w)),
            "w_cosine_previous": math.nan if self.previous_w is None else frobenius_cosine(self.previous_w, w32),
            "w_cosine_final": math.nan,  # known once the run ends (finish)
            "cls_self_attention": self_mean,
            "cls_max_attention": saturation,
            **full,
            "lr": self.optimizer.param_groups[0]["lr"],
            "dataset": self.data.name,
        }
        self.previous_w = w32
        self.history.append(row, {"epoch": epoch, **self.pending}, fixed_map, fixed_self)
        self._close_row()

    def _close_row(self) -> None:
        """Charge the wall time since the last row to the newest row (its ``epoch_seconds``), and start anew."""
        now = time.perf_counter()
        times = self.history.times[-1]
        times["epoch_seconds"] = times.get("epoch_seconds", 0.0) + now - self.row_started
        self.row_started, self.pending = now, {"train_seconds": 0.0, "epochs": 0}

    def save(self, epoch: int, finished: bool = False) -> None:
        """Checkpoint after ``epoch`` (one file, replaced atomically); its write is timed with the epoch's row."""
        h = self.history
        save_checkpoint(
            self.checkpoint,
            {
                "format": CHECKPOINT_FORMAT,
                "fingerprint": self.fingerprint,
                "settings": self.settings.to_dict(),
                "epoch": epoch,
                "finished": finished,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "rng": rng_state(self.generator),
                "metrics": h.rows,
                "times": h.times,
                "maps": torch.from_numpy(np.stack(h.maps)),
                "cls_self": torch.tensor(h.selfs),
            },
        )
        if h.rows[-1]["epoch"] == epoch:
            self._close_row()

    def due(self, epoch: int) -> bool:
        """Whether the checkpoint cadence (``vit.train.checkpoint_every``) writes one after ``epoch`` (the last
        epoch's is written by :func:`train_vit` once the run is finished)."""
        return epoch % self.ts.checkpoint_every == 0 and epoch < self.ts.epochs

    def resume(self, restore: bool) -> int | None:
        """Load this run's checkpoint (a finished one only with ``restore``); its epoch, or None for a fresh start."""
        state = load_checkpoint(self.checkpoint, self.fingerprint, restore)
        if state is None:
            return None
        epoch, rows = int(state["epoch"]), list(state["metrics"])
        kept = [e for e in self.snapshot_epochs if e <= epoch]
        if not state.get("finished") and not self.w_history.truncate(len(rows)):
            log.warning("%s lacks epochs of the checkpoint %s; starting afresh", self.w_history.path, self.checkpoint)
            return None
        self.snapshots.truncate(epoch)
        if self.snapshots.epochs() != kept:
            log.warning("%s lacks snapshots of the checkpoint %s; starting afresh", self.snapshots.folder, epoch)
            return None
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"], self.generator)
        self.history = _History(rows, list(state["times"]), list(state["maps"].numpy()), state["cls_self"].tolist())
        if not state.get("finished"):
            self.previous_w = self.w_history.read()[-1]
        # Snakemake empties the rule log before each attempt: the resumed run's log still tells the whole run.
        for row, times in zip(self.history.rows, self.history.times, strict=True):
            log.info("%s (from the checkpoint)", epoch_line(row, times))
        if state.get("finished"):
            log.info(
                "restoring the outputs of the finished run in %s: no training (snakemake --forcerun vit_train "
                "trains again)",
                self.checkpoint,
            )
        else:
            log.info("resuming from %s at epoch %d", self.checkpoint, epoch)
        return epoch

    def start(self) -> None:
        """Epoch 0, the initialisation: its row (the train loss/accuracy a full pass), snapshot and checkpoint."""
        self.w_history.reset()
        self.snapshots.reset()
        train_loss, train_acc = self.ev.loss_acc(self.data.x_train, self.data.y_train)
        if 0 in self.snapshot_epochs:
            self.snapshots.save(0, self.model)
        self.measure(0, train_loss, train_acc)
        self.save(0)
        progress("%s", epoch_line(self.history.rows[-1], self.history.times[-1]))

    def train_epoch(self, epoch: int) -> tuple[float, float]:
        """One pass over the shuffled training set; the mean loss and accuracy of its mini-batches.

        Loss and accuracy accumulate on the device and are read back once per epoch: no host sync per step.
        """
        ts, device = self.ts, self.device
        order = torch.randperm(len(self.x_train), generator=self.generator).to(device)
        loss_sum, correct = torch.zeros((), device=device), torch.zeros((), device=device, dtype=torch.int64)
        self.model.train()
        bar = Progress(f"epoch {epoch}/{ts.epochs}: batch", self.n_batches)
        for i in range(self.n_batches):
            idx = order[i * ts.batch_size : (i + 1) * ts.batch_size]
            xb = normalize(self.x_train[idx], self.ev.mean, self.ev.std)
            if self.settings.data.augment:
                xb = augment(xb, self.generator)
            yb = self.y_train[idx]
            with self.ev.autocast():
                logits = self.forward(xb)
                loss = functional.cross_entropy(logits.float(), yb)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if ts.grad_clip > 0:
                nn.utils.clip_grad_norm_(self.model.parameters(), ts.grad_clip)
            self.optimizer.step()
            self.scheduler.step()
            loss_sum += loss.detach() * len(idx)
            correct += (logits.detach().argmax(-1) == yb).sum()
            if i + 1 < self.n_batches:  # the epoch's line follows the last batch
                bar.update(i + 1)
        n = len(self.x_train)
        return float(loss_sum) / n, int(correct) / n

    def finish(self) -> None:
        """The cosine of every row's W with the final W (the direction the run settles on, or not)."""
        ws = self.w_history.read()
        if len(ws) != len(self.history.rows):
            raise RuntimeError(f"{self.w_history.path} holds {len(ws)} epochs, the run {len(self.history.rows)}")
        for row, w in zip(self.history.rows, ws, strict=True):
            row["w_cosine_final"] = frobenius_cosine(w, ws[-1])


def epoch_line(row: dict[str, Any], times: dict[str, float]) -> str:
    """The rule log's line for one metrics row."""
    return (
        f"epoch {row['epoch']}: train loss {row['train_loss']:.4f} acc {row['train_acc']:.3f}, test acc "
        f"{row['test_acc']:.3f}, soft-sparsity {row['soft_sparsity']:.4f}, ||W||_F {row['w_frobenius']:.3f}, "
        f"cos(W, previous W) {row['w_cosine_previous']:.4f} ({times['epoch_seconds']:.1f}s)"
    )


def check_learning(rows: list[dict[str, Any]], guard: GuardSettings, num_classes: int) -> str | None:
    """A warning when test accuracy is still within ``guard.margin`` of chance after ``guard.after_epochs`` epochs.

    A ViT that learned nothing can still concentrate its attention and grow ||W||_F (Adam at 3e-3 at width 768
    does), so Figure 7 alone does not show that the model learned.
    """
    chance = 1.0 / num_classes
    due = [r for r in rows if r["epoch"] == guard.after_epochs]
    if not due or due[0]["test_acc"] >= chance + guard.margin:
        return None
    return (
        f"after {guard.after_epochs} epochs the ViT's test accuracy is {due[0]['test_acc']:.3f}, within "
        f"{guard.margin:g} of chance ({chance:.3f}): it is not learning, and its Figure 7 would not mean "
        "anything; see docs/vit.md for recipes that learn"
    )


def _epoch(run: _Trainer, epoch: int, epochs: Progress) -> None:
    """Train one epoch; keep its snapshot, measure it and checkpoint it when due; report it with the time left."""
    t0 = time.perf_counter()
    train_loss, train_acc = run.train_epoch(epoch)
    run.pending["train_seconds"] += time.perf_counter() - t0
    run.pending["epochs"] += 1
    if not math.isfinite(train_loss):
        raise FloatingPointError(f"training diverged at epoch {epoch} (loss {train_loss})")
    if epoch in run.snapshot_epochs:
        run.snapshots.save(epoch, run.model)
    if run.evaluated(epoch):
        run.measure(epoch, train_loss, train_acc)
    if run.due(epoch):
        run.save(epoch)
    row, times = run.history.rows[-1], run.history.times[-1]
    line = (
        epoch_line(row, times)
        if row["epoch"] == epoch
        else f"epoch {epoch}: train loss {train_loss:.4f} acc {train_acc:.3f} ({time.perf_counter() - t0:.1f}s)"
    )
    progress("%s; %s", line, epochs.text(epoch), final=epoch == epochs.total, milestone=True)
    if row["epoch"] != epoch:
        return
    if (message := check_learning([row], run.settings.guard, run.settings.model.num_classes)) is not None:
        log.warning(message)
        warnings.warn(message, LearningStalledWarning, stacklevel=3)


def train_vit(
    settings: VitSettings, data: ImageData, checkpoint: str | os.PathLike[str], restore: bool = False
) -> TrainResult:
    """Train the ViT, measuring the [CLS] attention and W every ``eval_every`` epochs and keeping the model every
    ``snapshot_every`` (paper: Section 4, Figures 6-7).

    Epoch 0 is the initialisation (its train loss/accuracy is a full pass over the training set; later rows
    report the running mean over the epoch's mini-batches). A checkpoint (model, optimiser, schedule, RNG states,
    metrics so far, settings) is written atomically every ``checkpoint_every`` epochs; a rerun of an unfinished run
    with the same settings, data and training code resumes from it and gives the same metrics on the CPU. A
    finished run's checkpoint is never resumed: a rerun trains again from epoch 0, unless ``restore``, which
    returns the finished run's result without training (outputs lost after training come back in seconds).
    """
    t_start = time.perf_counter()
    run = _Trainer(settings, data, checkpoint)
    resumed = run.resume(restore)
    if resumed is None:
        run.start()
    first = 1 if resumed is None else resumed + 1
    epochs = Progress("epochs", settings.train.epochs, done=first - 1)
    for epoch in range(first, settings.train.epochs + 1):
        _epoch(run, epoch, epochs)
    if first <= settings.train.epochs:  # trained now: the final W is known
        run.finish()
        run.save(settings.train.epochs, finished=True)
    return _result(run, resumed, time.perf_counter() - t_start)


class LearningStalledWarning(UserWarning):
    """The ViT's test accuracy stays at chance (see :func:`check_learning`)."""


def _result(run: _Trainer, resumed: int | None, seconds: float) -> TrainResult:
    """The :class:`TrainResult` of a finished run, with the sidecar's description of what was measured."""
    data, h, idx = run.data, run.history, run.settings.probe.image_index
    info = {
        "dataset": data.name,
        "dataset_note": data.note,
        "dataset_digest": data.digest,
        "classes": data.classes,
        "n_train": len(data.x_train),
        "n_test": len(data.x_test),
        "n_probe": len(run.ev.probe_x) - 1,
        "device": str(run.device),
        "device_name": torch.cuda.get_device_name(run.device) if run.device.type == "cuda" else cpu_name(),
        "cpu": cpu_name(),
        "blas": blas_kernels(),
        "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "optimizer": run.ts.optimizer,
        "n_parameters": sum(p.numel() for p in run.model.parameters()),
        "patch_tokens": int(h.maps[0].shape[0]),
        "steps": run.n_batches * run.ts.epochs,
        "resumed_from_epoch": resumed,
        "seconds_this_call": seconds,
        "seconds_this_call_text": duration(seconds),
        "fingerprint": run.fingerprint,
        "peak_memory_mb": peak_memory_mb(run.device),
    }
    return TrainResult(
        metrics=h.rows,
        times=h.times,
        maps=np.stack(h.maps),
        cls_self=np.asarray(h.selfs),
        image=data.x_test[idx].permute(1, 2, 0).numpy().copy(),
        label=int(data.y_test[idx]),
        grid=patch_grid(run.model),
        info=info,
        snapshots=run.snapshots,
        snapshot_epochs=run.snapshot_epochs,
    )
