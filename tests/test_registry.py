"""The figure registry against the library, the claims and the rules: every name resolves, nothing is unregistered."""

from __future__ import annotations

import dataclasses
import inspect
import re

import yaml
from conftest import DEFAULT_CONFIG, REPO, snakemake
from matplotlib.figure import Figure

from maxmargin import claims, pipeline, registry
from maxmargin.experiments import synthetic
from maxmargin.figures import basin, census, regpath, vit
from maxmargin.figures import synthetic as synthetic_figures
from maxmargin.registry import derived


def _public(module, returns) -> set[str]:
    """The public functions a module defines that return ``returns`` (a package: those its modules define and it
    names)."""
    return {
        name
        for name, fn in inspect.getmembers(module, inspect.isfunction)
        if (fn.__module__ == module.__name__ or fn.__module__.startswith(module.__name__ + "."))
        and not name.startswith("_")
        and fn.__annotations__.get("return") in (returns, returns.__name__)
    }


def test_every_registry_entry_resolves():
    for entry in registry.EXPERIMENTS:
        assert callable(pipeline.data_function(entry.name)), entry
        parameters = inspect.signature(pipeline.experiment_function(entry.name)).parameters
        assert set(derived.experiment_settings(entry.name, DEFAULT_CONFIG)) <= set(parameters)
    for panel in registry.PANELS:
        assert pipeline.drawing_function(panel.name).__name__ == panel.draw
        assert all(registry.table(t) for t in panel.tables)
    for panel in registry.panels_of("synthetic"):
        registry.experiment(panel.experiment)  # raises if unregistered
        assert panel.title
    for entries in (registry.PANELS, registry.EXPERIMENTS, registry.TABLES, registry.FILES, registry.FAMILIES):
        assert len({e.name for e in entries}) == len(entries)
    for t in registry.TABLES:
        assert registry.family(t.family)


def test_every_panel_and_table_of_the_report_has_its_own_caption():
    """Every caption lives in the registry, filled from the config; none is shared, none is a template's default."""
    entries = [*registry.PANELS, *(t for t in registry.TABLES if t.label)]
    captions = [derived.caption(entry, DEFAULT_CONFIG) for entry in entries]
    assert all(len(text) > 80 for text in captions), [
        e.name for e, c in zip(entries, captions, strict=True) if len(c) <= 80
    ]
    assert len(set(captions)) == len(captions)
    assert "bins of width 0.005" in derived.caption(registry.panel("fig9b"), DEFAULT_CONFIG)  # census.histogram
    # the landing page only: no template branches on panel names
    assert {p.name for p in (REPO / "workflow" / "report").glob("*.rst")} == {"workflow.rst"}


def test_no_caption_prints_a_bare_boolean_of_the_config():
    """A boolean setting filled into a caption reads as a word of the sentence ("the bias row True"): a caption says
    what the setting is and then its value, never True or False in place of a word."""
    entries = [*registry.PANELS, *(t for t in registry.TABLES if t.label)]
    for config in (DEFAULT_CONFIG, {**DEFAULT_CONFIG, "vit": {**DEFAULT_CONFIG["vit"], "w_svm": {
            **DEFAULT_CONFIG["vit"]["w_svm"], "query_bias": False}}}):  # fmt: skip
        for entry in entries:
            for match in re.finditer(r"\b(True|False)\b", text := derived.caption(entry, config)):
                assert re.search(r"(true|false), here $", text[: match.start()]), (entry.name, text)


def test_every_column_is_described_once_and_its_tables_caption_lists_it():
    """What a column measures is its ``description``, declared once: every table's report caption ends with the list
    of its columns made from them, and its own text names none of them; change a description and the
    caption changes with it."""
    for table in registry.TABLES:
        text = derived.caption(table, DEFAULT_CONFIG)
        for column in table.columns:
            assert column.description.strip(), f"{table.name}.{column.name} has no description"
            assert f"- ``{column.name}``: {column.description}\n" in text, (table.name, column.name)
            assert f"``{column.name}``" not in table.caption, f"{table.name}'s caption describes {column.name} itself"
    entry = registry.table("census_trials")
    first, *rest = entry.columns
    changed = dataclasses.replace(entry, columns=(dataclasses.replace(first, description="a new meaning"), *rest))
    text = derived.caption(changed, DEFAULT_CONFIG)
    assert text != derived.caption(entry, DEFAULT_CONFIG)
    assert "- ``d``: a new meaning\n" in text and first.description not in text


