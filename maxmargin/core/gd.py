"""Gradient-descent runners on the attention weights p, and jointly on (v, p).

Paper: eq. (3) (constant step), Section 4 / Appendix E (normalized GD, each block
normalized separately in the joint case). All runners are batched over independent
runs: ``p0`` of shape (B, d) runs B trajectories in one vectorised loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from tqdm.auto import tqdm

from maxmargin.core.arguments import check_arrays
from maxmargin.core.loss import LossName, check_loss
from maxmargin.core.model import Array, Gradient, _grad_p, _grad_v, _token_scores


@dataclass(frozen=True)
class Trajectory:
    """Iterates of a GD run, one row per start.

    ``p`` (and ``v``, for joint GD) has shape (B, n_iter + 1, d) for starts of shape (B, d) and (n_iter + 1, d) for
    one start of shape (d,); without the path (``keep_path=False``) only the last iterate is kept: (B, 1, d) or
    (1, d). ``skipped``, of shape (B,) or (), counts per run the steps whose gradient was exactly zero: they are
    skipped, never divided by.
    """

    p: Array
    skipped: NDArray[np.int64]
    v: Array | None = None

    @property
    def p_final(self) -> Array:
        return self.p[..., -1, :]

    @property
    def v_final(self) -> Array | None:
        return None if self.v is None else self.v[..., -1, :]


def _as_batch(x: Array) -> tuple[Array, bool]:
    x = np.asarray(x, dtype=np.float64)
    return (x[None], True) if x.ndim == 1 else (x.copy(), False)


def _finish(path: list[Array], squeeze: bool) -> Array:
    out = np.stack(path, axis=-2)
    return out[0] if squeeze else out


def _step_direction(g: Gradient, normalized: bool) -> tuple[Array, NDArray[np.bool_]]:
    """The step of GD before eta: grad / ||grad|| (normalized) or grad, and where the gradient is zero."""
    if normalized:
        return g.direction()
    return g.value, ~np.any(g.value != 0, axis=-1)


def gradient_descent(
    K: Array,
    gamma: Array,
    p0: Array,
    *,
    eta: float,
    n_iter: int,
    loss: LossName = "logistic",
    normalized: bool = True,
    keep_path: bool = True,
    progress: bool = False,
) -> Trajectory:
    """GD on L(p) for a fixed head v: p <- p - eta * g, g = grad or grad / ||grad||.

    Paper: eq. (3) with constant eta (Theorems 2-3) and the normalized variant of Section 4
    (Figure 4) and Appendix E. ``K`` and ``gamma`` are shared by every run, or given per run (a leading B axis).

    Parameters
    ----------
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    gamma : ndarray, shape (..., n, T)
        Token scores gamma_it = Y_i v^T x_it (Definition 1).
    p0 : ndarray, shape (B, d) or (d,)
        Starts, one run per row.
    eta : float
        Step size.
    n_iter : int
        Iterations.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).
    normalized : bool
        Normalized GD (grad / ||grad||) or constant-step GD.
    keep_path : bool
        Keep every iterate (else only the last).
    progress : bool
        Show a progress bar.

    Returns
    -------
    Trajectory
        ``p`` of shape (B, n_iter + 1, d), or (n_iter + 1, d) for one start ``p0`` of shape (d,); without the
        path only the last iterate, (B, 1, d) or (1, d). ``skipped`` (B,) or (): the steps with a zero gradient.

    Examples
    --------
    One input, three tokens; normalized GD from p = 0 turns towards the GMM direction (Theorem 2, n = 1):

    >>> import numpy as np
    >>> from maxmargin.core import cosine, gmm_direction, gradient_descent
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> gamma = np.array([[1.0, 0.5, -1.5]])
    >>> traj = gradient_descent(K, gamma, np.zeros(2), eta=0.1, n_iter=1000)
    >>> traj.p.shape, traj.p_final.shape
    ((1001, 2), (2,))
    >>> print(round(float(cosine(traj.p_final, gmm_direction(K, gamma).direction)), 4))
    0.9999
    >>> gradient_descent(K, gamma, np.zeros((4, 2)), eta=0.1, n_iter=10, keep_path=False).p.shape  # 4 starts
    (4, 1, 2)
    """
    K, gamma, p0, eta, n_iter = _checked_gd_arguments(K, gamma, p0, eta, n_iter, loss)
    p, squeeze = _as_batch(p0)
    path, skipped = _descend(K, gamma, p, eta, n_iter, loss, normalized, keep_path, progress)
    return Trajectory(p=_finish(path, squeeze), skipped=skipped[0] if squeeze else skipped)


def _checked_gd_arguments(
    K: Array, gamma: Array, p0: Array, eta: float, n_iter: int, loss: LossName
) -> tuple[Array, Array, Array, float, int]:
    """The arguments of :func:`gradient_descent`, checked on entry: the loss, the shapes, then eta > 0 and
    n_iter >= 0."""
    check_loss(loss)
    K, gamma, p0, eta, n_iter = check_arrays(
        K=(K, "(..., n, T, d)"),
        gamma=(gamma, "(..., n, T)"),
        p0=(p0, "(..., d)"),
        eta=(eta, "()"),
        n_iter=(n_iter, "int ()"),
    )
    if eta <= 0 or n_iter < 0:
        raise ValueError(f"need eta > 0 and n_iter >= 0, got eta={eta}, n_iter={n_iter}")
    return K, gamma, p0, eta, n_iter


def _descend(
    K: Array,
    gamma: Array,
    p: Array,
    eta: float,
    n_iter: int,
    loss: LossName,
    normalized: bool,
    keep_path: bool,
    progress: bool,
) -> tuple[list[Array], NDArray[np.int64]]:
    """The iterates of eq. (3), p_{k+1} = p_k - eta * g_k, g_k = grad L(p_k) (or grad L(p_k) / ||grad L(p_k)||,
    ``normalized``: Section 4), from the starts ``p`` (B, d): every iterate (``keep_path``) or the last alone, and
    per run the number of steps skipped for a zero gradient."""
    skipped = np.zeros(p.shape[:-1], dtype=np.int64)
    path = [p.copy()]
    for _ in tqdm(range(n_iter), disable=not progress, desc="GD", leave=False):
        step, zero = _step_direction(_grad_p(K, gamma, p, loss), normalized)
        skipped += zero
        p = p - eta * step
        if keep_path:
            path.append(p.copy())
    return (path if keep_path else [p]), skipped


def joint_normalized_gd(
    X: Array,
    Y: Array,
    K: Array,
    v0: Array,
    p0: Array,
    *,
    eta: float,
    n_iter: int,
    loss: LossName = "logistic",
    progress: bool = False,
) -> Trajectory:
    """Joint normalized GD on L(v, p), each block normalized separately.

    Paper: Section 3 / Figure 3 and Appendix E ("we normalize the gradient of p (and v)").
    v <- v - eta * grad_v / ||grad_v||, p <- p - eta * grad_p / ||grad_p||, both at the same iterate.

    Parameters
    ----------
    X : ndarray, shape (..., n, T, d)
        Tokens.
    Y : ndarray, shape (..., n)
        Labels in {-1, +1}.
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    v0 : ndarray, shape (B, d)
        Starts of the head.
    p0 : ndarray, shape (B, d)
        Starts of the attention weights.
    eta : float
        Step size of each block.
    n_iter : int
        Iterations.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).
    progress : bool
        Show a progress bar.

    Returns
    -------
    Trajectory
        ``p`` and ``v`` of shape (B, n_iter + 1, d), ``skipped`` (B,).

    Examples
    --------
    Two inputs of two tokens, labels +1 and -1; the head and the attention weights both move from 0:

    >>> import numpy as np
    >>> from maxmargin.core import joint_normalized_gd
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]])
    >>> traj = joint_normalized_gd(X, np.array([1.0, -1.0]), X, np.zeros(2), np.zeros(2), eta=0.1, n_iter=100)
    >>> traj.p.shape, traj.v.shape
    ((101, 2), (101, 2))
    >>> np.round(traj.v_final / np.linalg.norm(traj.v_final), 3)  # the head turns to the first coordinate
    array([1., 0.])
    """
    X, Y, K, v0, p0, eta, n_iter = _checked_joint_arguments(X, Y, K, v0, p0, eta, n_iter, loss)
    p, squeeze = _as_batch(p0)
    ps, vs, skipped = _joint_descend(X, Y, K, _heads_for(v0, p), p, eta, n_iter, loss, progress)
    return Trajectory(p=_finish(ps, squeeze), v=_finish(vs, squeeze), skipped=skipped[0] if squeeze else skipped)


def _checked_joint_arguments(
    X: Array, Y: Array, K: Array, v0: Array, p0: Array, eta: float, n_iter: int, loss: LossName
) -> tuple[Array, Array, Array, Array, Array, float, int]:
    """The arguments of :func:`joint_normalized_gd`, checked on entry: the loss, then the shapes."""
    check_loss(loss)
    return check_arrays(
        X=(X, "(..., n, T, d)"),
        Y=(Y, "(..., n)"),
        K=(K, "(..., n, T, d)"),
        v0=(v0, "(..., d)"),
        p0=(p0, "(..., d)"),
        eta=(eta, "()"),
        n_iter=(n_iter, "int ()"),
    )


def _heads_for(v0: Array, p: Array) -> Array:
    """The head starts ``v0`` as a batch like the attention starts ``p`` (B, d): one start (d,) is shared by every
    run (copied out of numpy's read-only broadcast view)."""
    v, _ = _as_batch(v0)
    return np.broadcast_to(v, p.shape[:-1] + v.shape[-1:]).copy()


def _joint_descend(
    X: Array,
    Y: Array,
    K: Array,
    v: Array,
    p: Array,
    eta: float,
    n_iter: int,
    loss: LossName,
    progress: bool,
) -> tuple[list[Array], list[Array], NDArray[np.int64]]:
    """The iterates of joint normalized GD from the starts ``v``, ``p`` (B, d): every p and every v, and per run the
    steps skipped for a zero gradient of either block. Both gradients are taken at the same iterate (v_k, p_k), the
    scores gamma of grad_p from v_k, before either block moves."""
    skipped = np.zeros(p.shape[:-1], dtype=np.int64)
    ps, vs = [p.copy()], [v.copy()]
    for _ in tqdm(range(n_iter), disable=not progress, desc="joint GD", leave=False):
        gp, zp = _grad_p(K, _token_scores(X, Y, v), p, loss).direction()
        gv, zv = _grad_v(X, K, Y, v, p, loss).direction()
        skipped += zp | zv
        p = p - eta * gp
        v = v - eta * gv
        ps.append(p.copy())
        vs.append(v.copy())
    return ps, vs, skipped


def _vector(x: Array | None, name: str) -> Array:
    """``x`` as float64, or a ValueError naming the infeasible max-margin problem a None direction comes from."""
    if x is None:
        raise ValueError(
            f"cosine: {name} is None, not a vector: the direction of a max-margin problem with no solution (its "
            "SVMResult.feasible is False: the selected tokens cannot be separated from the others)"
        )
    return np.asarray(x, dtype=np.float64)


def cosine(a: Array, b: Array) -> Array:
    """Cosine similarity along the last axis (the paper's correlation coefficient of two directions).

    Parameters
    ----------
    a : ndarray, shape (..., d)
        Vectors.
    b : ndarray, shape (..., d)
        Vectors (broadcast against ``a``).

    Returns
    -------
    ndarray, shape (...)
        cos(a, b).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import cosine
    >>> cosine(np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([2.0, 0.0]))
    array([1.        , 0.70710678])

    The direction of a max-margin problem without a solution is None, and is refused here by name:

    >>> cosine(np.array([1.0, 0.0]), None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cosine: b is None, not a vector: the direction of a max-margin problem with no solution (its ...
    """
    a, b = check_arrays(a=(_vector(a, "a"), "(..., d)"), b=(_vector(b, "b"), "(..., d)"))
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def record_iterations(n_iter: int, dense: int = 1000, n_log: int = 200) -> Array:
    """Iterations kept in the tables: all of the first ``dense``, then ``n_log`` log-spaced ones up to ``n_iter``.

    Parameters
    ----------
    n_iter : int
        The last iteration.
    dense : int
        Every iteration up to this one is kept.
    n_log : int
        Log-spaced iterations after it.

    Returns
    -------
    ndarray of int, shape (m,)
        The increasing iterations kept, 0 and ``n_iter`` included.

    Examples
    --------
    >>> from maxmargin.core import record_iterations
    >>> record_iterations(100, dense=3, n_log=4)
    array([  0,   1,   2,   3,   9,  31, 100])
    """
    n_iter, dense, n_log = check_arrays(n_iter=(n_iter, "int ()"), dense=(dense, "int ()"), n_log=(n_log, "int ()"))
    if n_iter <= dense:
        return np.arange(n_iter + 1)
    tail = np.unique(np.geomspace(dense, n_iter, n_log).astype(int))
    return np.unique(np.concatenate([np.arange(dense + 1), tail, [n_iter]]))
