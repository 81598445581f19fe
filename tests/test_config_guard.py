"""Bad numbers in the config stop the run, naming the key; a diverged run is never labelled."""

from __future__ import annotations

import copy
import math
import re
import shutil
import subprocess

import numpy as np
import pytest
import yaml
from conftest import CI_CONFIG, DEFAULT_CONFIG, REPO, SNAKEMAKE, snakemake

from maxmargin import registry
from maxmargin.config import (
    check_config,
    check_config_beyond_schema,
    check_cross_keys,
    check_data_indices,
    deep_merge,
    merged_config,
)
from maxmargin.config_yaml import follow_yaml_merges, yaml_merges
from maxmargin.pipeline import run_experiment
from maxmargin.registry import derived

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
DEFAULT = REPO / "workflow/config/default.yaml"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1.0e300])
def test_check_config_names_the_key_of_a_bad_number(bad):
    config = {"synthetic": {"fig1": {"eta": 0.1}, "fig3": {"starts": [[0.5, 0.0], [0.0, bad]]}}}
    with pytest.raises(ValueError, match=r"synthetic\.fig3\.starts\[1\]\[1\]"):
        check_config(config)
    check_config({"synthetic": {"fig1": {"eta": 0.1, "loss": "logistic", "flag": True}}})  # finite: passes


def test_diverged_gd_is_an_error_not_a_direction():
    """A GD run that ended at a non-finite iterate is an error naming the figure and the start, never a labelled
    direction (argmax of NaN is 0); a NaN step size never gets that far: the core refuses it, naming it."""
    from maxmargin.experiments.synthetic import _run_row

    final = np.array([np.nan, 1.0])
    with pytest.raises(FloatingPointError, match="fig8, start 1: gradient descent ended at a non-finite"):
        _run_row("fig8", "start 1", "gmm", np.array([0, 1]), np.array([-1.0, 1.5]), final, np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="eta holds 1 NaN or infinite value"):
        run_experiment("fig8", dict(eta=math.nan, n_iter=5, starts=[[-1.0, 1.5], [1.0, -1.7]], loss="logistic"), {})


@pytest.mark.parametrize("value", [".nan", ".inf", "1.0e+300"])
def test_a_nan_step_size_stops_the_workflow_before_any_job(workflow_dir, value):
    (workflow_dir / "bad.yaml").write_text(f"synthetic:\n  fig1:\n    eta: {value}\n")
    proc = snakemake(workflow_dir, "-n", "--configfile", "bad.yaml", "--", "fig1", check=False)
    assert proc.returncode != 0
    assert "config key 'synthetic.fig1.eta'" in proc.stdout + proc.stderr


def test_the_run_names_the_config_file_of_a_refused_value(workflow_dir) -> None:
    """The Snakefile's schema check over two --configfile files: the error names the key and the second file."""
    (workflow_dir / "a.yaml").write_text("synthetic:\n  fig1:\n    eta: 0.2\n")
    (workflow_dir / "b.yaml").write_text("synthetic:\n  fig1:\n    eta: -1.0\n")
    proc = snakemake(workflow_dir, "-n", "--configfile", "a.yaml", "b.yaml", "--", "fig1", check=False)
    assert proc.returncode != 0
    assert re.search(r"config key 'synthetic\.fig1\.eta' \(from \S*b\.yaml\): -1\.0 is less", proc.stdout + proc.stderr)


