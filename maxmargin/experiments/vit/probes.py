"""ViT attention probes and W's record during training: accuracy passes, the [CLS] attention of the probe images
(soft-sparsity, Figure 7; the fixed image's map, Figure 6) and the last layer's key-query matrix W per epoch.

Paper: Section 4. Soft-sparsity is (||s||_1^2 / ||s||_2^2) / T of the last layer's [CLS] attention s over the T patch
tokens, averaged over heads; ||W||_F and the direction W / ||W||_F are those of the last layer's W = W_K^T W_Q.
The analyses of a finished run (each head against its max-margin solution) read its snapshots instead:
:mod:`.w_svm_probe`.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from maxmargin.experiments.vit.checkpoint import w_history_path
from maxmargin.experiments.vit.data import ImageData, normalize
from maxmargin.experiments.vit.model import cls_attention, last_attention, patch_attention, soft_sparsity
from maxmargin.experiments.vit.settings import VitSettings

# The columns of a row's full training pass (Evaluator.train_pass, qk_gradient_stats).
FULL_PASS_COLUMNS = ("train_loss_full", "train_loss_max", "train_acc_full")
SLICES = ("q", "k")  # of the fused qkv weight
GRADIENT_COLUMNS = (
    *(f"grad_rms_{n}" for n in SLICES),
    *(f"{k}_{n}" for n in SLICES for k in ("adam_sqrt_v_rms", "adam_below_eps")),
)
NO_FULL_PASS = dict.fromkeys(FULL_PASS_COLUMNS + GRADIENT_COLUMNS, math.nan)  # a metrics row without it


class Evaluator:
    """Loss/accuracy passes and the probe, batched, under the configured autocast."""

    def __init__(
        self, model: nn.Module, forward: Callable, data: ImageData, settings: VitSettings, device: torch.device
    ) -> None:
        self.model, self.forward, self.device, self.settings = model, forward, device, settings
        self.mean, self.std = data.mean.to(device), data.std.to(device)
        self.batch = 2 * settings.train.batch_size
        n_probe, idx = settings.probe.n_images, settings.probe.image_index
        if n_probe > len(data.x_test):
            raise ValueError(
                f"vit.probe.n_images is {n_probe}, but the run has {len(data.x_test)} test images ({data.name}, "
                "vit.data.n_test): lower vit.probe.n_images to at most that, or take more test images"
            )
        if not 0 <= idx < len(data.x_test):
            raise ValueError(f"vit.probe.image_index {idx} outside the {len(data.x_test)} test images")
        # The fixed Figure 6 image first, then the probe set.
        self.probe_x = normalize(
            torch.cat([data.x_test[idx : idx + 1], data.x_test[:n_probe]]).to(device), self.mean, self.std
        )

    def autocast(self) -> contextlib.AbstractContextManager:
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.settings.train.bf16)

    @torch.no_grad()
    def loss_acc(self, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
        self.model.eval()
        loss, correct = 0.0, 0
        for i in range(0, len(x), self.batch):
            xb = normalize(x[i : i + self.batch].to(self.device), self.mean, self.std)
            yb = y[i : i + self.batch].to(self.device)
            with self.autocast():
                logits = self.forward(xb).float()
            loss += float(functional.cross_entropy(logits, yb, reduction="sum"))
            correct += int((logits.argmax(-1) == yb).sum())
        self.model.train()
        return loss / len(x), correct / len(x)

    def train_pass(self, x: torch.Tensor, y: torch.Tensor) -> tuple[dict[str, float], torch.Tensor]:
        """The training loss at the current weights, in eval mode: its mean, its largest per-sample value and the
        accuracy; and the gradient of the mean loss on the last layer's fused qkv weight (3C x C).

        The theory's loss is the mean over the whole training set at one W (not the epoch's running mean over moving
        weights); its largest term says whether every sample is fit. Only the last layer's qkv weight gets a gradient
        (``torch.autograd.grad``): no parameter's ``.grad`` is touched, so the training that follows is unchanged.
        """
        self.model.eval()
        weight = last_attention(self.model).qkv.weight
        grad, total, largest, correct = torch.zeros_like(weight), 0.0, 0.0, 0
        for i in range(0, len(x), self.batch):
            xb = normalize(x[i : i + self.batch].to(self.device), self.mean, self.std)
            yb = y[i : i + self.batch].to(self.device)
            with self.autocast():
                logits = self.forward(xb).float()
            losses = functional.cross_entropy(logits, yb, reduction="none")
            grad += torch.autograd.grad(losses.sum() / len(x), weight)[0]
            total += float(losses.detach().sum())
            largest = max(largest, float(losses.detach().max()))
            correct += int((logits.detach().argmax(-1) == yb).sum())
        self.model.train()
        stats = dict(zip(FULL_PASS_COLUMNS, (total / len(x), largest, correct / len(x)), strict=True))
        return stats, grad.detach()

    def full_pass(self, x: torch.Tensor, y: torch.Tensor, optimizer: torch.optim.Optimizer) -> dict[str, float]:
        """A metrics row's full pass: :meth:`train_pass`'s loss statistics and the Q/K statistics of its gradient
        (:func:`qk_gradient_stats`)."""
        stats, grad = self.train_pass(x, y)
        return stats | qk_gradient_stats(last_attention(self.model), grad, optimizer)

    def probe(self) -> tuple[float, float, np.ndarray, float, float]:
        """Mean soft-sparsity, [CLS] self-entry and saturation over the probe set; the fixed image's map and
        self-entry. Saturation: each head's largest softmax probability of its [CLS] row (over all 1 + T tokens, as
        the theory's softmax), averaged over heads and images; 1 where every head selects one token."""
        rows = cls_attention(self.model, self.probe_x, self.batch)  # (1 + n, H, 1 + T)
        s = patch_attention(rows)
        self_entry = rows.mean(dim=1)[:, 0]
        sparsity = soft_sparsity(s[1:])
        saturation = rows[1:].amax(dim=-1).double().mean()
        return (
            float(sparsity.mean()),
            float(self_entry[1:].mean()),
            s[0].double().cpu().numpy(),
            float(self_entry[0]),
            float(saturation),
        )


