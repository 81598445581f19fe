"""The hard-margin dual of (W-ATT-SVM) on a working set (:mod:`.w_svm_dual`) by the dual active-set method of
Goldfarb and Idnani (1983), in kernel form.

The primal on a working set is min 1/2 ||W||_F^2 s.t. <W, f_k> >= 1, f_k = a_k d_k^T, with kernel
G_kl = <f_k, f_l> = (a_k . a_l)(d_k . d_l). Its Hessian is the identity, so the method needs G alone: it keeps an
active set A whose margins are 1, W = sum_{k in A} lambda_k f_k with every lambda_k > 0 (optimal for the constraints
seen so far), and adds a violated constraint j (the farthest from its margin, (1 - m_j) / ||f_j||, in batches).
Its step keeps the margins of A at 1 while raising j's:

    r = G_AA^{-1} G_Aj,    z = f_j - sum_{k in A} r_k f_k,    ||z||^2 = G_jj - G_jA r,

lambda_A <- lambda_A - t r, lambda_j <- lambda_j + t, the margin of j rises by t ||z||^2. The full step
t = (1 - m_j) / ||z||^2 makes j active; a multiplier of A that reaches 0 first (the partial step
min lambda_k / r_k over r_k > 0) leaves A, and j's step goes on. Where f_j lies in the span of A's features
(||z|| = 0) and no multiplier can fall, no W meets every margin: (-r, 1) is a ray of the dual along which W stays
and sum lambda grows without bound, which the cutting planes read as a hull ratio of 0
(:class:`~maxmargin.core.w_svm_dual.Planes`).

The dual objective rises at every step, so no active set comes back: the method ends in finitely many steps, each
an update of the Cholesky factor R of G_AA (a column on adding; on dropping, the trailing block factorised again or
by LAPACK's QR row insertion), never a factorisation of the working set, whose kernel it reads a row at a time
(:class:`FeatureKernel`). Started from a solution of a smaller working set (the previous cutting-plane round's, its
factor and kernel rows carried over: :class:`CarriedDual`), it only adds what the new constraints change; the last
step solves R^T R lambda_A = 1 again, so that the margins of A are 1 to rounding.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import cho_solve

from maxmargin.core.arguments import check_arrays
from maxmargin.core.w_svm_factor import CholeskyFactor

# A feature counts as in the span of the active ones where ||z||^2 <= DEPENDENT ||f_j||^2 (z's cosine with f_j
# below 3e-7): the factor's rounding grows with G's condition number (1e12 on the ViT's working sets), and a
# feature that close to the span would need W's cosine with it below that, beyond the cut-off at which the cutting
# planes call the problem infeasible (HULL_TOL = 1e-5).
DEPENDENT = 1e-13
# The steps at most, per constraint of the working set (each adds or drops one: a working set of m needs about
# m at the most, and the ones seen are about its support): past them, the caller's fallback solves it.
STEPS_PER_CONSTRAINT = 20


class FeatureKernel:
    """The kernel G_kl = (a_k . a_l)(d_k . d_l) of a working set's features f_k = a_k d_k^T, a row at a time as the
    method touches it (O(m C) a row): it reads the rows of the constraints it adds or starts from, a few hundred of a
    working set of thousands, never all m^2 entries."""

    def __init__(self, ak: NDArray[np.float64], dk: NDArray[np.float64]) -> None:
        self.ak, self.dk = ak, dk
        self.diag = np.einsum("ka,ka->k", ak, ak) * np.einsum("kc,kc->k", dk, dk)
        self.slot: dict[int, int] = {}
        self.buffer = np.empty((16, len(ak)))

    def __len__(self) -> int:
        return len(self.ak)

    def read(self, rows: list[int]) -> None:
        """Compute the ``rows`` not read yet, together (one matrix product: the rows of a batch, of the active set)."""
        new = [j for j in dict.fromkeys(rows) if j not in self.slot]
        if new:
            self.place(new, (self.ak[new] @ self.ak.T) * (self.dk[new] @ self.dk.T))

    def place(self, rows: list[int], values: NDArray[np.float64]) -> None:
        """Take the ``rows`` of G as given (computed elsewhere: carried from the previous round)."""
        size = len(self.slot)
        while size + len(rows) > len(self.buffer):
            self.buffer = np.concatenate([self.buffer, np.empty_like(self.buffer)])
        self.buffer[size : size + len(rows)] = values
        self.slot.update(zip(rows, range(size, size + len(rows)), strict=True))

    def row(self, j: int) -> NDArray[np.float64]:
        """G_j., computed on its first reading."""
        self.read([j])
        return self.buffer[self.slot[j]]

    def combine(self, rows: list[int], weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """sum_k weights_k G_k. over ``rows`` (the margins of multipliers on them)."""
        self.read(rows)
        return weights @ self.buffer[[self.slot[j] for j in rows]]

    def dense(self) -> NDArray[np.float64]:
        """All of G (the fallbacks that need it whole)."""
        return (self.ak @ self.ak.T) * (self.dk @ self.dk.T)


class DenseKernel:
    """A kernel given whole (an array G), read as :class:`FeatureKernel` is."""

    def __init__(self, g: NDArray[np.float64]) -> None:
        self.g, self.diag = g, np.diag(g).copy()

    def __len__(self) -> int:
        return len(self.g)

    def read(self, rows: list[int]) -> None:
        pass

    def row(self, j: int) -> NDArray[np.float64]:
        return self.g[j]

    def combine(self, rows: list[int], weights: NDArray[np.float64]) -> NDArray[np.float64]:
        return weights @ self.g[rows]


Kernel = FeatureKernel | DenseKernel


class _ActiveSet:
    """The method's state on one working set's ``kernel``: the active set A in order, the factor of G_AA and the
    multipliers; ``steps`` counts the adds and drops."""

    def __init__(self, kernel: Kernel, alpha: NDArray[np.float64], carried: tuple | None = None) -> None:
        """From the active set of ``alpha`` (:func:`_warm_start`), or ``carried`` (the active set, its factor and
        its multipliers: the previous round's, :class:`CarriedDual`)."""
        self.kernel = kernel
        if carried is None:
            self.active, r, self.lam = _warm_start(kernel, alpha)
            self.factor = CholeskyFactor(r)
        else:
            self.active, self.factor, self.lam = carried
        self.steps = 0

    def margins(self) -> NDArray[np.float64]:
        """m = G_.A lambda_A, every margin of the working set (O(m |A|): once a batch)."""
        return self.kernel.combine(self.active, self.lam) if self.active else np.zeros(len(self.kernel))

    def margin(self, j: int) -> float:
        return float(self.kernel.row(j)[self.active] @ self.lam)

    def add(self, j: int, margin: float) -> NDArray[np.float64] | None:
        """Make constraint j (of margin ``margin``) active: full and partial steps until its margin is 1. None; or,
        where no W meets the margins, the dual's ray (-r, 1) over A + [j] (the multipliers with j's last)."""
        row, g_jj, lam_j = self.kernel.row(j), self.kernel.diag[j], 0.0
        while True:
            self.steps += 1
            u, r = self.factor.direction(row[self.active])
            z2 = float(g_jj - u @ u)
            full = (1.0 - margin) / z2 if z2 > DEPENDENT * g_jj else np.inf
            partial, k = _partial(self.lam, r)
            if np.isinf(full) and np.isinf(partial):
                self.lam = np.append(self.lam, lam_j)
                return np.append(-r, 1.0)
            t = min(full, partial)
            self.lam, lam_j, margin = self.lam - t * r, lam_j + t, margin + t * z2
            if full <= partial:
                self._append(j, u, np.sqrt(z2), lam_j)
                return None
            self._drop(k)

    def _append(self, j: int, u: NDArray[np.float64], diagonal: float, lam_j: float) -> None:
        self.factor.append(u, diagonal)
        self.active.append(j)
        self.lam = np.append(self.lam, lam_j)

    def _drop(self, k: int) -> None:
        self.factor.delete(k)
        del self.active[k]
        self.lam = np.delete(self.lam, k)


def _warm_start(kernel: Kernel, alpha: NDArray[np.float64]) -> tuple[list[int], NDArray, NDArray]:
    """The active set of ``alpha`` (its positive multipliers), the factor R of G_AA and the multipliers solved again
    on it (the margins of A at 1); the empty set where that fails (G_AA singular to the method's
    :data:`DEPENDENT`, or a multiplier not positive)."""
    active = [int(k) for k in np.flatnonzero(alpha > 0)]
    kernel.read(active)
    if active:
        try:
            r = np.linalg.cholesky(np.array([kernel.row(j)[active] for j in active])).T
        except np.linalg.LinAlgError:
            return [], np.zeros((0, 0)), np.zeros(0)
        lam = cho_solve((r, False), np.ones(len(active)), check_finite=False)
        if np.all(lam > 0) and np.all(np.diag(r) ** 2 > DEPENDENT * kernel.diag[active]):
            return active, r, lam
    return [], np.zeros((0, 0)), np.zeros(0)


def _partial(lam: NDArray[np.float64], r: NDArray[np.float64]) -> tuple[float, int]:
    """The partial step min lambda_k / r_k over r_k > 0 and its k (inf, -1 where no multiplier falls)."""
    falling = np.flatnonzero(r > 0)
    if not len(falling):
        return np.inf, -1
    ratios = lam[falling] / r[falling]
    k = int(np.argmin(ratios))
    return float(ratios[k]), int(falling[k])


# A margin of the working set counts as violated below 1 - max(1e-12, ROUNDING sum_k lambda_k max_k G_kk): the
# rounding of m_j = sum_k lambda_k G_jk, a hundredth of what the hard margin's acceptance allows
# (:data:`~maxmargin.core.w_svm_hard.SOLVE_RTOL`), so that the method never chases its own rounding.
ROUNDING = 1e-13


def dual_active_set(
    g: NDArray[np.float64] | Kernel, alpha: NDArray[np.float64]
) -> tuple[NDArray, NDArray | None] | None:
    """argmin 1/2 alpha^T G alpha - 1^T alpha s.t. alpha >= 0, the hard-margin dual of (W-ATT-SVM) on a working set,
    by the dual active-set method (the module's docstring).

    The constraints farthest from their margin, (1 - m_j) / ||f_j||, are added in batches of :data:`BATCH`, each
    with its margin read again when its turn comes (the margins of the whole working set, O(m |A|), are read once a
    batch).

    Parameters
    ----------
    g : ndarray, shape (m, m), or FeatureKernel or DenseKernel
        The kernel G_kl = <f_k, f_l> of the working set's features, given whole or read a row at a time
        (:class:`FeatureKernel`).
    alpha : ndarray, shape (m,)
        Where to start: its positive entries are the starting active set (a solution on a smaller working set, zeros
        for the constraints added since; all zeros: from W = 0).

    Returns
    -------
    tuple of (ndarray, ndarray or None), or None
        The multipliers, shape (m,), and None; or, where no W meets every margin, the last multipliers and the dual's
        ray (nonnegative, sum_k ray_k f_k = 0), both shape (m,). None where it has not ended within
        :data:`STEPS_PER_CONSTRAINT` steps per constraint.

    Examples
    --------
    Two orthogonal features of norms 1 and 2: W = f_1 + f_2 / 4 meets both margins at 1. Opposite features: no W
    does, and the dual's ray says which constraints clash.

    >>> import numpy as np
    >>> from maxmargin.core import dual_active_set
    >>> dual_active_set(np.diag([1.0, 4.0]), np.zeros(2))
    (array([1.  , 0.25]), None)
    >>> _, ray = dual_active_set(np.array([[1.0, -1.0], [-1.0, 1.0]]), np.zeros(2))
    >>> ray
    array([1., 1.])
    """
    if isinstance(g, FeatureKernel | DenseKernel):
        alpha = check_arrays(g=(g.diag, "(m,)"), alpha=(alpha, "(m,)"))[1]  # the kernel's m: its diagonal's
        return _run(_ActiveSet(g, alpha))
    g, alpha = check_arrays(g=(g, "(m, k)"), alpha=(alpha, "(m,)"))
    if g.shape[1] != len(g):
        raise ValueError(f"g must have shape (m, m): got shape {g.shape}")
    return _run(_ActiveSet(DenseKernel(g), alpha))


def _run(state: _ActiveSet) -> tuple[NDArray, NDArray | None] | None:
    """:func:`dual_active_set` from ``state``."""
    kernel = state.kernel
    m, scale, top = len(kernel), np.sqrt(kernel.diag), float(np.max(kernel.diag, initial=0.0))
    while state.steps <= STEPS_PER_CONSTRAINT * m:
        short = 1.0 - state.margins()
        short[state.active] = -np.inf
        short[short <= _violation(state, top)] = -np.inf
        batch = np.argsort(-short / scale)[:BATCH]
        batch = batch[np.isfinite(short[batch])]
        if not len(batch):
            return _polished(state, m), None
        kernel.read([int(j) for j in batch])
        for j in map(int, batch):
            margin = state.margin(j)
            if 1.0 - margin <= _violation(state, top):
                continue
            ray = state.add(j, margin)
            if ray is not None:
                out, along = np.zeros(m), np.zeros(m)
                out[state.active + [j]], along[state.active + [j]] = state.lam, ray
                return out, along
    return None


class CarriedDual:
    """The hard-margin dual of one cutting-plane solve, round after round. A round's working set keeps every
    constraint of the previous round's active set (the planes drop only constraints without a multiplier), so the
    method starts from that active set, its factor and multipliers as they are, and their kernel rows are carried
    over: only their entries with the constraints new to the working set are computed (where a wide head's
    re-factorisation and re-reading of the active set cost more than the round's steps)."""

    def __init__(self) -> None:
        self.keys: NDArray[np.int64] | None = None
        self.state: _ActiveSet | None = None

    def __call__(self, ak: NDArray, dk: NDArray, alpha: NDArray, keys: NDArray[np.int64]) -> tuple | None:
        """:func:`dual_active_set` on the working set of features a_k d_k^T, identified by ``keys`` (increasing)."""
        kernel = FeatureKernel(ak, dk)
        state = _ActiveSet(kernel, alpha, self._carried(kernel, alpha, keys))
        found = _run(state)
        carry = found is not None and found[1] is None and bool(state.active)
        self.keys, self.state = (keys, state) if carry else (None, None)
        return found

    def _carried(self, kernel: FeatureKernel, alpha: NDArray, keys: NDArray[np.int64]) -> tuple | None:
        """The previous round's active set at its places in this working set, with its factor, multipliers and kernel
        rows (placed into ``kernel``); None where there is none or ``alpha`` is not its multipliers."""
        if self.state is None:
            return None
        old, before = self.state, self.keys
        at = np.searchsorted(keys, before[old.active])
        if np.any(at >= len(keys)) or np.any(keys[np.minimum(at, len(keys) - 1)] != before[old.active]):
            return None
        if not np.array_equal(np.flatnonzero(alpha > 0), np.sort(at)):
            return None
        where = np.minimum(np.searchsorted(before, keys), len(before) - 1)
        kept = before[where] == keys
        rows = np.empty((len(at), len(keys)))
        rows[:, kept] = old.kernel.buffer[[old.kernel.slot[j] for j in old.active]][:, where[kept]]
        rows[:, ~kept] = (kernel.ak[at] @ kernel.ak[~kept].T) * (kernel.dk[at] @ kernel.dk[~kept].T)
        kernel.place([int(j) for j in at], rows)
        return [int(j) for j in at], old.factor, old.lam


# The constraints added between two readings of the working set's margins (4: the fewest CPU seconds on the default
# run's probe, against 1, 16 and 64: a larger batch adds constraints that later leave).
BATCH = 4


def _violation(state: _ActiveSet, top: float) -> float:
    """How far below 1 a margin counts as violated (:data:`ROUNDING`)."""
    return max(1e-12, ROUNDING * float(state.lam.sum()) * top)


def _polished(state: _ActiveSet, m: int) -> NDArray[np.float64]:
    """The multipliers on the final active set solved again, R^T R lambda_A = 1 (the margins of A at 1 to
    rounding, not to the steps' accumulated rounding), where that keeps them positive."""
    out = np.zeros(m)
    if state.active:
        again = state.factor.gram_solve(np.ones(len(state.active)))
        state.lam = again if np.all(again > 0) else state.lam
        out[state.active] = state.lam
    return out