def test_a_schema_error_names_the_key_and_the_config_file_that_holds_it(tmp_path) -> None:
    """Over layered --configfile files (default.yaml, then a.yaml, then b.yaml, then --config), a value the schema
    refuses is named with its key and the file the run took it from: the last that sets it."""
    from snakemake.exceptions import WorkflowError

    from maxmargin.config import config_source, validate_config

    (tmp_path / "a.yaml").write_text("census:\n  n_trials: -3\nsynthetic:\n  fig1:\n    eta: 0.2\n")
    (tmp_path / "b.yaml").write_text("synthetic:\n  fig1:\n    eta: -1.0\n")
    (tmp_path / "c.yaml").write_text("synthetic:\n  fig1:\n    typo: 1\n")
    a, b, c = (str(tmp_path / f"{name}.yaml") for name in "abc")
    assert config_source(["synthetic", "fig1", "eta"], DEFAULT, [a, b]) == b  # the last file wins
    assert config_source(["census", "n_trials"], DEFAULT, [a, b]) == a
    assert config_source(["census", "n_trials"], DEFAULT, [a, b], {"census": {"n_trials": 5}}) == "--config"
    assert config_source(["synthetic", "fig3", "starts", 0], DEFAULT, [a, b]) == str(DEFAULT)
    assert config_source(["synthetic", "fig3", "starts", 9], DEFAULT, [a, b]) == "no config file"
    many = {"census": {"n_trials": "many"}}
    for files, overrides, key, source, what in [
        ([a], None, "census.n_trials", a, "-3 is less than the minimum of 1"),
        ([a, b], {"census": {"n_trials": 5}}, "synthetic.fig1.eta", b, "-1.0 is less than or equal to the minimum"),
        ([c], None, "synthetic.fig1.typo", c, r"Additional properties are not allowed \('typo' was unexpected\)"),
        ([], many, "census.n_trials", "--config", "'many' is not of type 'integer'"),
    ]:
        with pytest.raises(WorkflowError, match=rf"^config key '{key}' \(from {source}\): {what}"):
            validate_config(merged_config(files, DEFAULT, overrides), SCHEMA, DEFAULT, files, overrides)
    validate_config(merged_config([], DEFAULT), SCHEMA, DEFAULT)  # the default config passes


def test_a_registered_experiment_without_its_block_says_which_block_to_add() -> None:
    block = registry.EXPERIMENTS[-1].block
    config = copy.deepcopy(DEFAULT_CONFIG)
    del config["synthetic"][block]
    with pytest.raises(derived.MissingBlock) as raised:
        check_config_beyond_schema(config, SCHEMA)
    message = str(raised.value)
    assert f"reads the config block 'synthetic.{block}', which this config lacks" in message
    assert f"add `{block}:` at the end of the `synthetic:` section of workflow/config/default.yaml" in message


