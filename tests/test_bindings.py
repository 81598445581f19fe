"""A table is only ever used with the config that made it, every figure target restores what it promises,
every job checks its inputs before it writes anything and blames the input at fault, and the small holes are closed
(sidecars, temporary files, YAML merge keys, memory, the probe image, a corrupt archive)."""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG, REPO, snakemake

from maxmargin.config import check_config_beyond_schema, check_memory, load_yaml
from maxmargin.experiments.census import CensusSettings, run_trials
from maxmargin.logs import rule_logging
from maxmargin.provenance import RUN_ARGS_ENV, TableIntegrityError, provenance_path
from maxmargin.registry import derived
from maxmargin.tables import TableContractError, check_table, read_table, write_csv

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
N = 12


def census_config(**census: object) -> dict:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["census"].update({"dims": [2, 5, 10], "n_trials": N, "n_iter": 40, **census})
    config["census"]["histogram"]["dims"] = [5, 10]
    return config


def job(tmp_path: Path, rule: str, config: dict, outputs: list[Path], **wildcards: str) -> SimpleNamespace:
    return SimpleNamespace(
        input=[], output=[str(o) for o in outputs], log=[str(tmp_path / f"{rule}.log")], rule=rule,
        wildcards=wildcards, params={}, config=config,
    )  # fmt: skip


def write_run(tmp_path: Path, config: dict, d: int, path: Path | None = None) -> Path:
    """runs/census/d{d}.csv as rule census_trials writes it under ``config``."""
    path = path or tmp_path / f"results/runs/census/d{d}.csv"
    with rule_logging(job(tmp_path, "census_trials", config, [path], d=str(d))):
        write_csv(run_trials(CensusSettings.from_config(config["census"]), d), path)
    return path


def read_as_gather(tmp_path: Path, config: dict, path: Path) -> pd.DataFrame:
    with rule_logging(job(tmp_path, "census_gather", config, [tmp_path / "results/tables/census_trials.csv"])):
        return read_table(path)


def test_a_table_of_another_configuration_is_refused_naming_the_setting(tmp_path: Path) -> None:
    # The case: runs/census/d10.csv made with n_iter 20 read by a run whose config says 40.
    path = write_run(tmp_path, census_config(n_iter=20), 10)
    os.environ[RUN_ARGS_ENV] = "--configfile my.yaml"
    try:
        with pytest.raises(TableIntegrityError) as err:
            read_as_gather(tmp_path, census_config(), path)
    finally:
        del os.environ[RUN_ARGS_ENV]
    message = str(err.value)
    assert f"{path} was made with another configuration: census.n_iter is 20 in its record, 40 in this" in message
    assert f"snakemake --cores all --configfile my.yaml --force -- {path} (rule census_trials)" in message
    assert len(read_as_gather(tmp_path, census_config(n_iter=20), path)) == N  # its own config reads it


def test_the_settings_of_every_rule_upstream_travel_with_the_table(tmp_path: Path) -> None:
    # census_summary's own rule reads only census.confidence and census.dims; the runs it was made from read n_iter:
    # a forced gather from stale runs cannot launder them (its sidecar records what its inputs were made from).
    config = census_config()
    runs = [write_run(tmp_path, config, d) for d in (2, 5, 10)]
    summary = tmp_path / "results/tables/census_summary.csv"
    gather = job(tmp_path, "census_gather", config, [summary])
    gather.input = [str(r) for r in runs]
    with rule_logging(gather):
        write_csv(pd.DataFrame({"x": [1.0]}), tmp_path / "results/tables/other.csv")
    reads = json.loads(provenance_path(tmp_path / "results/tables/other.csv").read_text())["reads"]
    assert reads["census.n_iter"] == 40 and reads["census.confidence"] == 0.95  # an input's key, and its own


