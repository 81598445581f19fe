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


# Parameters kept out of weight decay, as the standard ViT recipes do (DeiT, timm): norms and biases (1-d), the
# position embedding and the [CLS] token.
NO_DECAY_NAMES = ("pos_embed", "cls_token")


def _hidden(name: str, param: torch.nn.Parameter) -> bool:
    """A hidden matrix of a transformer block (qkv, proj, fc1, fc2): the weights muP scales with the width."""
    return name.startswith("blocks.") and param.ndim == 2


def param_groups(model: torch.nn.Module, settings: TrainSettings, embed_dim: int) -> list[dict[str, Any]]:
    """The optimiser's parameter groups: weight decay off for norms, biases, position embedding and [CLS]; with
    ``lr_base_width`` the hidden matrices at ``lr * lr_base_width / embed_dim`` (muP's rule for Adam), the rest
    at ``lr``. One group when neither applies, so that a plain recipe is the plain optimiser."""
    decay, width = settings.weight_decay > 0, settings.lr_base_width > 0
    if not decay and not width:
        return [{"params": list(model.parameters())}]
    groups: dict[tuple[bool, bool], list[torch.nn.Parameter]] = {}
    for name, param in model.named_parameters():
        no_decay = param.ndim <= 1 or name in NO_DECAY_NAMES
        groups.setdefault((decay and not no_decay, width and _hidden(name, param)), []).append(param)
    scale = settings.lr_base_width / embed_dim if width else 1.0
    return [
        {
            "params": params,
            "weight_decay": settings.weight_decay if decays else 0.0,
            "lr": settings.lr * (scale if hidden else 1.0),
        }
        for (decays, hidden), params in sorted(groups.items())
    ]


def make_optimizer(model: torch.nn.Module, settings: TrainSettings, embed_dim: int) -> torch.optim.Optimizer:
    """SGD with momentum, Adam or AdamW over :func:`param_groups` at the base rate ``settings.lr``.

    On a GPU, Adam and AdamW take their fused CUDA step (one kernel for every parameter, no host synchronisation);
    on the CPU the default (for-each) step.
    """
    groups = param_groups(model, settings, embed_dim)
    fused = {"fused": True} if next(model.parameters()).is_cuda else {}
    if settings.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=settings.lr, momentum=settings.momentum, weight_decay=settings.weight_decay)
    if settings.optimizer == "adam":
        return torch.optim.Adam(groups, lr=settings.lr, weight_decay=settings.weight_decay, **fused)
    if settings.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=settings.lr, weight_decay=settings.weight_decay, **fused)
    raise ValueError(f"unknown optimizer {settings.optimizer!r} (sgd, adam, adamw)")
