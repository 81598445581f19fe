"""The kit for an offline GPU node and its one command (docs/gpu.md), rehearsed on the CPU.

The session script runs here exactly as on the node, on workflow/config/gpu_rehearsal.yaml (tiny width, a handful
of images, the CPU): every stage through the pipeline's rules, its files flat in OUT_DIR within the node's limits and
each of the run it planned; a run cut at the wall limit keeps the pilot and the epochs done; a signal stops
everything the session started; a wrong argument, setting, folder, kit or config is refused before any work.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, copy_workflow, load_tool

from maxmargin import gpu, gpu_plan, processes

NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # what the node's output folder may bring back
REHEARSAL = "workflow/config/gpu_rehearsal.yaml"
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
RUN_FILES = ["vit_gpu_metrics.csv", "vit_gpu.md", "vit_gpu_fig6.png", "vit_gpu_fig7.png", "vit_gpu_claims.csv"]


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
    paths = [REPO / "workflow/config/paper.yaml", REPO / "workflow/config/gpu_session.yaml", *(REPO / e for e in extra)]
    config = gpu.merged_config(paths, REPO / "workflow/config/default.yaml")
    gpu.check_config(config, paths, SCHEMA)
    assert config["vit"]["data"]["dataset"] == ("digits" if extra == [REHEARSAL] else "fashion_mnist")
    assert config["vit"]["model"]["embed_dim"] == (16 if extra == [REHEARSAL] else 768)


def test_a_refused_config_names_the_key_and_the_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("vit:\n  train:\n    batch_size: 0\n")
    paths = [REPO / "workflow/config/gpu_session.yaml", REPO / REHEARSAL, bad]
    with pytest.raises(
        gpu.UsageError, match=r"config is refused .*at vit.train.batch_size\): correct GPU_SESSION_CONFIG.*bad\.yaml"
    ):
        gpu.check_config(gpu.merged_config(paths, REPO / "workflow/config/default.yaml"), paths, SCHEMA)


def test_fig6_epochs_spread_over_the_run() -> None:
    assert gpu_plan.fig6_epochs(400) == [0, 100, 200, 300, 400]  # paper.yaml's
    assert gpu_plan.fig6_epochs(14) == [0, 4, 7, 10, 14]
    assert gpu_plan.fig6_epochs(1) == [0, 1]


def test_epochs_planned_from_the_pilot() -> None:
    """A pilot stage of 120 s with 2 epochs of 20 s after 35 s of compilation, 400 s left and 45 s kept for the
    figures: the run's fixed cost is 120 - 2 x 20 - 35 = 45 s (its compile hits the warm cache), so
    (400 - 45 - 45) / 20 = 15.5 -> 15 epochs; with no compile time measured (an eager pilot), 13."""
    pilot = {
        "stage_seconds": 120.0,
        "steady_epoch_seconds": 20.0,
        "epoch_times": {0: 9.0, 1: 55.0, 2: 20.0},
        "compile_seconds": 35.0,
    }
    assert gpu_plan.plan_epochs(400.0, pilot, None, 400, 45.0) == 15
    assert gpu_plan.plan_epochs(400.0, {**pilot, "compile_seconds": None}, None, 400, 45.0) == 13
    assert gpu_plan.plan_epochs(400.0, pilot, None, 10, 45.0) == 10  # never past the configured epochs
    assert gpu_plan.plan_epochs(400.0, pilot, 3, 400, 45.0) == 3  # GPU_SESSION_EPOCHS


# Each wrong argument or setting, and what its refusal says to do.
REFUSED = [
    ("-1", {}, "MINUTES is '-1': give the allocation's length in minutes"),
    ("nan", {}, "MINUTES is 'nan'"),
    ("nine", {}, "MINUTES is 'nine'"),
    ("0.1", {}, "a number above 0.25"),
    ("9", {"GPU_SESSION_EPOCHS": "0"}, "GPU_SESSION_EPOCHS=0: give a whole number of epochs of at least 1"),
    ("9", {"GPU_SESSION_EPOCHS": "-3"}, "GPU_SESSION_EPOCHS=-3"),
    ("9", {"GPU_SESSION_EPOCHS": "ten"}, "GPU_SESSION_EPOCHS=ten"),
    ("9", {"GPU_SESSION_PILOT": "0"}, "GPU_SESSION_PILOT=0 needs GPU_SESSION_EPOCHS"),
    ("9", {"GPU_SESSION_PILOT": "no"}, "GPU_SESSION_PILOT=no: give 0 (no pilot) or 1"),
    ("9", {"GPU_SESSION_RESERVE": "-5"}, "GPU_SESSION_RESERVE=-5"),
    ("9", {"GPU_SESSION_CONFIG": "workflow/config/nowhere.yaml"}, "names workflow/config/nowhere.yaml, which is no"),
]


@pytest.mark.parametrize(("minutes", "env", "message"), REFUSED)
def test_arguments_are_checked_before_any_work(tmp_path: Path, minutes: str, env: dict, message: str) -> None:
    with pytest.raises(gpu.UsageError) as err:
        gpu.session_request(str(tmp_path / "out"), minutes, env, REPO)
    assert message in str(err.value)


def test_epochs_zero_is_no_unset_and_pilot_zero_is_honoured(tmp_path: Path) -> None:
    request = gpu.session_request(str(tmp_path), "9", {"GPU_SESSION_EPOCHS": "60", "GPU_SESSION_PILOT": "0"}, REPO)
    assert (request.epochs, request.pilot, request.reserve) == (60, False, gpu.DEFAULT_RESERVE)
    assert gpu.session_request(str(tmp_path), "2.5", {}, REPO).epochs is None
    with pytest.raises(gpu.UsageError, match="0 does not mean unset"):
        gpu.session_request(str(tmp_path), "9", {"GPU_SESSION_EPOCHS": "0"}, REPO)


def test_out_dir_is_new_or_empty_and_taken_by_one_session(tmp_path: Path) -> None:
    """A new folder is taken; a second session into it is refused while the first writes (and after); a folder that
    holds other files is refused and left as it was."""
    out = tmp_path / "new" / "out"
    with gpu.claim_out_dir(out) as log:
        log.write("first\n")
        with pytest.raises(gpu.UsageError, match=r"is not empty .*another session.*give a new or empty folder"):
            gpu.claim_out_dir(out)
    assert (out / "session.log").read_text() == "first\n"
    old = tmp_path / "old"
    old.mkdir()
    (old / "vit_gpu.md").write_text("a session before\n")
    with pytest.raises(gpu.UsageError, match=r"holds \['vit_gpu.md'\].*rm -r"):
        gpu.claim_out_dir(old)
    assert sorted(p.name for p in old.iterdir()) == ["vit_gpu.md"]


def test_a_missing_kit_is_named(tmp_path: Path) -> None:
    with pytest.raises(gpu.UsageError, match=r"no kit at .*no_kit.*`make gpu-kit`.*GPU_KIT"):
        gpu.kit_wheels(tmp_path / "no_kit", have_snakemake=False)
    assert gpu.kit_wheels(tmp_path / "no_kit", have_snakemake=True) == []  # a rehearsal: this Python's Snakemake
    (tmp_path / "kit/wheels").mkdir(parents=True)
    (tmp_path / "kit/wheels/snakemake-9.16.3-py3-none-any.whl").write_bytes(b"")
    assert [p.name for p in gpu.kit_wheels(tmp_path / "kit", have_snakemake=False)] == [
        "snakemake-9.16.3-py3-none-any.whl"
    ]


def test_a_file_of_another_run_is_never_brought_back(tmp_path: Path) -> None:
    """The run's table against the plan by its sidecar: the planned settings made here; the planned settings made
    before this stage (an earlier session: said so); another epoch count (another run: refused, saying how)."""
    planned = gpu_plan.planned_settings(
        gpu.merged_config([REPO / REHEARSAL], REPO / "workflow/config/default.yaml")["vit"]
    )
    table, sidecar = tmp_path / "vit_metrics.csv", tmp_path / "vit_metrics.json"
    epochs = planned["train"]["epochs"]
    table.write_text("epoch,test_acc\n" + "".join(f"{e},0.5\n" for e in range(epochs + 1)))
    record = {"settings": planned, "fingerprint": "abc", "metrics_table": {"sha256": gpu.sha256(table)}}
    sidecar.write_text(json.dumps(record))
    made = sidecar.stat().st_mtime
    verdict = gpu_plan.judge_finished(sidecar, table, planned, since=made - 1)
    assert verdict.returned and verdict.record == {
        "fingerprint": "abc",
        "epochs": epochs,
        "made_here": True,
        "status": "this session's run",
    }
    earlier = gpu_plan.judge_finished(sidecar, table, planned, since=made + 1)
    assert earlier.returned and not earlier.record["made_here"] and "earlier session" in earlier.message
    other = {**planned, "train": {**planned["train"], "epochs": 3000}}
    verdict = gpu_plan.judge_finished(sidecar, table, other, since=made - 1)
    assert not verdict.returned and f"train.epochs {epochs} (planned 3000)" in verdict.message
    table.write_text("epoch,test_acc\n0,0.5\n")  # not the table its sidecar describes
    assert not gpu_plan.judge_finished(sidecar, table, planned, since=made - 1).returned


def test_stages_give_every_config_file_after_one_configfile() -> None:
    """Of several --configfile options Snakemake keeps only the last: one option, every file."""
    configs = [REPO / "workflow/config/paper.yaml", REPO / REHEARSAL]
    cmd = gpu_session.snakemake_cmd(configs, ["vit_pilot"], 2, [])
    assert cmd.count("--configfile") == 1
    assert cmd[cmd.index("--configfile") :] == [
        "--configfile",
        "workflow/config/paper.yaml",
        REHEARSAL,
        "--",
        "vit_pilot",
    ]


def workspace(tmp_path: Path) -> Path:
    """A copy of the workflow with the session's scripts, as the node gets it (results land there)."""
    (tmp_path / "repo").mkdir()
    work = copy_workflow(tmp_path / "repo")
    for path in ("tools/gpu_session.sh", "tools/gpu_session.py", "benchmarks/vit_benchmark.py"):
        (work / path).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / path, work / path)
    (tmp_path / "tmp").mkdir()
    return work


