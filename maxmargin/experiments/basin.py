"""Basins of attraction of gradient descent on the Figure 1(b) data, and the measured constants of Theorem 3.

Paper: Theorem 3 with the cone C_{mu,R}(q) of eq. (7)-(8) (correlation with q at least 1 - mu, norm at least R),
on the data of Figure 1(b) (n = 1, T = 3: the optimal token (-0.1, 1), the locally-optimal token (1, 0) and the
non-optimal token (0, 0)); Figure 2 is the paper's sketch of the cone. Beyond the paper: GD runs from a dense grid
of starts covering the key plane, each labelled by where it ends with the census's rule (Appendix E:
:func:`maxmargin.experiments.census.is_saturated` and :func:`~maxmargin.experiments.census.classify_selection`),
for normalized GD and for constant-step GD with eta <= 1/L_p (Theorem 3's step); then, for each radius R, the
largest mu such that every sampled start of C_{mu,R}(p_mm) on the arc of radius R reaches the LMM, and the part of
the cone where the loss has no stationary point (the radial derivative d/dr L(r u) < 0 along rays).

Every start of this instance shares its keys K and scores gamma, so GD runs in key coordinates
(:func:`maxmargin.core.span_gd.gd_in_span`, exact gradients, vectorised across starts) and a label depends only
on the selected tokens alpha: (ATT-SVM) is solved once per distinct alpha.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from maxmargin import registry
from maxmargin.core.gd import cosine, gradient_descent, record_iterations
from maxmargin.core.loss import LossName, check_loss
from maxmargin.core.model import Array, grad_p
from maxmargin.core.progress import Progress
from maxmargin.core.span_gd import final_weights, gd_in_span, span_coordinates
from maxmargin.experiments import census, instances

BASIN_COLUMNS = registry.columns("basin")
CONE_COLUMNS = registry.columns("basin_cone")
PATH_COLUMNS = registry.columns("basin_paths")
NO_STATIONARY = "no_stationary_point"  # the variant name of the cone rows measured from the radial derivative


@dataclass(frozen=True)
class GDVariant:
    """One gradient-descent variant of eq. (3): its ``name``, step ``eta``, ``n_iter`` iterations, and whether
    the gradient is normalized (Section 4, the authors' notebook) or the step constant (Theorem 3)."""

    name: str
    eta: float
    n_iter: int
    normalized: bool


def linear_grid(lo: float, hi: float, num: int) -> Array:
    """``num`` evenly spaced values from ``lo`` to ``hi``, computed as lo + (hi - lo) i / (num - 1).

    Unlike ``np.linspace`` (lo + i * step) this hits every node of the form lo + (hi - lo) k / (num - 1) exactly
    when it is a short decimal, so a start of Figure 1(b) such as (0, -0.5) is a node of the grid, not a neighbour.
    """
    if num < 2:
        raise ValueError(f"need num >= 2, got {num}")
    return lo + (hi - lo) * np.arange(num) / (num - 1)


def grid_starts(p1: Mapping[str, float], p2: Mapping[str, float], d: int) -> Array:
    """Starts p(0) on the grid ``p1`` x ``p2`` ({min, max, num} each) of the key plane, other coordinates 0.

    Shape (num_p2 * num_p1, d), p_1 varying fastest (row-major image order, row = p_2).
    """
    x = linear_grid(p1["min"], p1["max"], int(p1["num"]))
    y = linear_grid(p2["min"], p2["max"], int(p2["num"]))
    xx, yy = np.meshgrid(x, y)
    p0 = np.zeros((xx.size, d))
    p0[:, 0], p0[:, 1] = xx.ravel(), yy.ravel()
    return p0


def _loss_derivative_bounds(lo: Array, hi: Array, loss: LossName) -> tuple[Array, Array]:
    """sup |l'(u)| and sup l''(u) over margins u in [lo, hi] (Assumption A's losses; l' < 0 and l'' >= 0)."""
    if loss == "logistic":
        curvature = np.where((lo <= 0) & (hi >= 0), 0.25, 1.0 / (4 * np.cosh(np.minimum(abs(lo), abs(hi)) / 2) ** 2))
        return 1.0 / (1.0 + np.exp(lo)), curvature
    if loss == "exponential":
        return np.exp(-lo), np.exp(-lo)
    return np.ones_like(lo), np.zeros_like(lo)


def smoothness_bound(K: Array, gamma: Array, loss: LossName = "logistic") -> float:
    """An upper bound on L_p, the Lipschitz constant of grad L(p), from the data: Theorem 3's step is eta <= 1/L_p.

    Paper: eq. (15a), grad L(p) = 1/n sum_i l'(u_i) K_i^T S'(K_i p) gamma_i with u_i = S(K_i p)^T gamma_i. With
    s = S(K_i p), c = gamma_i - u_i: grad u_i = K_i^T (s o c) and hess u_i = K_i^T H K_i, H = diag(s o c)
    - (s o c) s^T - s (s o c)^T. Both s o c and H annihilate the ones vector, so K_i may be centred
    (K~_i = K_i - mean_t k_it); ||s o c||^2 <= Var_s(gamma_i) <= G_i^2 / 4 and ||H|| <= G_i / 4 + G_i with
    G_i = max_t gamma_it - min_t gamma_it. Hence L_p <= 1/n sum_i ||K~_i||^2 (sup l'' G_i^2 / 4 + sup |l'| 5 G_i / 4),
    the sups over the margins u in [min_t gamma_it, max_t gamma_it].
    """
    check_loss(loss)
    K = np.asarray(K, dtype=np.float64)
    centred = K - K.mean(axis=-2, keepdims=True)
    key_norm = np.linalg.norm(centred, ord=2, axis=(-2, -1))  # spectral norm per input
    lo, hi = gamma.min(axis=-1), gamma.max(axis=-1)
    spread = hi - lo
    slope, curvature = _loss_derivative_bounds(lo, hi, loss)
    return float(np.mean(key_norm**2 * (curvature * spread**2 / 4 + slope * 1.25 * spread)))


def run_gd(
    K: Array, gamma: Array, p0: Array, variant: GDVariant, loss: LossName, workers: int = 1
) -> tuple[Array, Array]:
    """GD from every start p0 (B, d) on the shared data (K, gamma): the final iterates (B, d) and logits (B, n, T).

    Paper: eq. (3) (constant step) and Section 4 (normalized). Runs in key coordinates
    (:func:`maxmargin.core.span_gd.gd_in_span`), which for d <= nT are the coordinates of p itself, split into
    ``workers`` threads (numpy releases the GIL; every start's numbers are bitwise the same however it is split).
    """
    n, T, d = K.shape
    if d > n * T:
        raise ValueError(f"the basin runs need d <= nT (p in the keys' coordinates); got d = {d}, nT = {n * T}")

    def run(chunk: Array) -> tuple[Array, Array]:
        B = chunk.shape[0]
        batch = span_coordinates(np.broadcast_to(K, (B, n, T, d)), np.broadcast_to(gamma, (B, n, T)), chunk)
        traj = gd_in_span(batch, eta=variant.eta, n_iter=variant.n_iter, loss=loss, normalized=variant.normalized)
        p, _, z = final_weights(batch, traj)
        return p, z

    chunks = [c for c in np.array_split(p0, max(1, workers)) if c.shape[0]]
    with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
        parts = list(pool.map(run, chunks))
    return np.concatenate([p for p, _ in parts]), np.concatenate([z for _, z in parts])


def limit_labels(
    K: Array, gamma: Array, z: Array, *, saturation_tol: float, svm_tol: float
) -> tuple[NDArray[np.object_], NDArray[np.object_], NDArray[np.int64]]:
    """The census label of every run from its final logits z (B, n, T): (class, heading, alpha).

    Paper: Appendix E (the census): ``class`` is not_saturated, or the kind (gmm / lmm / neither / infeasible,
    Definitions 1-2) of the selected tokens alpha = argmax_t z_it; ``heading`` is that kind whether or not the
    softmax saturated (where an unsaturated run is heading; the label of :mod:`maxmargin.experiments.synthetic`).
    """
    alpha = z.argmax(axis=-1)
    unique, inverse = np.unique(alpha, axis=0, return_inverse=True)
    kinds = np.array([census.classify_selection(K, gamma, a, svm_tol)[0].kind for a in unique], dtype=object)
    heading = kinds[inverse.ravel()]
    label = np.where(census.is_saturated(z, saturation_tol), heading, "not_saturated").astype(object)
    return label, heading, alpha


def basin_table(
    K: Array,
    gamma: Array,
    p0: Array,
    variants: Sequence[GDVariant],
    *,
    loss: LossName,
    tols: Mapping[str, float],
    workers: int = 1,
) -> pd.DataFrame:
    """One row per (variant, start): the start in the key plane and the census label of where GD ends.

    Paper: Theorems 2-3 and Figure 1(b): the basins of the GMM and of the LMM. ``tols``: ``saturation_tol`` and
    ``svm_tol`` of the census.
    """
    frames = []
    bar = Progress(f"basin grid of {p0.shape[0]:,} starts: GD variant", len(variants), interval=0.0)
    for k, variant in enumerate(variants):
        p, z = run_gd(K, gamma, p0, variant, loss, workers)
        label, heading, alpha = limit_labels(K, gamma, z, **tols)
        bar.update(k + 1, variant.name)
        frame = {
            "variant": variant.name,
            "start": np.arange(p0.shape[0]),
            "p1": p0[:, 0],
            "p2": p0[:, 1],
            "class": label,
            "heading": heading,
            "alpha": [",".join(str(int(t)) for t in row) for row in alpha],
            "final_p1": p[:, 0],
            "final_p2": p[:, 1],
            "log10_unsaturation": census.log_unsaturation(z) / np.log(10.0),
        }
        frames.append(pd.DataFrame(frame, columns=BASIN_COLUMNS))
    return pd.concat(frames, ignore_index=True)


def arc_starts(direction: Array, R: float, angles_deg: Array) -> Array:
    """Starts at norm R in the key plane at the given angles (degrees) from ``direction``: the arc of C_{mu,R}.

    Paper: eq. (7)-(8); a start at angle theta has correlation cos(theta) with ``direction``, i.e. mu = 1 - cos.
    """
    theta = np.arctan2(direction[1], direction[0]) + np.deg2rad(angles_deg)
    p0 = np.zeros((theta.size, direction.shape[0]))
    p0[:, 0], p0[:, 1] = R * np.cos(theta), R * np.sin(theta)
    return p0


def cone_extent(angles_deg: Array, ok: NDArray[np.bool_]) -> tuple[float, float, int, bool]:
    """The largest cone around angle 0 whose every sampled angle is ``ok``: (mu, half-angle, n inside, all ok).

    Paper: eq. (7), mu = 1 - cos(half-angle). The cone stops short of the smallest |angle| that is not ok; when the
    angle 0 itself is not ok, mu = 0 with no start inside.
    """
    bad = np.abs(angles_deg[~ok])
    inside = np.abs(angles_deg) < (bad.min() if bad.size else np.inf)
    half = float(np.abs(angles_deg[inside]).max()) if inside.any() else 0.0
    return 1.0 - float(np.cos(np.deg2rad(half))), half, int(inside.sum()), bool(ok.all())


def radial_descent(K: Array, gamma: Array, direction: Array, radii: Array, angles_deg: Array, loss: LossName) -> Array:
    """Whether d/dr L(r u) < 0 at every radius (rows) and angle from ``direction`` (columns), u a unit vector.

    Paper: Theorem 3 ("C_{mu,R}(p_mm) does not contain any stationary points"): where the radial derivative
    <grad L(r u), u> is negative the gradient is not zero. Its sign comes from the direction of
    :func:`maxmargin.core.model.grad_p`, exact at any r.
    """
    u = arc_starts(direction, 1.0, angles_deg)  # (A, d), unit vectors
    p = radii[:, None, None] * u[None]  # (R, A, d)
    g = grad_p(K, gamma, p, loss)
    return (np.einsum("rad,ad->ra", g.scaled, u) < 0) & np.isfinite(g.log_scale)


def _cone_rows(variant: str, radii: Array, ok_per_radius: Sequence[NDArray[np.bool_]], angles_deg: Array) -> list:
    rows = []
    for R, ok in zip(radii, ok_per_radius, strict=True):
        mu, half, n_inside, all_ok = cone_extent(angles_deg, ok)
        rows.append({"variant": variant, "R": R, "mu_max": mu, "half_angle_deg": half, "n_starts": n_inside})
        rows[-1]["all_lmm"] = all_ok
    return rows


def cone_table(
    K: Array,
    gamma: Array,
    lmm: Array,
    variants: Sequence[GDVariant],
    cone: Mapping[str, Any],
    *,
    loss: LossName,
    tols: Mapping[str, float],
    workers: int = 1,
) -> pd.DataFrame:
    """Theorem 3's constants measured: per variant and radius R, the largest mu such that every sampled start of
    C_{mu,R}(p_mm) on the arc of radius R reaches the LMM ``lmm`` (census label lmm), and the same for the
    absence of stationary points (variant ``no_stationary_point``: d/dr L < 0 at every sampled point of
    C_{mu,R} on rays out to ``cone["r_max"]``; its ``n_starts`` counts angles).

    ``mu_cone`` is the running minimum of mu_max over the radii >= R, the mu for which the whole of C_{mu,R}
    (every norm >= R, eq. (8)) was sampled; ``min_final_corr`` the smallest final cosine with p_mm of the starts
    inside (how far GD converged in direction within its budget).
    """
    radii = np.geomspace(cone["radii"]["min"], cone["radii"]["max"], int(cone["radii"]["num"]))
    angles = linear_grid(-cone["max_half_angle_deg"], cone["max_half_angle_deg"], int(cone["n_arc"]))
    starts = np.concatenate([arc_starts(lmm, R, angles) for R in radii])
    rows = []
    bar = Progress(f"cone arcs of {starts.shape[0]:,} starts: GD variant", len(variants), interval=0.0)
    for k, variant in enumerate(variants):
        p, z = run_gd(K, gamma, starts, variant, loss, workers)
        label, _, _ = limit_labels(K, gamma, z, **tols)
        bar.update(k + 1, variant.name)
        ok = (label == "lmm").reshape(radii.size, angles.size)
        corr = cosine(p, lmm).reshape(radii.size, angles.size)
        part = _cone_rows(variant.name, radii, list(ok), angles)
        for row, corr_R in zip(part, corr, strict=True):
            inside = np.abs(angles) <= row["half_angle_deg"]
            row["min_final_corr"] = float(corr_R[inside].min()) if row["n_starts"] else np.nan
            row["eta"], row["n_iter"], row["normalized"] = variant.eta, variant.n_iter, variant.normalized
        rows += part
    rays = np.unique(np.concatenate([radii, np.geomspace(radii[0], cone["r_max"], int(cone["n_r"]))]))
    descent = radial_descent(K, gamma, lmm, rays, angles, loss)
    beyond = [descent[rays >= R].all(axis=0) for R in radii]
    rows += _cone_rows(NO_STATIONARY, radii, beyond, angles)
    table = pd.DataFrame(rows, columns=[c for c in CONE_COLUMNS if c not in ("mu_cone", "L_p_bound")])
    table["L_p_bound"] = smoothness_bound(K, gamma, loss)
    table["mu_cone"] = table.groupby("variant", sort=False)["mu_max"].transform(lambda s: s[::-1].cummin()[::-1])
    return table[CONE_COLUMNS]


def path_table(
    K: Array, gamma: Array, p0: Array, variants: Sequence[GDVariant], *, loss: LossName, tols: Mapping[str, float]
) -> pd.DataFrame:
    """The GD paths from the starts ``p0`` (Figure 1(b)'s six) per variant, at the recorded iterations.

    Paper: Figure 1(b). Runs :func:`maxmargin.core.gd.gradient_descent`, the function of the ``fig1b``
    experiment; ``class`` is the census label of the path's end.
    """
    frames = []
    for variant in variants:
        traj = gradient_descent(
            K, gamma, p0, eta=variant.eta, n_iter=variant.n_iter, loss=loss, normalized=variant.normalized
        )
        its = record_iterations(variant.n_iter)
        label, _, _ = limit_labels(K, gamma, np.einsum("ntd,bd->bnt", K, traj.p_final), **tols)
        p = traj.p[:, its, :]
        frames.append(
            pd.DataFrame(
                {
                    "variant": variant.name,
                    "run": np.repeat(np.arange(p0.shape[0]), its.size),
                    "iteration": np.tile(its, p0.shape[0]),
                    "p1": p[..., 0].ravel(),
                    "p2": p[..., 1].ravel(),
                    "class": np.repeat(label, its.size),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[PATH_COLUMNS]


def lmm_direction(K: Array, gamma: Array, svm_tol: float) -> Array:
    """The one LMM direction p_mm of a small instance (Definition 2), found by enumerating the token choices alpha."""
    n, T, _ = K.shape
    found = []
    for alpha in itertools.product(range(T), repeat=n):
        res, _ = census.classify_selection(K, gamma, np.array(alpha), svm_tol)
        if res.kind == "lmm":
            found.append(res.svm.direction)
    if len(found) != 1:
        raise ValueError(f"the basin study needs exactly one LMM direction; this instance has {len(found)}")
    return found[0]


@dataclass(frozen=True)
class BasinTables:
    """The tables of the basin study: ``basin`` (one row per variant and grid start), ``cone`` (Theorem 3's
    constants per variant and R), ``summary`` (starts per variant and label) and ``paths`` (the Figure 1(b)
    starts' paths)."""

    basin: pd.DataFrame
    cone: pd.DataFrame
    summary: pd.DataFrame
    paths: pd.DataFrame


def gd_variants(fig1: Mapping[str, Any], constant: Mapping[str, Any], smoothness: float) -> tuple[GDVariant, ...]:
    """Normalized GD with the authors' step (the ``synthetic.fig1`` block) and constant-step GD with
    eta = step_fraction / L_p (Theorem 3: eta <= 1/L_p, L_p bounded by :func:`smoothness_bound`)."""
    if not 0 < constant["step_fraction"] <= 1:
        raise ValueError(f"Theorem 3 needs eta <= 1/L_p: step_fraction must be in (0, 1], got {constant}")
    return (
        GDVariant("normalized", float(fig1["eta"]), int(fig1["n_iter"]), True),
        GDVariant("constant", constant["step_fraction"] / smoothness, int(constant["n_iter"]), False),
    )


def basin_study(
    basin: Mapping[str, Any], fig1: Mapping[str, Any], tols: Mapping[str, float], workers: int = 1
) -> BasinTables:
    """The whole basin study on the Figure 1(b) instance with the config blocks ``basin`` and ``synthetic.fig1``
    (the authors' step, iterations, loss and starts) and the census's ``saturation_tol`` and ``svm_tol``.

    Paper: Theorem 3, eq. (7)-(8), Figure 1(b).
    """
    instance = instances.fig1b()
    K, gamma, loss = instance.K, instance.gamma, fig1["loss"]
    d = K.shape[-1]
    variants = gd_variants(fig1, basin["constant"], smoothness_bound(K, gamma, loss))
    starts = grid_starts(basin["grid"]["p1"], basin["grid"]["p2"], d)
    table = basin_table(K, gamma, starts, variants, loss=loss, tols=tols, workers=workers)
    lmm = lmm_direction(K, gamma, tols["svm_tol"])
    cone = cone_table(K, gamma, lmm, variants, basin["cone"], loss=loss, tols=tols, workers=workers)
    fig1b_starts = instances.starts_in_key_plane(fig1["starts"], d)
    paths = path_table(K, gamma, fig1b_starts, variants, loss=loss, tols=tols)
    return BasinTables(table, cone, basin_summary(table), paths)


def basin_summary(table: pd.DataFrame) -> pd.DataFrame:
    """How many grid starts each GD variant takes to each label, and their share (the report's view of ``basin``)."""
    counts = table.groupby(["variant", "class"], sort=False).size().rename("n_starts").reset_index()
    counts["share"] = counts["n_starts"] / counts.groupby("variant")["n_starts"].transform("sum")
    return counts[registry.columns("basin_summary")]


def fig1b_agreement(basin: pd.DataFrame, paths: pd.DataFrame) -> pd.DataFrame:
    """Where a Figure 1(b) start is a node of the grid, the grid's run against that start's path, per variant.

    The grid runs in key coordinates (:func:`maxmargin.core.span_gd.gd_in_span`), the paths with
    :func:`maxmargin.core.gd.gradient_descent` (the ``fig1b`` experiment's function): the same GD, two codes.
    Columns: variant, run, p1, p2 (the start), on_grid, grid_class, path_class, max_abs_diff (final iterates).
    """
    rows = []
    for (variant, run), path in paths.groupby(["variant", "run"], sort=False):
        start, end = path.iloc[0], path.iloc[-1]
        grid = basin[(basin["variant"] == variant) & (basin["p1"] == start.p1) & (basin["p2"] == start.p2)]
        row = {"variant": variant, "run": run, "p1": start.p1, "p2": start.p2, "on_grid": len(grid) == 1}
        row["path_class"] = end["class"]
        row["grid_class"] = grid["class"].iloc[0] if len(grid) else ""
        row["max_abs_diff"] = (
            float(np.abs(grid[["final_p1", "final_p2"]].to_numpy()[0] - [end.p1, end.p2]).max())
            if len(grid)
            else np.nan
        )
        rows.append(row)
    return pd.DataFrame(rows)
