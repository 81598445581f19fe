"""The duals of (W-ATT-SVM) on a working set of its margins (:mod:`.w_svm`), and the cutting planes that grow the
working set: the hard margin by the dual active-set method (:mod:`.w_svm_active`; on a torch device,
:class:`LinearAlgebra`, block principal pivoting first), the nearest point of the features' convex hull to 0 where
both give up, the soft margin by cvxopt's QP, and the nuclear norm by cvxopt's SDP.

A working set's margins are a_k^T W d_k >= 1 with kernel G_kl = (a_k . a_l)(d_k . d_l); W = sum_k alpha_k a_k d_k^T.

Every solve says how it was solved, the status of :class:`~maxmargin.core.w_svm.WSVMResult`: ``"optimal"`` (the
active set or pivoting settled, or cvxopt's status optimal at its tolerances), ``"looser"`` (cvxopt optimal only at
tolerances 1000 times looser: its interior point broke down or stopped short at the first), ``"repaired"`` (the
nuclear norm's SDP alone: cvxopt's status not optimal, its answer rescaled onto the margins and accepted by its
duality gap). Any other outcome raises an ArithmeticError naming the problem and cvxopt's statuses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve

from maxmargin.core.w_svm_active import CarriedDual, dual_active_set

_QP_OPTIONS = {"show_progress": False, "abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12, "maxiters": 200}
_SDP_OPTIONS = {"show_progress": False, "abstol": 1e-9, "reltol": 1e-9, "feastol": 1e-9, "maxiters": 100}
# How a solve was solved, the worst last (a cutting-plane solve reports the worst of its rounds).
_STATUSES = ("optimal", "looser", "repaired")

# Block principal pivoting's steps at most: it takes a handful where the hard margin is well posed; past them
# (pivoting that cycles, one exchange a step) the nearest hull point solves the round.
_PIVOTING_STEPS = 50
# The margins of a pivoting step's free set are 1 (its multipliers solve G_FF alpha_F = 1); where G_FF is singular
# and 1 outside its range (features f and 2f), least squares misses them by far more than rounding (1e-9 at
# multipliers of 5e7): the nearest hull point solves that round.
_FREE_RESIDUAL = 1e-6
# The support of the nearest hull point, read from its margins (its multipliers of the constraints off the support
# are not 0 but the QP's tolerance over rho^2): those within this of 1.
_SUPPORT_MARGIN = 1e-4

# An answer of cvxopt's and why it is refused (None: accepted).
Checked = tuple[Any, str | None]


def _worst(*statuses: str) -> str:
    return max(statuses, key=_STATUSES.index)


def _cvxopt(
    solve: Callable[..., dict], options: dict[str, Any], what: str, check: Callable[[dict], Checked], **problem: Any
) -> tuple[Any, str]:
    """``solve`` (cvxopt's qp or sdp) on ``problem``: the answer ``check`` accepts, and its status (the module's
    docstring). ``check`` turns cvxopt's solution into the answer and says why it refuses it (a status but optimal
    with no certificate, a duality gap); a refused answer, or an interior point that breaks down (a zero gap
    divides, a singular KKT system), is solved again at tolerances 1000 times looser; an ArithmeticError naming
    ``what`` and each refusal where that fails too."""
    refused = []
    looser = {k: v * 1e3 if k.endswith("tol") else v for k, v in options.items()}
    for status, opts in (("optimal", options), ("looser", looser)):
        try:
            sol = solve(**problem, options=opts)
        except (ArithmeticError, ValueError) as err:
            refused.append(f"{type(err).__name__}: {err}")
            continue
        answer, why = check(sol)
        if why is None:
            return answer, status if sol["status"] == "optimal" else "repaired"
        refused.append(f"status {sol['status']}, {why}")
    raise ArithmeticError(f"cvxopt could not solve {what}: {'; at 1000x looser tolerances, '.join(refused)}")


def _optimal(sol: dict) -> Checked:
    """cvxopt's x, accepted where its status is optimal (a QP's: at the looser tolerances it always was here)."""
    return np.array(sol["x"]).ravel(), None if sol["status"] == "optimal" else "not optimal"


def _dual_qp(g: NDArray[np.float64], soft_c: float) -> tuple[NDArray[np.float64], str]:
    """argmin 1/2 alpha^T G alpha - 1^T alpha s.t. 0 <= alpha <= soft_c (cvxopt): the SVM's dual on a working set,
    and its status."""
    from cvxopt import matrix, solvers

    m = len(g)
    eye = np.eye(m)
    x, status = _cvxopt(
        solvers.qp,
        _QP_OPTIONS,
        f"the soft-margin dual on {m} margins",
        _optimal,
        P=matrix(g),
        q=matrix(-np.ones(m)),
        G=matrix(np.vstack([-eye, eye])),
        h=matrix(np.concatenate([np.zeros(m), np.full(m, soft_c)])),
    )
    return np.maximum(x, 0.0), status


def _nearest_hull_point(g: NDArray[np.float64], scale: float) -> tuple[NDArray[np.float64], str]:
    """beta = argmin beta^T G beta s.t. beta >= 0, sum beta = 1 (cvxopt's QP, on G / ``scale``: its tolerances
    are absolute), and the solve's status."""
    from cvxopt import matrix, solvers

    m = len(g)
    x, status = _cvxopt(
        solvers.qp,
        _QP_OPTIONS,
        f"the nearest hull point of {m} margins",
        _optimal,
        P=matrix(2.0 * g / scale),
        q=matrix(np.zeros(m)),
        G=matrix(-np.eye(m)),
        h=matrix(np.zeros(m)),
        A=matrix(np.ones((1, m))),
        b=matrix(1.0),
    )
    beta = np.maximum(x, 0.0)
    return beta / beta.sum(), status


