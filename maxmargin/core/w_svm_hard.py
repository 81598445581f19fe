"""Whether some W meets every margin of (W-ATT-SVM) (:mod:`.w_svm`), decided for both norms by the hard-margin
Frobenius problem: its dual on cutting planes, the cut-off (each feature weighed by its own norm) below which 0
counts as in the features' convex hull, the precision at which its multipliers meet their margins, and the repair
(W divided by its smallest margin) that its duality gap certifies. Both norms share the feasible set, so the
nuclear-norm solve (:mod:`.w_svm_nuclear`) asks the same question here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.w_svm_dual import LinearAlgebra, Planes, _cutting_planes, _frobenius_solve

# No W meets every margin when the multipliers' point of the constraint features' convex hull comes closer to 0 than
# this fraction of the norms of the features that make it, ||sum_k beta_k f_k|| <= HULL_TOL sum_k beta_k ||f_k||
# (beta = alpha / 1^T alpha; :class:`~maxmargin.core.w_svm_dual.Planes`' hull ratio): 0 is in the hull to the
# solvers' precision, and the hard-margin cutting planes stop there. Each feature is weighed by its own norm, so
# inputs of mixed scales do not move the cut-off. At an optimum the ratio is 1 / (||W_mm||_F mean_alpha ||f_k||),
# the mean cosine of W_mm with its support's features: a feasible probe is far from it (the largest
# ||W_mm||_F ||f|| seen: about 1e3); an instance whose optimum lies beyond it counts as having none.
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


def _hard_margin_planes(
    a: NDArray[np.float64],
    d: NDArray[np.float64],
    other: NDArray[np.bool_],
    per_input: int,
    tol: float,
    max_rounds: int,
    linalg: LinearAlgebra,
) -> Planes | None:
    """The hard-margin dual of (W-ATT-SVM) on cutting planes, stopped where 0 counts as in the features' hull (their
    hull ratio at :data:`HULL_TOL` or below); None where a token equals the selected one (d_it = 0: a^T W d_it >= 1
    cannot hold)."""
    lengths = np.sqrt(np.einsum("itc,itc->it", d, d))
    if not np.all(lengths[other] > 0):
        return None
    hard_solve = _frobenius_solve(False, np.inf, linalg)  # unboxed: the box is the soft margin's alone
    return _cutting_planes(a, d, other, hard_solve, per_input, tol, max_rounds, HULL_TOL, lengths)


def margin_slack(
    alpha: NDArray[np.float64], a: NDArray[np.float64], d: NDArray[np.float64], other: NDArray[np.bool_], tol: float
) -> float:
    """The slack s at which the hard margins of (W-ATT-SVM) count as met, a_i^T W d_it >= 1 - s, for the multipliers
    ``alpha`` of W = sum_k alpha_k a_k d_k^T: s = max(tol, SOLVE_RTOL sum_k alpha_k max_k ||a_k||^2 ||d_k||^2).

    The margins m = G alpha carry rounding that grows with the multipliers (:data:`SOLVE_RTOL`); 1e-6 at most.

    Parameters
    ----------
    alpha : ndarray, shape (k,)
        The multipliers of the working set's constraints.
    a : ndarray, shape (n, C + 1)
        Query inputs a_i (:func:`~maxmargin.core.w_svm.query_inputs`).
    d : ndarray, shape (n, T, C)
        Differences x_{i,o_i} - x_it.
    other : ndarray of bool, shape (n, T)
        The constraints, t != o_i.
    tol : float
        The margin tolerance asked for (:data:`~maxmargin.core.w_svm.W_SVM_TOL`).

    Returns
    -------
    float
        The slack s.

    Examples
    --------
    Multipliers 5e7 on two differences of norm 1: the margins are met at 1 - 1e-6, not at 1 - tol.

    >>> import numpy as np
    >>> from maxmargin.core import margin_slack
    >>> a, d = np.array([[0.0, 0.0, 1.0]]), np.array([[[1.0, 1e-4], [-1.0, 1e-4], [0.0, 0.0]]])
    >>> margin_slack(np.array([5e7, 5e7]), a, d, np.array([[True, True, False]]), 1e-9)
    1e-06
    >>> margin_slack(np.array([1.0, 1.0]), a, d, np.array([[True, True, False]]), 1e-9)
    1e-09
    """
    alpha, a, d, other, tol = check_arrays(
        alpha=(alpha, "(k,)?"), a=(a, "(n, A)"), d=(d, "(n, T, C)"), other=(other, "bool (n, T)"), tol=(tol, "()")
    )
    return _margin_slack(alpha, a, d, other, tol)


def _margin_slack(
    alpha: NDArray[np.float64], a: NDArray[np.float64], d: NDArray[np.float64], other: NDArray[np.bool_], tol: float
) -> float:
    """:func:`margin_slack` without the argument check (every hard solve's)."""
    kernel = np.max(np.sum(a**2, axis=1)[:, None] * np.einsum("itc,itc->it", d, d), where=other, initial=0.0)
    return min(max(tol, SOLVE_RTOL * float(alpha.sum()) * kernel), 1e-6)


def _feasible(
    planes: Planes | None,
    a: NDArray[np.float64],
    d: NDArray[np.float64],
    other: NDArray[np.bool_],
    tol: float,
    hull_tol: float | None = None,
) -> float | None:
    """Whether some W meets every margin, decided by the hard-margin planes: the slack :func:`margin_slack` at which
    their W meets every margin (whatever its hull ratio: such a W shows that some W does); :data:`_REPAIRED` where
    some margins fall short of that but W / its smallest margin is certified within :data:`REPAIR_GAP`; None where
    no W does (a token equal to the selected one, or the hull ratio at ``hull_tol``, :data:`HULL_TOL` unless given, or
    below). An ArithmeticError
    where the planes stopped short of all three (out of rounds, or a solve that misses its own margins by more than
    the certificate allows)."""
    if planes is None:
        return None
    slack = _margin_slack(planes.alpha, a, d, other, tol)
    short = planes.margins[other]
    if short.min() >= 1.0 - slack:
        return slack
    if planes.hull <= (HULL_TOL if hull_tol is None else hull_tol):
        return None
    if _repair_gap(planes.w, short, planes.alpha) <= REPAIR_GAP:
        return _REPAIRED
    raise ArithmeticError(
        f"the hard-margin W-ATT-SVM left {int(np.sum(short < 1.0 - slack))} of {int(other.sum())} margins below "
        f"1 - {slack:.1e} (the smallest {short.min():.9f}) after {planes.rounds} cutting-plane rounds, with a hull "
        f"ratio of {planes.hull:.1e}, above HULL_TOL = {HULL_TOL:g}, so that some W should meet them: the rounds ran "
        "out (w_att_svm's max_rounds) or a solve missed its own margins"
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
    low = float(planes.margins[other].min())
    return planes._replace(w=planes.w / low, margins=planes.margins / low, status="repaired")
