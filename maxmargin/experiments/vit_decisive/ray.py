"""The ray test (part (a) of :mod:`maxmargin.experiments.vit_decisive`): each head's W-ATT-SVM of the tokens its
W selects (memoised), and the network's training loss along W's own ray and along the max-margin ray.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from maxmargin.core.w_svm import WSVMResult, frobenius_cosine, w_att_svm
from maxmargin.experiments.vit_decisive.frozen import FrozenLayer, attention_output, head_logits
from maxmargin.experiments.vit_heads import device_linalg

Array = NDArray[np.float64]

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
