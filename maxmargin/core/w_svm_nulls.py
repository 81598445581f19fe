"""What a head's cosine with its W-ATT-SVM solution (:mod:`.w_svm`) is measured against: the largest cosine a
matrix of the head's rank can reach (:func:`rank_ceiling`), the head's share in the span every solution lies in
(:func:`span_cosine`), and random matrices of the head's rank, each of which selects its own tokens
(:func:`random_rank_matrix`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.w_svm import _checked, query_inputs


def rank_ceiling(w_mm: NDArray[np.float64], rank: int) -> float:
    """The largest cosine a matrix of rank at most ``rank`` can have with ``w_mm``: ||W_r||_F / ||W||_F, W_r its
    best rank-``rank`` approximation (Eckart-Young). A head's Wt_h = scale W_Q,h^T W_K,h has rank at most d_head,
    so its cosine with an unconstrained W_mm,h is at most this.

    Parameters
    ----------
    w_mm : ndarray, shape (p, q)
        A max-margin solution W_mm.
    rank : int
        The rank allowed (a head's d_head).

    Returns
    -------
    float
        The ceiling, in (0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import rank_ceiling
    >>> rank_ceiling(np.diag([1.0, 1.0, 1.0, 1.0]), 1)
    0.5
    """
    w_mm, rank = check_arrays(w_mm=(w_mm, "(p, q)"), rank=(rank, "int ()"))
    s = np.linalg.svd(w_mm, compute_uv=False)
    return float(np.sqrt(np.sum(s[:rank] ** 2) / np.sum(s**2)))


def _range(m: NDArray[np.float64]) -> NDArray[np.float64]:
    """An orthonormal basis of the column space of ``m`` (p x k): from the eigenvectors of m m^T (p x p, cheap
    where k is large), eigenvalues above 1e-12 of the largest (singular values above 1e-6: eigh's rounding is about
    1e-16 of the largest eigenvalue)."""
    values, vectors = np.linalg.eigh(m @ m.T)
    return vectors[:, values > 1e-12 * values.max(initial=0.0)]


def span_cosine(
    w: NDArray[np.float64], z: NDArray[np.float64], x: NDArray[np.float64], query_bias: bool = True
) -> float:
    """cos(W, P W) with P the projection onto span{a_i} (x) span{x_it - x_is}: the share of W (as a cosine) in the
    directions that change some logit difference a_i^T W (x_it - x_is) on these inputs.

    Every W-ATT-SVM solution of these inputs lies in that span (the constraint features a_i (x_io - x_it)^T, for
    any selection, do), so |cos(W, W_mm)| <= this: a head that puts its energy into the directions the data use
    gains cosine with any matrix of the span, max-margin or not.

    Parameters
    ----------
    w : ndarray, shape (C + 1, C), or (C, C) without ``query_bias``
        A head's key-query matrix.
    z : ndarray, shape (n, C)
        Query inputs.
    x : ndarray, shape (n, T, C)
        Token inputs.
    query_bias : bool
        Whether ``w`` has the query-bias row.

    Returns
    -------
    float
        cos(W, P W) = ||P W||_F / ||W||_F, in [0, 1].

    Examples
    --------
    One input, a = [z; 1] = (1, 0, 1), whose tokens differ along the first axis only: W = a e_1^T lies in the
    span, a W that reads the second axis of the tokens has no share in it.

    >>> import numpy as np
    >>> from maxmargin.core import span_cosine
    >>> z, x = np.array([[1.0, 0.0]]), np.array([[[0.0, 0.0], [1.0, 0.0]]])
    >>> round(span_cosine(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]), z, x), 12)
    1.0
    >>> span_cosine(np.array([[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]), z, x)
    0.0
    """
    w, z, x = _checked(w, z, x, query_bias)
    a = query_inputs(z, query_bias)
    within = (x - x.mean(axis=1, keepdims=True)).reshape(-1, x.shape[2])  # spans the differences of each input
    ua, ud = _range(a.T), _range(within.T)
    return float(np.linalg.norm(ua.T @ w @ ud) / np.linalg.norm(w))


def random_rank_matrix(rng: np.random.Generator, shape: tuple[int, int], rank: int) -> NDArray[np.float64]:
    """G_1 G_2 with Gaussian G_1 (p x rank) and G_2 (rank x q): a random matrix of rank ``rank`` (almost surely),
    the shape of a head's Wt_h = scale W_Q,h^T W_K,h (the null of a head that merely selects).

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of the draws.
    shape : tuple of int
        (p, q).
    rank : int
        Its rank.

    Returns
    -------
    ndarray, shape (p, q)
        The matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import random_rank_matrix
    >>> m = random_rank_matrix(np.random.default_rng(0), (5, 4), 2)
    >>> m.shape, int(np.linalg.matrix_rank(m))
    ((5, 4), 2)
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator (np.random.default_rng): got {type(rng).__name__}")
    shape, rank = check_arrays(shape=(shape, "int (2,)"), rank=(rank, "int ()"))
    if np.any(shape < 1) or rank < 1:
        raise ValueError(f"need a shape of positive sizes and rank >= 1: got shape {tuple(shape)}, rank {rank}")
    return rng.standard_normal((shape[0], rank)) @ rng.standard_normal((rank, shape[1]))
