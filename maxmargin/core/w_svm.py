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
sets. The duals on a working set: :mod:`.w_svm_dual`; what a head's cosine with W_mm is measured against (its rank
ceiling, the constraints' span, random matrices of its rank): :mod:`.w_svm_nulls`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.gd import cosine
from maxmargin.core.w_svm_dual import NUMPY, LinearAlgebra, _active_set, _dual_qp, _nuclear_dual

# Margin tolerance: a constraint a^T W d >= 1 counts as met at 1 - W_SVM_TOL (the cutting planes stop there).
W_SVM_TOL = 1e-9
# No W meets every margin when the constraint features' convex hull comes closer to 0 than this fraction of their
# typical norm f (its nearest point is at rho = 1 / ||W_mm||_F): 0 is in the hull to the solvers' precision, and the
# hard-margin cutting planes stop once ||W||_F >= 1 / (HULL_TOL f). A feasible probe is far from it (the largest
# ||W_mm||_F f seen: about 1e3).
HULL_TOL = 1e-5


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


def query_inputs(z: NDArray[np.float64], query_bias: bool = True) -> NDArray[np.float64]:
    """a_i = [z_i; 1]: the query input with the constant that carries the query bias (Lemma 1's W is (C + 1) x C);
    a_i = z_i without it (``query_bias`` false: the authors' z^T W x, W of C x C).

    Parameters
    ----------
    z : ndarray, shape (n, C)
        Query inputs.
    query_bias : bool
        Whether to append the constant 1.

    Returns
    -------
    ndarray, shape (n, C + 1) or (n, C)
        [z_i; 1], or z_i.

    Examples
    --------
    >>> query_inputs(np.array([[2.0, 3.0]]))
    array([[2., 3., 1.]])
    """
    z = np.asarray(z, dtype=np.float64)
    return np.concatenate([z, np.ones((len(z), 1))], axis=1) if query_bias else z


def w_logits(
    w: NDArray[np.float64], z: NDArray[np.float64], x: NDArray[np.float64], query_bias: bool = True
) -> NDArray[np.float64]:
    """The key-dependent attention logits a_i^T W x_it of a head (the rest is constant over t).

    Parameters
    ----------
    w : ndarray, shape (C + 1, C), or (C, C) without ``query_bias``
        The head's key-query matrix (with its query-bias row).
    z : ndarray, shape (n, C)
        Query inputs.
    x : ndarray, shape (n, T, C)
        Token (key) inputs.
    query_bias : bool
        Whether ``w`` has the query-bias row (:func:`query_inputs`).

    Returns
    -------
    ndarray, shape (n, T)
        The logits.
    """
    a = query_inputs(z, query_bias)
    return np.einsum("ic,itc->it", a @ np.asarray(w, dtype=np.float64), np.asarray(x, np.float64))


def w_margins(
    w: NDArray[np.float64],
    z: NDArray[np.float64],
    x: NDArray[np.float64],
    selected: NDArray[np.int_],
    query_bias: bool = True,
) -> NDArray[np.float64]:
    """a_i^T W (x_{i,o_i} - x_it), the left-hand sides of (W-ATT-SVM); +inf at t = o_i.

    Parameters
    ----------
    w : ndarray, shape (C + 1, C), or (C, C) without ``query_bias``
        Key-query matrix.
    z : ndarray, shape (n, C)
        Query inputs.
    x : ndarray, shape (n, T, C)
        Token inputs.
    selected : ndarray of int, shape (n,)
        The selected token o_i of each input.
    query_bias : bool
        Whether ``w`` has the query-bias row.

    Returns
    -------
    ndarray, shape (n, T)
        The margins.
    """
    logits = w_logits(w, z, x, query_bias)
    n = len(logits)
    margins = logits[np.arange(n), selected][:, None] - logits
    margins[np.arange(n), selected] = np.inf
    return margins


