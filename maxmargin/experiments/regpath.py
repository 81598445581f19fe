"""Regularization paths of the attention model and the W <-> p correspondence of Lemma 1.

Paper: eq. (2), p(R) = argmin_{||p|| <= R} L(p) (Theorem 1: p(R)/R -> p_mm*/||p_mm*||), and
(v_r, p_R) = argmin_{||v|| <= r, ||p|| <= R} L(v, p) (Theorems 5 and 6: v_r/r -> v_mm/||v_mm||,
p_R/R -> p_mm/||p_mm|| or p_relax/||p_relax||, eq. (10)); Lemma 1 (GD on W and on p).

The constrained problems are nonconvex. Each radius is solved from several starts (the previous
radius's solution rescaled, the caller's candidate directions, random directions), each start by a
projected normalized-gradient method whose step adapts like Rprop, and the start with the lowest
risk is kept. Every solution is checked by the KKT conditions of the ball constraint(s):
grad + mu x = 0 with mu >= 0 and mu (||x|| - R) = 0.

Why only gradient *directions* are used: at large radii the softmax saturates and the risk of two
nearby points differs far below float64 resolution (e^{-R gap}), so a line search on the risk would
stall; :func:`maxmargin.core.model.grad_p` and :func:`maxmargin.core.model.grad_v` give the exact gradient
direction at any norm, and the step is halved whenever the projected gradient reverses (a bisection
along the sphere). Risks are compared in log space, as the excess over their infimum
(:func:`log_excess_risk`, :func:`log_joint_risk`): with a fixed head this keeps the order of two
candidates exact where the risk itself has rounded to the same float; in the joint problem the log
risk still separates candidates that select different tokens or heads (starts that end in the same
basin end at the same KKT point, which ``n_at_best`` reports).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.special import logsumexp

from maxmargin.core.gd import gradient_descent
from maxmargin.core.model import (
    Array,
    Gradient,
    LossName,
    check_loss,
    grad_p,
    grad_v,
    log_softmax,
    risk,
    token_scores,
)
from maxmargin.core.svm import att_svm, p_relax, v_svm
from maxmargin.experiments import instances as inst_mod
from maxmargin.experiments.synthetic import max_margin_directions, record_iterations

# ---------------------------------------------------------------------------------------------
# Objectives in log space
# ---------------------------------------------------------------------------------------------


def _log_excess_at(log_delta: Array, c: Array, loss: LossName) -> Array:
    """log(l(c - delta) - l(c)) for delta = exp(log_delta) >= 0, exact down to delta ~ 1e-300 and beyond.

    Paper: Assumption A (l strictly decreasing, so the excess is positive for delta > 0).
    """
    log_delta = np.asarray(log_delta, dtype=np.float64)
    tiny = log_delta < -600.0  # delta below ~1e-261: first order in delta is exact to float64
    with np.errstate(divide="ignore", under="ignore", over="ignore"):
        delta = np.exp(np.where(tiny, 0.0, log_delta))
        if loss == "logistic":
            log_sig = -np.logaddexp(0.0, c)  # log sigma(-c) = log(-l'(c))
            direct = np.log(np.log1p(np.expm1(delta) * np.exp(log_sig)))
            return np.where(tiny, log_delta + log_sig, direct)
        if loss == "exponential":
            return np.where(tiny, log_delta - c, np.log(np.expm1(delta)) - c)
        return log_delta


def log_excess_risk(K: Array, gamma: Array, p: Array, loss: LossName = "logistic") -> Array:
    """log(L(p) - L*) with L* = 1/n sum_i l(max_t gamma_it), the infimum of L over p.

    Paper: (ERM) with fixed v and eq. (2). L* is approached only as ||p|| -> infinity along a
    direction selecting optimal tokens (Definition 1); the excess is computed from
    delta_i = sum_t S(K_i p)_t (gamma_i,opt - gamma_it) >= 0 by a log-sum-exp over positive
    terms, so it stays exact when L(p) itself has rounded to L*.
    """
    check_loss(loss)
    logs = log_softmax(np.einsum("...ntd,...d->...nt", K, p))
    gamma = np.broadcast_to(gamma, logs.shape)
    c = gamma.max(axis=-1)
    gap = c[..., None] - gamma
    with np.errstate(divide="ignore"):
        log_delta = logsumexp(np.where(gap > 0, logs + np.log(np.where(gap > 0, gap, 1.0)), -np.inf), axis=-1)
    per_input = _log_excess_at(log_delta, c, loss)
    return logsumexp(per_input, axis=-1) - np.log(per_input.shape[-1])


def _log_loss(u: Array, loss: LossName) -> Array:
    """log l(u) for the logistic and exponential losses, finite for every finite u."""
    u = np.asarray(u, dtype=np.float64)
    if loss == "exponential":
        return -u
    with np.errstate(under="ignore"):
        big = u > 30.0
        safe = np.where(big, 0.0, u)
        return np.where(big, -u + np.log1p(-0.5 * np.exp(-np.abs(u))), np.log(np.logaddexp(0.0, -safe)))


def log_joint_risk(X: Array, Y: Array, K: Array, v: Array, p: Array, loss: LossName = "logistic") -> Array:
    """log L(v, p), computed in log space (the risk underflows once r * margin exceeds ~745).

    Paper: (ERM), Section 3; the infimum of L(v, p) is 0 on separable data, so this is the log excess.
    """
    check_loss(loss)
    if loss == "correlation":
        raise ValueError("the joint risk is not positive for the correlation loss; use logistic or exponential")
    s = np.exp(log_softmax(np.einsum("...ntd,...d->...nt", K, p)))
    u = (s * token_scores(X, Y, v)).sum(axis=-1)
    per_input = _log_loss(u, loss)
    return logsumexp(per_input, axis=-1) - np.log(per_input.shape[-1])


# ---------------------------------------------------------------------------------------------
# Projected normalized gradient on products of balls
# ---------------------------------------------------------------------------------------------


def project_ball(x: Array, radius: float | Array) -> Array:
    """Euclidean projection onto the ball ||x|| <= radius (last axis)."""
    x = np.asarray(x, dtype=np.float64)
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    radius = np.asarray(radius, dtype=np.float64)[..., None] if np.ndim(radius) else radius
    return np.where(norm > radius, x * (radius / np.where(norm > 0, norm, 1.0)), x)


def ball_kkt_residual(x: Array, gradient: Gradient, radius: float, *, rtol: float = 1e-12) -> tuple[Array, Array]:
    """KKT residual of min_{||x|| <= radius} L at x, and whether the constraint is active.

    KKT: grad L(x) + mu x = 0, mu >= 0, mu (||x|| - radius) = 0. On the sphere the residual is
    relative, ||g_perp|| / ||g|| + max(0, <g, x> / (||g|| ||x||)) (the component of the gradient
    orthogonal to x, plus a wrong-signed multiplier); inside the ball it is radius * ||g||, which is
    scale-free when ``gradient`` is the gradient of log(L - inf L) (what the path solvers pass):
    the relative change of the excess risk across the ball. A gradient exactly zero gives 0.
    """
    gdir, zero = gradient.direction()
    norm = np.linalg.norm(x, axis=-1)
    on = norm >= radius * (1.0 - rtol)
    xhat = x / np.where(norm > 0, norm, 1.0)[..., None]
    radial = (gdir * xhat).sum(-1)
    tangential = np.linalg.norm(gdir - radial[..., None] * xhat, axis=-1)
    with np.errstate(under="ignore", over="ignore"):
        gnorm = np.linalg.norm(gradient.scaled, axis=-1) * np.exp(np.where(zero, 0.0, gradient.log_scale))
    res = np.where(on, tangential + np.maximum(radial, 0.0), radius * gnorm)
    return np.where(zero, 0.0, res), on


@dataclass(frozen=True)
class BallSolve:
    """End points of a batched projected-gradient solve on a product of balls.

    ``x`` holds one (B, k_b) array per block; ``kkt_residual`` is (n_blocks, B); ``active`` likewise;
    ``iterations`` is (B,), the iteration at which each start met the tolerance (or the budget).
    """

    x: list[Array]
    kkt_residual: Array
    active: NDArray[np.bool_]
    iterations: NDArray[np.int64]


def solve_on_balls(
    gradients: Callable[[list[Array]], list[Gradient]],
    x0: Sequence[Array],
    radii: Sequence[float],
    *,
    n_iter: int = 3000,
    tol: float = 1e-10,
    step: float = 1e-3,
    max_step: float = 0.5,
    min_step: float = 1e-16,
) -> BallSolve:
    """Minimise L over the product of balls ||x_b|| <= radii[b] from a batch of starts.

    Constraint of eq. (2) and of Theorems 5-6. Each block moves by its normalized gradient:
    on the sphere with the gradient pointing outwards (the constraint binds), x_b rotates by the
    angle eta_b along the tangential descent direction; otherwise x_b <- Proj(x_b - eta_b R_b g/||g||).
    eta_b starts small (``step``, so that a start inside a narrow basin, e.g. the LMM cone, stays in
    it), grows by 1.2 while successive moves agree and halves when they reverse (Rprop), so the
    iteration bisects towards the KKT point using gradient directions only. A start stops once
    every block is on its sphere with KKT residual (:func:`ball_kkt_residual`) below ``tol``, or
    its steps fall below ``min_step``. ``gradients`` should return the gradient of log(L - inf L)
    (same direction as grad L) so that interior residuals are scale-free.
    """
    xs = [np.array(x, dtype=np.float64, copy=True) for x in x0]
    B = xs[0].shape[0]
    nb = len(xs)
    eta = np.full((nb, B), step)
    prev = [np.zeros_like(x) for x in xs]
    running = np.ones(B, dtype=bool)
    iterations = np.full(B, n_iter, dtype=np.int64)
    res = np.zeros((nb, B))
    active = np.zeros((nb, B), dtype=bool)
    for it in range(n_iter + 1):
        grads = gradients(xs)
        for b, (x, g, R) in enumerate(zip(xs, grads, radii, strict=True)):
            res[b], active[b] = ball_kkt_residual(x, g, R)
        # Inside the ball the risk can be flat to e^{-R gap} (a plateau, not a minimum), so only the
        # on-sphere KKT test or a collapsed step ends a start.
        done = np.all((res <= tol) & active, axis=0) | np.all(eta < min_step, axis=0)
        newly = running & done
        iterations[newly] = it
        running &= ~done
        if not running.any() or it == n_iter:
            break
        for b, (x, g, R) in enumerate(zip(xs, grads, radii, strict=True)):
            gdir, zero = g.direction()
            norm = np.linalg.norm(x, axis=-1)
            xhat = x / np.where(norm > 0, norm, 1.0)[:, None]
            radial = (gdir * xhat).sum(-1)
            on = (norm >= R * (1.0 - 1e-12)) & (radial < 0)
            tang = gdir - radial[:, None] * xhat
            tnorm = np.linalg.norm(tang, axis=-1)
            that = tang / np.where(tnorm > 0, tnorm, 1.0)[:, None]
            move = np.where(on[:, None], that, gdir)
            agree = (move * prev[b]).sum(-1)
            e = eta[b]
            e = np.where(agree < 0, 0.5 * e, np.where(agree > 0, np.minimum(1.2 * e, max_step), e))
            rotated = R * (np.cos(e)[:, None] * xhat - np.sin(e)[:, None] * that)
            inner = project_ball(x - (e * R)[:, None] * gdir, R)
            new = np.where(on[:, None], rotated, inner)
            upd = running & ~zero & ~((tnorm == 0) & on)
            xs[b] = np.where(upd[:, None], new, x)
            eta[b] = np.where(running, e, eta[b])
            prev[b] = np.where(running[:, None], move, prev[b])
    return BallSolve(x=xs, kkt_residual=res.copy(), active=active.copy(), iterations=iterations)


# ---------------------------------------------------------------------------------------------
# Regularization paths
# ---------------------------------------------------------------------------------------------


def span_basis(vectors: Array, rtol: float = 1e-12) -> Array:
    """Orthonormal basis (d, k) of the span of the given vectors (rows of a (..., d) array).

    The risk depends on p only through K_i p up to a shift per input, i.e. through its component in
    span{k_it - k_is}; on v only through span{x_it}. Components outside only spend norm budget, so
    the constrained optimum lies in these subspaces (and the search runs there).
    """
    V = np.asarray(vectors, dtype=np.float64).reshape(-1, np.shape(vectors)[-1])
    _, S, Vt = np.linalg.svd(V, full_matrices=False)
    k = int(np.sum(S > rtol * max(S.max(initial=0.0), 1e-300)))
    return Vt[:k].T


def key_difference_basis(K: Array) -> Array:
    """Basis of span{k_it - k_i0}: the directions of p the softmax sees (Section 2)."""
    return span_basis(np.asarray(K)[:, 1:, :] - np.asarray(K)[:, :1, :])


@dataclass(frozen=True)
class RegularizationPath:
    """Solutions of eq. (2) (``v`` None) or of the joint problem of Theorems 5-6, one row per radius.

    ``log_excess`` is log(L - inf L) (:func:`log_excess_risk`, :func:`log_joint_risk`);
    ``kkt_residual`` the largest residual over the blocks; ``selected`` the tokens
    argmax_t S(K_i p)_t; ``n_at_best`` how many of the ``n_starts`` starts ended at the kept
    solution (cosine > 1 - 1e-8 in every block); ``ends_*`` every start's end point
    (radius, start, ...), so local optima can be read off too.
    """

    radii: Array
    p: Array
    v: Array | None
    loss: Array
    log_excess: Array
    kkt_residual: Array
    kkt_residual_p: Array
    kkt_residual_v: Array | None
    active_p: NDArray[np.bool_]
    active_v: NDArray[np.bool_] | None
    selected: NDArray[np.int64]
    n_starts: int
    n_at_best: NDArray[np.int64]
    iterations: NDArray[np.int64]
    ends_p: Array
    ends_v: Array | None
    ends_loss: Array
    ends_log_excess: Array
    ends_kkt_residual: Array


def _unit_rows(directions: Array | None, basis: Array) -> Array:
    """Candidate directions projected on the subspace (coordinates), normalized; zero rows dropped."""
    if directions is None or len(directions) == 0:
        return np.zeros((0, basis.shape[1]))
    z = np.asarray(directions, dtype=np.float64).reshape(-1, basis.shape[0]) @ basis
    norm = np.linalg.norm(z, axis=-1)
    keep = norm > 1e-12
    return z[keep] / norm[keep, None]


def _random_units(rng: np.random.Generator, n: int, k: int) -> Array:
    z = rng.standard_normal((n, k))
    return z / np.linalg.norm(z, axis=-1, keepdims=True)


def _pick_best(log_excess: Array, kkt: Array) -> int:
    """Lowest risk; among risks equal to 1e-12 (relative, in log space), the smallest KKT residual."""
    best = np.nanmin(log_excess)
    tied = np.flatnonzero(log_excess <= best + 1e-12 * max(1.0, abs(best)))
    return int(tied[np.argmin(kkt[tied])])


def radius_grid(min: float, max: float, num: int) -> Array:  # noqa: A002 (the config's key names)
    """The geometric grid of radii R (and r = R) on which the paths are solved (eq. (2), Theorems 5-6)."""
    return np.geomspace(min, max, num)


def _check_radii(radii: Array) -> Array:
    radii = np.asarray(radii, dtype=np.float64)
    if radii.ndim != 1 or radii.size == 0 or np.any(radii <= 0) or np.any(np.diff(radii) <= 0):
        raise ValueError("radii must be a non-empty increasing sequence of positive numbers")
    return radii


def regularization_path_p(
    K: Array,
    gamma: Array,
    radii: Array,
    loss: LossName = "logistic",
    *,
    candidates: Array | None = None,
    n_random: int = 8,
    seed: int = 0,
    n_iter: int = 3000,
    tol: float = 1e-10,
) -> RegularizationPath:
    """The regularization path p(R) = argmin_{||p|| <= R} L(p) for a fixed head, on a grid of R.

    Paper: eq. (2) and Theorem 1 (p(R)/R -> p_mm*/||p_mm*||, the GMM direction). At each R the
    starts are: the previous solution rescaled to R (a random direction at the first R), every
    ``candidates`` direction (e.g. the GMM and LMM directions) at norm R, and ``n_random`` random
    directions; the lowest :func:`log_excess_risk` wins.
    """
    check_loss(loss)
    radii = _check_radii(radii)
    K = np.asarray(K, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    basis = key_difference_basis(K)
    rng = np.random.default_rng(seed)
    cand = _unit_rows(candidates, basis)

    def grads(xs: list[Array]) -> list[Gradient]:
        p = xs[0] @ basis.T
        g = grad_p(K, gamma, p, loss)
        return [Gradient(g.scaled @ basis, g.log_scale - log_excess_risk(K, gamma, p, loss))]

    rows: dict[str, list] = {k: [] for k in ("p", "kkt", "active", "ends", "ends_le", "ends_kkt", "le", "nbest", "its")}
    warm = _random_units(rng, 1, basis.shape[1])
    for R in radii:
        z0 = R * np.vstack([warm, cand, _random_units(rng, n_random, basis.shape[1])])
        sol = solve_on_balls(grads, [z0], [R], n_iter=n_iter, tol=tol)
        z = sol.x[0]
        le = log_excess_risk(K, gamma, z @ basis.T, loss)
        kkt = sol.kkt_residual[0]
        best = _pick_best(le, kkt)
        zb = z[best]
        cos = (z @ zb) / (np.linalg.norm(z, axis=-1) * np.linalg.norm(zb))
        warm = zb[None] / np.linalg.norm(zb)
        rows["p"].append(zb @ basis.T)
        rows["kkt"].append(kkt[best])
        rows["active"].append(sol.active[0, best])
        rows["ends"].append(z @ basis.T)
        rows["ends_le"].append(le)
        rows["ends_kkt"].append(kkt)
        rows["le"].append(le[best])
        rows["nbest"].append(int(np.sum(cos > 1 - 1e-8)))
        rows["its"].append(int(sol.iterations.max()))
    P = np.array(rows["p"])
    kkt = np.array(rows["kkt"])
    return RegularizationPath(
        radii=radii,
        p=P,
        v=None,
        loss=risk(K, gamma, P, loss),
        log_excess=np.array(rows["le"]),
        kkt_residual=kkt,
        kkt_residual_p=kkt,
        kkt_residual_v=None,
        active_p=np.array(rows["active"]),
        active_v=None,
        selected=selected_tokens(K, P),
        n_starts=int(z0.shape[0]),
        n_at_best=np.array(rows["nbest"]),
        iterations=np.array(rows["its"]),
        ends_p=np.array(rows["ends"]),
        ends_v=None,
        ends_loss=risk(K, gamma, np.array(rows["ends"]), loss),
        ends_log_excess=np.array(rows["ends_le"]),
        ends_kkt_residual=np.array(rows["ends_kkt"]),
    )


def regularization_path_joint(
    X: Array,
    Y: Array,
    K: Array,
    radii: Array,
    loss: LossName = "logistic",
    *,
    candidates: Sequence[tuple[Array, Array]] = (),
    n_random: int = 8,
    seed: int = 0,
    n_iter: int = 3000,
    tol: float = 1e-10,
) -> RegularizationPath:
    """The joint path (v_r, p_R) = argmin_{||v|| <= r, ||p|| <= R} L(v, p), coupled as r = R.

    Paper: Theorems 5 and 6 (v_r/r -> v_mm/||v_mm||; p_R/R -> p_mm/||p_mm|| under Assumption C,
    p_relax/||p_relax|| of eq. (10) in general). Both radii run along the same grid (r = R). Starts:
    the previous solution rescaled, every (v, p) pair of ``candidates`` at norms (R, R), and
    ``n_random`` random pairs; the lowest :func:`log_joint_risk` wins.
    """
    check_loss(loss)
    radii = _check_radii(radii)
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    bp = key_difference_basis(K)
    bv = span_basis(X)
    rng = np.random.default_rng(seed)
    cv = [c[0] for c in candidates]
    cp = [c[1] for c in candidates]
    cand_v, cand_p = _unit_rows(np.array(cv) if cv else None, bv), _unit_rows(np.array(cp) if cp else None, bp)
    if cand_v.shape[0] != cand_p.shape[0]:
        raise ValueError("every candidate (v, p) needs a non-zero v and p inside the spans the risk depends on")

    def grads(xs: list[Array]) -> list[Gradient]:
        v, p = xs[0] @ bv.T, xs[1] @ bp.T
        gv = grad_v(X, K, Y, v, p, loss)
        gp = grad_p(K, token_scores(X, Y, v), p, loss)
        log_L = log_joint_risk(X, Y, K, v, p, loss)  # gradients of log L: scale-free residuals
        return [Gradient(gv.scaled @ bv, gv.log_scale - log_L), Gradient(gp.scaled @ bp, gp.log_scale - log_L)]

    keys_ = (
        "v",
        "p",
        "kkt_v",
        "kkt_p",
        "act_v",
        "act_p",
        "ends_v",
        "ends_p",
        "ends_le",
        "ends_kkt",
        "le",
        "nbest",
        "its",
    )
    rows: dict[str, list] = {k: [] for k in keys_}
    warm_v, warm_p = _random_units(rng, 1, bv.shape[1]), _random_units(rng, 1, bp.shape[1])
    for R in radii:
        v0 = R * np.vstack([warm_v, cand_v, _random_units(rng, n_random, bv.shape[1])])
        p0 = R * np.vstack([warm_p, cand_p, _random_units(rng, n_random, bp.shape[1])])
        sol = solve_on_balls(grads, [v0, p0], [R, R], n_iter=n_iter, tol=tol)
        zv, zp = sol.x
        v, p = zv @ bv.T, zp @ bp.T
        le = log_joint_risk(X, Y, K, v, p, loss)
        kkt = sol.kkt_residual.max(axis=0)
        best = _pick_best(le, kkt)
        cos_v = (zv @ zv[best]) / (np.linalg.norm(zv, axis=-1) * np.linalg.norm(zv[best]))
        cos_p = (zp @ zp[best]) / (np.linalg.norm(zp, axis=-1) * np.linalg.norm(zp[best]))
        warm_v, warm_p = zv[best][None] / np.linalg.norm(zv[best]), zp[best][None] / np.linalg.norm(zp[best])
        for key, val in (
            ("v", v[best]),
            ("p", p[best]),
            ("kkt_v", sol.kkt_residual[0, best]),
            ("kkt_p", sol.kkt_residual[1, best]),
            ("act_v", sol.active[0, best]),
            ("act_p", sol.active[1, best]),
            ("ends_v", v),
            ("ends_p", p),
            ("ends_le", le),
            ("ends_kkt", kkt),
            ("le", le[best]),
            ("nbest", int(np.sum((cos_v > 1 - 1e-8) & (cos_p > 1 - 1e-8)))),
            ("its", int(sol.iterations.max())),
        ):
            rows[key].append(val)
    V, P = np.array(rows["v"]), np.array(rows["p"])
    kv, kp = np.array(rows["kkt_v"]), np.array(rows["kkt_p"])
    le = np.array(rows["le"])
    return RegularizationPath(
        radii=radii,
        p=P,
        v=V,
        loss=np.exp(le),
        log_excess=le,
        kkt_residual=np.maximum(kv, kp),
        kkt_residual_p=kp,
        kkt_residual_v=kv,
        active_p=np.array(rows["act_p"]),
        active_v=np.array(rows["act_v"]),
        selected=selected_tokens(K, P),
        n_starts=int(v0.shape[0]),
        n_at_best=np.array(rows["nbest"]),
        iterations=np.array(rows["its"]),
        ends_p=np.array(rows["ends_p"]),
        ends_v=np.array(rows["ends_v"]),
        ends_loss=np.exp(np.array(rows["ends_le"])),
        ends_log_excess=np.array(rows["ends_le"]),
        ends_kkt_residual=np.array(rows["ends_kkt"]),
    )


def selected_tokens(K: Array, p: Array) -> NDArray[np.int64]:
    """alpha_i = argmax_t (K_i p)_t, the token the softmax selects as ||p|| grows (Section 2)."""
    return np.einsum("ntd,...d->...nt", np.asarray(K), np.asarray(p)).argmax(axis=-1)


# ---------------------------------------------------------------------------------------------
# Lemma 1
# ---------------------------------------------------------------------------------------------


def grad_W(X: Array, Y: Array, v: Array, W: Array, u: Array, loss: LossName = "logistic") -> Array:
    """Gradient of L(W) = 1/n sum_i l(Y_i v^T X_i^T S(X_i W^T u)) in closed form: u grad L(p)^T at p = W^T u.

    Paper: Lemma 1 and its proof (Appendix A.2): the gradient is rank one with left singular vector u.
    Convention: keys K = X W^T as in eq. (5), so the query u enters the softmax as X_i W^T u and
    W(0) = u p(0)^T / ||u||^2 gives W(0)^T u = p(0).
    """
    X = np.asarray(X, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    g = grad_p(X, token_scores(X, Y, v), np.asarray(W, dtype=np.float64).T @ u, loss).value
    return np.outer(u, g)


def _torch_grad_W(X: Array, Y: Array, v: Array, u: Array, loss: LossName):
    """Autograd of L(W) in float64 (independent of the closed form of :func:`grad_W`)."""
    import torch

    Xt, Yt, vt, ut = (torch.tensor(a, dtype=torch.float64) for a in (X, Y, v, u))
    fn = {
        "logistic": lambda m: torch.nn.functional.softplus(-m),
        "exponential": lambda m: torch.exp(-m),
        "correlation": lambda m: -m,
    }[loss]

    def value_and_grad(W: Array) -> tuple[float, Array]:
        Wt = torch.tensor(W, dtype=torch.float64, requires_grad=True)
        s = torch.softmax(torch.einsum("ntd,ed,e->nt", Xt, Wt, ut), dim=-1)
        f = torch.einsum("nt,ntd,d->n", s, Xt, vt)
        L = fn(Yt * f).mean()
        L.backward()
        return float(L.detach()), Wt.grad.numpy().copy()

    return value_and_grad


@dataclass(frozen=True)
class Lemma1Check:
    """GD on W and on p side by side (Lemma 1).

    ``deviation[t]`` = ||W(t) - u p(t)^T / ||u||^2||_F, ``grad_deviation[t]`` = ||autograd grad_W(W(t)) -
    u grad L(p)^T at p = W(t)^T u||_F (the closed form of the proof against autograd), both (n_iter + 1,).
    """

    u: Array
    p: Array
    W_final: Array
    deviation: Array
    grad_deviation: Array
    risk_W: Array
    risk_p: Array

    @property
    def max_deviation(self) -> float:
        """max_t ||W(t) - u p(t)^T / ||u||^2||_F."""
        return float(self.deviation.max())

    @property
    def relative_max_deviation(self) -> float:
        """max_t deviation / max_t ||u p(t)^T / ||u||^2||_F (the latter is max_t ||p(t)|| / ||u||)."""
        return float(self.deviation.max() / (np.linalg.norm(self.p, axis=-1).max() / np.linalg.norm(self.u)))


def lemma1_check(
    X: Array, Y: Array, v: Array, u: Array, p0: Array, *, eta: float, n_iter: int, loss: LossName = "logistic"
) -> Lemma1Check:
    """Run GD on p (step eta) and on W (W(0) = u p(0)^T/||u||^2, step eta/||u||^2) on the same data.

    Paper: Lemma 1 with psi(z) = v^T z linear: L(p) = 1/n sum_i l(Y_i v^T X_i^T S(X_i p)) and
    L(W) = 1/n sum_i l(Y_i v^T X_i^T S(X_i W^T u)). The lemma says W(t) = u p(t)^T/||u||^2 for every t.
    GD on p uses :func:`maxmargin.core.gd.gradient_descent` (keys K_i = X_i); GD on W uses torch autograd
    of L(W), so the two runs share no gradient code.
    """
    check_loss(loss)
    X, Y, v, u, p0 = (np.asarray(a, dtype=np.float64) for a in (X, Y, v, u, p0))
    uu = float(u @ u)
    if uu == 0.0:
        raise ValueError("Lemma 1 needs u != 0")
    gamma = token_scores(X, Y, v)
    traj = gradient_descent(X, gamma, p0, eta=eta, n_iter=n_iter, loss=loss, normalized=False)
    P = traj.p
    value_and_grad = _torch_grad_W(X, Y, v, u, loss)
    W = np.outer(u, p0) / uu
    dev, gdev, rW = [], [], []
    for t in range(n_iter + 1):
        dev.append(np.linalg.norm(W - np.outer(u, P[t]) / uu))
        L, G = value_and_grad(W)
        rW.append(L)
        gdev.append(np.linalg.norm(G - grad_W(X, Y, v, W, u, loss)))
        if t < n_iter:
            W = W - (eta / uu) * G
    return Lemma1Check(
        u=u,
        p=P,
        W_final=W,
        deviation=np.array(dev),
        grad_deviation=np.array(gdev),
        risk_W=np.array(rW),
        risk_p=risk(X, gamma, P, loss),
    )


# ---------------------------------------------------------------------------------------------
# Tables behind results/tables/regpath.csv and results/tables/lemma1.csv
# ---------------------------------------------------------------------------------------------

REGPATH_COLUMNS = [
    "instance",
    "method",
    "run",
    "R",
    "kind",
    "cosine",
    "kkt_residual",
    "loss",
    "log_excess_loss",
    "active",
    "selected",
    "n_starts",
    "n_at_best",
]
REGPATH_INSTANCES = ("fig1b", "fig3a", "fig3b")


def _cos(a: Array, b: Array | None) -> Array:
    a = np.atleast_2d(np.asarray(a, dtype=np.float64))
    if b is None:
        return np.full(a.shape[0], np.nan)
    b = np.asarray(b, dtype=np.float64)
    return (a @ b) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b))


def _tokens(alpha: Array) -> str:
    return json.dumps([int(a) for a in np.ravel(alpha)])


def _path_rows(
    instance: str,
    method: str,
    run: str,
    radii: Array,
    X: Array,
    refs: dict[str, Array | None],
    kkt: dict[str, Array],
    active: dict[str, Array],
    loss: Array,
    log_excess: Array,
    selected: Array,
    n_starts: int,
    n_at_best: Array,
) -> list[dict]:
    """One row per (radius, kind): the cosine of the block (p or v) that ``kind`` refers to."""
    rows = []
    for kind, ref in refs.items():
        block = "v" if kind == "v_mm" else "p"
        cos = _cos(X[block], ref)
        for j, R in enumerate(radii):
            rows.append(
                {
                    "instance": instance,
                    "method": method,
                    "run": run,
                    "R": float(R),
                    "kind": kind,
                    "cosine": float(cos[j]),
                    "kkt_residual": float(kkt[block][j]),
                    "loss": float(loss[j]),
                    "log_excess_loss": float(log_excess[j]),
                    "active": bool(active[block][j]),
                    "selected": _tokens(selected[j]),
                    "n_starts": n_starts,
                    "n_at_best": int(n_at_best[j]),
                }
            )
    return rows


def _local_rows(
    instance: str, path: RegularizationPath, K: Array, refs: dict[str, Array | None], tol: float
) -> list[dict]:
    """Best end point per token selection other than the path's, if it is a KKT point (kkt <= tol).

    These are the constrained local optima (e.g. near the LMM of Fig. 1(b)), kept to show that the path
    prefers the GMM although a local solution near the LMM exists at every large R (Theorem 1 vs Theorem 3).
    """
    rows = []
    for j, R in enumerate(path.radii):
        sel = selected_tokens(K, path.ends_p[j])
        best_key = _tokens(path.selected[j])
        groups: dict[str, list[int]] = {}
        for b in range(sel.shape[0]):
            groups.setdefault(_tokens(sel[b]), []).append(b)
        for key, members in groups.items():
            ok = [b for b in members if path.ends_kkt_residual[j, b] <= tol]
            if key == best_key or not ok:
                continue
            b = ok[int(np.argmin(path.ends_log_excess[j, ok]))]
            X = {"p": path.ends_p[j, b][None], "v": None if path.ends_v is None else path.ends_v[j, b][None]}
            rows += _path_rows(
                instance,
                "local",
                f"tokens {key}",
                np.array([R]),
                X,
                refs,
                {"p": np.array([path.ends_kkt_residual[j, b]]), "v": np.array([np.nan])},
                {"p": np.array([True]), "v": np.array([True])},
                np.array([path.ends_loss[j, b]]),
                np.array([path.ends_log_excess[j, b]]),
                sel[b][None],
                path.n_starts,
                np.array([len(ok)]),
            )
    return rows


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=REGPATH_COLUMNS)
    return frame.astype({"n_starts": "Int64", "n_at_best": "Int64", "active": "boolean"})


def joint_candidates(X: Array, Y: Array, K: Array, max_combinations: int = 64) -> list[tuple[Array, Array, Array]]:
    """Every token selection alpha whose selected tokens are separable, with (v_mm, p_mm or p_relax) directions.

    Paper: (SVM) with r_i = x_{i alpha_i}, (ATT-SVM) and eq. (10): the candidate limits of Theorems 5-6.
    Returns (alpha, v_mm direction, p direction) triples; for small instances only (T^n <= max_combinations).
    """
    n, T, _ = X.shape
    if T**n > max_combinations:
        raise ValueError(f"T^n = {T**n} token choices exceed max_combinations = {max_combinations}")
    out = []
    for alpha in itertools.product(range(T), repeat=n):
        alpha = np.array(alpha)
        vmm = v_svm(X[np.arange(n), alpha], Y)
        if not vmm.feasible or vmm.direction is None:
            continue
        for res in (att_svm(K, alpha), p_relax(K, alpha, vmm.active)):
            if res.feasible and res.direction is not None:
                out.append((alpha, vmm.direction, res.direction))
    return out


def regpath_table(
    instance: str,
    *,
    radii: Array,
    loss: LossName = "logistic",
    n_random: int = 8,
    seed: int = 0,
    n_iter: int = 3000,
    tol: float = 1e-10,
    local_tol: float = 1e-8,
    gd: dict | None = None,
) -> pd.DataFrame:
    """The regularization path of one instance as a long table (one row per R and max-margin direction).

    Paper: Theorem 1 on the Fig. 1(b) data (``fig1b``: kinds gmm, lmm; plus normalized GD runs, eq. (3),
    from ``gd["starts"]``, with R = ||p(t)||) and Theorems 5-6 on the Fig. 3(a)/(b) data (``fig3a``,
    ``fig3b``: kinds p_mm, p_relax for p_R and v_mm for v_r, with r = R, for the tokens selected at the
    largest R). ``method`` is ``path`` (the constrained optimum), ``local`` (other KKT points, by
    token selection) or ``gd``.
    """
    radii = _check_radii(radii)
    if instance == "fig1b":
        inst = inst_mod.fig1b()
        found = max_margin_directions(inst.K, inst.gamma)
        refs = {kind: next(s.direction for k, _, s in found if k == kind) for kind in ("gmm", "lmm")}
        path = regularization_path_p(
            inst.K,
            inst.gamma,
            radii,
            loss,
            candidates=np.array([s.direction for _, _, s in found]),
            n_random=n_random,
            seed=seed,
            n_iter=n_iter,
            tol=tol,
        )
        X = {"p": path.p, "v": None}
        kkt = {"p": path.kkt_residual_p}
        active = {"p": path.active_p}
        rows = _path_rows(
            instance,
            "path",
            "path",
            radii,
            X,
            refs,
            kkt,
            active,
            path.loss,
            path.log_excess,
            path.selected,
            path.n_starts,
            path.n_at_best,
        )
        rows += _local_rows(instance, path, inst.K, refs, local_tol)
        if gd is not None:
            rows += _gd_rows(instance, inst, refs, loss, **gd)
        return _frame(rows)
    if instance in ("fig3a", "fig3b"):
        inst = inst_mod.fig3(instance[-1])
        cands = joint_candidates(inst.X, inst.Y, inst.K)
        path = regularization_path_joint(
            inst.X,
            inst.Y,
            inst.K,
            radii,
            loss,
            candidates=[c[1:] for c in cands],
            n_random=n_random,
            seed=seed,
            n_iter=n_iter,
            tol=tol,
        )
        alpha = path.selected[-1]
        n = inst.X.shape[0]
        vmm = v_svm(inst.X[np.arange(n), alpha], inst.Y)
        pmm = att_svm(inst.K, alpha)
        relax = p_relax(inst.K, alpha, vmm.active) if vmm.feasible else pmm
        refs = {"p_mm": pmm.direction, "p_relax": relax.direction, "v_mm": vmm.direction}
        X = {"p": path.p, "v": path.v}
        kkt = {"p": path.kkt_residual_p, "v": path.kkt_residual_v}
        active = {"p": path.active_p, "v": path.active_v}
        rows = _path_rows(
            instance,
            "path",
            "path",
            radii,
            X,
            refs,
            kkt,
            active,
            path.loss,
            path.log_excess,
            path.selected,
            path.n_starts,
            path.n_at_best,
        )
        return _frame(rows)
    raise ValueError(f"unknown instance {instance!r}; allowed: {', '.join(REGPATH_INSTANCES)}")


def _gd_rows(
    instance: str,
    inst: inst_mod.Instance,
    refs: dict[str, Array | None],
    loss: LossName,
    *,
    eta: float,
    n_iter: int,
    starts: Sequence[Sequence[float]],
) -> list[dict]:
    """Normalized GD (eq. (3), Appendix E) from each start, recorded at log-spaced iterations with R = ||p(t)||."""
    p0 = np.asarray(starts, dtype=np.float64)
    traj = gradient_descent(inst.K, inst.gamma, p0, eta=eta, n_iter=n_iter, loss=loss)
    its = record_iterations(n_iter, dense=20, n_log=80)
    rows = []
    for b in range(p0.shape[0]):
        P = traj.p[b, its]
        le = log_excess_risk(inst.K, inst.gamma, P, loss)
        L = risk(inst.K, inst.gamma, P, loss)
        sel = selected_tokens(inst.K, P)
        R = np.linalg.norm(P, axis=-1)
        start = "[" + ", ".join(f"{x:g}" for x in p0[b]) + "]"
        for kind, ref in refs.items():
            cos = _cos(P, ref)
            for j in range(len(its)):
                rows.append(
                    {
                        "instance": instance,
                        "method": "gd",
                        "run": f"GD from {start}",
                        "R": float(R[j]),
                        "kind": kind,
                        "cosine": float(cos[j]),
                        "kkt_residual": np.nan,
                        "loss": float(L[j]),
                        "log_excess_loss": float(le[j]),
                        "active": np.nan,
                        "selected": _tokens(sel[j]),
                        "n_starts": 1,
                        "n_at_best": np.nan,
                    }
                )
    return rows


LEMMA1_INSTANCES = ("fig1a", "fig1b", "fig1c")


def lemma1_table(
    *, instances: Sequence[str], u: Sequence[float], eta: float, n_iter: int, seed: int, loss: LossName = "logistic"
) -> pd.DataFrame:
    """Lemma 1 on each instance's data (X, Y, v): max_t ||W(t) - u p(t)^T/||u||^2||_F for GD on W and on p.

    p(0) is drawn from N(0, I) with ``seed`` (one draw per instance, in order); ``seed`` also draws the
    Fig. 1(c) tokens. One row per instance.
    """
    rng = np.random.default_rng(seed)
    u = np.asarray(u, dtype=np.float64)
    rows = []
    for name in instances:
        inst = {"fig1a": inst_mod.fig1a, "fig1b": inst_mod.fig1b, "fig1c": lambda: inst_mod.fig1c(seed)}[name]()
        n, T, d = inst.X.shape
        if u.shape != (d,):
            raise ValueError(f"u has {u.size} entries but the {name} tokens have d = {d}")
        p0 = rng.standard_normal(d)
        chk = lemma1_check(inst.X, inst.Y, inst.v, u, p0, eta=eta, n_iter=n_iter, loss=loss)
        rows.append(
            {
                "instance": name,
                "n": n,
                "T": T,
                "d": d,
                "u": json.dumps(u.tolist()),
                "p0": json.dumps(p0.tolist()),
                "eta": eta,
                "n_iter": n_iter,
                "loss": loss,
                "max_deviation": chk.max_deviation,
                "relative_max_deviation": chk.relative_max_deviation,
                "max_grad_deviation": float(chk.grad_deviation.max()),
                "final_p_norm": float(np.linalg.norm(chk.p[-1])),
                "final_risk_p": float(chk.risk_p[-1]),
                "final_risk_W": float(chk.risk_W[-1]),
            }
        )
    return pd.DataFrame(rows)


__all__ = [
    "BallSolve",
    "LEMMA1_INSTANCES",
    "Lemma1Check",
    "REGPATH_COLUMNS",
    "REGPATH_INSTANCES",
    "RegularizationPath",
    "ball_kkt_residual",
    "grad_W",
    "key_difference_basis",
    "lemma1_check",
    "log_excess_risk",
    "log_joint_risk",
    "project_ball",
    "radius_grid",
    "joint_candidates",
    "lemma1_table",
    "regpath_table",
    "regularization_path_joint",
    "regularization_path_p",
    "selected_tokens",
    "solve_on_balls",
    "span_basis",
]