def test_a_table_copied_over_another_blames_that_input(tmp_path: Path) -> None:
    # The case: d5.csv and its sidecar copied over d10.csv. The wildcard the sidecar records and the d
    # column both say 5: the reader names d10.csv, before it writes anything.
    config = census_config()
    d5, d10 = write_run(tmp_path, config, 5), tmp_path / "results/runs/census/d10.csv"
    d10.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(d5, d10)
    shutil.copy(provenance_path(d5), provenance_path(d10))
    histogram = tmp_path / "results/tables/fig9b.csv"
    reader = job(tmp_path, "census_histogram", config, [histogram])
    reader.input = [str(d5), str(d10)]
    with pytest.raises(TableIntegrityError, match="d10.csv was written for d = 5, but its path says d = 10"):
        with rule_logging(reader):
            pytest.fail("the job's body ran: its inputs were not checked first")
    assert not histogram.exists()
    record = json.loads(provenance_path(d10).read_text())
    record["wildcards"] = {"d": "10"}  # a forged record: the d column still restates 5
    provenance_path(d10).write_text(json.dumps(record))
    with pytest.raises(TableContractError, match=r"column d holds \['5'\], but \{d\} says \['10'\]"):
        read_as_gather(tmp_path, config, d10)


def test_a_column_empty_in_every_row_is_legitimate() -> None:
    # census_grid at n = 16, T = 6, d = 2: no trial saturates, so no SVM was solved and `solver` is empty.
    frame = run_trials(CensusSettings.from_config({**census_config()["census"], "n": 16, "n_iter": 5}), 2)
    read_back = pd.read_csv(io.StringIO(frame.to_csv(index=False)))
    assert read_back["solver"].isna().all() and read_back["solver"].dtype == float  # as the contract sees it
    check_table(read_back, "results/runs/census_grid/n16_T6_d2.csv", None)


def test_a_truncated_sidecar_names_the_file_and_the_rebuild(tmp_path: Path) -> None:
    path = write_run(tmp_path, census_config(), 5)
    sidecar = provenance_path(path)
    sidecar.write_text(sidecar.read_text()[:40])
    with pytest.raises(TableIntegrityError, match=r"provenance record .*d5.csv.provenance.json is unreadable") as err:
        read_as_gather(tmp_path, census_config(), path)
    assert "rebuild it: snakemake --cores all --force -- " in str(err.value)


def test_a_killed_writes_temporary_file_is_removed_by_the_next_attempt(tmp_path: Path) -> None:
    path = tmp_path / "results/tables/basin.csv"
    path.parent.mkdir(parents=True)
    left = path.parent / ".tmp-basin.csv.k2j4x.csv"  # what kill -9 during write_csv leaves
    left.write_text("half a table")
    other = path.parent / ".tmp-basin_cone.csv.a1b2c.csv"  # another output's write: not this job's to touch
    other.write_text("x")
    with rule_logging(job(tmp_path, "basin_tables", DEFAULT_CONFIG, [path])):
        pass
    assert not left.exists() and other.exists()


def test_every_table_a_rule_writes_has_its_sidecar_as_a_declared_output(workflow_dir: Path) -> None:
    # So a deleted sidecar reruns its job, and a failing job's sidecars go with its tables (Snakemake deletes a
    # failed job's declared outputs).
    planned = snakemake(workflow_dir, "-n", "--forceall", "--", "all", "census_grid", "vit_recipes").stdout
    outputs = [o for line in planned.splitlines() if line.startswith("    output: ") for o in line[12:].split(", ")]
    tables = [o for o in outputs if o.endswith(".csv") and not o.endswith("runs/vit/vit_metrics.csv")]
    assert tables and all(f"{t}.provenance.json" in outputs for t in tables)


def test_yaml_merge_keys_are_accepted_and_duplicates_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "merge.yaml"
    path.write_text("base: &b\n  eta: 0.1\n  n_iter: 5\nother:\n  <<: *b\n  n_iter: 7\n")
    assert load_yaml(path) == {"base": {"eta": 0.1, "n_iter": 5}, "other": {"eta": 0.1, "n_iter": 7}}
    path.write_text("other:\n  <<: {eta: 0.1}\n  n_iter: 7\n  n_iter: 8\n")
    with pytest.raises(ValueError, match="key 'n_iter' is given twice"):
        load_yaml(path)
    assert load_yaml(REPO / "workflow/config/default.yaml") == DEFAULT_CONFIG  # it uses one (synthetic.fig1c)


