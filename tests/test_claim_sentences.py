"""Appendix E's statements each have a claim (or a reason for none), and the report's captions state a
result only as the run's own numbers: change a table and the caption changes with it."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import DEFAULT_CONFIG, REPO
from test_report_structure import rst_problems

from maxmargin import registry
from maxmargin.claims import CLAIMS, claims_config, evaluate_claims, run_sentences
from maxmargin.claims.statements import APPENDIX_E, ELSEWHERE, claims_page
from maxmargin.registry import derived

CONFIG = claims_config(DEFAULT_CONFIG)
IDS = {c.claim_id for c in CLAIMS}


def vit_metrics(image_sparsity: list[float]) -> pd.DataFrame:
    """A 60-epoch run whose Figure 6 image has ``image_sparsity`` at the epochs Figure 6 draws (0, 15, ..., 60)."""
    epochs = np.arange(61)
    drawn = DEFAULT_CONFIG["vit"]["plots"]["fig6_epochs"]
    return pd.DataFrame(
        {
            "epoch": epochs,
            "test_acc": np.linspace(0.1, 0.8, 61),
            "train_acc": np.linspace(0.1, 0.9, 61),  # never 1: the tolerance is from the whole run
            "soft_sparsity": np.linspace(1.0, 0.2, 61),
            "soft_sparsity_image": np.interp(epochs, drawn, image_sparsity),
            "w_frobenius": np.linspace(0.2, 8.0, 61),
            "w_cosine_previous": np.r_[np.nan, np.full(60, 0.999)],
            "w_cosine_final": np.linspace(0.0, 1.0, 61),
            "dataset": "fashion_mnist",
        }
    )


def fig6_caption(image_sparsity: list[float]) -> str:
    baseline = pd.DataFrame(
        [{"dataset": "fashion_mnist", "n_train": 2000, "n_test": 1000, "n_iter": 200, "test_acc": 0.8}]
    )
    tables = {"vit_metrics": vit_metrics(image_sparsity), "vit_baseline": baseline}
    return derived.caption(
        registry.panel("fig6"), DEFAULT_CONFIG, run_sentences(evaluate_claims(tables, CONFIG), tables)
    )


def test_the_figure6_caption_follows_the_runs_per_image_sparsity() -> None:
    rising = fig6_caption([1.0, 0.087, 0.142, 0.298, 0.174])  # the default run's (docs/results/vit_quick_metrics.csv)
    assert "15: 0.087, 30: 0.142, 45: 0.298, 60: 0.174; tolerance 0.0093" in rising  # the median |change| an epoch
    assert "(claim ``vit_fig6_concentrates``: **differs**)" in rising
    falling = fig6_caption([1.0, 0.5, 0.3, 0.2, 0.1])
    whole = "60: 0.100; tolerance 0.0100 (its median change between measured epochs 0-60, the whole run)`` (claim "
    assert whole in falling
    assert "``vit_fig6_concentrates``: **holds**)" in falling
    for text in (rising, falling):
        assert "Made from Fashion-MNIST, a stand-in for the paper's CIFAR-10." in text
        assert "concentrates on a few patches as training goes on. This run:" in text
        assert not rst_problems(text)


def test_a_caption_without_a_run_says_it_is_not_measured() -> None:
    text = derived.caption(registry.panel("fig9b"), DEFAULT_CONFIG)
    assert "(claim ``census_gap_size``: not measured, no ``tables/claims.json`` yet)" in text
    assert not rst_problems(text)


def test_every_run_field_of_a_caption_is_a_claim() -> None:
    entries = [*registry.PANELS, *registry.TABLES]
    fields = {f for e in entries for f in re.findall(r"\{run\[(\w+)\]\}", e.caption)}
    assert fields - IDS == {"vit_dataset"}
    assert {"census_gap_size", "census_negative_corr", "vit_fig6_concentrates", "vit_w_direction"} <= fields


def census_trials(gaps: list[float], corrs: list[float]) -> pd.DataFrame:
    """Saturated d = 5 trials with these minimal score gaps and correlations with p_mm(alpha)."""
    return pd.DataFrame({"d": 5, "saturated": True, "gap": gaps, "corr": corrs})


@pytest.mark.parametrize(
    "gaps, verdict, median",
    [
        ([-0.01, -0.02, -0.03] * 10 + [0.3, 0.5], "holds", "0.020"),
        ([-0.01, -0.06, -0.08] * 10 + [0.3, 0.5], "inconclusive", "0.060"),
        ([-0.1, -0.15, -0.2] * 10 + [0.3, 0.5], "differs", "0.150"),
    ],
)
def test_negative_gaps_are_near_zero_or_not(gaps: list[float], verdict: str, median: str) -> None:
    """Near zero: the bootstrap interval of the median |gamma| below census.negative_gap.near_zero; one that
    contains it is inconclusive."""
    assert DEFAULT_CONFIG["census"]["negative_gap"] == {"statistic": "median", "near_zero": 0.05}
    trials = census_trials(gaps, [0.999] * len(gaps))
    claim = evaluate_claims({"census_trials": trials}, CONFIG).set_index("claim_id").loc["census_gap_size"]
    assert claim["verdict"] == verdict
    assert claim["measured"].startswith(f"median |gamma| over the 30 trials with gamma < 0: {median} [")
    assert "(positive gaps: 0.400)" in claim["measured"]
    if verdict != "holds":
        assert claim["note"].startswith(f"{verdict}: ") and "negative gaps are below -0.05" in claim["note"]


def test_the_correlation_over_negative_gaps_is_judged_by_its_bootstrap_interval() -> None:
    # The default census's 29 trials with gamma < 0 average 0.989, and one of them (0.794) decides it.
    gaps = [-0.1] * 29 + [0.3]
    borderline = census_trials(gaps, [0.794] + [0.996] * 28 + [0.5])
    claim = evaluate_claims({"census_trials": borderline}, CONFIG).set_index("claim_id").loc["census_negative_corr"]
    assert claim["verdict"] == "inconclusive" and claim["measured"].startswith("mean 0.9890 [")
    assert "one trial at 0.794 (d = 5) decides it: without it the mean is 0.9960" in claim["note"]
    assert claim["note"].startswith("inconclusive: the interval [")
    far_above = census_trials(gaps, [0.999] * 29 + [0.5])
    claim = evaluate_claims({"census_trials": far_above}, CONFIG).set_index("claim_id").loc["census_negative_corr"]
    assert claim["verdict"] == "holds" and claim["measured"].startswith("mean 0.9990 [0.9990, 0.9990] over the 29")
    far_below = census_trials(gaps, [0.95, 0.96, 0.97] * 9 + [0.95, 0.96, 0.5])
    claim = evaluate_claims({"census_trials": far_below}, CONFIG).set_index("claim_id").loc["census_negative_corr"]
    assert claim["verdict"] == "differs" and claim["note"].startswith("differs: the interval [")


def test_a_census_statistic_pooled_over_d_says_which_d_and_how_many_trials_each() -> None:
    """The claims on the trials with gamma < 0 pool them over d: the note names each d and its trials, so that the
    smallest d's weight in the pool (most of the default census's 29) is read, not assumed away."""
    trials = census_trials([-0.1] * 29 + [0.3], [0.999] * 30).assign(d=[2] * 16 + [5] * 10 + [10] * 4)
    claims = evaluate_claims({"census_trials": trials}, CONFIG).set_index("claim_id")
    for claim in ("census_gap_size", "census_negative_corr"):
        assert "; pooled over d = 2 (16 trials), 5 (10 trials), 10 (3 trials); " in claims.loc[claim, "note"], claim


def test_every_statement_names_existing_claims_or_why_none() -> None:
    for s in APPENDIX_E + ELSEWHERE:
        assert bool(s.claims) != bool(s.why_none), s
        assert set(s.claims) <= IDS, s
    appendix_e = {c.claim_id for c in CLAIMS if c.source.startswith("Appendix E")}
    assert appendix_e <= {c for s in APPENDIX_E for c in s.claims}


def test_the_direction_window_of_a_short_run_is_never_empty() -> None:
    # 80% of 2 epochs is 1.6: the window starts at epoch 1, not at the last epoch (0 degrees, a vacuous holds)
    table = vit_metrics([1.0, 0.5, 0.3, 0.2, 0.1]).iloc[:3].assign(w_cosine_final=[0.1, 0.5, 1.0])
    claim = evaluate_claims({"vit_metrics": table}, CONFIG).set_index("claim_id").loc["vit_w_direction"]
    assert claim["measured"].startswith("W turned 60.0 deg between epoch 1 and epoch 2")
    assert claim["verdict"] == "differs"


def test_a_deviation_from_the_paper_quotes_the_paper_scale_config() -> None:
    """The paper's "fixed learning rate of 3e-3" is listed as a deviation, with paper.yaml's own recipe."""
    train = yaml.safe_load((REPO / "workflow" / "config" / "paper.yaml").read_text())["vit"]["train"]
    row = next(line for line in claims_page("", train).splitlines() if "fixed learning rate of 3e-3" in line)
    assert "a deviation from the paper" in row and "a setting" not in row
    assert f"{train['optimizer']} at a learning rate of {train['lr']:g} after {train['warmup_epochs']} warm-up" in row
    other = claims_page("", train | {"lr": 0.125, "optimizer": "sgd"})
    assert "sgd at a learning rate of 0.125" in other
    consistently = next(s for s in ELSEWHERE if "consistently increases" in s.statement)
    assert consistently.claims == ("gd_corr_increases",) and not consistently.why_none
