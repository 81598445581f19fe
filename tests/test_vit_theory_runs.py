"""The 400-epoch section's readings (maxmargin.claims.vit_theory_runs) on planted tables: Adam's step by its stated
rule, why W stops from the ray test, what W does by the claims' own conditions, and the case each combination of the
decisive verdicts selects."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG

from maxmargin.claims import vit_theory_runs as words

GUARD = DEFAULT_CONFIG["vit"]["guard"]


def _metrics(grad: float, sqrt_v: float | None, below: float = 0.0, w_end: float = 10.0) -> pd.DataFrame:
    """21 metrics rows, epochs 0-100: ||W||_F from 1 to ``w_end`` (linear in ln t from epoch 1), W's direction
    settled, the Q and K slices' gradient RMS ``grad`` and Adam's sqrt(v_hat) RMS ``sqrt_v`` (None: SGD)."""
    epochs = np.arange(0, 101, 5)
    growth = np.log(np.maximum(epochs, 1)) / np.log(100)
    table = pd.DataFrame(
        {
            "epoch": epochs,
            "w_frobenius": 1.0 + (w_end - 1.0) * growth,
            "w_cosine_final": np.cos(np.radians(80 * (1 - epochs / 100) ** 3)),  # 0.6 deg from epoch 80 on
            "w_cosine_previous": np.r_[np.nan, np.full(len(epochs) - 1, 0.999999)],
            "lr": 0.003,
        }
    )
    for s in words.SLICES:
        table[f"grad_rms_{s}"] = grad
        table[f"adam_sqrt_v_rms_{s}"] = np.nan if sqrt_v is None else sqrt_v
        table[f"adam_below_eps_{s}"] = np.nan if sqrt_v is None else below
    return table


@pytest.mark.parametrize(
    ("grad", "sqrt_v", "below", "verdict"),
    [
        (2e-8, 1e-4, 0.0, "stalled"),  # the full gradient 2e-4 of Adam's denominator, far above eps
        (1e-3, 2e-3, 0.0, "moving"),
        (2e-8, 1e-9, 0.6, "eps-bound"),
        (1e-6, None, 0.0, "sgd"),
    ],
)
def test_adams_step_is_judged_by_its_stated_rule(grad, sqrt_v, below, verdict) -> None:
    m = _metrics(grad, sqrt_v, below)
    s = words.step_stats(m, GUARD)
    assert words.adam_step(s) == verdict
    line = words.gradient_line(m, GUARD)
    assert line.startswith("- **W's gradient and the optimiser's step** (per-element RMS") and "epoch 100" in line
    if verdict == "stalled":
        assert f"at most {grad / sqrt_v:.1e} (the rule: **stalled** below {words.STALLED_BELOW:g}" in line
        assert f"lr g / sqrt(v_hat) = {0.003 * grad / sqrt_v:.1e} a step" in line
    if verdict == "sgd":
        assert "Adam" not in line and f"lr g = {0.003 * grad:.1e}" in line


def test_a_run_without_the_gradient_columns_says_not_logged() -> None:
    m = _metrics(1e-6, 1e-4).drop(columns=[c for c in _metrics(1e-6, 1e-4) if c.startswith(("grad", "adam"))])
    assert words.step_stats(m, GUARD) is None
    assert words.gradient_line(m, GUARD).endswith("Not logged by the code this run was made with.")


def _ray(lowest_at: float) -> pd.DataFrame:
    """The ray test's all-heads rows at one snapshot, the loss along W's own ray lowest at ``lowest_at``."""
    c = np.array([0.5, 1.0, 2.0, 4.0, 64.0])
    loss = 1e-5 * (1 + np.abs(np.log(c / lowest_at)))
    rows = [
        {"epoch": 400, "direction": d, "heads": "all", "c": ci, "loss": li, "n_images": 1920}
        for d in ("trained", "max_margin")
        for ci, li in zip(c, loss, strict=True)
    ]
    return pd.DataFrame(rows)


def test_why_w_stops_names_a_finite_limit_only_where_the_loss_is_lowest_at_w() -> None:
    stalled = words.step_stats(_metrics(2e-8, 1e-4), GUARD)
    both = words.stop_words(stalled, _ray(1.0))
    assert "lowest at c = 1 (1e-05): a **finite limit**" in both and "**stalled**" in both
    outward = words.stop_words(words.step_stats(_metrics(1e-3, 2e-3), GUARD), _ray(64.0))
    assert outward == "along W's own ray the loss is lowest at c = 64, not at c = 1: no finite limit at W's norm"
    assert words.stop_words(None, pd.DataFrame()) == ""


def test_w_settles_as_a_finite_matrix_where_its_norm_stops_and_grows_where_it_grows() -> None:
    stopped = words.w_fate(_metrics(1e-8, 1e-4, w_end=1.0), GUARD)
    assert stopped.startswith("W settles as a finite matrix (d ln||W||_F / d ln t ") and "direction settles" in stopped
    assert words.w_fate(_metrics(1e-8, 1e-4, w_end=100.0), GUARD).startswith("||W||_F grows (")


CLAIMS = words.CASE_CLAIMS  # one-layer, ray, frozen, the network's heads


@pytest.mark.parametrize(
    ("verdicts", "case"),
    [
        (("holds", "not run", "holds", "holds"), 0),
        (("differs", "holds", "holds", "holds"), 1),
        (("inconclusive", "differs", "holds", "differs"), 2),
        (("holds", "differs", "holds", "differs"), 3),
        (("holds", "inconclusive", "differs", "differs"), 4),
        (("holds", "holds", "inconclusive", "differs"), 5),
        (("holds", "holds", "holds", "differs"), 6),
        (("holds", "holds", "holds", "not run"), 6),
        (("holds", "holds", "holds", "holds"), 7),
    ],
)
def test_each_combination_of_the_decisive_verdicts_selects_its_case(verdicts, case) -> None:
    v = dict(zip(CLAIMS, verdicts, strict=True))
    assert words.decisive_case(v) == case
    table = words.cases_table({"run a": v})
    rows = table[2:]
    assert len(rows) == len(words.CASES) and [i for i, row in enumerate(rows) if "**run a**" in row] == [case]


def test_the_premise_failing_on_admitting_tokens_reads_as_the_theorys_premise_failing() -> None:
    v = dict(zip(CLAIMS, ("holds", "differs", "holds", "differs"), strict=True))
    reading = words.CASES[words.decisive_case(v)].reading
    assert reading.startswith("the tokens admit the max-margin solution, but the network's loss does not fall")
    frozen_only = dict(zip(CLAIMS, ("holds", "holds", "holds", "differs"), strict=True))
    assert words.CASES[words.decisive_case(frozen_only)].reading.endswith("the moving tokens are why")


def test_the_shuffled_null_names_its_own_images_where_they_are_fewer() -> None:
    """Under vit.w_svm.whole_train the head's own W-ATT-SVM is on every training image and null (b) on fewer: the
    sentence sets null (b) beside the head's cosine on null (b)'s own images, with their number."""
    from maxmargin.claims.vit_runs import shuffled_null

    last = pd.DataFrame(
        {"null_shuffled": [0.01, 0.03], "n_images": 1920, "n_images_null": 128, "cosine_null_images": [0.5, 0.6]}
    )
    assert shuffled_null(last) == "0.020 for a shuffled selection (on 128 images, where the head's own cosine is 0.550)"
    same = last.assign(n_images_null=1920)
    assert shuffled_null(same, "a shuffled selection's SVM") == "0.020 for a shuffled selection's SVM"
    assert shuffled_null(last.drop(columns=["n_images_null", "cosine_null_images"])) == "0.020 for a shuffled selection"
