"""The synthetic data sets of the paper's figures, as named instances.

Paper: Section 2 (Figure 1), Section 3 (Figure 3), Section 4 (Figures 4, 5), Appendix E (Figure 8).
Where the paper gives coordinates they are used verbatim. For Figure 1(c) the paper says only that it shows
"multiple inputs" with "the gray dotted line representing the separating hyperplane", and for Figure 8 that
n = T = d = 2: the constructions below (random tokens around three cluster centres for Figure 1(c), hand-placed
tokens for Figure 8) are ours, not the paper's, and documented where they are built.

Imported with the maths alone (numpy and :mod:`maxmargin.core`; no pandas, no pipeline): each instance carries its
tokens X, labels Y, key-query matrix W and head v, and derives the keys K = X W^T and the scores gamma.

    >>> import numpy as np
    >>> from maxmargin.core import classify_direction
    >>> from maxmargin.experiments.instances import fig1b
    >>> inst = fig1b()
    >>> inst.X.shape, inst.gamma
    ((1, 3, 3), array([[1. , 0.9, 0. ]]))
    >>> classify_direction(inst.K, inst.gamma, np.array([1])).kind  # Figure 1(b)'s LMM
    'lmm'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from maxmargin.core.model import Array, keys, token_scores


@dataclass(frozen=True)
class Instance:
    """A training set (Y_i, X_i), key-query matrix W and head v; K and gamma derive from them.

    Paper: (ERM) with K_i = X_i W^T and gamma_it = Y_i v^T x_it (Definition 1).
    """

    name: str
    X: Array  # (n, T, d)
    Y: Array  # (n,)
    W: Array  # (d, d)
    v: Array  # (d,)

    @property
    def K(self) -> Array:
        return keys(self.X, self.W)

    @property
    def gamma(self) -> Array:
        return token_scores(self.X, self.Y, self.v)

    @property
    def key_plane(self) -> Array:
        """The 2-D coordinates in which the paper draws tokens and trajectories, (n, T, 2)."""
        return self.K[..., :2]


def scored_tokens(name: str, key_xy: Array, scores: Array, Y: Array | None = None) -> Instance:
    """Tokens x = (k_1, k_2, gamma) with W = diag(1, 1, 0) and v = (0, 0, 1).

    Paper: Section 2.1, "Let us first explain the setup used in Figure 1": the first two
    coordinates are the key, the last one carries the score, so any score can be assigned
    regardless of the key. Labels default to +1 so that gamma = x_3.
    """
    key_xy = np.asarray(key_xy, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    n = key_xy.shape[0]
    Y = np.ones(n) if Y is None else np.asarray(Y, dtype=np.float64)
    X = np.concatenate([key_xy, (scores * Y[:, None])[..., None]], axis=-1)
    return Instance(name, X, Y, np.diag([1.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0]))


def fig1a() -> Instance:
    """Figure 1(a): optimal token (-0.1, 1) with score 1; (1, 0) and (0, 0) with score 0.9 (Assumption B)."""
    return scored_tokens("fig1a", [[[-0.1, 1.0], [1.0, 0.0], [0.0, 0.0]]], [[1.0, 0.9, 0.9]])


def fig1b() -> Instance:
    """Figure 1(b): as 1(a) but (0, 0) has score 0, which makes (1, 0) locally optimal (an LMM)."""
    return scored_tokens("fig1b", [[[-0.1, 1.0], [1.0, 0.0], [0.0, 0.0]]], [[1.0, 0.9, 0.0]])


def fig1c(seed: int, n: int = 3, T: int = 7, spread: float = 0.3) -> Instance:
    """Figure 1(c): n = 3 inputs of T = 7 tokens; optimal score 1, others 0.5 (the paper's legend: "=0.5").

    Our construction (the paper gives no coordinates, nor how they were drawn): each input draws its optimal token
    around the centre (1.5, 2) and its T - 1 non-optimal tokens alternately around (0, 0)
    and (2.5, 0), with Gaussian spread ``spread``. ``seed``: the config's ``synthetic.data.fig1c.seed``.
    """
    rng = np.random.default_rng(seed)
    centres = np.array([[1.5, 2.0], [0.0, 0.0], [2.5, 0.0]])
    which = np.concatenate([[0], 1 + np.arange(T - 1) % 2])
    key_xy = centres[which][None] + spread * rng.standard_normal((n, T, 2))
    scores = np.where(which == 0, 1.0, 0.5)[None].repeat(n, axis=0)
    return scored_tokens("fig1c", key_xy, scores)


def fig3(variant: str) -> Instance:
    """Figure 3(a)/(b): n = 3, T = d = 2, W = I; every input has the token (0, 0).

    (a): (1, 1) Y=+1, (1, -1) Y=-1, (0.5, 1) Y=+1, all support vectors of (SVM).
    (b): the third token is pushed to (0.5, 1.5) and is no longer a support vector.
    The head v is trained jointly with p, so ``v`` here is only a placeholder.
    """
    if variant not in ("a", "b"):
        raise ValueError(f"unknown Figure 3 variant {variant!r}; allowed: a, b")
    third = [0.5, 1.0] if variant == "a" else [0.5, 1.5]
    X = np.array([[[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, -1.0]], [[0.0, 0.0], third]])
    return Instance(f"fig3{variant}", X, np.array([1.0, -1.0, 1.0]), np.eye(2), np.array([0.0, 1.0]))


def fig5(C: float) -> Instance:
    """Figure 5: two inputs, optimal tokens (1, 1) with score C and (1, -1) with score 1; (0, 0) scores 0."""
    return scored_tokens(f"fig5_C{C:g}", [[[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, -1.0]]], [[0.0, C], [0.0, 1.0]])


def fig8() -> Instance:
    """Figure 8: n = T = d = 2, W = I, where GD reaches the GMM or an LMM depending on the start.

    Our construction: input 1 has optimal a1 = (1, 0.5) and b1 = (-1, 0.5); input 2 has optimal
    a2 = (-1.5, -0.5) and b2 = (1, -2); v = (1, 3)/sqrt(10). Selecting (a1, b2) is locally optimal
    because b2 has no SVM-neighbour: p_mm(a1, b2) = (0.5, 0) gives (b2 - a2)^T p = 1.25 > 1.
    The GMM is p_mm(a1, a2) = (0.5, 1.5). With T = 2, Assumption B holds trivially.
    """
    X = np.array([[[1.0, 0.5], [-1.0, 0.5]], [[-1.5, -0.5], [1.0, -2.0]]])
    return Instance("fig8", X, np.ones(2), np.eye(2), np.array([1.0, 3.0]) / np.sqrt(10.0))


def starts_on_circle(n_starts: int, radius: float, d: int, phase: float = 0.0) -> Array:
    """Initial points p(0) evenly spaced on a circle of the key plane (other coordinates 0)."""
    angles = phase + 2 * np.pi * np.arange(n_starts) / n_starts
    p0 = np.zeros((n_starts, d))
    p0[:, 0], p0[:, 1] = radius * np.cos(angles), radius * np.sin(angles)
    return p0


def starts_in_key_plane(starts: Array, d: int) -> Array:
    """Initial points p(0) given by their key-plane coordinates (the others 0), shape (n_starts, d).

    The tokens of Figure 1 put the score in x_3 and W = diag(1, 1, 0), so p_3 never moves; the authors' notebook
    writes its starts as (p_1, p_2, 0).
    """
    starts = np.asarray(starts, dtype=np.float64)
    p0 = np.zeros((starts.shape[0], d))
    p0[:, : starts.shape[1]] = starts
    return p0


def starts(spec: Sequence[Sequence[float]] | Mapping[str, Any], d: int) -> Array:
    """Initial points p(0) from the config: a list of key-plane points (:func:`starts_in_key_plane`), or
    ``{"circle": {"n": ..., "radius": ...}}``: ``n`` points on a circle (:func:`starts_on_circle`, the first at
    angle pi / n, so that no start lies on an axis)."""
    if isinstance(spec, Mapping):
        circle = spec["circle"]
        return starts_on_circle(circle["n"], circle["radius"], d, phase=np.pi / circle["n"])
    return starts_in_key_plane(spec, d)


def starts_in_cone(direction: Array, n_starts: int, radius: float, half_angle: float) -> Array:
    """Initial points at norm ``radius`` spread within ``half_angle`` of ``direction`` in the key plane.

    Paper: eq. (7)-(8), the set C_{mu,R}(q) of Theorem 3 (Figure 2).
    """
    base = np.arctan2(direction[1], direction[0])
    angles = base + np.linspace(-half_angle, half_angle, n_starts)
    p0 = np.zeros((n_starts, direction.shape[0]))
    p0[:, 0], p0[:, 1] = radius * np.cos(angles), radius * np.sin(angles)
    return p0
