"""The basin study (Theorem 3 on the Figure 1(b) data): the L_p bound, both GD codes, the cone and its two claims."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG

from maxmargin.claims.basin import cone_onset, measure_fig1b_consistent, measure_lmm_cone
from maxmargin.core.gd import gradient_descent
from maxmargin.core.model import grad_p
from maxmargin.experiments import basin, instances, synthetic
from maxmargin.experiments.basin import fig1b_agreement
from maxmargin.pipeline import run_experiment
from maxmargin.registry import derived

TOLS = {k: DEFAULT_CONFIG["census"][k] for k in ("saturation_tol", "svm_tol")}
FIG1 = DEFAULT_CONFIG["synthetic"]["fig1"]
# A coarse study: 21 x 15 starts (step 0.4 x 0.5: the six Figure 1(b) starts are nodes), five radii, 0.2 degree arcs.
COARSE = {
    "grid": {"p1": {"min": -1.6, "max": 6.4, "num": 21}, "p2": {"min": -3.0, "max": 4.0, "num": 15}},
    "constant": {"step_fraction": 1.0, "n_iter": 200},
    "cone": {
        "radii": {"min": 2.0, "max": 32.0, "num": 5},
        "max_half_angle_deg": 20.0,
        "n_arc": 201,
        "r_max": 1.0e6,
        "n_r": 100,
    },
}


@pytest.fixture(scope="module")
def study() -> basin.BasinTables:
    return basin.basin_study(COARSE, FIG1, TOLS, workers=2)


@pytest.fixture(scope="module")
def fig1b() -> synthetic.ExperimentTables:
    return run_experiment("fig1b", derived.experiment_settings("fig1b", DEFAULT_CONFIG), {})


def claim_config(study_config: dict) -> dict:
    cfg = copy.deepcopy(DEFAULT_CONFIG)
    cfg["basin"] = study_config
    return cfg


def test_smoothness_bound_holds_against_finite_differences():
    """L_p bound >= the largest Hessian norm found by central differences of the exact gradient.

    The bound is safe, not tight: the sampled sup is 0.0514 (at p = (-0.94, -1.1) on a 601 x 601 grid of
    [-6, 6]^2), 15 times below it; Theorem 3's step eta <= 1/L_p only needs the bound."""
    inst = instances.fig1b()
    K, gamma = inst.K, inst.gamma
    bound = basin.smoothness_bound(K, gamma, "logistic")
    rng = np.random.default_rng(0)
    p = np.zeros((4000, 3))
    p[:, :2] = rng.uniform(-4, 4, (4000, 2))
    h = 1e-5
    hess = np.stack(
        [(grad_p(K, gamma, p + h * e).value - grad_p(K, gamma, p - h * e).value) / (2 * h) for e in np.eye(3)], -1
    )
    largest = np.linalg.norm(hess, ord=2, axis=(-2, -1)).max()
    assert 0.05 < largest < 0.052 and largest <= bound
    assert bound == pytest.approx(0.7596946316506488, rel=1e-12)  # ||K~||^2 (1/16 + 5/8) with ||K~||^2 = 1.10501...


def test_span_gd_matches_gradient_descent_for_both_steps():
    """The grid's GD (key coordinates) and core.gd.gradient_descent (the fig1b experiment's) end at the same p."""
    inst = instances.fig1b()
    p0 = basin.grid_starts({"min": -1, "max": 3, "num": 5}, {"min": -2, "max": 2, "num": 5}, 3)
    for variant in basin.gd_variants(FIG1, COARSE["constant"], basin.smoothness_bound(inst.K, inst.gamma)):
        p, _ = basin.run_gd(inst.K, inst.gamma, p0, variant, "logistic", workers=2)
        ref = gradient_descent(
            inst.K, inst.gamma, p0, eta=variant.eta, n_iter=variant.n_iter, normalized=variant.normalized
        )
        assert np.abs(p - ref.p_final).max() < 1e-10 * max(1.0, np.abs(ref.p_final).max())


@pytest.mark.solves  # seconds of GD or of solves: `make test` and the second-kernel step, not the unit tier
def test_grid_agrees_with_fig1b_where_they_share_a_start(study, fig1b):
    """Every Figure 1(b) start is a grid node; the grid's run from it ends where fig1b's run ends, same label."""
    traj = fig1b.trajectories
    final = traj[traj["iteration"] == traj["iteration"].max()]
    agreement = fig1b_agreement(study.basin, study.paths)
    assert agreement["on_grid"].all() and len(agreement) == 2 * len(FIG1["starts"])
    assert (agreement["grid_class"] == agreement["path_class"]).all()
    assert agreement["max_abs_diff"].max() < 1e-10
    normalized = study.paths[study.paths["variant"] == "normalized"]
    ends = normalized[normalized["iteration"] == FIG1["n_iter"]]
    assert np.abs(ends[["p1", "p2"]].to_numpy() - final[["p1", "p2"]].to_numpy()).max() == 0.0  # same function
    runs = fig1b.directions[fig1b.directions["record"] == "gd_run"]
    assert list(agreement.loc[agreement["variant"] == "normalized", "grid_class"]) == list(runs["kind"])


