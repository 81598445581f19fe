"""The W-ATT-SVM solvers' edges (maxmargin.core.w_svm, issue 56): every cvxopt status but optimal is a failure,
feasibility is decided by the hard problem for both norms, and the hard margin is accepted at the precision its
multipliers allow. Each instance below gave a wrong answer as a right one before: the (5, 3, 1) ones are checked
against the exact minimum-norm point of a polygon in the plane (W of one column: its nuclear norm is its 2-norm)."""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

from maxmargin.core.w_svm import W_SVM_TOL, query_inputs, w_att_svm, w_logits, w_margins
from maxmargin.core.w_svm_dual import _QP_OPTIONS
from maxmargin.core.w_svm_hard import margin_slack
from maxmargin.core.w_svm_nuclear import w_att_svm_nuclear

# The nuclear-norm solve's default tolerance: its margins met at 1 - tol, its SDP's relative duality gap at most tol.
NUCLEAR_TOL = inspect.signature(w_att_svm_nuclear).parameters["tol"].default


def _nuclear(w: np.ndarray) -> float:
    return float(np.linalg.svd(w, compute_uv=False).sum())


def _plane_optimum(z: np.ndarray, x: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """min ||w|| s.t. <f_k, w> >= 1 for W of shape 2 x 1 (one token dimension, the query-bias row): the optimum is
    a vertex of the feasible polygon or the foot of one constraint's line, so the feasible candidate of least norm
    among those is it."""
    a = np.concatenate([z, np.ones((len(z), 1))], axis=1)
    f = np.array([a[i] * (x[i, selected[i], 0] - x[i, t, 0]) for i in range(len(z)) for t in range(x.shape[1])
                  if t != selected[i]])  # fmt: skip
    feet = [g / (g @ g) for g in f]
    corners = [np.linalg.solve(np.array([g, h]), np.ones(2)) for g, h in itertools.combinations(f, 2)
               if abs(np.linalg.det(np.array([g, h]))) > 1e-12 * np.linalg.norm(g) * np.linalg.norm(h)]  # fmt: skip
    feasible = [w for w in feet + corners if np.all(f @ w >= 1.0 - 1e-9)]
    return min(feasible, key=np.linalg.norm)[:, None]


# (n, T, d) = (5, 3, 1) with duplicate tokens: input 2 repeats input 0, tokens recur across inputs. cvxopt's SDP
# returned 'unknown' here with W of nuclear norm 385,746 against the optimum 91.50, reported hard.
DUPLICATES = (
    np.array([0.48434355038878885, 0.17386207858761202, 0.48434355038878885, 0.1876525655694559,
              -0.21696440795936844])[:, None],
    np.array([[-1.4526909058529482, -0.14388055021708354, -0.6309298526782243],
              [-0.03144542538432706, 0.3760191746430947, 0.47586675652783034],
              [-1.4526909058529482, -0.14388055021708354, -0.6309298526782243],
              [-0.14388055021708354, 1.4402137318901274, -0.1331396189353887],
              [0.47558819676993974, -0.23809594808501036, -0.14388055021708354]])[..., None],
    np.array([0, 0, 0, 0, 1]),
)  # fmt: skip
# (5, 3, 1) whose hard-margin working set is singular with its margins outside the kernel's range: pivoting's
# least squares missed them (0.5 of the margins met, reported soft) where W of norm 749.94 meets every one.
SINGULAR = (
    np.array([-1.1557815920097698, 0.4356627571512566, -0.10915500931726323, 1.8992451734478217,
              0.19905225416011207])[:, None],
    np.array([[-0.010546600251861117, 0.004484574190915317, 0.0020642127970207304],
              [-0.007507847945868216, 0.007863516151154494, -0.010546600251861117],
              [-0.010038899061021535, 0.00914091387063738, -0.01602450506479665],
              [-0.0029070105021084093, 0.009020344964309137, -0.006711386599483183],
              [0.002864198233453152, -0.010038899061021535, -0.004446587738504327]])[..., None],
    np.array([1, 2, 1, 2, 1]),
)  # fmt: skip
# (5, 3, 1) with 0 in the features' hull, features of norm 0.001-0.03: no W meets every margin (the nearest hull
# point's QP must tell rho^2 from 0 at 1e-10 of their squared norm, below its absolute tolerance unscaled).
HULL = (
    np.array([0.578613313635481, -0.9010914889367436, -0.8749582615457829, -0.6203487428530656,
              0.16045522836209405])[:, None],
    np.array([[-0.001196546692393088, 0.00353888268836332, -0.0005840711547430949],
              [-0.0016194358565279985, -0.005502360209633159, 0.005091284995653631],
              [-0.009692043927084306, 0.006834348151214194, -0.01306990401737957],
              [-0.006889181159053066, -0.00459768202710512, 0.005725969591590929],
              [0.005082734293066355, -0.006638890653767512, -0.001196546692393088]])[..., None],
    np.array([0, 2, 1, 2, 2]),
)  # fmt: skip


def _rank_deficient() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, T, d) = (12, 6, 3): the tokens on one line through 0 (rank 1), the selection of a random W. cvxopt's SDP
    returned 'unknown' here, and the nuclear solver reported it soft (93% of the margins met, at 0.87 x the norm)."""
    rng = np.random.default_rng(429)
    rank = rng.integers(1, 3)  # 1: the draws of the search that found it, in its order
    line = rng.standard_normal((rank, 3))
    rng.random()
    z = rng.standard_normal((12, 3))
    x = (rng.standard_normal((12, 6, rank)) @ line) * rng.choice([1, 0.1, 0.01])
    return z, x, w_logits(rng.standard_normal((4, 3)), z, x).argmax(axis=1)


def _distance_bound(norm: float, slack: float, excess: float) -> float:
    """The largest ||W - W_mm||_F of a W that meets every margin at 1 - ``slack`` with ||W||_F <= (1 + ``excess``)
    ||W_mm||_F, ``norm`` = ||W_mm||_F: V = W / (1 - slack) meets them, and W_mm, the projection of 0 onto their
    convex set, has ||V - W_mm||^2 <= ||V||^2 - ||W_mm||^2, so an excess g of the norm leaves W at about
    sqrt(2 g) ||W_mm|| of W_mm (the norm is flat in the direction near the optimum)."""
    k = (1.0 + excess) / (1.0 - slack)
    return (slack * k + np.sqrt(k**2 - 1.0)) * norm


def _rotated(w: np.ndarray, distance: float) -> np.ndarray:
    """W of one column turned in its plane, its norm kept, to ``distance`` of itself."""
    angle = 2.0 * np.arcsin(distance / (2.0 * np.linalg.norm(w)))
    return np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]) @ w


def test_the_nuclear_norm_of_duplicate_tokens_is_the_optimum_not_an_unknown_status():
    """W of one column: ||W||_* = ||W||_F, so the nuclear optimum is the Frobenius one; the SDP's W, its margins
    met at 1 - tol and its norm within its relative gap tol (the library's acceptance), is within
    :func:`_distance_bound` of it (measured: 8.8e-4, from a gap of 4.6e-11; the bound 0.18)."""
    res = w_att_svm_nuclear(*DUPLICATES)
    optimum = _plane_optimum(*DUPLICATES)
    assert res.hard and res.met == 1.0 and res.status in ("optimal", "looser", "repaired")
    tol = NUCLEAR_TOL
    bound = _distance_bound(float(np.linalg.norm(optimum)), tol, tol)

    def check(w: np.ndarray) -> None:
        assert _nuclear(w) == pytest.approx(np.linalg.norm(optimum), rel=tol)  # 91.5046
        assert np.linalg.norm(w - optimum) <= bound

    check(res.solution)
    for planted in (res.solution * (1.0 + 10 * tol), _rotated(res.solution, 10 * bound)):
        with pytest.raises(AssertionError):
            check(planted)


def test_a_rank_deficient_feasible_instance_is_hard_for_the_nuclear_norm():
    """Differences on one line b: the margins see W only through W b, and the least ||W||_* and ||W||_F with a
    given W b are both ||W b|| / ||b||, so the two problems share their optimum (a rank-1 W)."""
    z, x, selected = _rank_deficient()
    frobenius, nuclear = w_att_svm(z, x, selected), w_att_svm_nuclear(z, x, selected)
    assert frobenius.hard and nuclear.hard and nuclear.met == 1.0
    assert _nuclear(nuclear.solution) == pytest.approx(np.linalg.norm(frobenius.solution), rel=1e-6)  # 72.2348
    assert w_margins(nuclear.solution, z, x, selected).min() >= 1.0 - NUCLEAR_TOL  # the margins it checks


@pytest.mark.parametrize("norm", [9_900.0, 10_100.0])
def test_one_constraint_is_hard_on_either_side_of_soft_c(norm):
    """One margin, ||W_mm||_* = ``norm``: its multiplier is ``norm``, beyond the default soft_c = 1e4 for 10,100
    (it was then reported soft, with W of norm 3e-6). Feasibility is the hard problem's, whatever soft_c."""
    z, x, selected = np.zeros((1, 1)), np.array([[[0.0], [1.0 / norm]]]), np.array([1])
    res = w_att_svm_nuclear(z, x, selected)
    assert res.hard and res.met == 1.0
    np.testing.assert_allclose(res.solution, [[0.0], [norm]], rtol=1e-9)


def test_a_near_degenerate_hard_margin_is_accepted_at_the_precision_of_its_multipliers():
    """Tokens (0, 0), (2, 0), (1, 1e-4), the last selected, query [0, 0, 1]: W_mm = 1e4 e_3 e_2^T, of norm 1e4
    (below the hull cut-off 1e5), from the differences (1, 1e-4) and (-1, 1e-4) with multipliers 5e7 each (their
    sum (0, 2e-4) times 5e7 is W_mm's row). Their Gram matrix has condition 1e8, so the margins the planes reach
    carry rounding of eps cond: 1 - 3.9e-9 with one BLAS kernel set, 1 - 1.1e-8 with others, both short of the
    tolerance 1e-9 (it was reported soft, W of norm 2). The library accepts them at the slack of these multipliers
    (margin_slack); the test asks that slack, and W within eps cond(G) ||W_mm|| per multiplier of the exact answer."""
    z, x, selected = np.zeros((1, 2)), np.array([[[0.0, 0.0], [2.0, 0.0], [1.0, 1e-4]]]), np.array([2])
    exact, alpha = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 1e4]]), np.array([5e7, 5e7])
    a, d = query_inputs(z), x[:, selected[0]][:, None] - x
    other = np.arange(3)[None] != selected[:, None]
    slack = margin_slack(alpha, a, d, other, W_SVM_TOL)  # 1e-6: SOLVE_RTOL 1e8, capped
    gram = np.sum(a**2) * d[other] @ d[other].T
    rounding = len(alpha) * np.finfo(float).eps * np.linalg.cond(gram) * np.linalg.norm(exact)  # 4.4e-4

    def check(w: np.ndarray) -> None:
        assert abs(w_margins(w, z, x, selected).min() - 1.0) <= slack
        assert np.linalg.norm(w - exact) <= rounding

    res = w_att_svm(z, x, selected)
    assert res.hard and res.met == 1.0 and res.status == "optimal"
    check(res.solution)
    for planted in (res.solution * (1.0 - 10 * slack), res.solution + 10 * rounding * np.eye(3, 2)):
        with pytest.raises(AssertionError):
            check(planted)


