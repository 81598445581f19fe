"""Tests of the Makefile's run lock: an overlapping Makefile-driven Snakemake run is refused, a stale lock is cleared.

Snakemake >= 9.17 deletes the whole ``.snakemake/locks`` folder whenever any run in the directory exits, so its own
lock cannot keep a second run out. The Makefile's entry points therefore hold a flock of their own. These tests run
the repository's real Makefile in a temporary directory against a stand-in ``.venv/bin/snakemake`` that behaves like
Snakemake 9.17+ on locks (it writes its lock file, and on exit deletes the whole folder), so they take seconds.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.skipif(
    shutil.which("make") is None or shutil.which("flock") is None, reason="needs GNU make and util-linux flock"
)

BUSY = "another snakemake run is active in this directory"
BUSY_EXIT = 2  # make's own status when a recipe fails (the recipe itself exits 75)

# The stand-in: records its arguments in calls.log; `--unlock` deletes .snakemake/locks and says so (Snakemake's
# words, which `make` must keep quiet); a run writes its lock file,
# and with the target `hold` says so in started and waits for release before exiting; every run, as Snakemake 9.17+
# does, deletes the whole .snakemake/locks folder when it exits.
FAKE_SNAKEMAKE = f"""#!{sys.executable}
import os, shutil, sys, time
from pathlib import Path

with open("calls.log", "a") as log:
    print(" ".join(sys.argv[1:]), file=log)
locks = Path(".snakemake/locks")
if "--unlock" in sys.argv:
    print("Unlocked working directory.")
else:
    locks.mkdir(parents=True, exist_ok=True)
    (locks / f"{{os.getpid()}}.output.lock").write_text("results/x\\n")
    if "hold" in sys.argv:
        Path("started").touch()
        deadline = time.monotonic() + 20
        while not Path("release").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
shutil.rmtree(locks, ignore_errors=True)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The real Makefile in a directory whose installed .venv holds the stand-in snakemake."""
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO / "tools/live_runs.sh", tmp_path / "tools/live_runs.sh")
    (tmp_path / "pyproject.toml").touch()
    plugin = tmp_path / "workflow/logger/snakemake_logger_plugin_maxmargin"  # the venv's other sources (Makefile)
    plugin.mkdir(parents=True)
    for source in (tmp_path / "workflow/logger/pyproject.toml", plugin / "__init__.py"):
        source.touch()
        os.utime(source, (time.time() - 60, time.time() - 60))
    fake = tmp_path / ".venv/bin/snakemake"
    fake.parent.mkdir(parents=True)
    fake.write_text(FAKE_SNAKEMAKE)
    fake.chmod(0o755)
    (tmp_path / ".venv/.installed").touch()
    earlier = time.time() - 60
    os.utime(tmp_path / "pyproject.toml", (earlier, earlier))  # the venv is up to date: make does not rebuild it
    return tmp_path


def make_env() -> dict[str, str]:
    """The environment without the variables of an enclosing make (`make test`): its jobserver is not ours."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES")}


