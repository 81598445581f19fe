"""The convergence census (Appendix E, Figures 9-10): exact kernels, hand-built classifications, split invariance."""

from __future__ import annotations

import types

import mpmath
import numpy as np
import pandas as pd
import pytest
import scipy.optimize
from conftest import DEFAULT_CONFIG, snakemake
from scipy.optimize import brentq

from maxmargin.core import svm
from maxmargin.core.directions import classify_direction
from maxmargin.core.gd import gradient_descent
from maxmargin.core.model import grad_p, risk, token_scores
from maxmargin.core.softmax import log_non_selected_mass, log_non_selected_mass_of_logits
from maxmargin.core.span_gd import key_gradient, normalized_gd_in_span, span_coordinates
from maxmargin.core.svm import att_svm_ldp
from maxmargin.experiments import census
from maxmargin.experiments import census_tables as tables
from maxmargin.registry import census as registry_census
from maxmargin.registry import columns

SUMMARY_COLUMNS = columns("census_summary")


def census_settings(**changes) -> census.CensusSettings:
    """The default config's census settings, with ``changes``."""
    return census.CensusSettings.from_config(DEFAULT_CONFIG["census"], **changes)


def classify_by_ldp(keys, gamma, alpha):
    """The census's classification: (ATT-SVM) by LDP (must pass its KKT check here), then Definitions 1-2."""
    fast = att_svm_ldp(keys, alpha)
    assert fast is not None
    return classify_direction(keys, gamma, alpha, svm=fast)


