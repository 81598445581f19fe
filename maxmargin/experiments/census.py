"""Convergence census of normalized GD on random attention problems (Figures 9 and 10): one row per trial.

Paper: Appendix E, "The convergence behavior of gradient descent under over-parameterization":
n = 4 inputs of T = 6 tokens, tokens x_it and head v uniform on the unit sphere of R^d, labels
uniform in {-1, +1}, W = I (so keys k_it = x_it), logistic loss, normalized GD (eta = 1, 1000
iterations) from p(0) = 0. Each trial is classified by where GD ends: softmax not saturated, or
saturated with selected tokens alpha whose (ATT-SVM) direction is a GMM, an LMM (Definitions 1-2)
or neither; the minimal score gap over SVM-neighbours is Figure 9(b)'s and Figure 10's gamma.

This module samples the trials and labels them; GD runs in the keys' span
(:mod:`maxmargin.core.span_gd`), (ATT-SVM) by least-distance programming with cvxopt as fallback
(:func:`maxmargin.core.svm.att_svm_ldp`), and the tables are built in :mod:`maxmargin.experiments.census_tables`.

**Per-trial randomness.** Trial ``j`` of dimension ``d`` draws its data from ``np.random.default_rng([seed, d, j])``;
GD uses no BLAS and LAPACK/NNLS run per trial on one thread, so every number is bitwise identical however the
trials are split into chunks or jobs (tests/test_census.py checks it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from maxmargin import registry
from maxmargin.core.directions import MaxMarginDirection, classify_direction
from maxmargin.core.loss import LossName, check_loss
from maxmargin.core.model import Array
from maxmargin.core.progress import Progress
from maxmargin.core.softmax import log_non_selected_mass_of_logits
from maxmargin.core.span_gd import SpanBatch, final_weights, normalized_gd_in_span, span_coordinates
from maxmargin.core.svm import att_svm_ldp

TRIAL_COLUMNS = registry.columns("census_run")


@dataclass(frozen=True)
class CensusSettings:
    """The settings of one census: the ``census`` block of the config (less its per-d and plot keys)."""

    n: int
    T: int
    n_trials: int
    eta: float
    n_iter: int
    init_scale: float
    loss: LossName
    seed: int
    saturation_tol: float
    svm_tol: float
    chunk: int

    @classmethod
    def from_config(cls, census: Mapping[str, Any], **changes: Any) -> CensusSettings:
        """The settings in the config's ``census`` block (its study and plot keys left out), with ``changes``."""
        names = {f.name for f in fields(cls)}
        return cls(**{**{k: v for k, v in census.items() if k in names}, **changes})

    def __post_init__(self) -> None:
        check_loss(self.loss)
        if self.n < 1 or self.T < 2 or self.n_trials < 0 or self.n_iter < 0 or self.chunk < 1:
            raise ValueError(f"need n >= 1, T >= 2, n_trials >= 0, n_iter >= 0, chunk >= 1; got {self}")
        if self.eta <= 0 or self.init_scale < 0 or not 0 < self.saturation_tol < 1:
            raise ValueError(f"need eta > 0, init_scale >= 0, 0 < saturation_tol < 1; got {self}")


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


def sample_batch(seed: int, d: int, trials: Sequence[int], n: int, T: int, init_scale: float) -> SpanBatch:
    """Sample the given trials of dimension d (Appendix E) and put them in key coordinates (W = I: K = X)."""
    data = [sample_trial(seed, d, int(j), n, T) for j in trials]
    X = np.stack([x for x, _, _, _ in data])
    Y = np.stack([y for _, y, _, _ in data])
    v = np.stack([v for _, _, v, _ in data])
    p0 = init_scale * np.stack([u for _, _, _, u in data])
    gamma = Y[:, :, None] * np.einsum("bntd,bd->bnt", X, v)  # Definition 1: gamma_it = Y_i v^T x_it
    return span_coordinates(X, gamma, p0, trials)


def log_unsaturation(z: Array) -> Array:
    """log(1 - s) with s = 1/n sum_i S(z_i)_{alpha_i} the averaged selected probability, per problem (...).

    Appendix E: saturated iff s >= 1 - tol, i.e. log_unsaturation <= log(tol); a log-mean-exp of
    :func:`maxmargin.core.softmax.log_non_selected_mass_of_logits`, so the decision is exact even when
    1 - s < 1e-300.
    """
    ell = log_non_selected_mass_of_logits(z)
    top = ell.max(axis=-1, keepdims=True)
    with np.errstate(under="ignore"):
        return top[..., 0] + np.log(np.exp(ell - top).sum(axis=-1)) - np.log(ell.shape[-1])


def is_saturated(z: Array, saturation_tol: float) -> NDArray[np.bool_]:
    """Appendix E's saturation test on the logits z (..., n, T): 1/n sum_i S(z_i)_{alpha_i} >= 1 - saturation_tol."""
    return log_unsaturation(z) <= np.log(saturation_tol)


def classify_selection(K: Array, gamma: Array, alpha: NDArray[np.int64], tol: float) -> tuple[MaxMarginDirection, str]:
    """The census label of the selected tokens alpha: GMM / LMM / neither / infeasible, and the solver used.

    Definitions 1-2: (ATT-SVM) at alpha by LDP (cvxopt when its KKT check fails), classified by
    :func:`maxmargin.core.svm.classify_direction`; ``tol`` is both the solve's KKT tolerance and the
    SVM-neighbours' equality test.
    """
    fast = att_svm_ldp(K, alpha, tol=tol)
    return classify_direction(K, gamma, alpha, tol=tol, svm=fast, neighbor_tol=tol), "cvxopt" if fast is None else "ldp"


