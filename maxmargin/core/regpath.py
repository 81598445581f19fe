"""Regularization paths of the attention model: multi-start solves of the ball-constrained problems.

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
``n_at_best`` reports). The tables of the pipeline are built by :mod:`maxmargin.experiments.regpath`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.ball import key_difference_basis, span_basis
from maxmargin.core.logspace import _log_excess_risk, _log_joint_risk
from maxmargin.core.loss import LossName, check_loss
from maxmargin.core.model import Array, _grad_p, _grad_v, _risk, _token_scores
from maxmargin.core.multistart import MultistartSolve, multistart_path
from maxmargin.core.softmax import selected_tokens


def _unit_rows(directions: Array | None, basis: Array) -> Array:
    """Candidate directions projected on the subspace (coordinates), normalized; zero rows dropped."""
    if directions is None or len(directions) == 0:
        return np.zeros((0, basis.shape[1]))
    coordinates = np.asarray(directions, dtype=np.float64).reshape(-1, basis.shape[0]) @ basis
    norm = np.linalg.norm(coordinates, axis=-1)
    keep = norm > 1e-12
    return coordinates[keep] / norm[keep, None]


def radius_grid(min: float, max: float, num: int) -> Array:  # noqa: A002 (the config's key names)
    """The geometric grid of radii R (and r = R) on which the paths are solved (eq. (2), Theorems 5-6).

    Parameters
    ----------
    min, max : float
        The smallest and largest radius.
    num : int
        Number of radii.

    Returns
    -------
    ndarray, shape (num,)
        Geometric grid.

    Examples
    --------
    >>> from maxmargin.core import radius_grid
    >>> radius_grid(1.0, 100.0, 3)
    array([  1.,  10., 100.])
    """
    min, max, num = check_arrays(min=(min, "()"), max=(max, "()"), num=(num, "int ()"))  # noqa: A001
    if not 0 < min <= max or num < 1:
        raise ValueError(f"radius_grid needs 0 < min <= max and num >= 1: got min={min}, max={max}, num={num}")
    return np.geomspace(min, max, num)


def _check_radii(radii: Array) -> None:
    """Radii of a path: positive and increasing (their shape is checked with the other arguments)."""
    if np.any(radii <= 0) or np.any(np.diff(radii) <= 0):
        raise ValueError(f"radii must be positive and increasing: got {radii}")


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
    loss: LossName = "logistic",
    *,
    candidates: Array | None = None,
    n_random: int = 8,
    seed: int = 0,
    n_iter: int = 3000,
    tol: float = 1e-10,
) -> RegularizationPath:
    """The regularization path p(R) = argmin_{||p|| <= R} L(p) for a fixed head, on a grid of R.

    Paper: eq. (2) and Theorem 1 (p(R)/R -> p_mm*/||p_mm*||, the GMM direction). Starts at each R: see
    :func:`multistart_path`; ``candidates`` are directions such as the GMM and LMM; the lowest
    :func:`maxmargin.core.logspace.log_excess_risk` wins. The solver's defaults (8 random starts per R, 3000
    iterations at most, a KKT residual of 1e-10) solve the paper's instances with 60-230 iterations a start;
    the pipeline passes its own, block ``regpath`` of the config.

    Parameters
    ----------
    K : ndarray, shape (n, T, d)
        Keys.
    gamma : ndarray, shape (n, T)
        Token scores.
    radii : ndarray, shape (n_radii,)
        Increasing radii R.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).
    candidates : ndarray of shape (c, d) or None
        Candidate directions (GMM, LMM).
    n_random, seed, n_iter, tol
        Random starts per radius, their seed, solver iterations at most, KKT residual at which a start stops
        (:func:`multistart_path`).

    Returns
    -------
    RegularizationPath
        ``p`` (n_radii, d), ``loss``, ``kkt_residual_p`` (n_radii,), every start's end point ``ends_p``
        (n_radii, S, d).

    Examples
    --------
    Theorem 1 on the paper's Figure 1(b): p(R) / R turns to the GMM direction as R grows.

    >>> import numpy as np
    >>> from maxmargin.core import cosine, gmm_direction, radius_grid, regularization_path_p
    >>> K = np.array([[[-0.1, 1.0], [1.0, 0.0], [0.0, 0.0]]])
    >>> gamma = np.array([[1.0, 0.9, 0.0]])
    >>> path = regularization_path_p(K, gamma, radius_grid(1.0, 100.0, 5))
    >>> np.round(cosine(path.p, gmm_direction(K, gamma).direction), 3)
    array([0.97 , 0.999, 1.   , 1.   , 1.   ])
    """
    K, gamma, radii, candidates = _checked_p_arguments(K, gamma, radii, loss, candidates)
    solved = _solve_p_on_balls(K, gamma, radii, loss, candidates, n_random=n_random, seed=seed, n_iter=n_iter, tol=tol)
    return _path_of(radii, K, solved, lambda p: _risk(K, gamma, p, loss))


def _checked_p_arguments(
    K: Array, gamma: Array, radii: Array, loss: LossName, candidates: Array | None
) -> tuple[Array, Array, Array, Array | None]:
    """The arguments of :func:`regularization_path_p`, checked (ValueError naming the argument) and as arrays."""
    check_loss(loss)
    K, gamma, radii, *given = check_arrays(
        K=(K, "(n, T, d)"),
        gamma=(gamma, "(n, T)"),
        radii=(radii, "(n_radii,)"),
        **({} if candidates is None else {"candidates": (candidates, "(c, d)?")}),
    )
    _check_radii(radii)
    return K, gamma, radii, given[0] if given else None


def _solve_p_on_balls(
    K: Array,
    gamma: Array,
    radii: Array,
    loss: LossName,
    candidates: Array | None,
    *,
    n_random: int,
    seed: int,
    n_iter: int,
    tol: float,
) -> MultistartSolve:
    """Multi-start solves of eq. (2), min_{||p|| <= R} L(p) at every R of ``radii``, ranked by log(L(p) - inf L).

    The search runs in span{k_it - k_i0} (:func:`key_difference_basis`): the only directions of p the softmax
    sees, so a component of p outside it would change no risk and only spend the radius.
    """
    basis = key_difference_basis(K)
    return multistart_path(
        [basis],
        [_unit_rows(candidates, basis)],
        lambda points: [_grad_p(K, gamma, points[0], loss)],
        lambda points: _log_excess_risk(K, gamma, points[0], loss),
        radii,
        n_random=n_random,
        seed=seed,
        n_iter=n_iter,
        tol=tol,
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
    p_relax/||p_relax|| of eq. (10) in general). Both radii run along the same grid (r = R). Starts: see
    :func:`multistart_path`, with every (v, p) pair of ``candidates``; the lowest
    :func:`maxmargin.core.logspace.log_joint_risk` wins.

    Parameters
    ----------
    X : ndarray, shape (n, T, d)
        Tokens.
    Y : ndarray, shape (n,)
        Labels.
    K : ndarray, shape (n, T, d)
        Keys.
    radii : ndarray, shape (n_radii,)
        Increasing radii r = R.
    loss : {'logistic', 'exponential'}
        The loss.
    candidates : sequence of (ndarray of shape (d,), ndarray of shape (d,))
        Candidate (v, p) directions (:func:`maxmargin.core.directions.joint_candidates`).
    n_random, seed, n_iter, tol
        Random starts per radius, their seed, solver iterations at most, KKT residual at which a start stops
        (:func:`multistart_path`; the defaults as :func:`regularization_path_p`'s).

    Returns
    -------
    RegularizationPath
        ``p`` and ``v`` (n_radii, d), ``loss``, the KKT residuals (n_radii,), the end points of every start.

    Examples
    --------
    One input, label +1, two tokens: the head and the attention both turn to the first token (Theorem 5).

    >>> import numpy as np
    >>> from maxmargin.core import regularization_path_joint
    >>> X = np.array([[[1.0, 0.0], [0.0, 0.5]]])
    >>> path = regularization_path_joint(X, np.array([1.0]), X, np.array([1.0, 10.0, 100.0]))
    >>> np.round(path.v[-1] / 100, 3) + 0.0, path.selected[-1]
    (array([1., 0.]), array([0]))
    """
    X, Y, K, radii, candidates = _checked_joint_arguments(X, Y, K, radii, loss, candidates)
    solved = _solve_joint_on_balls(
        X, Y, K, radii, loss, candidates, n_random=n_random, seed=seed, n_iter=n_iter, tol=tol
    )
    return _path_of(radii, K, solved, None)


