"""The kit for an offline GPU node and its one command (docs/gpu.md), rehearsed on the CPU.

The session script runs here exactly as on the node, on workflow/config/gpu_rehearsal.yaml (tiny width, a handful
of images, the CPU): every stage through the pipeline's rules, its files flat in OUT_DIR within the node's limits,
and a deliberately endless run cut at the wall limit without losing the pilot or the epochs done.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, copy_workflow, load_tool

NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # what the node's output folder may bring back
REHEARSAL = "workflow/config/gpu_rehearsal.yaml"
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"


gpu_kit, gpu_session = load_tool("gpu_kit"), load_tool("gpu_session")


def test_kit_carries_what_the_node_lacks() -> None:
    """Snakemake and pandera with their needs, as this environment has them; nothing the node has; no pulp."""
    needed = gpu_kit.closure(gpu_kit.ROOTS, gpu_kit.read_have(None))
    for name in ("snakemake", "pandera", "pydantic-core", "jsonschema", "rpds-py", "snakemake-interface-common"):
        assert name in needed, name
    assert not {"pulp", "torch", "numpy", "pandas", "pyyaml", "timm"} & set(needed)
    assert "cvxopt" not in needed  # only the SVM solvers import it, inside their functions
    assert needed["pydantic-core"][1] == "pydantic <- pandera"


@pytest.mark.parametrize("extra", [[], [REHEARSAL], ["workflow/config/gpu_vitb4.yaml"]])
def test_session_configs_pass_the_snakefiles_checks(extra: list[str]) -> None:
    """paper.yaml, gpu_session.yaml and the rehearsal or the second size, merged as the session merges them."""
    from snakemake.utils import validate

    from maxmargin.config import check_config_beyond_schema

    paths = [REPO / "workflow/config/paper.yaml", REPO / "workflow/config/gpu_session.yaml", *(REPO / e for e in extra)]
    config = gpu_session.merged_config(paths)
    validate(config, str(SCHEMA))
    check_config_beyond_schema(config, SCHEMA, paths)
    assert config["vit"]["data"]["dataset"] == ("digits" if extra == [REHEARSAL] else "fashion_mnist")
    assert config["vit"]["model"]["embed_dim"] == (16 if extra == [REHEARSAL] else 768)


def test_fig6_epochs_spread_over_the_run() -> None:
    assert gpu_session.fig6_epochs(400) == [0, 100, 200, 300, 400]  # paper.yaml's
    assert gpu_session.fig6_epochs(14) == [0, 4, 7, 10, 14]
    assert gpu_session.fig6_epochs(1) == [0, 1]


def test_epochs_planned_from_the_pilot() -> None:
    """A pilot stage of 120 s with 2 epochs of 20 s after 35 s of compilation, 400 s left and 45 s kept for the
    figures: the run's fixed cost is 120 - 2 x 20 - 35 = 45 s (its compile hits the warm cache), so
    (400 - 45 - 45) / 20 = 15.5 -> 15 epochs; with no compile time measured (an eager pilot), 13."""
    session = gpu_session.Session.__new__(gpu_session.Session)
    session.deadline = time.time() + 400.0
    pilot = {
        "stage_seconds": 120.0,
        "steady_epoch_seconds": 20.0,
        "epoch_times": {0: 9.0, 1: 55.0, 2: 20.0},
        "compile_seconds": 35.0,
    }
    assert gpu_session.plan_epochs(session, pilot, None, 400, 45.0) == 15
    assert gpu_session.plan_epochs(session, {**pilot, "compile_seconds": None}, None, 400, 45.0) == 13
    assert gpu_session.plan_epochs(session, pilot, None, 10, 45.0) == 10  # never past the configured epochs
    assert gpu_session.plan_epochs(session, pilot, 3, 400, 45.0) == 3  # GPU_SESSION_EPOCHS


def rehearse(tmp_path: Path, minutes: float, **env: str) -> tuple[Path, dict, float]:
    """tools/gpu_session.sh on a copy of the workflow with the rehearsal config; (OUT_DIR, session.json, seconds)."""
    (tmp_path / "repo").mkdir()
    work = copy_workflow(tmp_path / "repo")
    for path in ("tools/gpu_session.sh", "tools/gpu_session.py", "benchmarks/vit_benchmark.py"):
        (work / path).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / path, work / path)
    out = tmp_path / "out"
    environ = {
        **os.environ,
        "PYTHON": sys.executable,
        "GPU_KIT": str(tmp_path / "no_kit"),
        "GPU_SESSION_CONFIG": REHEARSAL,
        "GPU_SESSION_RESERVE": "30",
        **env,
    }
    t0 = time.time()
    proc = subprocess.run(
        ["bash", "tools/gpu_session.sh", str(out), str(minutes)],
        cwd=work,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60 * minutes + 60,
    )
    seconds = time.time() - t0
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert [p for p in out.iterdir() if p.is_dir()] == []  # flat: within the two folders that come back
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= gpu_session.MAX_FILES and all(NAME.match(f) for f in files), files
    assert all((out / f).stat().st_size < 16 * 2**20 for f in files)
    return out, json.loads((out / "session.json").read_text()), seconds


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_session_rehearsal_brings_back_every_file(tmp_path: Path) -> None:
    minutes = 3.0  # about a minute on an idle CPU; the limit leaves room for a loaded one
    out, summary, seconds = rehearse(tmp_path, minutes)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [
            "session.log",
            "session.json",
            "vit_pilot.csv",
            "vit_gpu_metrics.csv",
            "vit_gpu.md",
            "vit_gpu_fig6.png",
            "vit_gpu_fig7.png",
            "vit_gpu_claims.csv",
        ]
    )
    assert seconds < 60 * minutes
    assert summary["command"].endswith(f"GPU_SESSION_RESERVE=30 bash tools/gpu_session.sh OUT_DIR {minutes:g}")
    assert {k: (v["exit"], v["cut"]) for k, v in summary["stages"].items()} == {
        "pilot": (0, False),
        "run": (0, False),
        "figures": (0, False),
    }
    epochs = summary["run"]["epochs_planned"]
    assert summary["run"]["epochs_done"] == epochs >= 1
    assert [int(r["epoch"]) for r in rows(out / "vit_gpu_metrics.csv")] == list(range(epochs + 1))
    pilot = rows(out / "vit_pilot.csv")[0]
    assert int(pilot["epochs"]) == 2 and pilot["dtype"] == "float32"
    assert 0 < summary["pilot"]["mfu"] < 1
    assert "vit_gpu_fig6.png" in (out / "vit_gpu.md").read_text()
    accuracy = float(summary["baseline"]["test_acc"])  # the baseline's table stays on the node, its row comes back
    assert f"linear baseline {accuracy:.3f}" in (out / "vit_gpu.md").read_text()


@pytest.mark.slow
def test_session_survives_a_failed_compile_and_cuts_a_slow_stage(tmp_path: Path) -> None:
    """torch.compile fails (no C++ compiler for Inductor): the pilot runs again without it. Then an endless run
    (GPU_SESSION_EPOCHS) is stopped at the wall limit: the pilot stays, the epochs done come back from the
    checkpoint, no figure stage starts, and the command ends before its limit."""
    (tmp_path / "compile.yaml").write_text("vit:\n  train:\n    compile: true\n")
    minutes = 1.75  # the run stage is cut at the wall limit: the limit is what the test costs
    out, summary, seconds = rehearse(
        tmp_path,
        minutes,
        GPU_SESSION_CONFIG=f"{REHEARSAL}:{tmp_path / 'compile.yaml'}",
        GPU_SESSION_EPOCHS="100000",
        CXX="/bin/false",
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
    )
    assert seconds < 60 * minutes
    stages = {name: (stage["exit"] == 0, stage["cut"]) for name, stage in summary["stages"].items()}
    assert stages == {"pilot": (False, False), "pilot_eager": (True, False), "run": (False, True)}
    log = (out / "session.log").read_text()
    assert "InvalidCxxCompiler" in log and "stopping it at the wall limit" in log
    assert rows(out / "vit_pilot.csv")[0]["compiled"] == "False"
    done = summary["run"]["epochs_done"]
    assert done >= 1
    assert [int(r["epoch"]) for r in rows(out / "vit_gpu_metrics.csv")] == list(range(done + 1))


@pytest.mark.slow
def test_kit_builds_and_travels_under_64_mib(tmp_path: Path) -> None:
    """`make gpu-kit` into a temporary folder (wheels already in gpu_kit/ are reused, the rest fetched by pip)."""
    if not Path(gpu_kit.fashion_source()).is_dir():
        pytest.skip("Fashion-MNIST is not installed (Debian: dataset-fashion-mnist)")
    kit = tmp_path / "kit"
    if (REPO / "gpu_kit/wheels").is_dir():
        shutil.copytree(REPO / "gpu_kit/wheels", kit / "wheels")
    proc = subprocess.run(
        [sys.executable, "tools/gpu_kit.py", "--kit", str(kit)], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    if proc.returncode != 0 and "pip could not fetch" in proc.stdout + proc.stderr:
        pytest.skip(f"pip cannot reach an index here: {(proc.stdout + proc.stderr).strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    travel = re.search(r"travel size ([0-9.]+) MiB", proc.stdout)
    assert travel and float(travel.group(1)) < 64
    assert "bash tools/gpu_session.sh OUT_DIR 9" in proc.stdout
    wheels = [gpu_kit.wheel_name(p) for p in (kit / "wheels").glob("*.whl")]
    assert len(wheels) == len(set(wheels)) and "snakemake" in wheels and "pulp" not in wheels
    assert len(list((kit / "fashion-mnist").glob("*-ubyte.gz"))) == 4
