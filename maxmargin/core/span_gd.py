"""Normalized GD on many attention problems at once, in the coordinates of their keys' span.

Paper: Appendix E (normalized GD on p, W = I, from p(0)); the gradient is eq. (15a).

Why it is fast and exact:

* **Key coordinates.** The gradient (eq. 15a) is a combination of the n*T keys, so
  p(t) = p(0) + sum_it a_it k_it and the logits z = K p evolve as z <- z - eta G beta / ||K^T beta||
  with the n*T x n*T Gram matrix G = K K^T. One GD step costs O((nT)^2), whatever d is.
* **Exact gradient.** beta is :func:`maxmargin.core.model.grad_p` expressed on the keys, expanded around
  the most attended token with its scale in log space, so its direction is exact at any ||p||.
* **Bitwise reproducible.** The loops use no BLAS (elementwise numpy with a fixed reduction order, batch
  axis last), so a problem's numbers do not depend on the other problems of its batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import NDArray

from maxmargin.core.arguments import check_arrays
from maxmargin.core.loss import LossName, _log_neg_loss_derivative, check_loss
from maxmargin.core.model import Array


@dataclass(frozen=True)
class SpanBatch:
    """A batch of B attention problems in key coordinates (everything GD and (ATT-SVM) need).

    ``keys`` (B, n, T, r) are the keys in an orthonormal basis of their span (r = min(d, nT);
    the raw keys themselves when d <= nT), ``gram`` (B, nT, nT) = K K^T, ``gamma`` (B, n, T) the
    token scores (Definition 1), ``q0`` (B, r) the span part of p(0) and ``p0_perp`` (B,) the norm
    of its part orthogonal to the keys, which GD never changes (the gradient lies in the span).
    """

    keys: Array
    gram: Array
    gamma: Array
    q0: Array
    p0_perp: Array
    trials: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def logits0(self) -> Array:
        """z(0) = K p(0), shape (B, n, T)."""
        return np.einsum("bntr,br->bnt", self.keys, self.q0)

    def doubled(self) -> SpanBatch:
        """The batch twice over (numpy's loop order, hence the last bits, changes for a batch axis of length 1)."""
        return SpanBatch(*(np.concatenate([getattr(self, f.name)] * 2) for f in fields(self)))


def _check_batch(batch: SpanBatch, **more: tuple[object, str]) -> None:
    """The argument check of a function of a batch: a SpanBatch whose arrays agree (and ``more`` with them)."""
    if not isinstance(batch, SpanBatch):
        raise ValueError(f"batch must be a SpanBatch (span_coordinates): got {type(batch).__name__}")
    check_arrays(
        **{
            "batch.keys": (batch.keys, "(B, n, T, r)"),
            "batch.gram": (batch.gram, "(B, m, m)"),
            "batch.gamma": (batch.gamma, "(B, n, T)"),
            "batch.q0": (batch.q0, "(B, r)"),
            "batch.p0_perp": (batch.p0_perp, "(B,)"),
        },
        **more,
    )


def span_coordinates(K: Array, gamma: Array, p0: Array, trials: Sequence[int] | None = None) -> SpanBatch:
    """Key coordinates of a batch of problems with keys K (B, n, T, d), scores gamma (B, n, T), starts p0 (B, d).

    For d <= nT the keys are kept as they are. Otherwise a QR factorisation of [K^T, p0] (d x (nT+1))
    gives at once the keys in an orthonormal basis of their span (R^T), the span part of p0 and the
    norm of the rest (the last column of R), without cancellation.

    Parameters
    ----------
    K : ndarray, shape (B, n, T, d)
        Keys of B problems.
    gamma : ndarray, shape (B, n, T)
        Token scores.
    p0 : ndarray, shape (B, d)
        Starts.
    trials : sequence of int, optional
        The problems' trial numbers (kept with the batch).

    Returns
    -------
    SpanBatch
        Keys in span coordinates (B, n, T, r), the span part of p0 (B, r) and the norm of the rest (B,).

    Examples
    --------
    d = 4 > nT = 2: the keys get 2 coordinates, and the part of p0 outside their span is kept as its norm.

    >>> import numpy as np
    >>> from maxmargin.core import span_coordinates
    >>> K = np.array([[[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]]])  # B = 1, n = 1, T = 2, d = 4
    >>> batch = span_coordinates(K, np.array([[[1.0, 0.0]]]), np.array([[1.0, 1.0, 3.0, 4.0]]))
    >>> batch.keys.shape, np.abs(batch.q0), batch.p0_perp
    ((1, 1, 2, 2), array([[1., 1.]]), array([5.]))
    """
    args = {"K": (K, "(B, n, T, d)"), "gamma": (gamma, "(B, n, T)"), "p0": (p0, "(B, d)")}
    K, gamma, p0, *given = check_arrays(**args, **({} if trials is None else {"trials": (trials, "int (B,)")}))
    B, n, T, d = K.shape
    m = n * T
    if d <= m:
        keys, q0, perp = K.copy(), p0.copy(), np.zeros(B)
    else:
        aug = np.concatenate([K.reshape(B, m, d), p0[:, None, :]], axis=1).transpose(0, 2, 1)  # (B, d, m + 1)
        R = np.linalg.qr(aug, mode="r")  # (B, m + 1, m + 1), one LAPACK call per trial
        keys = np.ascontiguousarray(R[:, :m, :m].transpose(0, 2, 1)).reshape(B, n, T, m)
        q0 = np.ascontiguousarray(R[:, :m, m])
        perp = np.abs(R[:, m, m])
    red = keys.reshape(B, m, -1)
    gram = np.einsum("bir,bjr->bij", red, red)
    ids = given[0] if given else np.arange(B, dtype=np.int64)
    gamma = np.ascontiguousarray(gamma)
    return SpanBatch(keys=keys, gram=gram, gamma=gamma, q0=q0, p0_perp=perp, trials=ids)


# Ratios s_t / s_second below exp(-700) ~ 1e-304 are flushed to 0 (float64 underflows them from exp(-745) on
# anyway): negligible against the leading ratio 1 of every input, and numpy's vectorised exp then never takes
# its slow path for underflowing results.
_LOG_TINY = -700.0


def _first_max(z: Array, zmax: Array) -> NDArray[np.bool_]:
    """Mask of the first index t attaining max_t z_t along axis 0 (np.argmax's tie rule), for token-major z."""
    is_top = np.empty(z.shape, dtype=bool)
    seen = np.zeros(zmax.shape, dtype=bool)
    for t in range(z.shape[0]):
        hit = z[t] == zmax
        np.logical_and(hit, ~seen, out=is_top[t])
        seen |= hit
    return is_top


def _key_gradient_token_major(z: Array, gamma: Array, loss: LossName) -> tuple[Array, Array]:
    """:func:`key_gradient` on token-major arrays z, gamma (T, n, ...): reductions over tokens are then
    elementwise operations between T slices, which numpy vectorises across the batch."""
    n = z.shape[1]
    zmax = z.max(axis=0)
    is_top = _first_max(z, zmax)
    others = np.where(is_top, -np.inf, z - zmax)  # log(s_t / s_top), -inf at the top token
    lead = others.max(axis=0)  # log(s_second / s_top), finite for finite z
    with np.errstate(under="ignore"):
        x = others - lead  # log(s_t / s_second) <= 0; -inf at the top token
        rho = np.where(x < _LOG_TINY, 0.0, np.exp(np.maximum(x, _LOG_TINY)))  # s_t / s_second; 0 at the top
        rho_sum = rho.sum(axis=0)  # >= 1
        log_top = -np.log1p(np.exp(lead) * rho_sum)  # log s_top
        log_second = lead + log_top  # L_i = log s_second
        g_top = np.where(is_top, gamma, 0.0).sum(axis=0)
        delta = gamma - g_top  # gamma_t - gamma_top, exact
        A = (rho * delta).sum(axis=0)  # (u - gamma_top) / s_second
        e_second = np.exp(log_second)
        u = g_top + e_second * A  # margins u_i = s_i^T gamma_i
        c = np.where(is_top, -np.exp(log_top) * A, rho * (delta - e_second * A))  # s_t (gamma_t - u) / s_second
        logw = _log_neg_loss_derivative(u, loss) + log_second  # log(-l'(u_i) s_i,second), (n, ...)
        scale = logw.max(axis=0)
        w = np.exp(logw - scale) * (-1.0 / n)
    return c * w, scale


def key_gradient(z: Array, gamma: Array, loss: LossName) -> tuple[Array, Array]:
    """Exact gradient of L(p) on the keys: grad L(p) = exp(log_scale) * sum_it beta_it k_it, from z = K p.

    Paper: eq. (15a), grad L(p) = 1/n sum_i l'(u_i) K_i^T (diag(s_i) - s_i s_i^T) gamma_i. As in
    :func:`maxmargin.core.model.grad_p`, the softmax Jacobian is expanded around the most attended token m_i:
    with rho_it = s_it / s_i,second (<= 1) and delta_it = gamma_it - gamma_im, the coefficient of k_it is
    s_it (gamma_it - u_i) = s_i,second rho_it (delta_it - s_i,second A_i) (t != m_i) and
    -s_i,second s_im A_i (t = m_i), A_i = sum_t rho_it delta_it; the common factors s_i,second and
    -l'(u_i) stay in log space, so the direction of the gradient is exact at any ||p||.
    z, gamma: (..., n, T). Returns beta (..., n, T) of order one and log_scale (...).

    Parameters
    ----------
    z : ndarray, shape (..., n, T)
        Logits K_i p.
    gamma : ndarray, shape (..., n, T)
        Token scores.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).

    Returns
    -------
    tuple of ndarray, shapes (..., n, T) and (...)
        beta and log_scale.

    Examples
    --------
    At z = 0 the coefficient of k_t is l'(u) s_t (gamma_t - u) / n, with s_t = u = 1/2 and l'(1/2) = -0.3775:

    >>> import numpy as np
    >>> from maxmargin.core import key_gradient
    >>> beta, log_scale = key_gradient(np.zeros((1, 2)), np.array([[1.0, 0.0]]), "logistic")
    >>> np.round(beta * np.exp(log_scale), 4)
    array([[-0.0944,  0.0944]])
    """
    check_loss(loss)
    z, gamma = check_arrays(z=(z, "(..., n, T)"), gamma=(gamma, "(..., n, T)"))
    gamma = np.broadcast_to(gamma, z.shape)
    tm = (-1, -2)
    beta, scale = _key_gradient_token_major(np.moveaxis(z, tm, (0, 1)), np.moveaxis(gamma, tm, (0, 1)), loss)
    return np.moveaxis(beta, (0, 1), tm), scale


@dataclass(frozen=True)
class SpanTrajectory:
    """End of a batched GD run in key coordinates: p(T) = p(0) + K^T a, logits z = K p(T)."""

    a: Array  # (B, nT)
    z: Array  # (B, n, T)
    skipped: NDArray[np.int64]  # steps with an exactly zero gradient (skipped, never divided by)


def normalized_gd_in_span(batch: SpanBatch, *, eta: float, n_iter: int, loss: LossName) -> SpanTrajectory:
    """Normalized GD p <- p - eta grad L(p) / ||grad L(p)|| on every problem of the batch at once.

    Paper: Appendix E (normalized GD); :func:`gd_in_span` with ``normalized=True``.

    Parameters
    ----------
    batch : SpanBatch
        B problems in span coordinates (:func:`span_coordinates`).
    eta : float
        Step size.
    n_iter : int
        Iterations.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).

    Returns
    -------
    SpanTrajectory
        Final coefficients ``a`` (B, n T), logits ``z`` (B, n, T) and ``skipped`` steps (B,).

    Examples
    --------
    >>> import numpy as np
    >>> from maxmargin.core import final_weights, normalized_gd_in_span, span_coordinates
    >>> K = np.array([[[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]]])  # B = 1 problem
    >>> batch = span_coordinates(K, np.array([[[1.0, 0.5, -1.5]]]), np.zeros((1, 2)))
    >>> traj = normalized_gd_in_span(batch, eta=0.1, n_iter=100, loss="logistic")
    >>> q, p_norm, z = final_weights(batch, traj)
    >>> np.round(p_norm, 4)  # 100 steps of length 0.1, turning at first
    array([9.5479])
    """
    _check_batch(batch, eta=(eta, "()"), n_iter=(n_iter, "int ()"))
    return gd_in_span(batch, eta=eta, n_iter=n_iter, loss=loss, normalized=True)


def gd_in_span(batch: SpanBatch, *, eta: float, n_iter: int, loss: LossName, normalized: bool) -> SpanTrajectory:
    """GD p <- p - eta g on every problem of the batch at once, g = grad L(p) / ||grad L(p)|| or grad L(p).

    Paper: Appendix E (normalized GD) and eq. (3) with a constant step (Theorem 3). In key coordinates the step is
    a <- a - eta c beta, z <- z - eta c G beta with c = 1 / ||K^T beta|| (normalized; ||K^T beta||^2 = beta^T G
    beta) or c = exp(log_scale) of :func:`key_gradient` (constant step); a zero step (zero gradient, or a gradient
    that underflows) is skipped (counted), never divided by. Arrays are kept token-major with the batch last,
    (T, n, B), so that every operation is vectorised across problems.

    Parameters
    ----------
    batch : SpanBatch
        B problems in span coordinates (:func:`span_coordinates`).
    eta : float
        Step size.
    n_iter : int
        Iterations.
    loss : {'logistic', 'exponential', 'correlation'}
        The loss l (Assumption A).
    normalized : bool
        Normalized GD (c = 1 / ||grad||) or constant-step GD.

    Returns
    -------
    SpanTrajectory
        Final coefficients ``a`` (B, n T), logits ``z`` (B, n, T) and ``skipped`` steps (B,).

    Examples
    --------
    Constant-step GD on two copies of one problem: the same end point for each.

    >>> import numpy as np
    >>> from maxmargin.core import gd_in_span, span_coordinates
    >>> K = np.array([[[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]]] * 2)  # B = 2
    >>> batch = span_coordinates(K, np.array([[[1.0, 0.5, -1.5]]] * 2), np.zeros((2, 2)))
    >>> traj = gd_in_span(batch, eta=1.0, n_iter=50, loss="logistic", normalized=False)
    >>> bool(np.array_equal(traj.z[0], traj.z[1])), traj.skipped
    (True, array([0, 0]))
    """
    check_loss(loss)
    _check_batch(batch, eta=(eta, "()"), n_iter=(n_iter, "int ()"))
    if batch.gamma.shape[0] == 1:
        # One problem alone would take numpy's other loop order: run it twice over, so that its last bits are those
        # it has in any batch.
        traj = gd_in_span(batch.doubled(), eta=eta, n_iter=n_iter, loss=loss, normalized=normalized)
        return SpanTrajectory(a=traj.a[:1], z=traj.z[:1], skipped=traj.skipped[:1])
    B, n, T = batch.gamma.shape
    gram, gamma, z = _token_major(batch)
    a, z, skipped = _gd_token_major(gram, gamma, z, eta=eta, n_iter=n_iter, loss=loss, normalized=normalized)
    a = a.reshape(T, n, B).transpose(2, 1, 0).reshape(B, n * T)
    return SpanTrajectory(a=np.ascontiguousarray(a), z=np.ascontiguousarray(z.transpose(2, 1, 0)), skipped=skipped)


def _token_major(batch: SpanBatch) -> tuple[Array, Array, Array]:
    """The batch's Gram matrix (m, m, B), token scores and logits z(0) (T, n, B), token-major with the batch last and
    contiguous: each step is then elementwise across problems, with no BLAS (bitwise reproducible)."""
    B, n, T = batch.gamma.shape
    order = (np.arange(n)[None, :] * T + np.arange(T)[:, None]).ravel()  # token-major j = t n + i -> i T + t
    gram = np.ascontiguousarray(batch.gram[:, order][:, :, order].transpose(1, 2, 0))  # (m, m, B)
    gamma = np.ascontiguousarray(batch.gamma.transpose(2, 1, 0))  # (T, n, B)
    z = np.ascontiguousarray(batch.logits0.transpose(2, 1, 0))
    return gram, gamma, z


def _gd_token_major(
    gram: Array, gamma: Array, z: Array, *, eta: float, n_iter: int, loss: LossName, normalized: bool
) -> tuple[Array, Array, NDArray[np.int64]]:
    """``n_iter`` GD steps in key coordinates on token-major arrays (:func:`_token_major`): the coefficients a
    (m, B), the logits z (T, n, B), updated in place, and the steps skipped (B,)."""
    T, n, B = z.shape
    m = n * T
    a = np.zeros((m, B))
    skipped = np.zeros(B, dtype=np.int64)
    for _ in range(n_iter):
        beta, scale = _key_gradient_token_major(z, gamma, loss)
        beta = beta.reshape(m, B)
        h = np.einsum("ijb,jb->ib", gram, beta)  # K K^T beta
        sq = (beta * h).sum(axis=0)  # ||K^T beta||^2
        step, ok = _step_length(sq, scale, eta, normalized)
        z -= (h * step).reshape(T, n, B)
        a -= beta * step
        skipped += ~ok
    return a, z, skipped


def _step_length(sq: Array, scale: Array, eta: float, normalized: bool) -> tuple[Array, NDArray[np.bool_]]:
    """eta c per problem, c = 1 / ||K^T beta|| (``sq`` = ||K^T beta||^2) or exp(log_scale), and where the step is
    taken: a zero gradient, or a constant step that underflows, gives a zero step, never a division by zero."""
    if normalized:
        ok = sq > 0.0
        return eta / np.sqrt(np.where(ok, sq, 1.0)) * ok, ok
    with np.errstate(under="ignore"):
        step = eta * np.exp(scale) * (sq > 0.0)
    return step, step > 0.0


def final_weights(batch: SpanBatch, traj: SpanTrajectory) -> tuple[Array, Array, Array]:
    """The end point of GD: its span coordinates q (B, r), ||p|| (B,) and logits z = K p (B, n, T).

    Parameters
    ----------
    batch : SpanBatch
        The problems.
    traj : SpanTrajectory
        Their GD run.

    Returns
    -------
    tuple of ndarray, shapes (B, r), (B,) and (B, n, T)
        q, ||p|| and z.

    Examples
    --------
    With no step taken the end point is the start, p0 = (3, 4):

    >>> import numpy as np
    >>> from maxmargin.core import final_weights, gd_in_span, span_coordinates
    >>> K, gamma = np.array([[[[1.0, 0.0], [0.0, 1.0]]]]), np.array([[[1.0, 0.0]]])
    >>> batch = span_coordinates(K, gamma, np.array([[3.0, 4.0]]))
    >>> q, p_norm, z = final_weights(batch, gd_in_span(batch, eta=0.1, n_iter=0, loss="logistic", normalized=True))
    >>> q, p_norm, z
    (array([[3., 4.]]), array([5.]), array([[[3., 4.]]]))
    """
    if not isinstance(traj, SpanTrajectory):
        raise ValueError(f"traj must be a SpanTrajectory (gd_in_span): got {type(traj).__name__}")
    _check_batch(batch, **{"traj.a": (traj.a, "(B, m)"), "traj.z": (traj.z, "(B, n, T)")})
    B, n, T, _ = batch.keys.shape
    q = batch.q0 + np.einsum("bi,bir->br", traj.a, batch.keys.reshape(B, n * T, -1))
    p_norm = np.sqrt((q * q).sum(axis=-1) + batch.p0_perp**2)
    return q, p_norm, np.einsum("bntr,br->bnt", batch.keys, q)
