"""The W-parametrised max-margin problem (W-ATT-SVM) of one attention head, on given token inputs.

Tarzanagh et al., NeurIPS 2023, Lemma 1 and (ATT-SVM) with the key-query matrix W in place of p: for query inputs
z_i (C) with a_i = [z_i; 1] (the 1 carries the query bias), token inputs x_it (C) and the selected token o_i,

    min ||W||  s.t.  a_i^T W (x_{i,o_i} - x_it) >= 1  for every i and every t != o_i,      (W-ATT-SVM)

with W of shape (C + 1) x C. In the Frobenius norm this is an SVM in vec(W) with the features
a_i (x) (x_{i,o_i} - x_it), solved here in its dual with the kernel (a_i . a_j)(d_it . d_js) on a working set of
constraints (cutting planes: the full set is only ever evaluated, never factorised). Where no W meets every margin,
the soft-margin problem (hinge loss with weight ``soft_c``) is solved instead and the fraction of hard margins met
reported. The nuclear-norm version (the implicit bias of W trained as W_Q^T W_K) is the semidefinite programme
max 1^T alpha s.t. ||sum_k alpha_k a_k d_k^T||_2 <= 1, alpha >= 0 (the dual of min ||W||_*), on the same working
sets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve

_QP_OPTIONS = {"show_progress": False, "abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12, "maxiters": 200}
_SDP_OPTIONS = {"show_progress": False, "abstol": 1e-9, "reltol": 1e-9, "feastol": 1e-9, "maxiters": 100}

# Block principal pivoting's steps at most: it takes a handful where the hard margin is well posed; past them
# (pivoting that cycles, one exchange a step) cvxopt's QP solves the round.
_PIVOTING_STEPS = 50
# Margin tolerance: a constraint a^T W d >= 1 counts as met at 1 - W_SVM_TOL (the cutting planes stop there).
W_SVM_TOL = 1e-9


@dataclass(frozen=True)
class WSVMResult:
    """The solution of (W-ATT-SVM) of one head on one probe set.

    ``solution`` is W_mm ((C + 1) x C, unnormalised); ``hard``: every margin met (the hard-margin optimum), else
    the soft-margin one; ``met``: the fraction of the hard constraints it meets; ``support``: constraints with a
    positive multiplier; ``rounds``: cutting-plane rounds.
    """

    solution: NDArray[np.float64]
    hard: bool
    met: float
    n_constraints: int
    support: int
    rounds: int


def query_inputs(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """a_i = [z_i; 1]: the query input with the constant that carries the query bias (Lemma 1's W is (C + 1) x C).

    Parameters
    ----------
    z : ndarray, shape (n, C)
        Query inputs.

    Returns
    -------
    ndarray, shape (n, C + 1)
        [z_i; 1].
    """
    z = np.asarray(z, dtype=np.float64)
    return np.concatenate([z, np.ones((len(z), 1))], axis=1)


def w_logits(w: NDArray[np.float64], z: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The key-dependent attention logits [z_i; 1]^T W x_it of a head (the rest is constant over t).

    Parameters
    ----------
    w : ndarray, shape (C + 1, C)
        The head's key-query matrix with its query-bias row.
    z : ndarray, shape (n, C)
        Query inputs.
    x : ndarray, shape (n, T, C)
        Token (key) inputs.

    Returns
    -------
    ndarray, shape (n, T)
        The logits.
    """
    return np.einsum("ic,itc->it", query_inputs(z) @ np.asarray(w, dtype=np.float64), np.asarray(x, np.float64))


def w_margins(
    w: NDArray[np.float64], z: NDArray[np.float64], x: NDArray[np.float64], selected: NDArray[np.int_]
) -> NDArray[np.float64]:
    """a_i^T W (x_{i,o_i} - x_it), the left-hand sides of (W-ATT-SVM); +inf at t = o_i.

    Parameters
    ----------
    w : ndarray, shape (C + 1, C)
        Key-query matrix.
    z : ndarray, shape (n, C)
        Query inputs.
    x : ndarray, shape (n, T, C)
        Token inputs.
    selected : ndarray of int, shape (n,)
        The selected token o_i of each input.

    Returns
    -------
    ndarray, shape (n, T)
        The margins.
    """
    logits = w_logits(w, z, x)
    n = len(logits)
    margins = logits[np.arange(n), selected][:, None] - logits
    margins[np.arange(n), selected] = np.inf
    return margins


def _dual_qp(g: NDArray[np.float64], soft_c: float) -> NDArray[np.float64]:
    """argmin 1/2 alpha^T G alpha - 1^T alpha s.t. 0 <= alpha <= soft_c (cvxopt): the SVM's dual on a working set."""
    from cvxopt import matrix, solvers

    m = len(g)
    eye = np.eye(m)
    sol = solvers.qp(
        matrix(g),
        matrix(-np.ones(m)),
        matrix(np.vstack([-eye, eye])),
        matrix(np.concatenate([np.zeros(m), np.full(m, soft_c)])),
        options=_QP_OPTIONS,
    )
    return np.maximum(np.array(sol["x"]).ravel(), 0.0)


def _violated(margins: NDArray[np.float64], inside: NDArray[np.bool_], per_input: int, tol: float) -> NDArray:
    """Up to ``per_input`` constraints of each input that are outside the working set and violated (margin < 1 -
    tol), the most violated first: the cutting planes of one round, as a mask of shape (n, T)."""
    m = np.where(inside, np.inf, margins)
    order = np.argsort(m, axis=1)[:, :per_input]
    add = np.zeros_like(inside)
    rows = np.arange(len(m))[:, None]
    add[rows, order] = m[rows, order] < 1.0 - tol
    return add


def _active_set(g: NDArray[np.float64], alpha: NDArray[np.float64], soft_c: float) -> NDArray[np.float64]:
    """min 1/2 alpha^T G alpha - 1^T alpha s.t. alpha >= 0 by block principal pivoting (Judice & Pires 1994; Kim &
    Park 2011): exact on the final passive set. ``alpha`` (the previous round's) gives the first passive set. Where
    pivoting has not settled in ``_PIVOTING_STEPS`` steps, cvxopt's QP (boxed at ``soft_c``) solves the round."""
    free = alpha > 0 if np.any(alpha > 0) else np.ones(len(g), dtype=bool)
    best, backup = len(g) + 1, 3
    out = np.zeros(len(g))
    for _ in range(_PIVOTING_STEPS):
        out[:] = 0.0
        if free.any():
            sub = g[np.ix_(free, free)]
            try:
                out[free] = cho_solve(cho_factor(sub), np.ones(int(free.sum())))
            except np.linalg.LinAlgError:
                out[free] = np.linalg.lstsq(sub, np.ones(int(free.sum())), rcond=None)[0]
        gradient = g @ out - 1.0
        wrong = (free & (out < 0)) | (~free & (gradient < -1e-12))
        if not wrong.any():
            return out
        if wrong.sum() < best:
            best, backup = int(wrong.sum()), 3
            free ^= wrong
        elif backup > 0:
            backup -= 1
            free ^= wrong
        else:
            free[np.flatnonzero(wrong)[-1]] ^= True
    return _dual_qp(g, soft_c)


def _extend(inside: NDArray[np.bool_], add: NDArray[np.bool_], alpha: NDArray[np.float64]) -> NDArray[np.float64]:
    """The multipliers of ``inside`` placed in the working set ``inside | add`` (zeros for the added)."""
    grown = np.flatnonzero((inside | add).ravel())
    out = np.zeros(len(grown))
    out[np.searchsorted(grown, np.flatnonzero(inside.ravel()))] = alpha
    return out


def _cutting_planes(
    a: NDArray[np.float64],
    d: NDArray[np.float64],
    other: NDArray[np.bool_],
    solve: Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]],
    per_input: int,
    tol: float,
    max_rounds: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int]:
    """The dual on a growing working set: W, all margins, the working set's multipliers, the rounds used.

    The working set starts with the closest other token of each input; each round ``solve`` (kernel, previous
    multipliers) -> multipliers, W = sum_k alpha_k a_k d_k^T, and the most violated constraints outside the set
    (``per_input`` per input) join it. Constraints whose multiplier fell to 0 leave. The full kernel is never formed.
    """
    n = len(a)
    inside = np.zeros(other.shape, dtype=bool)
    inside[np.arange(n), np.where(other, np.linalg.norm(d, axis=-1), np.inf).argmin(axis=1)] = True
    alpha, rounds = np.zeros(n), 0
    while rounds < max_rounds:
        rounds += 1
        ii, tt = np.nonzero(inside)
        ak, dk = a[ii], d[ii, tt]
        alpha = solve((ak @ ak.T) * (dk @ dk.T), alpha)
        w = ak.T @ (alpha[:, None] * dk)
        margins = np.where(other, np.einsum("ic,itc->it", a @ w, d), np.inf)
        add = _violated(margins, inside, per_input, tol)
        if not add.any():
            break
        kept = alpha > 0
        inside[ii[~kept], tt[~kept]] = False
        alpha = _extend(inside, add, alpha[kept])
        inside |= add
    return w, margins, alpha, rounds


