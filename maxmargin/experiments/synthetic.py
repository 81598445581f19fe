"""The synthetic experiments behind Figures 1-5 and 8, each returning the tables it plots.

Paper: Sections 2-4 and Appendix E. Every experiment returns an :class:`ExperimentTables`:
``trajectories`` (one row per run and recorded iteration), ``tokens`` (the data, in the key
plane the paper draws) and ``directions`` (every max-margin direction computed, and every GD
run's start and final cosine with the direction theory predicts for it). Which experiment runs which function on
which data set, with which block of the config, is declared in the figure registry (:mod:`maxmargin.registry`)
and run by :func:`maxmargin.pipeline.run_experiment`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import pandas as pd
except ModuleNotFoundError as err:  # `pip install .` installs the maths alone, without the pipeline's pandas
    raise ModuleNotFoundError(
        "maxmargin.experiments.synthetic builds the pipeline's tables and needs pandas, of the extra 'workflow': "
        "pip install '.[workflow]' in a checkout (the maths, maxmargin.core, and the paper's data, "
        "maxmargin.experiments.instances, need no extra)",
        name="pandas",
    ) from err

from maxmargin import registry
from maxmargin.core.directions import (
    MAX_ENUMERATED,
    classify_direction,
    gmm_direction,
    max_margin_directions,
    optimal_tokens,
)
from maxmargin.core.gd import Trajectory, cosine, gradient_descent, joint_normalized_gd, record_iterations
from maxmargin.core.model import Array, model_output
from maxmargin.core.softmax import attention, log_non_selected_mass, selected_tokens
from maxmargin.core.svm import (
    SVMResult,
    att_svm,
    p_relax,
    v_svm,
)
from maxmargin.experiments import instances
from maxmargin.experiments.instances import Instance

DIRECTION_COLUMNS = registry.columns("directions")


@dataclass(frozen=True)
class ExperimentTables:
    """The three tables of one synthetic experiment."""

    trajectories: pd.DataFrame
    tokens: pd.DataFrame
    directions: pd.DataFrame


def softmax_saturation(K: Array, p: Array) -> Array:
    """Mean over inputs of the largest softmax probability, 1/n sum_i max_t S(K_i p)_t.

    Paper: Figure 3(c) and Figure 4(a) ("softmax probability").
    """
    return attention(K, p).max(axis=-1).mean(axis=-1)


def saturation_gap(K: Array, p: Array) -> Array:
    """1 - (mean_i max_t S(K_i p)_t), computed without cancellation (Appendix E's saturation test)."""
    return np.exp(log_non_selected_mass(K, p)).mean(axis=-1)


def _p_frame(figure: str, labels: Sequence[str], traj: Trajectory, K: Array, dense: int = 1000) -> pd.DataFrame:
    """Long table: one row per (run, recorded iteration) with p, ||p|| and the softmax saturation."""
    n_runs, n_steps, d = traj.p.shape
    its = record_iterations(n_steps - 1, dense=dense)
    p = traj.p[:, its, :]
    Kb = K if K.ndim == 3 else K[:, None]
    frame = pd.DataFrame(
        {
            "figure": figure,
            "run": np.repeat(np.arange(n_runs), its.size),
            "label": np.repeat(np.asarray(labels, dtype=object), its.size),
            "iteration": np.tile(its, n_runs),
        }
    )
    for j in range(d):
        frame[f"p{j + 1}"] = p[..., j].ravel()
    frame["p_norm"] = np.linalg.norm(p, axis=-1).ravel()
    frame["max_softmax"] = softmax_saturation(Kb, p).ravel()
    frame["one_minus_softmax"] = saturation_gap(Kb, p).ravel()
    return frame


def tokens_frame(figure: str, instance: Instance) -> pd.DataFrame:
    """The tokens in the key plane with their scores and whether they are optimal (Definition 1)."""
    n, T, _ = instance.X.shape
    plane = instance.key_plane
    gamma = instance.gamma
    return pd.DataFrame(
        {
            "figure": figure,
            "input": np.repeat(np.arange(n), T),
            "token": np.tile(np.arange(T), n),
            "k1": plane[..., 0].ravel(),
            "k2": plane[..., 1].ravel(),
            "score": gamma.ravel(),
            "label": np.repeat(instance.Y, T),
            "optimal": (gamma == gamma.max(axis=-1, keepdims=True)).ravel(),
        }
    )


def _direction_row(figure: str, kind: str, alpha: Array, svm: SVMResult) -> dict[str, Any]:
    return {
        "figure": figure,
        "record": "direction",
        "kind": kind,
        "tokens": json.dumps([int(a) for a in alpha]),
        "direction": json.dumps([float(x) for x in svm.direction]),
        "norm": svm.norm,
        "kkt_residual": svm.kkt_residual,
    }


def _run_row(
    figure: str, label: str, kind: str, alpha: Array, start: Array, final: Array, target: Array
) -> dict[str, Any]:
    """A GD run's row; a run that overflowed is an error, never a labelled direction (argmax of NaN is 0)."""
    if not (np.all(np.isfinite(final)) and np.linalg.norm(final) > 0):
        raise FloatingPointError(
            f"{figure}, {label}: gradient descent ended at a non-finite or zero iterate {final.tolist()}; "
            f"check the step size and iteration count of this figure in the config"
        )
    return {
        "figure": figure,
        "record": "gd_run",
        "kind": kind,
        "run": label,
        "start": json.dumps([float(x) for x in start]),
        "tokens": json.dumps([int(a) for a in alpha]),
        "direction": json.dumps([float(x) for x in final / np.linalg.norm(final)]),
        "final_cosine": float(cosine(final, target)),
        "p_norm": float(np.linalg.norm(final)),
    }


def _directions(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=DIRECTION_COLUMNS)
    return frame.drop_duplicates(subset=["figure", "record", "kind", "tokens", "run"], ignore_index=True)


def _p_runs(
    figure: str, instance: Instance, labels: Sequence[str], starts: Array, finals: Array
) -> list[dict[str, Any]]:
    """Rows for the directions table: where each run started, its limit direction per Theorems 2-3, its cosine."""
    rows = []
    for label, start, final in zip(labels, starts, finals, strict=True):
        alpha = selected_tokens(instance.K, final)
        res = classify_direction(instance.K, instance.gamma, alpha)
        rows.append(_direction_row(figure, res.kind, alpha, res.svm))
        rows.append(_run_row(figure, label, res.kind, alpha, start, final, res.svm.direction))
    return rows


def _start_labels(n_starts: int) -> list[str]:
    return [f"start {i + 1}" for i in range(n_starts)]


def _gd_on_p(name: str, instance: Instance, p0: Array, *, eta: float, n_iter: int, loss: str) -> ExperimentTables:
    """Normalized GD on p from the starts ``p0``; the GMM direction, every LMM where T^n is small, every run.

    Paper: Theorems 2 and 3 (Figures 1 and 8).
    """
    traj = gradient_descent(instance.K, instance.gamma, p0, eta=eta, n_iter=n_iter, loss=loss)
    labels = _start_labels(p0.shape[0])
    opt = optimal_tokens(instance.gamma)
    rows = [_direction_row(name, "gmm", opt, gmm_direction(instance.K, instance.gamma))]
    n, T, _ = instance.K.shape
    if T**n <= MAX_ENUMERATED:
        rows += [_direction_row(name, k, a, s) for k, a, s in max_margin_directions(instance.K, instance.gamma)]
    rows += _p_runs(name, instance, labels, p0, traj.p_final)
    return ExperimentTables(_p_frame(name, labels, traj, instance.K), tokens_frame(name, instance), _directions(rows))


def gd_on_p(
    name: str,
    make_instance: Callable[[], Instance],
    *,
    eta: float,
    n_iter: int,
    loss: str,
    starts: Sequence[Sequence[float]] | Mapping[str, Any],
) -> ExperimentTables:
    """Figures 1(a, b, c) and 8: normalized GD on p from several starts; the GMM direction, every LMM where T^n is
    small, and where each run went.

    Paper: Section 2, Theorems 2 and 3, Figure 1; Appendix E, Figure 8 ("Failure of gradient descent's global
    convergence when n >= 2"). ``starts`` is data: a list of points (p_1, p_2) of the key plane (the authors'
    notebook), or ``{"circle": {"n": ..., "radius": ...}}``, points evenly spaced on a circle.
    """
    instance = make_instance()
    return _gd_on_p(name, instance, instances.starts(starts, instance.X.shape[-1]), eta=eta, n_iter=n_iter, loss=loss)


def gd_in_lmm_cone(
    name: str,
    make_instance: Callable[[], Instance],
    *,
    eta: float,
    n_iter: int,
    n_starts: int,
    start_radius: float,
    half_angle_deg: float,
    loss: str,
) -> ExperimentTables:
    """Figure 2: GD started inside the cone C_{mu,R}(p_mm) of an LMM direction stays and converges there.

    Paper: Theorem 3, eq. (7)-(8), Figure 2; drawn on the Figure 1(b) instance whose LMM is (1, 0).
    """
    instance = make_instance()
    lmm = [(a, s) for k, a, s in max_margin_directions(instance.K, instance.gamma) if k == "lmm"]
    alpha, svm = lmm[0]
    p0 = instances.starts_in_cone(svm.direction, n_starts, start_radius, np.deg2rad(half_angle_deg))
    traj = gradient_descent(instance.K, instance.gamma, p0, eta=eta, n_iter=n_iter, loss=loss)
    labels = _start_labels(n_starts)
    rows = [_direction_row(name, "lmm", alpha, svm)] + _p_runs(name, instance, labels, p0, traj.p_final)
    tables = _p_frame(name, labels, traj, instance.K)
    tables["cone_half_angle_deg"] = half_angle_deg
    return ExperimentTables(tables, tokens_frame(name, instance), _directions(rows))


def _joint_rows(name: str, instance: Instance, labels: Sequence[str], traj: Trajectory) -> list[dict[str, Any]]:
    """Each joint run's v_mm, p_mm and p_relax (eq. (10)) at the tokens it selects, and its final cosines."""
    rows = []
    for label, p0, v0, pf, vf in zip(labels, traj.p[:, 0], traj.v[:, 0], traj.p_final, traj.v_final, strict=True):
        alpha = selected_tokens(instance.K, pf)
        selected = instance.X[np.arange(instance.X.shape[0]), alpha]
        vmm = v_svm(selected, instance.Y)
        relax = p_relax(instance.K, alpha, vmm.active)
        rows.append(_direction_row(name, "v_mm", alpha, vmm))
        rows.append(_direction_row(name, "p_mm", alpha, att_svm(instance.K, alpha)))
        rows.append(_direction_row(name, "p_relax", alpha, relax))
        rows.append(_run_row(name, label, "p_relax", alpha, p0, pf, relax.direction))
        rows.append(_run_row(name, label + " (v)", "v_mm", alpha, v0, vf, vmm.direction))
    return rows


def joint_gd_on_v_and_p(
    name: str,
    make_instance: Callable[[], Instance],
    *,
    eta: float,
    n_iter: int,
    starts: Sequence[Sequence[float]],
    v_starts: Sequence[Sequence[float]],
    loss: str,
) -> ExperimentTables:
    """Figure 3(a)/(b): joint normalized GD on (v, p); v -> v_mm, p -> p_relax (= p_mm in (a)).

    Paper: Theorems 5 and 6, eq. (10), Figure 3; panel (c) uses the softmax and logistic probabilities.
    """
    instance = make_instance()
    p0 = np.asarray(starts, dtype=np.float64)
    v0 = np.asarray(v_starts, dtype=np.float64)
    if v0.shape != p0.shape:
        raise ValueError(
            f"{name}: v_starts has {len(v_starts)} start(s) and starts {len(starts)}; give one v(0) per p(0) "
            "(config keys synthetic.fig3.starts and synthetic.fig3.v_starts)"
        )
    traj = joint_normalized_gd(instance.X, instance.Y, instance.K, v0, p0, eta=eta, n_iter=n_iter, loss=loss)
    labels = _start_labels(p0.shape[0])
    frame = _p_frame(name, labels, traj, instance.K)
    v_rec = traj.v[frame["run"].to_numpy(), frame["iteration"].to_numpy()]
    p_rec = traj.p[frame["run"].to_numpy(), frame["iteration"].to_numpy()]
    frame["v1"], frame["v2"] = v_rec[:, 0], v_rec[:, 1]
    margins = instance.Y * model_output(instance.X, instance.K[None], v_rec, p_rec)
    frame["logistic_prob"] = (1.0 / (1.0 + np.exp(-margins))).mean(axis=-1)
    rows = _joint_rows(name, instance, labels, traj)
    return ExperimentTables(frame, tokens_frame(name, instance), _directions(rows))


def normalized_vs_constant_gd(
    name: str,
    make_instance: Callable[[], Instance],
    *,
    n_iter: int,
    eta_normalized: float,
    eta_constant: float,
    loss: str,
) -> ExperimentTables:
    """Figure 4: normalized GD vs constant-step GD on the Figure 1(c) data, from p(0) = 0.

    Paper: Section 4, "Synthetic experiments", Figure 4(a) (softmax probability) and 4(b) (||p||).
    """
    instance = make_instance()
    d = instance.X.shape[-1]
    runs = {
        f"normalized GD (eta={eta_normalized:g})": dict(eta=eta_normalized, normalized=True),
        f"GD (constant eta={eta_constant:g})": dict(eta=eta_constant, normalized=False),
    }
    trajs = [
        gradient_descent(instance.K, instance.gamma, np.zeros((1, d)), n_iter=n_iter, loss=loss, **kw)
        for kw in runs.values()
    ]
    traj = Trajectory(p=np.concatenate([t.p for t in trajs]), skipped=np.concatenate([t.skipped for t in trajs]))
    labels = list(runs)
    gmm = _direction_row(name, "gmm", optimal_tokens(instance.gamma), gmm_direction(instance.K, instance.gamma))
    rows = [gmm] + _p_runs(name, instance, labels, traj.p[:, 0], traj.p_final)
    return ExperimentTables(_p_frame(name, labels, traj, instance.K), tokens_frame(name, instance), _directions(rows))


def gd_under_each_loss(
    name: str,
    make_instance: Callable[[float], Instance],
    *,
    eta: float,
    n_iter: int,
    C: Sequence[float],
    losses: Sequence[str],
) -> ExperimentTables:
    """Figure 5: trajectories from p(0) = 0 for scores (C, 1) under each loss; all end at p_mm = (1, 0).

    Paper: Section 4, "Transient optimization dynamics and the influence of the loss function".
    """
    insts = [make_instance(c) for c in C]
    K = np.stack([i.K for i in insts])
    gamma = np.stack([i.gamma for i in insts])
    frames, rows = [], []
    for loss in losses:
        traj = gradient_descent(K, gamma, np.zeros((len(C), 3)), eta=eta, n_iter=n_iter, loss=loss)
        labels = [f"{loss}, C={c:g}" for c in C]
        frame = _p_frame(name, labels, traj, K, dense=300)  # the plot shows ||p|| <= ~12
        frame["loss"] = loss
        frame["C"] = np.repeat(np.asarray(C, dtype=float), frame.shape[0] // len(C))
        frames.append(frame)
        for instance, label, start, final in zip(insts, labels, traj.p[:, 0], traj.p_final, strict=True):
            rows += _p_runs(name, instance, [label], start[None], final[None])
    tokens = pd.concat([tokens_frame(name, i).assign(C=c) for i, c in zip(insts, C, strict=True)], ignore_index=True)
    return ExperimentTables(pd.concat(frames, ignore_index=True), tokens, _directions(rows))
