"""The attention model f(X) = v^T X^T softmax(X W^T p), its risk and exact gradients.

Paper: eq. (5) for the model, (ERM) for the risk, Definition 1 for the token scores; the softmax S itself, its
log and the tokens it selects: :mod:`.softmax`.

Every function takes arrays with optional leading batch axes ("..."): independent runs
(different starts, different data) are one call, not a Python loop.

Why the gradient is not written as ``K^T (diag(s) - s s^T) X v``: once the softmax
saturates (logit gaps above ~37 in float64) ``1 - s_alpha`` rounds to 0, the selected
token's term ``s_alpha (h_alpha - s^T h)`` cancels to exactly 0 and the gradient points
the wrong way; past gaps of ~745 every non-selected probability underflows and the
gradient vanishes. Here the softmax Jacobian is expanded around the most-attended token
and the common factor ``exp(log s_second)`` is kept in log space, so the direction of the
gradient is exact at any ||p||.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.loss import LossName, _log_neg_loss_derivative, _loss_value, check_loss
from maxmargin.core.softmax import _attention, _log_softmax

Array = NDArray[np.float64]


def keys(X: Array, W: Array) -> Array:
    """Key embeddings K_i = X_i W^T.

    Paper: eq. (5).

    Parameters
    ----------
    X : ndarray, shape (..., T, d)
        Tokens.
    W : ndarray, shape (d, d)
        Key-query matrix.

    Returns
    -------
    ndarray, shape (..., T, d)
        Keys X W^T.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import keys
    >>> keys(np.array([[1.0, 2.0]]), np.array([[0.0, 1.0], [1.0, 0.0]]))  # W swaps the coordinates
    array([[2., 1.]])
    """
    X, W = check_arrays(X=(X, "(..., T, d)"), W=(W, "(d, d)"))
    return np.einsum("...td,ed->...te", X, W)


def token_scores(X: Array, Y: Array, v: Array) -> Array:
    """Token scores gamma_it = Y_i v^T x_it, shape (..., n, T).

    Paper: Definition 1.

    Parameters
    ----------
    X : ndarray, shape (..., n, T, d)
        Tokens.
    Y : ndarray, shape (..., n)
        Labels in {-1, +1}.
    v : ndarray, shape (..., d)
        Head.

    Returns
    -------
    ndarray, shape (..., n, T)
        gamma.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import token_scores
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])  # one input, T = 3 tokens in d = 2
    >>> token_scores(X, Y=np.array([1.0]), v=np.array([1.0, 0.5]))
    array([[ 1. ,  0.5, -1.5]])
    """
    X, Y, v = check_arrays(X=(X, "(..., n, T, d)"), Y=(Y, "(..., n)"), v=(v, "(..., d)"))
    return _token_scores(X, Y, v)


def _token_scores(X: Array, Y: Array, v: Array) -> Array:
    """:func:`token_scores` without the argument check (the loops of :mod:`.gd` and :mod:`.regpath`)."""
    return Y[..., None] * np.einsum("...ntd,...d->...nt", X, v)


def attention_features(X: Array, s: Array) -> Array:
    """Attention features r_i = X_i^T S(K_i p), shape (..., n, d).

    Paper: Section 3, x^p_i = X_i^T S(K_i p), the inputs of (SVM).

    Parameters
    ----------
    X : ndarray, shape (..., n, T, d)
        Tokens.
    s : ndarray, shape (..., n, T)
        Attention probabilities S(K_i p).

    Returns
    -------
    ndarray, shape (..., n, d)
        r_i.

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import attention_features
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> attention_features(X, np.array([[0.75, 0.25]]))
    array([[0.75, 0.25]])
    """
    X, s = check_arrays(X=(X, "(..., n, T, d)"), s=(s, "(..., n, T)"))
    return np.einsum("...ntd,...nt->...nd", X, s)


@dataclass(frozen=True)
class Gradient:
    """A gradient kept as ``scaled * exp(log_scale)`` so that its direction survives underflow.

    ``scaled`` has shape (..., dim) and entries of order one; ``log_scale`` has shape (...).
    """

    scaled: Array
    log_scale: Array

    @property
    def value(self) -> Array:
        """The gradient itself (may underflow to 0 in deep saturation)."""
        with np.errstate(under="ignore"):
            return self.scaled * np.exp(self.log_scale)[..., None]

    def direction(self) -> tuple[Array, Array]:
        """Unit gradient direction and a mask of rows whose gradient is exactly zero."""
        norm = np.linalg.norm(self.scaled, axis=-1, keepdims=True)
        zero = (norm[..., 0] == 0) | ~np.isfinite(self.log_scale)
        safe = np.where(zero[..., None], 1.0, norm)
        return np.where(zero[..., None], 0.0, self.scaled / safe), zero


def _centered_attention(logits: Array, gamma: Array) -> tuple[Array, Array, Array]:
    """Margins u_i = S(z_i)^T gamma_i and c_it = s_it (gamma_it - u_i) / exp(L_i), with L_i in log space.

    L_i is the log-probability of the second most attended token. Expanding around the
    most attended token m avoids the cancellation in gamma_m - u_i (see the module docstring).
    Returns (u, c_scaled, L).
    """
    logs = _log_softmax(logits)
    gamma = np.broadcast_to(gamma, logs.shape)
    T = logs.shape[-1]
    top = logs.argmax(axis=-1)[..., None]
    is_top = np.arange(T) == top
    others = np.where(is_top, -np.inf, logs)
    L = others.max(axis=-1)
    finite = np.isfinite(L)
    Lsafe = np.where(finite, L, 0.0)
    with np.errstate(under="ignore"):
        rho = np.where(is_top, 0.0, np.exp(others - Lsafe[..., None]))  # s_t / s_second, <= 1
        s_top = np.take_along_axis(np.exp(logs), top, axis=-1)
    g_top = np.take_along_axis(gamma, top, axis=-1)
    delta = gamma - g_top  # gamma_t - gamma_m, exact
    A = (rho * delta).sum(axis=-1, keepdims=True)  # (u - gamma_m) / exp(L)
    eL = np.where(finite, np.exp(Lsafe), 0.0)[..., None]
    u = g_top[..., 0] + (eL * A)[..., 0]
    c = np.where(is_top, -s_top * A, rho * (delta - eL * A))
    c = np.where(finite[..., None], c, 0.0)
    return u, c, np.where(finite, L, -np.inf)


def risk(K: Array, gamma: Array, p: Array, loss: LossName = "logistic") -> Array:
    """Training risk L(p) = 1/n sum_i l(sum_t S(K_i p)_t gamma_it) for a fixed head v.

    Paper: (ERM) with Y_i v^T X_i^T S(K_i p) = S(K_i p)^T gamma_i (Definition 1).

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
        L(p).

    Examples
    --------
    At p = 0 every token gets weight 1/T, and the margin is the mean score:

    >>> import numpy as np
    >>> from maxmargin.core import risk
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> gamma = np.array([[1.0, 0.5, -1.5]])
    >>> print(round(float(risk(K, gamma, np.zeros(2))), 4))  # log(2): the mean score is 0
    0.6931
    >>> print(round(float(risk(K, gamma, np.array([2.0, -1.0]))), 4))
    0.3516
    """
    check_loss(loss)
    K, gamma, p = check_arrays(K=(K, "(..., n, T, d)"), gamma=(gamma, "(..., n, T)"), p=(p, "(..., d)"))
    return _risk(K, gamma, p, loss)


def _risk(K: Array, gamma: Array, p: Array, loss: LossName) -> Array:
    """:func:`risk` without the argument check (the regularization path's radii)."""
    u, _, _ = _centered_attention(np.einsum("...ntd,...d->...nt", K, p), gamma)
    return _loss_value(u, loss).mean(axis=-1)


def grad_p(K: Array, gamma: Array, p: Array, loss: LossName = "logistic") -> Gradient:
    """Exact gradient of L(p) w.r.t. the attention weights p, direction-safe under saturation.

    Paper: eq. (15a), grad L(p) = 1/n sum_i l'(u_i) K_i^T S'(K_i p) gamma_i with
    S'(z) = diag(s) - s s^T; here K_i^T S' gamma_i = sum_t c_it k_it.

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
    Gradient
        grad L(p): ``scaled`` of shape (..., d), ``log_scale`` of shape (...).

    Examples
    --------
    ``value`` is the gradient itself; ``direction()`` its unit vector, exact even where ``value`` underflows:

    >>> import numpy as np
    >>> from maxmargin.core import grad_p
    >>> K = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    >>> gamma = np.array([[1.0, 0.5, -1.5]])
    >>> np.round(grad_p(K, gamma, np.zeros(2)).value, 4)
    array([-0.4167, -0.3333])
    >>> g = grad_p(K, gamma, np.array([800.0, -400.0]))  # deep in saturation: the value underflows to 0
    >>> unit, zero = g.direction()
    >>> bool(np.all(g.value == 0)), np.round(unit, 4), bool(zero)
    (True, array([-0.9398, -0.3417]), False)
    """
    check_loss(loss)
    K, gamma, p = check_arrays(K=(K, "(..., n, T, d)"), gamma=(gamma, "(..., n, T)"), p=(p, "(..., d)"))
    return _grad_p(K, gamma, p, loss)


def _grad_p(K: Array, gamma: Array, p: Array, loss: LossName) -> Gradient:
    """:func:`grad_p` without the argument check (the loops of :mod:`.gd` and :mod:`.regpath`)."""
    n = gamma.shape[-2]
    u, c, L = _centered_attention(np.einsum("...ntd,...d->...nt", K, p), gamma)
    logw = _log_neg_loss_derivative(u, loss) + L  # (..., n)
    M = logw.max(axis=-1)
    Msafe = np.where(np.isfinite(M), M, 0.0)
    with np.errstate(under="ignore"):
        w = np.exp(logw - Msafe[..., None])
    scaled = -np.einsum("...n,...nt,...ntd->...d", w, c, K) / n
    return Gradient(scaled=scaled, log_scale=M)


def grad_v(X: Array, K: Array, Y: Array, v: Array, p: Array, loss: LossName = "logistic") -> Gradient:
    """Gradient of L(v, p) w.r.t. the head v: 1/n sum_i l'(u_i) Y_i X_i^T S(K_i p).

    Paper: (ERM), Section 3 (the head is a linear classifier on the attention features).

    Parameters
    ----------
    X : ndarray, shape (..., n, T, d)
        Tokens.
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    Y : ndarray, shape (..., n)
        Labels in {-1, +1}.
    v : ndarray, shape (..., d)
        Head.
    p : ndarray, shape (..., d)
        Attention weights.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).

    Returns
    -------
    Gradient
        grad_v L(v, p): ``scaled`` of shape (..., d), ``log_scale`` of shape (...).

    Examples
    --------
    At p = 0 the attention features are the inputs' mean tokens, and the head's gradient is -l'(0) = 1/2 times
    the mean of -Y_i r_i:

    >>> import numpy as np
    >>> from maxmargin.core import grad_v
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> grad_v(X, X, np.array([1.0]), np.zeros(2), np.zeros(2)).value
    array([-0.25, -0.25])
    """
    check_loss(loss)
    X, K, Y, v, p = check_arrays(
        X=(X, "(..., n, T, d)"), K=(K, "(..., n, T, d)"), Y=(Y, "(..., n)"), v=(v, "(..., d)"), p=(p, "(..., d)")
    )
    return _grad_v(X, K, Y, v, p, loss)


def _grad_v(X: Array, K: Array, Y: Array, v: Array, p: Array, loss: LossName) -> Gradient:
    """:func:`grad_v` without the argument check (the loops of :mod:`.gd` and :mod:`.regpath`)."""
    n = Y.shape[-1]
    logits = np.einsum("...ntd,...d->...nt", K, p)
    gamma = _token_scores(X, Y, v)
    u, _, _ = _centered_attention(logits, gamma)
    logw = _log_neg_loss_derivative(u, loss)
    M = logw.max(axis=-1)
    w = np.exp(logw - M[..., None])
    r = np.einsum("...ntd,...nt->...nd", X, np.exp(_log_softmax(logits)))
    scaled = -np.einsum("...n,...n,...nd->...d", w, Y, r) / n
    return Gradient(scaled=scaled, log_scale=M)


def model_output(X: Array, K: Array, v: Array, p: Array) -> Array:
    """f(X_i) = v^T X_i^T S(K_i p) for every input, shape (..., n).

    Paper: eq. (5).

    Parameters
    ----------
    X : ndarray, shape (..., n, T, d)
        Tokens.
    K : ndarray, shape (..., n, T, d)
        Keys K_i = X_i W^T of the n inputs' T tokens.
    v : ndarray, shape (..., d)
        Head.
    p : ndarray, shape (..., d)
        Attention weights.

    Returns
    -------
    ndarray, shape (..., n)
        f(X_i).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import model_output
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> model_output(X, X, v=np.array([1.0, -1.0]), p=np.zeros(2))  # equal weights: v^T (x_1 + x_2) / 2
    array([0.])
    """
    X, K, v, p = check_arrays(X=(X, "(..., n, T, d)"), K=(K, "(..., n, T, d)"), v=(v, "(..., d)"), p=(p, "(..., d)"))
    return np.einsum("...nd,...d->...n", np.einsum("...ntd,...nt->...nd", X, _attention(K, p)), v)