def test_default_grid_has_the_fig1b_starts_as_nodes():
    grid = basin.grid_starts(DEFAULT_CONFIG["basin"]["grid"]["p1"], DEFAULT_CONFIG["basin"]["grid"]["p2"], 3)
    assert grid.shape[0] >= 200 * 200
    for start in FIG1["starts"]:
        assert np.any((grid[:, 0] == start[0]) & (grid[:, 1] == start[1]))


def test_cone_extent_stops_before_the_first_failure():
    angles = basin.linear_grid(-2.0, 2.0, 9)  # step 0.5 degrees
    ok = np.array([False, True, True, True, True, True, False, True, True])  # fails at -2 and +1
    mu, half, n, all_ok = basin.cone_extent(angles, ok)
    assert (half, n, all_ok) == (0.5, 3, False)
    assert mu == pytest.approx(1 - np.cos(np.deg2rad(0.5)))
    assert basin.cone_extent(angles, np.ones(9, bool))[1:] == (2.0, 9, True)
    assert basin.cone_extent(angles, angles != 0)[:3] == (0.0, 0.0, 0)


def test_claim_basin_lmm_cone(study):
    """On the coarse grid: normalized GD's cone opens from a finite R0 and stays inside the stationary-point-free
    cone, whose half-angle is arctan(0.1) = 5.71 deg (far out, the (0, 0) token's pull beats the GMM token's iff
    tan(theta) < 0.1, theta above the LMM)."""
    onset = cone_onset(study.cone)
    step = 2 * COARSE["cone"]["max_half_angle_deg"] / (COARSE["cone"]["n_arc"] - 1)
    free = study.cone[study.cone["variant"] == basin.NO_STATIONARY]
    assert np.abs(free["half_angle_deg"] - np.degrees(np.arctan(0.1))).max() <= step
    normalized = study.cone[study.cone["variant"] == "normalized"]
    assert 2.0 <= onset.loc["normalized", "R0"] <= 8.0
    assert (normalized["mu_max"].to_numpy() <= free["mu_max"].to_numpy()).all()
    assert normalized["mu_cone"].is_monotonic_increasing and normalized["mu_max"].iloc[-1] > 0.003
    assert normalized.loc[normalized["n_starts"] > 0, "min_final_corr"].min() > 0.998
    measured, verdict, note = measure_lmm_cone({"basin_cone": study.cone}, claim_config(COARSE))
    assert verdict == "holds" and "normalized: R0 = " in measured and "201 starts per arc" in note
    closed = study.cone.assign(mu_max=0.0, mu_cone=0.0)
    assert measure_lmm_cone({"basin_cone": closed}, claim_config(COARSE))[1] == "differs"


def test_claim_basin_fig1b_consistent(study, fig1b):
    tables = {"basin": study.basin, "directions": fig1b.directions}
    measured, verdict, _ = measure_fig1b_consistent(tables, claim_config(COARSE))
    assert (measured.split()[0], verdict) == (f"{len(FIG1['starts'])}/{len(FIG1['starts'])}", "holds")
    start = (study.basin["p1"] == 0.0) & (study.basin["p2"] == -1.0) & (study.basin["variant"] == "normalized")
    assert study.basin.loc[start, "class"].item() == "lmm"
    flipped = study.basin.assign(**{"class": np.where(start, "gmm", study.basin["class"])})
    assert measure_fig1b_consistent({**tables, "basin": flipped}, claim_config(COARSE))[1] == "differs"


def test_constant_step_respects_theorem_3_and_does_not_saturate_the_plane(study):
    """eta = 1 / (L_p bound) <= 1/L_p; within its budget constant-step GD saturates no start of the plane."""
    constant = study.cone[study.cone["variant"] == "constant"]
    assert constant["eta"].iloc[0] * constant["L_p_bound"].iloc[0] == pytest.approx(1.0)
    grid = study.basin[study.basin["variant"] == "constant"]
    assert (grid["class"] == "not_saturated").all()
    assert set(grid["heading"]) == {"gmm", "lmm"}
    assert isinstance(study.basin, pd.DataFrame) and list(study.basin.columns) == basin.BASIN_COLUMNS
