"""The claims table reads its numbers from the tables, and provenance records what produced them."""

from __future__ import annotations

import copy
import json
import types

import numpy as np
import pandas as pd
from conftest import DEFAULT_CONFIG

from maxmargin.claims import CLAIMS, VERDICTS, claims_markdown, evaluate_claims, interval_verdict
from maxmargin.claims.base import bootstrap_interval, judge_statistic, note_of
from maxmargin.experiments.census_tables import PROPORTIONS, wilson_interval
from maxmargin.logs import rule_logging
from maxmargin.pipeline import run_experiment
from maxmargin.provenance import provenance_path
from maxmargin.tables import write_csv


def census_summary(pct_gmm, p_gap_negative=(0.0, 0.002, 0.004), pct_not_saturated=(60.0, 2.0, 0.0), n_trials=1000):
    table = pd.DataFrame(
        {
            "d": [2, 10, 100],
            "n_trials": n_trials,
            "pct_not_saturated": list(pct_not_saturated),
            "pct_lmm": [40.0, 97.0, 99.5],
            "pct_gmm": list(pct_gmm),
            "pct_neither": [0.0, 1.0, 0.5],
            "mean_corr": [0.995, 0.998, 0.999],
            "p_gap_negative": list(p_gap_negative),
        }
    )
    for name, (_, over, scale) in PROPORTIONS.items():  # the Wilson intervals, from the counts
        total = n_trials * (1 - table["pct_not_saturated"] / 100) if over == "saturated" else n_trials
        low, high = wilson_interval(table[name] / scale * total, total, 0.95)
        table[f"{name}_ci_low"], table[f"{name}_ci_high"] = scale * low, scale * high
    return table


def census_trials(n_negative):
    gaps = [-0.01] * n_negative + [0.3] * (1000 - n_negative)
    return pd.DataFrame({"d": 10, "saturated": True, "corr": 0.998, "gap": gaps})


def test_claims_follow_the_measured_numbers():
    holds = evaluate_claims(
        {"census_summary": census_summary([5.0, 20.0, 60.0]), "census_trials": census_trials(3)}, DEFAULT_CONFIG
    ).set_index("claim_id")
    assert holds.loc["census_gmm_grows", "verdict"] == "holds"
    assert holds.loc["census_gap_negative", "verdict"] == "holds"
    assert holds.loc["census_gap_negative", "measured"].startswith("0.0030 pooled")
    assert "d=100: 0.0040" in holds.loc["census_gap_negative", "measured"]
    differs = evaluate_claims(
        {"census_summary": census_summary([60.0, 20.0, 5.0], (0.0, 0.03, 0.0)), "census_trials": census_trials(30)},
        DEFAULT_CONFIG,
    ).set_index("claim_id")
    assert differs.loc["census_gmm_grows", "verdict"] == "differs"
    assert differs.loc["census_gap_negative", "verdict"] == "differs"
    assert "above 1% at d = 10" in differs.loc["census_gap_negative", "note"]
    assert differs.loc["vit_sparsity", "verdict"] == "not run"
    assert "vit_metrics" in differs.loc["vit_sparsity", "note"]
    assert (
        evaluate_claims({"census_summary": census_summary([1, 2, 3])}, DEFAULT_CONFIG)
        .set_index("claim_id")
        .loc["census_gap_negative", "verdict"]
        == "not run"
    )


def test_inconclusive_when_the_interval_contains_the_paper_threshold():
    assert [
        interval_verdict(lo, hi, 0.01, below=True) for lo, hi in [(0.001, 0.009), (0.011, 0.02), (0.005, 0.02)]
    ] == [
        "holds",
        "differs",
        "inconclusive",
    ]
    assert [interval_verdict(lo, hi, 10.0, below=False) for lo, hi in [(11, 20), (2, 10), (8, 12)]] == [
        "holds",
        "differs",
        "inconclusive",
    ]
    assert "inconclusive" in VERDICTS
    # 7 negative gaps in 1000 saturated trials: 0.7%, but the 95% interval [0.34%, 1.44%] contains 1%
    claims = evaluate_claims(
        {"census_summary": census_summary([5.0, 20.0, 60.0]), "census_trials": census_trials(7)}, DEFAULT_CONFIG
    ).set_index("claim_id")
    assert claims.loc["census_gap_negative", "verdict"] == "inconclusive"
    assert "[0.0034, 0.0144]" in claims.loc["census_gap_negative", "measured"]
    # 12% not saturated at d = 2 in 100 trials: interval [7.0%, 19.8%] contains the 10% of the claim
    small = census_summary([5.0, 20.0, 60.0], pct_not_saturated=(12.0, 2.0, 0.0), n_trials=100)
    claims = evaluate_claims({"census_summary": small}, DEFAULT_CONFIG).set_index("claim_id")
    assert claims.loc["census_small_d", "verdict"] == "inconclusive"
    # GMM share grows with d, but at 100 trials 10% at d = 2 and 16% at d = 100 overlap
    claims = evaluate_claims({"census_summary": census_summary([10.0, 12.0, 16.0], n_trials=100)}, DEFAULT_CONFIG)
    assert claims.set_index("claim_id").loc["census_gmm_grows", "verdict"] == "inconclusive"