def _min_norm_dual(g: NDArray[np.float64]) -> tuple[NDArray[np.float64], str]:
    """The hard-margin dual through the nearest point of the features' convex hull to 0 (Gilbert's problem): with
    beta from :func:`_nearest_hull_point` and rho^2 = beta^T G beta, the SVM's multipliers are beta / rho^2 and
    ||W_mm||_F = 1 / rho (huge where 0 is in the hull: no W meets every margin, which the cutting planes tell by
    :data:`HULL_TOL`); and the solve's status. The QP's tolerances are absolute: it is solved on G divided by
    its mean diagonal, the features' typical squared norm f^2 (rho^2 must be told from 0 to HULL_TOL^2 f^2 = 1e-10
    f^2, and features of norm 0.01 leave 1e-14 to resolve); where rho^2 is small beside f^2, the margins
    G beta / rho^2 would be off by the tolerance over rho^2, so it is solved again on G / rho^2 (its optimum then
    1; G / (1e-10 f^2) at most); where cvxopt cannot solve that one, the first answer stands."""
    typical = float(np.mean(np.diag(g)))
    beta, status = _nearest_hull_point(g, typical)
    rho2 = float(beta @ g @ beta)
    if rho2 < 1e-3 * typical:
        try:
            beta, again = _nearest_hull_point(g, max(rho2, 1e-10 * typical))
            status, rho2 = _worst(status, again), float(beta @ g @ beta)
        except ArithmeticError:
            pass
    return beta / max(rho2, 1e-300), status


@dataclass(frozen=True)
class LinearAlgebra:
    """Where the hard-margin dual's linear algebra runs: the working set's kernel and its pivoting (the cost of a
    wide head: a Cholesky factor of the working set each step). ``array`` moves a numpy array there, ``numpy``
    brings one back, ``spd_solve`` solves a symmetric positive definite system (None where it is singular).
    :data:`NUMPY` is the CPU; a torch device's (the ViT probe on a GPU) lives beside the ViT."""

    array: Callable[[NDArray[np.float64]], Any]
    numpy: Callable[[Any], NDArray[np.float64]]
    spd_solve: Callable[[Any, Any], Any]
    lstsq: Callable[[Any, Any], Any]


def _cho(sub: NDArray[np.float64], rhs: NDArray[np.float64]) -> NDArray[np.float64] | None:
    try:
        return cho_solve(cho_factor(sub), rhs)
    except np.linalg.LinAlgError:
        return None


NUMPY = LinearAlgebra(np.asarray, np.asarray, _cho, lambda sub, rhs: np.linalg.lstsq(sub, rhs, rcond=None)[0])