def make(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", *args], cwd=project, env=make_env(), capture_output=True, text=True, timeout=30)


def calls(project: Path) -> list[str]:
    log = project / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def wait_for(path: Path, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} did not appear within {timeout} s"
        time.sleep(0.02)


def start_long_run(project: Path) -> subprocess.Popen[str]:
    """`make figures` whose snakemake runs until the test creates ``release`` (its own session, to kill it whole)."""
    proc = subprocess.Popen(
        ["make", "figures", "SMK_ARGS=hold"],
        cwd=project,
        env=make_env(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    wait_for(project / "started")
    return proc


def test_overlapping_run_is_refused_after_a_disjoint_run_deleted_the_locks(project: Path) -> None:
    long = start_long_run(project)
    try:
        assert calls(project) == ["--cores 2 hold"] and any((project / ".snakemake/locks").iterdir())
        # A short run on other targets, started outside make, finishes and (Snakemake 9.17+) deletes every lock.
        subprocess.run(
            [str(project / ".venv/bin/snakemake"), "--cores", "1", "other"], cwd=project, check=True, timeout=30
        )
        assert not (project / ".snakemake/locks").exists()
        for target in ("figures", "report", "gallery", "clean-results"):
            refused = make(project, target)
            assert refused.returncode == BUSY_EXIT and BUSY in refused.stderr, (target, refused.stderr)
            assert "Error 75" in refused.stderr
        assert calls(project) == ["--cores 2 hold", "--cores 1 other"]  # neither a run nor an --unlock
    finally:
        (project / "release").touch()
        out, err = long.communicate(timeout=30)
    assert long.returncode == 0, err
    assert "+ .venv/bin/snakemake --cores 2 hold" in err and "stale" not in out
    done = make(project, "figures", "CORES=3")  # the lock went with the run
    assert done.returncode == 0 and calls(project)[-1] == "--cores 3", done.stderr


def test_interrupted_run_frees_the_lock_and_its_stale_snakemake_lock_is_cleared(project: Path) -> None:
    long = start_long_run(project)
    os.killpg(long.pid, signal.SIGKILL)  # make, its shell and snakemake die at once: nothing cleans up
    long.wait(timeout=10)
    assert any((project / ".snakemake/locks").iterdir())  # the stale Snakemake lock of the killed run
    rerun = make(project, "figures")
    assert rerun.returncode == 0, rerun.stderr
    assert calls(project) == ["--cores 2 hold", "--unlock --quiet", "--cores 2"]  # unlocked first, quietly
    assert "clearing a stale Snakemake lock" in rerun.stdout and "Unlocked" not in rerun.stdout + rerun.stderr
    # Without a leftover lock there is nothing to clear: no --unlock (it costs a parse of the workflow).
    assert make(project, "figures").returncode == 0 and calls(project)[-2:] == ["--cores 2", "--cores 2"]


def test_clean_results_keeps_the_run_lock(project: Path) -> None:
    (project / "results").mkdir()
    (project / ".snakemake/metadata").mkdir(parents=True)
    assert make(project, "clean-results").returncode == 0
    assert not (project / "results").exists() and [p.name for p in (project / ".snakemake").iterdir()] == ["make.lock"]


SLOW_SNAKEFILE = """
rule slow:
    output: "slow.txt"
    shell: "sleep 30 && touch {output}"

rule quick:
    output: "quick.txt"
    shell: "touch {output}"
"""


def test_snakemake_keeps_a_running_lock_when_another_run_ends(tmp_path: Path) -> None:
    """The pinned Snakemake (pyproject.toml: < 9.17) removes only its own lock files when a run ends.

    A run holds its lock; a third, disjoint run starts and ends; an overlapping run must still be refused. Snakemake
    9.17 to 9.27 delete the whole .snakemake/locks folder at the second step, and the overlapping run goes ahead.
    """
    (tmp_path / "Snakefile").write_text(SLOW_SNAKEFILE)
    smk = [str(Path(sys.executable).with_name("snakemake")), "--cores", "1"]
    holder = subprocess.Popen(
        [*smk, "slow.txt"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        locks = tmp_path / ".snakemake" / "locks"
        deadline = time.monotonic() + 60
        while not (locks.is_dir() and any(locks.iterdir())):
            assert time.monotonic() < deadline and holder.poll() is None, "the first run never took its lock"
            time.sleep(0.2)
        disjoint = subprocess.run([*smk, "quick.txt"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert disjoint.returncode == 0, disjoint.stderr[-2000:]
        overlapping = subprocess.run([*smk, "slow.txt"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert overlapping.returncode != 0
        assert "cannot be locked" in overlapping.stdout + overlapping.stderr
    finally:
        os.killpg(holder.pid, signal.SIGTERM)
        holder.wait(timeout=30)


def test_the_lock_of_a_live_snakemake_started_by_hand_is_never_cleared(project: Path) -> None:
    # A direct `snakemake` run in the same folder holds its lock: `make figures` must not take it for a stale one.
    holder = subprocess.Popen(
        [str(project / ".venv/bin/snakemake"), "--cores", "1", "hold"],
        cwd=project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(project / "started")
        assert any((project / ".snakemake/locks").iterdir())
        run = make(project, "figures")
        assert run.returncode == 0, run.stderr
        assert calls(project) == ["--cores 1 hold", "--cores 2"]  # no --unlock: the live run's lock stays
        assert f"pid {holder.pid}" in run.stdout and "stale" not in run.stdout
    finally:
        (project / "release").touch()
        holder.wait(timeout=30)
    # Once that run is gone, a lock it left is stale and cleared as before.
    (project / ".snakemake/locks").mkdir(parents=True, exist_ok=True)
    (project / ".snakemake/locks/0.output.lock").write_text("results/x\n")
    assert "clearing a stale Snakemake lock" in make(project, "figures").stdout
    assert calls(project)[-2:] == ["--unlock --quiet", "--cores 2"]


def stale_lock(project: Path) -> None:
    (project / ".snakemake/locks").mkdir(parents=True, exist_ok=True)
    (project / ".snakemake/locks/0.output.lock").write_text("results/x\n")


def test_a_run_started_as_python_m_snakemake_keeps_its_lock(project: Path) -> None:
    # `python -m snakemake` is a live run (its lock is not stale), wherever `snakemake` stands in its command line,
    # not only in its first two words. A package `snakemake` in the project stands in for Snakemake's.
    stale_lock(project)
    (project / "snakemake").mkdir()
    (project / "snakemake" / "__main__.py").write_text("import time\ntime.sleep(20)\n")
    holder = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=project, start_new_session=True)
    try:
        run = make(project, "figures")
        assert run.returncode == 0, run.stderr
        named = (
            f"keeping the Snakemake lock of the run still going here (pid {holder.pid} ({sys.executable} -m snakemake"
        )
        assert named in run.stdout
        assert "--unlock --quiet" not in calls(project)
    finally:
        holder.kill()
        holder.wait(timeout=10)


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-c", "import time; time.sleep(60)"],  # an idle python, a Jupyter kernel, an IPython shell
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "0"],
    ],
)
def test_a_python_process_that_is_not_snakemake_leaves_a_stale_lock_stale(project: Path, command: list[str]) -> None:
    """A python process in the checkout that is not Snakemake is no live run: a stale lock kept for it would make
    Snakemake fail on its LockException. Only Snakemake's command line or its jobs' scripts count."""
    stale_lock(project)
    idle = subprocess.Popen(
        command, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        time.sleep(0.2)  # its command line and working directory are in /proc
        assert Path(f"/proc/{idle.pid}/cwd").resolve() == project.resolve() and idle.poll() is None
        run = make(project, "figures")
        assert run.returncode == 0, run.stderr
        assert "clearing a stale Snakemake lock" in run.stdout and "keeping" not in run.stdout
        assert calls(project) == ["--unlock --quiet", "--cores 2"]
    finally:
        idle.kill()
        idle.wait(timeout=10)


def test_a_snakemake_jobs_script_counts_as_a_run(tmp_path: Path) -> None:
    """A job's script (``python .snakemake/scripts/tmpXXXX.rule.py``) outlives its killed Snakemake: a run still."""
    fake = tmp_path / "proc"
    words = {
        "101": [sys.executable, "-c", "import time"],
        "102": [sys.executable, f"{tmp_path}/.snakemake/scripts/tmpab12.vit_train.py"],
        "103": ["less", "Snakefile"],
    }
    for pid, argv in words.items():
        (fake / pid).mkdir(parents=True)
        (fake / pid / "cmdline").write_bytes(b"".join(w.encode() + b"\0" for w in argv))
        (fake / pid / "cwd").symlink_to(tmp_path)
    env = {**make_env(), "LIVE_RUNS_PROC": str(fake)}
    found = subprocess.run(
        ["bash", str(REPO / "tools/live_runs.sh")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30
    )
    assert (found.returncode, found.stdout.strip()) == (1, f"live 102 ({' '.join(words['102'])})")


def test_when_it_cannot_tell_it_refuses_and_prints_the_unlock_command(project: Path, tmp_path: Path) -> None:
    # A process that may be a run, whose working directory cannot be read (another user's): no guess.
    fake = tmp_path / "proc"
    (fake / "4242").mkdir(parents=True)
    (fake / "4242" / "cmdline").write_bytes(b"python3\0-m\0snakemake\0--cores\0" + b"8\0")
    stale_lock(project)
    env = {**make_env(), "LIVE_RUNS_PROC": str(fake)}
    run = subprocess.run(["make", "figures"], cwd=project, env=env, capture_output=True, text=True, timeout=30)
    assert (
        run.returncode == BUSY_EXIT
        and "(Snakemake process 4242 (python3 -m snakemake --cores 8) cannot be inspected)" in run.stderr
    )
    assert ".venv/bin/snakemake --unlock" in run.stderr and calls(project) == []  # neither a run nor an unlock
    assert (project / ".snakemake/locks/0.output.lock").exists()
