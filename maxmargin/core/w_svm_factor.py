"""The upper Cholesky factor R of the active set's kernel G_AA, R^T R = G_AA, kept up to date as constraints join
and leave the active set of the dual active-set method (:mod:`.w_svm_active`): a column on adding; on dropping, the
trailing block factorised again or by LAPACK's QR row insertion. Never a factorisation of the working set."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import qr_insert
from scipy.linalg.blas import dtrsv


class CholeskyFactor:
    """The upper Cholesky factor R of G_AA, R^T R = G_AA, kept as [[R, 0], [0, I]] in a column-major buffer that
    grows by half: a triangular solve on the whole buffer (zeros padding the right-hand side, which the identity
    keeps at zero) reads contiguous memory, where one on a view of it would copy R first (ten times the cost)."""

    def __init__(self, r: NDArray[np.float64]) -> None:
        self.size = len(r)
        self.buffer = _identity(max(16, 3 * self.size // 2))
        self.buffer[: self.size, : self.size] = r

    @property
    def r(self) -> NDArray[np.float64]:
        return self.buffer[: self.size, : self.size]

    def direction(self, g_aj: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """u = R^{-T} G_Aj and r = R^{-1} u = G_AA^{-1} G_Aj (||u||^2 = G_jA G_AA^{-1} G_Aj)."""
        padded = np.zeros(len(self.buffer))
        padded[: self.size] = g_aj
        u = dtrsv(self.buffer, padded, trans=1)  # BLAS itself: scipy's solve_triangular costs 7x more at |A| = 100
        return u[: self.size], dtrsv(self.buffer, u)[: self.size]

    def gram_solve(self, rhs: NDArray[np.float64]) -> NDArray[np.float64]:
        """G_AA^{-1} rhs = R^{-1} R^{-T} rhs."""
        return self.direction(rhs)[1]

    def append(self, u: NDArray[np.float64], diagonal: float) -> None:
        """R of G_AA with constraint j last: the column u = R^{-T} G_Aj over sqrt(G_jj - ||u||^2)."""
        p = self.size
        if p == len(self.buffer):
            grown = _identity(3 * p // 2)
            grown[:p, :p] = self.r
            self.buffer = grown
        self.buffer[:p, p] = u
        self.buffer[p, p] = diagonal
        self.size = p + 1

    def delete(self, k: int) -> None:
        """R of G_AA without its k-th constraint. The rows above k lose their column k; the trailing block R_33 (of
        the constraints after k) becomes the factor of R_33^T R_33 + rho rho^T, rho the rest of row k: factorised
        again where it is small (one LAPACK call, q^3 flops), else the QR factor of [R_33; rho^T] by LAPACK's row
        insertion (O(q^2))."""
        r, p = self.buffer, self.size
        rho = r[k, k + 1 : p].copy()
        r[:k, k : p - 1] = r[:k, k + 1 : p]
        tail = r[k + 1 : p, k + 1 : p]
        if p - 1 - k <= REFACTOR:
            r[k : p - 1, k : p - 1] = np.linalg.cholesky(tail.T @ tail + np.outer(rho, rho)).T
        else:
            r[k : p - 1, k : p - 1] = _rank_one_update(tail, rho)
        r[: p - 1, p - 1] = 0.0
        r[p - 1, :] = 0.0
        r[p - 1, p - 1] = 1.0
        self.size = p - 1


def _identity(size: int) -> NDArray[np.float64]:
    """The identity, column-major."""
    out = np.zeros((size, size), order="F")
    np.fill_diagonal(out, 1.0)
    return out


# The trailing blocks up to this size are factorised again when a constraint leaves (q^3 flops in one call beat the
# row insertion's overhead up to about here, measured on one thread).
REFACTOR = 128


def _rank_one_update(r: NDArray[np.float64], rho: NDArray[np.float64]) -> NDArray[np.float64]:
    """The upper factor of R^T R + rho rho^T, its diagonal positive: the R of the QR factorisation of [R; rho^T]
    (scipy's qr_insert from Q = I, LAPACK's Givens rotations)."""
    _, grown = qr_insert(np.eye(len(rho)), r, rho, len(rho), which="row", check_finite=False)
    signs = np.where(np.diag(grown) < 0, -1.0, 1.0)
    return grown[:-1] * signs[:, None]