def _pivoting(g: Any, free: Any, linalg: LinearAlgebra) -> Any | None:
    """min 1/2 alpha^T G alpha - 1^T alpha s.t. alpha >= 0 by block principal pivoting (Judice & Pires 1994; Kim &
    Park 2011) from the passive set ``free``: exact on the final passive set. None where it has not settled in
    ``_PIVOTING_STEPS`` steps (it cycles, or the problem has no solution) or a singular free set cannot meet its
    margins (``_FREE_RESIDUAL``). ``g`` and ``free`` are arrays of ``linalg`` (numpy or torch: only the operators
    both share are used)."""
    best, backup = len(g) + 1, 3
    for _ in range(_PIVOTING_STEPS):
        out = g[0] * 0.0
        if free.any():
            sub, rhs = g[free][:, free], out[free] + 1.0
            solved = linalg.spd_solve(sub, rhs)
            out[free] = solved if solved is not None else linalg.lstsq(sub, rhs)
        gradient = g @ out - 1.0
        if free.any() and float(abs(gradient[free]).max()) > _FREE_RESIDUAL:
            return None  # least squares on a singular free set whose margins cannot all be 1
        wrong = (free & (out < 0)) | (~free & (gradient < -1e-12))
        if not wrong.any():
            return out
        if int(wrong.sum()) < best:
            best, backup = int(wrong.sum()), 3
            free = free ^ wrong
        elif backup > 0:
            backup -= 1
            free = free ^ wrong
        else:
            last = int(linalg.numpy(wrong).nonzero()[0][-1])
            free[last] = ~free[last]
    return None


def _active_set(
    method: Callable[[], tuple | None], g: Any, alpha: NDArray[np.float64], linalg: LinearAlgebra
) -> tuple[NDArray, NDArray | None, str]:
    """The hard-margin dual on a working set of kernel ``g`` (an array on ``linalg``, or the features (a_k, d_k)),
    min 1/2 alpha^T G alpha - 1^T alpha s.t. alpha >= 0: the multipliers, the dual's ray where no W meets the margins
    (else None) and the status. The dual active-set method (``method``, :mod:`.w_svm_active`) from the previous
    round's multipliers ``alpha``: finite, and exact on its active set. On a device (``linalg`` not :data:`NUMPY`:
    a wide head's working set of thousands of margins), block principal pivoting there (:func:`_pivoting`) from the
    previous round's support first: a few factorisations of the support, each milliseconds on a GPU, where it
    settles. Where the active-set method runs out of steps, the nearest hull point (:func:`_min_norm_dual`),
    polished by pivoting from its support, the margins within ``_SUPPORT_MARGIN`` of 1 (exact where that settles:
    the QP's margins are only as good as its tolerance)."""
    if linalg is not NUMPY and np.any(alpha > 0):
        out = _pivoting(g, linalg.array(alpha) > 0, linalg)
        if out is not None:
            return linalg.numpy(out), None, "optimal"
    found = method()
    if found is not None:
        return found[0], found[1], "optimal"
    g_np = (g[0] @ g[0].T) * (g[1] @ g[1].T) if isinstance(g, tuple) else linalg.numpy(g)
    beta, status = _min_norm_dual(g_np)
    polished = _pivoting(linalg.array(g_np), linalg.array(g_np @ beta < 1.0 + _SUPPORT_MARGIN) > 0, linalg)
    return (beta if polished is None else linalg.numpy(polished)), None, status


def _nuclear_certificate(sol: dict, a: NDArray, d: NDArray, box: float) -> tuple[NDArray, NDArray, float]:
    """The multipliers and W of cvxopt's SDP solution, each made feasible, and their relative duality gap.

    alpha clipped to [0, ``box``] and divided by max(1, ||sum_k alpha_k a_k d_k^T||_2) is dual feasible: 1^T alpha
    bounds the optimum from below. W = -2 Z_12 (Z the LMI's dual variable) bounds it from above: without a box
    (the hard margin) divided by its smallest margin, so that it meets every margin, ||W||_*; with one, the soft
    objective ||W||_* + box sum_k max(0, 1 - a_k^T W d_k), which any W has. The gap (upper - lower) / upper is 0
    at the optimum whatever cvxopt's status says (an 'unknown' status has come back with the right direction at
    the wrong scale: dividing by the smallest margin repairs it). An infinite gap where there is nothing to certify.
    """
    if sol["x"] is None or sol["zs"][0] is None:
        return np.zeros(len(a)), np.zeros((a.shape[1], d.shape[1])), np.inf
    p, q = a.shape[1], d.shape[1]
    alpha = np.clip(np.array(sol["x"]).ravel(), 0.0, box)
    alpha /= max(1.0, float(np.linalg.norm(a.T @ (alpha[:, None] * d), 2)))
    w = -2.0 * np.array(sol["zs"][0]).reshape(p + q, p + q).T[:p, p:]
    margins = np.einsum("kp,pq,kq->k", a, w, d)
    if np.isinf(box):
        if not margins.min() > 0:
            return alpha, w, np.inf
        w = w / margins.min()
        upper = float(np.linalg.svd(w, compute_uv=False).sum())
    else:
        upper = float(np.linalg.svd(w, compute_uv=False).sum() + box * np.maximum(0.0, 1.0 - margins).sum())
    return alpha, w, (upper - float(alpha.sum())) / upper


