"""The attention model f(X) = v^T X^T softmax(X W^T p), its risk and exact gradients.

Paper: eq. (5) for the model, (ERM) for the risk, Definition 1 for the token scores.

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
from typing import Literal

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
LossName = Literal["logistic", "exponential", "correlation"]
LOSSES: tuple[str, ...] = ("logistic", "exponential", "correlation")


def check_loss(loss: str) -> None:
    """Raise a ValueError naming the allowed losses."""
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; allowed: {', '.join(LOSSES)}")


def loss_value(u: Array, loss: LossName) -> Array:
    """The loss l(u) evaluated at margins u = Y_i f(X_i), without overflow for the logistic loss.

    Paper: Assumption A examples: logistic log(1 + e^-u), exponential e^-u, correlation -u.
    """
    check_loss(loss)
    u = np.asarray(u, dtype=np.float64)
    if loss == "logistic":
        return np.logaddexp(0.0, -u)
    if loss == "exponential":
        with np.errstate(over="ignore"):
            return np.exp(-u)
    return -u


def log_neg_loss_derivative(u: Array, loss: LossName) -> Array:
    """log(-l'(u)), the log-magnitude of the (negative) loss derivative; finite for every finite u.

    Paper: Assumption A (l strictly decreasing, so -l' > 0).
    """
    check_loss(loss)
    u = np.asarray(u, dtype=np.float64)
    if loss == "logistic":
        return -np.logaddexp(0.0, u)  # -l'(u) = 1 / (1 + e^u)
    if loss == "exponential":
        return -u
    return np.zeros_like(u)


def keys(X: Array, W: Array) -> Array:
    """Key embeddings K_i = X_i W^T.

    Paper: eq. (5).
    """
    return np.einsum("...td,ed->...te", X, W)


def token_scores(X: Array, Y: Array, v: Array) -> Array:
    """Token scores gamma_it = Y_i v^T x_it, shape (..., n, T).

    Paper: Definition 1.
    """
    return np.asarray(Y)[..., None] * np.einsum("...ntd,...d->...nt", X, v)


def log_softmax(z: Array) -> Array:
    """Log-softmax along the token axis, exact for arbitrarily large logit gaps."""
    z = np.asarray(z, dtype=np.float64)
    zmax = z.max(axis=-1, keepdims=True)
    return z - zmax - np.log(np.exp(z - zmax).sum(axis=-1, keepdims=True))


def attention(K: Array, p: Array) -> Array:
    """Softmax attention S(K_i p) over the T tokens of every input, shape (..., n, T).

    Paper: eq. (5), the map S(X W^T p).
    """
    return np.exp(log_softmax(np.einsum("...ntd,...d->...nt", K, p)))


def selected_tokens(K: Array, p: Array) -> NDArray[np.int64]:
    """alpha_i = argmax_t (K_i p)_t, the token the softmax selects as ||p|| grows (Section 2), shape (..., n).

    Taken on the logits, not on S(K_i p): a saturated softmax rounds several entries to the same float.
    """
    return np.einsum("...ntd,...d->...nt", np.asarray(K), np.asarray(p)).argmax(axis=-1)


def log_non_selected_mass(K: Array, p: Array) -> Array:
    """log(1 - max_t S(K_i p)_t) per input, accurate when 1 - s is far below float64 epsilon.

    Paper: Appendix E's saturation test, mean_i s_{i alpha_i} >= 1 - 1e-5.
    """
    logs = log_softmax(np.einsum("...ntd,...d->...nt", K, p))
    top = logs.argmax(axis=-1)
    others = np.where(np.arange(logs.shape[-1]) == top[..., None], -np.inf, logs)
    omax = others.max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = omax[..., 0] + np.log(np.exp(others - omax).sum(axis=-1))
    return np.where(np.isfinite(omax[..., 0]), lse, -np.inf)


def attention_features(X: Array, s: Array) -> Array:
    """Attention features r_i = X_i^T S(K_i p), shape (..., n, d).

    Paper: Section 3, x^p_i = X_i^T S(K_i p), the inputs of (SVM).
    """
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
    logs = log_softmax(logits)
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
    """
    u, _, _ = _centered_attention(np.einsum("...ntd,...d->...nt", K, p), gamma)
    return loss_value(u, loss).mean(axis=-1)


def grad_p(K: Array, gamma: Array, p: Array, loss: LossName = "logistic") -> Gradient:
    """Exact gradient of L(p) w.r.t. the attention weights p, direction-safe under saturation.

    Paper: eq. (15a), grad L(p) = 1/n sum_i l'(u_i) K_i^T S'(K_i p) gamma_i with
    S'(z) = diag(s) - s s^T; here K_i^T S' gamma_i = sum_t c_it k_it.
    """
    n = gamma.shape[-2]
    u, c, L = _centered_attention(np.einsum("...ntd,...d->...nt", K, p), gamma)
    logw = log_neg_loss_derivative(u, loss) + L  # (..., n)
    M = logw.max(axis=-1)
    Msafe = np.where(np.isfinite(M), M, 0.0)
    with np.errstate(under="ignore"):
        w = np.exp(logw - Msafe[..., None])
    scaled = -np.einsum("...n,...nt,...ntd->...d", w, c, K) / n
    return Gradient(scaled=scaled, log_scale=M)


def grad_v(X: Array, K: Array, Y: Array, v: Array, p: Array, loss: LossName = "logistic") -> Gradient:
    """Gradient of L(v, p) w.r.t. the head v: 1/n sum_i l'(u_i) Y_i X_i^T S(K_i p).

    Paper: (ERM), Section 3 (the head is a linear classifier on the attention features).
    """
    n = Y.shape[-1]
    logits = np.einsum("...ntd,...d->...nt", K, p)
    gamma = token_scores(X, Y, v)
    u, _, _ = _centered_attention(logits, gamma)
    logw = log_neg_loss_derivative(u, loss)
    M = logw.max(axis=-1)
    w = np.exp(logw - M[..., None])
    r = attention_features(X, np.exp(log_softmax(logits)))
    scaled = -np.einsum("...n,...n,...nd->...d", w, Y, r) / n
    return Gradient(scaled=scaled, log_scale=M)


def model_output(X: Array, K: Array, v: Array, p: Array) -> Array:
    """f(X_i) = v^T X_i^T S(K_i p) for every input, shape (..., n).

    Paper: eq. (5).
    """
    return np.einsum("...nd,...d->...n", attention_features(X, attention(K, p)), v)
