"""Theorem-level behaviour of the GD runners on the smallest instances that show it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG

from maxmargin import registry
from maxmargin.core.gd import cosine, gradient_descent, joint_normalized_gd
from maxmargin.core.svm import att_svm, p_relax, v_svm
from maxmargin.experiments import instances
from maxmargin.experiments.instances import scored_tokens
from maxmargin.pipeline import run_experiment
from maxmargin.registry.derived import experiment_settings


def test_theorem2_single_input_converges_to_gmm_from_every_start():
    # Theorem 2 (n = 1, Assumption B): p(t)/||p(t)|| -> p_mm*/||p_mm*|| from any start.
    rng = np.random.default_rng(7)
    keys2d = rng.normal(size=(1, 5, 2)) * 1.5
    inst = scored_tokens("thm2", keys2d, [[1.0, 0.4, 0.4, 0.4, 0.4]])
    gmm = att_svm(inst.K, np.array([0])).direction
    p0 = instances.starts_on_circle(8, 3.0, 3)
    traj = gradient_descent(inst.K, inst.gamma, p0, eta=0.1, n_iter=3000)
    early = cosine(traj.p[:, 300], gmm)
    late = cosine(traj.p_final, gmm)
    assert np.all(late > 0.999)
    assert np.all(late >= early - 1e-9)  # the correlation keeps increasing (Figure 1(a))
    assert np.all(np.linalg.norm(traj.p_final, axis=-1) > 250)  # ||p|| diverges


def test_theorem2_constant_step_norm_diverges():
    inst = instances.fig1a()
    traj = gradient_descent(inst.K, inst.gamma, np.zeros(3), eta=1.0, n_iter=2000, normalized=False)
    norms = np.linalg.norm(traj.p, axis=-1)
    assert np.all(np.diff(norms[10:]) > 0)
    assert norms[-1] > norms[200] + 0.5


def test_theorem3_start_in_lmm_cone_converges_to_lmm_and_outside_to_gmm():
    inst = instances.fig1b()
    lmm = att_svm(inst.K, np.array([1])).direction  # (1, 0, 0): token (1, 0) against (0, 0)
    gmm = att_svm(inst.K, np.array([0])).direction
    np.testing.assert_allclose(lmm, [1.0, 0.0, 0.0], atol=1e-12)
    inside = instances.starts_in_cone(lmm, 5, 8.0, np.deg2rad(3.0))
    traj = gradient_descent(inst.K, inst.gamma, inside, eta=0.1, n_iter=1000)
    assert np.all(cosine(traj.p_final, lmm) > 0.999)
    off_axis = cosine(traj.p[:, 0], lmm) < 0.9999
    assert np.all(cosine(traj.p_final, lmm)[off_axis] > cosine(traj.p[:, 0], lmm)[off_axis])  # the angle shrinks
    outside = np.array([[-1.0, 2.0, 0.0]])
    traj = gradient_descent(inst.K, inst.gamma, outside, eta=0.1, n_iter=1000)
    assert cosine(traj.p_final, gmm)[0] > 0.999


def test_n2_counterexample_two_starts_two_limits():
    # Appendix E, Figure 8: with n = 2 the start decides between the GMM and an LMM.
    inst = instances.fig8()
    traj = gradient_descent(inst.K, inst.gamma, np.array([[-1.0, 1.5], [1.0, -1.7]]), eta=0.1, n_iter=1000)
    np.testing.assert_allclose(att_svm(inst.K, np.array([0, 0])).solution, [0.5, 1.5], atol=1e-12)
    np.testing.assert_allclose(att_svm(inst.K, np.array([0, 1])).solution, [0.5, 0.0], atol=1e-12)
    assert cosine(traj.p_final[0], [0.5, 1.5]) > 0.999
    assert cosine(traj.p_final[1], [1.0, 0.0]) > 0.999


def test_joint_gd_figure3b_goes_to_p_relax_not_p_mm():
    # Theorem 6: the third input is not a support vector of (SVM), so p -> p_relax = (1, 0), not p_mm = (1.25, 0.25).
    inst = instances.fig3("b")
    traj = joint_normalized_gd(inst.X, inst.Y, inst.K, np.zeros(2), np.array([0.5, 0.0]), eta=0.1, n_iter=1000)
    alpha = np.array([1, 1, 1])
    vmm = v_svm(inst.X[np.arange(3), alpha], inst.Y)
    relax = p_relax(inst.K, alpha, vmm.active)
    np.testing.assert_allclose(vmm.direction, [0.0, 1.0], atol=1e-8)
    np.testing.assert_allclose(relax.direction, [1.0, 0.0], atol=1e-12)
    assert cosine(traj.p_final, relax.direction) > 0.9999
    assert cosine(traj.p_final, att_svm(inst.K, alpha).direction) < 0.99
    assert cosine(traj.v_final, vmm.direction) > 0.9999


def test_joint_gd_figure3a_p_relax_equals_p_mm():
    inst = instances.fig3("a")
    traj = joint_normalized_gd(inst.X, inst.Y, inst.K, np.zeros(2), np.array([0.5, 0.0]), eta=0.1, n_iter=1000)
    assert cosine(traj.p_final, [4.0, 1.0]) > 0.9999  # p_mm = (4/3, 1/3)


def test_zero_gradient_steps_are_skipped_and_counted():
    inst = scored_tokens("flat", [[[0.0, 0.0], [1.0, 0.0]]], [[0.5, 0.5]])  # equal scores: grad L = 0
    p0 = np.array([[0.3, -0.2, 0.0]])
    traj = gradient_descent(inst.K, inst.gamma, p0, eta=0.1, n_iter=25)
    assert traj.skipped.tolist() == [25]
    np.testing.assert_array_equal(traj.p_final, p0)


def test_batch_of_runs_equals_separate_runs():
    inst = instances.fig1c(**DEFAULT_CONFIG["synthetic"]["data"]["fig1c"])
    p0 = instances.starts_on_circle(4, 2.0, 3)
    together = gradient_descent(inst.K, inst.gamma, p0, eta=0.1, n_iter=200, keep_path=False)
    for b in range(4):
        alone = gradient_descent(inst.K, inst.gamma, p0[b], eta=0.1, n_iter=200, keep_path=False)
        np.testing.assert_allclose(together.p_final[b], alone.p_final, rtol=1e-13)


def test_bad_step_size_is_rejected():
    inst = instances.fig1a()
    with pytest.raises(ValueError, match="eta > 0"):
        gradient_descent(inst.K, inst.gamma, np.zeros(3), eta=0.0, n_iter=10)


def _gd_runs(name: str, settings: dict) -> pd.DataFrame:
    """The gd_run rows of a registered experiment's directions table, indexed by their start (key plane).

    ``settings`` is the experiment's config block, read as the workflow reads it."""
    config = {"synthetic": {registry.experiment(name).block: settings}}
    table = run_experiment(name, experiment_settings(name, config), {}).directions
    runs = table[table["record"] == "gd_run"]
    return runs.assign(p0=[tuple(json.loads(x)[:2]) for x in runs["start"]]).set_index("p0")


