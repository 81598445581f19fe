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
softmax drops): :func:`~maxmargin.experiments.vit_heads.head_key_query`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from maxmargin.core.progress import Progress
from maxmargin.experiments.vit.model import build_vit
from maxmargin.experiments.vit_decisive.frozen import (
    ClsTail,
    FrozenLayer,
    NetworkLoss,
    attention_output,
    class_logits,
    freeze_last_layer,
    head_logits,
    network_loss,
    snapshot_layer,
)
from maxmargin.experiments.vit_decisive.gd import (
    ARMS,
    Logged,
    OneLayerData,
    direction_rows,
    frozen_arms,
    frozen_gd,
    log_steps,
    one_layer_arms,
    one_layer_data,
    one_layer_gd,
    one_layer_gradient,
    one_layer_risk,
    optimality_shares,
)
from maxmargin.experiments.vit_decisive.ray import (
    SvmMemo,
    frobenius_solver,
    max_margin_rays,
    ray_grid,
    ray_losses,
    ray_test,
    selections,
)

Array = NDArray[np.float64]

__all__ = [
    "ARMS",
    "ClsTail",
    "DecisiveSettings",
    "FrozenLayer",
    "Logged",
    "NetworkLoss",
    "OneLayerData",
    "SvmMemo",
    "attention_output",
    "class_logits",
    "decisive_epochs",
    "decisive_rows",
    "direction_rows",
    "freeze_last_layer",
    "frobenius_solver",
    "frozen_arms",
    "frozen_gd",
    "head_logits",
    "log_steps",
    "max_margin_rays",
    "network_loss",
    "one_layer_arms",
    "one_layer_data",
    "one_layer_gd",
    "one_layer_gradient",
    "one_layer_risk",
    "optimality_shares",
    "ray_grid",
    "ray_losses",
    "ray_test",
    "selections",
    "snapshot_layer",
]


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