def w_att_svm(
    z: NDArray[np.float64],
    x: NDArray[np.float64],
    selected: NDArray[np.int_],
    *,
    soft_c: float = 1e4,
    per_input: int = 4,
    tol: float = W_SVM_TOL,
    max_rounds: int = 100,
) -> WSVMResult:
    """The Frobenius-norm (W-ATT-SVM) of one head: min ||W||_F s.t. a_i^T W (x_{i,o_i} - x_it) >= 1, t != o_i.

    The hard-margin dual (alpha >= 0, W = sum_k alpha_k a_k d_k^T) by block principal pivoting on cutting planes
    (exact on its support, no QP tolerance; cvxopt's QP for a round where pivoting cycles); where that finds no W
    meeting every margin (its multipliers reach ``soft_c``), the soft-margin (hinge-loss) dual, 0 <= alpha <=
    ``soft_c``, by cvxopt on the same planes. A soft-margin solution that meets every margin is the hard one.

    Parameters
    ----------
    z : ndarray, shape (n, C)
        Query inputs (the [CLS] token's, after the block's norm).
    x : ndarray, shape (n, T, C)
        Token (key) inputs, after the same norm.
    selected : ndarray of int, shape (n,)
        The selected token o_i of each input.
    soft_c : float
        Weight of the hinge loss of the soft-margin fallback (the box of its dual).
    per_input : int
        Violated constraints added per input per round.
    tol : float
        A margin counts as met at 1 - tol.
    max_rounds : int
        Cutting-plane rounds at most.

    Returns
    -------
    WSVMResult
        W_mm (shape (C + 1, C)), hard or soft, the fraction of margins met, the counts.
    """
    a, x = query_inputs(z), np.asarray(x, dtype=np.float64)
    n, T, _ = x.shape
    selected = np.asarray(selected, dtype=np.int64)
    d = x[np.arange(n), selected][:, None, :] - x  # (n, T, C)
    other = np.arange(T)[None, :] != selected[:, None]
    hard = np.all(np.linalg.norm(d, axis=-1)[other] > 0)  # a copy of the selected token cannot be separated
    if hard:
        pivoting = partial(_active_set, soft_c=soft_c)
        w, margins, alpha, rounds = _cutting_planes(a, d, other, pivoting, per_input, tol, max_rounds)
        hard = bool(margins.min() >= 1.0 - tol and alpha.max(initial=0.0) < soft_c)
    if not hard:
        w, margins, alpha, rounds = _cutting_planes(
            a, d, other, lambda g, _: _dual_qp(g, soft_c), per_input, tol, max_rounds
        )
    met = float(np.mean(margins[other] >= 1.0 - tol))
    support = int(np.sum(alpha > 1e-8 * max(1.0, float(alpha.max(initial=0.0)))))
    # A soft-margin optimum that meets every margin is the hard-margin optimum (no hinge term is left).
    return WSVMResult(w, met == 1.0, met, int(other.sum()), support, rounds)


