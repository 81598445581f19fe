"""Bad numbers in the config stop the run, naming the key; a diverged run is never labelled."""

from __future__ import annotations

import math

import pytest
from conftest import snakemake

from maxmargin.config import check_config
from maxmargin.pipeline import run_experiment


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1.0e300])
def test_check_config_names_the_key_of_a_bad_number(bad):
    config = {"synthetic": {"fig1": {"eta": 0.1}, "fig3": {"starts": [[0.5, 0.0], [0.0, bad]]}}}
    with pytest.raises(ValueError, match=r"synthetic\.fig3\.starts\[1\]\[1\]"):
        check_config(config)
    check_config({"synthetic": {"fig1": {"eta": 0.1, "loss": "logistic", "flag": True}}})  # finite: passes


def test_diverged_gd_is_an_error_not_a_direction():
    with pytest.raises(FloatingPointError, match="fig8, start 1: gradient descent ended at a non-finite"):
        run_experiment("fig8", dict(eta=math.nan, n_iter=5, starts=[[-1.0, 1.5], [1.0, -1.7]], loss="logistic"), {})


@pytest.mark.parametrize("value", [".nan", ".inf", "1.0e+300"])
def test_a_nan_step_size_stops_the_workflow_before_any_job(workflow_dir, value):
    (workflow_dir / "bad.yaml").write_text(f"synthetic:\n  fig1:\n    eta: {value}\n")
    proc = snakemake(workflow_dir, "-n", "--configfile", "bad.yaml", "--", "fig1", check=False)
    assert proc.returncode != 0
    assert "config key 'synthetic.fig1.eta'" in proc.stdout + proc.stderr
