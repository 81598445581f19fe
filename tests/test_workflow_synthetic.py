"""End-to-end: the synthetic figure targets on the default config, run through the real DAG."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import snakemake

TARGETS = ["fig1", "fig2", "fig3", "fig4", "fig5", "fig8", "results/tables/directions.csv"]
PANELS = ["fig1a", "fig1b", "fig1c", "fig2", "fig3a", "fig3b", "fig3c", "fig4a", "fig4b", "fig5", "fig8"]


@pytest.mark.slow
def test_synthetic_targets_end_to_end(workflow_dir):
    snakemake(workflow_dir, *TARGETS)
    results = workflow_dir / "results"
    for panel in PANELS:
        for ext in ("pdf", "png"):
            assert (results / "figures" / f"{panel}.{ext}").stat().st_size > 10_000
    for exp in ["fig1a", "fig1b", "fig1c", "fig2", "fig3a", "fig3b", "fig4", "fig5", "fig8"]:
        assert (results / "logs" / "synthetic_experiment" / f"{exp}.log").exists()
        assert (results / "benchmarks" / "synthetic_experiment" / f"{exp}.tsv").exists()

    table = pd.read_csv(results / "tables" / "directions.csv")
    runs = table[table["record"] == "gd_run"]
    assert len(runs) >= 70
    assert runs["final_cosine"].min() >= 0.999  # every GD run reaches its predicted direction
    assert set(runs[runs["figure"] == "fig1b"]["kind"]) == {"gmm", "lmm"}
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
    ],
)
def test_bad_config_stops_with_the_key_named(workflow_dir, config, expected):
    proc = snakemake(workflow_dir, "-n", config=config, check=False)
    assert proc.returncode != 0
    assert expected in proc.stdout + proc.stderr
