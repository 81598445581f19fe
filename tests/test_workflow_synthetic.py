"""The figure registry against the library and the rules; the synthetic targets end to end through the real DAG."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG, REPO, snakemake
from matplotlib.figure import Figure
from test_pdf_fonts import assert_no_type3

from maxmargin import registry
from maxmargin.experiments import instances, synthetic
from maxmargin.figures import synthetic as synthetic_figures

FIGURES = registry.figures_of("synthetic")
TARGETS = [*FIGURES, "results/tables/directions.csv"]
PANELS = [panel.name for panel in registry.panels_of("synthetic")]


def test_every_registry_entry_resolves():
    for entry in registry.EXPERIMENTS:
        assert callable(getattr(instances, entry.instance)), entry
        assert synthetic.EXPERIMENTS[entry.name] is getattr(synthetic, entry.function)
        parameters = inspect.signature(synthetic.EXPERIMENTS[entry.name]).parameters
        assert set(DEFAULT_CONFIG["synthetic"][entry.config]) <= set(parameters)
    for panel in registry.panels_of("synthetic"):
        assert synthetic_figures.PANELS[panel.name] is getattr(synthetic_figures, panel.function)
        registry.experiment(panel.experiment)  # raises if unregistered
        assert panel.title and "{" not in registry.caption(panel.name, DEFAULT_CONFIG)
    assert len({p.name for p in registry.PANELS}) == len(registry.PANELS)
    assert len({e.name for e in registry.EXPERIMENTS}) == len(registry.EXPERIMENTS)


def test_nothing_is_left_unregistered():
    def public(module, returns) -> set[str]:
        return {
            name
            for name, fn in inspect.getmembers(module, inspect.isfunction)
            if fn.__module__ == module.__name__
            and not name.startswith("_")
            and fn.__annotations__.get("return") in (returns, returns.__name__)
        }

    experiments = public(synthetic, synthetic.ExperimentTables) - {"run_experiment"}
    assert experiments == {e.function for e in registry.EXPERIMENTS}
    drawn = public(synthetic_figures, Figure) - {"draw_synthetic_panel"}
    assert drawn == {p.function for p in registry.panels_of("synthetic")}
    used_blocks = {e.config for e in registry.EXPERIMENTS} | {"data"}
    assert set(DEFAULT_CONFIG["synthetic"]) == used_blocks
    assert set(DEFAULT_CONFIG["synthetic"]["data"]) <= {e.instance for e in registry.EXPERIMENTS}
    gallery = {p.name for p in registry.PANELS if p.gallery}
    assert {path.stem for path in (REPO / "docs" / "gallery").glob("*.png")} == gallery


def test_rules_are_derived_from_the_registry(workflow_dir):
    rules = set(snakemake(workflow_dir, "--list-rules").stdout.split())
    assert set(FIGURES) <= rules
    dry_run = snakemake(workflow_dir, "-n", "gallery").stdout  # fails if a gallery panel has no rule making it
    for panel in registry.PANELS:
        assert (f"docs/gallery/{panel.name}.png" in dry_run) == panel.gallery


@pytest.mark.slow
def test_synthetic_targets_end_to_end(workflow_dir):
    snakemake(workflow_dir, *TARGETS)
    results = workflow_dir / "results"
    for panel in PANELS:
        for ext in ("pdf", "png"):
            assert (results / "figures" / f"{panel}.{ext}").stat().st_size > 10_000
        assert_no_type3(results / "figures" / f"{panel}.pdf")  # publishable: TrueType fonts only
    for exp in ["fig1a", "fig1b", "fig1c", "fig2", "fig3a", "fig3b", "fig4", "fig5", "fig8"]:
        assert (results / "logs" / "synthetic_experiment" / f"{exp}.log").exists()
        assert (results / "benchmarks" / "synthetic_experiment" / f"{exp}.tsv").exists()

    table = pd.read_csv(results / "tables" / "directions.csv")
    runs = table[table["record"] == "gd_run"]
    assert (
        len(runs) == 64
    )  # 3 x 6 (Fig 1) + 5 (Fig 2) + 2 x 2 (Fig 3: p and v) + 2 (Fig 4) + 11 x 3 (Fig 5) + 2 (Fig 8)
    assert runs["final_cosine"].min() >= 0.999  # every GD run reaches its predicted direction
    fig1b = runs[runs["figure"] == "fig1b"]
    assert fig1b.loc[fig1b["kind"] == "lmm", "start"].tolist() == ["[0.0, -1.0, 0.0]", "[0.0, -1.5, 0.0]"]
    assert set(runs[runs["figure"] == "fig8"]["kind"]) == {"gmm", "lmm"}
    assert set(runs[runs["figure"] == "fig2"]["kind"]) == {"lmm"}
    assert set(runs[runs["figure"].isin(["fig1a", "fig1c", "fig5"])]["kind"]) == {"gmm"}

    dirs = table[(table["record"] == "direction") & (table["figure"] == "fig3b")].set_index("kind")
    np.testing.assert_allclose(json.loads(dirs.loc["p_relax", "direction"]), [1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(json.loads(dirs.loc["p_mm", "direction"]), np.array([1.25, 0.25]) / np.hypot(1.25, 0.25))
    np.testing.assert_allclose(json.loads(dirs.loc["v_mm", "direction"]), [0.0, 1.0], atol=1e-6)

    # Figure 4: normalized GD saturates first; constant-step GD's norm levels off.
    fig4 = pd.read_csv(results / "tables" / "fig4.csv")
    at200 = fig4[fig4["iteration"] == 200].set_index("label")
    normalized, constant = at200.index
    assert at200.loc[normalized, "max_softmax"] > 0.999 > at200.loc[constant, "max_softmax"]
    assert at200.loc[constant, "p_norm"] < 5 < at200.loc[normalized, "p_norm"]

    # Nothing to redo; a forced rerun gives the same numbers.
    assert "Nothing to be done" in snakemake(workflow_dir, *TARGETS, "-n").stdout
    before = (results / "tables" / "directions.csv").read_bytes()
    snakemake(workflow_dir, *TARGETS, "--forceall")
    assert (results / "tables" / "directions.csv").read_bytes() == before


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"synthetic": {"fig1": {"eta": -1}}}, "['synthetic']['fig1']['eta']"),
        (
            {"synthetic": {"fig5": {"losses": ["hinge"]}}},
            "'hinge' is not one of ['logistic', 'exponential', 'correlation']",
        ),
        ({"synthetic": {"fig9": {}}}, "'fig9' was unexpected"),
        ({"synthetic": {"fig1": {"on_circle": ["fig1d"]}}}, "'fig1d' is not one of ['fig1a', 'fig1b', 'fig1c']"),
    ],
)
def test_bad_config_stops_with_the_key_named(workflow_dir, config, expected):
    proc = snakemake(workflow_dir, "-n", config=config, check=False)
    assert proc.returncode != 0
    assert expected in proc.stdout + proc.stderr
