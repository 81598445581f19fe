"""The kit for an offline GPU node and its one command (docs/gpu.md), rehearsed on the CPU.

The session script runs here exactly as on the node, on workflow/config/gpu_rehearsal.yaml (tiny width, a handful
of images, the CPU): every stage through the pipeline's rules, its files flat in OUT_DIR within the node's limits and
each of the run it planned; a run cut at the wall limit keeps the pilot and the epochs done; a signal stops
everything the session started; a wrong argument, setting, folder, kit or config is refused before any work. The
paper's-epochs session (workflow/config/gpu_paper_epochs.yaml, the rehearsal's size over it) runs without a pilot,
with rows, checkpoints and snapshots on cadences, its probe as a stage of its own, and its probe cut (the page then
without the probe's table and panel).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from conftest import REPO, copy_workflow

from maxmargin.files import file_sha256
from maxmargin.gpu import judge, kit, kit_build, plan, processes, record, request, stages, watch

NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # what the node's output folder may bring back
REHEARSAL = "workflow/config/gpu_rehearsal.yaml"
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
PAPER_EPOCHS = "workflow/config/gpu_paper_epochs.yaml"
RUN_FILES = ["vit_gpu_metrics.csv", "vit_gpu.tar.gz"]  # the run's metrics; its page with every file it links
PAGE_MEMBERS = [f"vit_gpu{suffix}" for suffix in (".md", "_fig6.png", "_fig7.png", "_fig7_regime.png")] + [
    f"vit_gpu{suffix}" for suffix in ("_fig7_w_svm.png", "_metrics.csv", "_baseline.csv", "_w_svm.csv", "_claims.csv")
]


def test_kit_carries_what_the_node_lacks() -> None:
    """Snakemake and pandera with their needs, as this environment has them; nothing the node has; no pulp."""
    needed = kit_build.closure(kit_build.ROOTS, kit_build.read_have(None))
    for name in ("snakemake", "pandera", "pydantic-core", "jsonschema", "rpds-py", "snakemake-interface-common"):
        assert name in needed, name
    assert not {"pulp", "torch", "numpy", "pandas", "pyyaml", "timm"} & set(needed)
    assert "cvxopt" not in needed  # only the SVM solvers import it, inside their functions: carried where it fits
    assert "cvxopt" in kit_build.OPTIONAL and "cvxopt" in kit_build.closure(kit_build.OPTIONAL, set(needed))
    assert needed["pydantic-core"][1] == "pydantic <- pandera"


@pytest.mark.parametrize(
    "extra", [[], [REHEARSAL], ["workflow/config/gpu_vitb4.yaml"], [PAPER_EPOCHS], [PAPER_EPOCHS, REHEARSAL]]
)
def test_session_configs_pass_the_snakefiles_checks(extra: list[str]) -> None:
    """paper.yaml, gpu_session.yaml and the rehearsal or the second size, merged as the session merges them."""
    paths = [REPO / "workflow/config/paper.yaml", REPO / "workflow/config/gpu_session.yaml", *(REPO / e for e in extra)]
    config = request.merged_config(paths, REPO / "workflow/config/default.yaml")
    request.check_config(config, paths, SCHEMA)
    assert config["vit"]["data"]["dataset"] == ("digits" if REHEARSAL in extra else "fashion_mnist")
    assert config["vit"]["model"]["embed_dim"] == (16 if REHEARSAL in extra else 768)


def test_a_refused_config_names_the_key_and_the_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("vit:\n  train:\n    batch_size: 0\n")
    paths = [REPO / "workflow/config/gpu_session.yaml", REPO / REHEARSAL, bad]
    with pytest.raises(
        request.UsageError,
        match=r"config is refused .*at vit.train.batch_size\): correct GPU_SESSION_CONFIG.*bad\.yaml",
    ):
        request.check_config(request.merged_config(paths, REPO / "workflow/config/default.yaml"), paths, SCHEMA)


def test_fig6_epochs_spread_over_the_run() -> None:
    """Figure 6's epochs spread over the run, each one with a metrics row (the config refuses any other)."""
    assert plan.fig6_epochs(400) == [0, 100, 200, 300, 400] == plan.fig6_epochs(400, 10)  # paper.yaml's
    assert plan.fig6_epochs(14) == [0, 4, 7, 10, 14]
    assert plan.fig6_epochs(1) == [0, 1]
    assert plan.fig6_epochs(8, 2) == [0, 2, 4, 6, 8]
    assert plan.fig6_epochs(30, 10) == [0, 10, 20, 30]  # 8 and 22 have no row: the nearest rows
    assert plan.fig6_epochs(7, 2) == [0, 2, 4, 7]


def test_cadences_count_rows_checkpoints_and_snapshots() -> None:
    """As the training loop keeps them: a row at 0, every k and the last; a checkpoint after epoch 0, every m before
    the last and the finished one; a snapshot at 0, every s and the last (0: none)."""
    assert plan.row_epochs(400, 10) == list(range(0, 401, 10)) and plan.row_epochs(7, 2) == [0, 2, 4, 6, 7]
    assert plan.checkpoint_count(400, 50) == 9 and plan.checkpoint_count(10, 1) == 11
    assert plan.snapshot_count(400, 400) == 2 and plan.snapshot_count(8, 3) == 4
    assert plan.snapshot_count(400, 0) == 0


