"""ViT attention probes and W's record during training: accuracy passes, the [CLS] attention of the probe images
(soft-sparsity, Figure 7; the fixed image's map, Figure 6) and the last layer's key-query matrix W per epoch.

Paper: Section 4. Soft-sparsity is (||s||_1^2 / ||s||_2^2) / T of the last layer's [CLS] attention s over the T patch
tokens, averaged over heads; ||W||_F and the direction W / ||W||_F are those of the last layer's W = W_K^T W_Q.
Beyond the paper, :class:`WSvmProbe`: the cosine of each head's key-query matrix with its max-margin solution
(W-ATT-SVM, Lemma 1; :mod:`maxmargin.core.w_svm`) on the probe images.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from maxmargin.core.w_svm import frobenius_cosine, w_att_svm, w_logits
from maxmargin.experiments.vit.checkpoint import w_history_path
from maxmargin.experiments.vit.data import ImageData, normalize
from maxmargin.experiments.vit.model import cls_attention, last_attention, patch_attention, soft_sparsity
from maxmargin.experiments.vit.settings import VitSettings


class Evaluator:
    """Loss/accuracy passes and the probe, batched, under the configured autocast."""

    def __init__(
        self, model: nn.Module, forward: Callable, data: ImageData, settings: VitSettings, device: torch.device
    ) -> None:
        self.model, self.forward, self.device, self.settings = model, forward, device, settings
        self.mean, self.std = data.mean.to(device), data.std.to(device)
        self.batch = 2 * settings.train.batch_size
        n_probe = min(settings.probe.n_images, len(data.x_test))
        idx = settings.probe.image_index
        if not 0 <= idx < len(data.x_test):
            raise ValueError(f"probe.image_index {idx} outside the {len(data.x_test)} test images")
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

    def probe(self) -> tuple[float, float, np.ndarray, float]:
        """Mean soft-sparsity and [CLS] self-entry over the probe set; the fixed image's map and self-entry."""
        rows = cls_attention(self.model, self.probe_x, self.batch)  # (1 + n, H, 1 + T)
        s = patch_attention(rows)
        self_entry = rows.mean(dim=1)[:, 0]
        sparsity = soft_sparsity(s[1:])
        return (float(sparsity.mean()), float(self_entry[1:].mean()), s[0].double().cpu().numpy(), float(self_entry[0]))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """<a, b> / (||a|| ||b||) of two matrices (Frobenius), in float64."""
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


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


def head_key_query(attn: nn.Module) -> np.ndarray:
    """Each head's key-query matrix with its query-bias row, Wt_h = scale [W_Q,h^T W_K,h; b_Q,h^T W_K,h]: (H, C+1, C).

    Head h's logit of query input z and key input x_t (both after the block's norm) is (W_Q,h z + b_Q,h)^T
    (W_K,h x_t + b_K,h) scale = [z; 1]^T Wt_h x_t + terms that do not depend on t (they cancel in the softmax over
    the keys): the W of Lemma 1, float64.
    """
    if not (isinstance(attn.q_norm, nn.Identity) and isinstance(attn.k_norm, nn.Identity)):
        raise NotImplementedError("Wt_h assumes no q/k normalisation (timm's qk_norm=False)")
    w, b = attn.qkv.weight.detach().double(), attn.qkv.bias.detach().double()
    heads, dh = attn.num_heads, attn.head_dim
    wq, wk = w[: heads * dh].reshape(heads, dh, -1), w[heads * dh : 2 * heads * dh].reshape(heads, dh, -1)
    bq = b[: heads * dh].reshape(heads, 1, dh)
    return (attn.scale * torch.cat([wq.transpose(1, 2) @ wk, bq @ wk], dim=1)).cpu().numpy()


@torch.no_grad()
def attention_inputs(model: nn.Module, images: torch.Tensor, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The last attention layer's inputs (after the block's norm) on normalised ``images``, float64, in eval mode:
    the [CLS] query input z (n, C) and every token's key input x (n, 1 + T, C), [CLS] first."""
    captured: list[torch.Tensor] = []

    def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
        captured.append((args[0] if args else kwargs["x"]).detach().double())

    was_training = model.training
    model.eval()
    handle = last_attention(model).register_forward_pre_hook(hook, with_kwargs=True)
    try:
        for i in range(0, len(images), batch_size):
            model(images[i : i + batch_size])
    finally:
        handle.remove()
        model.train(was_training)
    x = torch.cat(captured).cpu().numpy()
    return x[:, 0], x


class WSvmProbe:
    """Per head of the last layer: cos(Wt_h, W_mm,h) (Frobenius) with W_mm,h the Frobenius (W-ATT-SVM) of the
    tokens the head selects (o_i = argmax_t [z_i; 1]^T Wt_h x_it, over [CLS] and the patches) on the first
    ``probe.w_svm_images`` probe images; at epoch 0 (the initialisation: the null), every ``probe.w_svm_every``
    epochs and at the last. A random W selects its own tokens too, so the null is not 0."""

    def __init__(self, settings: VitSettings, images: torch.Tensor, batch_size: int) -> None:
        self.probe, self.epochs, self.threads = settings.probe, settings.train.epochs, settings.train.threads
        self.images, self.batch_size = images[: settings.probe.w_svm_images], batch_size

    def due(self, epoch: int) -> bool:
        every = self.probe.w_svm_every
        return every > 0 and (epoch % every == 0 or epoch == self.epochs)

    def measure(self, model: nn.Module, epoch: int) -> list[dict[str, Any]]:
        """One row per head (the columns of registry table ``vit_w_svm`` but ``cosine_init``)."""
        from threadpoolctl import threadpool_limits

        z, x = attention_inputs(model, self.images, self.batch_size)
        rows = []
        with threadpool_limits(self.threads):  # as many BLAS threads as torch's: oversubscription costs 10x
            for head, w in enumerate(head_key_query(last_attention(model))):
                t0 = time.perf_counter()
                selected = w_logits(w, z, x).argmax(axis=1)
                res = w_att_svm(z, x, selected, soft_c=self.probe.w_svm_soft_c)
                rows.append(
                    {
                        "epoch": epoch,
                        "head": head,
                        "cosine": frobenius_cosine(w, res.solution),
                        "hard_margin": res.hard,
                        "margins_met": res.met,
                        "n_constraints": res.n_constraints,
                        "support": res.support,
                        "w_frobenius": float(np.linalg.norm(w)),
                        "svm_frobenius": float(np.linalg.norm(res.solution)),
                        "selected_cls": float(np.mean(selected == 0)),
                        "seconds": time.perf_counter() - t0,
                    }
                )
        return rows
