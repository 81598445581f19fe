"""Projected normalized gradient on products of Euclidean balls, with the KKT check of the ball constraint.

Paper: the constraint ||p|| <= R of eq. (2) and ||v|| <= r, ||p|| <= R of Theorems 5-6. The problems are
nonconvex and, at large radii, the risk of two nearby points differs far below float64 resolution
(e^{-R gap}), so a line search on the risk would stall. The solver therefore uses gradient *directions* only
(:class:`maxmargin.core.model.Gradient` keeps them exact at any norm) and halves its step whenever the
projected gradient reverses: a bisection along the sphere towards the KKT point
grad + mu x = 0, mu >= 0, mu (||x|| - R) = 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.model import Array, Gradient

ON_SPHERE_RTOL = 1e-12  # a point within this relative distance of the sphere is on it


def project_ball(x: Array, radius: float | Array) -> Array:
    """Euclidean projection onto the ball ||x|| <= radius (last axis).

    Parameters
    ----------
    x : ndarray, shape (..., d)
        Points.
    radius : float or ndarray of shape (...)
        Radii, >= 0 (a ValueError names a negative or NaN one; inf: no constraint).

    Returns
    -------
    ndarray, shape (..., d)
        The projections.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import project_ball
    >>> project_ball(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)  # the first is scaled onto the sphere
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    x, radius = check_arrays(x=(x, "(..., d)"), radius=(radius, "float (...)"))
    _check_radii("radius", radius)
    return _project_ball(x, radius)


def _check_radii(name: str, radii: Array | float) -> None:
    """A ValueError naming ``name`` where a radius is negative or NaN: no point lies in a ball of radius r < 0 (the
    projection would return -x r / ||x||, outside it); an infinite radius is no constraint."""
    bad = ~(np.asarray(radii) >= 0)
    if np.any(bad):
        raise ValueError(
            f"{name} must be a ball's radius, >= 0: got {float(np.asarray(radii)[bad].ravel()[0])} "
            f"({int(bad.sum())} of {bad.size} value(s) negative or NaN)"
        )


def _project_ball(x: Array, radius: float | Array) -> Array:
    """:func:`project_ball` without the argument check (the solver's steps)."""
    norm = np.linalg.norm(x, axis=-1, keepdims=True)
    radius = np.asarray(radius, dtype=np.float64)[..., None] if np.ndim(radius) else radius
    # the factor is chosen, not x times it: x * (inf / ||x||), for a point an infinite radius leaves, is never formed
    return x * np.where(norm > radius, radius / np.where(norm > 0, norm, 1.0), 1.0)


def _radial_split(x: Array, direction: Array) -> tuple[Array, Array, Array, Array]:
    """||x||, x/||x||, and the radial component <g, x/||x||> and tangential part g_perp of a direction g."""
    norm = np.linalg.norm(x, axis=-1)
    unit = x / np.where(norm > 0, norm, 1.0)[..., None]
    radial = (direction * unit).sum(-1)
    return norm, unit, radial, direction - radial[..., None] * unit


