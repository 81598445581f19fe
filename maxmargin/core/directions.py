"""Max-margin directions: optimal tokens, local optimality, GMM / LMM classification, and every direction of a
small instance by enumerating its token choices alpha.

Paper: Definitions 1-2 and the set P^mm of Section 2.3 (GMM and LMM directions); the candidate limits of
Theorems 5-6 ((SVM) with r_i = x_{i alpha_i}, (ATT-SVM) and eq. (10)).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.model import Array
from maxmargin.core.svm import NEIGHBOR_TOL, SVM_TOL, SVMResult, att_svm, p_relax, svm_neighbors, v_svm

# Instances are enumerated (every one of their T^n token choices) only when there are at most this many choices.
MAX_ENUMERATED = 64

# The variable each kind of direction is a direction of: the attention weights p or the head v.
BLOCK_OF_KIND = {"gmm": "p", "lmm": "p", "p_mm": "p", "p_relax": "p", "v_mm": "v"}


def _gaps(gamma: NDArray[np.float64], alpha: NDArray[np.int_]) -> NDArray[np.float64]:
    """gamma_{i alpha_i} - gamma_it, shape (n, T), for arguments checked by the caller."""
    return gamma[np.arange(gamma.shape[0]), alpha][:, None] - gamma


def is_locally_optimal(gamma: NDArray[np.float64], alpha: NDArray[np.int_], neighbors: NDArray[np.bool_]) -> bool:
    """Whether alpha is locally optimal: gamma_{i alpha_i} > gamma_it for every SVM-neighbour t in T_i.

    Definition 2.

    Parameters
    ----------
    gamma : ndarray, shape (n, T)
        Token scores.
    alpha : ndarray of int, shape (n,)
        The selected token of each input.
    neighbors : ndarray of bool, shape (n, T)
        SVM-neighbours (:func:`maxmargin.core.svm.svm_neighbors`).

    Returns
    -------
    bool

    Examples
    --------
    Token 1 (score 0.9) beats its one SVM-neighbour, token 2 (score 0), though not token 0 (score 1):

    >>> import numpy as np
    >>> from maxmargin.core import is_locally_optimal
    >>> is_locally_optimal(np.array([[1.0, 0.9, 0.0]]), np.array([1]), np.array([[False, False, True]]))
    True
    """
    gamma, alpha, neighbors = check_arrays(
        gamma=(gamma, "(n, T)"), alpha=(alpha, "int (n,) < T"), neighbors=(neighbors, "bool (n, T)")
    )
    return bool(np.all(_gaps(gamma, alpha)[neighbors] > 0.0))


def optimal_tokens(gamma: NDArray[np.float64]) -> NDArray[np.int_]:
    """Indices of the optimal tokens opt_i = argmax_t gamma_it (first index on ties).

    Definition 1.

    Parameters
    ----------
    gamma : ndarray, shape (n, T)
        Token scores.

    Returns
    -------
    ndarray of int, shape (n,)
        opt_i.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import optimal_tokens
    >>> optimal_tokens(np.array([[1.0, 0.9, 0.0], [0.0, 2.0, 2.0]]))
    array([0, 1])
    """
    (gamma,) = check_arrays(gamma=(gamma, "(n, T)"))
    return np.argmax(gamma, axis=1).astype(np.int64)


def is_globally_optimal(gamma: NDArray[np.float64], alpha: NDArray[np.int_]) -> bool:
    """Whether every alpha_i attains the highest score of input i (ties allowed).

    Definition 1 (alpha_i in argmax_t gamma_it).

    Parameters
    ----------
    gamma : ndarray, shape (n, T)
        Token scores.
    alpha : ndarray of int, shape (n,)
        The selected token of each input.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import is_globally_optimal
    >>> gamma = np.array([[1.0, 0.9, 0.0], [0.0, 2.0, 2.0]])
    >>> is_globally_optimal(gamma, np.array([0, 2])), is_globally_optimal(gamma, np.array([1, 2]))
    (True, False)
    """
    gamma, alpha = check_arrays(gamma=(gamma, "(n, T)"), alpha=(alpha, "int (n,) < T"))
    return bool(np.all(_gaps(gamma, alpha) >= 0.0))


def min_score_gap(gamma: NDArray[np.float64], alpha: NDArray[np.int_], neighbors: NDArray[np.bool_]) -> float:
    """Smallest score gap gamma_{i alpha_i} - gamma_it over SVM-neighbours t in T_i (+inf if none).

    Definition 2 (local optimality iff the gap is > 0); plotted in Fig. 9(b).

    Parameters
    ----------
    gamma : ndarray, shape (n, T)
        Token scores.
    alpha : ndarray of int, shape (n,)
        The selected token of each input.
    neighbors : ndarray of bool, shape (n, T)
        SVM-neighbours.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import min_score_gap
    >>> min_score_gap(np.array([[1.0, 0.9, 0.0]]), np.array([1]), np.array([[True, False, True]]))
    -0.09999999999999998
    """
    gamma, alpha, neighbors = check_arrays(
        gamma=(gamma, "(n, T)"), alpha=(alpha, "int (n,) < T"), neighbors=(neighbors, "bool (n, T)")
    )
    return float(np.min(_gaps(gamma, alpha)[neighbors], initial=np.inf))


@dataclass(frozen=True)
class MaxMarginDirection:
    """Classification of the (ATT-SVM) direction of token selection alpha as GMM, LMM or neither.

    Definitions 1-2: kind in {"gmm", "lmm", "neither", "infeasible"}.
    """

    kind: str
    alpha: NDArray[np.int_]
    svm: SVMResult
    neighbors: NDArray[np.bool_] | None
    score_gap: float


def classify_direction(
    K: NDArray[np.float64],
    gamma: NDArray[np.float64],
    alpha: NDArray[np.int_],
    *,
    tol: float = SVM_TOL,
    svm: SVMResult | None = None,
    neighbor_tol: float = NEIGHBOR_TOL,
) -> MaxMarginDirection:
    """Solve (ATT-SVM) at alpha and classify p_mm(alpha) as GMM, LMM, neither, or infeasible.

    Definition 1: alpha_i in argmax_t gamma_it for every i makes p_mm(alpha) the GMM, even when an SVM-neighbour
    ties with alpha_i (the optimal tokens are then not unique); Definition 2: otherwise LMM iff locally optimal.
    ``svm``: the (ATT-SVM) solution at alpha when the caller already has it (e.g. from :func:`att_svm_ldp`);
    ``neighbor_tol``: the equality test of :func:`svm_neighbors`.

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys.
    gamma : ndarray, shape (n, T)
        Token scores.
    alpha : ndarray of int, shape (n,)
        The selected token of each input.
    tol : float
        Relative KKT tolerance (default :data:`SVM_TOL`).
    svm : SVMResult, optional
        The (ATT-SVM) solution at alpha, when known.
    neighbor_tol : float
        Tolerance of :func:`maxmargin.core.svm.svm_neighbors`.

    Returns
    -------
    MaxMarginDirection
        ``kind``, ``alpha`` (n,), ``svm``, ``neighbors`` (n, T) and ``score_gap``.

    Examples
    --------
    The paper's Figure 1(b): selecting token 1 (score 0.9 < 1) is locally optimal, so its direction is an LMM.

    >>> import numpy as np
    >>> from maxmargin.core import classify_direction
    >>> K = np.array([[[-0.1, 1.0], [1.0, 0.0], [0.0, 0.0]]])
    >>> gamma = np.array([[1.0, 0.9, 0.0]])
    >>> lmm = classify_direction(K, gamma, np.array([1]))
    >>> lmm.kind, lmm.svm.direction, lmm.neighbors, lmm.score_gap
    ('lmm', array([1., 0.]), array([[False, False,  True]]), 0.9)
    """
    K, gamma, alpha, tol, neighbor_tol = check_arrays(
        K=(K, "(n, T, d)"),
        gamma=(gamma, "(n, T)"),
        alpha=(alpha, "int (n,) < T"),
        tol=(tol, "()"),
        neighbor_tol=(neighbor_tol, "()"),
    )
    res = att_svm(K, alpha, tol=tol) if svm is None else svm
    return _classify_solution(K, gamma, alpha, res, neighbor_tol)


def _classify_solution(
    K: NDArray[np.float64], gamma: NDArray[np.float64], alpha: NDArray[np.int_], res: SVMResult, neighbor_tol: float
) -> MaxMarginDirection:
    """:func:`classify_direction` from the (ATT-SVM) solution ``res`` at alpha, for checked arguments. Definition 1
    is tested first: a GMM stays a GMM when an SVM-neighbour ties with alpha_i, which would fail the strict local
    optimality of Definition 2."""
    if not res.feasible:
        return MaxMarginDirection("infeasible", alpha, res, None, float("nan"))
    nb = svm_neighbors(K, alpha, res.solution, tol=neighbor_tol)
    if is_globally_optimal(gamma, alpha):
        kind = "gmm"
    else:
        kind = "lmm" if is_locally_optimal(gamma, alpha, nb) else "neither"
    return MaxMarginDirection(kind, alpha, res, nb, min_score_gap(gamma, alpha, nb))


def gmm_direction(K: NDArray[np.float64], gamma: NDArray[np.float64]) -> SVMResult:
    """Globally-optimal max-margin direction: (ATT-SVM) at the optimal tokens opt_i.

    Definition 1 (GMM), Theorem 1.

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys.
    gamma : ndarray, shape (n, T)
        Token scores.

    Returns
    -------
    SVMResult
        The solution (``solution``, shape (d,); None if infeasible), status, active constraints, KKT residual.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import gmm_direction
    >>> K = np.array([[[-0.1, 1.0], [1.0, 0.0], [0.0, 0.0]]])  # Figure 1(b)
    >>> gmm = gmm_direction(K, np.array([[1.0, 0.9, 0.0]]))
    >>> np.round(gmm.direction, 4)  # (-0.1, 1) / ||.||
    array([-0.0995,  0.995 ])
    """
    K, gamma = check_arrays(K=(K, "(n, T, d)"), gamma=(gamma, "(n, T)"))
    return att_svm(K, optimal_tokens(gamma))


def _token_choices(n: int, T: int, max_combinations: int) -> itertools.product:
    if T**n > max_combinations:
        raise ValueError(f"T^n = {T**n} token choices exceed max_combinations = {max_combinations}")
    return itertools.product(range(T), repeat=n)


def max_margin_directions(
    K: Array, gamma: Array, max_combinations: int = MAX_ENUMERATED
) -> list[tuple[str, Array, SVMResult]]:
    """All GMM and LMM directions of a small instance, by enumerating the token choices alpha.

    Paper: Definition 2 and the set P^mm of Section 2.3.

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys of the n inputs' T tokens.
    gamma : ndarray, shape (n, T)
        Token scores (Definition 1).
    max_combinations : int
        Largest T^n enumerated; a larger instance raises ValueError.

    Returns
    -------
    list of (str, ndarray of shape (n,), SVMResult)
        ``("gmm" | "lmm", alpha, ATT-SVM solution)`` for every token choice alpha that is a GMM or an LMM.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import max_margin_directions
    >>> K = np.array([[[-0.1, 1.0], [1.0, 0.0], [0.0, 0.0]]])  # Figure 1(b)
    >>> [(kind, alpha) for kind, alpha, _ in max_margin_directions(K, np.array([[1.0, 0.9, 0.0]]))]
    [('gmm', array([0])), ('lmm', array([1]))]
    """
    K, gamma, max_combinations = check_arrays(
        K=(K, "(n, T, d)"), gamma=(gamma, "(n, T)"), max_combinations=(max_combinations, "int ()")
    )
    n, T, _ = K.shape
    found = []
    for alpha in _token_choices(n, T, max_combinations):
        res = classify_direction(K, gamma, np.array(alpha))
        if res.kind in ("gmm", "lmm"):
            found.append((res.kind, np.array(alpha), res.svm))
    return found


def joint_candidates(
    X: Array, Y: Array, K: Array, max_combinations: int = MAX_ENUMERATED
) -> list[tuple[Array, Array, Array]]:
    """Every token selection alpha whose selected tokens are separable, with (v_mm, p_mm or p_relax) directions.

    Paper: (SVM) with r_i = x_{i alpha_i}, (ATT-SVM) and eq. (10): the candidate limits of Theorems 5-6.

    Parameters
    ----------
    X : ndarray, shape (n, T, d)
        Tokens.
    Y : ndarray, shape (n,)
        Labels in {-1, +1}.
    K : ndarray, shape (n, T, d)
        Keys.
    max_combinations : int
        Largest T^n enumerated; a larger instance raises ValueError.

    Returns
    -------
    list of (ndarray of shape (n,), ndarray of shape (d,), ndarray of shape (d,))
        ``(alpha, v_mm direction, p direction)`` triples, p_mm and p_relax each where feasible.

    Examples
    --------
    One input, two tokens: either can be selected, each with its head's direction and p_mm and p_relax (the same
    here: the one input is a support vector).

    >>> import numpy as np
    >>> from maxmargin.core import joint_candidates
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> candidates = joint_candidates(X, np.array([1.0]), X)
    >>> len(candidates)
    4
    >>> alpha, v, p = candidates[0]
    >>> alpha, v, np.round(p, 4)
    (array([0]), array([1., 0.]), array([ 0.7071, -0.7071]))
    """
    X, Y, K, max_combinations = check_arrays(
        X=(X, "(n, T, d)"), Y=(Y, "(n,)"), K=(K, "(n, T, d)"), max_combinations=(max_combinations, "int ()")
    )
    n, T, _ = X.shape
    out = []
    for choice in _token_choices(n, T, max_combinations):
        alpha = np.array(choice)
        vmm = v_svm(X[np.arange(n), alpha], Y)
        if not vmm.feasible or vmm.direction is None:
            continue
        for res in (att_svm(K, alpha), p_relax(K, alpha, vmm.active)):
            if res.feasible and res.direction is not None:
                out.append((alpha, vmm.direction, res.direction))
    return out
