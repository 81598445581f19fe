"""The Snakemake server of the tests (tests/snakemake_forks.py): a forked command is the `snakemake` program's, in the
test's environment at its call, and a timeout ends the command with its jobs."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import snakemake_forks
from conftest import SNAKEMAKE

pytestmark = pytest.mark.slow

SNAKEFILE = """
rule all:
    input: "env.txt"

rule env:
    output: "env.txt"
    shell: "echo $MAXMARGIN_FORK_TEST > {output}"

rule sleep:
    output: "slept.txt"
    shell: "echo $$ > pid.txt; sleep 60; touch {output}"
"""


@pytest.fixture
def workflow(tmp_path: Path) -> Path:
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    return tmp_path


def test_a_forked_command_prints_what_the_program_prints(workflow: Path) -> None:
    args = ["--cores", "1", "-n", "--quiet", "rules", "all"]
    forked = snakemake_forks.run(workflow, args, timeout=60)
    program = subprocess.run([str(SNAKEMAKE), *args], cwd=workflow, capture_output=True, text=True, timeout=60)
    assert (forked.returncode, forked.stdout) == (program.returncode, program.stdout) == (0, program.stdout)
    assert "env" in forked.stdout
    failed = snakemake_forks.run(workflow, ["--cores", "1", "no_such_rule"], timeout=60)
    assert failed.returncode != 0 and "no_such_rule" in failed.stderr


def test_the_jobs_get_the_environment_of_the_call(workflow: Path, monkeypatch) -> None:
    for value in ("first", "second"):  # one server, each command with the environment of its own call
        monkeypatch.setenv("MAXMARGIN_FORK_TEST", value)
        proc = snakemake_forks.run(workflow, ["--cores", "1", "--forceall"], timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert (workflow / "env.txt").read_text().strip() == value


def test_a_timeout_kills_the_command_and_its_jobs(workflow: Path) -> None:
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        snakemake_forks.run(workflow, ["--cores", "1", "slept.txt"], timeout=5)
    assert time.monotonic() - start < 30
    pid = int((workflow / "pid.txt").read_text())
    time.sleep(0.5)
    assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
    assert not (workflow / "slept.txt").exists()
    assert snakemake_forks.run(workflow, ["--cores", "1", "-n", "all"], timeout=60).returncode == 0  # still serving