def test_a_new_experiment_without_its_block_stops_the_run_with_what_to_add(workflow_dir) -> None:
    """CONTRIBUTING.md's first step alone (the registry's entry, not yet the config's block): the run stops at once,
    naming the block, not with a KeyError inside a rule file. The experiment is CONTRIBUTING.md's under a name of its
    own (a tree that followed the page holds `circle` and its block already)."""
    shutil.copytree(REPO / "maxmargin", workflow_dir / "maxmargin", ignore=shutil.ignore_patterns("__pycache__"))
    assert all(e.name != "spiral" and e.block != "spiral" for e in registry.EXPERIMENTS)
    with (workflow_dir / "maxmargin/registry/synthetic.py").open("a") as module:  # imported beside the Snakefile
        module.write(
            '\nEXPERIMENTS = (*EXPERIMENTS, Experiment(name="spiral", data="fig1a", run="gd_on_p", block="spiral"))\n'
        )
    command = [str(SNAKEMAKE), "-n", "--cores", "1", "--", "fig1"]
    proc = subprocess.run(command, cwd=workflow_dir, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "reads the config block 'synthetic.spiral', which this config lacks: add `spiral:`" in output, output[-3000:]
    assert "KeyError" not in output and "common.smk" not in output


def test_a_block_built_by_yaml_merge_follows_the_config_it_runs_under(tmp_path) -> None:
    assert yaml_merges(DEFAULT) == {("synthetic", "fig1c"): ([("synthetic", "fig1")], {"starts"})}
    ci = yaml.safe_load((REPO / CI_CONFIG).read_text())
    config = deep_merge(DEFAULT_CONFIG, ci)
    assert config["synthetic"]["fig1c"]["n_iter"] == DEFAULT_CONFIG["synthetic"]["fig1"]["n_iter"]  # YAML's merge
    follow_yaml_merges(config, DEFAULT, [DEFAULT, REPO / CI_CONFIG])
    fig1c = config["synthetic"]["fig1c"]
    own_starts = DEFAULT_CONFIG["synthetic"]["fig1c"]["starts"]  # the key fig1c sets itself
    assert fig1c == {**DEFAULT_CONFIG["synthetic"]["fig1"], **ci["synthetic"]["fig1"], "starts": own_starts}
    assert fig1c["n_iter"] == ci["synthetic"]["fig1"]["n_iter"] < DEFAULT_CONFIG["synthetic"]["fig1"]["n_iter"]
    assert list(fig1c) == list(DEFAULT_CONFIG["synthetic"]["fig1c"])  # the same order: the same params
    own = tmp_path / "own.yaml"  # a key the block is given in a config file stays the block's own
    own.write_text("synthetic:\n  fig1:\n    n_iter: 7\n    eta: 0.5\n  fig1c:\n    n_iter: 9\n")
    given = {"synthetic": {"fig1c": {"loss": "exponential"}}}  # --config
    config = deep_merge(deep_merge(DEFAULT_CONFIG, yaml.safe_load(own.read_text())), given)
    follow_yaml_merges(config, DEFAULT, [DEFAULT, own], given)
    assert {k: config["synthetic"]["fig1c"][k] for k in ("n_iter", "eta", "loss")} == {
        "n_iter": 9,
        "eta": 0.5,
        "loss": "exponential",
    }
    default = copy.deepcopy(DEFAULT_CONFIG)
    follow_yaml_merges(default, DEFAULT, [DEFAULT])
    assert default == DEFAULT_CONFIG  # under default.yaml alone nothing changes
    assert merged_config([DEFAULT, own], DEFAULT, given) == config  # the config a run with those files reads


def test_deep_merge_merges_mappings_and_replaces_everything_else() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": None, "e": 1}
    over = {"a": {"c": [3], "f": {"g": 2}}, "d": {"h": 3}, "e": {"i": 4}}
    merged = deep_merge(base, over)
    assert merged == {"a": {"b": 1, "c": [3], "f": {"g": 2}}, "d": {"h": 3}, "e": {"i": 4}}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": None, "e": 1}  # neither argument changes
    merged["a"]["f"]["g"], merged["a"]["c"][0] = 0, 0  # nor shares a container with the result
    assert over == {"a": {"c": [3], "f": {"g": 2}}, "d": {"h": 3}, "e": {"i": 4}}


def test_a_limit_set_by_a_stand_in_names_both_fixes() -> None:
    """More probe images than the digits stand-in's 360 test images, with CIFAR-10 configured: lower the count, or
    drop digits from the fallback (the configured data set has 10,000); with digits configured, only the first."""
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["vit"]["data"] |= {"dataset": "cifar10", "fallback": ["fashion_mnist", "digits"], "n_test": 0}
    config["vit"]["probe"]["n_images"] = 500
    with pytest.raises(ValueError, match=r"lower it to at most 360, or drop digits from vit.data.fallback$"):
        check_data_indices(config)
    config["vit"]["probe"] |= {"n_images": 16, "image_index": 400}
    with pytest.raises(ValueError, match=r"pick an index below 360, or drop digits from vit.data.fallback$"):
        check_data_indices(config)
    config["vit"]["data"] |= {"dataset": "digits", "fallback": []}
    with pytest.raises(ValueError, match=r"pick an index below 360$"):
        check_data_indices(config)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"probe": {"n_images": 500}}, r"'vit.probe.n_images' is 500, more than the 128 test images of the vit run"),
        ({"w_svm": {"images": 64}}, r"'vit.w_svm.images' is 64, more than the 'vit.probe.n_images' = 32"),
        ({"w_svm": {"nuclear_images": 40}}, r"'vit.w_svm.nuclear_images' is 40, more than 'vit.w_svm.images' = 32"),
        ({"plots": {"fig6_epochs": [0, 1, 2]}, "train": {"eval_every": 2}}, r"epochs without a metrics row \(\[1\]\)"),
    ],
)
def test_a_probe_that_asks_for_more_images_or_epochs_than_the_run_has_is_refused(change, message) -> None:
    """The probes measure what their captions say: a config asking for more probe images than the run's test images,
    more W-ATT-SVM images than probe images, or Figure 6 maps of epochs without a row is refused, naming the key."""
    config = deep_merge(copy.deepcopy(DEFAULT_CONFIG), yaml.safe_load((REPO / CI_CONFIG).read_text()))
    config = deep_merge(config, {"vit": change})
    with pytest.raises(ValueError, match=message):
        check_data_indices(config)
        check_cross_keys(config)