def test_figure1_notebook_starts_reach_the_hand_solved_directions():
    # The authors' notebook starts (0, y). Fig 1(b): p_mm* = (-0.1, 1, 0) / 1.01 (only (-1.1, 1).p >= 1 is slack:
    # 1.11 / 1.01 > 1) and the LMM of token (1, 0) is p_mm = (1, 0, 0) ((1.1, -1).p = 1.1 > 1, slack).
    fig1 = DEFAULT_CONFIG["synthetic"]["fig1"]
    assert [tuple(s) for s in fig1["starts"]] == [
        (0.0, 1.0),
        (0.0, 0.5),
        (0.0, 0.0),
        (0.0, -0.5),
        (0.0, -1.0),
        (0.0, -1.5),
    ]
    runs_b = _gd_runs("fig1b", fig1)
    assert runs_b["kind"].to_dict() == {
        (0.0, 1.0): "gmm",
        (0.0, 0.5): "gmm",
        (0.0, 0.0): "gmm",
        (0.0, -0.5): "gmm",
        (0.0, -1.0): "lmm",
        (0.0, -1.5): "lmm",
    }
    gmm, lmm = np.array([-0.1, 1.0, 0.0]) / 1.01, np.array([1.0, 0.0, 0.0])
    for p0, run in runs_b.iterrows():
        target = gmm if run["kind"] == "gmm" else lmm
        assert cosine(json.loads(run["direction"]), target) > 0.9999, p0  # measured: >= 0.99996
    assert set(_gd_runs("fig1a", fig1)["kind"]) == {"gmm"}  # Theorem 2: no LMM in (a)
    circle = _gd_runs("fig1b", {**fig1, "starts": {"circle": {"n": 5, "radius": 2.5}}})  # starts are data
    assert len(circle) == 5
    np.testing.assert_allclose(np.hypot(*np.array(circle.index.tolist()).T), 2.5)


def test_figure3_notebook_start_reaches_p_mm_and_v_mm():
    # p(0) = (0, -1), v(0) = (-1, 0) (the notebook). Fig 3(a): p_mm = (4/3, 1/3) (active (1,-1) and (0.5,1), both
    # multipliers 7/9, 10/9 > 0) and v_mm = (0, 1) (every Y_i v.x_i = 1).
    fig3 = DEFAULT_CONFIG["synthetic"]["fig3"]
    runs = _gd_runs("fig3a", fig3)
    p_run, v_run = runs[runs["kind"] == "p_relax"].iloc[0], runs[runs["kind"] == "v_mm"].iloc[0]
    assert json.loads(p_run["start"]) == [0.0, -1.0] and json.loads(v_run["start"]) == [-1.0, 0.0]
    assert cosine(json.loads(p_run["direction"]), [4.0, 1.0]) > 0.99999  # measured 0.999994
    assert cosine(json.loads(v_run["direction"]), [0.0, 1.0]) > 0.99999  # measured 0.999998
    with pytest.raises(ValueError, match="synthetic.fig3.v_starts"):
        run_experiment("fig3a", {**fig3, "v_starts": [[-1.0, 0.0], [0.0, 1.0]]}, {})