def session_env(tmp_path: Path, **env: str) -> dict[str, str]:
    """The rehearsal's environment: no kit (this Python's Snakemake), the rehearsal config, a temporary folder of
    the test's own (the session's site folder must be gone from it afterwards)."""
    return {
        **os.environ,
        "PYTHON": sys.executable,
        "GPU_KIT": str(tmp_path / "no_kit"),
        "GPU_SESSION_CONFIG": REHEARSAL,
        "GPU_SESSION_RESERVE": "30",
        "TMPDIR": str(tmp_path / "tmp"),
        **env,
    }


def check_out_dir(out: Path) -> dict:
    """What came back fits the node's limits: flat, at most 8 files of plain names under 16 MiB; session.json."""
    assert [p for p in out.iterdir() if p.is_dir()] == []  # flat: within the two folders that come back
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= gpu.MAX_FILES and all(NAME.match(f) for f in files), files
    assert all((out / f).stat().st_size < 16 * 2**20 for f in files)
    return json.loads((out / "session.json").read_text())


def rehearse(tmp_path: Path, work: Path, name: str, minutes: float, rc: int, **env: str) -> tuple[Path, dict, float]:
    """tools/gpu_session.sh in ``work`` into OUT_DIR ``name``; (OUT_DIR, session.json, seconds). Nothing it started
    runs after it, and its temporary folder is gone."""
    out = tmp_path / name
    t0 = time.time()
    proc = subprocess.run(
        ["bash", "tools/gpu_session.sh", str(out), str(minutes)],
        cwd=work,
        env=session_env(tmp_path, **env),
        capture_output=True,
        text=True,
        timeout=60 * minutes + 60,
    )
    seconds = time.time() - t0
    assert proc.returncode == rc, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    assert left_behind(work) == [] and list((tmp_path / "tmp").glob("gpu_session_site.*")) == []
    return out, check_out_dir(out), seconds


