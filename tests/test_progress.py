"""Progress of long jobs on the terminal: census chunks, regularization-path radii, ViT epochs.

One helper (maxmargin.core.progress.progress) writes each step to the rule log and, prefixed with the job, to the
job's stderr:
the terminal when Snakemake runs the job, its SLURM log on a cluster; whether or not stderr is a terminal.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import DEFAULT_CONFIG, snakemake

from maxmargin import logs
from maxmargin.core.progress import Progress, duration, progress
from maxmargin.experiments.census import CensusSettings, run_trials
from maxmargin.experiments.regpath import regpath_table
from maxmargin.logs import rule_logging


def _job(tmp_path: Path, rule: str, **wildcards: str) -> SimpleNamespace:
    return SimpleNamespace(
        output=[], log=[str(tmp_path / f"{rule}.log")], rule=rule, wildcards=wildcards, params={}, config={}
    )


@pytest.fixture
def no_grace(monkeypatch) -> None:
    """Progress lines reach the terminal from a job's start (these jobs last well under the grace period)."""
    monkeypatch.setattr(logs, "TERMINAL_GRACE", 0.0)


def test_census_chunks_reach_the_terminal_once_and_the_log_once(tmp_path: Path, capsys, no_grace) -> None:
    settings = CensusSettings.from_config(DEFAULT_CONFIG["census"], n_trials=6, chunk=2, n_iter=20)
    with rule_logging(_job(tmp_path, "census_trials", d="4")):
        rows = run_trials(settings, 4)
    assert len(rows) == 6
    terminal = [line for line in capsys.readouterr().err.splitlines() if "[census_trials d=4]" in line]
    # the terminal: the first line and the last (the others at most every 30 s); the log: every line, once
    assert [line.split("] ", 1)[1].split(",")[0] for line in terminal] == [
        "census d=4: trials 2/6 (33%)",
        "census d=4: trials 6/6 (100%)",
    ]
    assert "left" in terminal[0] and "left" not in terminal[-1]  # the time left, until the end
    log = (tmp_path / "census_trials.log").read_text()
    for step in ("2/6 (33%)", "4/6 (67%)", "6/6 (100%)"):
        assert log.count(f"census d=4: trials {step}") == 1  # the record once, not once more through the tee


def test_regularization_path_reports_every_radius(tmp_path: Path, capsys, no_grace) -> None:
    regpath = {**DEFAULT_CONFIG["regpath"], "n_random": 2, "n_iter": 200}
    settings = {k: v for k, v in regpath.items() if k not in ("instances", "gd", "radii")} | {"gd": None}
    with rule_logging(_job(tmp_path, "regpath_instance", regpath_instance="fig3a")):
        regpath_table("fig3a", radii=np.geomspace(1.0, 4.0, 3), **settings)
    prefix = "[regpath_instance regpath_instance=fig3a]"
    lines = [line for line in capsys.readouterr().err.splitlines() if prefix in line]
    assert [line.split("] ", 1)[1].split(" (")[0] for line in lines] == [
        "regularization path: radius 1/3",
        "regularization path: radius 3/3",
    ]
    assert "about" in lines[0] and "R 4, log(L - inf L)" in lines[-1]
    assert "radius 2/3" in (tmp_path / "regpath_instance.log").read_text()  # every radius in the rule log


def test_progress_outside_a_rule_prints_nothing(capsys) -> None:
    progress("nobody listens %d", 1)  # library use without rule_logging: no handler, no noise
    assert "nobody listens" not in capsys.readouterr().err


