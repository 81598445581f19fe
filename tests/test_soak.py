"""A soak of the ViT's long path: a depth-12 run interrupted five times, by SIGINT and by kill -9,
mid-epoch and mid-checkpoint-write, and resumed each time, ends with the metrics and maps of an uninterrupted run,
bit for bit (the wall-clock times, kept apart in the sidecar, aside).

The run is the depth-12 CPU config (workflow/config/cpu_depth12.yaml: its depth, heads, optimiser and schedule) at a
small size, on the digits; each attempt is a process of tests/vit_soak_driver.py, which does what rule vit_train's
script does and marks the moments to interrupt it at.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import DEFAULT_CONFIG, REPO, Lazy

from maxmargin.config import deep_merge

torch, snapshots = Lazy("torch"), Lazy("maxmargin.experiments.vit.snapshots")  # imported by the test that runs
DRIVER = Path(__file__).with_name("vit_soak_driver.py")
# (signal, moment): each kind of interruption at least once; which moment of the attempt is drawn (seeded).
SCHEDULE = (
    (signal.SIGINT, "epoch"),
    (signal.SIGKILL, "save"),
    (signal.SIGKILL, "epoch"),
    (signal.SIGINT, "save"),
    (signal.SIGKILL, "epoch"),
)
SMALL = {
    "model": {"embed_dim": 24, "patch_size": 8},  # depth 12 and 3 heads kept; 16 patch tokens
    "data": {"dataset": "digits", "fallback": [], "n_train": 128, "n_test": 64},
    "train": {"epochs": 6, "batch_size": 32, "threads": 1, "checkpoint_every": 1, "device": "cpu"},
    "probe": {"n_images": 8},
    "plots": {"fig6_epochs": [0, 1, 6]},
}


def soak_config(path: Path) -> Path:
    depth12 = yaml.safe_load((REPO / "workflow/config/cpu_depth12.yaml").read_text())["vit"]
    vit = deep_merge(deep_merge(DEFAULT_CONFIG["vit"], depth12), SMALL)
    assert vit["model"]["depth"] == 12
    path.write_text(json.dumps({"vit": vit}))
    return path


def attempt(config: Path, out: Path, pause: str = "") -> subprocess.Popen[str]:
    out.mkdir(exist_ok=True)
    with open(out / "stderr.log", "a") as err:
        return subprocess.Popen(
            [sys.executable, str(DRIVER), str(config), str(out), *([pause] if pause else [])],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )


def finish(proc: subprocess.Popen[str], out: Path) -> str:
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, (out / "stderr.log").read_text()[-3000:]
    return stdout


def interrupt(proc: subprocess.Popen[str], sig: signal.Signals, out: Path, delay: float) -> None:
    """Wait for the attempt to pause at its marked moment, then send ``sig``."""
    line = proc.stdout.readline()
    assert line.startswith("PAUSED"), f"the attempt ended unpaused: {line!r} {(out / 'stderr.log').read_text()[-2000:]}"
    time.sleep(delay)
    os.kill(proc.pid, sig)
    proc.communicate(timeout=60)
    assert proc.returncode != 0


@pytest.mark.slow
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
def test_an_interrupted_depth12_run_ends_as_an_uninterrupted_one(tmp_path: Path) -> None:
    config = soak_config(tmp_path / "soak.json")
    reference = tmp_path / "reference"
    uninterrupted = attempt(config, reference)  # beside the soak: two cores
    run, rng = tmp_path / "run", random.Random(36)
    for sig, moment in SCHEDULE:
        interrupt(attempt(config, run, f"{moment}:{rng.randint(1, 3)}"), sig, run, rng.uniform(0, 0.2))
        leftovers = list(run.rglob(".tmp-*"))
        # kill -9 in the middle of a write (of the checkpoint or of an epoch's snapshot) leaves the temporary file (the
        # next attempt removes it); SIGINT does not
        assert bool(leftovers) == (sig == signal.SIGKILL and moment == "save"), leftovers
    done = finish(attempt(config, run), run)
    assert "resumed_from_epoch=None" not in done  # resumed, not trained again
    assert not list(run.rglob(".tmp-*"))
    assert "resumed_from_epoch=None" in finish(uninterrupted, reference)
    for name in ("vit_metrics.csv", "maps.npz"):
        assert (run / name).read_bytes() == (reference / name).read_bytes(), name
    ours, theirs = (json.loads((d / "vit_metrics.json").read_text()) for d in (run, reference))
    assert ours["metrics_table"]["sha256"] == theirs["metrics_table"]["sha256"]
    assert len(ours["epoch_times"]) == len(theirs["epoch_times"]) == SMALL["train"]["epochs"] + 1
    # the model at every epoch, as the uninterrupted run kept it (what rule vit_probe measures)
    ours, theirs = (snapshots.load_snapshots(d / "vit_snapshots.pt") for d in (run, reference))
    assert ours["epochs"] == theirs["epochs"] == list(range(SMALL["train"]["epochs"] + 1))
    for epoch in ours["epochs"]:
        for name, weights in ours["states"][epoch].items():
            assert torch.equal(weights, theirs["states"][epoch][name]), (epoch, name)