def stamp(seconds: float) -> str:
    """A rule log's time stamp (local time, milliseconds) for ``seconds`` since the epoch."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) + f",{round(seconds % 1 * 1000):03d}"


def test_a_run_is_projected_from_its_own_epochs() -> None:
    """The rule log's epoch lines: epoch 0 after 30 s (the evaluation's compilation), epoch 1 33 s later (the
    training's), then one every 0.9 s: the rate over epochs 2-6 is 1/0.9 per second, and 400 epochs end 394 x 0.9 s
    after epoch 6. Lines read back from a checkpoint and lines before ``since`` (an earlier attempt) are left out;
    before three steady epochs there is no projection."""
    t0 = 1_800_000_000.0
    times = [t0 + 30, t0 + 63, *(t0 + 63 + 0.9 * k for k in range(1, 6))]
    lines = [f"{stamp(t0 - 500)} INFO epoch 9: train loss 1.0 acc 0.5 (1.0s)"]  # an earlier attempt's
    lines += [f"{stamp(t0 + 1)} INFO epoch 0: train loss 2.3 acc 0.1 (1.0s) (from the checkpoint)"]
    lines += [f"{stamp(t)} INFO epoch {e}: train loss 1.0 acc 0.5 (0.9s); epochs {e}/400" for e, t in enumerate(times)]
    p = watch.run_projection(lines, 400, since=t0)
    assert (p.done, p.since_done) == (6, 1) and p.rate == pytest.approx(1 / 0.9, rel=1e-3)
    assert p.end == pytest.approx(times[-1] + 394 * 0.9, abs=0.1)
    assert p.by(times[-1] + 9.0) == 16
    assert watch.run_projection(lines[:-2], 400, since=t0).done == 4  # epochs 2-4: three steady ones
    other = [f"{stamp(times[-1] + 1)} INFO epoch 461: train loss 1.0 acc 0.5 (0.9s); epochs 461/500"]  # not this run
    assert watch.run_projection(lines + other, 400, since=t0) == p
    assert watch.run_projection(lines[:-3], 400, since=t0) is None


def test_a_probe_is_projected_from_its_heads() -> None:
    t0 = 1_800_000_000.0
    lines = [
        f"{stamp(t0 + 12)} INFO snapshots of epochs [0, 400]; 32 probe images of fashion_mnist",
        f"{stamp(t0 + 42)} INFO W-ATT-SVM probe: heads 6/24 (25%), 30 s so far; epoch 0 head 5: cosine 0.1 (5.0 s)",
    ]
    started, p = watch.probe_projection(lines, since=t0)
    assert started == pytest.approx(t0 + 12) and (p.done, p.total) == (6, 24)
    assert p.end == pytest.approx(t0 + 12 + 120)
    assert watch.probe_projection(lines[:1], since=t0) == (pytest.approx(t0 + 12), None)


def test_a_finished_runs_training_rate_leaves_out_its_compiled_first_row() -> None:
    times = [
        {"epoch": 0, "train_seconds": 0.0, "epochs": 0, "epoch_seconds": 30.0},
        {"epoch": 10, "train_seconds": 40.0, "epochs": 10, "epoch_seconds": 45.0},
        {"epoch": 20, "train_seconds": 8.0, "epochs": 10, "epoch_seconds": 9.0},
        {"epoch": 25, "train_seconds": 4.0, "epochs": 5, "epoch_seconds": 4.5},
    ]
    assert plan.training_rate({"epoch_times": times, "n_train": 2000}) == (2000 * 15 / 12.0, 15)
    assert plan.training_rate({"epoch_times": times[:2], "n_train": 2000}) is None
    resumed = {"epoch_times": times, "n_train": 2000, "resumed_from_epoch": 10}
    assert plan.training_rate(resumed) == (2000 * 5 / 4.0, 5)


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
    assert plan.plan_epochs(400.0, pilot, None, 400, 45.0) == 15
    assert plan.plan_epochs(400.0, {**pilot, "compile_seconds": None}, None, 400, 45.0) == 13
    assert plan.plan_epochs(400.0, pilot, None, 10, 45.0) == 10  # never past the configured epochs
    assert plan.plan_epochs(400.0, pilot, 3, 400, 45.0) == 3  # GPU_SESSION_EPOCHS


# Each wrong argument or setting, and what its refusal says to do.
REFUSED = [
    ("-1", {}, "MINUTES is '-1': give the allocation's length in minutes"),
    ("nan", {}, "MINUTES is 'nan'"),
    ("nine", {}, "MINUTES is 'nine'"),
    ("0.1", {}, "a number above 0.25"),
    ("9", {"GPU_SESSION_EPOCHS": "0"}, "GPU_SESSION_EPOCHS=0: give a whole number of epochs of at least 1"),
    ("9", {"GPU_SESSION_EPOCHS": "-3"}, "GPU_SESSION_EPOCHS=-3"),
    ("9", {"GPU_SESSION_EPOCHS": "ten"}, "GPU_SESSION_EPOCHS=ten"),
    ("9", {"GPU_SESSION_PILOT": "no"}, "GPU_SESSION_PILOT=no: give 0 (no pilot), 1 (a pilot)"),
    ("9", {"GPU_SESSION_RESERVE": "-5"}, "GPU_SESSION_RESERVE=-5"),
    ("9", {"GPU_SESSION_CONFIG": "workflow/config/nowhere.yaml"}, "names workflow/config/nowhere.yaml, which is no"),
]


@pytest.mark.parametrize(("minutes", "env", "message"), REFUSED)
def test_arguments_are_checked_before_any_work(tmp_path: Path, minutes: str, env: dict, message: str) -> None:
    with pytest.raises(request.UsageError) as err:
        request.session_request(str(tmp_path / "out"), minutes, env, REPO)
    assert message in str(err.value)


def test_epochs_zero_is_no_unset_and_pilot_zero_is_honoured(tmp_path: Path) -> None:
    asked = request.session_request(str(tmp_path), "9", {"GPU_SESSION_EPOCHS": "60", "GPU_SESSION_PILOT": "0"}, REPO)
    assert (asked.epochs, asked.pilot, asked.reserve) == (60, False, request.DEFAULT_RESERVE)
    unset = request.session_request(str(tmp_path), "2.5", {}, REPO)
    assert (unset.epochs, unset.pilot) == (None, None)  # the plan decides: the config's run fits, or a pilot
    assert request.session_request(str(tmp_path), "9", {"GPU_SESSION_PILOT": "0"}, REPO).pilot is False
    with pytest.raises(request.UsageError, match="0 does not mean unset"):
        request.session_request(str(tmp_path), "9", {"GPU_SESSION_EPOCHS": "0"}, REPO)


def test_out_dir_is_new_or_empty_and_taken_by_one_session(tmp_path: Path) -> None:
    """A new folder is taken; a second session into it is refused while the first writes (and after); a folder that
    holds other files is refused and left as it was."""
    out = tmp_path / "new" / "out"
    with request.claim_out_dir(out) as log:
        log.write("first\n")
        with pytest.raises(request.UsageError, match=r"is not empty .*another session.*give a new or empty folder"):
            request.claim_out_dir(out)
    assert (out / "session.log").read_text() == "first\n"
    old = tmp_path / "old"
    old.mkdir()
    (old / "vit_gpu.md").write_text("a session before\n")
    with pytest.raises(request.UsageError, match=r"holds \['vit_gpu.md'\].*rm -r"):
        request.claim_out_dir(old)
    assert sorted(p.name for p in old.iterdir()) == ["vit_gpu.md"]


def test_an_out_dir_that_cannot_be_written_is_refused_with_its_reason(tmp_path: Path) -> None:
    """A folder that cannot be made (here: below a file; a read-only disk or another user's folder alike) is a
    refusal naming the folder and the reason (exit 2 and a message), not a traceback."""
    (tmp_path / "file").write_text("")
    with pytest.raises(request.UsageError, match=r"OUT_DIR .*file/out cannot be written \(Not a directory\): give a"):
        request.claim_out_dir(tmp_path / "file" / "out")


def test_what_comes_back_is_at_most_8_files_of_at_most_16_mib(tmp_path: Path) -> None:
    """A file over 16 MiB is not kept; beyond 6 files (session.log and session.json beside them) none is; an
    archive lists each member with its sha256."""
    asked = request.session_request(str(tmp_path / "out"), "9", {}, REPO)
    s = record.Session(asked, time.time(), request.claim_out_dir(asked.out), REPO)
    big = tmp_path / "big.csv"
    with big.open("wb") as f:
        f.truncate(request.MAX_FILE_BYTES + 1)
    assert not s.keep(big, "big.csv", {})
    small = [tmp_path / f"page{suffix}" for suffix in (".md", "_metrics.csv", "_fig6.png")]
    for path in small:
        path.write_text(f"{path.name}\n")
    assert s.pack(small, "page.tar.gz", {"stage": "figures"})
    assert s.summary["files"]["page.tar.gz"]["members"] == {p.name: file_sha256(p) for p in small}
    assert unpacked(asked.out / "page.tar.gz", s.summary["files"]["page.tar.gz"]["members"])["page.md"] == b"page.md\n"
    kept = [s.keep(small[0], f"table{i}.csv", {}) for i in range(8)]
    assert kept == [True] * 5 + [False] * 3
    s.save()
    s.log_file.close()
    check_out_dir(asked.out)
    assert len(list(asked.out.iterdir())) == request.MAX_FILES


def test_a_missing_kit_is_named(tmp_path: Path) -> None:
    with pytest.raises(request.UsageError, match=r"no kit at .*no_kit.*`make gpu-kit`.*GPU_KIT"):
        kit.kit_wheels(tmp_path / "no_kit", have_snakemake=False)
    assert kit.kit_wheels(tmp_path / "no_kit", have_snakemake=True) == []  # a rehearsal: this Python's Snakemake
    (tmp_path / "kit/wheels").mkdir(parents=True)
    (tmp_path / "kit/wheels/snakemake-9.16.3-py3-none-any.whl").write_bytes(b"")
    assert [p.name for p in kit.kit_wheels(tmp_path / "kit", have_snakemake=False)] == [
        "snakemake-9.16.3-py3-none-any.whl"
    ]


def test_a_file_of_another_run_is_never_brought_back(tmp_path: Path) -> None:
    """The run's table against the plan by its sidecar: the planned settings trained by this session's job; the
    planned settings its job restored, or did not touch (an earlier session's: said so, and how); another epoch
    count (another run: refused, saying how). The files' times play no part."""
    planned = judge.planned_settings(
        request.merged_config([REPO / REHEARSAL], REPO / "workflow/config/default.yaml")["vit"]
    )
    table, sidecar = tmp_path / "vit_metrics.csv", tmp_path / "vit_metrics.json"
    epochs = planned["train"]["epochs"]
    table.write_text("epoch,test_acc\n" + "".join(f"{e},0.5\n" for e in range(epochs + 1)))
    run = {"settings": planned, "fingerprint": "abc", "metrics_table": {"sha256": file_sha256(table)}}
    sidecar.write_text(json.dumps(run))
    trained, restored, idle = watch.JobWork(0), watch.JobWork(None, restored=True), watch.JobWork(None)
    verdict = judge.judge_finished(sidecar, table, planned, trained)
    assert verdict.returned and verdict.record == {
        "fingerprint": "abc",
        "epochs": epochs,
        "made_here": True,
        "status": "this session's run",
        "trained_from": 0,
    }
    assert judge.judge_finished(sidecar, table, planned, watch.JobWork(epochs - 1)).record["made_here"]
    for job, how in ((restored, "restored by this session's job"), (idle, "did not run or trained no epoch")):
        earlier = judge.judge_finished(sidecar, table, planned, job)
        assert earlier.returned and not earlier.record["made_here"] and "earlier session" in earlier.message
        assert how in earlier.record["status"] and "nothing trained here" in earlier.record["status"]
    other = {**planned, "train": {**planned["train"], "epochs": 3000}}
    verdict = judge.judge_finished(sidecar, table, other, trained)
    assert not verdict.returned and f"train.epochs {epochs} (planned 3000)" in verdict.message
    table.write_text("epoch,test_acc\n0,0.5\n")  # not the table its sidecar describes
    assert not judge.judge_finished(sidecar, table, planned, trained).returned
    # a cut run's checkpoint: this session's where its job trained up to the checkpoint's epoch
    state = {"settings": planned, "fingerprint": "abc", "epoch": 5}
    assert judge.judge_checkpoint(state, planned, watch.JobWork(3)).record["made_here"]
    assert not judge.judge_checkpoint(state, planned, watch.JobWork(6)).record["made_here"]  # resumed at 5


def test_what_the_training_job_did_is_read_from_its_own_log() -> None:
    """The job's lines from the stage's start on: a fresh start trained from epoch 0; a resumed run from the epoch
    after the one it resumed at (the rows it read back from its checkpoint are not its own); a restored run and a
    job that wrote nothing (Snakemake had nothing to do: only an earlier job's lines) trained nothing."""
    t0 = 1_800_000_000.0
    earlier = [f"{stamp(t0 - 60)} INFO epoch {e}: train loss 1.0 acc 0.5 (1.0s)" for e in range(3)]
    row = "INFO epoch {}: train loss 1.0 acc 0.5, test acc 0.5 (1.0s)"
    fresh = [f"{stamp(t0 + 2)} INFO data digits: 64 train", f"{stamp(t0 + 3)} {row.format(0)}"]
    read_back = [f"{stamp(t0 + 3)} {row.format(e)} (from the checkpoint)" for e in range(8)]
    resumed = [*read_back, f"{stamp(t0 + 3)} INFO resuming from results/runs/vit/checkpoint.pt at epoch 7"]
    resumed += [f"{stamp(t0 + 4)} {row.format(8)}"]
    restored = [*read_back, f"{stamp(t0 + 3)} INFO restoring the outputs of the finished run in ck.pt: no training"]
    assert watch.job_work(earlier + fresh, t0) == watch.JobWork(0)
    assert watch.job_work(earlier + resumed, t0) == watch.JobWork(8)
    assert watch.job_work(earlier + restored, t0) == watch.JobWork(None, restored=True)
    assert watch.job_work(earlier, t0) == watch.JobWork(None)
    assert watch.job_work(earlier + fresh[:1], t0) == watch.JobWork(None)  # failed before its first row


def test_a_probe_stopped_by_a_signal_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM during the probe's stage: session.json's probe says it was interrupted, after how long (not "not
    started"), and the signal goes on to end the session (exit 128 + N)."""
    asked = request.session_request(str(tmp_path / "out"), "9", {}, REPO)
    s = record.Session(asked, time.time(), request.claim_out_dir(asked.out), REPO)

    def stopped(*args: object, **kwargs: object) -> bool:
        raise processes.Interrupted(signal.SIGTERM)

    monkeypatch.setattr(stages, "stage", stopped)
    with pytest.raises(processes.Interrupted):
        stages.probe_stage(s, [], {"results": str(tmp_path / "results")}, {"fingerprint": "abc"})
    assert s.summary["probe"]["status"] == "interrupted" and s.summary["probe"]["seconds"] >= 0


def test_stages_give_every_config_file_after_one_configfile() -> None:
    """Of several --configfile options Snakemake keeps only the last: one option, every file."""
    configs = [REPO / "workflow/config/paper.yaml", REPO / REHEARSAL]
    cmd = stages.snakemake_cmd(REPO, configs, ["vit_pilot"], 2, [])
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
    (work / "tools").mkdir()
    shutil.copy(REPO / "tools/gpu_session.sh", work / "tools/gpu_session.sh")
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
    assert len(files) <= request.MAX_FILES and all(NAME.match(f) for f in files), files
    assert all((out / f).stat().st_size < 16 * 2**20 for f in files)
    return json.loads((out / "session.json").read_text())


def slowdown() -> float:
    """How many times slower than on an idle machine the rehearsal's processes run now: the wall time of a
    single-threaded start of the libraries every stage imports, over its CPU time (1 on an idle machine; about
    n / 2 where n busy processes share 2 cores), at least 1. The sessions' wall limits are scaled by it
    (:func:`scaled`): on a loaded machine (a CI runner shared with other work) each stage gets the wall time its CPU
    time takes there, so that every assertion stays as it is on an idle one."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", "import torch, pandas, snakemake.api"], check=True, env=env, timeout=600)
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return max(1.0, wall / max(cpu, 1e-3))


def scaled(minutes: float) -> float:
    """A session's wall limit of ``minutes`` on an idle machine, scaled by the machine's :func:`slowdown` now."""
    return round(minutes * slowdown(), 2)


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


def unpacked(archive: Path, members: dict[str, str]) -> dict[str, bytes]:
    """An archive the session packed: its members (flat plain files, each the sha256 session.json records)."""
    with tarfile.open(archive, "r:gz") as tar:
        found = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() and "/" not in m.name}
        assert len(found) == len(tar.getmembers())
    assert {name: hashlib.sha256(data).hexdigest() for name, data in found.items()} == members
    return found


def rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def epochs_of(path: Path) -> list[int]:
    return [int(r["epoch"]) for r in rows(path)]


@pytest.mark.slow
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
def test_a_session_brings_back_only_its_own_run(tmp_path: Path) -> None:
    """A: the whole session, every file of its run. D, the same run again without a pilot: nothing new trained, its
    files said to be an earlier session's. A refused config: nothing run, nothing brought back. B: a long run cut at
    the wall limit: its own epochs. C, the same command again: B's run resumed, never A's table as its own. F, A's
    command again: A's finished checkpoint, kept aside by B's run, taken back and restored without training: A's
    table, marked as an earlier session's. E, the same as B while another Snakemake holds the directory: failed,
    and no checkpoint of before brought back. Each wall limit is scaled by the machine's slowdown (:func:`scaled`)."""
    work = workspace(tmp_path)
    minutes = scaled(3.0)
    out, a, seconds = rehearse(tmp_path, work, "a", minutes, request.EXIT_DONE, GPU_SESSION_PILOT="1")
    assert sorted(p.name for p in out.iterdir()) == sorted(["session.log", "session.json", "vit_pilot.csv", *RUN_FILES])
    assert seconds < 60 * minutes
    assert a["command"].endswith(
        f"GPU_SESSION_PILOT=1 GPU_SESSION_RESERVE=30 bash tools/gpu_session.sh OUT_DIR {minutes:g}"
    )
    assert a["plan"]["fits"] and a["plan"]["pilot"]  # asked for: its run would fit without
    assert {k: (v["exit"], v["cut"]) for k, v in a["stages"].items()} == {
        "pilot": (0, False),
        "run": (0, False),
        "figures": (0, False),
    }
    epochs = a["run"]["epochs_planned"]
    assert a["run"]["epochs_done"] == epochs >= 1 and a["run"]["made_here"] and a["run"]["trained_from"] == 0
    assert epochs_of(out / "vit_gpu_metrics.csv") == list(range(epochs + 1))
    fingerprint = a["run"]["fingerprint"]
    for name in RUN_FILES:  # each file of the run carries its fingerprint and epochs
        assert a["files"][name]["fingerprint"] == fingerprint and a["files"][name]["epochs"] == epochs, name
    assert a["files"]["vit_pilot.csv"]["epochs"] == 2 == int(rows(out / "vit_pilot.csv")[0]["epochs"])
    assert rows(out / "vit_pilot.csv")[0]["dtype"] == "float32" and 0 < a["pilot"]["mfu"] < 1
    members = unpacked(out / "vit_gpu.tar.gz", a["files"]["vit_gpu.tar.gz"]["members"])
    assert (
        sorted(members) == sorted(PAGE_MEMBERS) and members["vit_gpu_metrics.csv"] == (out / RUN_FILES[0]).read_bytes()
    )
    page = members["vit_gpu.md"].decode()
    assert all(f"({name})" in page for name in PAGE_MEMBERS[1:])  # every file the page links came with it
    assert "vit_gpu_fig6.png" in page and f", {epochs} epochs" in page
    assert f"linear baseline {float(a['baseline']['test_acc']):.3f}" in page  # its table stays, its row comes back
    # the page's rebuild command names every config file after one --configfile, the session's written ones kept
    command = re.search(r"from the tables of `(snakemake [^`]*)`", page).group(1)
    assert command.count("--configfile") == 1 and REHEARSAL in command and "epochs.yaml" in command
    assert all((work / f).is_file() for f in command.split("--configfile ")[1].split(" --")[0].split())

    again = {"GPU_SESSION_EPOCHS": str(epochs), "GPU_SESSION_PILOT": "0"}
    out, d, _ = rehearse(tmp_path, work, "d", scaled(1.0), request.EXIT_DONE, **again)
    assert "pilot" not in d["stages"] and d["stages"]["run"]["nothing_to_be_done"]
    assert d["run"]["fingerprint"] == fingerprint and not d["run"]["made_here"]
    assert "did not run" in d["run"]["status"] and not d["files"]["vit_gpu_metrics.csv"]["made_here"]
    assert (out / "vit_gpu_metrics.csv").read_bytes() == (tmp_path / "a/vit_gpu_metrics.csv").read_bytes()

    (tmp_path / "bad.yaml").write_text("vit:\n  train:\n    batch_size: 0\n")
    bad = {"GPU_SESSION_CONFIG": f"{REHEARSAL}:{tmp_path / 'bad.yaml'}", "GPU_SESSION_EPOCHS": "3"}
    out, refused, _ = rehearse(tmp_path, work, "bad", 1.0, request.EXIT_USAGE, GPU_SESSION_PILOT="0", **bad)
    assert sorted(p.name for p in out.iterdir()) == ["session.json", "session.log"]
    assert "batch_size" in refused["refused"] and refused["stages"] == {} and refused["files"] == {}

    cut = {"GPU_SESSION_EPOCHS": "100000", "GPU_SESSION_PILOT": "0", "GPU_SESSION_RESERVE": "4"}
    out, b, _ = rehearse(tmp_path, work, "b", scaled(0.75), request.EXIT_CUT, **cut)
    assert b["stages"]["run"]["cut"] and "stopping it at the wall limit" in (out / "session.log").read_text()
    done_b = b["run"]["epochs_done"]
    assert done_b >= 1 and b["run"]["made_here"] and b["run"]["fingerprint"] != fingerprint
    assert sorted(b["files"]) == ["vit_gpu_metrics.csv"] and epochs_of(out / "vit_gpu_metrics.csv")[-1] == done_b

    out, c, _ = rehearse(tmp_path, work, "c", scaled(0.75), request.EXIT_CUT, **cut)
    assert not c["stages"]["run"]["nothing_to_be_done"] and c["run"]["fingerprint"] == b["run"]["fingerprint"]
    assert c["run"]["epochs_done"] > done_b and epochs_of(out / "vit_gpu_metrics.csv")[-1] == c["run"]["epochs_done"]
    assert c["run"]["made_here"] and c["run"]["trained_from"] == done_b + 1  # its own epochs: those after B's
    assert rows(out / "vit_gpu_metrics.csv")[: done_b + 1] == rows(tmp_path / "b/vit_gpu_metrics.csv")  # B's, resumed

    # F: A's run again. B's job kept A's finished checkpoint aside; F's job takes it back and restores A's outputs
    out, f, _ = rehearse(tmp_path, work, "f", scaled(2.0), request.EXIT_DONE, **again)
    assert not f["stages"]["run"]["nothing_to_be_done"] and f["run"]["fingerprint"] == fingerprint
    assert not f["run"]["made_here"] and "restored by this session's job" in f["run"]["status"]
    assert not f["files"]["vit_gpu_metrics.csv"]["made_here"] and not f["files"]["vit_gpu.tar.gz"]["made_here"]
    assert (out / "vit_gpu_metrics.csv").read_bytes() == (tmp_path / "a/vit_gpu_metrics.csv").read_bytes()

    # E, the same command as B while another Snakemake holds the run's outputs: the stage fails, nothing comes back
    held = "results/gpu_rehearsal/runs/vit/vit_metrics.csv"
    (work / ".snakemake/locks").mkdir(exist_ok=True)
    (work / ".snakemake/locks/0.output.lock").write_text(f"{held}\n{work / held}\n")
    out, e, _ = rehearse(tmp_path, work, "e", scaled(0.6), request.EXIT_FAILED, **cut)
    assert e["stages"]["run"]["exit"] != 0 and not e["stages"]["run"]["cut"] and e["files"] == {}
    log = (out / "session.log").read_text()
    assert "cannot be locked" in log and "epochs done" not in log


def start(tmp_path: Path, work: Path, minutes: float = 3.0, **env: str) -> tuple[subprocess.Popen, Path]:
    """A session started in a process group of its own (as a terminal would), into OUT_DIR ``out``."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        ["bash", "tools/gpu_session.sh", str(out), str(minutes)],
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


def trained_epoch(log: Path) -> int:
    """The last epoch a training job's rule log says it trained itself (-1: none yet); rows read back from a
    checkpoint are not its own."""
    own = [line for line in log.read_text().splitlines() if "(from the checkpoint)" not in line]
    return max((int(m[1]) for line in own if (m := re.search(r" INFO epoch (\d+): train loss ", line))), default=-1)


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
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
def test_a_failed_compile_runs_again_without_it_and_sigterm_stops_the_run(tmp_path: Path) -> None:
    """torch.compile fails (no C++ compiler for Inductor): the pilot runs again without it, and the run after it.
    SIGTERM to the session during the run, once it has trained two epochs, stops its Snakemake and the training job;
    the epochs it finished come back from its checkpoint, and the session exits 143."""
    work = workspace(tmp_path)
    (tmp_path / "compile.yaml").write_text("vit:\n  train:\n    compile: true\n")
    proc, out = start(
        tmp_path,
        work,
        scaled(3.0),
        GPU_SESSION_CONFIG=f"{REHEARSAL}:{tmp_path / 'compile.yaml'}",
        GPU_SESSION_EPOCHS="100000",
        CXX="/bin/false",
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
    )
    wait_for(out, "start vit_train", proc)
    job_log = work / "results/gpu_rehearsal/logs/vit_train/vit.log"
    deadline = time.time() + 600
    while not (job_log.is_file() and trained_epoch(job_log) >= 2):
        assert proc.poll() is None and time.time() < deadline, f"no epoch 2 trained: {proc.communicate()}"
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    summary = check_stopped(work, out, proc, signal.SIGTERM, "run")
    ran = {name: (stage["exit"] == 0, stage["cut"]) for name, stage in summary["stages"].items()}
    assert ran == {"pilot": (False, False), "pilot_eager": (True, False), "run": (False, True)}
    assert "InvalidCxxCompiler" in (out / "session.log").read_text()
    assert rows(out / "vit_pilot.csv")[0]["compiled"] == "False"
    # the epochs the stopped run finished come back, read from its checkpoint, as a cut run's do
    done = summary["run"]["epochs_done"]
    assert done >= 2 and summary["run"]["made_here"] and summary["files"]["vit_gpu_metrics.csv"]["made_here"]
    assert epochs_of(out / "vit_gpu_metrics.csv") == list(range(done + 1))


@pytest.mark.slow
def test_sigint_to_the_session_group_stops_the_pilot_and_the_probe(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the session's process group) during the pilot, the device probe running beside it."""
    work = workspace(tmp_path)
    proc, out = start(tmp_path, work, GPU_SESSION_PILOT="1")
    wait_for(out, "start vit_pilot_run", proc)
    os.killpg(proc.pid, signal.SIGINT)
    check_stopped(work, out, proc, signal.SIGINT, "pilot")


@pytest.mark.slow
def test_wrong_arguments_are_refused_before_any_work(tmp_path: Path) -> None:
    """Each refused at once with the message that names the fix, OUT_DIR neither made nor touched."""
    work = workspace(tmp_path)
    (tmp_path / "old").mkdir()
    (tmp_path / "old/session.log").write_text("a session before\n")
    cases = [(str(tmp_path / "new"), *REFUSED[i]) for i in (0, 1, 4, 5, 7)]  # 7: GPU_SESSION_PILOT=no
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
        assert proc.returncode == request.EXIT_USAGE and message in proc.stderr, (minutes, env, proc.stderr[-2000:])
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
        assert proc.returncode == request.EXIT_USAGE and "`make gpu-kit`" in proc.stderr, proc.stderr[-2000:]
        assert "No module named" not in proc.stderr


# The paper's-epochs session at the rehearsal's size: 8 epochs, a row every 2, a checkpoint every 3, a snapshot every
# 4 (epochs 0, 4 and 8), the probe on few images and no nuclear norm, as gpu_paper_epochs.yaml has it.
CADENCES = """vit:
  train: {epochs: 8, eval_every: 2, checkpoint_every: 3, snapshot_every: 4}
  w_svm: {images: 8, nuclear_images: 0}
"""
SLOW_PROBE = "vit:\n  w_svm: {images: 16, null_draws: 5000, shuffles: 5000}\n"  # minutes a head on this CPU


@pytest.mark.slow
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
def test_the_paper_epochs_session_runs_without_a_pilot_and_outlives_a_cut_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """P: gpu_paper_epochs.yaml's session at the rehearsal's size, as on the node (no GPU_SESSION_* but the config):
    its run fits by the measured figures, so no pilot; the run's own epochs projected; the probe as a stage of its
    own on the snapshots; the page packed with every file it links, which tools/gpu_report.py unpacks. Q: the same
    with a probe that cannot finish: cut at its limit, the page comes back all the same (exit 0), without the probe's
    table and panel (`vit.docs_w_svm: false`, a config file the session writes), saying why; nothing trained again.
    The wall limits (and Q's page reserve) are scaled by the machine's slowdown (:func:`scaled`)."""
    work, docs = workspace(tmp_path), "vit_gpu_paper_epochs"
    (tmp_path / "cadences.yaml").write_text(CADENCES)
    configs = f"{PAPER_EPOCHS}:{REHEARSAL}:{tmp_path / 'cadences.yaml'}"
    minutes = scaled(2.0)
    out, p, _ = rehearse(tmp_path, work, "p", minutes, request.EXIT_DONE, GPU_SESSION_CONFIG=configs)
    assert p["plan"]["fits"] and not p["plan"]["pilot"] and p["plan"]["epochs"] == 8
    # it fits 2 minutes by the measured figures, what the plan says with MINUTES 2 (the time left 60 s a minute less)
    assert p["plan"]["run_seconds"] + 30 <= p["plan"]["left"] - 60 * (minutes - 2.0)
    assert {k: (v["exit"], v["cut"]) for k, v in p["stages"].items()} == {
        "run": (0, False),
        "probe": (0, False),
        "figures": (0, False),
    }
    files = ["session.json", "session.log", f"{docs}.tar.gz", f"{docs}_metrics.csv", "vit_w_svm.csv"]
    assert sorted(q.name for q in out.iterdir()) == files
    assert epochs_of(out / f"{docs}_metrics.csv") == [0, 2, 4, 6, 8]  # a row every 2 epochs and the last
    assert sorted({int(r["epoch"]) for r in rows(out / "vit_w_svm.csv")}) == [0, 4, 8]  # a snapshot every 4
    assert p["probe"]["status"] == "done" and p["probe"]["heads_done"] == p["probe"]["heads"] == 3 * 2
    assert p["run"]["projection"]["epoch"] == 8 and p["run"]["projection"]["fits"]
    log = (out / "session.log").read_text()
    assert "plan: no pilot (the plan)" in log and "s an epoch over epochs 2-" in log
    members = unpacked(out / f"{docs}.tar.gz", p["files"][f"{docs}.tar.gz"]["members"])
    assert sorted(members) == sorted(name.replace("vit_gpu", docs) for name in PAGE_MEMBERS)
    assert "## Each head against its max-margin solution" in members[f"{docs}.md"].decode()

    (tmp_path / "slow_probe.yaml").write_text(SLOW_PROBE)
    factor = slowdown()  # the page's reserve too: its stage takes the machine's time
    slow = {
        "GPU_SESSION_CONFIG": f"{configs}:{tmp_path / 'slow_probe.yaml'}",
        "GPU_SESSION_RESERVE": f"{20 * factor:.0f}",
    }
    out, q, _ = rehearse(tmp_path, work, "q", round(1.4 * factor, 2), request.EXIT_DONE, **slow)
    assert q["stages"]["run"]["nothing_to_be_done"] and not q["run"]["made_here"]  # P's run
    assert q["stages"]["probe"]["cut"] and q["probe"]["status"] == "cut"
    assert q["stages"]["figures"]["exit"] == 0 and not q["stages"]["figures"]["cut"]
    assert "since the probe was cut" in q["probe"]["page"]
    assert "/docs_w_svm.yaml sets vit.docs_w_svm: false" in q["probe"]["page"]
    files = ["session.json", "session.log", f"{docs}.tar.gz", f"{docs}_metrics.csv"]
    assert sorted(f.name for f in out.iterdir()) == files  # no vit_w_svm.csv: the cut probe's table stays
    assert f"page: {q['probe']['page']}" in (out / "session.log").read_text()
    members = unpacked(out / f"{docs}.tar.gz", q["files"][f"{docs}.tar.gz"]["members"])
    probe_files = ("_fig7_w_svm.png", "_w_svm.csv")
    assert sorted(members) == sorted(n.replace("vit_gpu", docs) for n in PAGE_MEMBERS if not n.endswith(probe_files))
    assert members[f"{docs}_metrics.csv"] == (out / f"{docs}_metrics.csv").read_bytes()  # P's run, not trained again
    text = members[f"{docs}.md"].decode()
    assert "rule vit_probe did not run for it (`vit.docs_w_svm: false`" in text  # why it has no W-ATT-SVM part
    assert "## Each head against its max-margin solution" not in text and f"{docs}_w_svm" not in text
    assert set(stages.LINK.findall(text)) == set(members) - {f"{docs}.md"}  # it links what came with it
    command = re.search(r"from the tables of `(snakemake [^`]*)`", text).group(1)
    assert "docs_w_svm.yaml" in command  # its rebuild command names the config file the session wrote
    claims = {r["claim_id"]: r["verdict"] for r in csv.DictReader(io.StringIO(members[f"{docs}_claims.csv"].decode()))}
    assert {c: v for c, v in claims.items() if c.startswith("vit_w_svm")} == dict.fromkeys(
        ("vit_w_svm_direction", "vit_w_svm_specific", "vit_w_svm_nuclear"), "not run"
    )

    # what came back, as it is committed under docs/gpu/<session>/: the report unpacks both pages and reads them
    from maxmargin.docs import gpu_report

    monkeypatch.setattr(gpu_report, "GPU_DOCS", tmp_path / "docs_gpu")
    for name in ("p", "q"):
        shutil.copytree(tmp_path / name, tmp_path / "docs_gpu" / name)
    found = gpu_report.sessions()
    assert [line for n, s in found.items() for line in gpu_report.unpack(tmp_path / "docs_gpu" / n, s, False)] == []
    assert gpu_report.unpack(tmp_path / "docs_gpu/p", found["p"], check=True) == []
    page = gpu_report.render(found)
    assert "## The run (p)" in page and "The W-ATT-SVM probe ran on the node" in page  # the page with its probe
    assert f"[p/{docs}.md](p/{docs}.md)" in page and (tmp_path / f"docs_gpu/q/{docs}.md").read_text() == text
    assert "### q: 8 epochs, the page without the W-ATT-SVM probe" in page and f"[q/{docs}.md](q/{docs}.md)" in page
    assert "The W-ATT-SVM probe was cut after" in page and "made without its table and panel" in page


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
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
def test_kit_builds_and_travels_under_64_mib(tmp_path: Path) -> None:
    """`make gpu-kit` into a temporary folder (wheels already in gpu_kit/ are reused, the rest fetched by pip)."""
    if not Path(kit_build.fashion_source()).is_dir():
        pytest.skip("Fashion-MNIST is not installed (Debian: dataset-fashion-mnist)")
    folder = tmp_path / "kit"
    if (REPO / "gpu_kit/wheels").is_dir():
        shutil.copytree(REPO / "gpu_kit/wheels", folder / "wheels")
    proc = subprocess.run(
        [sys.executable, "-m", "maxmargin.gpu.kit_build", "--kit", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0 and "pip could not fetch" in proc.stdout + proc.stderr:
        pytest.skip(f"pip cannot reach an index here: {(proc.stdout + proc.stderr).strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    travel = re.search(r"travel size ([0-9.]+) MiB", proc.stdout)
    assert travel and float(travel.group(1)) < 64
    assert "bash tools/gpu_session.sh OUT_DIR 9" in proc.stdout
    wheels = [kit_build.wheel_name(p) for p in (folder / "wheels").glob("*.whl")]
    assert len(wheels) == len(set(wheels)) and "snakemake" in wheels and "pulp" not in wheels
    assert len(list((folder / "fashion-mnist").glob("*-ubyte.gz"))) == 4