@pytest.mark.slow
def test_snakemake_terminal_without_a_tty(workflow_dir: Path) -> None:
    # subprocess.run with captured output: stdout and stderr are pipes, as under nohup, CI or sbatch
    config = {"census": {"dims": [4], "histogram": {"dims": [4]}, "n_trials": 4, "chunk": 2}}
    proc = snakemake(workflow_dir, "results/runs/census/d4.csv", config=config)
    assert "[census_trials d=4]" not in proc.stderr  # a job of a second: its start and end, no progress lines
    # the workflow's terminal (workflow/logger/): a line per job start and end, none of the scheduler's chatter
    assert re.search(r"^\d\d:\d\d:\d\d start census_trials d=4$", proc.stderr, re.MULTILINE)
    assert re.search(r"^\d\d:\d\d:\d\d done  census_trials d=4 in \d+ s \[1/1 jobs\]$", proc.stderr, re.MULTILINE)
    assert "Select jobs to execute" not in proc.stderr and "resources:" not in proc.stderr
    assert "trials 4/4 (100%)" in (workflow_dir / "results/logs/census_trials/d4.log").read_text()


def test_the_time_left_follows_the_rate_so_far(monkeypatch) -> None:
    clock = iter([0.0, 10.0, 10.0, 40.0, 40.0])
    module = sys.modules[Progress.__module__]  # (maxmargin.core.progress: the package exports a function so named)
    monkeypatch.setattr(module.time, "perf_counter", lambda: next(clock))
    bar = Progress("epochs", 4)
    assert bar.text(1) == "epochs 1/4 (25%), 10 s so far, about 30 s left"  # 10 s per epoch, 3 to go
    assert bar.text(4) == "epochs 4/4 (100%), 40 s so far"
    assert duration(30) == "30 s" and duration(600) == "10.0 min" and duration(3 * 3600) == "3.0 h"


def test_the_terminal_gets_a_progress_line_at_most_every_interval(monkeypatch) -> None:
    """The terminal's filter of a job's progress lines: none in the first `grace` seconds, then one per interval,
    and the last where an earlier one showed."""
    clock = iter([0.0, 5.0, 12.0, 20.0, 41.5, 50.0, 51.0])
    monkeypatch.setattr(logs.time, "monotonic", lambda: next(clock))
    throttle = logs._Throttle(30.0, 10.0)  # constructed at 0 s

    def record(final: bool) -> logging.LogRecord:
        return logging.makeLogRecord({"msg": "step", "final": final})

    passed = [throttle.filter(record(final)) for final in (False, False, False, False, False, True)]
    # 5 s (within the grace), 12 s, 20 s (too soon), 41.5 s (a second of slack), 50 s, final
    assert passed == [False, True, False, True, False, True]


def test_an_epochs_summary_is_not_hidden_by_the_batch_line_before_it(monkeypatch) -> None:
    """Epochs of 5 minutes with batch lines every 30 s: every epoch's summary (a milestone) reaches the terminal,
    however soon after a batch line; epochs of 3 s show a summary at most every interval."""
    clock = iter([0.0, 280.0, 290.0, 300.0, 305.0, 590.0, 600.0, 603.0])
    monkeypatch.setattr(logs.time, "monotonic", lambda: next(clock))
    throttle = logs._Throttle(30.0, 10.0)

    def record(milestone: bool) -> logging.LogRecord:
        return logging.makeLogRecord({"msg": "step", "final": False, "milestone": milestone})

    kinds = (False, False, True, False, False, True, True)  # batch, batch, epoch, batch, batch, epoch, epoch (3 s on)
    # 280 s batch shown; 290 s batch too soon; 300 s epoch shown; 305 s batch too soon after it; 590 s batch; 600 s
    # epoch shown (the last epoch's was 300 s before); 603 s epoch too soon (a 3 s epoch)
    assert [throttle.filter(record(kind)) for kind in kinds] == [True, False, True, False, True, True, False]


def test_a_short_job_shows_no_progress_lines(monkeypatch) -> None:
    clock = iter([0.0, 2.0, 3.0])
    monkeypatch.setattr(logs.time, "monotonic", lambda: next(clock))
    throttle = logs._Throttle(30.0, 10.0)
    records = [logging.makeLogRecord({"msg": "step", "final": final}) for final in (False, True)]
    assert [throttle.filter(r) for r in records] == [False, False]
