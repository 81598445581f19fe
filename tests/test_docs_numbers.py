"""No number about the committed default run is typed into docs/figures.md, docs/census.md or
docs/regpath.md. Each is written by tools/run_docs.py from the run's tables in docs/results/default/ (checked here:
a page whose numbers drift from its tables fails), or read from the prose and measured again (Figure 2's cones)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import DEFAULT_CONFIG, REPO

from maxmargin import registry
from maxmargin.docs import default_passages, run_docs, vit_passages
from maxmargin.pipeline import run_experiment


@pytest.mark.parametrize("page", run_docs.PAGES, ids=lambda p: p.name)
def test_the_pages_numbers_are_what_the_default_runs_tables_give(page: Path) -> None:
    text = page.read_text()
    assert run_docs.BLOCK.search(text), f"{page.name}: no generated passage"
    assert run_docs.rewritten(text) == text, f"{page.name}: run tools/run_docs.py"


def test_the_committed_tables_are_the_ones_the_docs_quote() -> None:
    """docs/results/default/ holds every table of registry.DOCS_TABLES (rule docs_tables), the claims table the one
    docs/results/claims.md shows."""
    assert sorted(p.stem for p in default_passages.TABLES.glob("*.csv")) == sorted(registry.DOCS_TABLES)
    claims = default_passages.table("claims")
    page = (REPO / "docs" / "results" / "claims.md").read_text()
    for row in claims.itertuples():
        assert f"| {row.claim_id} |" in page and f"| {row.verdict} |" in page


def test_a_number_that_drifts_from_its_table_fails(tmp_path: Path) -> None:
    tables = tmp_path / "default"
    shutil.copytree(default_passages.TABLES, tables)
    summary = default_passages.table("census_summary", tables)
    summary.loc[summary["d"] == summary["d"].min(), "pct_not_saturated"] = 12.3
    summary.to_csv(tables / "census_summary.csv", index=False)
    text = (REPO / "docs" / "census.md").read_text()
    assert "12.3%" in run_docs.rewritten(text, tables) and run_docs.rewritten(text, tables) != text


def test_every_census_claim_that_does_not_hold_is_explained_in_the_census_page() -> None:
    """docs/census.md, where the claims page sends readers, names each census differs/inconclusive with its reason."""
    claims = default_passages.table("claims")
    text = (REPO / "docs" / "census.md").read_text()
    apart = claims[claims["claim_id"].str.startswith("census_") & claims["verdict"].isin(["differs", "inconclusive"])]
    assert len(apart), "the default census has claims that do not hold (census_gap_size, census_negative_corr)"
    for row in apart.itertuples():
        why = row.note.removeprefix(f"{row.verdict}: ")
        assert f"**`{row.claim_id}`** (**{row.verdict}**)" in text and f"Why: {why}" in text


def test_figure2s_cones_measured_in_the_prose() -> None:
    """docs/figures.md: the cone of Figure 2 has to be narrow and far out; the radius and half-angle it names are
    measured again here."""
    text = " ".join((REPO / "docs" / "figures.md").read_text().split())
    found = re.search(
        r"at radius (\S+) all (\d+) starts escape to the GMM, at a (\S+) degree half-angle (\d+) of (\d+) does", text
    )
    assert found, "the Figure 2 sentence of docs/figures.md changed: update this test"
    radius, n_all, angle, n_escape, n_starts = found.groups()
    config = DEFAULT_CONFIG["synthetic"]["fig2"]

    def escaped(**change: float) -> tuple[int, int]:
        runs = run_experiment("fig2", {**config, **change}, {}).directions
        runs = runs[runs["record"] == "gd_run"]
        return int((runs["kind"] == "gmm").sum()), len(runs)

    assert escaped(start_radius=float(radius)) == (int(n_all), int(n_all))
    assert escaped(half_angle_deg=float(angle)) == (int(n_escape), int(n_starts))
    assert escaped() == (0, config["n_starts"])


def test_figure2s_paths_are_not_said_to_stay_in_the_cone_they_leave() -> None:
    """Theorem 3 claims convergence from inside the cone, not invariance: where the committed claim gd_lmm_cone
    measures a path that leaves the cone on the way, docs/figures.md says that the theorem does not claim it stays,
    and nowhere that the starts stay there."""
    import pandas as pd

    claims = pd.read_csv(REPO / "docs" / "results" / "default" / "claims.csv").set_index("claim_id")
    left = re.search(r"; (\d+) of (\d+) paths? leaves? the cone on the way", claims.loc["gd_lmm_cone", "measured"])
    assert left, claims.loc["gd_lmm_cone", "measured"]
    text = " ".join((REPO / "docs" / "figures.md").read_text().split())
    assert "not that a path stays in it" in text and "claims convergence, not that a path stays in the cone" in text
    if int(left[1]):
        assert not re.search(r"stay (there|inside|in the cone)", text), "docs/figures.md says Figure 2's paths stay"


def test_no_run_number_is_typed_outside_the_generated_passages() -> None:
    """Outside its generated passages, a page quotes no measured value of the default run's claims table."""
    claims = default_passages.table("claims")
    measured = {n for text in claims["measured"] for n in re.findall(r"\d+\.\d{3,}", str(text))}
    for page in run_docs.PAGES:
        prose = set(re.findall(r"\d+\.\d+", run_docs.BLOCK.sub("", page.read_text())))
        typed = sorted(measured & prose)
        assert not typed, f"{page.name} types {typed}: generate them (tools/run_docs.py)"