def census_budget(p_gap_negative):
    rows = []
    for d, values in p_gap_negative.items():
        for n_iter, p in zip((1000, 3000, 10000), values, strict=True):
            low, high = wilson_interval(p * 500, 500, 0.95)
            rows.append(
                {"d": d, "n_iter": n_iter, "p_gap_negative": p, "p_gap_negative_ci_low": float(low)}
                | {"p_gap_negative_ci_high": float(high), "n_labels_moved": n_iter // 1000 - 1}
            )
    return pd.DataFrame(rows)


def test_budget_claim_states_what_it_found_whichever_way():
    verdict = lambda b: evaluate_claims({"census_budget": census_budget(b)}, DEFAULT_CONFIG).set_index("claim_id")  # noqa: E731
    assert verdict({2: (0.06, 0.03, 0.004)}).loc["census_budget", "verdict"] == "holds"
    found = verdict({2: (0.05, 0.046, 0.045), 5: (0.01, 0.007, 0.006)}).loc["census_budget"]
    assert found["verdict"] == "inconclusive"
    assert "(9 labels moved)" in found["measured"] and "d = 2 P(gap < 0) stays above 1%" in found["note"]
    assert verdict({2: (0.05, 0.05, 0.06)}).loc["census_budget", "verdict"] == "differs"


def test_claims_from_a_real_experiment_table():
    table = run_experiment("fig8", DEFAULT_CONFIG["synthetic"]["fig8"], {}).directions
    row = evaluate_claims({"directions": table}, DEFAULT_CONFIG).set_index("claim_id").loc["n1_necessary"]
    assert row["verdict"] == "holds"
    assert row["measured"].startswith("p(0) -> GMM: (-1, 1.5); p(0) -> LMM: (1, -1.7)")
    one_start = table[~((table["record"] == "gd_run") & (table["kind"] == "lmm"))]
    assert (
        evaluate_claims({"directions": one_start}, DEFAULT_CONFIG).set_index("claim_id").loc["n1_necessary", "verdict"]
        == "differs"
    )


def test_claim_notes_quote_the_config_that_ran():
    table = run_experiment("fig8", DEFAULT_CONFIG["synthetic"]["fig8"], {}).directions
    table = table.assign(figure=table["figure"].replace({"fig8": "fig1a"}))
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["synthetic"]["fig1"].update(eta=0.05, n_iter=321)
    row = evaluate_claims({"directions": table}, config).set_index("claim_id").loc["gd_gmm_n1"]
    assert "eta 0.05, 321 iterations" in row["note"]
    assert row["verdict"] == "differs" and row["measured"].startswith("1/2 starts -> GMM")


def test_claims_markdown_has_one_row_per_claim():
    md = claims_markdown(evaluate_claims({}, DEFAULT_CONFIG))
    assert md.count("\n") == len(CLAIMS) + 2
    assert md.startswith("| claim_id | claim | source | paper_value | measured | verdict | note |")


def test_tables_written_in_a_rule_carry_provenance(tmp_path):
    job = types.SimpleNamespace(
        rule="census_histogram",
        log=[str(tmp_path / "demo.log")],
        output=[str(tmp_path / "t.csv")],
        wildcards={"d": "5"},
        params={"seed": 3},
        config={"census": {"seed": 3, "histogram": {"dims": [5], "bin_width": 0.01}}},
    )
    with rule_logging(job):
        write_csv(pd.DataFrame({"x": [1.0]}), tmp_path / "t.csv")
    sidecar = json.loads(provenance_path(tmp_path / "t.csv").read_text())
    assert sidecar["rule"] == "census_histogram" and sidecar["params"] == {"seed": 3}
    assert sidecar["wildcards"] == {"d": "5"} and sidecar["config"]["census"]["seed"] == 3
    # what made the table: the keys its rule reads (maxmargin/registry/reads.py), as the config gave them
    assert sidecar["reads"] == {"census.histogram": {"dims": [5], "bin_width": 0.01}}
    assert sidecar["packages"]["numpy"] and sidecar["git_commit"]
    write_csv(pd.DataFrame({"x": [1.0]}), tmp_path / "outside.csv")  # outside a rule: no sidecar
    assert not provenance_path(tmp_path / "outside.csv").exists()


def vit_metrics(final_acc: float) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "epoch": [0, 1, 2],
            "test_acc": [0.1, 0.2, final_acc],
            "soft_sparsity": [0.9, 0.7, 0.5],
            "w_frobenius": [1.0, 2.0, 3.0],
            "w_cosine_previous": [float("nan"), 0.9, 0.99],
            "w_cosine_final": [0.2, 0.9, 1.0],
            "dataset": "cifar10",
        }
    )


