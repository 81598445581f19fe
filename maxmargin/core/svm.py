"""Max-margin problems of the paper: (ATT-SVM), the relaxed problem (10) and (SVM).

Tarzanagh et al., "Max-Margin Token Selection in Attention Mechanism", NeurIPS 2023, Sec. 2-3.
All problems have the form  min ||p||  s.t.  D p >= b  with b in {0, 1}: this module builds D and b, and
:mod:`maxmargin.core.min_norm` solves them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.min_norm import SVMResult, kkt_violation, least_distance, lp_feasible, solve_min_norm

# Relative KKT tolerance at which a max-margin solution is accepted (the census reads its own: census.svm_tol).
SVM_TOL = 1e-9
# Relative tolerance of the equality (k_{i alpha_i} - k_it)^T p_mm = 1 that makes t an SVM-neighbour (Definition 2).
NEIGHBOR_TOL = 1e-7


def _constraints(K: NDArray[np.float64], alpha: NDArray[np.int_]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Difference vectors k_{i alpha_i} - k_it, shape (n, T, d), and mask t != alpha_i, shape (n, T).

    Constraint rows of (ATT-SVM) and eq. (10), for arguments checked by the caller.
    """
    n, T, _ = K.shape
    diff = K[np.arange(n), alpha][:, None, :] - K
    return diff, np.arange(T)[None, :] != alpha[:, None]


def p_relax(
    K: NDArray[np.float64], alpha: NDArray[np.int_], support: NDArray[np.bool_], *, tol: float = SVM_TOL
) -> SVMResult:
    """Relaxed max-margin attention problem: margin 1 on support inputs, 0 on the rest.

    Eq. (10) (Theorem 6): p^T(k_{i alpha_i} - k_it) >= 1 for i in S, >= 0 for i not in S, t != alpha_i.

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys.
    alpha : ndarray of int, shape (n,)
        The selected token of each input.
    support : ndarray of bool, shape (n,)
        The inputs whose constraint is kept (support vectors of (SVM)).
    tol : float
        Relative KKT tolerance (default :data:`SVM_TOL`).

    Returns
    -------
    SVMResult
        The solution (``solution``, shape (d,); None if infeasible), status, active constraints, KKT residual.

    Examples
    --------
    Margin 1 on the inputs of ``support``, 0 on the others (here none is kept: p = 0 is optimal):

    >>> import numpy as np
    >>> from maxmargin.core import p_relax
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> p_relax(K, np.array([0]), support=np.array([False])).solution
    array([0., 0.])
    """
    K, alpha, support, tol = check_arrays(
        K=(K, "(n, T, d)"), alpha=(alpha, "int (n,) < T"), support=(support, "bool (n,)"), tol=(tol, "()")
    )
    diff, mask = _constraints(K, alpha)
    b = np.broadcast_to(support[:, None], mask.shape)[mask].astype(np.float64)
    res = solve_min_norm(diff[mask], b, tol=tol)
    if not res.feasible:
        return res
    active = np.zeros(mask.shape, dtype=bool)
    active[mask] = res.active
    return SVMResult(res.solution, True, res.status, active, res.kkt_residual)


def att_svm(K: NDArray[np.float64], alpha: NDArray[np.int_], *, tol: float = SVM_TOL) -> SVMResult:
    """Max-margin attention direction p_mm(alpha) separating token alpha_i from the rest of input i.

    (ATT-SVM), Sec. 2: argmin ||p|| s.t. p^T(k_{i alpha_i} - k_it) >= 1 for all t != alpha_i, all i.

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys.
    alpha : ndarray of int, shape (n,)
        The selected token of each input.
    tol : float
        Relative KKT tolerance (default :data:`SVM_TOL`).

    Returns
    -------
    SVMResult
        The solution (``solution``, shape (d,); None if infeasible), status, active constraints, KKT residual.

    Examples
    --------
    Token 0 of one input against the two others, (1, -1) . p >= 1 and (2, 1) . p >= 1, both active:

    >>> import numpy as np
    >>> from maxmargin.core import att_svm
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> res = att_svm(K, np.array([0]))
    >>> np.round(res.solution, 6), res.active
    (array([ 0.666667, -0.333333]), array([[False,  True,  True]]))
    >>> print(round(res.norm, 6))  # sqrt(5) / 3: the margin is 1 / norm
    0.745356

    A token inside the segment of the others cannot be separated: no solution, and no direction.

    >>> res = att_svm(np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0]]]), np.array([0]))
    >>> res.feasible, res.solution, res.direction
    (False, None, None)
    """
    K, alpha, tol = check_arrays(K=(K, "(n, T, d)"), alpha=(alpha, "int (n,) < T"), tol=(tol, "()"))
    return p_relax(K, alpha, np.ones(K.shape[0], dtype=bool), tol=tol)


