"""The ViT and what the paper measures in it: the [CLS] attention probe, soft-sparsity and ||W||_F.

Paper: Section 4 ("Real experiments"), Figures 6 and 7. timm provides the VisionTransformer; this module adds
* :func:`cls_attention`: the last layer's softmax attention of the [CLS] query, recomputed by a forward hook
  from the block's own qkv projection while the model itself keeps timm's fused attention (SDPA);
* :func:`patch_attention` and :func:`soft_sparsity`: d_nnz(s) / T with d_nnz(s) = ||s||_1^2 / ||s||_2^2, over the
  T patch tokens ([CLS]'s self-entry dropped and the rest renormalised to sum to 1);
* :func:`key_query_matrix` and :func:`key_query_frobenius`: W = sum_h W_Q,h^T W_K,h of the last block.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import torch
from torch import nn

from maxmargin.experiments.vit.settings import ModelSettings


def build_vit(settings: ModelSettings) -> nn.Module:
    """timm's VisionTransformer for 32x32 images with a [CLS] token that the head reads (global_pool="token").

    Paper: Section 4, ViT-base [23] trained from scratch; patch 2 gives the 16x16 maps of Figure 6.
    """
    from timm.models.vision_transformer import VisionTransformer

    return VisionTransformer(
        img_size=settings.img_size,
        patch_size=settings.patch_size,
        in_chans=3,
        num_classes=settings.num_classes,
        embed_dim=settings.embed_dim,
        depth=settings.depth,
        num_heads=settings.num_heads,
        mlp_ratio=settings.mlp_ratio,
        qkv_bias=True,
        class_token=True,
        global_pool="token",
    )


def last_attention(model: nn.Module) -> nn.Module:
    """The attention module of the last transformer block (the layer of Figures 6 and 7)."""
    return model.blocks[-1].attn


def attention_weights(attn: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T * scale) of a timm Attention module on its input ``x`` (B, N, C): (B, heads, N, N).

    Recomputed from the module's own qkv projection and q_norm/k_norm, as timm's unfused path does.
    """
    b, n, _ = x.shape
    qkv = attn.qkv(x).reshape(b, n, 3, attn.num_heads, attn.head_dim).permute(2, 0, 3, 1, 4)
    q, k = attn.q_norm(qkv[0]), attn.k_norm(qkv[1])
    return ((q * attn.scale) @ k.transpose(-2, -1)).softmax(dim=-1)


@contextlib.contextmanager
def cls_attention_hook(model: nn.Module) -> Iterator[list[torch.Tensor]]:
    """Record the [CLS] row of the last layer's attention, (B, heads, N), for every forward pass in the block.

    A forward hook on the last block's attention module recomputes the weights from its input; the forward pass
    itself still runs timm's fused attention.
    """
    captured: list[torch.Tensor] = []

    def hook(module: nn.Module, args: tuple, kwargs: dict, output: torch.Tensor) -> None:
        if kwargs.get("attn_mask") is not None or kwargs.get("is_causal"):
            raise NotImplementedError("the [CLS] probe assumes unmasked attention")
        x = args[0] if args else kwargs["x"]
        with torch.autocast(device_type=x.device.type, enabled=False):
            captured.append(attention_weights(module, x.float())[:, :, 0, :].detach())

    handle = last_attention(model).register_forward_hook(hook, with_kwargs=True)
    try:
        yield captured
    finally:
        handle.remove()


@torch.no_grad()
def cls_attention(model: nn.Module, images: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Last-layer attention of the [CLS] query on normalised ``images``: (B, heads, 1 + T), float32, in eval mode.

    Paper: Figure 6 ("attention weights of the [CLS] token").
    """
    was_training = model.training
    model.eval()
    try:
        with cls_attention_hook(model) as captured:
            for i in range(0, len(images), batch_size):
                model(images[i : i + batch_size])
    finally:
        model.train(was_training)
    return torch.cat(captured)


def patch_attention(cls_row: torch.Tensor, num_prefix_tokens: int = 1) -> torch.Tensor:
    """Head-averaged [CLS] attention over the T patch tokens, renormalised to sum to 1: (B, T).

    Paper: Figure 6 ("the average attention map ... computed from all 12 attention heads", drawn over the 16x16
    patch grid). [CLS]'s attention to itself (the first ``num_prefix_tokens`` entries) is dropped.
    """
    s = cls_row.mean(dim=-2)[..., num_prefix_tokens:]
    return s / s.sum(dim=-1, keepdim=True)


def soft_sparsity(s: torch.Tensor) -> torch.Tensor:
    """d_nnz(s) / T = (||s||_1^2 / ||s||_2^2) / T over the last axis: 1 for uniform s, 1/T for one-hot s.

    Paper: Section 4 and Figure 7 (red curve); smaller is sparser.
    """
    s = s.double()
    return s.abs().sum(dim=-1) ** 2 / (s**2).sum(dim=-1) / s.shape[-1]


def key_query_matrix(attn: nn.Module) -> torch.Tensor:
    """The combined key-query matrix W = sum_h W_Q,h^T W_K,h (C x C) of a timm Attention module, in float64.

    Paper: Figure 7 (blue curve, "the combined key-query matrix W of the last attention layer"). Head h's logit
    of query token x and key token x' is x^T (W_Q,h^T W_K,h) x' * scale (plus bias terms); W sums these
    bilinear forms over heads (equal to W_Q^T W_K of the stacked projections) and leaves out the constant
    scale 1/sqrt(d_head) and the qkv biases.
    """
    w = attn.qkv.weight.detach().double()
    d = attn.num_heads * attn.head_dim
    wq, wk = w[:d], w[d : 2 * d]
    heads = [wq[h * attn.head_dim : (h + 1) * attn.head_dim] for h in range(attn.num_heads)]
    keys = [wk[h * attn.head_dim : (h + 1) * attn.head_dim] for h in range(attn.num_heads)]
    return sum(q.T @ k for q, k in zip(heads, keys, strict=True))


def key_query_frobenius(model: nn.Module) -> float:
    """||W||_F of the last layer's combined key-query matrix (:func:`key_query_matrix`)."""
    return float(torch.linalg.matrix_norm(key_query_matrix(last_attention(model))))


def patch_grid(model: nn.Module) -> tuple[int, int]:
    """The patch grid (rows, cols) of the model: (16, 16) for patch 2 on 32x32 images."""
    return tuple(model.patch_embed.grid_size)


def unfused_copy(model: nn.Module) -> nn.Module:
    """A deep copy of ``model`` whose attention runs timm's explicit (non-SDPA) path; for checking the probe."""
    twin = copy.deepcopy(model)
    for block in twin.blocks:
        block.attn.fused_attn = False
    return twin