def test_no_vit_run_number_is_typed_outside_the_generated_passages() -> None:
    """docs/vit.md quotes no measured value of a committed ViT run (the CPU runs' claims and W-ATT-SVM tables, the
    GPU session's metrics) outside its generated passages: a number there would drift from its run unnoticed."""
    import pandas as pd

    results = REPO / "docs" / "results"
    measured = set()
    for run in ("vit_quick", "cpu_depth12", *PAPER_EPOCHS.values()):
        claims = pd.read_csv(results / f"{run}_claims.csv")
        measured |= {n for text in claims["measured"] for n in re.findall(r"\d+\.\d{3,}", str(text))}
        # the head means a sentence would quote (every numeric column of the first two runs' tables)
        w_svm = pd.read_csv(results / f"{run}_w_svm.csv")
        quoted = ["cosine", "null_rank", "null_shuffled", "ceiling"] if run in PAPER_EPOCHS.values() else None
        numbers = w_svm[quoted] if quoted else w_svm.select_dtypes("number")
        measured |= {f"{v:.3f}" for v in numbers.groupby(w_svm["epoch"]).mean().stack()}
    gpu = pd.read_csv(REPO / "docs/gpu/session2/vit_gpu_metrics.csv").select_dtypes("number")
    measured |= {f"{v:.3f}" for v in gpu.stack() if abs(v) < 1000}
    prose = run_docs.BLOCK.sub("", (REPO / "docs" / "vit.md").read_text())
    typed = sorted(measured & set(re.findall(r"\d+\.\d{3}", prose)))
    assert not typed, f"docs/vit.md types {typed}: generate them (tools/run_docs.py)"


W_SVM_PROSE = {  # run: (the share of selections kept at the end, the words docs/vit.md says of its trend)
    "vit_quick": ((0.35, 0.65), "over the last half of the epochs no head's share of its ceiling rises"),
    "cpu_depth12": ((0.0, 0.5), "over the last half of the epochs the heads' share of their ceiling falls on average"),
}
TREND = re.compile(
    r"Spearman\(epoch, cos / ceiling\) from epoch (\d+) on \(the last 50% of the (\d+) epochs: "
    r"vit\.guard\.w_svm_trend_from\): each head's from (\S+) to (\S+), mean over heads (\S+) \[(\S+), (\S+)\]"
)