def _nuclear_dual(
    a: NDArray[np.float64], d: NDArray[np.float64], box: float, tol: float
) -> tuple[NDArray, NDArray, str]:
    """max 1^T alpha s.t. ||sum_k alpha_k a_k d_k^T||_2 <= 1, 0 <= alpha <= ``box`` (cvxopt's SDP, the LMI
    [[I, B], [B^T, I]] >= 0): the multipliers, W = -2 Z_12 from the LMI's dual variable Z, the minimiser of
    ||W||_* + box sum_k max(0, 1 - <W, a_k d_k^T>) (``box`` inf: of ||W||_* under every margin, the hard problem,
    bounded where some W meets every margin), and the status. Accepted where cvxopt's status is optimal, or else
    at a relative duality gap of ``tol`` at most (:func:`_nuclear_certificate`: repaired)."""
    from cvxopt import matrix, solvers

    m, p, q = len(a), a.shape[1], d.shape[1]
    blocks = np.zeros((m, p + q, p + q))
    blocks[:, :p, p:] = a[:, :, None] * d[:, None, :]
    blocks[:, p:, :p] = blocks[:, :p, p:].transpose(0, 2, 1)
    gs = -blocks.transpose(0, 2, 1).reshape(m, -1).T  # cvxopt's column-major vec of each symmetric block
    boxed = np.isfinite(box)
    gl = np.vstack([-np.eye(m), np.eye(m)]) if boxed else -np.eye(m)
    hl = np.concatenate([np.zeros(m), np.full(m, box)]) if boxed else np.zeros(m)

    def check(sol: dict) -> Checked:
        alpha, w, gap = _nuclear_certificate(sol, a, d, box)
        accepted = gap <= tol or (sol["status"] == "optimal" and np.isfinite(gap))
        return (alpha, w), None if accepted else f"relative duality gap {gap:.1e} above {tol:g}"

    (alpha, w), status = _cvxopt(
        solvers.sdp,
        _SDP_OPTIONS,
        f"the nuclear-norm dual on {m} margins",
        check,
        c=matrix(-np.ones(m)),
        Gl=matrix(gl),
        hl=matrix(hl),
        Gs=[matrix(gs)],
        hs=[matrix(np.eye(p + q))],
    )
    return alpha, w, status


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


# A working set's solve: (a_k, d_k of its constraints, the previous multipliers placed in it, the constraints' flat
# indices i T + t, increasing) -> (multipliers, W, status).
Solve = Callable[[NDArray, NDArray, NDArray, NDArray[np.int64]], tuple[NDArray, NDArray, str]]


class Planes(NamedTuple):
    """The cutting planes' outcome: W, the margins of every constraint, the working set's multipliers, the rounds
    used, the worst status of their solves, and ``hull``: ||sum_k alpha_k f_k|| / sum_k alpha_k ||f_k|| (f_k = a_k
    d_k^T), how far the multipliers' point of the features' convex hull lies from 0 against the norms of the
    features that make it, in [0, 1] (1 for one feature; 1 / (||W|| mean_alpha ||f_k||) at an optimum, where every
    margin of the support is 1; 0 where they cancel: :data:`~maxmargin.core.w_svm_hard.HULL_TOL`)."""

    w: NDArray[np.float64]
    margins: NDArray[np.float64]
    alpha: NDArray[np.float64]
    rounds: int
    status: str
    hull: float = 1.0


