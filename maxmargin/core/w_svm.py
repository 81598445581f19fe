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
sets. The duals on a working set: :mod:`.w_svm_dual`; what a head's cosine with W_mm is measured against (its rank
ceiling, the constraints' span, random matrices of its rank): :mod:`.w_svm_nulls`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.gd import cosine
from maxmargin.core.w_svm_dual import (
    NUMPY,
    LinearAlgebra,
    Planes,
    _cutting_planes,
    _frobenius_solve,
    _nuclear_dual,
    _size,
)

# Margin tolerance: a constraint a^T W d >= 1 counts as met at 1 - W_SVM_TOL (the cutting planes stop there).
W_SVM_TOL = 1e-9
# No W meets every margin when the constraint features' convex hull comes closer to 0 than this fraction of their
# typical norm f (its nearest point is at rho = 1 / ||W_mm||_F): 0 is in the hull to the solvers' precision, and the
# hard-margin cutting planes stop once ||W||_F >= 1 / (HULL_TOL f). A feasible probe is far from it (the largest
# ||W_mm||_F f seen: about 1e3).
HULL_TOL = 1e-5
# A solve's margins m_k = sum_l G_kl alpha_l carry an error that grows with the multipliers, up to about
# SOLVE_RTOL sum_l alpha_l max_l G_ll: the nearest-hull fallback's QP, where pivoting cannot polish it, is solved
# to 1e-12 (block pivoting's error, float64 rounding, is far below). A hard margin counts as met at
# 1 - max(tol, that): at multipliers of 5e7 a margin of 1 - 3.9e-9 is the optimum to float64's precision, and
# 1 - 1e-9 is tighter than it allows.
SOLVE_RTOL = 1e-11
# Where the planes stop with some margins just short of 1 (the hull fallback's QP, unpolished, on an ill-conditioned
# working set), W / (its smallest margin) meets every margin; it is accepted as the hard solution (status
# "repaired") where its objective 1/2 ||W||^2 is within this relative gap of the multipliers' dual objective
# 1^T alpha - 1/2 ||sum alpha_k a_k d_k^T||^2, a lower bound of the optimum: then ||W - W_mm|| <= sqrt(2 gap) ||W||.
REPAIR_GAP = 1e-3
_REPAIRED = -1.0  # what _feasible returns for such planes (a slack is never negative)


@dataclass(frozen=True)
class WSVMResult:
    """The solution of (W-ATT-SVM) of one head on one probe set.

    ``solution`` is W_mm ((C + 1) x C, unnormalised); ``hard``: every margin met (the hard-margin optimum), else
    the soft-margin one; ``met``: the fraction of the hard constraints it meets; ``support``: constraints with a
    positive multiplier; ``rounds``: cutting-plane rounds; ``status``: how its solves were solved, the worst of its
    rounds: ``"optimal"`` (exact pivoting, or cvxopt's status optimal), ``"looser"`` (cvxopt optimal only at
    tolerances 1000 times looser), ``"repaired"`` (W rescaled onto its margins and accepted by its duality gap: the
    nuclear norm's SDP whose cvxopt status is not optimal, at most ``tol``; the Frobenius planes whose last solve
    left margins just short of 1, at most :data:`REPAIR_GAP`). A solve that is none of these raises an
    ArithmeticError naming it.
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
    problem (:func:`_feasible`)."""
    w, margins, alpha, rounds, status = planes
    met = float(np.mean(margins[other] >= 1.0 - met_at))
    support = int(np.sum(alpha > 1e-8 * max(1.0, float(alpha.max(initial=0.0)))))
    return WSVMResult(w, hard, met, int(other.sum()), support, rounds, status)


def _hull_bound(a: NDArray[np.float64], d: NDArray[np.float64]) -> float:
    """1 / (HULL_TOL f), f the typical ||a_i|| ||d_it||: from this ||W||_F on, no W counts as meeting every margin."""
    return 1.0 / (HULL_TOL * np.sqrt(np.mean(np.sum(a**2, axis=1)[:, None] * np.sum(d**2, axis=2))))


