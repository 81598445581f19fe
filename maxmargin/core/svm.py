"""Max-margin problems of the paper: (ATT-SVM), the relaxed problem (10) and (SVM).

Tarzanagh et al., "Max-Margin Token Selection in Attention Mechanism", NeurIPS 2023, Sec. 2-3.
All problems have the form  min ||p||  s.t.  D p >= b  with b in {0, 1}; they are solved as the
QP  min 1/2 p^T p  s.t.  -D p <= -b  (cvxopt), after an explicit LP feasibility check (HiGHS),
and the QP solution is polished to the exact minimum-norm point on its active set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

_QP_OPTIONS = {"show_progress": False, "abstol": 1e-11, "reltol": 1e-11, "feastol": 1e-11, "maxiters": 200}

# Relative KKT tolerance at which a max-margin solution is accepted (the census reads its own: census.svm_tol).
SVM_TOL = 1e-9
# Relative tolerance of the equality (k_{i alpha_i} - k_it)^T p_mm = 1 that makes t an SVM-neighbour (Definition 2).
NEIGHBOR_TOL = 1e-7


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

    @property
    def norm(self) -> float:
        """||p_mm|| of (ATT-SVM) / ||v_mm|| of (SVM), nan if infeasible; 1/norm is the margin."""
        return float(np.linalg.norm(self.solution)) if self.solution is not None else float("nan")

    @property
    def direction(self) -> NDArray[np.float64] | None:
        """The max-margin direction p_mm / ||p_mm|| of Theorems 1-6 (None if infeasible or zero)."""
        if self.solution is None or self.norm == 0.0:
            return None
        return self.solution / self.norm


def _infeasible() -> SVMResult:
    return SVMResult(None, False, "infeasible", None, float("nan"))


def _lp_feasible(D: NDArray[np.float64], b: NDArray[np.float64]) -> bool:
    """Whether {p : D p >= b} is non-empty, by an LP with zero objective (HiGHS).

    Existence of p_mm(alpha) in (ATT-SVM) (Definition 2 needs it) / separability for (SVM). HiGHS decides with
    status 0 (solved: feasible) or 2 (infeasible); any other status (iteration limit, numerical difficulties)
    decides nothing, and least-distance programming settles it: its NNLS finds a point iff the set is non-empty
    (Lawson & Hanson, ch. 23).
    """
    # scipy.optimize is imported where it is used: most jobs import this module and never solve (0.4 s a job)
    from scipy.optimize import linprog

    res = linprog(np.zeros(D.shape[1]), A_ub=-D, b_ub=-b, bounds=(None, None), method="highs")
    if res.status in (0, 2):
        return res.status == 0
    return _ldp(D, b) is not None


def _kkt(D: NDArray[np.float64], b: NDArray[np.float64], p: NDArray[np.float64], lam: NDArray[np.float64]) -> float:
    """Max KKT violation of (p, lam) for min 1/2||p||^2 s.t. D p >= b.

    Primal feasibility, lam >= 0, stationarity p = D^T lam, complementary slackness lam * slack = 0.
    """
    slack = D @ p - b
    parts = [
        0.0,
        float(np.max(-slack, initial=0.0)),
        float(np.max(-lam, initial=0.0)),
        float(np.max(np.abs(p - D.T @ lam), initial=0.0)),
        float(np.max(np.abs(lam * slack), initial=0.0)),
    ]
    return max(parts)


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
    scale = max(1.0, float(np.linalg.norm(p)) * float(np.max(np.linalg.norm(D, axis=1), initial=0.0)))
    if np.max(b - D @ p, initial=0.0) > tol * scale or not np.allclose(DA @ p, b[act], rtol=0, atol=tol * scale):
        return None
    if np.max(np.abs(p - D.T @ lam), initial=0.0) > tol * scale:
        return None
    return p, lam


def _ldp(D: NDArray[np.float64], b: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """Least-distance programming via NNLS (Lawson & Hanson, ch. 23): min ||p|| s.t. D p >= b.

    Independent exact solver used as a fallback for the QP of (ATT-SVM)/(10)/(SVM).
    """
    from scipy.optimize import nnls

    E = np.vstack([D.T, b[None, :]])
    f = np.zeros(D.shape[1] + 1)
    f[-1] = 1.0
    u, _ = nnls(E, f, maxiter=50 * E.shape[1] + 100)
    r = E @ u - f
    if abs(r[-1]) < 1e-14:
        return None
    return -r[:-1] / r[-1], u / -r[-1]


def _solve_min_norm(
    D: NDArray[np.float64], b: NDArray[np.float64], *, tol: float, start: NDArray[np.float64] | None = None
) -> SVMResult:
    """Solve min ||p|| s.t. D p >= b (b in {0,1}) with cvxopt + polish; ``active`` is per row of D.

    Generic form of (ATT-SVM), eq. (10) and (SVM).
    """
    m, d = D.shape
    zero = ~np.any(D != 0.0, axis=1)
    if np.any(zero & (b > 0)):  # 0 >= 1 cannot hold (e.g. a duplicate of the selected token)
        return _infeasible()
    keep = ~zero  # zero rows with b = 0 hold trivially and are dropped
    Dk, bk = D[keep], b[keep]
    if not np.any(bk > 0):  # p = 0 is feasible, hence optimal
        p, lam_k, polished = np.zeros(d), np.zeros(len(bk)), True
    elif not _lp_feasible(Dk, bk):
        return _infeasible()
    else:
        p, lam_k, polished = _qp_and_polish(Dk, bk, tol, start)
        if p is None:
            return _infeasible()
    scale = max(1.0, float(np.linalg.norm(p)) * float(np.max(np.linalg.norm(Dk, axis=1), initial=0.0)))
    act_tol = tol if polished else max(tol, 1e-6)
    active = np.zeros(m, dtype=bool)
    active[keep] = (Dk @ p - bk) <= act_tol * scale
    return SVMResult(p, True, "optimal", active, _kkt(Dk, bk, p, lam_k))


def _qp_and_polish(
    D: NDArray[np.float64], b: NDArray[np.float64], tol: float, start: NDArray[np.float64] | None
) -> tuple[NDArray[np.float64] | None, NDArray[np.float64], bool]:
    """QP (cvxopt) -> active set -> exact polish; NNLS-LDP fallback when cvxopt fails.

    Numerical core for (ATT-SVM), (10) and (SVM); returns (p, multipliers, polished?).
    """
    from cvxopt import matrix, solvers

    m, d = D.shape
    p0 = lam0 = None
    if start is None:
        try:
            sol = solvers.qp(matrix(np.eye(d)), matrix(np.zeros(d)), matrix(-D), matrix(-b), options=_QP_OPTIONS)
            if sol["x"] is not None and sol["z"] is not None:
                p0 = np.array(sol["x"]).ravel()
                lam0 = np.array(sol["z"]).ravel()
        except (ValueError, ArithmeticError):
            pass
    else:
        p0, lam0 = start, None
    if p0 is not None:
        slack = D @ p0 - b
        scale = max(1.0, float(np.linalg.norm(p0)) * float(np.max(np.linalg.norm(D, axis=1))))
        cands = []
        if lam0 is not None:
            cands.append(lam0 > 1e-7 * max(1.0, float(np.max(lam0))))
        # Any accepted polish satisfies the KKT conditions, hence is the (unique) optimum, so widening the
        # candidate active set is safe; wide sets absorb libsvm's ~1e-4 relative error in v_svm.
        cands += [slack <= thr * scale for thr in (1e-6, 1e-4, 1e-3, 1e-2)]
        for act in cands:
            if np.any(act) and (res := _polish(D, b, act, tol)) is not None:
                return res[0], res[1], True
    ldp = _ldp(D, b)  # cvxopt failed or its active set could not be polished
    if ldp is not None:
        act = ldp[1] > 1e-12 * max(1.0, float(np.max(ldp[1])))
        res = _polish(D, b, act, tol) if np.any(act) else None
        return (res[0], res[1], True) if res is not None else (ldp[0], ldp[1], False)
    if p0 is not None and lam0 is not None and np.max(b - D @ p0) <= 1e-6:
        return p0, lam0, False
    return None, np.zeros(m), False


def _constraints(K: NDArray[np.float64], alpha: NDArray[np.int_]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Difference vectors k_{i alpha_i} - k_it, shape (n, T, d), and mask t != alpha_i, shape (n, T).

    Constraint rows of (ATT-SVM) and eq. (10).
    """
    K = np.asarray(K, dtype=np.float64)
    alpha = np.asarray(alpha, dtype=np.int64)
    n, T, _ = K.shape
    if alpha.shape != (n,) or np.any(alpha < 0) or np.any(alpha >= T):
        raise ValueError("alpha must have shape (n,) with entries in [0, T)")
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
    """
    diff, mask = _constraints(K, alpha)
    support = np.asarray(support, dtype=bool)
    if support.shape != (diff.shape[0],):
        raise ValueError("support must be a bool mask of shape (n,)")
    b = np.broadcast_to(support[:, None], mask.shape)[mask].astype(np.float64)
    res = _solve_min_norm(diff[mask], b, tol=tol)
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
    """
    K = np.asarray(K, dtype=np.float64)
    return p_relax(K, alpha, np.ones(K.shape[0], dtype=bool), tol=tol)


