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
    """Outside its generated passages, a page quotes no measured value of the default run's claims table. A time in
    seconds on a page ("0.360 s", a benchmark measured by hand) is not such a value: no claim measures seconds."""
    claims = default_passages.table("claims")
    assert not any(re.search(r"\d+\.\d+(?![\d.]) ?s\b", str(text)) for text in claims["measured"])
    measured = {n for text in claims["measured"] for n in re.findall(r"\d+\.\d{3,}", str(text))}
    for page in run_docs.PAGES:
        # every number but one followed by its unit s
        prose = set(re.findall(r"\d+\.\d+(?![\d.])(?! ?s\b)", run_docs.BLOCK.sub("", page.read_text())))
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


W_SVM_RUNS = ("vit_quick", "cpu_depth12")  # the runs whose heads docs/vit.md's W-ATT-SVM section reads in words
# What each verdict of a W-ATT-SVM claim says in the words of that section, written here again.
W_SVM_SAID = {
    "holds": ("the heads approach", "training makes the alignment specific", "the heads lean to the nuclear-norm"),
    "differs": ("the heads do not approach", "does not make the alignment", "do not lean to the nuclear-norm"),
    "inconclusive": ("whether the heads approach", "whether training makes", "whether the heads lean"),
}
W_SVM_CLAIMS = ("vit_w_svm_direction", "vit_w_svm_specific", "vit_w_svm_nuclear")


def _hand_written(page: str = "vit.md") -> str:
    """A page's prose outside its generated passages, on one line."""
    return " ".join(run_docs.BLOCK.sub("", (REPO / "docs" / page).read_text()).split())


@pytest.mark.parametrize("run", W_SVM_RUNS)
def test_the_w_svm_prose_is_what_the_committed_runs_show(run: str) -> None:
    """docs/vit.md's words on each run's heads against their W-ATT-SVM are generated from its committed files
    (passage vit_w_svm_reading): each W-ATT-SVM claim's verdict in the words of that verdict, the head-mean cosine
    with its number of images, above or not above both nulls, the share of selections kept; the hand-written prose
    states no trend the claims do not test (the Spearman rule and "peaks early and ends lower" are gone)."""
    import pandas as pd

    page = (REPO / "docs" / "vit.md").read_text()
    reading = vit_passages.vit_w_svm_reading(REPO, run)
    assert f"<!-- run: vit_w_svm_reading {run} -->\n{reading}<!-- /run -->" in page
    results = REPO / "docs" / "results"
    verdicts = pd.read_csv(results / f"{run}_claims.csv").set_index("claim_id")["verdict"]
    for k, claim in enumerate(W_SVM_CLAIMS):
        assert f"`{claim}` **{verdicts[claim]}**: {W_SVM_SAID[verdicts[claim]][k]}" in reading, claim
    table = pd.read_csv(results / f"{run}_w_svm.csv")
    last = table[table["epoch"] == table["epoch"].max()]
    above = last["cosine"].mean() > max(last["null_rank"].mean(), last["null_shuffled"].mean())
    assert f"is {last['cosine'].mean():.3f}, {'above' if above else 'not above'} the head means of both" in reading
    assert f"on {int(last['n_images'].iloc[0]):,} test images" in reading
    assert f"{last['selection_kept'].mean():.0%} of the selections are those of the previous snapshot" in reading
    prose = _hand_written()
    assert "Spearman" not in prose.replace("Spearman at most", "") and "peaks early and ends lower" not in prose
    assert "min_w_svm_spearman" not in prose


def test_the_depth12_sentence_is_what_its_claims_say() -> None:
    """docs/vit.md, under the depth-12 CPU run: "Sparsity and norm move together, as the paper's Figure 7 shows"
    (vit_sparsity holds) and W's direction "has not settled by the last epoch" (vit_w_direction differs by its
    direction, the condition its note names first)."""
    import pandas as pd

    prose = _hand_written()
    assert "Sparsity and norm move together, as the paper's Figure 7 shows; W's direction" in prose
    assert "has not settled by the last epoch" in prose
    claims = pd.read_csv(REPO / "docs" / "results" / "cpu_depth12_claims.csv").set_index("claim_id")
    assert claims.loc["vit_sparsity", "verdict"] == "holds"
    assert claims.loc["vit_w_direction", "note"].startswith("differs: direction differs")


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


PAPER_EPOCHS = {"adam": "cpu_paper_epochs_adam", "sgd": "cpu_paper_epochs_sgd", "depth12": "cpu_paper_epochs_depth12"}
DECISIVE = ("vit_one_layer_converges", "vit_ray_precondition", "vit_frozen_converges")