def random_keys(seed: int, B: int, n: int, T: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    K = rng.standard_normal((B, n, T, d))
    K /= np.linalg.norm(K, axis=-1, keepdims=True)
    return K, rng.uniform(-1, 1, (B, n, T))


def full_problem(seed: int, d: int, trials, n: int = 4, T: int = 6):
    """The census trials in their original d coordinates (for the references)."""
    data = [census.sample_trial(seed, d, j, n, T) for j in trials]
    X, Y, v, u = (np.stack([x[k] for x in data]) for k in range(4))
    return X, token_scores(X, Y, v), u


# --- exact kernels ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["logistic", "exponential", "correlation"])
@pytest.mark.parametrize("scale", [0.0, 1.0, 30.0, 1000.0, 5000.0])
def test_key_gradient_equals_model_grad_p(loss, scale):
    # ||p|| in the thousands: logit gaps far beyond 745, where every non-selected probability underflows.
    K, gamma = random_keys(1, B=6, n=4, T=6, d=7)
    p = np.random.default_rng(2).standard_normal((6, 7))
    p *= scale / np.maximum(np.linalg.norm(p, axis=-1, keepdims=True), 1e-300)
    beta, log_scale = key_gradient(np.einsum("bntd,bd->bnt", K, p), gamma, loss)
    ref = grad_p(K, gamma, p, loss)
    fast = np.einsum("bnt,bntd->bd", beta, K)
    np.testing.assert_allclose(log_scale, ref.log_scale, rtol=1e-12, atol=1e-9)
    err = np.linalg.norm(fast - ref.scaled, axis=-1) / np.linalg.norm(ref.scaled, axis=-1)
    assert err.max() < 1e-12
    assert np.all(np.linalg.norm(fast, axis=-1) > 0)  # the direction survives saturation


def test_saturation_exact_far_below_machine_epsilon():
    # n = 2 inputs, logit gaps 50 and 70: 1 - s_bar = (e^-50 + e^-70 + 2 e^-75 ...) / 2 ~ 1e-22.
    z = np.array([[[0.0, -50.0, -80.0], [3.0, -67.0, -72.0]]])
    with mpmath.workdps(60):
        mass = []
        for row in z[0]:
            e = [mpmath.exp(mpmath.mpf(x) - max(row)) for x in row]
            mass.append(1 - max(e) / mpmath.fsum(e))
        exact = float(mpmath.log(mpmath.fsum(mass) / 2))
    got = census.log_unsaturation(z)[0]
    assert exact < np.log(1e-20)
    assert got == pytest.approx(exact, rel=1e-13)
    K = np.array([[[[0.0], [-50.0], [-80.0]], [[3.0], [-67.0], [-72.0]]]])
    np.testing.assert_allclose(
        log_non_selected_mass_of_logits(z), log_non_selected_mass(K, np.array([[1.0]])), rtol=1e-13
    )


@pytest.mark.parametrize(("tol", "saturated"), [(1.0001e-5, True), (0.9999e-5, False)])
def test_saturation_threshold(tol, saturated):
    # One input, two tokens: 1 - s = 1 / (1 + e^x) = 1e-5 exactly at x = log(1e5 - 1).
    z = np.array([[[np.log(1e5 - 1.0), 0.0]]])
    assert (census.log_unsaturation(z)[0] <= np.log(tol)) == saturated


@pytest.mark.parametrize(("d", "init_scale"), [(5, 0.0), (30, 0.0), (30, 0.7), (3, 0.5)])
def test_gd_in_key_coordinates_equals_gd_in_R_d(d, init_scale):
    # d = 30 > nT = 24 uses the QR basis of the key span; init_scale > 0 adds a part of p(0) outside it.
    trials = np.arange(6)
    X, gamma, u = full_problem(0, d, trials)
    p0 = init_scale * u
    ref = gradient_descent(X, gamma, p0, eta=1.0, n_iter=300, keep_path=False).p_final
    batch = census.sample_batch(0, d, trials, 4, 6, init_scale)
    traj = normalized_gd_in_span(batch, eta=1.0, n_iter=300, loss="logistic")
    p = p0 + np.einsum("bi,bid->bd", traj.a, X.reshape(6, 24, d))
    err = np.linalg.norm(p - ref, axis=-1) / np.linalg.norm(ref, axis=-1)
    assert err.max() < 1e-10
    rows = census.census_rows(batch, census_settings(n_iter=300, init_scale=init_scale), d)
    np.testing.assert_allclose(rows["p_norm"], np.linalg.norm(ref, axis=-1), rtol=1e-10)


# --- classification ---------------------------------------------------------------------------------------------

# n = 1, T = 3, d = 2: keys (0, 0), (1, 0), (-1, 1). With alpha = token 1, (ATT-SVM) reads p1 >= 1 and
# 2 p1 - p2 >= 1, so p_mm = (1, 0); token 0 is on the margin (the only SVM-neighbour), token 2 is not (2 > 1).
KEYS = np.array([[[0.0, 0.0], [1.0, 0.0], [-1.0, 1.0]]])


def test_lmm_that_is_not_gmm():
    gamma = np.array([[0.0, 0.5, 1.0]])  # the neighbour scores less (locally optimal); token 2 is the optimum
    res = classify_by_ldp(KEYS, gamma, np.array([1]))
    assert res.kind == "lmm"
    np.testing.assert_allclose(res.svm.solution, [1.0, 0.0], atol=1e-14)
    np.testing.assert_array_equal(res.neighbors, [[True, False, False]])
    assert res.score_gap == 0.5
    assert classify_direction(KEYS, gamma, np.array([1])).kind == "lmm"
    # GD started in the LMM's cone stays there (Theorem 3): the census calls the run an LMM.
    batch = span_coordinates(KEYS[None], gamma[None], np.array([[3.0, 0.0]]))
    row = census.census_rows(batch, census_settings(n=1, T=3, n_iter=1000), d=2).iloc[0]
    assert row["saturated"] and row["class"] == "lmm" and row["alpha"] == "1" and not row["optimal_alpha"]
    assert row["corr"] > 0.999 and row["gap"] == 0.5


def test_tie_with_a_neighbour_at_the_optimal_tokens_is_the_gmm():
    # Definition 1: alpha = opt makes p_mm(alpha) the GMM, even though its SVM-neighbour (token 0) ties with it
    # (Definition 2's strict inequality fails, so it is not "locally optimal", but opt is simply not unique).
    gamma = np.array([[0.5, 0.5, 0.2]])
    res = classify_by_ldp(KEYS, gamma, np.array([1]))
    assert res.kind == "gmm" and res.score_gap == 0.0
    assert classify_direction(KEYS, gamma, np.array([1])).kind == "gmm"
    # The same tie when alpha is not optimal (token 2 scores more): neither locally nor globally optimal.
    assert classify_by_ldp(KEYS, np.array([[0.5, 0.5, 0.9]]), np.array([1])).kind == "neither"
    assert classify_by_ldp(KEYS, np.array([[0.4, 0.5, 0.2]]), np.array([1])).kind == "gmm"


def test_svm_neighbours_use_the_configured_tolerance():
    # Token 2 sits 1e-8 (relative) off the margin of p_mm = (1, 0): (k_1 - k_2)^T p_mm = 1 + 1e-8. It is an
    # SVM-neighbour for an equality test at 1e-7 but not at 1e-9; it scores more than alpha = 1.
    K = np.array([[[0.0, 0.0], [1.0, 0.0], [-1e-8, -0.5]]])
    gamma = np.array([[0.0, 0.5, 0.9]])
    assert classify_direction(K, gamma, np.array([1]), neighbor_tol=1e-7).kind == "neither"
    assert classify_direction(K, gamma, np.array([1]), neighbor_tol=1e-9).kind == "lmm"
    # The census passes census.svm_tol: GD reaches token 2 (the GMM), whose p_mm has token 1 at 1e-8 off the margin.
    batch = span_coordinates(K[None], gamma[None], np.array([[3.0, 0.0]]))
    for svm_tol, n_neighbors, gap in [(1e-9, 1, 0.9), (1e-6, 2, 0.4)]:
        row = census.census_rows(batch, census_settings(n=1, T=3, svm_tol=svm_tol), d=2).iloc[0]
        assert (row["class"], row["alpha"], row["n_neighbors"]) == ("gmm", "2", n_neighbors)
        assert row["gap"] == pytest.approx(gap)


def test_an_undecided_lp_status_is_settled_by_least_distance_programming(monkeypatch):
    # HiGHS statuses other than 0 (feasible) and 2 (infeasible), e.g. 4 (numerical difficulties), decide nothing.
    monkeypatch.setattr(scipy.optimize, "linprog", lambda *args, **kwargs: types.SimpleNamespace(status=4))
    res = svm.att_svm(KEYS, np.array([1]))  # feasible: p_mm = (1, 0)
    assert res.feasible
    np.testing.assert_allclose(res.solution, [1.0, 0.0], atol=1e-12)
    between = np.array([[[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]])  # token 1 lies between 0 and 2 on a line
    assert not svm.att_svm(between, np.array([1])).feasible  # p1 >= 1 and -p1 >= 1: infeasible


def test_non_saturated_run_has_a_finite_limit():
    # d = 1, n = 2 inputs with keys +1 and -1: input 1 scores (1, 0), input 2 scores (0, 0.8). The risk has a
    # finite minimiser x* (its derivative changes sign), so normalized GD (eta = 1) hovers within eta of x*.
    K = np.array([[[1.0], [-1.0]], [[1.0], [-1.0]]])
    gamma = np.array([[1.0, 0.0], [0.0, 0.8]])
    slope = lambda x: float(grad_p(K, gamma, np.array([x])).value[0])  # noqa: E731
    x_star = brentq(slope, -5.0, 5.0)
    assert 0.1 < x_star < 1.0 and risk(K, gamma, np.array([x_star])) < risk(K, gamma, np.array([x_star + 1]))
    batch = span_coordinates(K[None], gamma[None], np.zeros((1, 1)))
    row = census.census_rows(batch, census_settings(n=2, T=2), d=1).iloc[0]
    assert not row["saturated"] and row["class"] == "not_saturated"
    assert np.isnan(row["corr"]) and np.isnan(row["gap"])
    assert row["p_norm"] <= abs(x_star) + 1.0
    assert row["log10_unsaturation"] > -2


@pytest.mark.parametrize("d", [5, 30])
def test_ldp_classification_equals_cvxopt(d):
    batch = census.sample_batch(3, d, np.arange(15), 4, 6, 0.0)
    rows = census.census_rows(batch, census_settings(n_iter=300, seed=3), d)
    assert rows["saturated"].sum() >= 10
    for k, row in rows[rows["saturated"]].iterrows():
        alpha = np.array([int(t) for t in row["alpha"].split(",")])
        ref = classify_direction(batch.keys[k], batch.gamma[k], alpha)
        mine = classify_by_ldp(batch.keys[k], batch.gamma[k], alpha)
        assert row["solver"] == "ldp" and mine.kind == ref.kind == row["class"]
        np.testing.assert_array_equal(mine.neighbors, ref.neighbors)
        np.testing.assert_allclose(mine.svm.solution, ref.svm.solution, rtol=1e-9, atol=1e-12)
        assert mine.score_gap == ref.score_gap == row["gap"]


# --- reproducibility and tables ---------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [5, 100])
def test_rows_do_not_depend_on_the_split(d):
    settings = census_settings(n_trials=10, n_iter=300, seed=7)
    whole = census.run_trials(settings, d)
    parts = pd.concat(
        [
            census.run_trials(census_settings(n_trials=10, n_iter=300, seed=7, chunk=2), d, range(5)),
            census.run_trials(census_settings(n_trials=10, n_iter=300, seed=7, chunk=3), d, range(5, 10)),
        ],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(whole, parts, check_exact=True)
    single = census.run_trials(settings, d, [6])
    pd.testing.assert_frame_equal(whole.iloc[[6]].reset_index(drop=True), single, check_exact=True)
    assert list(whole.columns) == census.TRIAL_COLUMNS and whole["trial"].tolist() == list(range(10))


def test_summary_and_gap_distribution():
    trials = pd.DataFrame(
        {
            "d": [5] * 6 + [10] * 2,
            "saturated": [False, True, True, True, True, True, True, True],
            "class": ["not_saturated", "gmm", "lmm", "lmm", "neither", "gmm", "gmm", "lmm"],
            "corr": [np.nan, 1.0, 0.99, 0.98, 0.97, 1.0, 1.0, 0.9],
            "gap": [np.nan, 0.3, 0.1, 0.0124, -0.0124, 0.5, 0.2, 0.3],
        }
    )
    s = tables.summarize(trials, 0.95).set_index("d")
    assert list(tables.summarize(trials, 0.95).columns) == SUMMARY_COLUMNS
    assert s.loc[5, "n_trials"] == 6
    assert s.loc[5, "pct_not_saturated"] == pytest.approx(100 / 6)
    assert s.loc[5, "pct_lmm"] == pytest.approx(400 / 6) and s.loc[5, "pct_gmm"] == pytest.approx(200 / 6)
    assert s.loc[5, "pct_neither"] == pytest.approx(100 / 6)
    assert s.loc[5, "mean_corr"] == pytest.approx(0.988) and s.loc[5, "p_gap_negative"] == pytest.approx(0.2)
    # Wilson intervals of 1/6 (percent) and 1/5 (fraction), z = 1.959964, by hand
    assert s.loc[5, "pct_not_saturated_ci_low"] == pytest.approx(3.005, abs=1e-3)
    assert s.loc[5, "pct_not_saturated_ci_high"] == pytest.approx(56.350, abs=1e-3)
    assert s.loc[5, "p_gap_negative_ci_low"] == pytest.approx(0.03622, abs=1e-5)
    assert s.loc[5, "p_gap_negative_ci_high"] == pytest.approx(0.624465, abs=1e-6)
    assert s.loc[10, "pct_not_saturated_ci_low"] == 0.0 and s.loc[10, "pct_lmm_ci_high"] == 100.0
    hist = tables.gap_distribution(trials, [5, 10], 0.005)
    h5 = hist[hist["d"] == 5]
    assert h5["count"].sum() == 5 and h5["probability"].sum() == pytest.approx(1.0)
    assert h5.loc[h5["bin_right"] == 0.0, "cumulative"].item() == pytest.approx(0.2)  # P(gap < 0)
    assert h5.loc[h5["bin_left"] == 0.01, "count"].item() == 1  # 0.0124 falls in [0.01, 0.015)
    assert np.allclose(hist["bin_right"] - hist["bin_left"], 0.005)


def test_no_saturated_trial_leaves_the_gap_distribution_undefined():
    trials = pd.DataFrame(
        {
            "d": [2, 2],
            "saturated": [False, False],
            "class": ["not_saturated"] * 2,
            "corr": [np.nan] * 2,
            "gap": [np.nan] * 2,
        }
    )
    assert np.isnan(tables.summarize(trials, 0.95)["p_gap_negative"].item())
    hist = tables.gap_distribution(trials, [2], 0.005)
    assert (hist["n_saturated"] == 0).all() and hist["cumulative"].isna().all() and hist["probability"].isna().all()


# --- intervals, budget ------------------------------------------------------------------------------------------


def test_wilson_interval_by_hand_and_its_coverage():
    z2 = 1.959963984540054**2
    low, high = tables.wilson_interval([0, 10, 5], [10, 10, 10], 0.95)
    np.testing.assert_allclose(low, [0.0, 10 / (10 + z2), 0.236593], atol=1e-6)  # k = n: n / (n + z^2)
    np.testing.assert_allclose(high, [z2 / (10 + z2), 1.0, 0.763407], atol=1e-6)  # k = 0: z^2 / (n + z^2)
    # exact coverage under Binomial(n, p): close to the nominal 95% (Wilson's oscillates a little around it)
    from scipy.stats import binom

    for n, p in [(50, 0.3), (200, 0.05), (1000, 0.01)]:
        k = np.arange(n + 1)
        lo, hi = tables.wilson_interval(k, n, 0.95)
        coverage = binom.pmf(k, n, p)[(lo <= p) & (p <= hi)].sum()
        assert 0.92 < coverage < 0.98, (n, p, coverage)


@pytest.mark.solves  # seconds of GD or of solves: `make test` and the second-kernel step, not the unit tier
def test_a_second_seed_falls_inside_the_intervals_at_the_expected_rate():
    # Two independent estimates p1, p2 of one proportion: p2 falls inside p1's 95% interval with probability
    # P(|Z1 - Z2| < 1.96) = 2 Phi(1.96 / sqrt 2) - 1 = 0.834 (not 0.95: both estimates vary).
    from scipy.stats import norm

    expected = 2 * norm.cdf(norm.ppf(0.975) / np.sqrt(2)) - 1
    columns = ["pct_not_saturated", "pct_lmm", "pct_gmm"]
    inside = []
    for d in (2, 5):
        runs = [census.run_trials(census_settings(n_trials=150, n_iter=200, seed=seed), d) for seed in range(9)]
        ref = tables.summarize(runs[0], 0.95).iloc[0]
        for rows in runs[1:]:
            other = tables.summarize(rows, 0.95).iloc[0]
            inside += [ref[f"{c}_ci_low"] <= other[c] <= ref[f"{c}_ci_high"] for c in columns]
    rate = float(np.mean(inside))
    assert expected == pytest.approx(0.834, abs=1e-3)
    assert abs(rate - expected) < 0.15, (rate, len(inside))


def test_labels_moved_counts_class_changes_from_the_smallest_budget():
    trials = pd.DataFrame(
        {
            "d": [2] * 6 + [5] * 2,
            "n_iter": [10, 10, 30, 30, 90, 90, 10, 90],
            "trial": [0, 1, 0, 1, 0, 1, 0, 0],
            "class": ["not_saturated", "lmm", "lmm", "lmm", "gmm", "neither", "gmm", "gmm"],
        }
    )
    moved = tables.labels_moved(trials)
    assert moved.values.tolist() == [[2, 10, 0], [2, 30, 1], [2, 90, 2], [5, 10, 0], [5, 90, 0]]


# --- end to end -------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_census_targets_end_to_end(workflow_dir):
    config = {
        "census": {
            "dims": [2, 5],
            "n_trials": 20,
            "n_iter": 200,
            "histogram": {"dims": [5]},
            "budget": {"dims": [2], "n_iter": [50, 200]},
            "grid": {"n": [1, 2], "T": [2, 3], "dims": [2], "n_trials": 6},
        }
    }
    snakemake(workflow_dir, "fig9", "fig10", "census_budget", "census_grid", config=config)
    results = workflow_dir / "results"
    for panel in ("fig9a", "fig9b", "fig10", "census_budget", "census_grid"):
        for ext in ("pdf", "png"):
            assert (results / "figures" / f"{panel}.{ext}").stat().st_size > 10_000
    for d in (2, 5):
        assert (results / "logs" / "census_trials" / f"d{d}.log").exists()
        assert (results / "benchmarks" / "census_trials" / f"d{d}.tsv").exists()
    summary = pd.read_csv(results / "tables" / "census_summary.csv")
    assert list(summary.columns) == SUMMARY_COLUMNS
    assert summary["d"].tolist() == [2, 5] and summary["n_trials"].tolist() == [20, 20]
    total = summary["pct_not_saturated"] + summary["pct_lmm"] + summary["pct_neither"]
    np.testing.assert_allclose(total, 100.0)
    assert (summary["pct_gmm"] <= summary["pct_lmm"]).all()
    assert summary["mean_corr"].between(0.95, 1.0).all()
    assert summary["p_gap_negative"].between(0.0, 1.0).all()
    trials = pd.read_csv(results / "tables" / "census_trials.csv")
    assert list(trials.columns) == census.TRIAL_COLUMNS and len(trials) == 40
    assert trials["seed"].eq(0).all() and set(trials["class"]) <= set(registry_census.CLASSES)
    # The pipeline's rows are the library's rows: one job per d changes nothing.
    settings = census_settings(n_trials=20, n_iter=200)
    direct = census.run_trials(settings, 5)
    piped = trials[trials["d"] == 5].reset_index(drop=True)
    cols = ["trial", "saturated", "class", "alpha", "corr", "gap", "p_norm", "log10_unsaturation"]
    pd.testing.assert_frame_equal(piped[cols], direct[cols], check_exact=True)  # bitwise, through the CSV
    budget = pd.read_csv(results / "tables" / "census_budget.csv")
    assert budget[["d", "n_iter"]].values.tolist() == [[2, 50], [2, 200]] and budget["n_labels_moved"].iloc[0] == 0
    # the budget's 200-iteration run of d = 2 is the census's own d = 2 run
    pd.testing.assert_series_equal(
        budget.iloc[1][SUMMARY_COLUMNS[1:]], summary.iloc[0][SUMMARY_COLUMNS[1:]], check_names=False
    )
    grid = pd.read_csv(results / "tables" / "census_grid.csv")
    assert grid[["n", "T", "d"]].values.tolist() == [[1, 2, 2], [1, 3, 2], [2, 2, 2], [2, 3, 2]]
    assert (grid["n_trials"] == 6).all() and (grid["pct_lmm_ci_low"] <= grid["pct_lmm"]).all()
    log = (results / "logs" / "census_trials" / "d5.log").read_text()
    assert "census d=5: trials 20/20 (100%)" in log  # the progress lines, the last included
    hist = pd.read_csv(results / "tables" / "fig9b.csv")
    assert set(hist["d"]) == {5} and hist["cumulative"].iloc[-1] == pytest.approx(1.0)
