"""The nuclear-norm (W-ATT-SVM) of one attention head (:mod:`.w_svm`): the implicit bias of W trained as the
product W_Q^T W_K, solved as the semidefinite programme max 1^T alpha s.t. ||sum_k alpha_k a_k d_k^T||_2 <= 1,
alpha >= 0 (the dual of min ||W||_*) on cutting planes, as the Frobenius one; feasibility, shared by both norms,
decided by the Frobenius hard margin (:mod:`.w_svm_hard`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.w_svm import W_SVM_TOL, WSVMResult, _checked_inputs, _differences, _result
from maxmargin.core.w_svm_dual import NUMPY, Planes, _cutting_planes, _nuclear_dual
from maxmargin.core.w_svm_hard import _feasible, _hard_margin_planes


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
    SDP is solved in that basis, on cutting planes as :func:`~maxmargin.core.w_svm.w_att_svm`. Feasibility is
    decided by the hard problem, the Frobenius one's (both norms share the feasible set): where some W meets every
    margin the SDP is the hard problem, whatever ``soft_c``; where none does, the box ``soft_c`` on the multipliers
    makes it the soft-margin problem min ||W||_* + soft_c sum hinge (``hard`` False, ``met`` < 1). Each round's SDP
    is accepted by its duality gap (at most ``tol``, relative), whatever cvxopt's status says; ``status`` records
    how it was solved (:class:`~maxmargin.core.w_svm.WSVMResult`), an ArithmeticError where it could not be.

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
    feasible, scale = _feasibility_and_scale(a, d, other, max_rounds)
    box = np.inf if feasible else soft_c
    planes = _nuclear_planes(a, d, other, box, scale, per_input, tol, max_rounds)
    if feasible:
        _check_hard_margins(planes, other, tol, max_rounds)
    return _result(planes, other, tol, feasible)


def _feasibility_and_scale(
    a: NDArray[np.float64], d: NDArray[np.float64], other: NDArray[np.bool_], max_rounds: int
) -> tuple[bool, float]:
    """Whether some W meets every margin, decided by the Frobenius hard margin, and the scale s of the differences
    the SDP is solved on: s = ||W_F||_F, the Frobenius optimum's norm, where it is feasible, else 1."""
    frobenius = _hard_margin_planes(a, d, other, 4, W_SVM_TOL, max_rounds, NUMPY)
    feasible = _feasible(frobenius, a, d, other, W_SVM_TOL) is not None
    # s puts the optimum ||W_mm||_* / s in [1, sqrt(C)] (||W||_F <= ||W||_* <= sqrt(rank) ||W||_F), so that cvxopt's
    # absolute tolerances mean the same at any scale of the inputs.
    scale = float(np.linalg.norm(frobenius[0])) if feasible else 1.0
    return feasible, scale


def _nuclear_planes(
    a: NDArray[np.float64],
    d: NDArray[np.float64],
    other: NDArray[np.bool_],
    box: float,
    scale: float,
    per_input: int,
    tol: float,
    max_rounds: int,
) -> Planes:
    """The SDP dual, multipliers boxed by ``box``, on cutting planes, in the basis of span{a_i} and on the
    differences scaled by ``scale``; W mapped back to the inputs' coordinates and scale."""
    basis = np.linalg.svd(a.T, full_matrices=False)[0]  # span{a_i}

    def solve(ak: NDArray, dk: NDArray, _alpha: NDArray, _keys: NDArray) -> tuple[NDArray, NDArray, str]:
        return _nuclear_dual(ak, dk, box, tol)

    planes = _cutting_planes(a @ basis, d * scale, other, solve, per_input, tol, max_rounds)
    return planes._replace(w=scale * basis @ planes.w)


def _check_hard_margins(planes: Planes, other: NDArray[np.bool_], tol: float, max_rounds: int) -> None:
    """An ArithmeticError where the planes of an instance some W meets leave a margin below 1 - ``tol``."""
    unmet = int(np.sum(planes.margins[other] < 1.0 - tol))
    if unmet:
        raise ArithmeticError(
            f"the nuclear-norm W-ATT-SVM left {unmet} of {int(other.sum())} margins unmet after {planes.rounds} "
            f"cutting-plane rounds on an instance some W meets: the rounds ran out (max_rounds = {max_rounds})"
        )