def ball_kkt_residual(x: Array, gradient: Gradient, radius: float) -> tuple[Array, Array]:
    """KKT residual of min_{||x|| <= radius} L at x, and whether the constraint is active.

    KKT: grad L(x) + mu x = 0, mu >= 0, mu (||x|| - radius) = 0. On the sphere the residual is
    relative, ||g_perp|| / ||g|| + max(0, <g, x> / (||g|| ||x||)) (the component of the gradient
    orthogonal to x, plus a wrong-signed multiplier); inside the ball it is radius * ||g||, which is
    scale-free when ``gradient`` is the gradient of log(L - inf L) (:func:`maxmargin.core.logspace.log_gradient`):
    the relative change of the excess risk across the ball. A gradient exactly zero gives 0.

    Parameters
    ----------
    x : ndarray, shape (..., d)
        Points in the ball.
    gradient : Gradient
        grad L at ``x`` (``scaled`` of shape (..., d)).
    radius : float
        The ball's radius.

    Returns
    -------
    tuple of ndarray, shapes (...) and (...)
        The residual and whether the constraint is active.

    Examples
    --------
    On the unit sphere a gradient pointing inwards along x is a KKT point (mu > 0); a tangential one is not:

    >>> import numpy as np
    >>> from maxmargin.core import Gradient, ball_kkt_residual
    >>> x = np.array([[1.0, 0.0], [1.0, 0.0]])
    >>> g = Gradient(scaled=np.array([[-2.0, 0.0], [0.0, 1.0]]), log_scale=np.zeros(2))
    >>> ball_kkt_residual(x, g, 1.0)
    (array([0., 1.]), array([ True,  True]))
    """
    if not isinstance(gradient, Gradient):
        raise ValueError(f"gradient must be a Gradient (scaled, log_scale): got {type(gradient).__name__}")
    x, scaled, log_scale, radius = check_arrays(
        x=(x, "(..., d)"),
        **{"gradient.scaled": (gradient.scaled, "(..., d)"), "gradient.log_scale": (gradient.log_scale, "float (...)")},
        radius=(radius, "()"),
    )
    _check_radii("radius", radius)
    return _ball_kkt_residual(x, Gradient(scaled, log_scale), radius)


def _ball_kkt_residual(x: Array, gradient: Gradient, radius: float) -> tuple[Array, Array]:
    """:func:`ball_kkt_residual` without the argument check (the solver's steps)."""
    direction, zero = gradient.direction()
    norm, _, radial, tangential = _radial_split(x, direction)
    on = norm >= radius * (1.0 - ON_SPHERE_RTOL)
    with np.errstate(under="ignore", over="ignore"):
        gnorm = np.linalg.norm(gradient.scaled, axis=-1) * np.exp(np.where(zero, 0.0, gradient.log_scale))
    res = np.where(on, np.linalg.norm(tangential, axis=-1) + np.maximum(radial, 0.0), radius * gnorm)
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


@dataclass
class _BlockState:
    """One block of the iterate: the point, its Rprop step (an angle on the sphere) and its previous move."""

    x: Array
    step: Array
    move: Array


def _step_block(block: _BlockState, gradient: Gradient, radius: float, running: Array, max_step: float) -> None:
    """One Rprop-style projected normalized-gradient move of one block (in place), for the running starts.

    On the sphere with the gradient pointing outwards (the constraint binds), x rotates by the angle ``step``
    along the tangential descent direction; otherwise x <- Proj(x - step R g/||g||). The step grows by 1.2
    while successive moves agree and halves when they reverse.
    """
    direction, zero = gradient.direction()
    norm, unit, radial, tangential = _radial_split(block.x, direction)
    on = (norm >= radius * (1.0 - ON_SPHERE_RTOL)) & (radial < 0)
    tnorm = np.linalg.norm(tangential, axis=-1)
    tangent = tangential / np.where(tnorm > 0, tnorm, 1.0)[:, None]
    move = np.where(on[:, None], tangent, direction)
    agree = (move * block.move).sum(-1)
    step = np.where(
        agree < 0, 0.5 * block.step, np.where(agree > 0, np.minimum(1.2 * block.step, max_step), block.step)
    )
    rotated = radius * (np.cos(step)[:, None] * unit - np.sin(step)[:, None] * tangent)
    inner = _project_ball(block.x - (step * radius)[:, None] * direction, radius)
    update = running & ~zero & ~((tnorm == 0) & on)
    block.x = np.where(update[:, None], np.where(on[:, None], rotated, inner), block.x)
    block.step = np.where(running, step, block.step)
    block.move = np.where(running[:, None], move, block.move)


def _kkt_of_blocks(
    blocks: Sequence[_BlockState], grads: Sequence[Gradient], radii: Sequence[float]
) -> tuple[Array, NDArray[np.bool_]]:
    """KKT residual and active constraint of every block (:func:`ball_kkt_residual`): two (n_blocks, S) arrays."""
    pairs = [_ball_kkt_residual(block.x, g, radius) for block, g, radius in zip(blocks, grads, radii, strict=True)]
    return np.array([r for r, _ in pairs], dtype=np.float64), np.array([a for _, a in pairs], dtype=bool)