def test_a_singular_working_set_does_not_make_a_feasible_instance_soft():
    res = w_att_svm(*SINGULAR)
    assert res.hard and res.met == 1.0
    np.testing.assert_allclose(res.solution, _plane_optimum(*SINGULAR), rtol=1e-6)  # norm 749.94


def test_zero_in_the_hull_of_small_features_stays_infeasible():
    frobenius = w_att_svm(*HULL)
    nuclear = w_att_svm_nuclear(*HULL)
    assert not frobenius.hard and frobenius.met < 1.0
    assert not nuclear.hard and nuclear.met < 1.0


def _unknown_sdp(monkeypatch: pytest.MonkeyPatch, change) -> None:
    """cvxopt's SDP returning status 'unknown' with its dual variable changed by ``change``."""
    from cvxopt import solvers

    real = solvers.sdp

    def sdp(*args, **kwargs):
        sol = dict(real(*args, **kwargs))
        sol["zs"] = [change(sol["zs"][0])]
        sol["status"] = "unknown"
        return sol

    monkeypatch.setattr(solvers, "sdp", sdp)


def test_an_unknown_sdp_status_at_the_wrong_scale_is_repaired_and_says_so(monkeypatch):
    """The direction right and the scale 1000 times too large, as cvxopt's 'unknown' answers came back: W divided
    by its smallest margin is certified by the duality gap, and the result's status says it was repaired."""
    exact = w_att_svm_nuclear(*DUPLICATES)
    _unknown_sdp(monkeypatch, lambda zs: 1000.0 * zs)
    res = w_att_svm_nuclear(*DUPLICATES)
    assert res.status == "repaired" and res.hard
    np.testing.assert_allclose(res.solution, exact.solution, rtol=1e-6)


