"""The W-parametrised max-margin problem (W-ATT-SVM) of one attention head, on given token inputs.

Tarzanagh et al., NeurIPS 2023, Lemma 1 and (ATT-SVM) with the key-query matrix W in place of p: for query inputs
z_i (C) with a_i = [z_i; 1] (the 1 carries the query bias), token inputs x_it (C) and the selected token o_i,

    min ||W||  s.t.  a_i^T W (x_{i,o_i} - x_it) >= 1  for every i and every t != o_i,      (W-ATT-SVM)

with W of shape (C + 1) x C.

Lemma 1 ties it to (ATT-SVM). With one query u for every input and no bias row (``query_bias=False``, a_i = u),
the logits X_i W^T u see W only through p = W^T u: gradient descent on W from W(0) = u p(0)^T / ||u||^2, with
step eta / ||u||^2, stays at W(t) = u p(t)^T / ||u||^2, p(t) gradient descent on p with the keys K_i = X_i. The
margins u^T W (x_io - x_it) = p^T (x_io - x_it) are those of (ATT-SVM), and the least ||W|| with W^T u = p is
||p|| / ||u||, at the rank-one W = u p^T / ||u||^2 (Frobenius and nuclear norms alike): W_mm = u p_mm^T / ||u||^2,
p_mm the (ATT-SVM) solution of :func:`~maxmargin.core.svm.att_svm` on the keys X.

    >>> import numpy as np
    >>> from maxmargin.core import att_svm, w_att_svm
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]], [[0.5, 0.5], [1.0, -1.0], [0.0, 0.0]]])
    >>> selected, u = np.array([0, 0]), np.array([2.0, 1.0])
    >>> p_mm = att_svm(X, selected).solution
    >>> w_mm = w_att_svm(np.tile(u, (2, 1)), X, selected, query_bias=False).solution
    >>> p_mm, w_mm
    (array([2.5, 1.5]), array([[1. , 0.6],
           [0.5, 0.3]]))
    >>> bool(np.allclose(w_mm, np.outer(u, p_mm) / (u @ u)))
    True

In the Frobenius norm (W-ATT-SVM) is an SVM in vec(W) with the features
a_i (x) (x_{i,o_i} - x_it), solved here in its dual with the kernel (a_i . a_j)(d_it . d_js) on a working set of
constraints (cutting planes: the full set is only ever evaluated, never factorised). Where no W meets every margin,
the soft-margin problem (hinge loss with weight ``soft_c``) is solved instead and the fraction of hard margins met
reported. The nuclear-norm version (the implicit bias of W trained as W_Q^T W_K) is the semidefinite programme
max 1^T alpha s.t. ||sum_k alpha_k a_k d_k^T||_2 <= 1, alpha >= 0 (the dual of min ||W||_*), on the same working
sets: :mod:`.w_svm_nuclear`. Whether some W meets every margin (both norms alike): :mod:`.w_svm_hard`; the duals on
a working set: :mod:`.w_svm_dual`; what a head's cosine with W_mm is measured against (its rank ceiling, the
constraints' span, random matrices of its rank): :mod:`.w_svm_nulls`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.gd import cosine
from maxmargin.core.w_svm_dual import NUMPY, LinearAlgebra, Planes, _cutting_planes, _frobenius_solve
from maxmargin.core.w_svm_hard import _REPAIRED, _feasible, _hard_margin_planes, _repaired

# Margin tolerance: a constraint a^T W d >= 1 counts as met at 1 - W_SVM_TOL (the cutting planes stop there).
W_SVM_TOL = 1e-9


@dataclass(frozen=True)
class WSVMResult:
    """The solution of (W-ATT-SVM) of one head on one probe set.

    ``solution`` is W_mm ((C + 1) x C, unnormalised); ``hard``: every margin met (the hard-margin optimum), else the
    soft-margin one. ``hard`` False means that no W meets every margin, or that the max-margin W lies beyond the
    cut-off (:data:`~maxmargin.core.w_svm_hard.HULL_TOL`): the multipliers' point of the features' convex hull
    within 1e-5 of 0 against the norms of the features that make it, which at an optimum means ||W_mm||_F times the
    mean norm of its support's features a_k d_k^T past 1e5 (the mean cosine of W_mm with them below 1e-5); such an
    instance counts as having none, unless a W the solver finds meets every margin (then ``hard``). ``met``: the
    fraction of the hard constraints it meets; ``support``: constraints with a
    positive multiplier; ``rounds``: cutting-plane rounds; ``status``: how its solves were solved, the worst of its
    rounds: ``"optimal"`` (exact on its active set, or cvxopt's status optimal), ``"looser"`` (cvxopt optimal only at
    tolerances 1000 times looser), ``"repaired"`` (W rescaled onto its margins and accepted by its duality gap: the
    nuclear norm's SDP whose cvxopt status is not optimal, at most ``tol``; the Frobenius planes whose last solve
    left margins just short of 1, at most :data:`~maxmargin.core.w_svm_hard.REPAIR_GAP`). A solve that is none of
    these raises an ArithmeticError naming it.
    """

    solution: NDArray[np.float64]
    hard: bool
    met: float
    n_constraints: int
    support: int
    rounds: int
    status: str = "optimal"


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
    >>> import numpy as np
    >>> from maxmargin.core import query_inputs
    >>> query_inputs(np.array([[2.0, 3.0]]))
    array([[2., 3., 1.]])
    """
    (z,) = check_arrays(z=(z, "(n, C)"))
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

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import w_logits
    >>> w = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])  # z_1 weighs the first coordinate, the bias the second
    >>> w_logits(w, np.array([[1.0, 5.0]]), np.array([[[1.0, 0.0], [0.0, 1.0]]]))
    array([[1., 2.]])
    """
    w, z, x = _checked(w, z, x, query_bias)
    return np.einsum("ic,itc->it", query_inputs(z, query_bias) @ w, x)


def _checked(w: NDArray, z: NDArray, x: NDArray, query_bias: bool, **more: tuple[object, str]) -> tuple[NDArray, ...]:
    """The argument check of a function of a head's W (with its query-bias row where ``query_bias``) on z, x."""
    shape = "(C + 1, C)" if query_bias else "(C, C)"
    z, x, w, *rest = check_arrays(z=(z, "(n, C)"), x=(x, "(n, T, C)"), w=(w, shape), **more)
    return (w, z, x, *rest)


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

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import w_margins
    >>> w = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 2.0]])  # the bias row: logits 2 x_t2
    >>> w_margins(w, np.zeros((1, 2)), np.array([[[1.0, 0.0], [0.0, 1.0]]]), np.array([1]))
    array([[ 2., inf]])
    """
    w, z, x, selected = _checked(w, z, x, query_bias, selected=(selected, "int (n,) < T"))
    logits = np.einsum("ic,itc->it", query_inputs(z, query_bias) @ w, x)
    n = len(logits)
    margins = logits[np.arange(n), selected][:, None] - logits
    margins[np.arange(n), selected] = np.inf
    return margins


def _checked_inputs(
    z: NDArray, x: NDArray, selected: NDArray, soft_c: float, per_input: int, tol: float, max_rounds: int
) -> tuple:
    """The argument check of the solvers: inputs, selection and knobs (positive)."""
    checked = check_arrays(
        z=(z, "(n, C)"),
        x=(x, "(n, T, C)"),
        selected=(selected, "int (n,) < T"),
        soft_c=(soft_c, "()"),
        per_input=(per_input, "int ()"),
        tol=(tol, "()"),
        max_rounds=(max_rounds, "int ()"),
    )
    if not (checked[3] > 0 and checked[4] >= 1 and checked[5] > 0 and checked[6] >= 1):
        raise ValueError(
            f"need soft_c > 0, per_input >= 1, tol > 0 and max_rounds >= 1: got soft_c={soft_c}, "
            f"per_input={per_input}, tol={tol}, max_rounds={max_rounds}"
        )
    return checked


def _differences(
    z: NDArray[np.float64], x: NDArray[np.float64], selected: NDArray[np.int_], query_bias: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """a_i, the differences d_it = x_{i,o_i} - x_it and the mask of the constraints (t != o_i)."""
    x = np.asarray(x, dtype=np.float64)
    n, T, _ = x.shape
    selected = np.asarray(selected, dtype=np.int64)
    d = x[np.arange(n), selected][:, None, :] - x
    return query_inputs(z, query_bias), d, np.arange(T)[None, :] != selected[:, None]


def _result(planes: Planes, other: NDArray[np.bool_], met_at: float, hard: bool) -> WSVMResult:
    """The result of the cutting planes: the margins met at 1 - ``met_at``, ``hard`` as decided by the hard
    problem (:func:`~maxmargin.core.w_svm_hard._feasible`)."""
    met = float(np.mean(planes.margins[other] >= 1.0 - met_at))
    alpha = planes.alpha
    support = int(np.sum(alpha > 1e-8 * max(1.0, float(alpha.max(initial=0.0)))))
    return WSVMResult(planes.w, hard, met, int(other.sum()), support, planes.rounds, planes.status)


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

    The hard-margin dual (alpha >= 0, W = sum_k alpha_k a_k d_k^T) on cutting planes by the dual active-set method
    of Goldfarb and Idnani, warm-started from the previous round (exact on its support, no QP tolerance; on a
    device, block principal pivoting first; cvxopt's QP for a round where both give up). Feasibility is decided
    by the hard problem (:mod:`.w_svm_hard`): its W meets every margin or it does not, whatever ``soft_c`` (the
    multipliers growing while W stays, their hull point within :data:`~maxmargin.core.w_svm_hard.HULL_TOL` of 0
    against each feature's own norm, counts as none meeting them; a margin counts as met at 1 - ``tol``, or lower by
    the rounding its multipliers carry, :data:`~maxmargin.core.w_svm_hard.SOLVE_RTOL`). Where it does not (no W
    meets every margin), the soft-margin (hinge-loss) dual, 0 <= alpha <= ``soft_c``, by cvxopt on the same planes
    (``hard`` False); where the soft W meets every margin all the same, it shows that some W does, and the hard
    problem is solved again without the cut-off. A cvxopt solve whose
    status is not optimal is solved again at looser tolerances (``status``), an ArithmeticError where it fails
    again.

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
        Where the hard-margin kernel and pivoting run (:data:`NUMPY`, or a torch device's for a wide head).
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

    >>> import numpy as np
    >>> from maxmargin.core import w_att_svm, w_margins
    >>> z, x = np.array([[1.0, 0.0]]), np.array([[[0.0, 0.0], [1.0, 0.0]]])
    >>> res = w_att_svm(z, x, np.array([1]))
    >>> res.hard, round(float(w_margins(res.solution, z, x, np.array([1]))[0, 0]), 9)
    (True, 1.0)
    """
    z, x, selected, soft_c, per_input, tol, max_rounds = _checked_inputs(
        z, x, selected, soft_c, per_input, tol, max_rounds
    )
    a, d, other = _differences(z, x, selected, query_bias)
    planes = _hard_margin_planes(a, d, other, per_input, tol, max_rounds, linalg)
    slack = _feasible(planes, a, d, other, tol)
    if slack is not None:
        return _hard_result(planes, other, slack)
    if soft:
        planes = _cutting_planes(a, d, other, _frobenius_solve(True, soft_c), per_input, tol, max_rounds)
        if planes.margins[other].min() >= 1.0 - tol:  # a W that meets every margin: past the cut-off, not none
            again = _cutting_planes(a, d, other, _frobenius_solve(False, np.inf, linalg), per_input, tol, max_rounds)
            return _hard_result(again, other, _feasible(again, a, d, other, tol, hull_tol=0.0))
    return _unmet_result(planes, a, d, other, tol)


