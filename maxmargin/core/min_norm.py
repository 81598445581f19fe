"""The solver behind every max-margin problem of the paper: min ||p|| s.t. D p >= b, with b in {0, 1}.

(ATT-SVM), the relaxed problem (10) and (SVM) (:mod:`maxmargin.core.svm`) are all of this form. It is solved as the
QP min 1/2 p^T p s.t. -D p <= -b (cvxopt), after an explicit LP feasibility check (HiGHS), and the QP solution is
polished to the exact minimum-norm point on its active set; least-distance programming (NNLS, Lawson & Hanson,
ch. 23) is the independent fallback. scipy and cvxopt are imported where they are used: most jobs import this module
and never solve (0.4 s a job).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays

_QP_OPTIONS = {"show_progress": False, "abstol": 1e-11, "reltol": 1e-11, "feastol": 1e-11, "maxiters": 200}


@dataclass(frozen=True)
class SVMResult:
    """Solution of a hard-margin min-norm problem (ATT-SVM), (10) or (SVM).

    Sec. 2 (ATT-SVM) and Sec. 3 (SVM), eq. (10); ``solution`` is unnormalised, None when infeasible.
    """

    solution: NDArray[np.float64] | None
    feasible: bool
    status: str
    active: NDArray[np.bool_] | None
    kkt_residual: float

    @classmethod
    def infeasible(cls) -> SVMResult:
        """The result of a problem whose constraints no p satisfies."""
        return cls(None, False, "infeasible", None, float("nan"))

    @property
    def norm(self) -> float:
        """||p_mm|| of (ATT-SVM) / ||v_mm|| of (SVM), nan if infeasible; 1/norm is the margin."""
        return float(np.linalg.norm(self.solution)) if self.solution is not None else float("nan")

    @property
    def direction(self) -> NDArray[np.float64] | None:
        """The max-margin direction p_mm / ||p_mm|| of Theorems 1-6; None if infeasible (check ``feasible``: the
        selected tokens cannot be separated, so there is no direction) or zero."""
        if self.solution is None or self.norm == 0.0:
            return None
        return self.solution / self.norm


def lp_feasible(D: NDArray[np.float64], b: NDArray[np.float64]) -> bool:
    """Whether {p : D p >= b} is non-empty, by an LP with zero objective (HiGHS).

    Existence of p_mm(alpha) in (ATT-SVM) (Definition 2 needs it) / separability for (SVM). HiGHS decides with
    status 0 (solved: feasible) or 2 (infeasible); any other status (iteration limit, numerical difficulties)
    decides nothing, and least-distance programming settles it: its NNLS finds a point iff the set is non-empty.

    Parameters
    ----------
    D : ndarray, shape (m, d)
        Constraint rows.
    b : ndarray, shape (m,)
        Right-hand sides.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import lp_feasible
    >>> lp_feasible(np.array([[1.0], [-1.0]]), np.array([1.0, 1.0]))  # p >= 1 and -p >= 1
    False
    >>> lp_feasible(np.array([[1.0], [-1.0]]), np.array([1.0, -2.0]))  # 1 <= p <= 2
    True
    """
    from scipy.optimize import linprog

    D, b = check_arrays(D=(D, "(m, d)"), b=(b, "(m,)"))
    res = linprog(np.zeros(D.shape[1]), A_ub=-D, b_ub=-b, bounds=(None, None), method="highs")
    if res.status in (0, 2):
        return res.status == 0
    return least_distance(D, b) is not None


def kkt_violation(
    D: NDArray[np.float64], b: NDArray[np.float64], p: NDArray[np.float64], lam: NDArray[np.float64]
) -> float:
    """Max KKT violation of (p, lam) for min 1/2||p||^2 s.t. D p >= b.

    Primal feasibility, lam >= 0, stationarity p = D^T lam, complementary slackness lam * slack = 0.

    Parameters
    ----------
    D : ndarray, shape (m, d)
        Constraint rows.
    b : ndarray, shape (m,)
        Right-hand sides.
    p : ndarray, shape (d,)
        The point.
    lam : ndarray, shape (m,)
        Its multipliers.

    Returns
    -------
    float
        The largest violation (absolute).

    Examples
    --------
    min ||p|| s.t. p >= 1 in one dimension: p = 1 with multiplier 1 meets every condition, p = 2 does not.

    >>> import numpy as np
    >>> from maxmargin.core import kkt_violation
    >>> D, b = np.array([[1.0]]), np.array([1.0])
    >>> kkt_violation(D, b, np.array([1.0]), np.array([1.0])), kkt_violation(D, b, np.array([2.0]), np.array([1.0]))
    (0.0, 1.0)
    """
    D, b, p, lam = check_arrays(D=(D, "(m, d)"), b=(b, "(m,)"), p=(p, "(d,)"), lam=(lam, "(m,)"))
    slack = D @ p - b
    parts = [
        0.0,
        float(np.max(-slack, initial=0.0)),
        float(np.max(-lam, initial=0.0)),
        float(np.max(np.abs(p - D.T @ lam), initial=0.0)),
        float(np.max(np.abs(lam * slack), initial=0.0)),
    ]
    return max(parts)


def least_distance(
    D: NDArray[np.float64], b: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Least-distance programming via NNLS (Lawson & Hanson, ch. 23): min ||p|| s.t. D p >= b.

    Independent exact solver, the fallback of the QP of (ATT-SVM)/(10)/(SVM).

    Parameters
    ----------
    D : ndarray, shape (m, d)
        Constraint rows.
    b : ndarray, shape (m,)
        Right-hand sides.

    Returns
    -------
    (ndarray of shape (d,), ndarray of shape (m,)) or None
        The point and its multipliers; None when the set is empty.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import least_distance
    >>> p, lam = least_distance(np.array([[1.0, 1.0]]), np.array([1.0]))  # the nearest point of p1 + p2 >= 1
    >>> np.round(p, 6), np.round(lam, 6)
    (array([0.5, 0.5]), array([0.5]))
    """
    from scipy.optimize import nnls

    D, b = check_arrays(D=(D, "(m, d)"), b=(b, "(m,)"))
    E = np.vstack([D.T, b[None, :]])
    f = np.zeros(D.shape[1] + 1)
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=50 * E.shape[1] + 100)
    r = E @ u - f
    if abs(r[-1]) < 1e-14:
        return None
    return -r[:-1] / r[-1], u / -r[-1]