def _violated(margins: NDArray[np.float64], inside: NDArray[np.bool_], per_input: int, tol: float) -> NDArray:
    """Up to ``per_input`` constraints of each input that are outside the working set and violated (margin < 1 -
    tol), the most violated first: the cutting planes of one round, as a mask of shape (n, T)."""
    m = np.where(inside, np.inf, margins)
    order = np.argsort(m, axis=1)[:, :per_input]
    add = np.zeros_like(inside)
    rows = np.arange(len(m))[:, None]
    add[rows, order] = m[rows, order] < 1.0 - tol
    return add


def _extend(inside: NDArray[np.bool_], add: NDArray[np.bool_], alpha: NDArray[np.float64]) -> NDArray[np.float64]:
    """The multipliers of ``inside`` placed in the working set ``inside | add`` (zeros for the added)."""
    grown = np.flatnonzero((inside | add).ravel())
    out = np.zeros(len(grown))
    out[np.searchsorted(grown, np.flatnonzero(inside.ravel()))] = alpha
    return out


# A working set's solve: (a_k, d_k of its constraints, the previous multipliers placed in it) -> (multipliers, W).
Solve = Callable[[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]], tuple[NDArray, NDArray]]
# The cutting planes' outcome: W, the margins of every constraint, the working set's multipliers, the rounds used.
Planes = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int]


def _cutting_planes(
    a: NDArray[np.float64],
    d: NDArray[np.float64],
    other: NDArray[np.bool_],
    solve: Solve,
    per_input: int,
    tol: float,
    max_rounds: int,
    bound: float = np.inf,
) -> Planes:
    """The dual on a growing working set: W, all margins, the working set's multipliers, the rounds used.

    The working set starts with the closest other token of each input; each round ``solve`` gives the multipliers
    and W, and the most violated constraints outside the set (``per_input`` per input) join it. Constraints with no
    multiplier and slack in their margin leave (the next solve's cost grows with the set). The full set of
    constraints is only ever evaluated, never factorised. ||W||_F at ``bound`` or beyond stops the rounds (the
    hard problem has no solution: its dual is unbounded).
    """
    n = len(a)
    inside = np.zeros(other.shape, dtype=bool)
    inside[np.arange(n), np.where(other, np.linalg.norm(d, axis=-1), np.inf).argmin(axis=1)] = True
    alpha, rounds = np.zeros(n), 0
    while rounds < max_rounds:
        rounds += 1
        ii, tt = np.nonzero(inside)
        alpha, w = solve(a[ii], d[ii, tt], alpha)
        margins = np.where(other, np.einsum("ic,itc->it", a @ w, d), np.inf)
        add = _violated(margins, inside, per_input, tol)
        if not add.any() or np.linalg.norm(w) >= bound:
            break
        idle = (alpha <= 1e-9 * alpha.max(initial=0.0)) & (margins[ii, tt] > 1.0 + 1e-6)
        inside[ii[idle], tt[idle]] = False
        alpha = _extend(inside, add, alpha[~idle])
        inside |= add
    return w, margins, alpha, rounds


def _frobenius_solve(boxed: bool, soft_c: float, linalg: LinearAlgebra = NUMPY) -> Solve:
    """The Frobenius dual on a working set: block principal pivoting on ``linalg`` (hard margin; the features'
    nearest hull point for a round where it cycles) or cvxopt's QP boxed at ``soft_c`` (``boxed``: the soft
    margin); W = sum_k alpha_k a_k d_k^T."""

    def solve(ak: NDArray, dk: NDArray, alpha: NDArray) -> tuple[NDArray, NDArray]:
        if boxed:
            alpha = _dual_qp((ak @ ak.T) * (dk @ dk.T), soft_c)
            return alpha, ak.T @ (alpha[:, None] * dk)
        ak, dk = linalg.array(ak), linalg.array(dk)
        alpha = _active_set((ak @ ak.T) * (dk @ dk.T), linalg.array(alpha), linalg)
        return linalg.numpy(alpha), linalg.numpy(ak.T @ (alpha[:, None] * dk))

    return solve