def _hull(w: NDArray[np.float64], alpha: NDArray[np.float64], norms: NDArray[np.float64]) -> float:
    """:attr:`Planes.hull` of W = sum_k alpha_k f_k with ||f_k|| = ``norms`` (1 where no multiplier is positive)."""
    weight = float(alpha @ norms)
    return float(np.linalg.norm(w)) / weight if weight > 0 else 1.0


def _cutting_planes(
    a: NDArray[np.float64],
    d: NDArray[np.float64],
    other: NDArray[np.bool_],
    solve: Solve,
    per_input: int,
    tol: float,
    max_rounds: int,
    hull_tol: float = 0.0,
    lengths: NDArray[np.float64] | None = None,
) -> Planes:
    """The dual on a growing working set: W, all margins, the working set's multipliers, the rounds used, the
    worst status of the rounds' solves, the hull ratio (:class:`Planes`).

    The working set starts with the closest other token of each input; each round ``solve`` gives the multipliers
    and W, and the most violated constraints outside the set (``per_input`` per input) join it. Constraints with no
    multiplier and slack in their margin leave (the next solve's cost grows with the set). The full set of
    constraints is only ever evaluated, never factorised. A hull ratio at ``hull_tol`` or below stops the rounds
    (the hard problem has no solution: its dual is unbounded, the multipliers grow while W stays). ``lengths``:
    the ||d_it||, where the caller has them.
    """
    n = len(a)
    lengths = np.sqrt(np.einsum("itc,itc->it", d, d)) if lengths is None else lengths
    norms = np.linalg.norm(a, axis=1)[:, None] * lengths  # ||f_it|| = ||a_i|| ||d_it||
    inside = np.zeros(other.shape, dtype=bool)
    inside[np.arange(n), np.where(other, lengths, np.inf).argmin(axis=1)] = True
    alpha, rounds, worst = np.zeros(n), 0, "optimal"
    while rounds < max_rounds:
        rounds += 1
        ii, tt = np.nonzero(inside)
        alpha, w, status = solve(a[ii], d[ii, tt], alpha, ii * other.shape[1] + tt)
        worst, hull = _worst(worst, status), _hull(w, alpha, norms[ii, tt])
        margins = np.where(other, np.einsum("ic,itc->it", a @ w, d), np.inf)
        add = _violated(margins, inside, per_input, tol)
        if not add.any() or hull <= hull_tol:
            break
        idle = (alpha <= 1e-9 * alpha.max(initial=0.0)) & (margins[ii, tt] > 1.0 + 1e-6)
        inside[ii[idle], tt[idle]] = False
        alpha = _extend(inside, add, alpha[~idle])
        inside |= add
    return Planes(w, margins, alpha, rounds, worst, hull)


def _frobenius_solve(boxed: bool, soft_c: float, linalg: LinearAlgebra = NUMPY) -> Solve:
    """The Frobenius dual on a working set: the dual active-set method (hard margin; :func:`_active_set`), on the CPU
    carried from round to round with its kernel read a row at a time
    (:class:`~maxmargin.core.w_svm_active.CarriedDual`), on ``linalg``'s device from its kernel computed whole; or
    cvxopt's QP boxed at ``soft_c`` (``boxed``: the soft margin); W = sum_k alpha_k a_k d_k^T. Where no W meets the
    hard margins, the multipliers reported lie far along the dual's ray (their sum past 1e100: a hull ratio of about
    1e-100, :class:`Planes`) and W is the last one's."""
    carried = CarriedDual()

    def solve(ak: NDArray, dk: NDArray, alpha: NDArray, keys: NDArray) -> tuple[NDArray, NDArray, str]:
        if boxed:
            alpha, status = _dual_qp((ak @ ak.T) * (dk @ dk.T), soft_c)
            return alpha, ak.T @ (alpha[:, None] * dk), status
        if linalg is NUMPY:
            alpha, ray, status = _active_set(lambda: carried(ak, dk, alpha, keys), (ak, dk), alpha, linalg)
        else:
            on = linalg.array(ak), linalg.array(dk)
            g = (on[0] @ on[0].T) * (on[1] @ on[1].T)
            alpha, ray, status = _active_set(lambda: dual_active_set(linalg.numpy(g), alpha), g, alpha, linalg)
        w = ak.T @ (alpha[:, None] * dk)
        return (alpha if ray is None else alpha + 1e100 * ray), w, status

    return solve