def _kkt_scale(D: NDArray[np.float64], p: NDArray[np.float64]) -> float:
    """max(1, ||p|| max_i ||D_i||): a bound on |D_i p|, to which the KKT and active-set tolerances are relative."""
    return max(1.0, float(np.linalg.norm(p)) * float(np.max(np.linalg.norm(D, axis=1), initial=0.0)))


def _polish(
    D: NDArray[np.float64], b: NDArray[np.float64], act: NDArray[np.bool_], tol: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Exact min-norm point on the active set A: p = D_A^T lam_A with (D_A D_A^T) lam_A = b_A.

    KKT system of (ATT-SVM)/(SVM) restricted to A; accepted only if feasible with lam_A >= -tol.
    """
    DA = D[act]
    # Same as lstsq on (D_A D_A^T) lam_A = b_A, p = D_A^T lam_A, without squaring the condition number.
    p = np.linalg.lstsq(DA, b[act], rcond=None)[0]  # minimum-norm solution of D_A p = b_A
    lamA = np.linalg.lstsq(DA.T, p, rcond=None)[0]
    if np.min(lamA, initial=0.0) < -tol:  # rank-deficient D_A: look for a non-negative representation of p
        from scipy.optimize import nnls

        lamA = nnls(DA.T, p)[0]
    lam = np.zeros(len(b))
    lam[act] = lamA
    scale = _kkt_scale(D, p)
    if np.max(b - D @ p, initial=0.0) > tol * scale or not np.allclose(DA @ p, b[act], rtol=0, atol=tol * scale):
        return None
    if np.max(np.abs(p - D.T @ lam), initial=0.0) > tol * scale:
        return None
    return p, lam


def solve_min_norm(
    D: NDArray[np.float64], b: NDArray[np.float64], *, tol: float, start: NDArray[np.float64] | None = None
) -> SVMResult:
    """Solve min ||p|| s.t. D p >= b (b in {0, 1}) with cvxopt and the polish; ``active`` is per row of D.

    The generic form of (ATT-SVM), eq. (10) and (SVM).

    Parameters
    ----------
    D : ndarray, shape (m, d)
        Constraint rows.
    b : ndarray, shape (m,)
        Right-hand sides, each 0 or 1.
    tol : float
        Relative KKT tolerance.
    start : ndarray, shape (d,), optional
        A near-optimal point (e.g. scikit-learn's SVC solution) whose active set is polished instead of a QP's.

    Returns
    -------
    SVMResult
        The solution (``solution``, shape (d,); None if infeasible), status, active rows (m,), KKT residual.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import solve_min_norm
    >>> res = solve_min_norm(np.array([[1.0, 1.0], [1.0, 0.0]]), np.array([1.0, 0.0]), tol=1e-9)
    >>> np.round(res.solution, 6), res.active
    (array([0.5, 0.5]), array([ True, False]))
    """
    D, b, tol = check_arrays(D=(D, "(m, d)"), b=(b, "(m,)"), tol=(tol, "()"))
    if start is not None:
        (start,) = check_arrays(D=(D, "(m, d)"), start=(start, "(d,)"))[1:]
    m, d = D.shape
    zero = ~np.any(D != 0.0, axis=1)
    if np.any(zero & (b > 0)):  # 0 >= 1 cannot hold (e.g. a duplicate of the selected token)
        return SVMResult.infeasible()
    keep = ~zero  # zero rows with b = 0 hold trivially and are dropped
    Dk, bk = D[keep], b[keep]
    if not np.any(bk > 0):  # p = 0 is feasible, hence optimal
        p, lam_k, polished = np.zeros(d), np.zeros(len(bk)), True
    elif not lp_feasible(Dk, bk):
        return SVMResult.infeasible()
    else:
        p, lam_k, polished = _qp_and_polish(Dk, bk, tol, start)
        if p is None:
            return SVMResult.infeasible()
    scale = _kkt_scale(Dk, p)
    act_tol = tol if polished else max(tol, 1e-6)
    active = np.zeros(m, dtype=bool)
    active[keep] = (Dk @ p - bk) <= act_tol * scale
    return SVMResult(p, True, "optimal", active, kkt_violation(Dk, bk, p, lam_k))


def _qp_start(D: NDArray[np.float64], b: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """The cvxopt QP's point and multipliers, or None when cvxopt fails."""
    from cvxopt import matrix, solvers

    d = D.shape[1]
    try:
        sol = solvers.qp(matrix(np.eye(d)), matrix(np.zeros(d)), matrix(-D), matrix(-b), options=_QP_OPTIONS)
    except (ValueError, ArithmeticError):
        return None
    if sol["x"] is None or sol["z"] is None:
        return None
    return np.array(sol["x"]).ravel(), np.array(sol["z"]).ravel()


def _qp_and_polish(
    D: NDArray[np.float64], b: NDArray[np.float64], tol: float, start: NDArray[np.float64] | None
) -> tuple[NDArray[np.float64] | None, NDArray[np.float64], bool]:
    """QP (cvxopt) -> active set -> exact polish; NNLS-LDP fallback when cvxopt fails.

    Numerical core for (ATT-SVM), (10) and (SVM); returns (p, multipliers, polished?).
    """
    if start is None:
        p0, lam0 = _qp_start(D, b) or (None, None)
    else:
        p0, lam0 = start, None
    if p0 is not None:
        slack = D @ p0 - b
        scale = _kkt_scale(D, p0)
        cands = []
        if lam0 is not None:
            cands.append(lam0 > 1e-7 * max(1.0, float(np.max(lam0))))
        # Any accepted polish satisfies the KKT conditions, hence is the (unique) optimum, so widening the
        # candidate active set is safe; wide sets absorb libsvm's ~1e-4 relative error in v_svm.
        cands += [slack <= thr * scale for thr in (1e-6, 1e-4, 1e-3, 1e-2)]
        for act in cands:
            if np.any(act) and (res := _polish(D, b, act, tol)) is not None:
                return res[0], res[1], True
    ldp = least_distance(D, b)  # cvxopt failed or its active set could not be polished
    if ldp is not None:
        act = ldp[1] > 1e-12 * max(1.0, float(np.max(ldp[1])))
        res = _polish(D, b, act, tol) if np.any(act) else None
        return (res[0], res[1], True) if res is not None else (ldp[0], ldp[1], False)
    if p0 is not None and lam0 is not None and np.max(b - D @ p0) <= 1e-6:
        return p0, lam0, False
    return None, np.zeros(D.shape[0]), False
