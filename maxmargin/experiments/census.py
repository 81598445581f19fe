"""Convergence census of normalized GD on random attention problems (Figures 9 and 10).

Paper: Appendix E, "The convergence behavior of gradient descent under over-parameterization":
n = 4 inputs of T = 6 tokens, tokens x_it and head v uniform on the unit sphere of R^d, labels
uniform in {-1, +1}, W = I (so keys k_it = x_it), logistic loss, normalized GD (eta = 1, 1000
iterations) from p(0) = 0. Each trial is classified by where GD ends: softmax not saturated, or
saturated with selected tokens alpha whose (ATT-SVM) direction is a GMM, an LMM (Definitions 1-2)
or neither; the minimal score gap over SVM-neighbours is Figure 9(b)'s and Figure 10's gamma.

Why the census is fast and exact:

* **Key coordinates.** The gradient (eq. 15a) is a combination of the n*T keys, so
  p(t) = p(0) + sum_it a_it k_it and the logits z = K p evolve as z <- z - eta G beta / ||K^T beta||
  with the n*T x n*T Gram matrix G = K K^T. One GD step costs O((nT)^2), whatever d is.
* **Exact gradient.** beta is the gradient of :func:`maxmargin.core.model.grad_p` expressed on the
  keys, expanded around the most attended token with its scale in log space, so its direction is
  exact at any ||p|| (tests/test_census.py checks it against ``grad_p``, itself checked against mpmath,
  at ||p|| up to 5000, and the whole run against GD in R^d).
* **Small SVMs.** (ATT-SVM) is solved in an orthonormal basis of the key span (dimension
  min(d, nT)) by least-distance programming through NNLS, accepted only when its KKT residual
  is at rounding level; otherwise :func:`maxmargin.core.svm.classify_direction` (cvxopt) decides.
* **Per-trial randomness.** Trial ``j`` of dimension ``d`` draws its data from
  ``np.random.default_rng([seed, d, j])``; the batched loops use no BLAS (elementwise numpy with a
  fixed reduction order, batch axis last) and LAPACK/NNLS run per trial on one thread, so every number
  is bitwise identical however the trials are batched (tests/test_census.py checks it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from tqdm import tqdm

from maxmargin.core.model import Array, LossName, check_loss, log_neg_loss_derivative
from maxmargin.core.svm import (
    MaxMarginDirection,
    SVMResult,
    _kkt,
    _ldp,
    classify_direction,
    is_globally_optimal,
    is_locally_optimal,
    min_score_gap,
    svm_neighbors,
)

TRIAL_COLUMNS = [
    "d",
    "trial",
    "seed",
    "saturated",
    "class",
    "corr",
    "gap",
    "p_norm",
    "log10_unsaturation",
    "alpha",
    "optimal_alpha",
    "svm_norm",
    "n_neighbors",
    "skipped_steps",
    "solver",
]
SUMMARY_COLUMNS = [
    "d",
    "n_trials",
    "pct_not_saturated",
    "pct_lmm",
    "pct_gmm",
    "pct_neither",
    "mean_corr",
    "p_gap_negative",
]
CLASSES = ("not_saturated", "gmm", "lmm", "neither", "infeasible")
DEFAULT_CHUNK = 250  # trials whose d-dimensional data are held at once (memory only: results do not depend on it)


@dataclass(frozen=True)
class CensusSettings:
    """The settings of one census (Appendix E defaults: n = 4, T = 6, 1000 trials, eta = 1, 1000 iterations)."""

    n: int = 4
    T: int = 6
    n_trials: int = 1000
    eta: float = 1.0
    n_iter: int = 1000
    init_scale: float = 0.0
    loss: LossName = "logistic"
    seed: int = 0
    saturation_tol: float = 1e-5
    svm_tol: float = 1e-9

    def __post_init__(self) -> None:
        check_loss(self.loss)
        if self.n < 1 or self.T < 2 or self.n_trials < 0 or self.n_iter < 0:
            raise ValueError(f"need n >= 1, T >= 2, n_trials >= 0, n_iter >= 0; got {self}")
        if self.eta <= 0 or self.init_scale < 0 or not 0 < self.saturation_tol < 1:
            raise ValueError(f"need eta > 0, init_scale >= 0, 0 < saturation_tol < 1; got {self}")


@dataclass(frozen=True)
class CensusBatch:
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


_BATCH_FIELDS = ("keys", "gram", "gamma", "q0", "p0_perp")


def sample_trial(seed: int, d: int, trial: int, n: int, T: int) -> tuple[Array, Array, Array, Array]:
    """The data of one census trial: tokens X (n, T, d), labels Y (n,), head v (d,), start direction u (d,).

    Appendix E: x_it and v uniform on the unit sphere, Y_i uniform in {-1, +1}; u (uniform on the sphere)
    gives p(0) = init_scale * u. Drawn from ``default_rng([seed, d, trial])`` in a fixed order, so a trial's
    data depend on nothing else (not on init_scale, the batch, or the other dimensions).
    """
    rng = np.random.default_rng([seed, d, trial])
    X = rng.standard_normal((n, T, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    Y = 2.0 * rng.integers(0, 2, size=n) - 1.0
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    return X, Y, v, u


def prepare_batch(K: Array, gamma: Array, p0: Array, trials: Sequence[int] | None = None) -> CensusBatch:
    """Key coordinates of a batch of problems with keys K (B, n, T, d), scores gamma (B, n, T), starts p0 (B, d).

    For d <= nT the keys are kept as they are. Otherwise a QR factorisation of [K^T, p0] (d x (nT+1))
    gives at once the keys in an orthonormal basis of their span (R^T), the span part of p0 and the
    norm of the rest (the last column of R), without cancellation.
    """
    K = np.asarray(K, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    p0 = np.asarray(p0, dtype=np.float64)
    B, n, T, d = K.shape
    m = n * T
    flat = K.reshape(B, m, d)
    if d <= m:
        keys, q0, perp = K.copy(), p0.copy(), np.zeros(B)
    else:
        aug = np.concatenate([flat, p0[:, None, :]], axis=1).transpose(0, 2, 1)  # (B, d, m + 1)
        R = np.linalg.qr(aug, mode="r")  # (B, m + 1, m + 1), one LAPACK call per trial
        keys = np.ascontiguousarray(R[:, :m, :m].transpose(0, 2, 1)).reshape(B, n, T, m)
        q0 = np.ascontiguousarray(R[:, :m, m])
        perp = np.abs(R[:, m, m])
    red = keys.reshape(B, m, -1)
    gram = np.einsum("bir,bjr->bij", red, red)
    ids = np.arange(B, dtype=np.int64) if trials is None else np.asarray(trials, dtype=np.int64)
    return CensusBatch(keys=keys, gram=gram, gamma=np.ascontiguousarray(gamma), q0=q0, p0_perp=perp, trials=ids)


def sample_batch(seed: int, d: int, trials: Sequence[int], n: int, T: int, init_scale: float) -> CensusBatch:
    """Sample the given trials of dimension d (Appendix E) and put them in key coordinates (W = I: K = X)."""
    data = [sample_trial(seed, d, int(j), n, T) for j in trials]
    X = np.stack([x for x, _, _, _ in data])
    Y = np.stack([y for _, y, _, _ in data])
    v = np.stack([v for _, _, v, _ in data])
    p0 = init_scale * np.stack([u for _, _, _, u in data])
    gamma = Y[:, :, None] * np.einsum("bntd,bd->bnt", X, v)  # Definition 1: gamma_it = Y_i v^T x_it
    return prepare_batch(X, gamma, p0, trials)


# Ratios s_t / s_second below exp(-700) ~ 1e-304 are flushed to 0 (float64 underflows them from exp(-745) on
# anyway): negligible against the leading ratio 1 of every input, and numpy's vectorised exp then never takes
# its slow path for underflowing results.
_LOG_TINY = -700.0


def _log_neg_dloss(u: Array, loss: LossName) -> Array:
    """log(-l'(u)) as :func:`maxmargin.core.model.log_neg_loss_derivative`, with a faster logistic branch."""
    if loss == "logistic":  # -l'(u) = 1 / (1 + e^u)
        return -(np.maximum(u, 0.0) + np.log1p(np.exp(-np.abs(u))))
    return log_neg_loss_derivative(u, loss)


def _first_max(z: Array, zmax: Array) -> NDArray[np.bool_]:
    """Mask of the first index t attaining max_t z_t along axis 0 (np.argmax's tie rule), for token-major z."""
    is_top = np.empty(z.shape, dtype=bool)
    seen = np.zeros(zmax.shape, dtype=bool)
    for t in range(z.shape[0]):
        hit = z[t] == zmax
        np.logical_and(hit, ~seen, out=is_top[t])
        seen |= hit
    return is_top


def _key_gradient_tm(z: Array, gamma: Array, loss: LossName) -> tuple[Array, Array]:
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
        logw = _log_neg_dloss(u, loss) + log_second  # log(-l'(u_i) s_i,second), (n, ...)
        scale = logw.max(axis=0)
        w = np.exp(logw - scale) * (-1.0 / n)
    return c * w, scale


def key_gradient(z: Array, gamma: Array, loss: LossName = "logistic") -> tuple[Array, Array]:
    """Exact gradient of L(p) on the keys: grad L(p) = exp(log_scale) * sum_it beta_it k_it, from z = K p.

    Paper: eq. (15a), grad L(p) = 1/n sum_i l'(u_i) K_i^T (diag(s_i) - s_i s_i^T) gamma_i. As in
    :func:`maxmargin.core.model.grad_p`, the softmax Jacobian is expanded around the most attended token m_i:
    with rho_it = s_it / s_i,second (<= 1) and delta_it = gamma_it - gamma_im, the coefficient of k_it is
    s_it (gamma_it - u_i) = s_i,second rho_it (delta_it - s_i,second A_i) (t != m_i) and
    -s_i,second s_im A_i (t = m_i), A_i = sum_t rho_it delta_it; the common factors s_i,second and
    -l'(u_i) stay in log space, so the direction of the gradient is exact at any ||p||.
    z, gamma: (..., n, T). Returns beta (..., n, T) of order one and log_scale (...).
    """
    check_loss(loss)
    z = np.asarray(z, dtype=np.float64)
    gamma = np.broadcast_to(np.asarray(gamma, dtype=np.float64), z.shape)
    tm = (-1, -2)
    beta, scale = _key_gradient_tm(np.moveaxis(z, tm, (0, 1)), np.moveaxis(gamma, tm, (0, 1)), loss)
    return np.moveaxis(beta, (0, 1), tm), scale


def log_unselected_mass(z: Array) -> Array:
    """log(1 - max_t S(z_i)_t) per input from logits z (..., n, T), exact when 1 - s is far below eps.

    Appendix E's saturation test; same value as :func:`maxmargin.core.model.log_non_selected_mass`.
    """
    z = np.asarray(z, dtype=np.float64)
    is_top = np.arange(z.shape[-1]) == z.argmax(axis=-1)[..., None]
    others = np.where(is_top, -np.inf, z - z.max(axis=-1, keepdims=True))
    lead = others.max(axis=-1)
    with np.errstate(under="ignore"):
        rho_sum = np.exp(others - lead[..., None]).sum(axis=-1)
        return lead + np.log(rho_sum) - np.log1p(np.exp(lead) * rho_sum)


def log_unsaturation(z: Array) -> Array:
    """log(1 - s) with s = 1/n sum_i S(z_i)_{alpha_i} the averaged selected probability, per problem (...).

    Appendix E: saturated iff s >= 1 - tol, i.e. log_unsaturation <= log(tol); a log-mean-exp of
    :func:`log_unselected_mass`, so the decision is exact even when 1 - s < 1e-300.
    """
    ell = log_unselected_mass(z)
    top = ell.max(axis=-1, keepdims=True)
    with np.errstate(under="ignore"):
        return top[..., 0] + np.log(np.exp(ell - top).sum(axis=-1)) - np.log(ell.shape[-1])


@dataclass(frozen=True)
class KeyTrajectory:
    """End of a batched GD run in key coordinates: p(T) = p(0) + K^T a, logits z = K p(T)."""

    a: Array  # (B, nT)
    z: Array  # (B, n, T)
    skipped: NDArray[np.int64]  # steps with an exactly zero gradient (skipped, never divided by)


def normalized_gd(
    batch: CensusBatch, *, eta: float, n_iter: int, loss: LossName = "logistic", bar: tqdm | None = None
) -> KeyTrajectory:
    """Normalized GD p <- p - eta grad L(p) / ||grad L(p)|| on every problem of the batch at once.

    Paper: Appendix E (normalized GD, learning rate 1). In key coordinates the step is
    a <- a - eta beta / ||K^T beta||, z <- z - eta G beta / ||K^T beta|| with ||K^T beta||^2 = beta^T G beta;
    a zero gradient is skipped (counted), never divided by. Arrays are kept token-major with the batch
    last, (T, n, B), so that every operation is vectorised across trials.
    """
    check_loss(loss)
    if batch.gamma.shape[0] == 1:  # a batch axis of length 1 would change numpy's loop order (and the last bits)
        pair = CensusBatch(*(np.concatenate([getattr(batch, f)] * 2) for f in _BATCH_FIELDS))
        traj = normalized_gd(pair, eta=eta, n_iter=n_iter, loss=loss, bar=bar)
        return KeyTrajectory(a=traj.a[:1], z=traj.z[:1], skipped=traj.skipped[:1])
    B, n, T = batch.gamma.shape
    m = n * T
    order = (np.arange(n)[None, :] * T + np.arange(T)[:, None]).ravel()  # token-major j = t n + i -> i T + t
    gram = np.ascontiguousarray(batch.gram[:, order][:, :, order].transpose(1, 2, 0))  # (m, m, B)
    gamma = np.ascontiguousarray(batch.gamma.transpose(2, 1, 0))  # (T, n, B)
    z = np.ascontiguousarray(batch.logits0.transpose(2, 1, 0))
    a = np.zeros((m, B))
    skipped = np.zeros(B, dtype=np.int64)
    for _ in range(n_iter):
        beta, _ = _key_gradient_tm(z, gamma, loss)
        beta = beta.reshape(m, B)
        h = np.einsum("ijb,jb->ib", gram, beta)  # K K^T beta
        sq = (beta * h).sum(axis=0)  # ||K^T beta||^2
        ok = sq > 0.0
        step = eta / np.sqrt(np.where(ok, sq, 1.0)) * ok
        z -= (h * step).reshape(T, n, B)
        a -= beta * step
        skipped += ~ok
        if bar is not None:
            bar.update(1)
    a = a.reshape(T, n, B).transpose(2, 1, 0).reshape(B, m)
    return KeyTrajectory(a=np.ascontiguousarray(a), z=np.ascontiguousarray(z.transpose(2, 1, 0)), skipped=skipped)


def att_svm_ldp(keys: Array, alpha: NDArray[np.int_], *, tol: float = 1e-9) -> SVMResult | None:
    """(ATT-SVM) at alpha by least-distance programming (NNLS), or None when its KKT check fails.

    Sec. 2 (ATT-SVM): min ||p|| s.t. p^T (k_{i alpha_i} - k_it) >= 1, t != alpha_i. The NNLS solution is
    accepted only if it satisfies the KKT conditions to ``tol`` (relative), which makes it the unique
    optimum; ``active`` (n, T) marks the constraints on the margin, as in :func:`maxmargin.core.svm.att_svm`.
    """
    n, T, _ = keys.shape
    rows = np.arange(n)
    diff = keys[rows, alpha][:, None, :] - keys
    mask = np.arange(T)[None, :] != alpha[:, None]
    D = diff[mask]
    b = np.ones(D.shape[0])
    if not np.all(np.any(D != 0.0, axis=1)):
        return None  # a duplicate of a selected token: leave it to the general solver
    sol = _ldp(D, b)
    if sol is None:
        return None
    p, lam = sol
    scale = max(1.0, float(np.linalg.norm(p)) * float(np.max(np.linalg.norm(D, axis=1))))
    kkt = _kkt(D, b, p, lam)
    if not np.isfinite(kkt) or kkt > tol * scale:
        return None
    active = np.zeros((n, T), dtype=bool)
    active[mask] = (D @ p - b) <= tol * scale
    return SVMResult(p, True, "optimal", active, kkt)


def classify_selection(
    keys: Array, gamma: Array, alpha: NDArray[np.int_], *, tol: float = 1e-9
) -> tuple[MaxMarginDirection, str]:
    """GMM / LMM / neither for the tokens alpha selected by a saturated run, and the solver used.

    Definitions 1-2, as :func:`maxmargin.core.svm.classify_direction` (which decides when the LDP check fails):
    GMM iff alpha is locally optimal and every alpha_i has the top score; LMM iff locally optimal only.
    """
    alpha = np.asarray(alpha, dtype=np.int64)
    res = att_svm_ldp(keys, alpha, tol=tol)
    if res is None:
        return classify_direction(keys, gamma, alpha, tol=tol), "cvxopt"
    nb = svm_neighbors(keys, alpha, res.solution)
    if not is_locally_optimal(gamma, alpha, nb):
        kind = "neither"
    else:
        kind = "gmm" if is_globally_optimal(gamma, alpha) else "lmm"
    return MaxMarginDirection(kind, alpha, res, nb, min_score_gap(gamma, alpha, nb)), "ldp"


def census_rows(
    batch: CensusBatch,
    settings: CensusSettings,
    d: int,
    *,
    bar: tqdm | None = None,
    timings: dict[str, float] | None = None,
) -> pd.DataFrame:
    """Run GD on every problem of the batch, decide saturation and classify: one row per trial (TRIAL_COLUMNS).

    Appendix E: alpha_i = argmax_t S(K_i p)_t; saturated iff 1/n sum_i S(K_i p)_{alpha_i} >= 1 - tol;
    for saturated trials, corr = cos(p, p_mm(alpha)) and gap = min_i min_{t in T_i} (gamma_i alpha_i - gamma_it).
    ``timings``, if given, receives the CPU seconds of GD (``gd_s``) and of the classification (``classify_s``).
    """
    clock = time.process_time()
    traj = normalized_gd(batch, eta=settings.eta, n_iter=settings.n_iter, loss=settings.loss, bar=bar)
    if timings is not None:
        timings["gd_s"] = time.process_time() - clock
        clock = time.process_time()
    B, n, T, _ = batch.keys.shape
    q = batch.q0 + np.einsum("bi,bir->br", traj.a, batch.keys.reshape(B, n * T, -1))
    p_norm = np.sqrt((q * q).sum(axis=-1) + batch.p0_perp**2)
    z = np.einsum("bntr,br->bnt", batch.keys, q)  # logits of the final p
    alpha = z.argmax(axis=-1)
    log_unsat = log_unsaturation(z)
    saturated = log_unsat <= np.log(settings.saturation_tol)
    optimal = (np.take_along_axis(batch.gamma, alpha[..., None], axis=-1)[..., 0] >= batch.gamma.max(axis=-1)).all(
        axis=-1
    )
    nan = np.full(B, np.nan)
    kind = np.full(B, "not_saturated", dtype=object)
    corr, gap, svm_norm, n_nb = nan.copy(), nan.copy(), nan.copy(), np.zeros(B, dtype=np.int64)
    solver = np.full(B, "", dtype=object)
    for b in np.flatnonzero(saturated):
        res, solver[b] = classify_selection(batch.keys[b], batch.gamma[b], alpha[b], tol=settings.svm_tol)
        kind[b] = res.kind
        if res.svm.feasible:
            pmm = res.svm.solution
            corr[b] = float(q[b] @ pmm) / (p_norm[b] * float(np.linalg.norm(pmm)))
            gap[b] = res.score_gap
            svm_norm[b] = res.svm.norm
            n_nb[b] = int(res.neighbors.sum())
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.update(B - int(saturated.sum()))
    if timings is not None:
        timings["classify_s"] = time.process_time() - clock
    return pd.DataFrame(
        {
            "d": d,
            "trial": batch.trials,
            "seed": settings.seed,
            "saturated": saturated,
            "class": kind,
            "corr": corr,
            "gap": gap,
            "p_norm": p_norm,
            "log10_unsaturation": log_unsat / np.log(10.0),
            "alpha": [",".join(str(int(t)) for t in row) for row in alpha],
            "optimal_alpha": optimal,
            "svm_norm": svm_norm,
            "n_neighbors": n_nb,
            "skipped_steps": traj.skipped,
            "solver": solver,
        },
        columns=TRIAL_COLUMNS,
    )


def _single_thread_blas() -> contextlib.AbstractContextManager[object]:
    """Limit BLAS/LAPACK to one thread: the census makes thousands of tiny calls (QR, NNLS), which threads only
    slow down (badly, on a loaded machine); Snakemake's script jobs already run with OPENBLAS_NUM_THREADS=1."""
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def run_trials(
    settings: CensusSettings,
    d: int,
    trials: Sequence[int] | None = None,
    *,
    chunk: int = DEFAULT_CHUNK,
    progress: bool = False,
    timings: dict[str, float] | None = None,
) -> pd.DataFrame:
    """The census of dimension d over ``trials`` (default: all ``settings.n_trials``), one row per trial.

    Appendix E, Figures 9 and 10. Trials are sampled ``chunk`` at a time (bounding memory for large d)
    and all of them run GD in one vectorised loop; rows do not depend on ``chunk`` or on the split.
    ``timings``, if given, receives CPU seconds: ``sample_s`` (drawing the data, O(d) per trial), ``gd_s``
    and ``classify_s`` (both independent of d).
    """
    if d < 1:
        raise ValueError(f"need d >= 1, got {d}")
    ids = np.arange(settings.n_trials) if trials is None else np.asarray(trials, dtype=np.int64)
    if ids.size == 0:
        return pd.DataFrame(columns=TRIAL_COLUMNS)
    clock = time.process_time()
    with _single_thread_blas():
        parts = [
            sample_batch(settings.seed, d, ids[i : i + chunk], settings.n, settings.T, settings.init_scale)
            for i in range(0, ids.size, chunk)
        ]
        batch = CensusBatch(*(np.concatenate([getattr(p, f) for p in parts]) for f in _BATCH_FIELDS), trials=ids)
        if timings is not None:
            timings["sample_s"] = time.process_time() - clock
        with tqdm(
            total=settings.n_iter + ids.size, desc=f"census d={d}", unit="step", disable=not progress, leave=False
        ) as bar:
            return census_rows(batch, settings, d, bar=bar, timings=timings)


def summarize(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per d: percentages of trials not saturated / locally optimal (LMM incl. GMM) / GMM / neither.

    Appendix E, Figure 9(a); ``mean_corr`` averages cos(p, p_mm(alpha)) over saturated trials (the paper's
    0.997) and ``p_gap_negative`` is P(gamma < 0) among them (the paper's < 1%).
    """
    rows = []
    for d, g in trials.groupby("d", sort=True):
        n = len(g)
        sat = g[g["saturated"].astype(bool)]
        cls = g["class"]
        rows.append(
            {
                "d": int(d),
                "n_trials": n,
                "pct_not_saturated": 100.0 * float((cls == "not_saturated").sum()) / n,
                "pct_lmm": 100.0 * float(cls.isin(["lmm", "gmm"]).sum()) / n,
                "pct_gmm": 100.0 * float((cls == "gmm").sum()) / n,
                "pct_neither": 100.0 * float((cls == "neither").sum()) / n,
                "mean_corr": float(sat["corr"].mean()) if len(sat) else float("nan"),
                "p_gap_negative": float((sat["gap"] < 0).mean()) if len(sat) else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def gap_distribution(trials: pd.DataFrame, dims: Sequence[int], bin_width: float) -> pd.DataFrame:
    """Histogram and cumulative distribution of the minimal score gap gamma per d, over saturated trials.

    Appendix E, Figure 9(b) (probability per bin of width ``bin_width``) and Figure 10 (cumulative
    probability at each bin's right edge). Bin edges are integer multiples of the width, so gamma = 0
    is an edge and ``cumulative`` at the bin ending at 0 is exactly P(gamma < 0). A d without saturated
    trials gets NaN probabilities.
    """
    if bin_width <= 0:
        raise ValueError(f"need bin_width > 0, got {bin_width}")
    sat = trials[trials["saturated"].astype(bool) & np.isfinite(trials["gap"])]
    sel = sat[sat["d"].isin(list(dims))]["gap"].to_numpy()
    lo = int(np.floor(min(sel.min(initial=0.0), -bin_width) / bin_width)) - 1
    hi = int(np.ceil(max(sel.max(initial=0.0), bin_width) / bin_width)) + 1
    edges = np.arange(lo, hi + 1) * bin_width
    frames = []
    for d in dims:
        gaps = sat.loc[sat["d"] == d, "gap"].to_numpy()
        counts, _ = np.histogram(gaps, bins=edges)
        # no saturated trial: the distribution is undefined (NaN, as in summarize), not "all zero"
        total = gaps.size if gaps.size else np.nan
        frames.append(
            pd.DataFrame(
                {
                    "d": int(d),
                    "bin_left": edges[:-1],
                    "bin_right": edges[1:],
                    "count": counts,
                    "probability": counts / total,
                    "cumulative": np.cumsum(counts) / total,
                    "n_saturated": gaps.size,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
