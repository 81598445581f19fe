"""Multi-start solves of ball-constrained problems along a grid of radii: the solver behind the regularization paths.

Paper: eq. (2) and Theorems 5-6. Each radius is solved from several starts (the previous radius's solution
rescaled, the caller's candidate directions, random directions) by the ball solver of :mod:`maxmargin.core.ball`,
and the start with the lowest log(L - inf L) (:mod:`maxmargin.core.logspace`) is kept. The paths themselves are
in :mod:`maxmargin.core.regpath`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.ball import BallSolve, solve_on_balls
from maxmargin.core.gd import cosine
from maxmargin.core.logspace import _log_gradient
from maxmargin.core.model import Array, Gradient
from maxmargin.core.progress import Progress

__all__ = ["SAME_POINT_COSINE", "MultistartSolve", "multistart_path"]

SAME_POINT_COSINE = 1 - 1e-8  # two end points whose cosine exceeds this (in every block) are the same KKT point


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


def _random_units(rng: np.random.Generator, n: int, k: int) -> Array:
    z = rng.standard_normal((n, k))
    return z / np.linalg.norm(z, axis=-1, keepdims=True)


def _pick_best(log_excess: Array, kkt: Array) -> int:
    """Lowest risk; among risks equal to 1e-12 (relative, in log space), the smallest KKT residual."""
    best = np.nanmin(log_excess)
    tied = np.flatnonzero(log_excess <= best + 1e-12 * max(1.0, abs(best)))
    return int(tied[np.argmin(kkt[tied])])


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

    Parameters
    ----------
    bases : sequence of ndarray, shapes (d_b, k_b)
        Orthonormal basis of each block's subspace.
    candidates : sequence of ndarray, shapes (c, k_b)
        Candidate unit directions per block (coordinates).
    gradients : callable
        Points (one (S, d_b) array per block) -> their gradients.
    log_objective : callable
        Points -> log(L - inf L), shape (S,).
    radii : ndarray, shape (n_radii,)
        Increasing radii.
    n_random : int
        Random starts per radius.
    seed : int
        Seed of the random starts.
    n_iter : int
        Cap on solver iterations.
    tol : float
        KKT residual at which a start stops.

    Returns
    -------
    MultistartSolve
        Every start's end point per radius (one (n_radii, S, d_b) array per block) and the kept one.

    Examples
    --------
    L(x) = log(1 + e^{-x_1}) in the plane (inf L = 0): on each disc its minimiser is x = (R, 0).

    >>> import numpy as np
    >>> from maxmargin.core import Gradient, multistart_path
    >>> def gradients(points):
    ...     x = points[0]
    ...     return [Gradient(np.stack([-1 / (1 + np.exp(x[:, 0])), 0 * x[:, 0]], axis=-1), np.zeros(len(x)))]
    >>> def log_objective(points):
    ...     return np.log(np.logaddexp(0.0, -points[0][:, 0]))
    >>> solve = multistart_path([np.eye(2)], [np.zeros((0, 2))], gradients, log_objective, np.array([1.0, 4.0]),
    ...                         n_random=3, seed=0, n_iter=500, tol=1e-9)
    >>> np.round(solve.best_point(0), 6)
    array([[1., 0.],
           [4., 0.]])
    """
    if not (callable(gradients) and callable(log_objective)):
        raise ValueError("gradients and log_objective must be functions of the points (one array per block)")
    bases, candidates, radii, settings = _checked_arrays(bases, candidates, radii, n_random, seed, n_iter, tol)
    return _solve_radii(bases, candidates, gradients, log_objective, radii, settings)


@dataclass(frozen=True)
class _Settings:
    """The random starts of every radius (``n_random``, ``seed``) and when its solver stops (``n_iter``, ``tol``)."""

    n_random: int
    seed: int
    n_iter: int
    tol: float


def _checked_arrays(
    bases: Sequence[Array],
    candidates: Sequence[Array],
    radii: Array,
    n_random: int,
    seed: int,
    n_iter: int,
    tol: float,
) -> tuple[list[Array], list[Array], Array, _Settings]:
    """The arrays and settings of :func:`multistart_path`, checked (ValueError naming the argument)."""
    if len(bases) == 0 or len(bases) != len(candidates):
        raise ValueError(f"bases and candidates need one array per block: got {len(bases)} and {len(candidates)}")
    *arrays, radii, n_random, seed, n_iter, tol = check_arrays(
        **{f"bases[{b}]": (basis, f"(d{b}, k{b})") for b, basis in enumerate(bases)},
        **{f"candidates[{b}]": (c, f"(c{b}, k{b})?") for b, c in enumerate(candidates)},
        radii=(radii, "(n_radii,)"),
        n_random=(n_random, "int ()"),
        seed=(seed, "int ()"),
        n_iter=(n_iter, "int ()"),
        tol=(tol, "()"),
    )
    return arrays[: len(bases)], arrays[len(bases) :], radii, _Settings(n_random, seed, n_iter, tol)


