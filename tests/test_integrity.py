"""Nothing stale, partial or tampered is ever used, and no good result is lost to a bad config.

Every table a rule writes is checked against its contract (maxmargin/tables.py) and gets a provenance record with
its sha256 and row count; every rule that reads a table checks both again. Config values that pass the schema but
would fail inside a job stop the run before any job, naming the key.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import CI_RESULTS, DEFAULT_CONFIG, REPO, ci_config, snakemake

from maxmargin import registry
from maxmargin.config import check_config_beyond_schema, load_yaml
from maxmargin.experiments.census import CensusSettings, run_trials
from maxmargin.logs import rule_logging
from maxmargin.provenance import (
    TableIntegrityError,
    checked_sentences,
    provenance_path,
    sentences_record,
    table_record,
)
from maxmargin.tables import TableContractError, find_contract, read_table, write_csv

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
N_TRIALS = 20


def small_config(**census: object) -> dict:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["census"].update({"dims": [2, 5], "n_trials": N_TRIALS, "n_iter": 50, **census})
    return config


def job(tmp_path: Path, output: Path, config: dict, rule: str = "census_trials", **wildcards: str) -> SimpleNamespace:
    """A stand-in for the ``snakemake`` object of a script: its inputs, outputs, log, rule, wildcards and config."""
    return SimpleNamespace(
        input=[],
        output=[str(output)],
        log=[str(tmp_path / f"{rule}.log")],
        rule=rule,
        wildcards=wildcards,
        params={},
        config=config,
    )


@pytest.fixture(scope="module")
def census_run() -> pd.DataFrame:
    config = small_config()
    return run_trials(CensusSettings.from_config(config["census"]), 5)


@pytest.fixture
def written(tmp_path: Path, census_run: pd.DataFrame) -> tuple[Path, dict]:
    """runs/census/d5.csv as rule census_trials writes it (with its sidecar)."""
    config, path = small_config(), tmp_path / "results/runs/census/d5.csv"
    with rule_logging(job(tmp_path, path, config, d="5")):
        write_csv(census_run, path)
    return path, config


def read_in_rule(tmp_path: Path, path: Path, config: dict) -> pd.DataFrame:
    """Read ``path`` as rule census_gather does."""
    with rule_logging(job(tmp_path, tmp_path / "results/tables/out.csv", config, "census_gather")):
        return read_table(path)


def test_every_declared_table_has_a_rule_of_the_workflow() -> None:
    rules = set()
    for smk in (REPO / "workflow/rules").glob("*.smk"):
        rules |= {line.split()[1].rstrip(":") for line in smk.read_text().splitlines() if line.startswith("rule ")}
    assert {t.rule for t in registry.TABLES} <= rules
    assert find_contract("results/runs/census/d500.csv")[1] == {"d": "500"}
    assert find_contract("results/paper/tables/census_summary.csv")[0].name == "census_summary"
    assert find_contract("results/tables/fig3a.csv")[0].name == "fig3a"
    assert find_contract("results/tables/fig3a_tokens.csv")[0].name == "fig3a_tokens"
    assert find_contract("results/tables/fig9b.csv")[0].name == "fig9b"  # one name: the registry's
    assert find_contract("results/runs/regpath/fig1b_compare.csv")[0].name == "regpath_compare_run"
    assert find_contract("results/tables/some_new_family.csv") is None  # no contract; its sidecar is still verified


def test_the_sidecar_records_sha256_and_rows(written: tuple[Path, dict]) -> None:
    path, _ = written
    record = json.loads(provenance_path(path).read_text())
    assert record["rows"] == N_TRIALS and len(record["sha256"]) == 64 and record["rule"] == "census_trials"


def test_a_run_table_cut_to_half_its_rows_is_refused(tmp_path: Path, written: tuple[Path, dict]) -> None:
    path, config = written
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: 1 + N_TRIALS // 2]))  # header and half the trials, cut at a line end
    with pytest.raises(TableIntegrityError) as err:
        read_in_rule(tmp_path, path, config)
    message = str(err.value)
    assert str(path) in message and f"rows {N_TRIALS // 2} (recorded {N_TRIALS})" in message
    assert f"rebuild it: snakemake --cores all --force -- {path} (rule census_trials)" in message


def test_a_byte_level_cut_is_refused(tmp_path: Path, written: tuple[Path, dict]) -> None:
    path, config = written
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # mid-row: pandas would count the broken row as a trial
    with pytest.raises(TableIntegrityError, match=r"differs from its provenance record \(rows \d+ \(recorded 20\)"):
        read_in_rule(tmp_path, path, config)


def test_a_table_cut_inside_a_quoted_field_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results/runs/fig1a/directions.csv"
    path.parent.mkdir(parents=True)
    path.write_text('figure,direction\nfig1a,"[0.1, 0.2')  # the parser itself fails on it
    provenance_path(path).write_text(json.dumps({"rows": 1, "sha256": "0" * 64}))
    with pytest.raises(TableIntegrityError, match=r"rows unreadable \(ParserError\) \(recorded 1\)"):
        read_table(path)


def test_a_missing_sidecar_is_reported_with_the_command_that_rebuilds(tmp_path: Path, written) -> None:
    path, config = written
    provenance_path(path).unlink()
    with pytest.raises(TableIntegrityError, match="provenance record .*d5.csv.provenance.json is missing") as err:
        read_in_rule(tmp_path, path, config)
    assert "(rule census_trials)" in str(err.value)


def test_an_edited_table_with_a_forged_sidecar_still_breaks_its_contract(tmp_path: Path, census_run) -> None:
    # The d = 500 row of census_summary deleted, the sidecar rewritten to match: the row count follows from
    # census.dims, so the claims are never evaluated on it.
    config = small_config(dims=[2, 5, 500])
    path = tmp_path / "results/tables/census_summary.csv"
    columns = find_contract(str(path))[0].column_names
    summary = pd.DataFrame({name: [0.5, 0.5] for name in columns} | {"d": [2, 5], "n_trials": [N_TRIALS] * 2})
    path.parent.mkdir(parents=True)
    summary.to_csv(path, index=False)
    forged = {**table_record(path), "rule": "census_gather", "reads": {}}  # says it was made from no setting
    provenance_path(path).write_text(json.dumps(forged))
    with pytest.raises(TableContractError, match="row count 3 .from the config.*the table has 2 rows") as err:
        read_in_rule(tmp_path, path, config)
    assert "(rule census_gather)" in str(err.value)


def test_a_sidecar_stripped_of_reads_and_rule_fails_closed(tmp_path: Path, written: tuple[Path, dict]) -> None:
    """A declared table whose record does not say what made it is refused, not read unbound."""
    path, config = written
    record = json.loads(provenance_path(path).read_text())
    stripped = {key: value for key, value in record.items() if key not in ("reads", "rule")}
    provenance_path(path).write_text(json.dumps(stripped))
    with pytest.raises(TableIntegrityError, match="does not say which settings made it") as err:
        read_in_rule(tmp_path, path, {**config, "census": {**config["census"], "n_iter": 1}})
    assert "rebuild it: snakemake" in str(err.value) and "(rule census_trials)" in str(err.value)


def test_a_table_breaking_its_contract_is_never_written(tmp_path: Path, census_run: pd.DataFrame) -> None:
    path = tmp_path / "results/runs/census/d5.csv"
    bad = census_run.copy()
    bad.loc[3, "class"] = "maybe"
    with (
        pytest.raises(TableContractError, match="column class: isin"),
        rule_logging(job(tmp_path, path, small_config(), d="5")),
    ):
        write_csv(bad, path)
    with (
        pytest.raises(TableContractError, match="row count 20"),
        rule_logging(job(tmp_path, path, small_config(), d="5")),
    ):
        write_csv(census_run.head(7), path)
    assert not path.exists() and not provenance_path(path).exists()


def test_a_vit_metrics_table_cut_to_half_its_epochs_is_refused(tmp_path: Path) -> None:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["vit"]["train"]["epochs"] = 11
    path = tmp_path / "results/tables/vit_metrics.csv"
    columns = find_contract(str(path))[0].column_names
    table = pd.DataFrame({name: [0.5] * 12 for name in columns} | {"epoch": range(12), "dataset": "cifar10"})
    with rule_logging(job(tmp_path, path, config, "vit_metrics_table")):
        write_csv(table, path)
        write_csv(table.head(6), tmp_path / "results/runs/vit/x.csv")  # no contract: any row count
    assert len(read_in_rule(tmp_path, path, config)) == 12
    # its epochs are those of the config: 0 to vit.train.epochs, every vit.train.eval_every
    with pytest.raises(TableContractError, match=r"column epoch holds .*0\.\.vit\.train\.epochs/vit\.train\.eval"):
        with rule_logging(job(tmp_path, path, config)):
            write_csv(table.head(6), path)


def test_a_broken_contract_names_the_registry_module_that_declares_the_table(tmp_path: Path) -> None:
    """The W-ATT-SVM probe's table is of the vit family but declared in maxmargin/registry/vit_w_svm.py: the message
    names where to look (it named registry/vit.py, from the family)."""
    path = tmp_path / "results/tables/vit_w_svm.csv"
    table = find_contract(str(path))[0]
    assert table.family == "vit" and registry.declared_in(table) == "maxmargin/registry/vit_w_svm.py"
    with pytest.raises(TableContractError, match=r"table 'vit_w_svm' \(maxmargin/registry/vit_w_svm\.py\)"):
        write_csv(pd.DataFrame({"epoch": [0]}), path)
    assert not path.exists()


# --- config checks before any job --------------------------------------------------------------------------------


def test_a_float_in_an_integer_list_names_the_key() -> None:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["census"]["budget"]["n_iter"] = [1000.0]
    with pytest.raises(ValueError, match=r"config key 'census.budget.n_iter\[0\]' is 1000.0: it must be an integer"):
        check_config_beyond_schema(config, SCHEMA)
    check_config_beyond_schema(DEFAULT_CONFIG, SCHEMA)  # the default config passes


def test_a_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text("census:\n  n_trials: 10\n  seed: 1\n  n_trials: 20\n")
    with pytest.raises(ValueError, match="key 'n_trials' is given twice .lines 2 and 4."):
        load_yaml(path)
    assert load_yaml(REPO / "workflow/config/default.yaml") == DEFAULT_CONFIG
    for config in [*(REPO / "workflow/config").glob("*.yaml"), *(REPO / "workflow/profiles").glob("*/config.yaml")]:
        load_yaml(config)  # the repository's own YAML files have none


@pytest.mark.parametrize(
    "index, n_test, ok", [(5000, 1000, False), (359, 0, True), (360, 0, False), (999, 1000, False)]
)
def test_the_probe_image_must_be_inside_the_test_set(index: int, n_test: int, ok: bool) -> None:
    # With no CIFAR-10 under vit.data.root the quick scale falls back to the 360 test digits.
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["vit"]["probe"]["image_index"] = index
    config["vit"]["data"].update({"n_test": n_test, "root": "data/none"})
    config["vit_recipes"]["data"]["n_test"] = 0
    if ok:
        check_config_beyond_schema(config, SCHEMA)
    else:
        with pytest.raises(ValueError, match=rf"config key 'vit.probe.image_index' is {index}, outside the"):
            check_config_beyond_schema(config, SCHEMA)


def test_the_digits_test_set_has_the_size_the_config_check_assumes() -> None:
    from maxmargin.config import TEST_IMAGES
    from maxmargin.experiments.vit.data import load_digits32

    assert len(load_digits32(0).x_test) == TEST_IMAGES["digits"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("census:\n  budget:\n    n_iter: [1000.0]\n", "config key 'census.budget.n_iter[0]'"),
        ("vit:\n  probe:\n    image_index: 5000\n", "config key 'vit.probe.image_index' is 5000"),
        ("census:\n  seed: 1\n  seed: 2\n", "key 'seed' is given twice"),
        ("synthetic:\n  fig3:\n    v_starts: [[1.0, 0.0], [0.0, 1.0]]\n", "'synthetic.fig3.v_starts' (2) and"),
    ],
)
def test_bad_configs_stop_the_workflow_before_any_job(workflow_dir: Path, text: str, expected: str) -> None:
    (workflow_dir / "bad.yaml").write_text(text)
    proc = snakemake(workflow_dir, "-n", "--configfile", "bad.yaml", "--", "fig7", "census_budget", check=False)
    assert proc.returncode != 0 and expected in proc.stdout + proc.stderr


def test_an_unreadable_checkpoint_is_reported_on_the_terminal(tmp_path: Path, capfd) -> None:
    from maxmargin.experiments.vit.checkpoint import load_checkpoint

    broken = tmp_path / "checkpoint.pt"
    broken.write_bytes(b"not a checkpoint")
    with rule_logging(str(tmp_path / "vit.log")):
        assert load_checkpoint(broken, "fingerprint") is None
    assert "unreadable checkpoint" in capfd.readouterr().err
    assert "kept aside as" in (tmp_path / "vit.log").read_text()


# --- end to end ------------------------------------------------------------------------------------------------


CENSUS = {"census": {"dims": [2, 5], "n_trials": 20, "n_iter": 50, "histogram": {"dims": [5]}}}


@pytest.mark.slow
def test_a_cut_census_run_stops_figure9_naming_the_file(workflow_dir: Path) -> None:
    snakemake(workflow_dir, "fig9", config=CENSUS)
    results = workflow_dir / "results"
    run, figure = results / "runs/census/d5.csv", results / "figures/fig9a.png"
    drawn = figure.stat().st_mtime_ns
    lines = run.read_text().splitlines(keepends=True)
    run.write_text("".join(lines[:11]))
    proc = snakemake(workflow_dir, "fig9", config=CENSUS, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "results/runs/census/d5.csv differs from its provenance record" in out
    # the command to rebuild it names the run's own config file: run as printed, it rebuilds this run's table
    rebuild = "snakemake --cores all --configfile test_config.yaml --force -- results/runs/census/d5.csv"
    assert "rows 10 (recorded 20)" in out and rebuild in out
    assert figure.stat().st_mtime_ns == drawn  # nothing drawn from it
    # The command the error names rebuilds it; fig9 then builds again.
    snakemake(workflow_dir, "--force", "--", "results/runs/census/d5.csv", config=CENSUS)
    snakemake(workflow_dir, "fig9", config=CENSUS)
    assert len(pd.read_csv(run)) == 20 and figure.stat().st_mtime_ns > drawn
    # A deleted sidecar is a missing output: the job that writes it runs again (no "Nothing to be done").
    provenance_path(run).unlink()
    planned = snakemake(workflow_dir, "-n", "fig9", config=CENSUS).stdout
    assert "census_trials" in planned and "d5.csv.provenance.json" in planned


@pytest.mark.slow
def test_a_finished_vit_run_is_restored_not_retrained(ci_copy: Path) -> None:
    """On a copy of the suite's CI run, whose ViT has finished."""
    config = ci_config()
    run = ci_copy / CI_RESULTS / "runs/vit"
    metrics = pd.read_csv(run / "vit_metrics.csv")
    trained = train_seconds(run)
    # A bad probe setting stops before any job: the finished run's outputs stay.
    proc = snakemake(ci_copy, "fig7", config=ci_config(vit={"probe": {"image_index": 5000}}), check=False)
    assert proc.returncode != 0 and "'vit.probe.image_index' is 5000" in proc.stdout + proc.stderr
    assert (run / "vit_metrics.csv").exists() and (run / "vit_attention_maps.npz").exists()
    # A failure after training (e.g. a full disk while writing) leaves no outputs, as Snakemake deletes them.
    for name in ("vit_metrics.csv", "vit_metrics.json", "vit_attention_maps.npz"):
        (run / name).unlink()
    snakemake(ci_copy, "--", f"{CI_RESULTS}/runs/vit/vit_metrics.csv", config=config)  # a target of `all`, as they are
    log = (ci_copy / CI_RESULTS / "logs/vit_train/vit.log").read_text()
    assert "restoring the outputs of the finished run" in log and "epoch 0" in log
    restored = pd.read_csv(run / "vit_metrics.csv")
    # The same numbers and the same training times: nothing trained again. (The last epoch_seconds differs by the
    # time the last checkpoint took to write, which the checkpoint itself cannot hold.)
    pd.testing.assert_frame_equal(restored, metrics)
    assert train_seconds(run) == trained
    # The maps carry their sha256 in the run's JSON too: a cut maps file stops Figure 6.
    maps = run / "vit_attention_maps.npz"
    maps.write_bytes(maps.read_bytes()[:-100])
    proc = snakemake(ci_copy, "fig6", config=config, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and f"{CI_RESULTS}/runs/vit/vit_attention_maps.npz differs from its record" in out
    # --forcerun vit_train trains again.
    snakemake(ci_copy, "fig7", "--forcerun", "vit_train", config=config)
    log = (ci_copy / CI_RESULTS / "logs/vit_train/vit.log").read_text()
    assert "restoring" not in log.split("ViT settings")[-1]
    assert train_seconds(run) != trained


def train_seconds(run: Path) -> list[float]:
    """The wall-clock seconds of each epoch's training step, from the run's sidecar."""
    return [t["train_seconds"] for t in json.loads((run / "vit_metrics.json").read_text())["epoch_times"]]


def test_yaml_loader_is_used_for_the_docs_too() -> None:
    # maxmargin/docs/config_docs.py documents the config the pipeline reads: with the same duplicate-refusing loader.
    assert "load_yaml" in (REPO / "maxmargin/docs/config_docs.py").read_text()


def test_a_hand_edited_caption_sentence_never_reaches_the_report() -> None:
    """tables/claims.json, as rule claims_table writes it, gives its sentences to the captions; with a sentence
    edited by hand (its claims table untouched), one of another claims table, one of the older form without its
    sentences' sha256, or sentences that are not text, it is refused, saying which (maxmargin.report.run_sentences
    then reports it, the captions say their claims are not measured, and the next run writes it again)."""
    sentences = {"census_lmm": "34.5% of the trials reach an LMM", "vit_dataset": "Made from CIFAR-10"}
    written = json.loads(json.dumps(sentences_record("a" * 64, sentences)))  # as the file holds it
    assert checked_sentences(written, "a" * 64) == sentences
    edited = {**written, "sentences": {**sentences, "census_lmm": "99.9% of the trials reach an LMM"}}
    older = {key: value for key, value in written.items() if key != "sentences_sha256"}
    cases = [
        (edited, "a" * 64, "other than those rule claims_table wrote"),
        (older, "a" * 64, "other than those rule claims_table wrote"),
        (written, "b" * 64, "not of the claims table beside it"),
        ({**written, "sentences": {"census_lmm": 34.5}}, "a" * 64, "not text"),
        (["not", "a", "record"], "a" * 64, "no sentences"),
    ]
    for found, claims_sha256, problem in cases:
        with pytest.raises(ValueError, match=f"^it .*{problem}"):
            checked_sentences(found, claims_sha256)
