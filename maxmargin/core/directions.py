"""Every max-margin direction of a small instance, by enumerating its token choices alpha.

Paper: Definition 2 and the set P^mm of Section 2.3 (GMM and LMM directions); the candidate limits of
Theorems 5-6 ((SVM) with r_i = x_{i alpha_i}, (ATT-SVM) and eq. (10)).
"""

from __future__ import annotations

import itertools

import numpy as np

from maxmargin.core.model import Array
from maxmargin.core.svm import SVMResult, att_svm, classify_direction, p_relax, v_svm

# Instances are enumerated (every one of their T^n token choices) only when there are at most this many choices.
MAX_ENUMERATED = 64

# The variable each kind of direction is a direction of: the attention weights p or the head v.
BLOCK_OF_KIND = {"gmm": "p", "lmm": "p", "p_mm": "p", "p_relax": "p", "v_mm": "v"}


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
    """
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
    """
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