@pytest.mark.parametrize("run", sorted(W_SVM_PROSE))
def test_the_w_svm_prose_is_what_the_committed_runs_show(run: str) -> None:
    """docs/vit.md's words on each run's heads against their W-ATT-SVM, checked on its committed files: the trend is
    judged over the last half of the epochs (vit.guard.w_svm_trend_from), where the cosine's share of its ceiling
    does not rise (the claim's bracket below its bar, the mean of the heads' Spearman below 0, and in the quick
    default no head's above 0); the head-mean cosine peaks before that window and ends lower ("peaks early and ends
    lower"); the ceiling does not bind; the share of selections kept between the last two measured epochs is
    "about half" (the quick default) or under half ("most selections change", depth 12); the nuclear-norm claim,
    over 3-4 heads, is inconclusive, as the page says."""
    import pandas as pd

    (kept_range, words) = W_SVM_PROSE[run]
    prose = " ".join((REPO / "docs" / "vit.md").read_text().split())
    assert words in prose and "peaks early and ends lower" in prose
    assert prose.count("`vit_w_svm_nuclear` is inconclusive") == 2
    guard = DEFAULT_CONFIG["vit"]["guard"]
    assert guard["w_svm_trend_from"] == 0.5
    results = REPO / "docs" / "results"
    claims = pd.read_csv(results / f"{run}_claims.csv").set_index("claim_id")
    trend = TREND.search(claims.loc["vit_w_svm_direction", "measured"])
    assert trend, claims.loc["vit_w_svm_direction", "measured"]
    start, _, _, head_max, mean, _, high = trend.groups()
    assert float(high) < guard["min_w_svm_spearman"] and float(mean) < 0
    assert float(head_max) <= 0 or "no head" not in words
    table = pd.read_csv(results / f"{run}_w_svm.csv")
    cosine = table.groupby("epoch")["cosine"].mean()
    assert cosine.idxmax() < int(start) and cosine.iloc[-1] < cosine.max()
    last = table[table["epoch"] == table["epoch"].max()]
    assert last["ceiling"].min() > 0.95 and last["cosine"].max() < 0.6  # far below a ceiling that does not bind
    assert kept_range[0] <= last["selection_kept"].mean() < kept_range[1]
    assert claims.loc["vit_w_svm_nuclear", "verdict"] == "inconclusive"


def test_a_missing_or_partial_run_names_the_passage_and_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A passage whose run is not committed, or committed in part, stops with one error naming the passage and the
    file (not a bare FileNotFoundError, KeyError, IndexError or TypeError from the line that reads it)."""
    monkeypatch.setattr(vit_passages, "GPU", tmp_path / "gpu")
    with pytest.raises(run_docs.PassageError, match=r"^passage `vit_gpu s1 s2` cannot be written: \S*gpu/s1/vit_pilot"):
        run_docs.passage("vit_gpu s1 s2")
    (tmp_path / "gpu/s1").mkdir(parents=True)
    shutil.copy(REPO / "docs/gpu/session1/vit_pilot.csv", tmp_path / "gpu/s1")
    (tmp_path / "gpu/s2").mkdir()
    (tmp_path / "gpu/s2/session.json").write_text("{}\n")  # a session that recorded nothing
    with pytest.raises(
        run_docs.PassageError, match=r"read \(\S*gpu/s1/vit_pilot.csv, \S*gpu/s2/session.json\).*KeyError"
    ):
        run_docs.passage("vit_gpu s1 s2")
    for name in ("basin_summary", "basin_cone"):  # the default run's tables, one of them without rows
        shutil.copy(default_passages.TABLES / f"{name}.csv", tmp_path / f"{name}.csv")
    rows = (tmp_path / "basin_cone.csv").read_text().splitlines()
    (tmp_path / "basin_cone.csv").write_text(rows[0] + "\n")
    with pytest.raises(run_docs.PassageError, match=r"^passage `basin` .*basin_cone.csv.*IndexError"):
        run_docs.passage("basin", tmp_path)
    with pytest.raises(run_docs.PassageError, match="no passage 'nosuch'"):
        run_docs.passage("nosuch arg")


IN_WORDS = (
    "The loss goes to zero in all three.",
    "Under Adam at 64-d, W settles by ceasing to change.",
    "Under SGD the attention stays diffuse.",
    "At the paper's depth, W keeps turning at a near-zero loss.",
    "No run's heads approach their W-ATT-SVM once the loss is near zero.",
    "The training images and the held-out ones agree",
    "The number of images is not settled.",
)
PAPER_EPOCHS = {"adam": "cpu_paper_epochs_adam", "sgd": "cpu_paper_epochs_sgd", "depth12": "cpu_paper_epochs_depth12"}


def _paper_epochs_run(run: str) -> dict:
    """A committed 400-epoch CPU run's metrics, W-ATT-SVM, image-count and claims tables, and its window (claim
    vit_w_direction's: the last 20% of the epochs)."""
    import pandas as pd

    from maxmargin.claims.vit_runs import window

    results = REPO / "docs" / "results"
    tables = {key: pd.read_csv(results / f"{run}_{key}.csv") for key in ("metrics", "w_svm", "w_svm_images", "claims")}
    tables["verdict"] = tables.pop("claims").set_index("claim_id")["verdict"].to_dict()
    tables["window"] = window(tables["metrics"].sort_values("epoch"), DEFAULT_CONFIG["vit"]["guard"])
    return tables


