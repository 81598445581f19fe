"""Device, optimiser and learning-rate schedule of a ViT run (the config's ``vit.train``)."""

from __future__ import annotations

import math
from typing import Any

import torch

from maxmargin.experiments.vit.settings import TrainSettings


class DeviceUnavailableError(RuntimeError):
    """The config asks for CUDA and none is usable: a paper-scale run must never fall back to the CPU silently."""


def resolve_device(name: str) -> torch.device:
    """ "auto" picks CUDA when available, else the CPU; "cuda" insists on a usable GPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise DeviceUnavailableError(
            "vit.train.device is 'cuda' but CUDA is not usable here (torch.cuda.is_available() is False: "
            f"torch {torch.__version__}, CUDA build {torch.version.cuda}). Run on a GPU node, or set "
            "vit.train.device: auto (the quick scale) to train on the CPU."
        )
    return torch.device(name)


def lr_factor(step: int, total_steps: int, warmup_steps: int, schedule: str) -> float:
    """The learning rate's multiplier at ``step``: linear warm-up over ``warmup_steps``, then constant or cosine.

    Cosine decays from 1 to 0 over the steps after the warm-up (Loshchilov and Hutter's SGDR without restarts).
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    if schedule == "cosine":
        progress = (step - warmup_steps) / max(total_steps - warmup_steps, 1)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))
    raise ValueError(f"unknown vit.train.schedule {schedule!r} (constant, cosine)")


def make_scheduler(
    optimizer: torch.optim.Optimizer, settings: TrainSettings, steps_per_epoch: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """A per-step scheduler for :func:`lr_factor` (its state goes into the checkpoint)."""
    total = settings.epochs * steps_per_epoch
    warmup = round(settings.warmup_epochs * steps_per_epoch)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, total, warmup, settings.schedule))


def make_optimizer(params: Any, settings: TrainSettings) -> torch.optim.Optimizer:
    """SGD with momentum, Adam or AdamW at the fixed learning rate ``settings.lr``."""
    if settings.optimizer == "sgd":
        return torch.optim.SGD(params, lr=settings.lr, momentum=settings.momentum, weight_decay=settings.weight_decay)
    if settings.optimizer == "adam":
        return torch.optim.Adam(params, lr=settings.lr, weight_decay=settings.weight_decay)
    if settings.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay)
    raise ValueError(f"unknown optimizer {settings.optimizer!r} (sgd, adam, adamw)")