def _differences(
    z: NDArray[np.float64], x: NDArray[np.float64], selected: NDArray[np.int_], query_bias: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """a_i, the differences d_it = x_{i,o_i} - x_it and the mask of the constraints (t != o_i)."""
    x = np.asarray(x, dtype=np.float64)
    n, T, _ = x.shape
    selected = np.asarray(selected, dtype=np.int64)
    d = x[np.arange(n), selected][:, None, :] - x
    return query_inputs(z, query_bias), d, np.arange(T)[None, :] != selected[:, None]


def _result(w: NDArray, margins: NDArray, alpha: NDArray, rounds: int, other: NDArray, tol: float) -> WSVMResult:
    """The result of a solve: hard exactly when W meets every margin (a feasible W is a certificate)."""
    met = float(np.mean(margins[other] >= 1.0 - tol))
    support = int(np.sum(alpha > 1e-8 * max(1.0, float(alpha.max(initial=0.0)))))
    return WSVMResult(w, met == 1.0, met, int(other.sum()), support, rounds)


def _hard_margin_planes(
    a: NDArray[np.float64],
    d: NDArray[np.float64],
    other: NDArray[np.bool_],
    per_input: int,
    tol: float,
    max_rounds: int,
    linalg: LinearAlgebra,
) -> Planes | None:
    """The hard-margin dual of (W-ATT-SVM) on cutting planes, stopped at ||W||_F >= 1 / (HULL_TOL f), f the typical
    ||a_i|| ||d_it||; None where a token equals the selected one (d_it = 0: a^T W d_it >= 1 cannot hold)."""
    if not np.all(np.linalg.norm(d, axis=-1)[other] > 0):
        return None
    typical = np.sqrt(np.mean(np.sum(a**2, axis=1)[:, None] * np.sum(d**2, axis=2)))  # f = ||a_i|| ||d_it||
    hard_solve = _frobenius_solve(False, np.inf, linalg)  # unboxed: the box is the soft margin's alone
    return _cutting_planes(a, d, other, hard_solve, per_input, tol, max_rounds, 1.0 / (HULL_TOL * typical))


def w_att_svm(
    z: NDArray[np.float64],
    x: NDArray[np.float64],
    selected: NDArray[np.int_],
    *,
    soft_c: float = 1e4,
    per_input: int = 4,
    tol: float = W_SVM_TOL,
    max_rounds: int = 100,
    query_bias: bool = True,
    linalg: LinearAlgebra = NUMPY,
    soft: bool = True,
) -> WSVMResult:
    """The Frobenius-norm (W-ATT-SVM) of one head: min ||W||_F s.t. a_i^T W (x_{i,o_i} - x_it) >= 1, t != o_i.

    The hard-margin dual (alpha >= 0, W = sum_k alpha_k a_k d_k^T) by block principal pivoting on cutting planes
    (exact on its support, no QP tolerance; cvxopt's QP for a round where pivoting cycles). Feasibility is decided
    by the hard problem: its W meets every margin or it does not, whatever ``soft_c`` (||W||_F growing past
    1 / (:data:`HULL_TOL` f), f the features' typical norm, counts as none meeting them). Where it does not
    (no W meets every margin), the soft-margin (hinge-loss) dual, 0 <= alpha <= ``soft_c``, by cvxopt on the same
    planes. A soft-margin solution that meets every margin is the hard one.

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
    query_bias : bool
        W with the query-bias row (a_i = [z_i; 1]), else a_i = z_i.
    linalg : LinearAlgebra
        Where the hard-margin pivoting runs (:data:`NUMPY`, or a torch device's for a wide head).
    soft : bool
        Solve the soft-margin problem where no W meets every margin; False: return the hard attempt (``hard``
        False), which costs a fraction of the soft solve on a large working set.

    Returns
    -------
    WSVMResult
        W_mm (shape (C + 1, C), or (C, C)), hard or soft, the fraction of margins met, the counts.

    Examples
    --------
    One input, its second token selected: W_mm meets the margin with equality.

    >>> z, x = np.array([[1.0, 0.0]]), np.array([[[0.0, 0.0], [1.0, 0.0]]])
    >>> res = w_att_svm(z, x, np.array([1]))
    >>> res.hard, round(float(w_margins(res.solution, z, x, np.array([1]))[0, 0]), 9)
    (True, 1.0)
    """
    a, d, other = _differences(z, x, selected, query_bias)
    planes = _hard_margin_planes(a, d, other, per_input, tol, max_rounds, linalg)
    if (planes is None or planes[1].min() < 1.0 - tol) and soft:  # no W meets every margin
        planes = _cutting_planes(a, d, other, _frobenius_solve(True, soft_c), per_input, tol, max_rounds)
    if planes is None:  # a copy of the selected token, and no soft-margin solve asked for
        return WSVMResult(np.zeros((a.shape[1], d.shape[2])), False, 0.0, int(other.sum()), 0, 0)
    return _result(*planes, other, tol)


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

    Examples
    --------
    >>> frobenius_cosine(np.eye(2), 3 * np.eye(2))
    1.0
    """
    return float(cosine(np.ravel(a), np.ravel(b)))


def w_att_svm_nuclear(
    z: NDArray[np.float64],
    x: NDArray[np.float64],
    selected: NDArray[np.int_],
    *,
    soft_c: float = 1e4,
    per_input: int = 1,
    tol: float = 1e-6,
    max_rounds: int = 100,
    query_bias: bool = True,
) -> WSVMResult:
    """The nuclear-norm (W-ATT-SVM): min ||W||_* s.t. a_i^T W (x_{i,o_i} - x_it) >= 1, t != o_i.

    The implicit bias of W trained as the product W_Q^T W_K (Tarzanagh et al., "Transformers as Support Vector
    Machines", 2023). W lies in span{a_i} x R^C (projecting onto it lowers ||W||_* and keeps every margin), so the
    SDP is solved in that basis, on cutting planes as :func:`w_att_svm`; an interior-point solve, to ``tol`` in
    the margins. Where no W meets every margin, the box ``soft_c`` on the multipliers makes it the soft-margin
    problem min ||W||_* + soft_c sum hinge (``hard`` False, ``met`` < 1).

    Parameters
    ----------
    z : ndarray, shape (n, C)
        Query inputs.
    x : ndarray, shape (n, T, C)
        Token inputs.
    selected : ndarray of int, shape (n,)
        The selected token o_i of each input.
    soft_c : float
        Weight of the hinge loss where no W meets every margin (the box of the dual).
    per_input : int
        Violated constraints added per input per round.
    tol : float
        A margin counts as met at 1 - tol.
    max_rounds : int
        Cutting-plane rounds at most.
    query_bias : bool
        W with the query-bias row (a_i = [z_i; 1]), else a_i = z_i.

    Returns
    -------
    WSVMResult
        W_mm (shape (C + 1, C), or (C, C)) of the nuclear norm, the fraction of margins met, the counts.
    """
    a, d, other = _differences(z, x, selected, query_bias)
    basis = np.linalg.svd(a.T, full_matrices=False)[0]  # span{a_i}

    def solve(ak: NDArray, dk: NDArray, _alpha: NDArray) -> tuple[NDArray, NDArray]:
        return _nuclear_dual(ak, dk, soft_c)

    w, margins, alpha, rounds = _cutting_planes(a @ basis, d, other, solve, per_input, tol, max_rounds)
    res = _result(w, margins, alpha, rounds, other, tol)
    return WSVMResult(basis @ w, res.hard, res.met, res.n_constraints, res.support, rounds)