def _v_problem(R: NDArray[np.float64], Y: NDArray[np.float64]) -> NDArray[np.float64]:
    """The rows Y_i r_i of (SVM), for arguments checked by the caller (R (n, d), Y (n,) of +-1)."""
    if not np.all(np.abs(Y) == 1.0):
        raise ValueError(f"Y must hold labels +1 or -1: got {sorted(set(Y.tolist()))[:5]}")
    return Y[:, None] * R


def v_svm_qp(R: NDArray[np.float64], Y: NDArray[np.float64], *, tol: float = SVM_TOL) -> SVMResult:
    """Bias-free hard-margin SVM v_mm solved as a cvxopt QP (cross-check of v_svm).

    (SVM), Sec. 3: argmin ||v|| s.t. Y_i v^T r_i >= 1; ``active`` marks the support vectors.

    Parameters
    ----------
    R : ndarray, shape (n, d)
        Features r_i.
    Y : ndarray, shape (n,)
        Labels.
    tol : float
        Relative KKT tolerance (default :data:`SVM_TOL`).

    Returns
    -------
    SVMResult
        The solution (``solution``, shape (d,); None if infeasible), status, active constraints, KKT residual.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import v_svm_qp
    >>> res = v_svm_qp(np.array([[1.0, 1.0], [1.0, -1.0]]), np.array([1.0, -1.0]))
    >>> np.round(res.solution, 6) + 0.0, res.active
    (array([0., 1.]), array([ True,  True]))
    """
    R, Y, tol = check_arrays(R=(R, "(n, d)"), Y=(Y, "(n,)"), tol=(tol, "()"))
    D = _v_problem(R, Y)
    return solve_min_norm(D, np.ones(D.shape[0]), tol=tol)


def v_svm(R: NDArray[np.float64], Y: NDArray[np.float64], *, tol: float = SVM_TOL) -> SVMResult:
    """Bias-free hard-margin SVM v_mm solved with scikit-learn's SVC, as in the paper's experiments.

    (SVM), Sec. 3: argmin ||v|| s.t. Y_i v^T r_i >= 1; ``active`` marks the support vectors (by margin).

    Parameters
    ----------
    R : ndarray, shape (n, d)
        Features r_i.
    Y : ndarray, shape (n,)
        Labels.
    tol : float
        Relative KKT tolerance (default :data:`SVM_TOL`).

    Returns
    -------
    SVMResult
        The solution (``solution``, shape (d,); None if infeasible), status, active constraints, KKT residual.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import v_svm
    >>> res = v_svm(np.array([[1.0, 1.0], [1.0, -1.0]]), np.array([1.0, -1.0]))
    >>> np.round(res.solution, 6) + 0.0, res.active
    (array([0., 1.]), array([ True,  True]))
    """
    from sklearn.svm import SVC

    R, Y, tol = check_arrays(R=(R, "(n, d)"), Y=(Y, "(n,)"), tol=(tol, "()"))
    D = _v_problem(R, Y)
    b = np.ones(D.shape[0])
    if np.any(~np.any(D != 0.0, axis=1)) or not lp_feasible(D, b):
        return SVMResult.infeasible()
    # SVC always fits an intercept.  On the symmetrised data {(r_i, Y_i)} u {(-r_i, -Y_i)} the optimal
    # intercept is 0: if (w, c) is optimal then so is (w, -c) by symmetry, hence (w, 0) by convexity, and
    # w is unique, so w equals the bias-free max-margin solution v_mm.  Large C = hard margin.
    X = np.vstack([R, -R])
    y = np.concatenate([Y, -Y])
    clf = SVC(kernel="linear", C=1e8, tol=1e-10).fit(X, y)
    w = np.asarray(clf.coef_, dtype=np.float64).ravel()
    return solve_min_norm(D, b, tol=tol, start=w)