def _solve_radii(
    bases: Sequence[Array],
    candidates: Sequence[Array],
    gradients: Callable[[list[Array]], list[Gradient]],
    log_objective: Callable[[list[Array]], Array],
    radii: Array,
    settings: _Settings,
) -> MultistartSolve:
    """The solves at every radius in turn, each one's warm start the kept point of the radius before."""
    rng = np.random.default_rng(settings.seed)
    warm = [_random_units(rng, 1, basis.shape[1]) for basis in bases]
    coordinate_gradients = _in_coordinates(bases, gradients, log_objective)
    records = []
    bar = Progress("regularization path: radius", len(radii), interval=0.0)
    for j, radius in enumerate(radii):
        starts = _starts(rng, radius, warm, candidates, settings.n_random)
        solve = solve_on_balls(
            coordinate_gradients, starts, [radius] * len(bases), n_iter=settings.n_iter, tol=settings.tol
        )
        record = _radius_record(solve, bases, log_objective)
        warm = [z[record.best][None] / np.linalg.norm(z[record.best]) for z in solve.x]
        records.append(record)
        _report_radius(bar, j, radius, record)
    return _gathered(records, len(bases))


def _starts(
    rng: np.random.Generator, radius: float, warm: Sequence[Array], candidates: Sequence[Array], n_random: int
) -> list[Array]:
    """The starts at one radius, per block: the warm start, the candidates, ``n_random`` random directions."""
    return [
        radius * np.vstack([w, c, _random_units(rng, n_random, w.shape[-1])])
        for w, c in zip(warm, candidates, strict=True)
    ]


@dataclass(frozen=True)
class _RadiusRecord:
    """What :func:`multistart_path` keeps of the solve at one radius."""

    ends: list[Array]  # every start's end point per block, (S, d_b)
    log_excess: Array  # (S,)
    solve: BallSolve
    best: int
    n_at_best: int


def _in_coordinates(
    bases: Sequence[Array],
    gradients: Callable[[list[Array]], list[Gradient]],
    log_objective: Callable[[list[Array]], Array],
) -> Callable[[list[Array]], list[Gradient]]:
    """The gradient of log(L - inf L) in the coordinates of each block's basis, from grad L in the original ones."""

    def coordinate_gradients(coordinates: list[Array]) -> list[Gradient]:
        points = [z @ basis.T for z, basis in zip(coordinates, bases, strict=True)]
        log_value = log_objective(points)
        return [_log_gradient(g, log_value, basis) for g, basis in zip(gradients(points), bases, strict=True)]

    return coordinate_gradients


def _radius_record(
    solve: BallSolve, bases: Sequence[Array], log_objective: Callable[[list[Array]], Array]
) -> _RadiusRecord:
    """The end points of one radius's solve, the start kept, and how many starts ended at the same point."""
    ends = [z @ basis.T for z, basis in zip(solve.x, bases, strict=True)]
    log_excess = log_objective(ends)
    best = _pick_best(log_excess, solve.kkt_residual.max(axis=0))
    same = np.all([cosine(z, z[best]) > SAME_POINT_COSINE for z in solve.x], axis=0)
    return _RadiusRecord(ends, log_excess, solve, best, int(same.sum()))


def _report_radius(bar: Progress, j: int, radius: float, record: _RadiusRecord) -> None:
    bar.update(
        j + 1,
        f"R {radius:.4g}, log(L - inf L) {record.log_excess[record.best]:.3f}, KKT residual "
        f"{record.solve.kkt_residual.max(axis=0)[record.best]:.1e}, {record.n_at_best}/{record.log_excess.size} "
        "starts at the optimum",
    )


def _gathered(records: Sequence[_RadiusRecord], n_blocks: int) -> MultistartSolve:
    return MultistartSolve(
        ends=[np.array([r.ends[b] for r in records]) for b in range(n_blocks)],
        log_excess=np.array([r.log_excess for r in records]),
        kkt_residual=np.stack([r.solve.kkt_residual for r in records], axis=1),
        active=np.stack([r.solve.active for r in records], axis=1),
        best=np.array([r.best for r in records]),
        n_at_best=np.array([r.n_at_best for r in records]),
        iterations=np.array([int(r.solve.iterations.max()) for r in records]),
    )