def left_behind(work: Path) -> list[str]:
    """The processes (but zombies) that run in ``work`` or below it: what a session started and left."""
    found = []
    for pid in processes.live(processes.process_table()):
        try:
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd == work or work in cwd.parents:
            found.append(f"{pid}: {command[:200]}")
    return found


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def epochs_of(path: Path) -> list[int]:
    return [int(r["epoch"]) for r in rows(path)]


@pytest.mark.slow
def test_a_session_brings_back_only_its_own_run(tmp_path: Path) -> None:
    """A: the whole session, every file of its run. D, the same run again without a pilot: nothing new trained, its
    files said to be an earlier session's. A refused config: nothing run, nothing brought back. B: a long run cut at
    the wall limit: its own epochs. C, the same command again: B's run resumed, never A's table as its own. E, the
    same while another Snakemake holds the directory: failed, and no checkpoint of before brought back."""
    work = workspace(tmp_path)
    out, a, seconds = rehearse(tmp_path, work, "a", 3.0, gpu.EXIT_DONE)
    assert sorted(p.name for p in out.iterdir()) == sorted(["session.log", "session.json", "vit_pilot.csv", *RUN_FILES])
    assert seconds < 180
    assert a["command"].endswith("GPU_SESSION_RESERVE=30 bash tools/gpu_session.sh OUT_DIR 3")
    assert {k: (v["exit"], v["cut"]) for k, v in a["stages"].items()} == {
        "pilot": (0, False),
        "run": (0, False),
        "figures": (0, False),
    }
    epochs = a["run"]["epochs_planned"]
    assert a["run"]["epochs_done"] == epochs >= 1 and a["run"]["made_here"]
    assert epochs_of(out / "vit_gpu_metrics.csv") == list(range(epochs + 1))
    fingerprint = a["run"]["fingerprint"]
    for name in RUN_FILES:  # each file of the run carries its fingerprint and epochs
        assert a["files"][name]["fingerprint"] == fingerprint and a["files"][name]["epochs"] == epochs, name
    assert a["files"]["vit_pilot.csv"]["epochs"] == 2 == int(rows(out / "vit_pilot.csv")[0]["epochs"])
    assert rows(out / "vit_pilot.csv")[0]["dtype"] == "float32" and 0 < a["pilot"]["mfu"] < 1
    page = (out / "vit_gpu.md").read_text()
    assert "vit_gpu_fig6.png" in page and f", {epochs} epochs" in page
    assert f"linear baseline {float(a['baseline']['test_acc']):.3f}" in page  # its table stays, its row comes back
    # the page's rebuild command names every config file after one --configfile, the session's written ones kept
    command = re.search(r"from the tables of `(snakemake [^`]*)`", page).group(1)
    assert command.count("--configfile") == 1 and REHEARSAL in command and "epochs.yaml" in command
    assert all((work / f).is_file() for f in command.split("--configfile ")[1].split(" --")[0].split())

    out, d, _ = rehearse(tmp_path, work, "d", 1.0, gpu.EXIT_DONE, GPU_SESSION_EPOCHS=str(epochs), GPU_SESSION_PILOT="0")
    assert "pilot" not in d["stages"] and d["stages"]["run"]["nothing_to_be_done"]
    assert d["run"]["fingerprint"] == fingerprint and not d["run"]["made_here"]
    assert "earlier session" in d["run"]["status"] and not d["files"]["vit_gpu_metrics.csv"]["made_here"]
    assert (out / "vit_gpu_metrics.csv").read_bytes() == (tmp_path / "a/vit_gpu_metrics.csv").read_bytes()

    (tmp_path / "bad.yaml").write_text("vit:\n  train:\n    batch_size: 0\n")
    bad = {"GPU_SESSION_CONFIG": f"{REHEARSAL}:{tmp_path / 'bad.yaml'}", "GPU_SESSION_EPOCHS": "3"}
    out, refused, _ = rehearse(tmp_path, work, "bad", 1.0, gpu.EXIT_USAGE, GPU_SESSION_PILOT="0", **bad)
    assert sorted(p.name for p in out.iterdir()) == ["session.json", "session.log"]
    assert "batch_size" in refused["refused"] and refused["stages"] == {} and refused["files"] == {}

    cut = {"GPU_SESSION_EPOCHS": "100000", "GPU_SESSION_PILOT": "0", "GPU_SESSION_RESERVE": "4"}
    out, b, _ = rehearse(tmp_path, work, "b", 0.75, gpu.EXIT_CUT, **cut)
    assert b["stages"]["run"]["cut"] and "stopping it at the wall limit" in (out / "session.log").read_text()
    done_b = b["run"]["epochs_done"]
    assert done_b >= 1 and b["run"]["made_here"] and b["run"]["fingerprint"] != fingerprint
    assert sorted(b["files"]) == ["vit_gpu_metrics.csv"] and epochs_of(out / "vit_gpu_metrics.csv")[-1] == done_b

    out, c, _ = rehearse(tmp_path, work, "c", 0.75, gpu.EXIT_CUT, **cut)
    assert not c["stages"]["run"]["nothing_to_be_done"] and c["run"]["fingerprint"] == b["run"]["fingerprint"]
    assert c["run"]["epochs_done"] > done_b and epochs_of(out / "vit_gpu_metrics.csv")[-1] == c["run"]["epochs_done"]
    assert rows(out / "vit_gpu_metrics.csv")[: done_b + 1] == rows(tmp_path / "b/vit_gpu_metrics.csv")  # B's, resumed

    # E, the same command while another Snakemake holds the run's outputs: the stage fails, nothing comes back
    held = "results/gpu_rehearsal/runs/vit/vit_metrics.csv"
    (work / ".snakemake/locks").mkdir(exist_ok=True)
    (work / ".snakemake/locks/0.output.lock").write_text(f"{held}\n{work / held}\n")
    out, e, _ = rehearse(tmp_path, work, "e", 0.6, gpu.EXIT_FAILED, **cut)
    assert e["stages"]["run"]["exit"] != 0 and not e["stages"]["run"]["cut"] and e["files"] == {}
    log = (out / "session.log").read_text()
    assert "cannot be locked" in log and "epochs done" not in log