def test_each_table_is_declared_once_and_its_producer_writes_those_columns():
    from maxmargin.claims.base import COLUMNS
    from maxmargin.experiments import census, lemma1, synthetic
    from maxmargin.experiments.regpath import REGPATH_COLUMNS
    from maxmargin.tables import find_contract

    assert census.TRIAL_COLUMNS == registry.columns("census_run") == registry.columns("census_trials")
    assert synthetic.DIRECTION_COLUMNS == registry.columns("directions")
    # the three kinds of a synthetic experiment's tables, named once: the rule's outputs, the fields, the arguments
    kinds = [f.name for f in dataclasses.fields(synthetic.ExperimentTables)]
    assert kinds == list(registry.synthetic.EXPERIMENT_TABLES)
    assert REGPATH_COLUMNS == registry.columns("regpath") and lemma1.LEMMA1_COLUMNS == registry.columns("lemma1")
    assert COLUMNS == registry.columns("claims")
    for table in registry.TABLES:  # every table's path finds its own contract, under its one name
        path = "results/" + table.pattern.format(**{k: "x" for k in table.values})
        assert find_contract(path)[0].name == table.name, path


def test_nothing_is_left_unregistered():
    experiments = _public(synthetic, synthetic.ExperimentTables)
    assert experiments == {e.run for e in registry.EXPERIMENTS}
    modules = {"synthetic": synthetic_figures, "census": census, "regpath": regpath, "vit": vit, "basin": basin}
    assert set(modules) == set(pipeline.FIGURE_MODULES)
    for family, module in modules.items():
        assert _public(module, Figure) == {p.draw for p in registry.panels_of(family)}, family
    used_blocks = {e.block for e in registry.EXPERIMENTS} | {"data"}
    assert set(DEFAULT_CONFIG["synthetic"]) == used_blocks
    assert set(DEFAULT_CONFIG["synthetic"]["data"]) <= {e.data for e in registry.EXPERIMENTS}
    gallery = set(registry.GALLERY)
    assert {path.stem for path in (REPO / "docs" / "gallery").glob("*.png")} == gallery
    readme = (REPO / "README.md").read_text()
    assert set(re.findall(r"docs/gallery/(\w+)\.png", readme)) == gallery  # the README shows every thumbnail


def test_claims_read_registered_tables():
    """Every claim reads at least one registered table, and every claim a table names exists."""
    assert set(derived.claim_tables()) == {c.claim_id for c in claims.CLAIMS}
    assert [c.claim_id for c in claims.CLAIMS][:3] == ["gd_gmm_n1", "gd_corr_increases", "gd_local_or_global"]


def test_report_categories_are_derived():
    assert derived.category("synthetic") == "2 Synthetic (Figures 1-5, 8)"
    assert derived.category("census") == "3 Census (Figures 9-10)"
    assert derived.category("vit") == "5 ViT (Figures 6-7)"
    assert derived.category("regpath") == "4 Regularization paths and Lemma 1"
    assert derived.category("basin") == "6 Beyond the paper"


def test_a_label_groups_a_panel_under_the_papers_figure_only_for_that_figures_target(monkeypatch):
    """ "Figure 1(a)" and "Figure 1(b)" of target fig1 form "Figure 1"; a panel beyond the paper whose label starts
    "Figure 1" (target `circle`) is a group of its own and adds no figure number to its category."""
    assert {p.figure_label for p in registry.panels_of("synthetic") if p.target == "fig1"} == {"Figure 1"}
    beyond = registry.Panel(
        name="circle",
        target="circle",
        family="synthetic",
        label="Figure 1(a) data, starts on a circle",
        draw="key_plane_gd",
    )
    assert beyond.paper_figure is None and beyond.figure_label == "Figure 1(a) data, starts on a circle"
    assert (
        registry.Panel(name="x", target="x", family="synthetic", label="Figure 11", draw="f").figure_label
        == "Figure 11"
    )
    assert dataclasses.replace(beyond, subcategory="Starts").figure_label == "Starts"
    monkeypatch.setattr(registry, "PANELS", (*registry.PANELS, dataclasses.replace(beyond, label="Figure 12")))
    assert derived.category("synthetic") == "2 Synthetic (Figures 1-5, 8)"


def test_starts_are_data_of_the_experiments_block():
    """Figure 1(c) starts on a circle because its block says so, not because a list names it."""
    assert derived.experiment_settings("fig1c", DEFAULT_CONFIG)["starts"] == {"circle": {"n": 6, "radius": 2.0}}
    assert derived.experiment_settings("fig1a", DEFAULT_CONFIG)["starts"][0] == [0.0, 1.0]
    assert {e.run for e in registry.EXPERIMENTS if e.block in ("fig1", "fig1c", "fig8")} == {"gd_on_p"}


def test_rules_are_derived_from_the_registry(workflow_dir):
    rules = set(snakemake(workflow_dir, "--list-rules").stdout.split())
    assert set(derived.targets()) <= rules
    dry_run = snakemake(workflow_dir, "-n", "gallery").stdout  # fails if a gallery panel has no rule making it
    for panel in registry.PANELS:
        assert (f"docs/gallery/{panel.name}.png" in dry_run) == (panel.name in registry.GALLERY)


def test_the_schema_names_what_the_registry_names():
    """Config keys that list registered names allow exactly those (the schema is static YAML: checked here)."""
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())["properties"]
    assert schema["regpath"]["properties"]["instances"]["items"]["enum"] == list(registry.REGPATH_INSTANCES)
    assert set(regpath.TITLES) == set(registry.REGPATH_INSTANCES)