def _label_columns(
    batch: SpanBatch, q: Array, p_norm: Array, alpha: NDArray[np.int64], saturated: NDArray[np.bool_], tol: float
) -> dict[str, NDArray]:
    """class, corr, gap, svm_norm, n_neighbors and solver of every trial; NaN/empty where not saturated.

    Definitions 1-2: (ATT-SVM) at the selected tokens alpha by LDP (cvxopt when its KKT check fails), then
    GMM / LMM / neither by :func:`maxmargin.core.directions.classify_direction`; corr = cos(p, p_mm(alpha)). The
    configured ``tol`` (census.svm_tol) is both the solve's KKT tolerance and the SVM-neighbours' equality test.
    """
    B = len(alpha)
    cols: dict[str, NDArray] = {
        "class": np.full(B, "not_saturated", dtype=object),
        "corr": np.full(B, np.nan),
        "gap": np.full(B, np.nan),
        "svm_norm": np.full(B, np.nan),
        "n_neighbors": np.zeros(B, dtype=np.int64),
        "solver": np.full(B, "", dtype=object),
    }
    for b in np.flatnonzero(saturated):
        res, cols["solver"][b] = classify_selection(batch.keys[b], batch.gamma[b], alpha[b], tol)
        cols["class"][b] = res.kind
        if res.svm.feasible:
            pmm = res.svm.solution
            cols["corr"][b] = float(q[b] @ pmm) / (p_norm[b] * float(np.linalg.norm(pmm)))
            cols["gap"][b] = res.score_gap
            cols["svm_norm"][b] = res.svm.norm
            cols["n_neighbors"][b] = int(res.neighbors.sum())
    return cols


def census_rows(batch: SpanBatch, settings: CensusSettings, d: int) -> pd.DataFrame:
    """Run GD on every problem of the batch, decide saturation and classify: one row per trial (TRIAL_COLUMNS).

    Appendix E: alpha_i = argmax_t S(K_i p)_t; saturated iff 1/n sum_i S(K_i p)_{alpha_i} >= 1 - tol;
    for saturated trials, corr = cos(p, p_mm(alpha)) and gap = min_i min_{t in T_i} (gamma_i alpha_i - gamma_it).
    """
    traj = normalized_gd_in_span(batch, eta=settings.eta, n_iter=settings.n_iter, loss=settings.loss)
    q, p_norm, z = final_weights(batch, traj)
    alpha = z.argmax(axis=-1)
    log_unsat = log_unsaturation(z)
    saturated = is_saturated(z, settings.saturation_tol)
    top = np.take_along_axis(batch.gamma, alpha[..., None], axis=-1)[..., 0]
    columns = {
        "d": d,
        "trial": batch.trials,
        "seed": settings.seed,
        "n": settings.n,
        "T": settings.T,
        "n_iter": settings.n_iter,
        "saturated": saturated,
        "p_norm": p_norm,
        "log10_unsaturation": log_unsat / np.log(10.0),
        "alpha": [",".join(str(int(t)) for t in row) for row in alpha],
        "optimal_alpha": (top >= batch.gamma.max(axis=-1)).all(axis=-1),
        "skipped_steps": traj.skipped,
        **_label_columns(batch, q, p_norm, alpha, saturated, settings.svm_tol),
    }
    return pd.DataFrame(columns, columns=TRIAL_COLUMNS)


def _single_thread_blas() -> contextlib.AbstractContextManager[object]:
    """Limit BLAS/LAPACK to one thread: the census makes thousands of tiny calls (QR, NNLS), which threads only
    slow down (badly, on a loaded machine); Snakemake's script jobs already run with OPENBLAS_NUM_THREADS=1."""
    try:
        from threadpoolctl import threadpool_limits  # installed with scikit-learn
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def run_trials(settings: CensusSettings, d: int, trials: Sequence[int] | None = None) -> pd.DataFrame:
    """The census of dimension d over ``trials`` (default: all ``settings.n_trials``), one row per trial.

    Appendix E, Figures 9 and 10. Trials run ``settings.chunk`` at a time (sampling, GD, classification),
    which bounds memory for large d; each chunk reports one progress line (:func:`maxmargin.core.progress.progress`: the
    rule log and the job's terminal or SLURM log). Rows do not depend on the chunk size or on the split.
    """
    if d < 1:
        raise ValueError(f"need d >= 1, got {d}")
    ids = np.arange(settings.n_trials) if trials is None else np.asarray(trials, dtype=np.int64)
    parts = []
    bar = Progress(f"census d={d}: trials", ids.size, interval=0.0)
    with _single_thread_blas():
        for start in range(0, ids.size, settings.chunk):
            chunk = ids[start : start + settings.chunk]
            batch = sample_batch(settings.seed, d, chunk, settings.n, settings.T, settings.init_scale)
            parts.append(census_rows(batch, settings, d))
            bar.update(
                start + chunk.size, f"{int(parts[-1]['saturated'].sum())}/{chunk.size} of the last chunk saturated"
            )
    if not parts:
        return pd.DataFrame(columns=TRIAL_COLUMNS)
    return pd.concat(parts, ignore_index=True)
