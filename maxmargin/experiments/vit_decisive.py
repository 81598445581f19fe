"""Beyond the paper: the decisive experiment on a finished ViT run's snapshots, never retraining (issue 59, item 6;
rules vit_decisive_ray and vit_decisive_gd, docs/vit.md).

Theorems 1-3 say that W / ||W|| converges to the W-ATT-SVM solution W_mm of the tokens W selects, provided those
tokens are locally optimal (Definition 2). Whether a trained ViT's last layer meets that premise, and whether its
heads would converge if its tokens stood still, is asked three ways at one snapshot:

(a) the ray test: the network's training loss L(W) (cross-entropy on every training image, only the last layer's
    key-query matrices changed) along c W_h and along c W_mm,h ||W_h||_F / ||W_mm,h||_F, c on a geometric grid, for
    each head alone (the others at their trained W) and all heads together. With locally-optimal selections the
    loss falls along the max-margin ray;
(b) GD on W only, the tokens frozen: every parameter fixed but the last layer's W_h, parametrised directly as
    (C + 1) x C matrices (the theory's W, not W_Q^T W_K); the last layer's inputs are computed once and the [CLS]
    path after them (attention with the fixed values, proj, residual, MLP, final norm, classifier) is recomputed in
    float64 at every step; plain and normalised GD;
(c) the paper's one-layer model f(X) = v^T X^T softmax(X W^T a) (a = [z; 1]) on the real last-layer tokens, v fixed,
    binary labels Y_i, logistic loss; plain and normalised GD on W.

Head h's logit of key input x_t for the [CLS] query input z is a^T W_h x_t (+ terms constant over t, which the
softmax drops): :func:`~maxmargin.experiments.vit.w_svm_probe.head_key_query`.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from maxmargin.core.model import grad_p, risk
from maxmargin.core.progress import Progress
from maxmargin.core.svm import NEIGHBOR_TOL
from maxmargin.core.w_svm import WSVMResult, frobenius_cosine, query_inputs, w_att_svm, w_margins
from maxmargin.experiments.vit.model import build_vit, last_attention
from maxmargin.experiments.vit.w_svm_probe import device_linalg, head_key_query

Array = NDArray[np.float64]


@dataclass(frozen=True)
class DecisiveSettings:
    """The config's ``vit.decisive``: which snapshots (``at``: fractions of the run's epochs), the ray test's grid
    and flatness tolerance, the GD arms of the frozen ViT (``frozen``) and of the one-layer model (``one_layer``:
    also its images, seed, class split and the separator's weight), the bars of the claims, the parts the run's
    claims and page include and the rules' SLURM minutes."""

    at: tuple[float, ...]
    ray: Mapping[str, Any]
    frozen: Mapping[str, Any]
    one_layer: Mapping[str, Any]
    bars: Mapping[str, Any]
    parts: tuple[str, ...]
    runtime: int

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> DecisiveSettings:
        return cls(**{**cfg, "at": tuple(cfg["at"]), "parts": tuple(cfg["parts"])})


def decisive_epochs(at: Sequence[float], epochs: int, snapshots: Sequence[int]) -> list[int]:
    """The snapshot epochs the experiment runs at: for each fraction f of ``at``, the last snapshot epoch at or
    before f x ``epochs`` (in order, once each)."""
    chosen = [max(e for e in snapshots if e <= f * epochs + 1e-9) for f in at]
    return sorted(set(chosen))


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


# ------------------------------------------------------------------------------------------------- W-ATT-SVM, memo


class SvmMemo:
    """W-ATT-SVM solutions of selections on fixed inputs (z, x), each solved once: the heads share their inputs, so
    a selection met by another head, arm or step costs nothing again."""

    def __init__(self, z: Array, x: Array, solve: Callable[[Array, Array, Array], WSVMResult]) -> None:
        self.z, self.x, self.solve = z, x, solve
        self.found: dict[bytes, WSVMResult] = {}

    def __call__(self, selected: NDArray[np.int_]) -> WSVMResult:
        key = np.asarray(selected, dtype=np.int64).tobytes()
        if key not in self.found:
            self.found[key] = self.solve(self.z, self.x, np.asarray(selected, dtype=np.int64))
        return self.found[key]


def selections(query: Array, keys: Array, w: Array) -> NDArray[np.int_]:
    """o_ih = argmax_t a_i^T W_h x_it of every head: (H, n)."""
    return np.einsum("nc,hcd,ntd->hnt", query, w, keys, optimize=True).argmax(axis=2)


def frobenius_solver(soft_c: float, query_bias: bool, device: str) -> Callable[[Array, Array, Array], WSVMResult]:
    """The Frobenius W-ATT-SVM of a selection on inputs (z, x), solved as the probe solves it (``vit.w_svm``: its soft
    margin where no W meets every margin, the query-bias row, where the pivoting runs)."""
    linalg = device_linalg(device)
    return lambda z, x, selected: w_att_svm(z, x, selected, soft_c=soft_c, query_bias=query_bias, linalg=linalg)


# ------------------------------------------------------------------------------------------------------ the ray test


def ray_grid(low: float, high: float, points: int) -> Array:
    """The geometric grid of c from ``low`` to ``high`` (both in), ``points`` values; c = 1 is added where
    missing, since the precondition is judged from it on."""
    return np.unique(np.append(np.geomspace(low, high, points), 1.0))


def max_margin_rays(w: Array, solutions: Sequence[Array]) -> Array:
    """Each head's max-margin direction at its own norm: W_mm,h ||W_h||_F / ||W_mm,h||_F, (H, C + 1, C)."""
    out = np.stack([np.asarray(s, dtype=float) for s in solutions])
    norms = np.linalg.norm(w.reshape(len(w), -1), axis=1) / np.linalg.norm(out.reshape(len(out), -1), axis=1)
    return out * norms[:, None, None]


@torch.no_grad()
def ray_losses(frozen: FrozenLayer, w: Array, rays: Mapping[str, Array], grid: Array) -> list[dict[str, Any]]:
    """L along each ray: for each direction D (``rays``: name -> (H, C + 1, C)) and each scaling (head h alone:
    W with W_h replaced by c D_h; ``all``: c D), at every c of ``grid``: loss, accuracy, saturation of the scaled
    heads and ||c D||_F over them. The heads not scaled keep their trained attention outputs, computed once."""
    n, heads = len(frozen.labels), len(w)
    trained = attention_output(head_logits(frozen.query, frozen.keys, torch.as_tensor(w)), frozen.values)
    trained, rows = trained.reshape(n, heads, -1), []
    for direction, d in rays.items():
        for head, scaled in [(h, [h]) for h in range(heads)] + [(None, list(range(heads)))]:
            for c in grid:
                w_c = float(c) * torch.as_tensor(d[scaled])
                logits = head_logits(frozen.query, frozen.keys, w_c)
                o = trained.clone()
                o[:, scaled] = attention_output(logits, frozen.values[:, scaled]).reshape(n, len(scaled), -1)
                out = frozen.tail(o.reshape(n, -1), frozen.residual)
                rows.append(
                    {"direction": direction, "heads": "one" if head is not None else "all", "head": head,
                     "c": float(c), "loss": float(nn.functional.cross_entropy(out, frozen.labels)),
                     "accuracy": float((out.argmax(dim=1) == frozen.labels).double().mean()),
                     "saturation": float(torch.softmax(logits, dim=-1).amax(dim=-1).mean()),
                     "w_frobenius": float(torch.linalg.vector_norm(w_c))}
                )  # fmt: skip
    return rows


def ray_test(frozen: FrozenLayer, w: Array, memo: SvmMemo, grid: Array) -> list[dict[str, Any]]:
    """(a): the training loss along c W_h (``trained``) and along c W_mm,h ||W_h||_F / ||W_mm,h||_F
    (``max_margin``, W_mm,h the W-ATT-SVM of head h's own selection on the same inputs), each head alone and all
    together (:func:`ray_losses`), each row with cos(W_h, W_mm,h) of the scaled heads (their mean where all)."""
    z, x = frozen.numpy_inputs()
    solved = [memo(selected) for selected in selections(frozen.query.numpy(), x, w)]
    cosines = np.array([frobenius_cosine(w_h, res.solution) for w_h, res in zip(w, solved, strict=True)])
    rays = {"trained": w, "max_margin": max_margin_rays(w, [res.solution for res in solved])}
    rows = ray_losses(frozen, w, rays, grid)
    for row in rows:
        row["cosine"] = float(cosines.mean() if row["head"] is None else cosines[row["head"]])
        row["hard_margin"] = all(res.hard for res in solved) if row["head"] is None else solved[row["head"]].hard
    return rows


# ----------------------------------------------------------------------------------------------------- GD on W only


@dataclass(frozen=True)
class Logged:
    """One logged GD step: its number, W (H, C + 1, C), each head's loss (H,) (the frozen ViT's: the network's
    loss, the same for every head) and each head's saturation (H,)."""

    step: int
    w: Array
    loss: Array
    saturation: Array


def log_steps(steps: int, logs: int) -> list[int]:
    """Step 0 and ``logs`` geometric steps from 1 to ``steps`` (rounded, once each): the theory's convergence in
    direction is in log t, so the logged steps are equally spaced in it."""
    return sorted({0, *(int(s) for s in np.round(np.geomspace(1, steps, logs)))})


def frozen_gd(
    frozen: FrozenLayer, w0: Array, *, lr: float, steps: int, logged: Sequence[int], normalized: bool, bar=None
) -> list[Logged]:
    """(b): GD on the last layer's W = (W_1, ..., W_H) only, the network's tokens frozen:

    W(t + 1) = W(t) - lr grad L(W(t))   or, ``normalized``, W(t + 1) = W(t) - lr grad L / ||grad L||_F

    (the norm over all heads: one parameter, as the theory's normalised GD), from the trained W(0) = ``w0``; the
    gradient by autograd through the recomputed [CLS] path (:func:`attention_output` keeps it exact under
    saturation). Returns the ``logged`` steps; ``bar`` (a Progress) hears of every step."""
    w, out = torch.tensor(w0, dtype=torch.float64, requires_grad=True), []
    for step in range(steps + 1):
        result = network_loss(frozen, w)
        if step in logged:
            loss = np.full(len(w0), float(result.loss.detach()))
            out.append(Logged(step, w.detach().numpy().copy(), loss, result.saturation))
        if bar is not None:
            bar.update(step, f"loss {float(result.loss.detach()):.4f}")
        if step == steps:
            return out
        (g,) = torch.autograd.grad(result.loss, w)
        norm = torch.linalg.vector_norm(g)
        if norm == 0:  # a stationary point: W stays, and so do the logged steps left
            return out + [Logged(s, out[-1].w, out[-1].loss, out[-1].saturation) for s in logged if s > step]
        with torch.no_grad():
            w -= lr * (g / norm if normalized else g)
    return out


@dataclass(frozen=True)
class OneLayerData:
    """The paper's model on a head's real tokens: the query inputs a_i = [z_i; 1] (n, C + 1), the tokens x_it (n, N,
    C) (the last layer's key inputs, [CLS] first), the labels Y_i in {-1, +1} (n,), each head's fixed v_h (H, C) and
    the token scores gamma_hit = Y_i v_h^T x_it (H, n, N) (Definition 1)."""

    query: Array
    tokens: Array
    labels: Array
    v: Array
    scores: Array


def one_layer_data(
    frozen: FrozenLayer, w: Array, images: int, seed: int, positive: Sequence[int], c: float
) -> OneLayerData:
    """The one-layer model's data on ``images`` training images drawn at random (``seed``): Y_i = +1 for the classes
    ``positive``, -1 for the others; v_h the logistic-regression separator (no intercept, the model has none;
    inverse L2 weight ``c``) of the labels on the head's attention features r_ih = X_i^T softmax(X_i W_h^T a_i) at
    its trained W_h (Section 3's x^p_i): the v that a head fitted at the trained attention would have, so that the
    scores gamma_it = Y_i v^T x_it, the optimal tokens (Definition 1) and the locally optimal ones (Definition 2) are
    those of the head's own read-out."""
    from sklearn.linear_model import LogisticRegression

    chosen = np.sort(np.random.default_rng(seed).choice(len(frozen.labels), min(images, len(frozen.labels)), False))
    a, x = frozen.query[chosen].numpy(), frozen.keys[chosen].numpy()
    y = np.where(np.isin(frozen.labels[chosen].numpy(), list(positive)), 1.0, -1.0)
    if len(np.unique(y)) < 2:
        raise ValueError(f"the one-layer model's {len(y)} images hold one class of the split {list(positive)} only")
    logits = np.einsum("nc,hcd,ntd->hnt", a, w, x, optimize=True)
    s = np.exp(logits - logits.max(axis=2, keepdims=True))
    features = np.einsum("hnt,ntd->hnd", s / s.sum(axis=2, keepdims=True), x)
    fit = LogisticRegression(C=c, fit_intercept=False, max_iter=5000)
    v = np.stack([fit.fit(f, y).coef_[0].copy() for f in features])
    return OneLayerData(a, x, y, v, y[None, :, None] * np.einsum("hd,ntd->hnt", v, x))


def one_layer_risk(data: OneLayerData, w: Array) -> Array:
    """Each head's logistic risk L_h(W_h) = 1/n sum_i log(1 + exp(-gamma_hi^T softmax(X_i W_h^T a_i))), (H,):
    :func:`maxmargin.core.risk` with each image its own input (its query a_i makes p_i = W_h^T a_i its own)."""
    p = np.einsum("nc,hcd->hnd", data.query, w)
    return risk(data.tokens[:, None], data.scores[:, :, None], p).mean(axis=1)


def one_layer_gradient(data: OneLayerData, w: Array) -> tuple[Array, Array]:
    """grad_{W_h} L_h = 1/n sum_i a_i g_hi^T, g_hi = l'(u_hi) X_i^T (diag(s) - s s^T) gamma_hi the gradient of image
    i's loss in p_i = W_h^T a_i (:func:`maxmargin.core.grad_p`, exact in direction under saturation), as ``scaled``
    (H, C + 1, C) and ``log_scale`` (H,): the gradient is exp(log_scale) scaled, and ``scaled`` keeps its direction
    where that product underflows."""
    p = np.einsum("nc,hcd->hnd", data.query, w)
    g = grad_p(data.tokens[:, None], data.scores[:, :, None], p)
    top = g.log_scale.max(axis=1)
    weights = np.exp(g.log_scale - top[:, None]) / len(data.query)
    return np.einsum("hn,nc,hnd->hcd", weights, data.query, g.scaled), top


def one_layer_gd(
    data: OneLayerData, w0: Array, *, lr: float, steps: int, logged: Sequence[int], normalized: bool, bar=None
) -> list[Logged]:
    """(c): GD on each head's W_h of the one-layer model, v fixed: W_h(t + 1) = W_h(t) - lr grad L_h, or
    (``normalized``) - lr grad L_h / ||grad L_h||_F, every head its own problem, from W_h(0) = the trained W_h.
    Returns the ``logged`` steps."""
    w, out = np.array(w0, dtype=float), []
    for step in range(steps + 1):
        if step in logged:
            logits = np.einsum("nc,hcd,ntd->hnt", data.query, w, data.tokens, optimize=True)
            top = np.exp(logits - logits.max(axis=2, keepdims=True))
            saturation = (1.0 / top.sum(axis=2)).mean(axis=1)
            out.append(Logged(step, w.copy(), one_layer_risk(data, w), saturation))
            if bar is not None:
                bar.update(step, f"risk {out[-1].loss.mean():.4f}")
        if step == steps:
            return out
        scaled, log_scale = one_layer_gradient(data, w)
        norms = np.linalg.norm(scaled.reshape(len(w), -1), axis=1)
        safe = np.where(norms > 0, norms, 1.0)[:, None, None]
        w -= lr * (scaled / safe if normalized else scaled * np.exp(log_scale)[:, None, None])
    return out


# ------------------------------------------------------------------------------ where GD's direction went, per head


def optimality_shares(
    scores: Array, selected: NDArray[np.int_], w_mm: Array, z: Array, x: Array, query_bias: bool
) -> tuple[float, float]:
    """The share of images whose selected token o_i is locally optimal (Definition 2: gamma_io > gamma_it for every
    SVM-neighbour t, a token on the margin a_i^T W_mm (x_io - x_it) = 1, within NEIGHBOR_TOL of max(1, ||a_i||
    ||x_io - x_it|| ||W_mm||_F) as :func:`maxmargin.core.svm.svm_neighbors`), and the share whose o_i has the top
    score (Definition 1's optimal token, ties allowed)."""
    n = np.arange(len(selected))
    margins = w_margins(w_mm, z, x, selected, query_bias)
    a = np.linalg.norm(query_inputs(z, query_bias), axis=1)[:, None]
    d = np.linalg.norm(x[n, selected][:, None] - x, axis=2)
    neighbors = np.isfinite(margins) & (margins - 1 <= NEIGHBOR_TOL * np.maximum(1, a * d * np.linalg.norm(w_mm)))
    gaps = scores[n, selected][:, None] - scores
    return float(np.all(~neighbors | (gaps > 0), axis=1).mean()), float(np.all(gaps >= 0, axis=1).mean())


def direction_rows(
    logged: Sequence[Logged], query: Array, x: Array, memo: SvmMemo, scores: Array | None = None
) -> list[dict[str, Any]]:
    """Each logged step and head: ||W_h||_F, its saturation and loss, cos(W_h, W_mm(o(t))) with the W-ATT-SVM of
    its current selection o(t), cos(W_h, W_mm(o(T))) with that of its final one (the last logged step's), the share
    of images whose selection is the final one, whether W_mm(o(t)) meets every margin, and, given the heads'
    token ``scores`` (H, n, N) (the one-layer model), the shares of :func:`optimality_shares`."""
    z = x[:, 0]
    query_bias = query.shape[1] == x.shape[2] + 1
    final = selections(query, x, logged[-1].w)
    final_mm = [memo(selected).solution for selected in final]
    rows = []
    for entry in logged:
        for head, selected in enumerate(selections(query, x, entry.w)):
            res, w_h = memo(selected), entry.w[head]
            local, top = math.nan, math.nan
            if scores is not None:
                local, top = optimality_shares(scores[head], selected, res.solution, z, x, query_bias)
            rows.append(
                {"step": entry.step, "head": head, "loss": float(entry.loss[head]),
                 "w_frobenius": float(np.linalg.norm(w_h)), "saturation": float(entry.saturation[head]),
                 "cosine": frobenius_cosine(w_h, res.solution), "cosine_final": frobenius_cosine(w_h, final_mm[head]),
                 "selection_final": float(np.mean(selected == final[head])), "hard_margin": res.hard,
                 "locally_optimal": local, "top_score": top, "n_images": len(query)}
            )  # fmt: skip
    return rows


# ------------------------------------------------------------------------------------------- one snapshot, each part

# The two GD arms and the config key of each one's step size.
ARMS = {"gd": "lr", "normalized_gd": "normalized_lr"}


def snapshot_layer(
    net: nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    batch_size: int,
    query_bias: bool,
    dtype: torch.dtype = torch.float32,
) -> tuple[FrozenLayer, Array]:
    """The frozen last layer of ``net`` (a snapshot's model) on normalised ``images`` and its heads' trained key-query
    matrices W_h = Wt_h (:func:`~maxmargin.experiments.vit.w_svm_probe.head_key_query`), (H, C + 1, C)."""
    frozen = freeze_last_layer(net, images, labels, batch_size, query_bias, dtype)
    return frozen, head_key_query(last_attention(net), query_bias)


def frozen_arms(
    frozen: FrozenLayer, w: Array, memo: SvmMemo, cfg: Mapping[str, Any], progress: Callable[[str, int], Any]
) -> list[dict[str, Any]]:
    """(b) both arms (plain and normalised GD, ``vit.decisive.frozen``): the rows of :func:`direction_rows`, with
    ``model`` frozen_vit and ``arm``. ``progress(what, total)`` makes each arm's progress bar."""
    logged, rows = log_steps(cfg["steps"], cfg["logs"]), []
    z, x = frozen.numpy_inputs()
    for arm, lr in ARMS.items():
        bar = progress(f"frozen ViT, {arm}: steps", cfg["steps"])
        trajectory = frozen_gd(
            frozen, w, lr=cfg[lr], steps=cfg["steps"], logged=logged, normalized=arm != "gd", bar=bar
        )
        rows += [
            {"model": "frozen_vit", "arm": arm, **r} for r in direction_rows(trajectory, frozen.query.numpy(), x, memo)
        ]
    return rows


def one_layer_arms(
    frozen: FrozenLayer,
    w: Array,
    cfg: Mapping[str, Any],
    solve: Callable[[Array, Array, Array], WSVMResult],
    progress: Callable[[str, int], Any],
) -> list[dict[str, Any]]:
    """(c) both arms on the one-layer model (``vit.decisive.one_layer``): the rows of :func:`direction_rows` with the
    optimality shares, ``model`` one_layer and ``arm``."""
    data = one_layer_data(frozen, w, cfg["images"], cfg["seed"], cfg["positive_classes"], cfg["C"])
    memo, logged, rows = SvmMemo(data.tokens[:, 0], data.tokens, solve), log_steps(cfg["steps"], cfg["logs"]), []
    for arm, lr in ARMS.items():
        bar = progress(f"one-layer model, {arm}: steps", cfg["steps"])
        trajectory = one_layer_gd(
            data, w, lr=cfg[lr], steps=cfg["steps"], logged=logged, normalized=arm != "gd", bar=bar
        )
        found = direction_rows(trajectory, data.query, data.tokens, memo, data.scores)
        rows += [{"model": "one_layer", "arm": arm, **r} for r in found]
    return rows


def decisive_rows(
    snapshots: Mapping[str, Any],
    model: Any,
    images: torch.Tensor,
    labels: torch.Tensor,
    w_svm: Mapping[str, Any],
    s: DecisiveSettings,
    epochs: int,
    batch_size: int,
    part: str,
) -> tuple[list[dict[str, Any]], dict[str, dict[str, float]]]:
    """One part of the experiment (``part``: ``ray``, table vit_decisive_ray; ``gd``, table vit_decisive_gd) at every
    snapshot of ``s.at`` (:func:`decisive_epochs` of a run of ``epochs`` epochs): the table's rows (but ``dataset``),
    and each snapshot's seconds of CPU and wall time (the sidecar's, not the table's). ``model``: the run's
    ModelSettings; ``w_svm``: ``vit.w_svm`` (its soft margin, query-bias row, device: :func:`frobenius_solver`)."""
    rows, times, net = [], {}, build_vit(model)
    solve = frobenius_solver(w_svm["soft_c"], w_svm["query_bias"], w_svm["device"])
    for epoch in decisive_epochs(s.at, epochs, [int(e) for e in snapshots["epochs"]]):
        cpu, wall = time.process_time(), time.perf_counter()
        net.load_state_dict(snapshots["states"][epoch])
        frozen, w = snapshot_layer(net, images, labels, batch_size, w_svm["query_bias"])
        z, x = frozen.numpy_inputs()
        memo = SvmMemo(z, x, solve)
        if part == "ray":
            grid = ray_grid(s.ray["low"], s.ray["high"], s.ray["points"])
            found = [{**r, "n_images": len(z)} for r in ray_test(frozen, w, memo, grid)]
        else:
            found = frozen_arms(frozen, w, memo, s.frozen, Progress)
            found += one_layer_arms(frozen, w, s.one_layer, solve, Progress)
        rows += [{"epoch": epoch, **r} for r in found]
        times[str(epoch)] = {"cpu_seconds": time.process_time() - cpu, "wall_seconds": time.perf_counter() - wall}
    return rows, times