def test_a_basin_grid_too_large_for_memory_is_refused_before_any_job() -> None:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["basin"]["grid"]["p1"]["num"] = config["basin"]["grid"]["p2"]["num"] = 100_000
    with pytest.raises(ValueError, match=r"'basin.grid.p1.num' x 'basin.grid.p2.num' = 10,000,000,000 starts"):
        check_memory(config, available=24 * 2**30)
    check_memory(DEFAULT_CONFIG, available=24 * 2**30)  # the default grid fits a CI machine


def test_the_recipe_studys_probe_image_is_named_by_its_own_key() -> None:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["vit"]["probe"]["image_index"] = 250  # inside the run's test set, outside the study's 200
    with pytest.raises(
        ValueError, match=r"'vit_recipes.probe.image_index \(unset: it takes vit.probe.image_index\)' is 250"
    ):
        check_config_beyond_schema(config, SCHEMA)
    config["vit_recipes"]["probe"]["image_index"] = 3
    check_config_beyond_schema(config, SCHEMA)


FIG9 = {"census": {"dims": [2, 5], "n_trials": 20, "n_iter": 50, "histogram": {"dims": [5]}}}


def planned_outputs(dry_run: str) -> set[str]:
    """The output files of the jobs a dry run plans (its ``output: a, b`` lines)."""
    lines = [line.strip() for line in dry_run.splitlines() if line.strip().startswith("output: ")]
    return {name for line in lines for name in line.removeprefix("output: ").split(", ")}


@pytest.mark.slow
def test_a_figure_target_restores_every_file_it_promises(workflow_dir: Path) -> None:
    snakemake(workflow_dir, "fig9", config=FIG9)
    promised = [f for f in derived.targets()["fig9"][1]]
    assert {"census_summary", "census_trials", "fig9b"} <= set(promised)  # the tables docs/figures.md lists
    files = [p for p in (workflow_dir / "results").rglob("*") if p.is_file() and "/logs/" not in str(p)]
    files = [p for p in files if "/benchmarks/" not in str(p) and "/runs/" not in str(p)]
    assert len(files) >= 10
    for path in files:  # each file missing alone: fig9 plans the job that writes it (a dry run)
        aside = path.with_name(path.name + ".aside")
        path.rename(aside)
        planned = planned_outputs(snakemake(workflow_dir, "-n", "fig9", config=FIG9).stdout)
        aside.rename(path)  # a rename keeps the time stamp: the run stays complete
        assert str(path.relative_to(workflow_dir)) in planned, f"fig9 would not rebuild {path}"
    for path in files:  # and rebuilds them all
        path.unlink()
    snakemake(workflow_dir, "fig9", config=FIG9)
    assert all(path.exists() for path in files), [str(p) for p in files if not p.exists()]


@pytest.mark.slow
def test_a_config_change_behind_mtime_triggers_is_refused(workflow_dir: Path) -> None:
    # With --rerun-triggers mtime, a changed census.n_iter reruns nothing, and a forced gather
    # would rebuild the summary from the old runs: the gather refuses, naming the run and the setting.
    snakemake(workflow_dir, "fig9", config=FIG9)
    changed = copy.deepcopy(FIG9)
    changed["census"]["n_iter"] = 20
    proc = snakemake(
        workflow_dir, "--rerun-triggers", "mtime", "--forcerun", "census_gather", "--", "fig9", config=changed,
        check=False,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "census.n_iter is 50 in its record, 20 in this run's config" in out
    assert "results/runs/census/d2.csv was made with another configuration" in out
    # Rebuilt as the message says, with the new config, it runs.
    snakemake(workflow_dir, "--forcerun", "census_trials", "--", "fig9", config=changed)
    assert set(pd.read_csv(workflow_dir / "results/tables/census_trials.csv")["n_iter"]) == {20}