def solve_on_balls(
    gradients: Callable[[list[Array]], list[Gradient]],
    x0: Sequence[Array],
    radii: Sequence[float],
    *,
    n_iter: int,
    tol: float,
    step: float = 1e-3,
    max_step: float = 0.5,
    min_step: float = 1e-16,
) -> BallSolve:
    """Minimise L over the product of balls ||x_b|| <= radii[b] from a batch of starts.

    Constraint of eq. (2) and of Theorems 5-6. Each block moves by its normalized gradient
    (:func:`_step_block`); the step starts small (``step``, so that a start inside a narrow basin, e.g. the LMM
    cone, stays in it) and adapts like Rprop, so the iteration bisects towards the KKT point using gradient
    directions only. A start stops once every block is on its sphere with KKT residual
    (:func:`ball_kkt_residual`) below ``tol``, or its steps fall below ``min_step``. ``gradients`` should return
    the gradient of log(L - inf L) (same direction as grad L) so that interior residuals are scale-free.

    Parameters
    ----------
    gradients : callable
        Points (one (S, d_b) array per block) -> their gradients (one Gradient per block).
    x0 : sequence of ndarray, shapes (S, d_b)
        S starts per block.
    radii : sequence of float
        Radius of each block's ball.
    n_iter : int
        Cap on iterations.
    tol : float
        KKT residual at which a start stops.
    step, max_step, min_step : float
        Initial, largest and smallest step (adapted per start).

    Returns
    -------
    BallSolve
        End points ``x`` (one (S, d_b) array per block), ``kkt_residual`` and ``active`` (n_blocks, S),
        ``iterations`` (S,).

    Examples
    --------
    min <c, x> on the unit disc, c = (1, 1), from two starts: both reach -c / ||c||.

    >>> import numpy as np
    >>> from maxmargin.core import Gradient, solve_on_balls
    >>> def gradients(points):
    ...     return [Gradient(scaled=np.ones_like(points[0]), log_scale=np.zeros(len(points[0])))]
    >>> solve = solve_on_balls(gradients, [np.array([[0.5, 0.0], [0.0, -0.2]])], [1.0], n_iter=500, tol=1e-9)
    >>> np.round(solve.x[0], 6), bool(solve.active.all())
    (array([[-0.707107, -0.707107],
           [-0.707107, -0.707107]]), True)
    """
    if not callable(gradients):
        raise ValueError(f"gradients must be a function of the points (one array per block): got {gradients!r}")
    x0, radii, step, budget = _checked_solve_arguments(x0, radii, n_iter, tol, step, max_step, min_step)
    return _iterate(gradients, _initial_blocks(x0, step), radii, budget)


@dataclass(frozen=True)
class _Budget:
    """When :func:`solve_on_balls` stops a start (``n_iter``, ``tol``, ``min_step``) and its largest step."""

    n_iter: int
    tol: float
    max_step: float
    min_step: float


def _checked_solve_arguments(
    x0: Sequence[Array], radii: Sequence[float], n_iter: int, tol: float, step: float, max_step: float, min_step: float
) -> tuple[list[Array], Array, float, _Budget]:
    """The starts, radii, initial step and budget of :func:`solve_on_balls`, checked (ValueError naming one)."""
    if isinstance(x0, np.ndarray) or len(x0) == 0:
        raise ValueError("x0 must be a non-empty sequence of arrays, one of shape (S, d_b) per block")
    *x0, radii, n_iter, tol, step, max_step, min_step = check_arrays(
        **{f"x0[{b}]": (x, f"(S, d{b})") for b, x in enumerate(x0)},
        radii=(radii, f"({len(x0)},)"),
        n_iter=(n_iter, "int ()"),
        tol=(tol, "()"),
        step=(step, "()"),
        max_step=(max_step, "()"),
        min_step=(min_step, "()"),
    )
    _check_radii("radii", radii)
    return x0, radii, step, _Budget(n_iter, tol, max_step, min_step)