def _hard_margin_planes(
    a: NDArray[np.float64],
    d: NDArray[np.float64],
    other: NDArray[np.bool_],
    per_input: int,
    tol: float,
    max_rounds: int,
    linalg: LinearAlgebra,
) -> Planes | None:
    """The hard-margin dual of (W-ATT-SVM) on cutting planes, stopped at ||W||_F >= :func:`_hull_bound`; None where
    a token equals the selected one (d_it = 0: a^T W d_it >= 1 cannot hold)."""
    if not np.all(np.linalg.norm(d, axis=-1)[other] > 0):
        return None
    hard_solve = _frobenius_solve(False, np.inf, linalg)  # unboxed: the box is the soft margin's alone
    return _cutting_planes(a, d, other, hard_solve, per_input, tol, max_rounds, _hull_bound(a, d))


def _feasible(
    planes: Planes | None, a: NDArray[np.float64], d: NDArray[np.float64], other: NDArray[np.bool_], tol: float
) -> float | None:
    """Whether some W meets every margin, decided by the hard-margin planes: the slack 1 - max(tol, SOLVE_RTOL
    sum_k alpha_k max_k ||a_k||^2 ||d_k||^2) at which their W meets every margin (:data:`SOLVE_RTOL`; 1e-6 at
    most), ||W||_F below :func:`_hull_bound`; :data:`_REPAIRED` where some margins fall short of that but W / its
    smallest margin is certified within :data:`REPAIR_GAP`; None where no W does (a token equal to the selected one,
    ||W||_F at the bound, read by :func:`_size`). An ArithmeticError where the planes stopped short of all three
    (out of rounds, or a solve that misses its own margins by more than the certificate allows)."""
    if planes is None:
        return None
    w, margins, alpha, rounds, _ = planes
    if _size(w, alpha) >= _hull_bound(a, d):
        return None
    kernel = np.max(np.sum(a**2, axis=1)[:, None] * np.sum(d**2, axis=2), where=other, initial=0.0)
    slack = min(max(tol, SOLVE_RTOL * float(alpha.sum()) * kernel), 1e-6)
    if margins[other].min() >= 1.0 - slack:
        return slack
    unmet = int(np.sum(margins[other] < 1.0 - slack))
    if _repair_gap(w, margins[other], alpha) <= REPAIR_GAP:
        return _REPAIRED
    raise ArithmeticError(
        f"the hard-margin W-ATT-SVM left {unmet} of {int(other.sum())} margins below 1 - {slack:.1e} (the smallest "
        f"{margins[other].min():.9f}) after {rounds} cutting-plane rounds, with ||W||_F below the bound at which no "
        "W counts as meeting them: out of rounds (raise max_rounds) or a solve that misses its own margins"
    )


def _repair_gap(w: NDArray[np.float64], margins: NDArray[np.float64], alpha: NDArray[np.float64]) -> float:
    """The relative duality gap of W / min margin (which meets every margin) against the multipliers' dual
    objective 1^T alpha - 1/2 ||W||^2 (:data:`REPAIR_GAP`); inf where some margin is not positive."""
    low = float(margins.min())
    if not low > 0:
        return np.inf
    primal = 0.5 * float(np.sum(w**2)) / low**2
    return (primal - (float(alpha.sum()) - 0.5 * float(np.sum(w**2)))) / primal


