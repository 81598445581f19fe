"""Risks in log space, exact where the risk itself has rounded to its infimum.

Paper: (ERM) with a fixed head (eq. (2)) and with a trained head (Theorems 5-6). At large ||p|| the softmax
saturates and L(p) - inf L is of order e^{-||p|| gap}, far below float64 resolution next to L itself; these
functions return log(L - inf L) directly, so that two candidates keep their order (and a gradient its scale)
at any norm. Used by the regularization paths (:mod:`maxmargin.experiments.regpath`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from maxmargin.core.arguments import check_arrays
from maxmargin.core.loss import LossName, check_loss
from maxmargin.core.model import Array, Gradient, _token_scores
from maxmargin.core.softmax import _log_softmax


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

    Parameters
    ----------
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    gamma : ndarray, shape (..., n, T)
        Token scores gamma_it = Y_i v^T x_it (Definition 1).
    p : ndarray, shape (..., d)
        Attention weights.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).

    Returns
    -------
    ndarray, shape (...)
        log(L(p) - L*).

    Examples
    --------
    Far along p the risk has rounded to its infimum L* = l(1) (all the weight on the best token, of score 1); its
    excess, about e^-1200, has not:

    >>> import numpy as np
    >>> from maxmargin.core import log_excess_risk, risk
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> gamma = np.array([[1.0, 0.5, -1.5]])
    >>> p = np.array([800.0, -400.0])
    >>> bool(risk(K, gamma, p) == np.logaddexp(0.0, -1.0)), round(float(log_excess_risk(K, gamma, p)), 2)
    (True, -1200.21)
    """
    check_loss(loss)
    K, gamma, p = check_arrays(K=(K, "(..., n, T, d)"), gamma=(gamma, "(..., n, T)"), p=(p, "(..., d)"))
    return _log_excess_risk(K, gamma, p, loss)


def _log_excess_risk(K: Array, gamma: Array, p: Array, loss: LossName) -> Array:
    """:func:`log_excess_risk` without the argument check (the regularization path's ball solver)."""
    logs = _log_softmax(np.einsum("...ntd,...d->...nt", K, p))
    gamma = np.broadcast_to(gamma, logs.shape)
    best_score = gamma.max(axis=-1)
    gap = best_score[..., None] - gamma
    with np.errstate(divide="ignore"):
        log_delta = logsumexp(np.where(gap > 0, logs + np.log(np.where(gap > 0, gap, 1.0)), -np.inf), axis=-1)
    per_input = _log_excess_at(log_delta, best_score, loss)
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

    Parameters
    ----------
    X : ndarray, shape (..., n, T, d)
        Tokens.
    Y : ndarray, shape (..., n)
        Labels in {-1, +1}.
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    v : ndarray, shape (..., d)
        Head.
    p : ndarray, shape (..., d)
        Attention weights.
    loss : {'logistic', 'exponential'}
        The loss (positive).

    Returns
    -------
    ndarray, shape (...)
        log L(v, p).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import log_joint_risk
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> v = np.array([1000.0, 0.0])  # the margin v^T X^T S(X p) = 1000 x 0.5 at p = 0: l(500) = e^-500 (no underflow)
    >>> round(float(log_joint_risk(X, np.array([1.0]), X, v, np.zeros(2))), 4)
    -500.0
    """
    check_loss(loss)
    if loss == "correlation":
        raise ValueError("the joint risk is not positive for the correlation loss; use logistic or exponential")
    X, Y, K, v, p = check_arrays(
        X=(X, "(..., n, T, d)"), Y=(Y, "(..., n)"), K=(K, "(..., n, T, d)"), v=(v, "(..., d)"), p=(p, "(..., d)")
    )
    return _log_joint_risk(X, Y, K, v, p, loss)


def _log_joint_risk(X: Array, Y: Array, K: Array, v: Array, p: Array, loss: LossName) -> Array:
    """:func:`log_joint_risk` without the argument check (the regularization path's ball solver)."""
    attention = np.exp(_log_softmax(np.einsum("...ntd,...d->...nt", K, p)))
    margins = (attention * _token_scores(X, Y, v)).sum(axis=-1)
    per_input = _log_loss(margins, loss)
    return logsumexp(per_input, axis=-1) - np.log(per_input.shape[-1])


def log_gradient(gradient: Gradient, log_value: Array, basis: Array) -> Gradient:
    """The gradient of log(value), grad value / value, in the coordinates of an orthonormal ``basis`` (d, k).

    With ``value`` = L - inf L this is the scale-free gradient whose norm times R is the relative change of the
    excess risk across a ball of radius R: the scale that the KKT residual of
    :func:`maxmargin.core.ball.ball_kkt_residual` reads inside the ball.

    Parameters
    ----------
    gradient : Gradient
        grad value, ``scaled`` of shape (..., d).
    log_value : ndarray, shape (...)
        log value.
    basis : ndarray, shape (d, k)
        Orthonormal basis.

    Returns
    -------
    Gradient
        grad log value in the basis' coordinates, ``scaled`` of shape (..., k).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import Gradient, log_gradient
    >>> g = Gradient(scaled=np.array([3.0, 4.0]), log_scale=np.array(-1000.0))  # grad = (3, 4) e^-1000
    >>> out = log_gradient(g, np.array(-1000.0), np.eye(2))  # value = e^-1000: grad log value = (3, 4)
    >>> out.value
    array([3., 4.])
    """
    if not isinstance(gradient, Gradient):
        raise ValueError(f"gradient must be a Gradient (scaled, log_scale): got {type(gradient).__name__}")
    scaled, log_scale, log_value, basis = check_arrays(
        **{"gradient.scaled": (gradient.scaled, "(..., d)"), "gradient.log_scale": (gradient.log_scale, "float (...)")},
        log_value=(log_value, "float (...)"),
        basis=(basis, "(d, k)"),
    )
    return _log_gradient(Gradient(scaled, log_scale), log_value, basis)


def _log_gradient(gradient: Gradient, log_value: Array, basis: Array) -> Gradient:
    """:func:`log_gradient` without the argument check (the multistart solver's steps)."""
    return Gradient(gradient.scaled @ basis, gradient.log_scale - log_value)


__all__ = ["log_excess_risk", "log_gradient", "log_joint_risk"]