def _checked_joint_arguments(
    X: Array, Y: Array, K: Array, radii: Array, loss: LossName, candidates: Sequence[tuple[Array, Array]]
) -> tuple[Array, Array, Array, Array, list[tuple[Array, Array]]]:
    """The arguments of :func:`regularization_path_joint`, checked (ValueError naming the argument) and as arrays."""
    check_loss(loss)
    X, Y, K, radii, *pairs = check_arrays(
        X=(X, "(n, T, d)"),
        Y=(Y, "(n,)"),
        K=(K, "(n, T, d)"),
        radii=(radii, "(n_radii,)"),
        **{f"candidates[{j}][{b}]": (c[b], "(d,)") for j, c in enumerate(candidates) for b in range(2)},
    )
    _check_radii(radii)
    return X, Y, K, radii, list(zip(pairs[::2], pairs[1::2], strict=True))


def _solve_joint_on_balls(
    X: Array,
    Y: Array,
    K: Array,
    radii: Array,
    loss: LossName,
    candidates: Sequence[tuple[Array, Array]],
    *,
    n_random: int,
    seed: int,
    n_iter: int,
    tol: float,
) -> MultistartSolve:
    """Multi-start solves of min_{||v|| <= R, ||p|| <= R} L(v, p) at every R of ``radii``, ranked by log L(v, p).

    v is searched in span{x_it} and p in span{k_it - k_i0}: components outside them change no risk.
    """
    bases = [span_basis(X), key_difference_basis(K)]
    return multistart_path(
        bases,
        _joint_candidates(candidates, bases),
        lambda vp: [_grad_v(X, K, Y, vp[0], vp[1], loss), _grad_p(K, _token_scores(X, Y, vp[0]), vp[1], loss)],
        lambda points: _log_joint_risk(X, Y, K, points[0], points[1], loss),
        radii,
        n_random=n_random,
        seed=seed,
        n_iter=n_iter,
        tol=tol,
    )


def _joint_candidates(candidates: Sequence[tuple[Array, Array]], bases: Sequence[Array]) -> list[Array]:
    """The candidate (v, p) directions as unit coordinates in the bases of v and p, pair by pair."""
    units = [
        _unit_rows(np.array([c[block] for c in candidates]) if candidates else None, basis)
        for block, basis in enumerate(bases)
    ]
    if units[0].shape[0] != units[1].shape[0]:
        raise ValueError("every candidate (v, p) needs a non-zero v and p inside the spans the risk depends on")
    return units