def test_an_unknown_sdp_status_that_cannot_be_certified_is_an_error(monkeypatch):
    _unknown_sdp(monkeypatch, lambda zs: -zs)  # W = -W_mm: every margin negative, nothing to certify
    with pytest.raises(ArithmeticError, match=r"nuclear-norm dual on \d+ margins: status unknown.*looser"):
        w_att_svm_nuclear(*DUPLICATES)


def _copy_of_the_selected_token() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """No W meets every margin (a token equal to the selected one): the soft-margin QP runs."""
    rng = np.random.default_rng(3)
    z, x = rng.standard_normal((4, 2)), rng.standard_normal((4, 3, 2))
    x[0, 1] = x[0, 0]
    return z, x, np.array([0, 1, 2, 0])


def test_a_qp_not_optimal_at_its_tolerances_is_solved_again_looser(monkeypatch):
    from cvxopt import solvers

    exact = w_att_svm(*_copy_of_the_selected_token())
    real = solvers.qp

    def qp(*args, options, **kwargs):
        sol = dict(real(*args, options=options, **kwargs))
        if options["abstol"] == 1e-12:  # the first tolerances
            sol["status"] = "unknown"
        return sol

    monkeypatch.setattr(solvers, "qp", qp)
    res = w_att_svm(*_copy_of_the_selected_token())
    assert res.status == "looser" and not res.hard
    # The dual's objective f(alpha) = 1/2 ||W(alpha)||^2 - 1^T alpha exceeds its least value by at least
    # 1/2 ||W(alpha) - W*||^2 on the box, and by at most the duality gap cvxopt stops at: its abstol, or its reltol
    # times |f| <= soft_c n_constraints (f* <= f(0) = 0), at each solve's tolerances (measured: 7.8e-8, from
    # gaps of 1e-6; the bound 1.3e-2).
    f = inspect.signature(w_att_svm).parameters["soft_c"].default * res.n_constraints
    bound = sum(np.sqrt(2 * max(o["abstol"], o["reltol"] * f)) for o in (_QP_OPTIONS, _looser(_QP_OPTIONS)))

    def check(w: np.ndarray) -> None:
        assert np.linalg.norm(w - exact.solution) <= bound

    check(res.solution)
    with pytest.raises(AssertionError):
        check(res.solution + 10 * bound * np.ones_like(res.solution) / np.sqrt(res.solution.size))


