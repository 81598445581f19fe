"""The duals of (W-ATT-SVM) on a working set of its margins (:mod:`.w_svm`): the hard margin by block principal
pivoting (on numpy or a torch device, :class:`LinearAlgebra`), the nearest point of the features' convex hull to 0
where pivoting cycles, the soft margin by cvxopt's QP, and the nuclear norm by cvxopt's SDP.

A working set's margins are a_k^T W d_k >= 1 with kernel G_kl = (a_k . a_l)(d_k . d_l); W = sum_k alpha_k a_k d_k^T.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_factor, cho_solve

_QP_OPTIONS = {"show_progress": False, "abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12, "maxiters": 200}
_SDP_OPTIONS = {"show_progress": False, "abstol": 1e-9, "reltol": 1e-9, "feastol": 1e-9, "maxiters": 100}

# Block principal pivoting's steps at most: it takes a handful where the hard margin is well posed; past them
# (pivoting that cycles, one exchange a step) the nearest hull point solves the round.
_PIVOTING_STEPS = 50


def _cvxopt(solve: Callable[..., dict], options: dict[str, Any], what: str, **problem: Any) -> dict:
    """``solve`` (cvxopt's qp or sdp) on ``problem`` at ``options``; where its interior point breaks down (a zero
    gap divides, a singular KKT system: seen on infeasible W-ATT-SVM working sets), again at tolerances 1000 times
    looser; an ArithmeticError naming ``what`` where that breaks down too."""
    try:
        return solve(**problem, options=options)
    except (ArithmeticError, ValueError):
        looser = {k: v * 1e3 if k.endswith("tol") else v for k, v in options.items()}
        try:
            return solve(**problem, options=looser)
        except (ArithmeticError, ValueError) as err:
            raise ArithmeticError(f"cvxopt could not solve {what} ({type(err).__name__}: {err})") from err


def _dual_qp(g: NDArray[np.float64], soft_c: float) -> NDArray[np.float64]:
    """argmin 1/2 alpha^T G alpha - 1^T alpha s.t. 0 <= alpha <= soft_c (cvxopt): the SVM's dual on a working set."""
    from cvxopt import matrix, solvers

    m = len(g)
    eye = np.eye(m)
    sol = _cvxopt(
        solvers.qp,
        _QP_OPTIONS,
        f"the soft-margin dual on {m} margins",
        P=matrix(g),
        q=matrix(-np.ones(m)),
        G=matrix(np.vstack([-eye, eye])),
        h=matrix(np.concatenate([np.zeros(m), np.full(m, soft_c)])),
    )
    return np.maximum(np.array(sol["x"]).ravel(), 0.0)


def _min_norm_dual(g: NDArray[np.float64]) -> NDArray[np.float64]:
    """The hard-margin dual through the nearest point of the features' convex hull to 0 (Gilbert's problem): with
    beta = argmin beta^T G beta s.t. beta >= 0, sum beta = 1 (cvxopt) and rho^2 = beta^T G beta, the SVM's
    multipliers are beta / rho^2 and ||W_mm||_F = 1 / rho (huge where 0 is in the hull: no W meets every margin,
    which the cutting planes tell by :data:`HULL_TOL`)."""
    from cvxopt import matrix, solvers

    m = len(g)
    sol = _cvxopt(
        solvers.qp,
        _QP_OPTIONS,
        f"the nearest hull point of {m} margins",
        P=matrix(2.0 * g),
        q=matrix(np.zeros(m)),
        G=matrix(-np.eye(m)),
        h=matrix(np.zeros(m)),
        A=matrix(np.ones((1, m))),
        b=matrix(1.0),
    )
    beta = np.maximum(np.array(sol["x"]).ravel(), 0.0)
    beta /= beta.sum()
    return beta / max(float(beta @ g @ beta), 1e-300)


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


def _active_set(g: Any, alpha: Any, linalg: LinearAlgebra) -> Any:
    """min 1/2 alpha^T G alpha - 1^T alpha s.t. alpha >= 0 by block principal pivoting (Judice & Pires 1994; Kim &
    Park 2011): exact on the final passive set. ``alpha`` (the previous round's) gives the first passive set. Where
    pivoting has not settled in ``_PIVOTING_STEPS`` steps (it cycles, or the problem has no solution),
    :func:`_min_norm_dual` solves the round. ``g`` and ``alpha`` are arrays of ``linalg`` (numpy or torch: only
    the operators both share are used)."""
    free = alpha > 0
    if not free.any():
        free = alpha == alpha
    best, backup = len(g) + 1, 3
    for _ in range(_PIVOTING_STEPS):
        out = g[0] * 0.0
        if free.any():
            sub, rhs = g[free][:, free], out[free] + 1.0
            solved = linalg.spd_solve(sub, rhs)
            out[free] = solved if solved is not None else linalg.lstsq(sub, rhs)
        gradient = g @ out - 1.0
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
    return linalg.array(_min_norm_dual(linalg.numpy(g)))


def _nuclear_dual(a: NDArray[np.float64], d: NDArray[np.float64], soft_c: float) -> tuple[NDArray, NDArray]:
    """max 1^T alpha s.t. ||sum_k alpha_k a_k d_k^T||_2 <= 1, 0 <= alpha <= ``soft_c`` (cvxopt's SDP, the LMI
    [[I, B], [B^T, I]] >= 0): the multipliers and W = -2 Z_12 from the LMI's dual variable Z, the minimiser of
    ||W||_* + soft_c sum_k max(0, 1 - <W, a_k d_k^T>). The box keeps the SDP bounded where no W meets every
    margin; where one does and ``soft_c`` exceeds every multiplier, it is the hard-margin problem."""
    from cvxopt import matrix, solvers

    m, p, q = len(a), a.shape[1], d.shape[1]
    blocks = np.zeros((m, p + q, p + q))
    blocks[:, :p, p:] = a[:, :, None] * d[:, None, :]
    blocks[:, p:, :p] = blocks[:, :p, p:].transpose(0, 2, 1)
    gs = -blocks.transpose(0, 2, 1).reshape(m, -1).T  # cvxopt's column-major vec of each symmetric block
    sol = _cvxopt(
        solvers.sdp,
        _SDP_OPTIONS,
        f"the nuclear-norm dual on {m} margins",
        c=matrix(-np.ones(m)),
        Gl=matrix(np.vstack([-np.eye(m), np.eye(m)])),
        hl=matrix(np.concatenate([np.zeros(m), np.full(m, soft_c)])),
        Gs=[matrix(gs)],
        hs=[matrix(np.eye(p + q))],
    )
    if sol["x"] is None or sol["zs"][0] is None:
        raise ArithmeticError(f"cvxopt's SDP found no solution ({sol['status']})")
    z = np.array(sol["zs"][0]).reshape(p + q, p + q).T
    return np.maximum(np.array(sol["x"]).ravel(), 0.0), -2.0 * z[:p, p:]