def _v_problem(R: NDArray[np.float64], Y: NDArray[np.float64]) -> NDArray[np.float64]:
    R = np.asarray(R, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    if R.ndim != 2 or Y.shape != (R.shape[0],) or not np.all(np.abs(Y) == 1.0):
        raise ValueError("R must be (n, d) and Y (n,) with entries +-1")
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
    """
    D = _v_problem(R, Y)
    return _solve_min_norm(D, np.ones(D.shape[0]), tol=tol)


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
    """
    from sklearn.svm import SVC

    D = _v_problem(R, Y)
    b = np.ones(D.shape[0])
    if np.any(~np.any(D != 0.0, axis=1)) or not _lp_feasible(D, b):
        return _infeasible()
    # SVC always fits an intercept.  On the symmetrised data {(r_i, Y_i)} u {(-r_i, -Y_i)} the optimal
    # intercept is 0: if (w, c) is optimal then so is (w, -c) by symmetry, hence (w, 0) by convexity, and
    # w is unique, so w equals the bias-free max-margin solution v_mm.  Large C = hard margin.
    X = np.vstack([R, -np.asarray(R, dtype=np.float64)])
    y = np.concatenate([Y, -np.asarray(Y, dtype=np.float64)])
    clf = SVC(kernel="linear", C=1e8, tol=1e-10).fit(X, y)
    w = np.asarray(clf.coef_, dtype=np.float64).ravel()
    return _solve_min_norm(D, b, tol=tol, start=w)


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
    """
    diff, mask = _constraints(K, alpha)
    p = np.asarray(p_mm, dtype=np.float64)
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
    """
    diff, mask = _constraints(K, alpha)
    D = diff[mask]
    b = np.ones(D.shape[0])
    if not np.all(np.any(D != 0.0, axis=1)):
        return None  # a duplicate of a selected token: leave it to the general solver
    sol = _ldp(D, b)
    if sol is None:
        return None
    p, lam = sol
    scale = max(1.0, float(np.linalg.norm(p)) * float(np.max(np.linalg.norm(D, axis=1))))
    kkt = _kkt(D, b, p, lam)
    if not np.isfinite(kkt) or kkt > tol * scale:
        return None
    active = np.zeros(mask.shape, dtype=bool)
    active[mask] = (D @ p - b) <= tol * scale
    return SVMResult(p, True, "optimal", active, kkt)
