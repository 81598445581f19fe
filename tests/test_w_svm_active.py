"""The dual active-set method of the hard-margin W-ATT-SVM (maxmargin.core.w_svm_active) against exact answers, an
independent primal QP and the duality gap of its own multipliers: warm starts, dependent features, dropped
constraints and the rank-deficient working sets on which block principal pivoting handed every round to cvxopt."""

from __future__ import annotations

import numpy as np
import pytest
from test_w_svm import _primal_qp

import maxmargin.core.w_svm_active as active
import maxmargin.core.w_svm_dual as dual
import maxmargin.core.w_svm_factor as w_svm_factor
from maxmargin.core.w_svm import query_inputs, w_att_svm, w_logits, w_margins
from maxmargin.core.w_svm_hard import margin_slack

EPS = np.finfo(float).eps


def _layer_normed(seed: int, n: int, t: int, c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tokens centred and scaled per token (as the block's norm leaves them), [CLS] first as the query, and the
    selection of a random W: with (C + 1) C = 42 < n margins, every working set past 42 constraints is singular."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, t, c))
    x = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)
    return x[:, 0], x, w_logits(rng.standard_normal((c + 1, c)), x[:, 0], x).argmax(axis=1)


def _features(z: np.ndarray, x: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """vec(a_i d_it^T) of every constraint t != o_i, one row each."""
    a = query_inputs(z)
    d = x[np.arange(len(x)), selected][:, None] - x
    keep = np.arange(x.shape[1])[None] != selected[:, None]
    return np.einsum("ia,itc->itac", a, d)[keep].reshape(int(keep.sum()), -1)


def _gap_distance(f: np.ndarray, alpha: np.ndarray) -> float:
    """A bound on ||W / min margin - W_mm||_F from the multipliers alone, W = sum_k alpha_k f_k: W / min margin
    meets every margin, 1^T alpha - 1/2 ||W||^2 <= 1/2 ||W_mm||^2 (weak duality), and 1/2 ||W||^2 is 1-strongly
    convex, so the distance is at most sqrt(2 (1/2 ||W / min margin||^2 - (1^T alpha - 1/2 ||W||^2)))."""
    w = alpha @ f
    primal = 0.5 * float(w @ w) / float((f @ w).min()) ** 2
    return float(np.sqrt(max(2.0 * (primal - (alpha.sum() - 0.5 * float(w @ w))), 0.0)))


def test_a_rank_deficient_instance_is_solved_exactly_without_the_qp(monkeypatch):
    """200 inputs of 8 tokens of width 6: 1,400 margins in a space of 42. Block principal pivoting failed on every
    round of it (a singular free set) and cvxopt's hull QP solved each, four of them only at 1000x looser
    tolerances (status 'looser'); the active set never holds more than 42 independent features. Its W meets every
    margin at the library's slack, agrees with cvxopt's primal QP, and the method's multipliers on the whole set
    certify it by their own duality gap: margins met at 1 - delta (the method's violation tolerance) put
    W / min margin within about sqrt(2 delta) ||W|| of the optimum."""
    z, x, selected = _layer_normed(3, 200, 8, 6)

    def no_qp(g):
        raise AssertionError("the hull QP was called")

    monkeypatch.setattr(dual, "_min_norm_dual", no_qp)
    res = w_att_svm(z, x, selected)
    assert res.hard and res.status == "optimal" and res.met == 1.0
    primal = _primal_qp(z, x, selected)
    norm = np.linalg.norm(primal)
    assert np.linalg.norm(res.solution - primal) <= 1e-6 * norm  # cvxopt's primal at its 1e-12 tolerances
    f = _features(z, x, selected)
    alpha = np.linalg.lstsq(f.T, res.solution.ravel(), rcond=None)[0]  # any multipliers of W: the solver's own
    a, d = query_inputs(z), x[np.arange(len(x)), selected][:, None] - x
    other = np.arange(8)[None] != selected[:, None]
    assert w_margins(res.solution, z, x, selected).min() >= 1.0 - margin_slack(np.abs(alpha), a, d, other, 1e-9)
    g = f @ f.T
    lam, ray = active.dual_active_set(g, np.zeros(len(g)))  # the method on the whole set at once
    assert ray is None and int(np.sum(lam > 0)) <= 42
    delta = max(1e-12, active.ROUNDING * lam.sum() * g.diagonal().max())
    assert _gap_distance(f, lam) <= np.sqrt(4.0 * delta) * norm
    assert np.linalg.norm((lam @ f).reshape(primal.shape) - res.solution) <= 1e-6 * norm


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_warm_start_gives_the_cold_solution(seed):
    """The multipliers of a subset of the constraints, placed among all of them, start the method on all: it ends
    on the support it reaches from W = 0, where both solve G_SS alpha = 1, so their W agree to the rounding of
    that system (eps cond(G_SS) ||W||)."""
    z, x, selected = _layer_normed(seed, 60, 6, 5)
    f = _features(z, x, selected)
    g = f @ f.T
    cold, _ = active.dual_active_set(g, np.zeros(len(g)))
    part = np.random.default_rng(seed).random(len(g)) < 0.5
    sub, _ = active.dual_active_set(g[np.ix_(part, part)], np.zeros(int(part.sum())))
    start = np.zeros(len(g))
    start[part] = sub
    warm, ray = active.dual_active_set(g, start)
    assert ray is None and np.any(sub > 0)
    support = cold > 0
    assert np.array_equal(warm > 0, support)
    norm = float(np.sqrt(cold.sum()))  # ||W_mm||^2 = 1^T alpha at the optimum
    rounding = 10 * EPS * np.linalg.cond(g[np.ix_(support, support)]) * norm  # about 1e-11 ||W|| here
    assert np.linalg.norm(warm @ f - cold @ f) <= rounding


def test_a_dependent_feature_with_a_multiplier_to_fall_takes_its_place():
    """f_2 = f_1 / 2 with f_1 active (multiplier 1): f_2's step cannot move W (||z|| = 0), so f_1's multiplier falls
    to 0 and leaves, and f_2 alone meets both margins: alpha = (0, 4 / ||f_1||^2), the exact optimum (W must have
    <W, f_1> >= 2)."""
    f = np.array([[3.0, 4.0], [1.5, 2.0]])
    lam, ray = active.dual_active_set(f @ f.T, np.array([1.0 / 25.0, 0.0]))
    assert ray is None
    np.testing.assert_allclose(lam, [0.0, 4.0 / 25.0], rtol=0, atol=10 * EPS)


def test_a_dependent_feature_with_none_to_fall_is_a_ray_and_no_w_meets_the_margins():
    """The selected token halfway between two others: d_1 = -d_2, so f_1 + f_2 = 0 and no W meets both margins.
    The method returns the dual's ray (1, 1) (G ray = 0), and the solver reports the instance soft."""
    z, x, selected = np.array([[0.5]]), np.array([[[0.0], [1.0], [-1.0]]]), np.array([0])
    f = _features(z, x, selected)
    lam, ray = active.dual_active_set(f @ f.T, np.zeros(2))
    assert ray is not None and np.all(ray >= 0) and ray.sum() > 0
    np.testing.assert_allclose(ray @ f, 0.0, atol=10 * EPS * np.abs(f).max())
    res = w_att_svm(z, x, selected, soft=False)
    assert not res.hard


@pytest.mark.parametrize("refactor", [256, 0])  # the trailing block factorised again, or a QR row insertion
@pytest.mark.parametrize("k", [0, 7, 19])
def test_dropping_a_constraint_leaves_the_factor_of_the_others(refactor, k, monkeypatch):
    """The factor without constraint k is the Cholesky factor of G without row and column k, to the rounding of
    a factorisation (a few eps ||G|| per entry), by either update; the buffer stays [[R, 0], [0, I]]."""
    monkeypatch.setattr(w_svm_factor, "REFACTOR", refactor)
    rng = np.random.default_rng(k)
    f = rng.standard_normal((20, 30))
    g = f @ f.T
    factor = w_svm_factor.CholeskyFactor(np.linalg.cholesky(g).T)
    factor.delete(k)
    keep = np.delete(np.arange(20), k)
    r = factor.r
    assert np.allclose(np.tril(r, -1), 0.0) and np.all(np.diag(r) > 0)
    assert np.abs(r.T @ r - g[np.ix_(keep, keep)]).max() <= 20 * 20 * EPS * np.abs(g).max()
    rest = factor.buffer.copy()
    rest[:19, :19] = np.eye(19)
    assert np.array_equal(rest, np.eye(len(rest)))


def test_the_method_gives_up_past_its_steps(monkeypatch):
    """No steps allowed: None, and the caller's fallback (the nearest hull point) solves the working set."""
    monkeypatch.setattr(active, "STEPS_PER_CONSTRAINT", 0)
    assert active.dual_active_set(np.eye(3), np.zeros(3)) is None


def test_the_kernel_read_a_row_at_a_time_is_the_whole_one():
    """The rows the method reads, and its margins from them, are those of the kernel computed whole, to the
    rounding of one dot product (a few eps |a_k||a_l||d_k||d_l|), in any order of reading; and the method solves
    the same working set from either to the same multipliers."""
    rng = np.random.default_rng(5)
    a, d = rng.standard_normal((40, 4)), rng.standard_normal((40, 3))
    kernel, whole = active.FeatureKernel(a, d), (a @ a.T) * (d @ d.T)
    scale = np.outer(*(2 * [np.linalg.norm(a, axis=1) * np.linalg.norm(d, axis=1)]))
    for j in (7, 3, 7, 39, 0):
        assert np.all(np.abs(kernel.row(j) - whole[j]) <= 4 * EPS * scale[j])
    weights = rng.random(5)
    combined = kernel.combine([39, 2, 7, 11, 0], weights)
    np.testing.assert_allclose(combined, weights @ whole[[39, 2, 7, 11, 0]], rtol=0, atol=40 * EPS * scale.max())
    np.testing.assert_allclose(kernel.diag, np.diag(whole), rtol=4 * EPS)
    z, x, selected = _layer_normed(2, 30, 5, 4)
    f = _features(z, x, selected)
    a_k, d_k = np.repeat(query_inputs(z), 4, axis=0), (x[np.arange(30), selected][:, None] - x)
    keep = np.arange(5)[None] != selected[:, None]
    lazy, _ = active.dual_active_set(active.FeatureKernel(a_k, d_k[keep]), np.zeros(len(f)))
    dense, _ = active.dual_active_set(f @ f.T, np.zeros(len(f)))
    assert np.array_equal(lazy > 0, dense > 0)
    np.testing.assert_allclose(lazy @ f, dense @ f, rtol=0, atol=1e-9 * np.sqrt(dense.sum()))


def test_a_solve_carried_from_round_to_round_gives_the_fresh_one(monkeypatch):
    """The cutting planes' rounds carried over (the active set, its factor and kernel rows) end where rounds that
    start afresh from the previous multipliers end: the same rounds and support, W to the rounding of the final
    support's system (eps cond(G_SS) ||W||); and the carry was taken in every round after the first."""
    z, x, selected = _layer_normed(1, 200, 8, 6)
    taken = []
    real = active.CarriedDual._carried

    def counted(self, *args):
        out = real(self, *args)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(active.CarriedDual, "_carried", counted)
    carried = w_att_svm(z, x, selected)
    assert taken[0] is False and all(taken[1:]) and len(taken) == carried.rounds
    monkeypatch.setattr(active.CarriedDual, "_carried", lambda self, *args: None)
    fresh = w_att_svm(z, x, selected)
    assert (carried.rounds, carried.support) == (fresh.rounds, fresh.support)
    f = _features(z, x, selected)
    lam, _ = active.dual_active_set(f @ f.T, np.zeros(len(f)))
    support = lam > 0
    norm = np.linalg.norm(fresh.solution)
    bound = 10 * EPS * np.linalg.cond((f @ f.T)[np.ix_(support, support)]) * norm
    assert np.linalg.norm(carried.solution - fresh.solution) <= bound