def test_the_400_epoch_prose_is_what_the_committed_runs_show() -> None:
    """docs/vit.md's sentences on the three 400-epoch CPU runs ("In words"), each checked on the runs' files: the
    regime reached by all three; under Adam W's direction settles while ||W||_F stops growing (x1.05 at most over the
    window) once the training accuracy is 1 and the loss still falls; under SGD ||W||_F grows several times less than
    under Adam, the saturation stays near a tenth (Adam's above one half), vit_sparsity and vit_fig6_concentrates
    differ; at depth 12 W turns more than the claim's bound while ||W||_F grows; in every run the head-mean cosine
    peaks in the first half and ends lower, above both nulls and below a ceiling that does not bind, and
    vit_w_svm_direction holds on none; train and test agree at the last snapshot; the curve still rises from 128 to
    256 images by more than vit.w_svm.curve_tol."""
    from maxmargin.claims.base import t_interval
    from maxmargin.claims.vit_runs import turns

    prose = " ".join((REPO / "docs" / "vit.md").read_text().split())
    for words in IN_WORDS:
        assert words in prose, words
    guard, w_svm = DEFAULT_CONFIG["vit"]["guard"], DEFAULT_CONFIG["vit"]["w_svm"]
    runs = {arm: _paper_epochs_run(run) for arm, run in PAPER_EPOCHS.items()}
    growth = {arm: r["window"].w_frobenius.iloc[-1] / r["window"].w_frobenius.iloc[0] for arm, r in runs.items()}
    total = {arm: r["metrics"].w_frobenius.iloc[-1] / r["metrics"].w_frobenius.iloc[0] for arm, r in runs.items()}
    saturation = {arm: r["metrics"].cls_max_attention.iloc[-1] for arm, r in runs.items()}
    adam, sgd, deep = runs["adam"], runs["sgd"], runs["depth12"]
    assert all(r["verdict"]["vit_regime"] == "holds" for r in runs.values())
    gpu = vit_passages.gpu_run_claims("session3").set_index("claim_id")["verdict"]
    assert gpu["vit_regime"] == "inconclusive"
    assert adam["verdict"]["vit_w_direction"] == "holds" and growth["adam"] < 1.05
    assert (
        adam["window"].train_acc.min() == 1.0 and adam["window"].train_loss.iloc[-1] < adam["window"].train_loss.iloc[0]
    )
    assert sgd["verdict"]["vit_w_direction"] == "holds" and 3 * total["sgd"] < total["adam"]
    assert saturation["sgd"] < 0.15 and saturation["adam"] > 0.5
    assert sgd["verdict"]["vit_sparsity"] == "differs" and sgd["verdict"]["vit_fig6_concentrates"] == "differs"
    assert deep["verdict"]["vit_w_direction"] == "differs" and growth["depth12"] > 1.05
    assert turns(deep["window"]).sum() > guard["max_direction_angle"]
    for arm, r in runs.items():
        judged = r["w_svm"][r["w_svm"]["images"] == "train"]
        means = judged.groupby("epoch")[["cosine", "null_rank", "null_shuffled", "ceiling"]].mean()
        last = means.iloc[-1]
        assert means.cosine.idxmax() < means.index.max() / 2 and last.cosine < means.cosine.max(), arm
        assert last.cosine > max(last.null_rank, last.null_shuffled) and last.cosine < 0.6 < 0.95 < last.ceiling, arm
        assert r["verdict"]["vit_w_svm_direction"] != "holds", arm
        at_end = r["w_svm"][r["w_svm"]["epoch"] == r["w_svm"]["epoch"].max()].pivot(
            index="head", columns="images", values="cosine"
        )
        low, high = t_interval((at_end["train"] - at_end["test"]).to_numpy(), guard["confidence"])
        assert low <= 0 <= high, arm
        heads = r["w_svm_images"][r["w_svm_images"]["images"] == "train"].pivot(
            index="head", columns="n_images", values="cosine"
        )
        low, _ = t_interval((heads[256] - heads[128]).to_numpy(), guard["confidence"])
        assert low > w_svm["curve_tol"], arm  # the rise is beyond the tolerance by its interval over heads
