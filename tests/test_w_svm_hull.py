"""The cut-off below which the W-ATT-SVM counts no W as meeting every margin (maxmargin.core.w_svm_hard.HULL_TOL,
issue 61 item 8): each feature a_i d_it^T weighed by its own norm, so that inputs of mixed scales keep a feasible
instance feasible, and never ``hard`` False from a W that meets every margin. Every optimum below is exact."""

from __future__ import annotations

import numpy as np
import pytest

import maxmargin.core.w_svm_hard as w_svm_hard
from maxmargin.core.w_svm import W_SVM_TOL, w_att_svm, w_margins

EPS = np.finfo(float).eps


def _mixed_scales(small: float, large: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two inputs of width 1, the first token selected. Input 0: z = 0, tokens small and 0 (feature (0, small));
    input 1: z = large, tokens large and 0 (feature (large^2, large)). The first margin needs W's bias entry at
    1 / small; the second is then met by far, so W_mm = (0, 1 / small) exactly. Its features' root-mean-square norm
    is about large^2 / sqrt(2), so a cut-off on that scale (1 / (HULL_TOL large^2 / sqrt(2)) = 88 for large 40)
    fell below ||W_mm|| = 153 and called the instance infeasible."""
    z = np.array([[0.0], [large]])
    x = np.array([[[small], [0.0]], [[large], [0.0]]])
    return z, x, np.array([0, 0])


def _near_midpoint(eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One input of width 2, z = 0 (only W's bias row acts), the selected token 0 and the others (1, 0) and
    (-1, eps): the margins need w_1 <= -1 and w_1 - eps w_2 >= 1, so W_mm's bias row is (-1, -2 / eps), of norm
    sqrt(1 + 4 / eps^2), and its support's features have norms 1 and sqrt(1 + eps^2): the hull ratio at the optimum
    is 1 / (||W_mm|| mean ||f_k||), about eps / 2."""
    return np.zeros((1, 2)), np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, eps]]]), np.array([0])


@pytest.mark.parametrize("soft", [True, False])
def test_inputs_of_mixed_scales_keep_a_feasible_instance_feasible(soft):
    """W_mm = (0, 153) on features of norms 0.0065 and 1,600: hard, at the exact optimum to the rounding of one
    division (was: hard False with the soft-margin W of norm 65 and half the margins met, or without the soft solve
    hard False beside met = 1.0)."""
    z, x, selected = _mixed_scales(1.0 / 153.0, 40.0)
    res = w_att_svm(z, x, selected, soft=soft)
    assert res.hard and res.met == 1.0
    np.testing.assert_allclose(res.solution, [[0.0], [153.0]], rtol=0, atol=4 * EPS * 153.0)
    assert w_margins(res.solution, z, x, selected).min() >= 1.0 - W_SVM_TOL


def test_an_optimum_far_from_the_cut_off_is_hard_and_one_beyond_it_counts_as_none():
    """The selected token near the midpoint of two others: at eps = 1e-3 the hull ratio at the optimum is about
    5e-4, above HULL_TOL = 1e-5: hard, W_mm = (-1, -2000) in the bias row. At eps = 1e-7 it is about 5e-8, below:
    the instance counts as having no W that meets every margin (docs/api.md, WSVMResult), and the soft solution
    that is returned does not meet them all."""
    assert w_svm_hard.HULL_TOL == 1e-5
    z, x, selected = _near_midpoint(1e-3)
    res = w_att_svm(z, x, selected)
    assert res.hard and res.met == 1.0
    np.testing.assert_allclose(res.solution[-1], [-1.0, -2000.0], rtol=1e-9)
    np.testing.assert_allclose(res.solution[:-1], 0.0, atol=1e-9)
    z, x, selected = _near_midpoint(1e-7)
    for soft in (True, False):
        beyond = w_att_svm(z, x, selected, soft=soft)
        assert not beyond.hard and beyond.met < 1.0


def test_a_w_that_meets_every_margin_is_never_reported_soft(monkeypatch):
    """A cut-off that stops the hard planes after their second round (HULL_TOL 0.99, above the hull ratio 0.35 of
    their two features), one margin still unmet: the soft-margin W (its box above every multiplier) then meets every
    margin, which shows that some W does, so the hard problem is solved again without the cut-off and reported hard,
    at cvxopt's primal optimum (was: hard False beside met = 1.0)."""
    from test_w_svm import _primal_qp

    differences = np.array([[-0.7, -1.4], [-0.2, 1.2], [-1.1, -1.8]])  # d_t = x_0 - x_t, only the bias row acts
    z, x, selected = np.zeros((1, 2)), np.concatenate([np.zeros((1, 1, 2)), -differences[None]], axis=1), [0]
    monkeypatch.setattr(w_svm_hard, "HULL_TOL", 0.99)
    res = w_att_svm(z, x, np.array(selected), per_input=1, soft_c=1e9)
    assert res.hard and res.met == 1.0
    optimum = _primal_qp(z, x, np.array(selected))  # ||W_mm|| = 2.364
    np.testing.assert_allclose(res.solution, optimum, rtol=0, atol=1e-6 * np.linalg.norm(optimum))
