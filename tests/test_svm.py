"""Tests of maxmargin.core.svm on hand-solved cases from the paper (Fig. 1(b), Fig. 3) and random cross-checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from maxmargin.core import directions, svm
from maxmargin.core.directions import (
    classify_direction,
    gmm_direction,
    is_globally_optimal,
    is_locally_optimal,
    min_score_gap,
    optimal_tokens,
)
from maxmargin.core.svm import att_svm, p_relax, svm_neighbors, v_svm, v_svm_qp

EXACT = 1e-12


def fig3_keys(third: tuple[float, float]) -> np.ndarray:
    """Fig. 3: W = I, so keys = tokens; token 0 is (0,0) in every input, token 1 is the selected one."""
    return np.array([[[0.0, 0.0], [1.0, 1.0]], [[0.0, 0.0], [1.0, -1.0]], [[0.0, 0.0], list(third)]])


Y3 = np.array([1.0, -1.0, 1.0])
ALPHA3 = np.array([1, 1, 1])


def test_fig3a_att_svm_vsvm_prelax() -> None:
    K = fig3_keys((0.5, 1.0))
    # (ATT-SVM) rows k_i1 - k_i0: (1,1), (1,-1), (0.5,1).  Guess rows 2,3 active:
    # p1 - p2 = 1, p1/2 + p2 = 1  ->  p = (4/3, 1/3); row 1 gives 5/3 > 1.
    # Multipliers: p = l2 (1,-1) + l3 (0.5,1) -> l3 = 10/9, l2 = 7/9 > 0, so KKT holds.
    res = att_svm(K, ALPHA3)
    assert res.status == "optimal" and res.feasible
    np.testing.assert_allclose(res.solution, [4 / 3, 1 / 3], atol=EXACT)
    np.testing.assert_array_equal(res.active, [[False, False], [True, False], [True, False]])  # t = 0 rows
    assert res.kkt_residual < 1e-12
    assert res.norm == pytest.approx(np.sqrt(17) / 3, abs=EXACT)
    np.testing.assert_allclose(res.direction, np.array([4.0, 1.0]) / np.sqrt(17), atol=EXACT)
    # (SVM) with r_i = selected tokens: Y_i r_i = (1,1), (-1,1), (0.5,1).  Rows 1+2 give 2 v2 >= 2, so
    # ||v|| >= 1, attained by v = (0,1) with all three margins exactly 1.
    R = K[:, 1, :]
    for solver in (v_svm, v_svm_qp):
        v = solver(R, Y3)
        np.testing.assert_allclose(v.solution, [0.0, 1.0], atol=1e-10)
        np.testing.assert_array_equal(v.active, [True, True, True])
        assert v.kkt_residual < 1e-9
    # (10) with S = all inputs is (ATT-SVM).
    pr = p_relax(K, ALPHA3, np.ones(3, dtype=bool))
    np.testing.assert_allclose(pr.solution, [4 / 3, 1 / 3], atol=EXACT)


def test_fig3b_support_and_prelax() -> None:
    K = fig3_keys((0.5, 1.5))
    # v = (0,1) is still optimal (rows 1,2 force ||v|| >= 1) and input 3 has margin 1.5 > 1.
    v = v_svm(K[:, 1, :], Y3)
    np.testing.assert_allclose(v.solution, [0.0, 1.0], atol=1e-10)
    np.testing.assert_array_equal(v.active, [True, True, False])
    # (10), S = {1,2}: p1+p2 >= 1, p1-p2 >= 1 -> p = (1,0); third row 0.5*1 + 1.5*0 = 0.5 >= 0 holds.
    pr = p_relax(K, ALPHA3, v.active)
    np.testing.assert_allclose(pr.solution, [1.0, 0.0], atol=EXACT)
    np.testing.assert_array_equal(pr.active, [[True, False], [True, False], [False, False]])
    # (ATT-SVM): (1,0) violates 0.5 p1 + 1.5 p2 >= 1.  Projection on row 3 alone, (0.2, 0.6), violates
    # row 2.  Rows 2,3 active: p1 = 1 + p2, 0.5 + 2 p2 = 1 -> p = (1.25, 0.25); row 1 gives 1.5;
    # multipliers (0.875, 0.75) > 0.
    res = att_svm(K, ALPHA3)
    np.testing.assert_allclose(res.solution, [1.25, 0.25], atol=EXACT)
    np.testing.assert_array_equal(res.active[:, 0], [False, True, True])


# Fig. 1(b): W = diag(1,1,0), keys (x1, x2, 0); token 0 = (-0.1, 1), token 1 = (1, 0), token 2 = (0, 0).
K1 = np.array([[[-0.1, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
G1 = np.array([[1.0, 0.9, 0.0]])


def test_fig1b_locally_optimal_token_is_lmm() -> None:
    # alpha = 1: rows (1,0,0) - (-0.1,1,0) = (1.1,-1,0) and (1,0,0).  Projection on row 2 alone: p = (1,0,0),
    # row 1 gives 1.1 > 1, so p_mm = (1,0,0) and T_1 = {token 2}; 0.9 > 0 -> locally optimal, opt = 0 -> LMM.
    out = classify_direction(K1, G1, np.array([1]))
    assert out.kind == "lmm"
    np.testing.assert_allclose(out.svm.solution, [1.0, 0.0, 0.0], atol=EXACT)
    np.testing.assert_array_equal(out.neighbors, [[False, False, True]])
    assert out.score_gap == pytest.approx(0.9, abs=EXACT)


def test_fig1b_optimal_token_is_gmm() -> None:
    # alpha = 0: rows (-1.1,1,0) and (-0.1,1,0).  Projection on row 2 alone: p = (-0.1,1,0)/1.01, row 1 gives
    # (0.11+1)/1.01 = 1.11/1.01 > 1, so p_mm = (-0.1,1,0)/1.01, T = {token 2} (gap 1 - 0) -> GMM.
    expected = np.array([-0.1, 1.0, 0.0]) / 1.01
    out = classify_direction(K1, G1, np.array([0]))
    assert out.kind == "gmm"
    np.testing.assert_allclose(out.svm.solution, expected, atol=EXACT)
    np.testing.assert_array_equal(out.neighbors, [[False, False, True]])
    assert out.score_gap == pytest.approx(1.0, abs=EXACT)
    np.testing.assert_allclose(gmm_direction(K1, G1).solution, expected, atol=EXACT)


def test_fig1b_worst_token_is_neither() -> None:
    # alpha = 2: rows (0.1,-1,0) and (-1,0,0).  Either projection alone violates the other row
    # ((-1,0): 0.1*(-1) = -0.1 < 1; (0.1,-1)/1.01: -0.1/1.01 < 1), so both active: p1 = -1, -0.1 - p2 = 1
    # -> p = (-1,-1.1,0) with multipliers (1.1, 1.11) > 0.  Feasible, but both neighbours score higher.
    out = classify_direction(K1, G1, np.array([2]))
    assert out.kind == "neither"
    np.testing.assert_allclose(out.svm.solution, [-1.0, -1.1, 0.0], atol=EXACT)
    np.testing.assert_array_equal(out.neighbors, [[True, True, False]])
    assert out.score_gap == pytest.approx(-1.0, abs=EXACT)


def test_tie_with_neighbor_is_not_locally_optimal() -> None:
    # keys (1,0), (0,0), equal scores; alpha = 0: single row (1,0) -> p_mm = (1,0), token 1 is a neighbour
    # with the same score, so gamma_alpha > gamma_t fails; alpha is still a (tied) global maximiser.
    K = np.array([[[1.0, 0.0], [0.0, 0.0]]])
    gamma = np.array([[1.0, 1.0]])
    alpha = np.array([0])
    out = classify_direction(K, gamma, alpha)
    np.testing.assert_allclose(out.svm.solution, [1.0, 0.0], atol=EXACT)
    assert not is_locally_optimal(gamma, alpha, out.neighbors)
    assert is_globally_optimal(gamma, alpha)
    assert out.kind == "gmm" and out.score_gap == 0.0  # Definition 1: p_mm of (tied) optimal tokens is the GMM


def test_infeasible_cases_return_status() -> None:
    # Middle key of (-1,0), (0,0), (1,0): rows (1,0) and (-1,0) need p1 >= 1 and -p1 >= 1.
    K = np.array([[[-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]])
    res = att_svm(K, np.array([1]))
    assert res.status == "infeasible" and not res.feasible and res.solution is None
    assert np.isnan(res.norm) and res.direction is None and np.isnan(res.kkt_residual)
    assert classify_direction(K, np.zeros((1, 3)), np.array([1])).kind == "infeasible"
    # An end point is separable: alpha = 2 has rows (2,0), (1,0) -> p = (1,0).
    np.testing.assert_allclose(att_svm(K, np.array([2])).solution, [1.0, 0.0], atol=EXACT)
    # Duplicate of the selected key: zero row needs 0 >= 1 (infeasible); in (10) outside S it is dropped.
    Kd = np.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]], [[0.0, 2.0], [0.0, 0.0], [0.0, 0.0]]])
    assert att_svm(Kd, np.array([0, 0])).status == "infeasible"
    pr = p_relax(Kd, np.array([0, 0]), np.array([False, True]))
    np.testing.assert_allclose(pr.solution, [0.0, 0.5], atol=EXACT)  # only 2 p2 >= 1 binds
    # Input 1, token 2: p.(1,0) = 0 sits at equality of its >= 0 row; the dropped duplicate is not active.
    np.testing.assert_array_equal(pr.active, [[False, False, True], [False, True, True]])
    # Non-separable labels without bias: r = (1,0) with Y = +1 and r = (2,0) with Y = -1.
    R, Y = np.array([[1.0, 0.0], [2.0, 0.0]]), np.array([1.0, -1.0])
    assert v_svm(R, Y).status == "infeasible" and v_svm_qp(R, Y).status == "infeasible"


def test_empty_support_gives_zero() -> None:
    # (10) with S empty: p = 0 satisfies every >= 0 row.
    pr = p_relax(fig3_keys((0.5, 1.0)), ALPHA3, np.zeros(3, dtype=bool))
    np.testing.assert_array_equal(pr.solution, [0.0, 0.0])
    assert pr.norm == 0.0 and pr.direction is None


def test_cvxopt_failure_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import cvxopt.solvers

    def broken(*args: object, **kwargs: object) -> None:
        raise ArithmeticError("singular KKT matrix")

    monkeypatch.setattr(cvxopt.solvers, "qp", broken)
    res = att_svm(fig3_keys((0.5, 1.5)), ALPHA3)
    np.testing.assert_allclose(res.solution, [1.25, 0.25], atol=EXACT)
    assert res.kkt_residual < 1e-12


def test_random_vsvm_sklearn_matches_cvxopt() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        n, d = int(rng.integers(5, 30)), int(rng.integers(2, 6))
        R = rng.standard_normal((n, d))
        Y = np.sign(R @ rng.standard_normal(d))
        a, b = v_svm(R, Y), v_svm_qp(R, Y)
        assert a.feasible and b.feasible
        np.testing.assert_allclose(a.direction, b.direction, atol=1e-6)
        np.testing.assert_array_equal(a.active, b.active)
        assert np.all(Y * (R @ a.solution) >= 1 - 1e-9)
        assert a.kkt_residual < 1e-9


def test_random_att_svm_kkt_and_slsqp() -> None:
    rng = np.random.default_rng(1)
    for _ in range(15):
        n, T, d = int(rng.integers(1, 5)), int(rng.integers(2, 6)), int(rng.integers(2, 5))
        K = rng.standard_normal((n, T, d))
        alpha = np.argmax(K @ rng.standard_normal(d), axis=1)  # separable by construction
        res = att_svm(K, alpha)
        assert res.feasible and res.kkt_residual < 1e-9
        D = (K[np.arange(n), alpha][:, None, :] - K)[np.arange(T)[None, :] != alpha[:, None]]
        ref = minimize(
            lambda p: 0.5 * p @ p,
            np.zeros(d),
            jac=lambda p: p,
            method="SLSQP",
            constraints=[{"type": "ineq", "fun": lambda p, D=D: D @ p - 1, "jac": lambda p, D=D: D}],
            options={"ftol": 1e-15, "maxiter": 500},
        )
        np.testing.assert_allclose(res.solution, ref.x, atol=1e-5)
        # Active mask == SVM neighbours of Definition 2.
        np.testing.assert_array_equal(res.active, svm_neighbors(K, alpha, res.solution))


def test_neighbors_and_score_gap_by_hand() -> None:
    # Fig. 3(a): p_mm = (4/3, 1/3); margins of token 0: 5/3, 1, 1 -> T_1 = {}, T_2 = T_3 = {token 0}.
    K = fig3_keys((0.5, 1.0))
    nb = svm_neighbors(K, ALPHA3, np.array([4 / 3, 1 / 3]))
    np.testing.assert_array_equal(nb, [[False, False], [True, False], [True, False]])
    gamma = np.array([[5.0, 2.0], [0.5, 1.0], [0.2, 3.0]])
    # Gaps over neighbours: input 2: 1 - 0.5 = 0.5, input 3: 3 - 0.2 = 2.8 (input 1's -3 is not a neighbour).
    assert min_score_gap(gamma, ALPHA3, nb) == pytest.approx(0.5, abs=EXACT)
    assert is_locally_optimal(gamma, ALPHA3, nb) and not is_globally_optimal(gamma, ALPHA3)
    np.testing.assert_array_equal(optimal_tokens(gamma), [0, 1, 1])
    assert min_score_gap(gamma, ALPHA3, np.zeros((3, 2), dtype=bool)) == np.inf
    # Perturbed direction leaves the margin: relative tolerance 1e-7.
    assert not svm_neighbors(K, ALPHA3, np.array([4 / 3 + 1e-5, 1 / 3])).any(axis=1)[1]
    assert optimal_tokens(np.array([[1.0, 1.0, 0.0]]))[0] == 0  # first index on ties


def test_module_has_no_print_and_docstrings_cite_paper() -> None:
    for name in [
        "att_svm",
        "p_relax",
        "v_svm",
        "v_svm_qp",
        "svm_neighbors",
        "is_locally_optimal",
        "optimal_tokens",
        "is_globally_optimal",
        "min_score_gap",
        "classify_direction",
        "gmm_direction",
    ]:
        doc = (getattr(svm, name, None) or getattr(directions, name)).__doc__
        assert doc is not None and len(doc.strip().splitlines()) >= 2
