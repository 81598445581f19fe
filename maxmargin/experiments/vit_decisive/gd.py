"""GD on W only (parts (b) and (c) of :mod:`maxmargin.experiments.vit_decisive`): the frozen ViT's last layer and
the paper's one-layer model on its real tokens, plain and normalised GD, and where each arm's direction went.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from maxmargin.core.model import grad_p, risk
from maxmargin.core.svm import NEIGHBOR_TOL
from maxmargin.core.w_svm import WSVMResult, frobenius_cosine, query_inputs, w_margins
from maxmargin.experiments.vit_decisive.frozen import FrozenLayer, network_loss
from maxmargin.experiments.vit_decisive.ray import SvmMemo, selections

Array = NDArray[np.float64]

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