def _hard_result(planes: Planes, other: NDArray[np.bool_], slack: float) -> WSVMResult:
    """The hard-margin result where some W meets every margin: the planes' W, its margins met at 1 - ``slack``;
    where :func:`~maxmargin.core.w_svm_hard._feasible` certified planes short of their margins (``_REPAIRED``
    within ``REPAIR_GAP``), their W rescaled onto its margins, which it then meets exactly."""
    if slack == _REPAIRED:
        return _result(_repaired(planes, other), other, 0.0, True)
    return _result(planes, other, slack, True)


def _unmet_result(
    planes: Planes | None, a: NDArray[np.float64], d: NDArray[np.float64], other: NDArray[np.bool_], tol: float
) -> WSVMResult:
    """The result where no W meets every margin (``hard`` False): the soft-margin planes, or the hard attempt
    where no soft solve was asked for; W = 0 where that attempt never ran (a copy of the selected token)."""
    if planes is None:
        return WSVMResult(np.zeros((a.shape[1], d.shape[2])), False, 0.0, int(other.sum()), 0, 0)
    return _result(planes, other, tol, False)


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
    >>> import numpy as np
    >>> from maxmargin.core import frobenius_cosine
    >>> frobenius_cosine(np.eye(2), 3 * np.eye(2))
    1.0
    """
    a, b = check_arrays(a=(a, "(p, q)"), b=(b, "(p, q)"))
    return float(cosine(np.ravel(a), np.ravel(b)))
