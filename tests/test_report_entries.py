"""The report's entries, computed at parse time from the files a run left (maxmargin/report.py), and the outputs of
each target (maxmargin.registry.derived), unit by unit: no Snakemake parse."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from conftest import DEFAULT_CONFIG, REPO

from maxmargin import registry
from maxmargin.provenance import sentences_record
from maxmargin.registry import derived
from maxmargin.report import ReportEntries, caption_file, made_with, png_provenance, report_caption, run_sentences


def _png(path: Path, record: dict | None) -> Path:
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1, 1))
    fig.savefig(path, format="png", metadata={"Provenance": json.dumps(record)} if record else {})
    plt.close(fig)
    return path


def _table(path: Path, config: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a\n1\n")
    Path(f"{path}.provenance.json").write_text(json.dumps({"config": config, "sha256": "abc"}))
    return str(path)


def test_a_caption_file_is_written_only_when_its_text_changes(tmp_path) -> None:
    path = Path(caption_file("x", "one", tmp_path))
    assert path == (tmp_path / "x.rst").resolve() and path.read_text() == "one"
    os.utime(path, (1, 1))
    caption_file("x", "one", tmp_path)
    assert path.stat().st_mtime == 1  # unchanged text: not touched
    caption_file("x", "two", tmp_path)
    assert path.read_text() == "two" and path.stat().st_mtime > 1


def test_the_config_that_made_a_file_is_read_from_its_png_or_sidecar(tmp_path) -> None:
    assert png_provenance(_png(tmp_path / "bare.png", None)) is None
    assert made_with(str(_png(tmp_path / "p.png", {"config": {"a": 1}}))) == {"a": 1}
    assert made_with(_table(tmp_path / "t.csv", {"b": 2})) == {"b": 2}
    assert made_with(str(tmp_path / "missing.csv")) is None
    (tmp_path / "bad.csv.provenance.json").write_text("{not json")
    assert made_with(str(tmp_path / "bad.csv")) is None


def test_the_run_sentences_are_read_only_when_bound_to_their_claims_table(tmp_path, capsys) -> None:
    sentences, sidecar = tmp_path / "claims.json", tmp_path / "claims.csv.provenance.json"
    assert run_sentences(sentences, sidecar) == {}  # before a run
    sidecar.write_text(json.dumps({"sha256": "c0ffee"}))
    sentences.write_text(json.dumps(sentences_record("c0ffee", {"gd_gmm_n1": "holds"})))
    assert run_sentences(sentences, sidecar) == {"gd_gmm_n1": "holds"}
    sidecar.write_text(json.dumps({"sha256": "another"}))  # of another claims table: refused, set to rerun
    assert run_sentences(sentences, sidecar) == {}
    assert "not of the claims table beside it" in capsys.readouterr().err and sentences.stat().st_mtime == 0
    sentences.write_text("{cut")
    assert run_sentences(sentences, sidecar) == {}
    assert "cannot be read" in capsys.readouterr().err


def test_a_caption_says_when_the_file_was_made_by_other_settings(tmp_path) -> None:
    entry = registry.panel("fig9a")
    own = derived.caption(entry, DEFAULT_CONFIG)
    made = str(_png(tmp_path / "fig9a.png", {"config": DEFAULT_CONFIG}))
    assert report_caption(entry, made, DEFAULT_CONFIG, {}) == own
    assert report_caption(entry, None, DEFAULT_CONFIG, {}) == own
    other = copy.deepcopy(DEFAULT_CONFIG)
    other["census"]["n_trials"] += 1
    made = str(_png(tmp_path / "other.png", {"config": other}))
    text = report_caption(entry, made, DEFAULT_CONFIG, {})
    assert text.startswith("**Made by other settings than this config's") and str(other["census"]["n_trials"]) in text
    made = str(_png(tmp_path / "old.png", {"config": {"census": {}}}))  # a record the caption cannot be filled from
    assert report_caption(entry, made, DEFAULT_CONFIG, {}).startswith("**Made by another configuration")


def test_the_entries_of_a_table_a_panel_rule_and_the_landing_page(tmp_path) -> None:
    report = ReportEntries(DEFAULT_CONFIG, str(tmp_path / "results"), {}, tmp_path / "captions")
    table = report.table("census_summary")
    assert table["category"] == derived.category("census") and table["subcategory"] == "Tables"
    assert Path(table["caption"]).read_text() == derived.caption(registry.table("census_summary"), DEFAULT_CONFIG)
    panels = [p.name for p in registry.panels_of("census")]
    entry = report.panel("plot_census", panels)
    text = Path(entry["caption"]).read_text()
    assert text.endswith("{{ captions[snakemake.wildcards.panel] }}\n")
    captions = json.loads(text.removeprefix("{% set captions = ").split(" %}", 1)[0])
    assert captions == {p: derived.caption(registry.panel(p), DEFAULT_CONFIG) for p in panels}

    class Wildcards:
        panel = "fig9a"

    assert (
        entry["subcategory"](Wildcards) == registry.panel("fig9a").figure_label
        and entry["labels"](Wildcards)["figure"] == "Figure 9(a)"
    )
    page = Path(report.landing_page(REPO / "workflow/report/workflow.rst")).read_text()
    assert derived.VERDICTS_MARK not in page and "{%- set census =" in page


def test_a_targets_outputs_are_its_panels_their_tables_and_sidecars() -> None:
    fig1 = derived.target_outputs("fig1", DEFAULT_CONFIG)
    assert {"figures/fig1a.png", "figures/fig1c.pdf", "tables/fig1b.csv", "tables/fig1b.csv.provenance.json"} <= set(
        fig1
    )
    every = derived.all_outputs(DEFAULT_CONFIG)
    assert set(fig1) <= set(every) and len(every) == len(set(every))
    assert not any("census_grid" in path for path in every)  # an on-demand target's own tables stay out of `all`
    assert "figures/census_grid.png" in derived.target_outputs("census_grid", DEFAULT_CONFIG)
    with pytest.raises(KeyError):
        derived.target_outputs("fig99", DEFAULT_CONFIG)