def _looser(options: dict) -> dict:
    """cvxopt's options at the tolerances 1000 times looser that a solve not optimal at the first is given again."""
    return {k: v * 1e3 if k.endswith("tol") else v for k, v in options.items()}


def test_a_qp_never_optimal_is_an_error_naming_it(monkeypatch):
    from cvxopt import solvers

    real = solvers.qp
    monkeypatch.setattr(solvers, "qp", lambda *args, **kwargs: {**real(*args, **kwargs), "status": "unknown"})
    with pytest.raises(ArithmeticError, match=r"could not solve the soft-margin dual on \d+ margins: status unknown"):
        w_att_svm(*_copy_of_the_selected_token())


def _short_planes(monkeypatch: pytest.MonkeyPatch, factor: float) -> None:
    """The hard-margin planes' multipliers, and with them W = sum_k alpha_k a_k d_k^T, scaled by ``factor`` < 1:
    every margin falls short of 1 by 1 - factor, as an unpolished hull-point round leaves them on an ill-conditioned
    working set (a 2,048-margin ViT probe of the 400-epoch run gave 14 margins at 0.99987); the duality gap of the
    rescaled W is then (1 - factor)^2."""
    from maxmargin.core import w_svm

    exact = w_svm._hard_margin_planes

    def short(*args, **kwargs):
        p = exact(*args, **kwargs)
        return p._replace(w=p.w * factor, margins=p.margins * factor, alpha=p.alpha * factor, status="looser")

    # w_att_svm looks the name up in w_svm's namespace (imported there from its home, w_svm_hard): patched there
    monkeypatch.setattr(w_svm, "_hard_margin_planes", short)


def test_margins_just_short_of_one_are_repaired_when_the_duality_gap_certifies_them(monkeypatch):
    """W / its smallest margin meets every margin; it is the hard solution, status "repaired", where the relative
    gap to the multipliers' dual objective is at most REPAIR_GAP (then ||W - W_mm|| <= sqrt(2 gap) ||W||), and an
    ArithmeticError beyond."""
    from maxmargin.core.w_svm_hard import REPAIR_GAP

    rng = np.random.default_rng(3)
    z, x = rng.standard_normal((6, 3)), rng.standard_normal((6, 4, 3))
    selected = w_logits(rng.standard_normal((4, 3)), z, x).argmax(axis=1)
    exact = w_att_svm(z, x, selected)
    assert exact.hard and exact.status == "optimal"
    _short_planes(monkeypatch, 0.99)  # gap 1e-4
    res = w_att_svm(z, x, selected)
    assert res.hard and res.met == 1.0 and res.status == "repaired"
    assert w_margins(res.solution, z, x, selected).min() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(res.solution, exact.solution, rtol=1e-9, atol=1e-9)  # the scale alone was off
    _short_planes(monkeypatch, 0.95)  # gap 2.5e-3
    assert 0.05**2 > REPAIR_GAP
    with pytest.raises(ArithmeticError, match="margins below 1"):
        w_att_svm(z, x, selected)
