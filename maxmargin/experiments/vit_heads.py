"""A ViT's last attention layer as the W-ATT-SVM sees it (beyond the paper): each head's key-query matrix with its
query-bias row (the W of Lemma 1), the [CLS] query and every token's key input of each image, and the linear algebra
of the solves on a device. Read by the W-ATT-SVM probe (:mod:`maxmargin.experiments.vit.w_svm_probe`), the decisive
experiment (:mod:`maxmargin.experiments.vit_decisive`) and the solver's benchmark; outside the ViT package, so that
the training's code fingerprint does not cover it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from maxmargin.core.w_svm_dual import NUMPY, LinearAlgebra
from maxmargin.experiments.vit.model import last_attention


def torch_linalg(device: torch.device) -> LinearAlgebra:
    """The hard-margin pivoting of :func:`~maxmargin.core.w_svm.w_att_svm` on a torch device, in float64: at width
    768 a head's working set holds thousands of margins, and each pivoting step factorises it (a GPU does it in
    milliseconds, two CPU cores in seconds)."""

    def spd_solve(sub: torch.Tensor, rhs: torch.Tensor) -> torch.Tensor | None:
        factor, info = torch.linalg.cholesky_ex(sub)
        return None if int(info) else torch.cholesky_solve(rhs[:, None], factor)[:, 0]

    return LinearAlgebra(
        array=lambda a: torch.as_tensor(np.asarray(a), dtype=torch.float64, device=device),
        numpy=lambda t: t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t),
        spd_solve=spd_solve,
        lstsq=lambda sub, rhs: torch.linalg.pinv(sub) @ rhs,
    )


def device_linalg(name: str) -> LinearAlgebra:
    """Where ``vit.w_svm.device`` puts the pivoting: numpy on cpu; torch on cuda (auto: cuda when available)."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return NUMPY if name == "cpu" else torch_linalg(torch.device(name))


def head_key_query(attn: nn.Module, query_bias: bool = True) -> np.ndarray:
    """Each head's key-query matrix with its query-bias row, Wt_h = scale [W_Q,h^T W_K,h; b_Q,h^T W_K,h]: (H, C+1, C)
    (without ``query_bias``: scale W_Q,h^T W_K,h, (H, C, C)).

    Head h's logit of query input z and key input x_t (both after the block's norm) is (W_Q,h z + b_Q,h)^T
    (W_K,h x_t + b_K,h) scale = [z; 1]^T Wt_h x_t + terms that do not depend on t (they cancel in the softmax over
    the keys): the W of Lemma 1, float64.
    """
    if not (isinstance(attn.q_norm, nn.Identity) and isinstance(attn.k_norm, nn.Identity)):
        raise NotImplementedError("Wt_h assumes no q/k normalisation (timm's qk_norm=False)")
    w, b = attn.qkv.weight.detach().double(), attn.qkv.bias.detach().double()
    heads, dh = attn.num_heads, attn.head_dim
    wq, wk = w[: heads * dh].reshape(heads, dh, -1), w[heads * dh : 2 * heads * dh].reshape(heads, dh, -1)
    rows = [wq.transpose(1, 2) @ wk]
    if query_bias:
        rows.append(b[: heads * dh].reshape(heads, 1, dh) @ wk)
    return (attn.scale * torch.cat(rows, dim=1)).cpu().numpy()


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