def _rms(t: torch.Tensor) -> float:
    return float(t.double().square().mean().sqrt())


def qk_gradient_stats(attn: nn.Module, grad: torch.Tensor, optimizer: torch.optim.Optimizer) -> dict[str, float]:
    """Per-element statistics of the Q and K slices of a fused qkv weight: the RMS of ``grad`` (the full training
    loss's gradient, :meth:`Evaluator.train_pass`) and, under Adam/AdamW, of sqrt(v_hat) from the optimiser's
    state, v_hat = exp_avg_sq / (1 - beta2^step), with the share of elements where sqrt(v_hat) < eps.

    Adam's step on an element is lr m_hat / (sqrt(v_hat) + eps): where sqrt(v_hat) falls far below eps the step is
    about lr g / eps, so W stalls while its gradient is not zero. NaN where there is no second moment (SGD, or
    Adam before its first step).
    """
    weight, d = attn.qkv.weight, attn.num_heads * attn.head_dim
    slices = dict(zip(SLICES, (slice(0, d), slice(d, 2 * d)), strict=True))
    stats = {f"grad_rms_{name}": _rms(grad[rows]) for name, rows in slices.items()}
    state = optimizer.state.get(weight, {})
    group = next(g for g in optimizer.param_groups if any(p is weight for p in g["params"]))
    if "exp_avg_sq" not in state:
        return stats | {f"{k}_{n}": math.nan for k in ("adam_sqrt_v_rms", "adam_below_eps") for n in slices}
    step = float(state["step"])
    sqrt_v = (state["exp_avg_sq"] / (1 - group["betas"][1] ** step)).sqrt()
    for name, rows in slices.items():
        stats[f"adam_sqrt_v_rms_{name}"] = _rms(sqrt_v[rows])
        stats[f"adam_below_eps_{name}"] = float((sqrt_v[rows] < group["eps"]).double().mean())
    return stats


class WHistory:
    """The last layer's W of every epoch, as float32 blocks appended to a file beside the checkpoint.

    One block per epoch (C x C): O(1) work per epoch at any width, and a resumed run reads back exactly what an
    uninterrupted one kept in memory (the cosines are computed from the stored float32 values in both).
    """

    def __init__(self, checkpoint: str | os.PathLike[str], dim: int) -> None:
        self.path, self.dim = w_history_path(checkpoint), dim

    def blocks(self) -> int:
        return self.path.stat().st_size // (4 * self.dim * self.dim) if self.path.exists() else 0

    def truncate(self, n_epochs: int) -> bool:
        """Keep the first ``n_epochs`` blocks; False when fewer are there (the checkpoint cannot be resumed)."""
        if self.blocks() < n_epochs:
            return False
        with open(self.path, "r+b") as f:
            f.truncate(4 * self.dim * self.dim * n_epochs)
        return True

    def reset(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"")

    def append(self, w: np.ndarray) -> None:
        with open(self.path, "ab") as f:
            f.write(np.ascontiguousarray(w, dtype=np.float32).tobytes())

    def read(self) -> np.ndarray:
        """(epochs, C, C) float32."""
        return np.fromfile(self.path, dtype=np.float32).reshape(-1, self.dim, self.dim)