def start(tmp_path: Path, work: Path, **env: str) -> tuple[subprocess.Popen, Path]:
    """A session started in a process group of its own (as a terminal would), into OUT_DIR ``out``."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        ["bash", "tools/gpu_session.sh", str(out), "3"],
        cwd=work,
        env=session_env(tmp_path, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    return proc, out


def wait_for(out: Path, text: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Until OUT_DIR's session.log says ``text`` (the session still running)."""
    deadline = time.time() + timeout
    log = out / "session.log"
    while not (log.is_file() and text in log.read_text()):
        assert proc.poll() is None and time.time() < deadline, f"no {text!r}: {proc.communicate()}"
        time.sleep(0.2)


def check_stopped(work: Path, out: Path, proc: subprocess.Popen, signum: int, stage: str) -> dict:
    """The session stopped by ``signum`` during ``stage``: its exit, no traceback, its stage's Snakemake and jobs
    gone, the lock released, the temporary folder removed, and session.json saying so."""
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, stdout[-3000:] + stderr[-3000:]
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stdout + stderr  # stdout: the stages' too
    assert left_behind(work) == []
    assert not list((work / ".snakemake/locks").glob("*"))
    assert list((work.parent.parent / "tmp").glob("gpu_session_site.*")) == []
    summary = check_out_dir(out)
    assert summary["interrupted"] == signal.Signals(signum).name == summary["stages"][stage]["interrupted"]
    assert summary["stages"][stage]["cut"] and summary["exit"] == 128 + signum
    assert f"OUT_DIR holds {sorted(summary['files'])}" in (out / "session.log").read_text()  # its own files only
    return summary


