"""Every registry or config mistake names its place (the entry, its registry module, the block and key) before any
job runs: one test per kind of mistake (maxmargin/registry_checks.py, the schema's generic experiment block)."""

from __future__ import annotations

import copy
import dataclasses
import shutil
import subprocess

import jsonschema
import pytest
from conftest import DEFAULT_CONFIG, REPO, SNAKEMAKE

from maxmargin import registry
from maxmargin.config import check_config_beyond_schema, load_yaml
from maxmargin.registry import derived
from maxmargin.registry.types import Experiment
from maxmargin.registry_checks import (
    RegistryError,
    check_experiment,
    check_panel,
    check_registry,
    check_table,
)

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
# CONTRIBUTING.md's example: an experiment of its own block, run by gd_on_p
CIRCLE = Experiment(name="circle", data="fig1a", run="gd_on_p", block="circle")
CIRCLE_BLOCK = {"eta": 0.1, "n_iter": 300, "loss": "logistic", "starts": {"circle": {"n": 8, "radius": 3.0}}}


@pytest.fixture
def circle(monkeypatch) -> Experiment:
    """CONTRIBUTING.md's experiment, registered (its first step) unless the tree holds it already (its steps
    followed, as tests/test_contributing.py does)."""
    if CIRCLE not in registry.EXPERIMENTS:
        monkeypatch.setattr(registry, "EXPERIMENTS", (*registry.EXPERIMENTS, CIRCLE))
    return CIRCLE


def _config(**circle) -> dict:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["synthetic"]["circle"] = circle
    return config


def test_the_registry_passes_under_every_committed_config() -> None:
    from maxmargin.config import merged_config

    check_registry(DEFAULT_CONFIG)
    for path in sorted((REPO / "workflow/config").glob("*.yaml")):
        check_registry(merged_config([path], REPO / "workflow/config/default.yaml"))


def test_a_misspelt_key_of_a_new_block_names_the_block_and_the_key(circle) -> None:
    block = {**{k: v for k, v in CIRCLE_BLOCK.items() if k != "n_iter"}, "n_iters": 300}
    errors = list(jsonschema.Draft202012Validator(load_yaml(SCHEMA)).iter_errors(_config(**block)))
    assert any(list(e.absolute_path) == ["synthetic", "circle"] and "'n_iters'" in e.message for e in errors)
    with pytest.raises(RegistryError) as raised:
        check_experiment(CIRCLE, _config(**block))
    message = str(raised.value)
    assert "config block 'synthetic.circle'" in message and "n_iters" in message
    assert "experiment 'circle' (maxmargin/registry/synthetic.py)" in message and "gd_on_p" in message


def test_a_key_the_function_needs_and_the_block_lacks_is_named(circle) -> None:
    block = {k: v for k, v in CIRCLE_BLOCK.items() if k != "loss"}
    with pytest.raises(RegistryError, match=r"config block 'synthetic\.circle' .* lacks loss, which gd_on_p needs"):
        check_experiment(CIRCLE, _config(**block))
    check_experiment(CIRCLE, _config(**CIRCLE_BLOCK))  # the whole block passes


def test_the_generic_block_is_strict_in_the_schema() -> None:
    generic = load_yaml(SCHEMA)["$defs"]["experiment"]
    assert generic["additionalProperties"] is False and generic["required"] == ["n_iter"]
    validator = jsonschema.Draft202012Validator(load_yaml(SCHEMA))
    assert not list(validator.iter_errors(_config(**CIRCLE_BLOCK)))
    block = {k: v for k, v in CIRCLE_BLOCK.items() if k != "n_iter"}
    assert any("'n_iter' is a required property" in e.message for e in validator.iter_errors(_config(**block)))


def test_a_missing_block_says_what_to_add(circle) -> None:
    config = copy.deepcopy(DEFAULT_CONFIG)
    config["synthetic"].pop("circle", None)  # its second step not yet taken (a tree that followed it holds it)
    with pytest.raises(derived.MissingBlock, match="reads the config block 'synthetic.circle'"):
        check_experiment(CIRCLE, config)


def test_an_experiment_or_data_function_that_does_not_exist_is_named(circle) -> None:
    with pytest.raises(RegistryError, match=r"experiment 'circle' .*: run names 'gd_on_q', which .* does not define"):
        check_experiment(dataclasses.replace(CIRCLE, run="gd_on_q"), _config(**CIRCLE_BLOCK))
    with pytest.raises(RegistryError, match=r"data names 'fig1z', which maxmargin.experiments.instances does not"):
        check_experiment(dataclasses.replace(CIRCLE, data="fig1z"), _config(**CIRCLE_BLOCK))


def test_a_misspelt_caption_field_names_the_panel_its_module_and_the_field() -> None:
    entry = dataclasses.replace(registry.panel("fig9a"), caption="{N} trials per d.")
    with pytest.raises(derived.CaptionError) as raised:
        check_panel(entry, DEFAULT_CONFIG)
    message = str(raised.value)
    assert message.startswith("panel 'fig9a' (maxmargin/registry/census.py): its caption's field")
    assert "KeyError: 'N'" in message and "caption_blocks ['census']" in message
    table = dataclasses.replace(registry.table("census_summary"), caption="{census[etaa]}")
    with pytest.raises(derived.CaptionError, match=r"table 'census_summary' \(maxmargin/registry/census.py\)"):
        check_table(table, DEFAULT_CONFIG)
    with pytest.raises(RegistryError, match="caption_blocks names 'censuss'"):
        check_panel(dataclasses.replace(registry.panel("fig9a"), caption_blocks=("censuss",)), DEFAULT_CONFIG)