def frobenius_cosine(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """<A, B>_F / (||A||_F ||B||_F): how close a head's W is to the max-margin direction W_mm / ||W_mm||_F.

    Parameters
    ----------
    a : ndarray, shape (p, q)
        A matrix.
    b : ndarray, shape (p, q)
        A matrix of the same shape.

    Returns
    -------
    float
        The cosine, in [-1, 1].
    """
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _nuclear_dual(a: NDArray[np.float64], d: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """max 1^T alpha s.t. ||sum_k alpha_k a_k d_k^T||_2 <= 1, alpha >= 0 (cvxopt's SDP, the LMI [[I, B], [B^T, I]]
    >= 0): the multipliers and W = -2 Z_12 from the LMI's dual variable Z, the minimiser of ||W||_* on the set."""
    from cvxopt import matrix, solvers

    m, p, q = len(a), a.shape[1], d.shape[1]
    blocks = np.zeros((m, p + q, p + q))
    blocks[:, :p, p:] = a[:, :, None] * d[:, None, :]
    blocks[:, p:, :p] = blocks[:, :p, p:].transpose(0, 2, 1)
    gs = -blocks.transpose(0, 2, 1).reshape(m, -1).T  # cvxopt's column-major vec of each symmetric block
    sol = solvers.sdp(
        matrix(-np.ones(m)),
        Gl=matrix(-np.eye(m)),
        hl=matrix(np.zeros(m)),
        Gs=[matrix(gs)],
        hs=[matrix(np.eye(p + q))],
        options=_SDP_OPTIONS,
    )
    z = np.array(sol["zs"][0]).reshape(p + q, p + q).T
    return np.maximum(np.array(sol["x"]).ravel(), 0.0), -2.0 * z[:p, p:]


def w_att_svm_nuclear(
    z: NDArray[np.float64],
    x: NDArray[np.float64],
    selected: NDArray[np.int_],
    *,
    per_input: int = 1,
    tol: float = 1e-6,
    max_rounds: int = 100,
) -> WSVMResult:
    """The nuclear-norm (W-ATT-SVM): min ||W||_* s.t. a_i^T W (x_{i,o_i} - x_it) >= 1, t != o_i.

    The implicit bias of W trained as the product W_Q^T W_K (Tarzanagh et al., "Transformers as Support Vector
    Machines", 2023). W lies in span{a_i} x R^C (projecting onto it lowers ||W||_* and keeps every margin), so the
    SDP is solved in that basis, on the same cutting planes as :func:`w_att_svm`; an interior-point solve, to
    ``tol`` in the margins. Hard margins only (``hard`` False and ``met`` < 1 where the SDP leaves some unmet).

    Parameters
    ----------
    z : ndarray, shape (n, C)
        Query inputs.
    x : ndarray, shape (n, T, C)
        Token inputs.
    selected : ndarray of int, shape (n,)
        The selected token o_i of each input.
    per_input : int
        Violated constraints added per input per round.
    tol : float
        A margin counts as met at 1 - tol.
    max_rounds : int
        Cutting-plane rounds at most.

    Returns
    -------
    WSVMResult
        W_mm (shape (C + 1, C)) of the nuclear norm, the fraction of margins met, the counts.
    """
    a, x = query_inputs(z), np.asarray(x, dtype=np.float64)
    n, T, _ = x.shape
    selected = np.asarray(selected, dtype=np.int64)
    basis = np.linalg.svd(a.T, full_matrices=False)[0]  # (C + 1, r): span{a_i}
    ar = a @ basis
    d = x[np.arange(n), selected][:, None, :] - x
    other = np.arange(T)[None, :] != selected[:, None]

    inside = np.zeros(other.shape, dtype=bool)
    inside[np.arange(n), np.where(other, np.linalg.norm(d, axis=-1), np.inf).argmin(axis=1)] = True
    rounds, alpha = 0, np.zeros(0)
    while rounds < max_rounds:
        rounds += 1
        ii, tt = np.nonzero(inside)
        alpha, w = _nuclear_dual(ar[ii], d[ii, tt])
        margins = np.where(other, np.einsum("ic,itc->it", ar @ w, d), np.inf)
        add = _violated(margins, inside, per_input, tol)
        if not add.any():
            break
        # Planes with no multiplier and slack leave (each SDP's cost grows with the square of the set's size).
        idle = (alpha <= 1e-6 * alpha.max(initial=0.0)) & (margins[ii, tt] > 1.0 + 1e-4)
        inside[ii[idle], tt[idle]] = False
        inside |= add
    met = float(np.mean(margins[other] >= 1.0 - tol))
    support = int(np.sum(alpha > 1e-6 * max(1.0, float(alpha.max(initial=0.0)))))
    return WSVMResult(basis @ w, met == 1.0, met, int(other.sum()), support, rounds)
