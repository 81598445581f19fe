"""Shared test fixtures: running the real Snakemake DAG in a temporary directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
DEFAULT_CONFIG = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())
CI_CONFIG = "workflow/config/ci_slurm.yaml"  # the small run: every rule of `all`, each job a few seconds
CI_RESULTS = yaml.safe_load((REPO / CI_CONFIG).read_text())["results"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regenerate-baselines",
        action="store_true",
        help="write tests/baseline_images/ from this run's figures instead of comparing with them",
    )


def copy_workflow(dest: Path) -> Path:
    """Copy the Snakefile, environment.yml, workflow/ and scripts/ into ``dest`` (results land there)."""
    for name in ("Snakefile", "environment.yml"):
        shutil.copy(REPO / name, dest / name)
    for folder in ("workflow", "scripts"):
        shutil.copytree(REPO / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "profiles").symlink_to("workflow/profiles")  # the default profile, as in the repo
    return dest


def snakemake(
    workdir: Path, *args: str, config: dict | None = None, check: bool = True, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run snakemake in ``workdir``; ``config`` is deep-merged over the default config via --configfile."""
    args = list(args)
    if config is not None:  # after the options (it takes every word that follows), before `-- TARGET ...`
        path = workdir / "test_config.yaml"
        path.write_text(yaml.safe_dump(config))
        at = args.index("--") if "--" in args else len(args)
        args[at:at] = ["--configfile", str(path)]
    cmd = [str(SNAKEMAKE), "--cores", "2", *args]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}")
    return proc


@pytest.fixture
def workflow_dir(tmp_path: Path) -> Path:
    """A fresh copy of the workflow in a temporary directory."""
    return copy_workflow(tmp_path)


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory) -> Path:
    """A copy of the workflow after `all` on the CI config and `--report report.html` (shared, not to be changed)."""
    workdir = copy_workflow(tmp_path_factory.mktemp("ci_run"))
    snakemake(workdir, "--configfile", CI_CONFIG)
    snakemake(workdir, "--configfile", CI_CONFIG, "--report", "report.html")
    return workdir
