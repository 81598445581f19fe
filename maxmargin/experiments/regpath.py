"""Regularization paths of the attention model and their tables (regpath.csv, regpath_compare.csv).

Paper: eq. (2), p(R) = argmin_{||p|| <= R} L(p) (Theorem 1: p(R)/R -> p_mm*/||p_mm*||), and
(v_r, p_R) = argmin_{||v|| <= r, ||p|| <= R} L(v, p) (Theorems 5 and 6: v_r/r -> v_mm/||v_mm||,
p_R/R -> p_mm/||p_mm|| or p_relax/||p_relax||, eq. (10)).

The constrained problems are nonconvex. Each radius is solved from several starts (the previous
radius's solution rescaled, the caller's candidate directions, random directions) by the ball solver of
:mod:`maxmargin.core.ball`, and the start with the lowest risk is kept. Every solution is checked by the KKT
conditions of the ball constraint(s). Risks are compared in log space, as the excess over their infimum
(:mod:`maxmargin.core.logspace`): with a fixed head this keeps the order of two candidates exact where the
risk itself has rounded to the same float; in the joint problem the log risk still separates candidates that
select different tokens or heads (starts that end in the same basin end at the same KKT point, which
``n_at_best`` reports).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from maxmargin.core.ball import key_difference_basis, solve_on_balls, span_basis
from maxmargin.core.gd import cosine, gradient_descent, record_iterations
from maxmargin.core.logspace import log_excess_risk, log_gradient, log_joint_risk
from maxmargin.core.model import (
    Array,
    Gradient,
    LossName,
    check_loss,
    grad_p,
    grad_v,
    risk,
    selected_tokens,
    token_scores,
)
from maxmargin.core.progress import progress
from maxmargin.core.svm import att_svm, p_relax, v_svm
from maxmargin.experiments import instances
from maxmargin.experiments.synthetic import max_margin_directions

SAME_POINT_COSINE = 1 - 1e-8  # two end points whose cosine exceeds this (in every block) are the same KKT point


# ---------------------------------------------------------------------------------------------
# Multi-start solves along a grid of radii
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MultistartSolve:
    """Every start's end point at every radius, for the blocks (p,) or (v, p), and which start was kept.

    ``ends`` holds one (n_radii, n_starts, d) array per block; ``kkt_residual`` and ``active`` are
    (n_blocks, n_radii, n_starts); ``log_excess`` (n_radii, n_starts) is log(L - inf L); ``best`` is the kept
    start per radius; ``n_at_best`` how many starts ended at the kept point (cosine above
    ``SAME_POINT_COSINE`` in every block); ``iterations`` the most solver iterations any start used.
    """

    ends: list[Array]
    log_excess: Array
    kkt_residual: Array
    active: NDArray[np.bool_]
    best: NDArray[np.int64]
    n_at_best: NDArray[np.int64]
    iterations: NDArray[np.int64]

    def at_best(self, values: Array) -> Array:
        """``values`` of shape (..., n_radii, n_starts) at the kept start of each radius: (..., n_radii)."""
        return np.take_along_axis(np.asarray(values), self.best[:, None], axis=-1)[..., 0]

    def best_point(self, block: int) -> Array:
        """The kept end point of ``block`` at each radius, (n_radii, d)."""
        return self.ends[block][np.arange(len(self.best)), self.best]


def _unit_rows(directions: Array | None, basis: Array) -> Array:
    """Candidate directions projected on the subspace (coordinates), normalized; zero rows dropped."""
    if directions is None or len(directions) == 0:
        return np.zeros((0, basis.shape[1]))
    coordinates = np.asarray(directions, dtype=np.float64).reshape(-1, basis.shape[0]) @ basis
    norm = np.linalg.norm(coordinates, axis=-1)
    keep = norm > 1e-12
    return coordinates[keep] / norm[keep, None]


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


def multistart_path(
    bases: Sequence[Array],
    candidates: Sequence[Array],
    gradients: Callable[[list[Array]], list[Gradient]],
    log_objective: Callable[[list[Array]], Array],
    radii: Array,
    *,
    n_random: int,
    seed: int,
    n_iter: int,
    tol: float,
) -> MultistartSolve:
    """Solve min L over ||x_b|| <= R for every block b and every R of ``radii``, from several starts each.

    The search runs in the coordinates of each block's orthonormal basis (the subspace the risk depends on).
    Starts at each R: the previous radius's solution rescaled (a random direction at the first R), every row of
    ``candidates[b]`` (unit coordinates), ``n_random`` random directions; the lowest ``log_objective`` wins.
    ``gradients`` gives grad L at points in the original coordinates; the solver gets the gradient of
    ``log_objective`` = log(L - inf L) (:func:`maxmargin.core.logspace.log_gradient`), so residuals are scale-free.
    """
    rng = np.random.default_rng(seed)
    warm = [_random_units(rng, 1, basis.shape[1]) for basis in bases]

    def coordinate_gradients(coordinates: list[Array]) -> list[Gradient]:
        points = [z @ basis.T for z, basis in zip(coordinates, bases, strict=True)]
        log_value = log_objective(points)
        return [log_gradient(g, log_value, basis) for g, basis in zip(gradients(points), bases, strict=True)]

    records = []
    for j, radius in enumerate(radii):
        starts = [
            radius * np.vstack([w, c, _random_units(rng, n_random, basis.shape[1])])
            for w, c, basis in zip(warm, candidates, bases, strict=True)
        ]
        solve = solve_on_balls(coordinate_gradients, starts, [radius] * len(bases), n_iter=n_iter, tol=tol)
        ends = [z @ basis.T for z, basis in zip(solve.x, bases, strict=True)]
        log_excess = log_objective(ends)
        best = _pick_best(log_excess, solve.kkt_residual.max(axis=0))
        same = np.all([cosine(z, z[best]) > SAME_POINT_COSINE for z in solve.x], axis=0)
        warm = [z[best][None] / np.linalg.norm(z[best]) for z in solve.x]
        records.append((ends, log_excess, solve, best, int(same.sum())))
        progress(
            "radius %d/%d: R %.4g, log(L - inf L) %.3f, KKT residual %.1e, %d/%d starts at the optimum",
            j + 1,
            len(radii),
            radius,
            log_excess[best],
            solve.kkt_residual.max(axis=0)[best],
            int(same.sum()),
            same.size,
        )
    return MultistartSolve(
        ends=[np.array([r[0][b] for r in records]) for b in range(len(bases))],
        log_excess=np.array([r[1] for r in records]),
        kkt_residual=np.stack([r[2].kkt_residual for r in records], axis=1),
        active=np.stack([r[2].active for r in records], axis=1),
        best=np.array([r[3] for r in records]),
        n_at_best=np.array([r[4] for r in records]),
        iterations=np.array([int(r[2].iterations.max()) for r in records]),
    )


# ---------------------------------------------------------------------------------------------
# Regularization paths
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegularizationPath:
    """Solutions of eq. (2) (``v`` None) or of the joint problem of Theorems 5-6, one row per radius.

    ``log_excess`` is log(L - inf L) (:mod:`maxmargin.core.logspace`); ``kkt_residual_p``/``_v`` the KKT
    residual of each block; ``selected`` the tokens argmax_t (K_i p)_t; ``n_at_best`` how many of the
    ``n_starts`` starts ended at the kept solution; ``ends_*`` every start's end point (radius, start, ...),
    so local optima can be read off too.
    """

    radii: Array
    p: Array
    v: Array | None
    loss: Array
    log_excess: Array
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

    @property
    def kkt_residual(self) -> Array:
        """The largest KKT residual over the blocks, per radius."""
        return (
            self.kkt_residual_p if self.kkt_residual_v is None else np.maximum(self.kkt_residual_v, self.kkt_residual_p)
        )


def _path_of(
    radii: Array, K: Array, solved: MultistartSolve, risk_of: Callable[[Array], Array] | None
) -> RegularizationPath:
    """The path from a solve with blocks (p,) or (v, p); ``risk_of(p)`` is L(p) for a fixed head (None: the
    joint problem, whose L is exp of its log excess, the infimum being 0)."""
    joint = len(solved.ends) == 2
    p_block = 1 if joint else 0
    p, v = solved.best_point(p_block), solved.best_point(0) if joint else None
    ends_p, ends_v = solved.ends[p_block], solved.ends[0] if joint else None
    return RegularizationPath(
        radii=radii,
        p=p,
        v=v,
        loss=np.exp(solved.at_best(solved.log_excess)) if risk_of is None else risk_of(p),
        log_excess=solved.at_best(solved.log_excess),
        kkt_residual_p=solved.at_best(solved.kkt_residual[p_block]),
        kkt_residual_v=solved.at_best(solved.kkt_residual[0]) if joint else None,
        active_p=solved.at_best(solved.active[p_block]),
        active_v=solved.at_best(solved.active[0]) if joint else None,
        selected=selected_tokens(K, p),
        n_starts=solved.ends[0].shape[1],
        n_at_best=solved.n_at_best,
        iterations=solved.iterations,
        ends_p=ends_p,
        ends_v=ends_v,
        ends_loss=np.exp(solved.log_excess) if risk_of is None else risk_of(ends_p),
        ends_log_excess=solved.log_excess,
        ends_kkt_residual=solved.kkt_residual.max(axis=0),
    )


def regularization_path_p(
    K: Array,
    gamma: Array,
    radii: Array,
    loss: LossName,
    *,
    candidates: Array | None,
    n_random: int,
    seed: int,
    n_iter: int,
    tol: float,
) -> RegularizationPath:
    """The regularization path p(R) = argmin_{||p|| <= R} L(p) for a fixed head, on a grid of R.

    Paper: eq. (2) and Theorem 1 (p(R)/R -> p_mm*/||p_mm*||, the GMM direction). Starts at each R: see
    :func:`multistart_path`; ``candidates`` are directions such as the GMM and LMM; the lowest
    :func:`maxmargin.core.logspace.log_excess_risk` wins.
    """
    check_loss(loss)
    radii = _check_radii(radii)
    K = np.asarray(K, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    basis = key_difference_basis(K)
    solved = multistart_path(
        [basis],
        [_unit_rows(candidates, basis)],
        lambda points: [grad_p(K, gamma, points[0], loss)],
        lambda points: log_excess_risk(K, gamma, points[0], loss),
        radii,
        n_random=n_random,
        seed=seed,
        n_iter=n_iter,
        tol=tol,
    )
    return _path_of(radii, K, solved, lambda p: risk(K, gamma, p, loss))


def regularization_path_joint(
    X: Array,
    Y: Array,
    K: Array,
    radii: Array,
    loss: LossName,
    *,
    candidates: Sequence[tuple[Array, Array]],
    n_random: int,
    seed: int,
    n_iter: int,
    tol: float,
) -> RegularizationPath:
    """The joint path (v_r, p_R) = argmin_{||v|| <= r, ||p|| <= R} L(v, p), coupled as r = R.

    Paper: Theorems 5 and 6 (v_r/r -> v_mm/||v_mm||; p_R/R -> p_mm/||p_mm|| under Assumption C,
    p_relax/||p_relax|| of eq. (10) in general). Both radii run along the same grid (r = R). Starts: see
    :func:`multistart_path`, with every (v, p) pair of ``candidates``; the lowest
    :func:`maxmargin.core.logspace.log_joint_risk` wins.
    """
    check_loss(loss)
    radii = _check_radii(radii)
    X, Y, K = (np.asarray(a, dtype=np.float64) for a in (X, Y, K))
    basis_v, basis_p = span_basis(X), key_difference_basis(K)
    candidate_v = _unit_rows(np.array([c[0] for c in candidates]) if candidates else None, basis_v)
    candidate_p = _unit_rows(np.array([c[1] for c in candidates]) if candidates else None, basis_p)
    if candidate_v.shape[0] != candidate_p.shape[0]:
        raise ValueError("every candidate (v, p) needs a non-zero v and p inside the spans the risk depends on")

    def gradients(points: list[Array]) -> list[Gradient]:
        v, p = points
        return [grad_v(X, K, Y, v, p, loss), grad_p(K, token_scores(X, Y, v), p, loss)]

    def log_objective(points: list[Array]) -> Array:
        return log_joint_risk(X, Y, K, points[0], points[1], loss)

    solved = multistart_path(
        [basis_v, basis_p],
        [candidate_v, candidate_p],
        gradients,
        log_objective,
        radii,
        n_random=n_random,
        seed=seed,
        n_iter=n_iter,
        tol=tol,
    )
    return _path_of(radii, K, solved, None)


# ---------------------------------------------------------------------------------------------
# Tables behind results/tables/regpath.csv and regpath_compare.csv
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
BLOCK_OF_KIND = {"gmm": "p", "lmm": "p", "p_mm": "p", "p_relax": "p", "v_mm": "v"}


def _table_cosine(points: Array, direction: Array | None) -> Array:
    """Cosine of each row of ``points`` with ``direction`` (:func:`maxmargin.core.gd.cosine`), NaN without one."""
    points = np.atleast_2d(np.asarray(points, dtype=np.float64))
    if direction is None:
        return np.full(points.shape[0], np.nan)
    return cosine(points, direction)


def _tokens(alpha: Array) -> str:
    return json.dumps([int(a) for a in np.ravel(alpha)])


@dataclass(frozen=True)
class _RunRecord:
    """One run's values per radius (or per recorded iteration), in the table's columns.

    ``points``, ``kkt_residual`` and ``active`` are per block ("p", "v"); the rest is shared by the blocks.
    """

    R: Array
    points: dict[str, Array | None]
    kkt_residual: dict[str, Array]
    active: dict[str, Array]
    loss: Array
    log_excess_loss: Array
    selected: Array
    n_starts: int
    n_at_best: Array

    def rows(self, instance: str, method: str, run: str, refs: dict[str, Array | None]) -> list[dict]:
        """One row per (radius, kind): the cosine of the block (p or v) that ``kind`` refers to."""
        rows = []
        for kind, ref in refs.items():
            block = BLOCK_OF_KIND[kind]
            cos = _table_cosine(self.points[block], ref)
            for j, R in enumerate(self.R):
                rows.append(
                    {
                        "instance": instance,
                        "method": method,
                        "run": run,
                        "R": float(R),
                        "kind": kind,
                        "cosine": float(cos[j]),
                        "kkt_residual": float(self.kkt_residual[block][j]),
                        "loss": float(self.loss[j]),
                        "log_excess_loss": float(self.log_excess_loss[j]),
                        "active": self.active[block][j],
                        "selected": _tokens(self.selected[j]),
                        "n_starts": self.n_starts,
                        "n_at_best": self.n_at_best[j],
                    }
                )
        return rows


def _path_record(path: RegularizationPath) -> _RunRecord:
    return _RunRecord(
        R=path.radii,
        points={"p": path.p, "v": path.v},
        kkt_residual={"p": path.kkt_residual_p, "v": path.kkt_residual_v},
        active={"p": path.active_p, "v": path.active_v},
        loss=path.loss,
        log_excess_loss=path.log_excess,
        selected=path.selected,
        n_starts=path.n_starts,
        n_at_best=path.n_at_best,
    )


def _local_rows(
    instance: str, path: RegularizationPath, K: Array, refs: dict[str, Array | None], local_tol: float
) -> list[dict]:
    """Best end point per token selection other than the path's, if it is a KKT point (kkt <= local_tol).

    These are the constrained local optima (e.g. near the LMM of Fig. 1(b)), kept to show that the path
    prefers the GMM although a local solution near the LMM exists at large R (Theorem 1 vs Theorem 3).
    """
    rows = []
    for j, R in enumerate(path.radii):
        selections = selected_tokens(K, path.ends_p[j])
        groups: dict[str, list[int]] = {}
        for start, selection in enumerate(selections):
            groups.setdefault(_tokens(selection), []).append(start)
        for key, members in groups.items():
            converged = [start for start in members if path.ends_kkt_residual[j, start] <= local_tol]
            if key == _tokens(path.selected[j]) or not converged:
                continue
            start = converged[int(np.argmin(path.ends_log_excess[j, converged]))]
            record = _RunRecord(
                R=np.array([R]),
                points={"p": path.ends_p[j, start][None], "v": None},
                kkt_residual={"p": np.array([path.ends_kkt_residual[j, start]])},
                active={"p": np.array([True])},
                loss=np.array([path.ends_loss[j, start]]),
                log_excess_loss=np.array([path.ends_log_excess[j, start]]),
                selected=selections[start][None],
                n_starts=path.n_starts,
                n_at_best=np.array([len(converged)]),
            )
            rows += record.rows(instance, "local", f"tokens {key}", refs)
    return rows


def _gd_rows(
    instance: str,
    inst: instances.Instance,
    refs: dict[str, Array | None],
    loss: LossName,
    *,
    eta: float,
    n_iter: int,
    starts: Sequence[Sequence[float]],
) -> list[dict]:
    """Normalized GD (eq. (3), Appendix E) from each start, recorded at log-spaced iterations with R = ||p(t)||."""
    p0 = np.asarray(starts, dtype=np.float64)
    trajectory = gradient_descent(inst.K, inst.gamma, p0, eta=eta, n_iter=n_iter, loss=loss)
    recorded = record_iterations(n_iter, dense=20, n_log=80)
    rows = []
    for start, p_start in enumerate(p0):
        p = trajectory.p[start, recorded]
        missing = np.full(len(recorded), np.nan)
        record = _RunRecord(
            R=np.linalg.norm(p, axis=-1),
            points={"p": p},
            kkt_residual={"p": missing},
            active={"p": missing},
            loss=risk(inst.K, inst.gamma, p, loss),
            log_excess_loss=log_excess_risk(inst.K, inst.gamma, p, loss),
            selected=selected_tokens(inst.K, p),
            n_starts=1,
            n_at_best=missing,
        )
        label = "[" + ", ".join(f"{x:g}" for x in p_start) + "]"
        rows += record.rows(instance, "gd", f"GD from {label}", refs)
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


def _fig1b_rows(radii: Array, loss: LossName, local_tol: float, gd: dict | None, **solver: int | float) -> list[dict]:
    """Theorem 1 on the Fig. 1(b) data: the path against the GMM and LMM, its local optima and the GD runs."""
    inst = instances.fig1b()
    found = max_margin_directions(inst.K, inst.gamma)
    refs = {kind: next(s.direction for k, _, s in found if k == kind) for kind in ("gmm", "lmm")}
    candidates = np.array([s.direction for _, _, s in found])
    path = regularization_path_p(inst.K, inst.gamma, radii, loss, candidates=candidates, **solver)
    rows = _path_record(path).rows("fig1b", "path", "path", refs)
    rows += _local_rows("fig1b", path, inst.K, refs, local_tol)
    if gd is not None:
        rows += _gd_rows("fig1b", inst, refs, loss, **gd)
    return rows


def _fig3_rows(instance: str, radii: Array, loss: LossName, **solver: int | float) -> list[dict]:
    """Theorems 5-6 on the Fig. 3(a)/(b) data: the joint path against the limits of the tokens it selects last."""
    inst = instances.fig3(instance[-1])
    candidates = [c[1:] for c in joint_candidates(inst.X, inst.Y, inst.K)]
    path = regularization_path_joint(inst.X, inst.Y, inst.K, radii, loss, candidates=candidates, **solver)
    alpha = path.selected[-1]
    vmm = v_svm(inst.X[np.arange(inst.X.shape[0]), alpha], inst.Y)
    pmm = att_svm(inst.K, alpha)
    relax = p_relax(inst.K, alpha, vmm.active) if vmm.feasible else pmm
    refs = {"p_mm": pmm.direction, "p_relax": relax.direction, "v_mm": vmm.direction}
    return _path_record(path).rows(instance, "path", "path", refs)


def regpath_table_settings(regpath: dict[str, Any], instance: str) -> dict[str, Any]:
    """The config's ``regpath`` block as keyword arguments of :func:`regpath_table` for one instance.

    The radii stay a ``{min, max, num}`` grid (:func:`radius_grid`); the GD runs belong to the Theorem 1 path
    (Fig. 1(b) data) only.
    """
    settings = {key: value for key, value in regpath.items() if key not in ("instances", "gd")}
    return {**settings, "gd": regpath["gd"] if instance == "fig1b" else None}


def regpath_table(
    instance: str,
    *,
    radii: Array,
    loss: LossName,
    n_random: int,
    seed: int,
    n_iter: int,
    tol: float,
    local_tol: float,
    gd: dict | None,
) -> pd.DataFrame:
    """The regularization path of one instance as a long table (one row per R and max-margin direction).

    Paper: Theorem 1 on the Fig. 1(b) data (``fig1b``: kinds gmm, lmm; plus normalized GD runs, eq. (3),
    from ``gd["starts"]``, with R = ||p(t)||) and Theorems 5-6 on the Fig. 3(a)/(b) data (``fig3a``,
    ``fig3b``: kinds p_mm, p_relax for p_R and v_mm for v_r, with r = R, for the tokens selected at the
    largest R). ``method`` is ``path`` (the constrained optimum), ``local`` (other KKT points, by
    token selection: on the Fig. 1(b) data the local optimum near the LMM, from R ~ 20 on) or ``gd``. The
    workflow writes the ``path`` rows to results/tables/regpath.csv and the ``local`` and ``gd`` rows, what the
    path is compared with, to results/tables/regpath_compare.csv.
    """
    radii = _check_radii(radii)
    solver = {"n_random": n_random, "seed": seed, "n_iter": n_iter, "tol": tol}
    if instance == "fig1b":
        return _frame(_fig1b_rows(radii, loss, local_tol, gd, **solver))
    if instance in ("fig3a", "fig3b"):
        return _frame(_fig3_rows(instance, radii, loss, **solver))
    raise ValueError(f"unknown instance {instance!r}; allowed: {', '.join(REGPATH_INSTANCES)}")


__all__ = [
    "MultistartSolve",
    "REGPATH_COLUMNS",
    "REGPATH_INSTANCES",
    "RegularizationPath",
    "joint_candidates",
    "multistart_path",
    "radius_grid",
    "regpath_table",
    "regpath_table_settings",
    "regularization_path_joint",
    "regularization_path_p",
]
