"""The regularization-path tables (results/tables/regpath.csv, regpath_compare.csv) of the pipeline.

Paper: eq. (2) and Theorem 1 on the Fig. 1(b) data; Theorems 5 and 6 on the Fig. 3(a)/(b) data. The paths
themselves are solved by :mod:`maxmargin.core.regpath`; here each one becomes a long table, one row per radius
and max-margin direction, next to GD runs and the constrained local optima.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from maxmargin import registry
from maxmargin.core.directions import BLOCK_OF_KIND, joint_candidates, max_margin_directions
from maxmargin.core.gd import cosine, gradient_descent, record_iterations
from maxmargin.core.logspace import log_excess_risk
from maxmargin.core.loss import LossName
from maxmargin.core.model import Array, risk
from maxmargin.core.regpath import RegularizationPath, regularization_path_joint, regularization_path_p
from maxmargin.core.softmax import selected_tokens
from maxmargin.core.svm import att_svm, p_relax, v_svm
from maxmargin.experiments import instances

# ---------------------------------------------------------------------------------------------
# Tables behind results/tables/regpath.csv and regpath_compare.csv
# ---------------------------------------------------------------------------------------------

REGPATH_COLUMNS = registry.columns("regpath")


def _table_cosine(points: Array, direction: Array | None) -> Array:
    """Cosine of each row of ``points`` with ``direction`` (:func:`maxmargin.core.gd.cosine`), NaN without one."""
    points = np.atleast_2d(np.asarray(points, dtype=np.float64))
    if direction is None:
        return np.full(points.shape[0], np.nan)
    return cosine(points, direction)


def _tokens(alpha: Array) -> str:
    return json.dumps([int(a) for a in np.ravel(alpha)])


@dataclass(frozen=True)
class _RunRecord:
    """One run's values per radius (or per recorded iteration), in the table's columns.

    ``points``, ``kkt_residual`` and ``active`` are per block ("p", "v"); the rest is shared by the blocks.
    """

    R: Array
    points: dict[str, Array | None]
    kkt_residual: dict[str, Array]
    active: dict[str, Array]
    loss: Array
    log_excess_loss: Array
    selected: Array
    n_starts: int
    n_at_best: Array

    def rows(self, instance: str, method: str, run: str, refs: dict[str, Array | None]) -> list[dict]:
        """One row per (radius, kind): the cosine of the block (p or v) that ``kind`` refers to."""
        rows = []
        for kind, ref in refs.items():
            block = BLOCK_OF_KIND[kind]
            cos = _table_cosine(self.points[block], ref)
            for j, R in enumerate(self.R):
                rows.append(
                    {
                        "instance": instance,
                        "method": method,
                        "run": run,
                        "R": float(R),
                        "kind": kind,
                        "cosine": float(cos[j]),
                        "kkt_residual": float(self.kkt_residual[block][j]),
                        "loss": float(self.loss[j]),
                        "log_excess_loss": float(self.log_excess_loss[j]),
                        "active": self.active[block][j],
                        "selected": _tokens(self.selected[j]),
                        "n_starts": self.n_starts,
                        "n_at_best": self.n_at_best[j],
                    }
                )
        return rows


def _path_record(path: RegularizationPath) -> _RunRecord:
    return _RunRecord(
        R=path.radii,
        points={"p": path.p, "v": path.v},
        kkt_residual={"p": path.kkt_residual_p, "v": path.kkt_residual_v},
        active={"p": path.active_p, "v": path.active_v},
        loss=path.loss,
        log_excess_loss=path.log_excess,
        selected=path.selected,
        n_starts=path.n_starts,
        n_at_best=path.n_at_best,
    )


def _local_rows(
    instance: str, path: RegularizationPath, K: Array, refs: dict[str, Array | None], local_tol: float
) -> list[dict]:
    """Best end point per token selection other than the path's, if it is a KKT point (kkt <= local_tol).

    These are the constrained local optima (e.g. near the LMM of Fig. 1(b)), kept to show that the path
    prefers the GMM although a local solution near the LMM exists at large R (Theorem 1 vs Theorem 3).
    """
    rows = []
    for j, R in enumerate(path.radii):
        selections = selected_tokens(K, path.ends_p[j])
        groups: dict[str, list[int]] = {}
        for start, selection in enumerate(selections):
            groups.setdefault(_tokens(selection), []).append(start)
        for key, members in groups.items():
            converged = [start for start in members if path.ends_kkt_residual[j, start] <= local_tol]
            if key == _tokens(path.selected[j]) or not converged:
                continue
            start = converged[int(np.argmin(path.ends_log_excess[j, converged]))]
            record = _RunRecord(
                R=np.array([R]),
                points={"p": path.ends_p[j, start][None], "v": None},
                kkt_residual={"p": np.array([path.ends_kkt_residual[j, start]])},
                active={"p": np.array([True])},
                loss=np.array([path.ends_loss[j, start]]),
                log_excess_loss=np.array([path.ends_log_excess[j, start]]),
                selected=selections[start][None],
                n_starts=path.n_starts,
                n_at_best=np.array([len(converged)]),
            )
            rows += record.rows(instance, "local", f"tokens {key}", refs)
    return rows


def _gd_rows(
    instance: str,
    inst: instances.Instance,
    refs: dict[str, Array | None],
    loss: LossName,
    *,
    eta: float,
    n_iter: int,
    starts: Sequence[Sequence[float]],
) -> list[dict]:
    """Normalized GD (eq. (3), Appendix E) from each start, recorded at log-spaced iterations with R = ||p(t)||."""
    p0 = np.asarray(starts, dtype=np.float64)
    trajectory = gradient_descent(inst.K, inst.gamma, p0, eta=eta, n_iter=n_iter, loss=loss)
    recorded = record_iterations(n_iter, dense=20, n_log=80)
    rows = []
    for start, p_start in enumerate(p0):
        p = trajectory.p[start, recorded]
        missing = np.full(len(recorded), np.nan)
        record = _RunRecord(
            R=np.linalg.norm(p, axis=-1),
            points={"p": p},
            kkt_residual={"p": missing},
            active={"p": missing},
            loss=risk(inst.K, inst.gamma, p, loss),
            log_excess_loss=log_excess_risk(inst.K, inst.gamma, p, loss),
            selected=selected_tokens(inst.K, p),
            n_starts=1,
            n_at_best=missing,
        )
        label = "[" + ", ".join(f"{x:g}" for x in p_start) + "]"
        rows += record.rows(instance, "gd", f"GD from {label}", refs)
    return rows


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=REGPATH_COLUMNS)
    return frame.astype({"n_starts": "Int64", "n_at_best": "Int64", "active": "boolean"})


def _fig1b_rows(radii: Array, loss: LossName, local_tol: float, gd: dict | None, **solver: int | float) -> list[dict]:
    """Theorem 1 on the Fig. 1(b) data: the path against the GMM and LMM, its local optima and the GD runs."""
    inst = instances.fig1b()
    found = max_margin_directions(inst.K, inst.gamma)
    refs = {kind: next(s.direction for k, _, s in found if k == kind) for kind in ("gmm", "lmm")}
    candidates = np.array([s.direction for _, _, s in found])
    path = regularization_path_p(inst.K, inst.gamma, radii, loss, candidates=candidates, **solver)
    rows = _path_record(path).rows("fig1b", "path", "path", refs)
    rows += _local_rows("fig1b", path, inst.K, refs, local_tol)
    if gd is not None:
        rows += _gd_rows("fig1b", inst, refs, loss, **gd)
    return rows


def _fig3_rows(instance: str, radii: Array, loss: LossName, **solver: int | float) -> list[dict]:
    """Theorems 5-6 on the Fig. 3(a)/(b) data: the joint path against the limits of the tokens it selects last."""
    inst = instances.fig3(instance[-1])
    candidates = [c[1:] for c in joint_candidates(inst.X, inst.Y, inst.K)]
    path = regularization_path_joint(inst.X, inst.Y, inst.K, radii, loss, candidates=candidates, **solver)
    alpha = path.selected[-1]
    vmm = v_svm(inst.X[np.arange(inst.X.shape[0]), alpha], inst.Y)
    pmm = att_svm(inst.K, alpha)
    relax = p_relax(inst.K, alpha, vmm.active) if vmm.feasible else pmm
    refs = {"p_mm": pmm.direction, "p_relax": relax.direction, "v_mm": vmm.direction}
    return _path_record(path).rows(instance, "path", "path", refs)


def regpath_table(
    instance: str,
    *,
    radii: Array,
    loss: LossName,
    n_random: int,
    seed: int,
    n_iter: int,
    tol: float,
    local_tol: float,
    gd: dict | None,
) -> pd.DataFrame:
    """The regularization path of one instance as a long table (one row per R and max-margin direction).

    Paper: Theorem 1 on the Fig. 1(b) data (``fig1b``: kinds gmm, lmm; plus normalized GD runs, eq. (3),
    from ``gd["starts"]``, with R = ||p(t)||) and Theorems 5-6 on the Fig. 3(a)/(b) data (``fig3a``,
    ``fig3b``: kinds p_mm, p_relax for p_R and v_mm for v_r, with r = R, for the tokens selected at the
    largest R). ``method`` is ``path`` (the constrained optimum), ``local`` (other KKT points, by
    token selection: on the Fig. 1(b) data the local optimum near the LMM, from R ~ 20 on) or ``gd``. The
    workflow writes the ``path`` rows to results/tables/regpath.csv and the ``local`` and ``gd`` rows, what the
    path is compared with, to results/tables/regpath_compare.csv.
    """
    solver = {"n_random": n_random, "seed": seed, "n_iter": n_iter, "tol": tol}
    if instance == "fig1b":
        return _frame(_fig1b_rows(radii, loss, local_tol, gd, **solver))
    if instance in ("fig3a", "fig3b"):
        return _frame(_fig3_rows(instance, radii, loss, **solver))
    raise ValueError(f"unknown instance {instance!r}; allowed: {', '.join(registry.REGPATH_INSTANCES)}")


__all__ = ["REGPATH_COLUMNS", "regpath_table"]