def test_vit_claims_need_a_model_that_learned():
    linear = pd.DataFrame({"test_acc": [0.8], "n_train": [2000], "n_test": [1000], "n_iter": [200]})
    tables = {"vit_metrics": vit_metrics(0.55), "vit_baseline": linear}
    learned = evaluate_claims(tables, DEFAULT_CONFIG).set_index("claim_id")
    assert learned.loc["vit_learns", "verdict"] == "holds" and learned.loc["vit_sparsity", "verdict"] == "holds"
    assert "0.550" in learned.loc["vit_learns", "measured"] and "= 0.450" in learned.loc["vit_learns", "note"]
    chance = evaluate_claims({**tables, "vit_metrics": vit_metrics(0.12)}, DEFAULT_CONFIG).set_index("claim_id")
    assert chance.loc["vit_learns", "verdict"] == "differs"
    assert chance.loc["vit_sparsity", "verdict"] == "differs"  # the same sparsity trend, but nothing learned
    assert "did not learn" in chance.loc["vit_sparsity", "note"]


def test_a_bootstrap_interval_decides_the_verdict_the_census_rule_gives():
    """claims.base.judge_statistic: a sample whose mean sits on the threshold is inconclusive, one far on either side
    holds or differs; the interval is the same in every call (census.bootstrap's seed) and tightens with the sample."""
    rng = np.random.default_rng(1)
    borderline = 0.99 + rng.normal(0, 0.005, 200)
    borderline += 0.99 - borderline.mean()
    judged = judge_statistic(borderline, "mean", 0.99, below=False, cfg=DEFAULT_CONFIG)
    assert judged.verdict == "inconclusive" and judged.low < 0.99 < judged.high
    assert judge_statistic(borderline, "mean", 0.99, below=False, cfg=DEFAULT_CONFIG) == judged
    assert judge_statistic(borderline + 0.01, "mean", 0.99, below=False, cfg=DEFAULT_CONFIG).verdict == "holds"
    assert judge_statistic(borderline - 0.01, "mean", 0.99, below=False, cfg=DEFAULT_CONFIG).verdict == "differs"
    assert judge_statistic(borderline - 0.01, "median", 0.99, below=True, cfg=DEFAULT_CONFIG).verdict == "holds"
    # the percentile interval of a mean agrees with the normal approximation on a large sample
    large = rng.normal(0.0, 1.0, 4000)
    low, high = bootstrap_interval(large, "mean", resamples=4000, seed=0, confidence=0.95)
    half = 1.96 * large.std(ddof=1) / np.sqrt(large.size)
    assert abs((high - low) / 2 - half) < 0.1 * half and abs((high + low) / 2 - large.mean()) < 0.1 * half


def test_a_mean_over_few_units_gets_students_t_interval_and_over_many_the_bootstrap():
    """claims.base.mean_interval: below MIN_BOOTSTRAP_UNITS units, Student's t-interval (scipy's, written out
    independently); from there on, the percentile bootstrap of the config; one unit: no interval (NaN bounds)."""
    from scipy import stats

    from maxmargin.claims.base import MIN_BOOTSTRAP_UNITS, mean_interval

    guard = DEFAULT_CONFIG["vit"]["guard"]
    few = np.array([0.3, 0.1, 0.45, 0.2])
    interval = mean_interval(few, confidence=0.95, bootstrap=guard["bootstrap"])
    expected = stats.t.interval(0.95, few.size - 1, loc=few.mean(), scale=stats.sem(few))
    assert interval.method == "t" and interval.n == 4
    np.testing.assert_allclose([interval.low, interval.high], expected, rtol=1e-12)
    many = np.random.default_rng(2).normal(0.3, 0.1, MIN_BOOTSTRAP_UNITS)
    interval = mean_interval(many, confidence=0.95, bootstrap=guard["bootstrap"])
    assert interval.method == "bootstrap"
    assert (interval.low, interval.high) == bootstrap_interval(many, "mean", **guard["bootstrap"], confidence=0.95)
    one = mean_interval(np.array([0.4, np.nan]), confidence=0.95, bootstrap=guard["bootstrap"])
    assert one.n == 1 and one.estimate == 0.4 and np.isnan(one.low) and np.isnan(one.high)


def test_a_note_gives_the_reason_when_a_claim_does_not_hold():
    assert note_of("holds", "why", "rule") == "rule"
    assert note_of("differs", "one trial decides it", "rule") == "differs: one trial decides it; rule"
    assert note_of("inconclusive", "the interval contains 0.99", "") == "inconclusive: the interval contains 0.99"
