"""The decisive experiment's frozen last layer (part of :mod:`maxmargin.experiments.vit_decisive`): a
snapshot's last-layer inputs computed once, the [CLS] path after them recomputed in float64 for any W, and the
network's training loss at that W.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from maxmargin.core.w_svm import query_inputs
from maxmargin.experiments.vit.model import last_attention
from maxmargin.experiments.vit_heads import head_key_query

Array = NDArray[np.float64]


# ----------------------------------------------------------------------------------------------- the frozen layer


class ClsTail(nn.Module):
    """The [CLS] path of a timm ViT after its last layer's attention, in float64:

    o -> y = r + ls1(proj(norm_attn(o))) -> y + ls2(MLP(norm2(y))) -> head(fc_norm(norm(.)))

    with o the concatenated heads' attention outputs of [CLS] and r the [CLS] row of the last block's input (the
    residual): the network's class logits once the last layer's inputs are fixed (global_pool="token")."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        block = net.blocks[-1]
        self.attn_norm, self.proj, self.ls1 = block.attn.norm, block.attn.proj, block.ls1
        self.norm2, self.mlp, self.ls2 = block.norm2, block.mlp, block.ls2
        self.norm, self.fc_norm, self.head = net.norm, net.fc_norm, net.head
        self.requires_grad_(False)

    def forward(self, o: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        y = residual + self.ls1(self.proj(self.attn_norm(o)))
        y = y + self.ls2(self.mlp(self.norm2(y)))
        return self.head(self.fc_norm(self.norm(y)))


@dataclass(frozen=True)
class FrozenLayer:
    """The last layer's inputs on n images, computed once (float64): the query inputs a_i = [z_i; 1] (n, C + 1)
    (z_i without ``query_bias``), every token's key input x_it (n, N, C) ([CLS] first, after the block's norm), the
    heads' values W_V,h x_it + b_V,h (n, H, N, d_h), the [CLS] residual r_i (n, C), the labels (n,) and the tail,
    (o, r) -> class logits (a snapshot's :class:`ClsTail`; a test plants its own)."""

    query: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    residual: torch.Tensor
    labels: torch.Tensor
    tail: nn.Module

    def numpy_inputs(self) -> tuple[Array, Array]:
        """z (n, C) and x (n, N, C) as the W-ATT-SVM solver takes them."""
        return self.keys[:, 0].numpy(), self.keys.numpy()


def _check_supported(net: nn.Module) -> None:
    """The recomputed path assumes timm's plain [CLS] ViT: token pooling, no q/k norms, no gate, no attention
    pooling."""
    attn = last_attention(net)
    plain = isinstance(attn.q_norm, nn.Identity) and isinstance(attn.k_norm, nn.Identity)
    if getattr(net, "global_pool", None) != "token" or getattr(net, "attn_pool", None) is not None:
        raise NotImplementedError("the frozen [CLS] path assumes global_pool='token' without attention pooling")
    if not plain or getattr(attn, "gate", None) is not None:
        raise NotImplementedError("the frozen [CLS] path assumes no q/k normalisation and no gate")


@torch.no_grad()
def freeze_last_layer(
    model: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    query_bias: bool = True,
    dtype: torch.dtype = torch.float32,
) -> FrozenLayer:
    """The last layer's inputs of ``model`` on normalised ``images`` (eval mode), computed once: the block's input X
    (a pre-hook), x = norm1(X), z = x_0, a = [z; 1], the heads' values and r = X_0. The network up to the last block
    runs at ``dtype`` (float32, the precision it was trained at, a third of float64's time; float64 pins the path
    to timm's logits end to end); from X on, everything is float64."""
    _check_supported(model)
    net, net64 = copy.deepcopy(model).to(dtype).eval(), copy.deepcopy(model).double().eval()
    captured: list[torch.Tensor] = []
    handle = net.blocks[-1].register_forward_pre_hook(lambda module, args: captured.append(args[0].double()))
    try:
        for i in range(0, len(images), batch_size):
            net.forward_features(images[i : i + batch_size].to(dtype))
    finally:
        handle.remove()
    inputs, block, attn = torch.cat(captured), net64.blocks[-1], last_attention(net64)
    x = block.norm1(inputs)
    n, tokens, width = x.shape
    values = nn.functional.linear(x, attn.qkv.weight[2 * width :], attn.qkv.bias[2 * width :])
    values = values.reshape(n, tokens, attn.num_heads, attn.head_dim).transpose(1, 2).contiguous()
    query = torch.as_tensor(query_inputs(x[:, 0].numpy(), query_bias))
    return FrozenLayer(query, x.contiguous(), values, inputs[:, 0].clone(), labels.clone(), ClsTail(net64))


def head_logits(query: torch.Tensor, keys: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The heads' [CLS] logits l_iht = a_i^T W_h x_it: (n, H, N) from a (n, C + 1), x (n, N, C), W (H, C + 1, C)."""
    return torch.einsum("nhd,ntd->nht", torch.einsum("nc,hcd->nhd", query, w), keys)


def attention_output(logits: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """o_ih = sum_t s_iht v_iht (s = softmax_t l_ih), concatenated over heads: (n, H d_h).

    Written as o = v_m + sum_t s_t (v_t - v_m), m = argmax_t s_t: the same value, but its gradient
    s_t <g, v_t - o> reaches the selected token without the cancellation 1 - s_m that zeroes it once the softmax
    saturates (autograd then gets the direction right at any ||W||)."""
    s = torch.softmax(logits, dim=-1)
    top = logits.argmax(dim=-1, keepdim=True).detach()
    v_top = values.gather(2, top[..., None].expand(-1, -1, 1, values.shape[-1]))
    o = v_top[:, :, 0] + torch.einsum("nht,nhtd->nhd", s, values - v_top)
    return o.reshape(len(o), -1)


def class_logits(frozen: FrozenLayer, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The network's class logits (n, K) with the last layer's key-query matrices ``w`` (H, C + 1, C), and the
    heads' [CLS] attention logits (n, H, N)."""
    logits = head_logits(frozen.query, frozen.keys, w)
    return frozen.tail(attention_output(logits, frozen.values), frozen.residual), logits


@dataclass(frozen=True)
class NetworkLoss:
    """The training loss L(W) = 1/n sum_i CE(f_W(X_i), y_i) (a tensor, for autograd), the accuracy, and each
    head's saturation: its largest [CLS] softmax probability, averaged over the images (H,)."""

    loss: torch.Tensor
    accuracy: float
    saturation: Array


def network_loss(frozen: FrozenLayer, w: torch.Tensor) -> NetworkLoss:
    """:class:`NetworkLoss` of the frozen network at key-query matrices ``w``."""
    out, logits = class_logits(frozen, w)
    loss = nn.functional.cross_entropy(out, frozen.labels)
    accuracy = float((out.argmax(dim=1) == frozen.labels).double().mean())
    saturation = torch.softmax(logits.detach(), dim=-1).amax(dim=-1).mean(dim=0).numpy()
    return NetworkLoss(loss, accuracy, saturation)


def snapshot_layer(
    net: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    query_bias: bool,
    dtype: torch.dtype = torch.float32,
) -> tuple[FrozenLayer, Array]:
    """The frozen last layer of ``net`` (a snapshot's model) on normalised ``images`` and its heads' trained key-query
    matrices W_h = Wt_h (:func:`~maxmargin.experiments.vit_heads.head_key_query`), (H, C + 1, C)."""
    frozen = freeze_last_layer(net, images, labels, batch_size, query_bias, dtype)
    return frozen, head_key_query(last_attention(net), query_bias)
