"""The front door of the maths: every public function of maxmargin.core checks its arguments on entry (shape,
finiteness, emptiness, index range) and raises a ValueError naming the argument and the shape expected, instead of
failing inside numpy or scipy, or returning a plausible wrong answer."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import maxmargin.core as core
from maxmargin.core import Gradient

K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])  # n = 1 input, T = 3 tokens, d = 2
GAMMA = np.array([[1.0, 0.5, -1.5]])
Y, V, P = np.array([1.0]), np.array([1.0, 0.5]), np.zeros(2)
Z, XW = np.array([[1.0, 0.0]]), np.array([[[0.0, 0.0], [1.0, 0.0]]])  # one head's inputs: n = 1, T = 2, C = 2
D, B = np.array([[1.0, 1.0]]), np.array([1.0])  # min ||p|| s.t. D p >= b: m = 1, d = 2
NAN = np.array([np.nan, 0.0])
GUARD_W = {"direction_from": 0.5, "max_direction_angle": 10}
GUARD_S = {"min_w_growth": 2.0, "max_sparsity_ratio": 0.9, "max_spearman": -0.5}


def _grad(points: list[np.ndarray]) -> list[Gradient]:
    return [Gradient(np.ones_like(points[0]), np.zeros(len(points[0])))]


def _log_objective(points: list[np.ndarray]) -> np.ndarray:
    return np.zeros(len(points[0]))


def _batch() -> core.SpanBatch:
    return core.span_coordinates(K[None], GAMMA[None], np.zeros((1, 2)))


# name -> (a call with one wrong argument, what its ValueError must say: the argument and the shape expected)
CASES = {
    "att_svm": (lambda: core.att_svm(K, np.array([3])), r"alpha must hold indices in \[0, T\) with T = 3 \(as K\)"),
    "att_svm_ldp": (lambda: core.att_svm_ldp(K[0], np.array([0])), r"K must have shape \(n, T, d\): got shape \(3,"),
    "attention": (lambda: core.attention(K, np.ones(3)), r"p must have shape \(\.\.\., d\) with d = 2 \(as K\)"),
    "attention_features": (lambda: core.attention_features(K, np.ones((1, 2))), r"s must have shape \(\.\.\., n, T\)"),
    "ball_kkt_residual": (
        lambda: core.ball_kkt_residual(np.array([[1.0, np.nan]]), Gradient(np.ones((1, 2)), np.zeros(1)), 1.0),
        r"x holds 1 NaN or infinite value\(s\): expected finite numbers, shape \(\.\.\., d\)",
    ),
    "check_arrays": (lambda: core.check_arrays(K=(np.ones((0, 3, 2)), "(n, T, d)")), r"K is empty \(shape \(0, 3,"),
    "check_loss": (lambda: core.check_loss(3), r"unknown loss 3; allowed: logistic"),
    "classify_direction": (
        lambda: core.classify_direction(K, GAMMA[:, :2], np.array([0])),
        r"gamma must have shape \(n, T\) with T = 3 \(as K\), n = 1 \(as K\): got shape \(1, 2\)",
    ),
    "cosine": (lambda: core.cosine(np.ones(2), np.ones(3)), r"b must have shape \(\.\.\., d\) with d = 2 \(as a\)"),
    "dual_active_set": (
        lambda: core.dual_active_set(np.eye(2), np.zeros(3)),
        r"alpha must have shape \(m,\) with m = 2 \(as g\): got shape \(3,\)",
    ),
    "duration": (lambda: core.duration(float("nan")), r"seconds must be a finite number"),
    "final_weights": (lambda: core.final_weights(_batch(), "a trajectory"), r"traj must be a SpanTrajectory"),
    "frobenius_cosine": (lambda: core.frobenius_cosine(np.eye(2), np.eye(3)), r"b must have shape \(p, q\) with p = 2"),
    "gd_in_span": (
        lambda: core.gd_in_span(_batch(), eta=np.nan, n_iter=1, loss="logistic", normalized=True),
        r"eta holds 1 NaN",
    ),
    "gmm_direction": (lambda: core.gmm_direction(K, GAMMA.T), r"gamma must have shape \(n, T\)"),
    "grad_p": (lambda: core.grad_p(K, GAMMA, NAN), r"p holds 1 NaN or infinite value\(s\)"),
    "grad_v": (
        lambda: core.grad_v(K, K, np.array([1.0, -1.0]), V, P),
        r"Y must have shape \(\.\.\., n\) with n = 1 \(as X\): got shape \(2,\)",
    ),
    "gradient_descent": (
        lambda: core.gradient_descent(K, GAMMA, np.zeros(3), eta=0.1, n_iter=1),
        r"p0 must have shape \(\.\.\., d\) with d = 2 \(as K\)",
    ),
    "is_globally_optimal": (
        lambda: core.is_globally_optimal(GAMMA, np.array([0.5])),
        r"alpha must hold integers, shape \(n,\)",
    ),
    "is_locally_optimal": (
        lambda: core.is_locally_optimal(GAMMA, np.array([0]), np.ones((1, 2), dtype=bool)),
        r"neighbors must have shape \(n, T\) with T = 3",
    ),
    "joint_candidates": (
        lambda: core.joint_candidates(K, np.array([1.0, 1.0]), K),
        r"Y must have shape \(n,\) with n = 1 \(as X\)",
    ),
    "joint_normalized_gd": (
        lambda: core.joint_normalized_gd(K, Y, K, np.zeros(3), P, eta=0.1, n_iter=1),
        r"v0 must have shape \(\.\.\., d\) with d = 2",
    ),
    "key_difference_basis": (lambda: core.key_difference_basis(K[0]), r"K must have shape \(n, T, d\)"),
    "key_gradient": (
        lambda: core.key_gradient(np.zeros((1, 2)), np.zeros((1, 3)), "logistic"),
        r"gamma must have shape \(\.\.\., n, T\) with T = 2 \(as z\)",
    ),
    "keys": (lambda: core.keys(K, np.eye(3)), r"W must have shape \(d, d\) with d = 2 \(as X\)"),
    "kkt_violation": (lambda: core.kkt_violation(D, B, np.ones(3), B), r"p must have shape \(d,\) with d = 2 \(as D\)"),
    "learned": (lambda: core.learned(np.nan, 10, 0.4, 0.5), r"test_acc holds 1 NaN"),
    "least_distance": (lambda: core.least_distance(D, np.ones(3)), r"b must have shape \(m,\) with m = 1 \(as D\)"),
    "log_excess_risk": (lambda: core.log_excess_risk(K, GAMMA, np.array([np.inf, 0.0])), r"p holds 1 NaN or infinite"),
    "log_gradient": (
        lambda: core.log_gradient(Gradient(np.ones(2), np.array(0.0)), 0.0, np.eye(3)),
        r"basis must have shape \(d, k\) with d = 2 \(as gradient.scaled\)",
    ),
    "log_joint_risk": (lambda: core.log_joint_risk(K, Y, K, V, np.ones(3)), r"p must have shape \(\.\.\., d\)"),
    "log_neg_loss_derivative": (
        lambda: core.log_neg_loss_derivative(np.array([np.nan]), "logistic"),
        r"u holds 1 NaN",
    ),
    "log_non_selected_mass": (lambda: core.log_non_selected_mass(K, np.ones(3)), r"p must have shape \(\.\.\., d\)"),
    "log_non_selected_mass_of_logits": (
        lambda: core.log_non_selected_mass_of_logits(np.zeros(3)),
        r"z must have shape \(\.\.\., n, T\): got shape \(3,\)",
    ),
    "log_softmax": (lambda: core.log_softmax(np.zeros((2, 0))), r"z is empty \(shape \(2, 0\)\)"),
    "loss_value": (lambda: core.loss_value(np.array([np.inf]), "logistic"), r"u holds 1 NaN or infinite"),
    "lp_feasible": (lambda: core.lp_feasible(np.ones((2, 2)), np.ones(3)), r"b must have shape \(m,\) with m = 2"),
    "max_margin_directions": (
        lambda: core.max_margin_directions(K, GAMMA, max_combinations=1.5),
        r"max_combinations must hold integers, shape \(\)",
    ),
    "min_score_gap": (
        lambda: core.min_score_gap(GAMMA, np.array([0]), np.zeros((2, 3), dtype=bool)),
        r"neighbors must have shape \(n, T\) with T = 3 \(as gamma\), n = 1",
    ),
    "model_output": (lambda: core.model_output(K, K, np.ones(3), P), r"v must have shape \(\.\.\., d\) with d = 2"),
    "multistart_path": (
        lambda: core.multistart_path(
            [np.eye(2)], [np.zeros((0, 3))], _grad, _log_objective, np.ones(1), n_random=1, seed=0, n_iter=1, tol=0.1
        ),
        r"candidates\[0\] must have shape \(c0, k0\) with k0 = 2 \(as bases\[0\]\)",
    ),
    "normalized_gd_in_span": (
        lambda: core.normalized_gd_in_span("a batch", eta=0.1, n_iter=1, loss="logistic"),
        r"batch must be a SpanBatch",
    ),
    "optimal_tokens": (lambda: core.optimal_tokens(np.array([[np.nan, 1.0]])), r"gamma holds 1 NaN"),
    "p_relax": (
        lambda: core.p_relax(K, np.array([0]), np.array([True, False])),
        r"support must have shape \(n,\) with n = 1 \(as K\)",
    ),
    "progress": (lambda: core.progress(3), r"message must be a %-format str"),
    "project_ball": (lambda: core.project_ball(np.array([[np.nan, 1.0]]), 1.0), r"x holds 1 NaN"),
    "query_inputs": (lambda: core.query_inputs(np.zeros(3)), r"z must have shape \(n, C\): got shape \(3,\)"),
    "radius_grid": (lambda: core.radius_grid(1.0, np.nan, 3), r"max holds 1 NaN"),
    "random_rank_matrix": (
        lambda: core.random_rank_matrix(np.random.default_rng(0), (5,), 2),
        r"shape must have shape \(2,\): got shape \(1,\)",
    ),
    "rank_ceiling": (lambda: core.rank_ceiling(np.eye(2), 1.5), r"rank must hold integers"),
    "record_iterations": (lambda: core.record_iterations(10.5), r"n_iter must hold integers"),
    "regularization_path_joint": (
        lambda: core.regularization_path_joint(K, Y, K, np.array([[1.0]])),
        r"radii must have shape \(n_radii,\): got shape \(1, 1\)",
    ),
    "regularization_path_p": (lambda: core.regularization_path_p(K, GAMMA, np.array([])), r"radii is empty"),
    "risk": (lambda: core.risk(K, GAMMA[:, :2], P), r"gamma must have shape \(\.\.\., n, T\) with T = 3"),
    "selected_tokens": (lambda: core.selected_tokens(K[..., :1], P), r"p must have shape \(\.\.\., d\) with d = 1"),
    "solve_min_norm": (
        lambda: core.solve_min_norm(np.ones((2, 2)), np.ones(2), tol=1e-9, start=np.ones(3)),
        r"start must have shape \(d,\) with d = 2 \(as D\)",
    ),
    "solve_on_balls": (
        lambda: core.solve_on_balls(_grad, [np.ones((2, 2)), np.ones((3, 2))], [1.0, 1.0], n_iter=1, tol=1e-9),
        r"x0\[1\] must have shape \(S, d1\) with S = 2 \(as x0\[0\]\)",
    ),
    "span_basis": (lambda: core.span_basis(np.ones((2, 2)), rtol=np.nan), r"rtol holds 1 NaN"),
    "span_coordinates": (
        lambda: core.span_coordinates(K[None], GAMMA[None], np.zeros((2, 2))),
        r"p0 must have shape \(B, d\) with B = 1 \(as K\), d = 2",
    ),
    "span_cosine": (lambda: core.span_cosine(np.eye(2), Z, XW), r"w must have shape \(C \+ 1, C\) with C = 2 \(as z\)"),
    "sparsity_effect": (
        lambda: core.sparsity_effect([0.8, 0.6], [1.0], GUARD_S),
        r"w_frobenius must have shape \(epochs,\) with epochs = 2 \(as sparsity\)",
    ),
    "svm_neighbors": (
        lambda: core.svm_neighbors(K, np.array([0]), np.ones(3)),
        r"p_mm must have shape \(d,\) with d = 2 \(as K\)",
    ),
    "token_scores": (lambda: core.token_scores(K, Y, np.ones(3)), r"v must have shape \(\.\.\., d\) with d = 2"),
    "v_svm": (lambda: core.v_svm(np.ones((2, 2)), np.ones(3)), r"Y must have shape \(n,\) with n = 2 \(as R\)"),
    "v_svm_qp": (lambda: core.v_svm_qp(np.ones((2, 2)), np.array([1.0, np.nan])), r"Y holds 1 NaN"),
    "margin_slack": (
        lambda: core.margin_slack(np.ones(2), np.ones((1, 3)), np.ones((2, 3, 2)), np.ones((1, 3), bool), 1e-9),
        r"d must have shape \(n, T, C\) with n = 1 \(as a\): got shape \(2, 3, 2\)",
    ),
    "w_att_svm": (
        lambda: core.w_att_svm(Z, XW, np.array([5])),
        r"selected must hold indices in \[0, T\) with T = 2 \(as x\)",
    ),
    "w_att_svm_nuclear": (
        lambda: core.w_att_svm_nuclear(Z, XW[..., :1], np.array([1])),
        r"x must have shape \(n, T, C\) with C = 2 \(as z\)",
    ),
    "w_direction": (
        lambda: core.w_direction([0, 1], [1.0], GUARD_W),
        r"cosine_final must have shape \(epochs,\) with epochs = 2 \(as epochs\)",
    ),
    "w_logits": (lambda: core.w_logits(np.eye(2), Z, XW), r"w must have shape \(C \+ 1, C\) with C = 2 \(as z\)"),
    "w_margins": (
        lambda: core.w_margins(np.ones((3, 2)), Z, XW, np.array([0, 1])),
        r"selected must have shape \(n,\) with T = 2 \(as x\), n = 1 \(as z\): got shape \(2,\)",
    ),
}  # fmt: skip
PUBLIC_FUNCTIONS = sorted(name for name in core.__all__ if inspect.isfunction(getattr(core, name)))


def test_every_public_function_of_core_has_its_case_here():
    assert set(CASES) == set(PUBLIC_FUNCTIONS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_wrong_argument_is_refused_on_entry_by_name_and_shape(name):
    call, message = CASES[name]
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda r: core.project_ball(np.array([[3.0, 4.0]]), r), "radius"),
        (lambda r: core.ball_kkt_residual(np.array([[3.0, 4.0]]), Gradient(np.ones((1, 2)), np.zeros(1)), r), "radius"),
        (lambda r: core.solve_on_balls(_grad, [np.zeros((1, 2))], [r], n_iter=1, tol=1e-9), "radii"),
    ],
    ids=["project_ball", "ball_kkt_residual", "solve_on_balls"],
)
def test_a_negative_or_nan_radius_is_refused_by_name(call, message):
    """No point lies in a ball of negative radius: project_ball(x, -1) returned -x / ||x||, outside it."""
    with pytest.raises(ValueError, match=rf"^{message} must be a ball's radius, >= 0: got -1.0 \(1 of 1 value"):
        call(-1.0)
    with pytest.raises(ValueError, match=rf"^{message} (must be a ball's radius, >= 0: got nan|holds 1 NaN)"):
        call(np.nan)
    np.testing.assert_allclose(core.project_ball(np.array([[3.0, 4.0]]), 0.0), [[0.0, 0.0]])  # a point, the ball
    np.testing.assert_array_equal(core.project_ball(np.array([[3.0, 4.0]]), np.inf), [[3.0, 4.0]])  # no constraint


def test_the_same_calls_with_right_arguments_give_the_right_numbers():
    """The check converts and passes through: the functions' answers on checked arguments are unchanged."""
    np.testing.assert_allclose(core.attention(K, np.array([2.0, 0.0])), [[0.86681333, 0.11731043, 0.01587624]])
    np.testing.assert_allclose(core.att_svm(K, [0]).solution, [2 / 3, -1 / 3], atol=1e-9)  # a list is an array
    assert core.record_iterations(np.int64(3)).tolist() == [0, 1, 2, 3]  # a numpy integer is an int
    assert core.cosine(np.ones((4, 2)), np.array([1.0, 0.0])).shape == (4,)  # batch axes broadcast


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"a": (np.ones((2, 3)), "(..., d)"), "b": (np.ones((3, 3)), "(..., d)")}, r"batch\) axes .* a \(2,\), b"),
        ({"x": ("abc", "(n,)")}, r"x must hold numbers, shape \(n,\)"),
        ({"c": (np.zeros((0, 2)), "(c, k)?")}, None),  # may be empty
        ({"r": (np.array([np.inf]), "float (n,)")}, None),  # NaN and infinity allowed
    ],
)
def test_check_arrays_kinds_batches_and_empty_shapes(arguments, message):
    if message is None:
        assert len(core.check_arrays(**arguments)) == 1
    else:
        with pytest.raises(ValueError, match=message):
            core.check_arrays(**arguments)