def _paper_epochs_verdicts() -> dict[str, dict[str, str]]:
    """Each committed 400-epoch CPU run's verdicts (docs/results/<run>_claims.csv), a claim it lacks not run."""
    import pandas as pd

    results = REPO / "docs" / "results"
    return {
        run: pd.read_csv(results / f"{run}_claims.csv").set_index("claim_id")["verdict"].to_dict()
        for run in PAPER_EPOCHS.values()
    }


def _expected_case(v: dict[str, str]) -> int:
    """The row of the decisive verdicts' cases a run's verdicts select, by the rule written out here again: not run
    first, then the one-layer model, the ray test, frozen GD and the network's heads in that order."""
    one, ray, frozen = (v.get(c, "not run") for c in DECISIVE)
    heads = v.get("vit_w_svm_direction", "not run")
    if "not run" in (one, ray, frozen):
        return 0
    if one != "holds":
        return 1 if one == "differs" else 2
    if ray != "holds":
        return 3 if ray == "differs" else 4
    return 5 if frozen != "holds" else 6 if heads != "holds" else 7


def test_the_400_epoch_prose_is_what_the_committed_runs_show() -> None:
    """docs/vit.md's 400-epoch section, its question table and its "In words" are written from the committed runs'
    files (passages vit_paper_epochs and vit_paper_epochs_words); each run's case of the decisive verdicts is the one
    the rule gives from its claims CSV; a run's answers to "do real tokens admit the theory" and "do the heads meet
    its premise" are its verdicts of vit_one_layer_converges and vit_ray_precondition; the page says that a run
    reaches "the theory's regime" only where vit_regime_markers holds on it, and its title asks it as a question
    unless the markers hold on every run."""
    from maxmargin.claims.vit_theory_runs import ANSWER, CASES

    page = (REPO / "docs" / "vit.md").read_text()
    arms = " ".join(PAPER_EPOCHS.values())
    words = vit_passages.vit_paper_epochs_words(REPO, *PAPER_EPOCHS.values())
    assert f"<!-- run: vit_paper_epochs_words {arms} -->\n{words}<!-- /run -->" in page
    verdicts = _paper_epochs_verdicts()
    rows = [line for line in words.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == len(CASES)
    for run, v in verdicts.items():
        marked = [i for i, row in enumerate(rows) if f"**{run}**" in row]
        assert marked == [_expected_case(v)], run
        for claim in ("vit_one_layer_converges", "vit_ray_precondition"):
            verdict = v.get(claim, "not run")
            assert f"{run}: {ANSWER[verdict]} (`{claim}` {verdict}:" in words, (run, claim)
        reaches = f"`vit_regime_markers` {v['vit_regime_markers']} (the theory's markers move: it reaches the theory's"
        assert (reaches in words) == (v["vit_regime_markers"] == "holds"), run
    assert words.count("reaches the theory's regime") == sum(
        v["vit_regime_markers"] == "holds" for v in verdicts.values()
    )
    title = re.search(r"^## 400 epochs on a CPU: (.*)$", page, re.MULTILINE)[1]
    assert title.endswith("?") or all(v["vit_regime_markers"] == "holds" for v in verdicts.values()), title
    prose = _hand_written()
    assert "the theory's regime, under Adam" not in prose and "The loss goes to zero in all three" not in prose


def test_the_400_epoch_table_has_a_row_per_claim_and_each_runs_verdict() -> None:
    """The question table of the 400-epoch section: a row per claim of :data:`vit_runs.QUESTIONS` (the decisive
    claims among them), each cell the run's verdict from its claims CSV, ``not run`` where the CSV has no such claim;
    the arm table gives each probed run's number of images beside its cosine."""
    import pandas as pd

    from maxmargin.claims.vit_runs import QUESTIONS

    assert set(DECISIVE) | {"vit_sparsity", "vit_learns", "vit_w_svm_specific", "vit_w_svm_nuclear"} <= set(QUESTIONS)
    assert "vit_regime_markers" in QUESTIONS
    text = vit_passages.vit_paper_epochs(REPO, *PAPER_EPOCHS.values())
    verdicts = _paper_epochs_verdicts()
    for claim in QUESTIONS:
        row = next(line for line in text.splitlines() if f"(`{claim}`) |" in line)
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip("|"))][1:]  # "\|" is a cell's own
        assert cells[: len(verdicts)] == [v.get(claim, "not run") for v in verdicts.values()], claim
    for run in PAPER_EPOCHS.values():
        w = pd.read_csv(REPO / "docs" / "results" / f"{run}_w_svm.csv")
        last = w[(w["epoch"] == w["epoch"].max()) & (w["images"] == "train")]
        assert f"{last['cosine'].mean():.3f} / " in text and f"({int(last['n_images'].iloc[0]):,} train)" in text