@pytest.mark.parametrize(
    ("field", "value"),
    [("tables", ("census_summry",)), ("files", ("vit_mapz",)), ("experiment", "fig1z"), ("family", "censsus")],
)
def test_a_name_that_is_not_registered_is_named(field, value) -> None:
    entry = dataclasses.replace(registry.panel("fig9a"), **{field: value})
    name = value if isinstance(value, str) else value[0]
    with pytest.raises(RegistryError, match=rf"panel 'fig9a' .*: {field} names '{name}', which is not registered"):
        check_panel(entry, DEFAULT_CONFIG)


def test_a_drawing_function_that_does_not_exist_is_named() -> None:
    entry = dataclasses.replace(registry.panel("fig10"), draw="fig11")
    with pytest.raises(ValueError, match=r"panel 'fig10' \(maxmargin/registry/census.py\) is drawn by 'fig11'"):
        check_panel(entry, DEFAULT_CONFIG)


def test_an_option_the_config_lacks_or_the_function_does_not_take_is_named() -> None:
    fig7 = registry.panel("fig7")
    with pytest.raises(RegistryError, match=r"panel 'fig7' .*: its options name vit.plots.settings_footr"):
        check_panel(dataclasses.replace(fig7, options=("vit.plots.settings_footr",)), DEFAULT_CONFIG)
    with pytest.raises(RegistryError, match=r"panel 'fig7' .*: its options give \['settings_footer'\] to draw_figure7"):
        check_panel(dataclasses.replace(fig7, options=("vit.plots.settings_footer",)), DEFAULT_CONFIG)
    with pytest.raises(RegistryError, match=r"panel 'fig4a' .*: its options name plots.fig4_iteration"):
        check_panel(dataclasses.replace(registry.panel("fig4a"), options=("plots.fig4_iteration",)), DEFAULT_CONFIG)


def test_a_table_whose_paths_or_rows_the_config_cannot_give_is_named() -> None:
    trials = registry.table("census_trials")
    with pytest.raises(RegistryError, match=r"table 'census_trials' .*: its wildcard d takes its values from"):
        check_table(dataclasses.replace(trials, values={"d": "census.dimz"}), DEFAULT_CONFIG)
    with pytest.raises(RegistryError, match=r"table 'census_trials' .*: its rows \('census.n_trialz',\) cannot"):
        check_table(dataclasses.replace(trials, rows=("census.n_trialz",)), DEFAULT_CONFIG)
    with pytest.raises(RegistryError, match=r"table 'census_trials' .*: family 'censsus' is not registered"):
        check_table(dataclasses.replace(trials, family="censsus"), DEFAULT_CONFIG)


def test_a_mistake_names_the_module_that_declares_the_entry() -> None:
    """A family declared over several modules: a table of the ViT's W-ATT-SVM probe is named in its own module."""
    table = dataclasses.replace(registry.table("vit_w_svm"), caption="{w_svm[imagez]}")
    with pytest.raises(derived.CaptionError, match=r"table 'vit_w_svm' \(maxmargin/registry/vit_w_svm.py\)"):
        check_table(table, DEFAULT_CONFIG)


def test_a_name_declared_twice_is_named(monkeypatch) -> None:
    monkeypatch.setattr(registry, "PANELS", (*registry.PANELS, registry.panel("fig10")))
    with pytest.raises(RegistryError, match=r"panel 'fig10' is declared twice \(maxmargin/registry/census.py"):
        check_registry(DEFAULT_CONFIG)


def test_the_snakefile_runs_the_checks_before_any_job(workflow_dir) -> None:
    """A caption field misspelt in a copy of the registry (imported beside the Snakefile): the dry run stops naming
    the panel, its registry module and the field, not with a bare KeyError from a rule file."""
    shutil.copytree(REPO / "maxmargin", workflow_dir / "maxmargin", ignore=shutil.ignore_patterns("__pycache__"))
    census = workflow_dir / "maxmargin/registry/census.py"
    text = census.read_text()
    assert "{n_trials}" in text
    census.write_text(text.replace("{n_trials}", "{n_trails}", 1))
    command = [str(SNAKEMAKE), "-n", "--cores", "1", "--", "fig3"]
    proc = subprocess.run(command, cwd=workflow_dir, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "(maxmargin/registry/census.py): its caption's field cannot be filled (KeyError: 'n_trails')" in output
    assert "common.smk" not in output


def test_check_config_beyond_schema_runs_the_registry_checks(monkeypatch) -> None:
    wrong = dataclasses.replace(registry.panel("fig9b"), caption="{N}")
    monkeypatch.setattr(registry, "PANELS", tuple(wrong if p.name == "fig9b" else p for p in registry.PANELS))
    with pytest.raises(derived.CaptionError, match="panel 'fig9b'"):
        check_config_beyond_schema(copy.deepcopy(DEFAULT_CONFIG), SCHEMA)