def _initial_blocks(x0: Sequence[Array], step: float) -> list[_BlockState]:
    """Every block at its starts, each start with the initial step and no previous move."""
    n_starts = np.shape(x0[0])[0]
    return [_BlockState(np.array(x, dtype=np.float64), np.full(n_starts, step), np.zeros(np.shape(x))) for x in x0]


def _iterate(
    gradients: Callable[[list[Array]], list[Gradient]], blocks: list[_BlockState], radii: Array, budget: _Budget
) -> BallSolve:
    """Move every running start (in place) until each has stopped or the budget of iterations is spent."""
    n_starts = blocks[0].step.shape[0]
    running = np.ones(n_starts, dtype=bool)
    iterations = np.full(n_starts, budget.n_iter, dtype=np.int64)
    for it in range(budget.n_iter + 1):
        grads = gradients([block.x for block in blocks])
        residual, active = _kkt_of_blocks(blocks, grads, radii)
        done = _stopped(blocks, residual, active, budget)
        iterations[running & done] = it
        running &= ~done
        if not running.any() or it == budget.n_iter:
            break
        for block, gradient, radius in zip(blocks, grads, radii.tolist(), strict=True):
            _step_block(block, gradient, radius, running, budget.max_step)
    return BallSolve(x=[block.x for block in blocks], kkt_residual=residual, active=active, iterations=iterations)


def _stopped(
    blocks: Sequence[_BlockState], residual: Array, active: NDArray[np.bool_], budget: _Budget
) -> NDArray[np.bool_]:
    """Which starts are done: every block a KKT point on its sphere, or every block's step collapsed."""
    # Inside the ball the risk can be flat to e^{-R gap} (a plateau, not a minimum), so only the
    # on-sphere KKT test or a collapsed step ends a start.
    steps = np.array([block.step for block in blocks])
    return np.all((residual <= budget.tol) & active, axis=0) | np.all(steps < budget.min_step, axis=0)


def span_basis(vectors: Array, rtol: float = 1e-12) -> Array:
    """Orthonormal basis (d, k) of the span of the given vectors (rows of a (..., d) array).

    The risk depends on p only through K_i p up to a shift per input, i.e. through its component in
    span{k_it - k_is}; on v only through span{x_it}. Components outside only spend norm budget, so
    the constrained optimum lies in these subspaces (and the search runs there).

    Parameters
    ----------
    vectors : ndarray, shape (..., d)
        Vectors spanning the subspace.
    rtol : float
        Singular values below ``rtol`` times the largest are dropped.

    Returns
    -------
    ndarray, shape (d, k)
        Orthonormal columns.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import span_basis
    >>> np.abs(span_basis(np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]])))  # one direction, d = 3
    array([[1.],
           [0.],
           [0.]])
    """
    vectors, rtol = check_arrays(vectors=(vectors, "(..., d)"), rtol=(rtol, "()"))
    rows = vectors.reshape(-1, vectors.shape[-1])
    _, singular, right = np.linalg.svd(rows, full_matrices=False)
    rank = int(np.sum(singular > rtol * max(singular.max(initial=0.0), 1e-300)))
    return right[:rank].T


def key_difference_basis(K: Array) -> Array:
    """Basis of span{k_it - k_i0}: the directions of p the softmax sees (Section 2).

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys.

    Returns
    -------
    ndarray, shape (d, k)
        Orthonormal basis of span{k_it - k_i0}.

    Examples
    --------
    Shifting every key of an input by the same vector changes no softmax: only their differences count.

    >>> import numpy as np
    >>> from maxmargin.core import key_difference_basis
    >>> K = np.array([[[5.0, 1.0, 0.0], [5.0, 2.0, 0.0]]])  # one difference, (0, 1, 0)
    >>> np.abs(key_difference_basis(K))
    array([[0.],
           [1.],
           [0.]])
    """
    (K,) = check_arrays(K=(K, "(n, T, d)"))
    return span_basis(K[:, 1:, :] - K[:, :1, :])


__all__ = ["BallSolve", "ball_kkt_residual", "key_difference_basis", "project_ball", "solve_on_balls", "span_basis"]
