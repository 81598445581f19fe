"""The synthetic targets end to end through the real DAG (the registry itself: tests/test_registry.py)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG, snakemake
from test_pdf_fonts import assert_no_type3

from maxmargin import registry
from maxmargin.registry import derived

FIGURES = derived.figures_of("synthetic")
TARGETS = [*FIGURES, "results/tables/directions.csv"]
PANELS = [panel.name for panel in registry.panels_of("synthetic")]


def expected_runs(synthetic: dict) -> dict[str, int]:
    """GD runs of the paper's experiments' directions tables: one per start (Fig 3: p and v), per (C, loss).

    A figure added later (CONTRIBUTING.md) is checked by its own tests, not here."""

    def n_starts(block: dict) -> int:
        starts = block["starts"]
        return starts["circle"]["n"] if isinstance(starts, dict) else len(starts)

    per_experiment = {
        "fig1": lambda name: n_starts(synthetic["fig1"]),
        "fig1c": lambda name: n_starts(synthetic["fig1c"]),
        "fig2": lambda name: synthetic["fig2"]["n_starts"],
        "fig3": lambda name: 2 * len(synthetic["fig3"]["starts"]),
        "fig4": lambda name: 2,
        "fig5": lambda name: len(synthetic["fig5"]["C"]) * len(synthetic["fig5"]["losses"]),
        "fig8": lambda name: n_starts(synthetic["fig8"]),
    }
    return {e.name: per_experiment[e.block](e.name) for e in registry.EXPERIMENTS if e.block in per_experiment}


def test_expected_runs_of_the_default_config():
    assert sum(expected_runs(DEFAULT_CONFIG["synthetic"]).values()) == 3 * 6 + 5 + 2 * 2 + 2 + 11 * 3 + 2


@pytest.mark.slow
def test_synthetic_targets_end_to_end(workflow_dir):
    snakemake(workflow_dir, *TARGETS)
    results = workflow_dir / "results"
    for panel in PANELS:
        for ext in ("pdf", "png"):
            assert (results / "figures" / f"{panel}.{ext}").stat().st_size > 10_000
        assert_no_type3(results / "figures" / f"{panel}.pdf")  # publishable: TrueType fonts only
    for exp in (e.name for e in registry.EXPERIMENTS):
        assert (results / "logs" / "synthetic_experiment" / f"{exp}.log").exists()
        assert (results / "benchmarks" / "synthetic_experiment" / f"{exp}.tsv").exists()

    table = pd.read_csv(results / "tables" / "directions.csv")
    runs = table[table["record"] == "gd_run"]
    expected = expected_runs(DEFAULT_CONFIG["synthetic"])  # 64 runs with the default config
    assert runs["figure"].value_counts().loc[list(expected)].to_dict() == expected
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

    # Nothing to redo; every experiment run again gives the same numbers (the figures are not redrawn: their
    # bytes are not what is compared).
    assert "Nothing to be done" in snakemake(workflow_dir, *TARGETS, "-n").stdout
    before = (results / "tables" / "directions.csv").read_bytes()
    directions = "results/tables/directions.csv"
    snakemake(workflow_dir, "--forcerun", "synthetic_experiment", "directions_table", "--", directions)
    assert (results / "tables" / "directions.csv").read_bytes() == before


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"synthetic": {"fig1": {"eta": -1}}}, "config key 'synthetic.fig1.eta' (from "),
        (
            {"synthetic": {"fig5": {"losses": ["hinge"]}}},
            "'hinge' is not one of ['logistic', 'exponential', 'correlation']",
        ),
        # the schema's generic experiment block first (n_iter required, every key typed), then the registry
        ({"synthetic": {"fig9": {"eta": 0.1}}}, "'n_iter' is a required property"),
        ({"synthetic": {"fig9": {"n_iter": 10, "eta": -1}}}, "config key 'synthetic.fig9.eta' (from "),
        ({"synthetic": {"fig9": {"n_iter": 10}}}, "'synthetic.fig9' is read by no registered experiment"),
        ({"synthetic": {"fig1c": {"starts": {"circle": {"n": 0}}}}}, "config key 'synthetic.fig1c.starts"),
    ],
)
def test_bad_config_stops_with_the_key_named(workflow_dir, config, expected):
    proc = snakemake(workflow_dir, "-n", config=config, check=False)
    assert proc.returncode != 0
    assert expected in proc.stdout + proc.stderr