def svm_neighbors(
    K: NDArray[np.float64], alpha: NDArray[np.int_], p_mm: NDArray[np.float64], *, tol: float = NEIGHBOR_TOL
) -> NDArray[np.bool_]:
    """SVM-neighbour mask T_i: tokens t != alpha_i on the margin, (k_{i alpha_i} - k_it)^T p_mm = 1.

    Definition 2; equality is tested within tol relative to max(1, ||k_{i alpha_i} - k_it|| ||p_mm||).

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys.
    alpha : ndarray of int, shape (n,)
        The selected token of each input.
    p_mm : ndarray, shape (d,)
        The (ATT-SVM) solution at alpha.
    tol : float
        Relative tolerance of the equality (default :data:`NEIGHBOR_TOL`).

    Returns
    -------
    ndarray of bool, shape (n, T)
        The mask T_i.

    Examples
    --------
    The paper's Figure 1(b) keys: the GMM (token 0) has one SVM-neighbour, the token at the origin.

    >>> import numpy as np
    >>> from maxmargin.core import att_svm, svm_neighbors
    >>> K = np.array([[[-0.1, 1.0], [1.0, 0.0], [0.0, 0.0]]])
    >>> svm_neighbors(K, np.array([0]), att_svm(K, np.array([0])).solution)
    array([[False, False,  True]])
    """
    if p_mm is None:
        raise ValueError(
            "svm_neighbors: p_mm is None: the (ATT-SVM) problem at alpha has no solution (its SVMResult.feasible is "
            "False: the selected tokens cannot be separated from the others), so no token is on its margin"
        )
    K, alpha, p, tol = check_arrays(
        K=(K, "(n, T, d)"), alpha=(alpha, "int (n,) < T"), p_mm=(p_mm, "(d,)"), tol=(tol, "()")
    )
    diff, mask = _constraints(K, alpha)
    scale = np.maximum(1.0, np.linalg.norm(diff, axis=2) * np.linalg.norm(p))
    return mask & (np.abs(diff @ p - 1.0) <= tol * scale)


def att_svm_ldp(K: NDArray[np.float64], alpha: NDArray[np.int_], *, tol: float = SVM_TOL) -> SVMResult | None:
    """(ATT-SVM) at alpha by least-distance programming (NNLS) alone, or None when its KKT check fails.

    Sec. 2 (ATT-SVM), as :func:`att_svm` without cvxopt: the NNLS solution is accepted only if it satisfies
    the KKT conditions to ``tol`` (relative), which makes it the unique optimum. Many times faster than
    :func:`att_svm` on small problems (the census solves thousands).

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys.
    alpha : ndarray of int, shape (n,)
        The selected token of each input.
    tol : float
        Relative KKT tolerance (default :data:`SVM_TOL`).

    Returns
    -------
    SVMResult or None
        The solution, or None when the NNLS solution fails its KKT check.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import att_svm_ldp
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> np.round(att_svm_ldp(K, np.array([0])).solution, 6)  # as att_svm's
    array([ 0.666667, -0.333333])
    """
    K, alpha, tol = check_arrays(K=(K, "(n, T, d)"), alpha=(alpha, "int (n,) < T"), tol=(tol, "()"))
    diff, mask = _constraints(K, alpha)
    D = diff[mask]
    b = np.ones(D.shape[0])
    if not np.all(np.any(D != 0.0, axis=1)):
        return None  # a duplicate of a selected token: leave it to the general solver
    sol = least_distance(D, b)
    if sol is None:
        return None
    p, lam = sol
    scale = max(1.0, float(np.linalg.norm(p)) * float(np.max(np.linalg.norm(D, axis=1))))
    kkt = kkt_violation(D, b, p, lam)
    if not np.isfinite(kkt) or kkt > tol * scale:
        return None
    active = np.zeros(mask.shape, dtype=bool)
    active[mask] = (D @ p - b) <= tol * scale
    return SVMResult(p, True, "optimal", active, kkt)
