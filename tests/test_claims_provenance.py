"""The claims table reads its numbers from the tables, and provenance records what produced them."""

from __future__ import annotations

import copy
import json
import types

import pandas as pd
from conftest import DEFAULT_CONFIG

from maxmargin.claims import CLAIMS, claims_markdown, evaluate_claims
from maxmargin.experiments.synthetic import run_experiment
from maxmargin.io import provenance_path, rule_logging, write_csv


def census_summary(pct_gmm, p_gap_negative=(0.0, 0.002, 0.004)):
    return pd.DataFrame(
        {
            "d": [2, 10, 100],
            "n_trials": 1000,
            "pct_not_saturated": [60.0, 2.0, 0.0],
            "pct_lmm": [40.0, 97.0, 99.5],
            "pct_gmm": list(pct_gmm),
            "pct_neither": [0.0, 1.0, 0.5],
            "mean_corr": [0.995, 0.998, 0.999],
            "p_gap_negative": list(p_gap_negative),
        }
    )


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


def test_claims_from_a_real_experiment_table():
    table = run_experiment("fig8", DEFAULT_CONFIG["synthetic"]["fig8"], {}).directions
    row = evaluate_claims({"directions": table}, DEFAULT_CONFIG).set_index("claim_id").loc["n1_necessary"]
    assert row["verdict"] == "holds"
    assert row["measured"].startswith("1 start(s) -> GMM, 1 -> LMM")
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
        rule="demo",
        log=[str(tmp_path / "demo.log")],
        wildcards={"d": "5"},
        params={"seed": 3},
        config={"census": {"seed": 3}},
    )
    with rule_logging(job):
        write_csv(pd.DataFrame({"x": [1.0]}), tmp_path / "t.csv")
    sidecar = json.loads(provenance_path(tmp_path / "t.csv").read_text())
    assert sidecar["rule"] == "demo" and sidecar["params"] == {"seed": 3} and sidecar["wildcards"] == {"d": "5"}
    assert sidecar["config"]["census"]["seed"] == 3
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
            "dataset": "cifar10",
        }
    )


def test_vit_claims_need_a_model_that_learned():
    learned = evaluate_claims({"vit_metrics": vit_metrics(0.55)}, DEFAULT_CONFIG).set_index("claim_id")
    assert learned.loc["vit_learns", "verdict"] == "holds" and learned.loc["vit_sparsity", "verdict"] == "holds"
    assert "0.550" in learned.loc["vit_learns", "measured"] and "0.30" in learned.loc["vit_learns", "note"]
    chance = evaluate_claims({"vit_metrics": vit_metrics(0.12)}, DEFAULT_CONFIG).set_index("claim_id")
    assert chance.loc["vit_learns", "verdict"] == "differs"
    assert chance.loc["vit_sparsity", "verdict"] == "differs"  # the same sparsity trend, but nothing learned
    assert "did not learn" in chance.loc["vit_sparsity", "note"]