def _repaired(planes: Planes, other: NDArray[np.bool_]) -> Planes:
    """The planes' W divided by its smallest margin, so that it meets every margin, with status "repaired"."""
    w, margins, alpha, rounds, _ = planes
    low = float(margins[other].min())
    return w / low, margins / low, alpha, rounds, "repaired"


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
    1 / (:data:`HULL_TOL` f), f the features' typical norm, counts as none meeting them; a margin counts as met
    at 1 - ``tol``, or lower by the rounding its multipliers carry, :data:`SOLVE_RTOL`). Where it does not (no W
    meets every margin), the soft-margin (hinge-loss) dual, 0 <= alpha <= ``soft_c``, by cvxopt on the same
    planes (``hard`` False). A cvxopt solve whose status is not optimal is solved again at looser tolerances
    (``status``), an ArithmeticError where it fails again.

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
    if slack == _REPAIRED:  # certified within REPAIR_GAP: W rescaled onto its margins
        return _result(_repaired(planes, other), other, 0.0, True)
    if slack is not None:
        return _result(planes, other, slack, True)
    if soft:  # no W meets every margin
        planes = _cutting_planes(a, d, other, _frobenius_solve(True, soft_c), per_input, tol, max_rounds)
    if planes is None:  # a copy of the selected token, and no soft-margin solve asked for
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
    SDP is solved in that basis, on cutting planes as :func:`w_att_svm`. Feasibility is decided by the hard
    problem, the Frobenius one's (both norms share the feasible set): where some W meets every margin the SDP is
    the hard problem, whatever ``soft_c``; where none does, the box ``soft_c`` on the multipliers makes it the
    soft-margin problem min ||W||_* + soft_c sum hinge (``hard`` False, ``met`` < 1). Each round's SDP is accepted
    by its duality gap (at most ``tol``, relative), whatever cvxopt's status says; ``status`` records how it was
    solved (:class:`WSVMResult`), an ArithmeticError where it could not be.

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
        A margin counts as met at 1 - tol; the SDP's relative duality gap at most.
    max_rounds : int
        Cutting-plane rounds at most.
    query_bias : bool
        W with the query-bias row (a_i = [z_i; 1]), else a_i = z_i.

    Returns
    -------
    WSVMResult
        W_mm (shape (C + 1, C), or (C, C)) of the nuclear norm, the fraction of margins met, the counts, the
        solve's ``status``.

    Examples
    --------
    Two inputs separated along different axes: the Frobenius W_mm has rank 2, the nuclear one rank 1, each the
    least of its own norm.

    >>> import numpy as np
    >>> from maxmargin.core import w_att_svm, w_att_svm_nuclear
    >>> z = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> x = np.array([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]])
    >>> frobenius, nuclear = w_att_svm(z, x, np.array([1, 1])), w_att_svm_nuclear(z, x, np.array([1, 1]))
    >>> nuclear.hard, nuclear.status, np.round(nuclear.solution, 4)
    (True, 'optimal', array([[0.3333, 0.3333],
           [0.3333, 0.3333],
           [0.6667, 0.6667]]))
    >>> [round(float(np.linalg.svd(res.solution, compute_uv=False).sum()), 4) for res in (frobenius, nuclear)]
    [1.366, 1.1547]
    """
    z, x, selected, soft_c, per_input, tol, max_rounds = _checked_inputs(
        z, x, selected, soft_c, per_input, tol, max_rounds
    )
    a, d, other = _differences(z, x, selected, query_bias)
    frobenius = _hard_margin_planes(a, d, other, 4, W_SVM_TOL, max_rounds, NUMPY)
    feasible = _feasible(frobenius, a, d, other, W_SVM_TOL) is not None
    # Feasible: the hard problem (no box), on differences scaled by s = ||W_F||_F (the Frobenius optimum's norm), so
    # that its optimum ||W_mm||_* / s lies in [1, sqrt(C)] (||W||_F <= ||W||_* <= sqrt(rank) ||W||_F) and cvxopt's
    # absolute tolerances mean the same at any scale of the inputs.
    scale = float(np.linalg.norm(frobenius[0])) if feasible else 1.0
    box = np.inf if feasible else soft_c
    basis = np.linalg.svd(a.T, full_matrices=False)[0]  # span{a_i}

    def solve(ak: NDArray, dk: NDArray, _alpha: NDArray) -> tuple[NDArray, NDArray, str]:
        return _nuclear_dual(ak, dk, box, tol)

    w, margins, alpha, rounds, status = _cutting_planes(a @ basis, d * scale, other, solve, per_input, tol, max_rounds)
    unmet = int(np.sum(margins[other] < 1.0 - tol))
    if feasible and unmet:
        raise ArithmeticError(
            f"the nuclear-norm W-ATT-SVM left {unmet} of {int(other.sum())} margins unmet after {rounds} "
            f"cutting-plane rounds on an instance some W meets: raise max_rounds (now {max_rounds})"
        )
    return _result((scale * basis @ w, margins, alpha, rounds, status), other, tol, feasible)