@pytest.mark.slow
def test_a_failed_compile_runs_again_without_it_and_sigterm_stops_the_run(tmp_path: Path) -> None:
    """torch.compile fails (no C++ compiler for Inductor): the pilot runs again without it, and the run after it.
    SIGTERM to the session during the run stops its Snakemake and the training job, and the session exits 143."""
    work = workspace(tmp_path)
    (tmp_path / "compile.yaml").write_text("vit:\n  train:\n    compile: true\n")
    proc, out = start(
        tmp_path,
        work,
        GPU_SESSION_CONFIG=f"{REHEARSAL}:{tmp_path / 'compile.yaml'}",
        GPU_SESSION_EPOCHS="100000",
        CXX="/bin/false",
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
    )
    wait_for(out, "start vit_train", proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    summary = check_stopped(work, out, proc, signal.SIGTERM, "run")
    stages = {name: (stage["exit"] == 0, stage["cut"]) for name, stage in summary["stages"].items()}
    assert stages == {"pilot": (False, False), "pilot_eager": (True, False), "run": (False, True)}
    assert "InvalidCxxCompiler" in (out / "session.log").read_text()
    assert rows(out / "vit_pilot.csv")[0]["compiled"] == "False"


@pytest.mark.slow
def test_sigint_to_the_session_group_stops_the_pilot_and_the_probe(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the session's process group) during the pilot, the device probe running beside it."""
    work = workspace(tmp_path)
    proc, out = start(tmp_path, work)
    wait_for(out, "start vit_pilot_run", proc)
    os.killpg(proc.pid, signal.SIGINT)
    check_stopped(work, out, proc, signal.SIGINT, "pilot")


@pytest.mark.slow
def test_wrong_arguments_are_refused_before_any_work(tmp_path: Path) -> None:
    """Each refused at once with the message that names the fix, OUT_DIR neither made nor touched."""
    work = workspace(tmp_path)
    (tmp_path / "old").mkdir()
    (tmp_path / "old/session.log").write_text("a session before\n")
    cases = [(str(tmp_path / "new"), *REFUSED[i]) for i in (0, 1, 4, 5, 7)]
    cases.append((str(tmp_path / "old"), "9", {}, "is not empty"))
    for out, minutes, env, message in cases:
        proc = subprocess.run(
            ["bash", "tools/gpu_session.sh", out, minutes],
            cwd=work,
            env=session_env(tmp_path, **env),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == gpu.EXIT_USAGE and message in proc.stderr, (minutes, env, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "new").exists() and (tmp_path / "old/session.log").read_text() == "a session before\n"
    base = Path(sys.base_prefix, "bin", "python3")  # the interpreter without this environment's packages
    probe = subprocess.run([str(base), "-c", "import snakemake"], capture_output=True) if base.is_file() else None
    if probe is not None and probe.returncode != 0:
        env = {"PYTHON": str(base), "PYTHONPATH": str(REPO)}
        proc = subprocess.run(
            ["bash", "tools/gpu_session.sh", str(tmp_path / "new"), "9"],
            cwd=work,
            env=session_env(tmp_path, **env),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == gpu.EXIT_USAGE and "`make gpu-kit`" in proc.stderr, proc.stderr[-2000:]
        assert "No module named" not in proc.stderr


@pytest.mark.slow
def test_stop_tree_stops_every_process_below(tmp_path: Path) -> None:
    """A child, a grandchild that left the process group (setsid) and one that ignores SIGTERM: all stopped."""
    script = "sleep 300 & setsid sleep 301 & (trap '' TERM; sleep 302; true) & wait"
    proc = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    deadline = time.time() + 10
    while len(processes.descendants([proc.pid])) < 4 and time.time() < deadline:
        time.sleep(0.05)
    below = processes.descendants([proc.pid])
    assert len(below) >= 4
    assert not processes.stop_tree(proc.pid, grace=1.0)  # the one that ignores SIGTERM needed SIGKILL
    proc.wait(timeout=5)
    assert processes.live(below) == set()


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
