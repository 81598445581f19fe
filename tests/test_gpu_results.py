"""The GPU sessions committed under docs/gpu/ (docs/gpu.md): their page is what their files give, the paper-scale
SLURM request covers what they measured, and the session's epoch plan is checked against what the first one ran."""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO

from maxmargin.docs import gpu_report, gpu_status
from maxmargin.gpu import plan, request

SESSIONS = gpu_report.sessions()
PILOTS = {name: s for name, s in SESSIONS.items() if "pilot" in s}
pytestmark = pytest.mark.skipif(not PILOTS, reason="no GPU session with a pilot committed under docs/gpu/")


def test_the_page_is_what_the_sessions_files_give() -> None:
    assert gpu_report.PAGE.read_text() == gpu_report.render(SESSIONS), "run tools/gpu_report.py"


def test_the_readme_and_the_landing_page_say_what_the_sessions_files_give() -> None:
    """Their status sentence is tools/gpu_report.py's, from the same files as the page: what the README says has run
    where is what the sessions brought back, never a sentence typed in that a new session makes stale."""
    for path, marks in gpu_status.STATUS_PAGES.items():
        text = path.read_text()
        written = gpu_status.with_status(text, marks, SESSIONS, gpu_report.GPU_DOCS)
        assert text == written, f"{path.name}: run tools/gpu_report.py"
        sentence = text.split(marks[0])[1].split(marks[1])[0]
        assert sentence == gpu_status.status(SESSIONS, marks[2], gpu_report.GPU_DOCS) and " on one NVIDIA " in sentence
    run = [name for name, s in SESSIONS.items() if gpu_report.page_file(name, s).is_file()][-1]
    done, sentence = SESSIONS[run]["run"]["epochs_done"], gpu_status.status(SESSIONS, "md", gpu_report.GPU_DOCS)
    assert (f"for the paper's {done} epochs" if done == 400 else f"for {done} epochs (the paper trains") in sentence
    data = pd.read_csv(gpu_report.metrics_file(run, SESSIONS[run]))
    assert f" on one {SESSIONS[run]['device']['name']} " in sentence and "instead of CIFAR-10" in sentence
    assert data["dataset"].iloc[-1] == "fashion_mnist"
    # the number of training images is the run's own (its baseline row where it travelled, else its page)
    n_train = SESSIONS[run].get("baseline", {}).get("n_train")
    assert n_train is None or f"on {int(n_train):,} Fashion-MNIST training images" in sentence


def test_the_runs_table_and_speed_are_the_sessions_numbers() -> None:
    """The page's speed rows are session.json's rates and MFUs; the runs' rows end where their metrics end."""
    page = gpu_report.PAGE.read_text()
    for name, s in SESSIONS.items():
        if "images_per_s" in s.get("run", {}):
            run = s["run"]
            assert (
                f"| {name} | {s['device']['name']} | run, its steps alone over its last {run['rate_epochs']} epochs"
                f" | {run['images_per_s']:,.0f} | {100 * run['mfu']:.1f} % " in page
            )
        if gpu_report.page_file(name, s).is_file():
            last = pd.read_csv(gpu_report.metrics_file(name, s)).iloc[-1]
            assert f"| {s['run']['epochs_done']} | " in page and f"{last.train_loss:.3f} (lowest" in page


def test_every_file_the_page_links_is_committed() -> None:
    text = gpu_report.PAGE.read_text()
    links = [part.split(")")[0] for part in text.split("](")[1:]]
    local = [link.split("#")[0] for link in links if not link.startswith("http")]
    assert local and all((gpu_report.GPU_DOCS / link).is_file() for link in local), local


def test_every_file_a_session_page_links_is_committed() -> None:
    """The pages the sessions brought back (docs/gpu/<session>/*.md) link only files that came back: one it names
    that stayed on the node is named without a link, and says so."""
    for page in gpu_report.GPU_DOCS.glob("*/*.md"):
        links = [part.split(")")[0].split("#")[0] for part in page.read_text().split("](")[1:]]
        missing = [link for link in links if not link.startswith("http") and not (page.parent / link).is_file()]
        assert not missing, f"{page}: {missing}"


def test_the_paper_scale_slurm_request_covers_the_measured_run() -> None:
    """paper.yaml's runtime holds its epochs at the slowest pilot's steady epoch, with a margin of a fifth."""
    vit = yaml.safe_load((REPO / "workflow/config/paper.yaml").read_text())["vit"]
    steady = max(float(s["pilot"]["steady_epoch_seconds"]) for s in PILOTS.values())
    assert vit["resources"]["runtime"] * 60 >= 1.2 * vit["train"]["epochs"] * steady
    peak_mb = max(float(s["pilot"]["peak_memory_mb"]) for s in PILOTS.values())
    assert peak_mb < max(s["device"]["total_memory_mb"] for s in PILOTS.values())


@pytest.mark.parametrize("name", sorted(PILOTS))
def test_the_epoch_plan_fits_what_the_session_then_ran(name: str) -> None:
    """Replayed on a committed session: at the run's measured cost, the epochs planned when its pilot ended end before
    the figures' reserve, and at most one more would have fitted (the first session's plan left two unused)."""
    s = SESSIONS[name]
    pilot, stages = s["pilot"], s["stages"]
    outside_stages = s["seconds"] - sum(stage["seconds"] for stage in stages.values())
    left = 60 * s["minutes"] - request.SAFETY_SECONDS - stages["pilot"]["seconds"] - outside_stages
    planned = plan.plan_epochs(left, pilot, None, 400, request.DEFAULT_RESERVE)
    steady = float(pilot["steady_epoch_seconds"])
    beyond_epochs = stages["run"]["seconds"] - s["run"]["epochs_done"] * steady  # Snakemake, data, epoch 0's eval
    fitted = math.floor((left - request.DEFAULT_RESERVE - beyond_epochs) / steady)
    assert fitted - 1 <= planned <= fitted


def test_a_session_records_its_command() -> None:
    asked = request.session_request("out", "6.4", {"GPU_SESSION_EPOCHS": "10"}, REPO)
    assert request.session_command(asked) == "GPU_SESSION_EPOCHS=10 bash tools/gpu_session.sh OUT_DIR 6.4"
    assert all("command" in json.loads(p.read_text()) for p in Path(gpu_report.GPU_DOCS).glob("*/session.json"))


SESSION1 = gpu_report.GPU_DOCS / "session1"
PAPER_EPOCHS = REPO / "workflow/config/gpu_paper_epochs.yaml"


def session_configs(*extra: str) -> dict:
    paths = [REPO / "workflow/config/paper.yaml", REPO / "workflow/config/gpu_session.yaml", *(REPO / e for e in extra)]
    return request.merged_config(paths, REPO / "workflow/config/default.yaml")


def clock(text: str, pattern: str) -> int:
    """Seconds of the day of the first session.log line matching ``pattern`` (Snakemake's HH:MM:SS)."""
    h, m, s = re.search(rf"^(\d\d):(\d\d):(\d\d) {pattern}", text, re.MULTILINE).groups()
    return 3600 * int(h) + 60 * int(m) + int(s)


def test_the_measured_figures_are_the_first_sessions() -> None:
    """plan.MEASURED, the inputs of every plan made without a pilot, read again from docs/gpu/session1/ (the
    page's stage also from session2, the model's size from session2's page)."""
    m, s1 = plan.MEASURED, SESSIONS["session1"]
    log = (SESSION1 / "session.log").read_text()
    pilot, device = s1["pilot"], s1["device"]
    run = {int(e): float(t) for e, t in re.findall(r"\[vit_train\] epoch (\d+): .*?\(([0-9.]+)s\)", log)}
    assert m.card == device["name"] and m.source == "docs/gpu/session1"
    assert m.images_per_s == float(pilot["images_per_s"]) and m.gflops_per_image == device["gflops_per_image_train"]
    assert m.train_compile_s == pilot["compile_seconds"]
    assert m.eval_compile_s == pytest.approx(pilot["epoch_times"]["0"] - run[0], abs=0.05)
    last = max(run)  # the last epoch writes no checkpoint: its training and its row
    forward = 11_001 / (run[last] - 60_000 / m.images_per_s)  # 10,000 test and 1,000 + 1 probe images
    assert m.forward_images_per_s == pytest.approx(forward, rel=0.01)
    assert m.checkpoint_s == pytest.approx(sum(run[e] for e in range(2, last)) / (last - 2) - run[last], abs=0.005)
    assert m.data_s == float(re.search(r"done  vit_data block=vit in (\d+) s", log)[1])
    assert m.stage_start_s == clock(log, r"\d+ jobs to run: vit_baseline") - clock(log, "done  vit_pilot in")
    assert m.job_start_s == pytest.approx(
        clock(log, r"\[vit_pilot_run\] epoch 0") - clock(log, "start vit_pilot_run") - pilot["epoch_times"]["0"]
    )
    assert m.job_end_s == clock(log, "done  vit_train") - clock(log, rf"\[vit_train\] epoch {last}:")
    assert m.table_s == float(re.search(r"done  vit_metrics_table in (\d+) s", log)[1])
    assert m.page_s == round(max(s["stages"]["figures"]["seconds"] for s in SESSIONS.values()), 1)
    assert m.session_start_s == float(re.search(r"\[gpu-session +([0-9.]+)s\] \$ ", log)[1])
    page = (gpu_report.GPU_DOCS / "session2/vit_gpu.md").read_text()
    assert f"{m.parameters:,} parameters" in page


def test_the_paper_epochs_run_fits_nine_minutes_with_the_margin_its_header_states() -> None:
    """gpu_paper_epochs.yaml's arithmetic is plan.project_run's on the measured figures, line by line, and its
    sum leaves the margin it states before the session's own limit (9 minutes less SAFETY_SECONDS); with the page's
    reserve it fits, so the session runs it without a pilot."""
    cost = plan.project_run(session_configs(PAPER_EPOCHS.relative_to(REPO).as_posix())["vit"])
    p, limit = cost.parts, 60 * 9 - request.SAFETY_SECONDS
    lines = [
        cost.session_start,
        p["Snakemake's start"] + p["the data"] + p["the job's start"],
        p["epoch 0"],
        p["compilation"],
        p["training"],
        p["rows"],
        p["rows' training passes"],
        p["checkpoints"],
        p["snapshots"],
        p["the job's end and the table"],
        cost.page,
    ]
    assert sum(lines) == pytest.approx(cost.total)
    header = "".join(line for line in PAPER_EPOCHS.read_text().splitlines(keepends=True) if line.startswith("#"))
    stated = [int(n) for n in re.findall(r"^#   .*\s(\d+) s$", header, re.MULTILINE)]
    assert stated == [round(x) for x in lines], "workflow/config/gpu_paper_epochs.yaml's arithmetic is stale"
    spare = limit - cost.total
    assert f"in all about {cost.total:.0f} s of the {limit:.0f} s the session has" in header
    assert f"#   {spare:.0f} s to spare" in header and spare >= 45
    assert cost.run_seconds + request.DEFAULT_RESERVE <= limit - cost.session_start  # no pilot: its run fits
    n_train = session_configs(PAPER_EPOCHS.relative_to(REPO).as_posix())["vit"]["data"]["n_train"]
    assert cost.parts["training"] == pytest.approx(400 * n_train / plan.MEASURED.images_per_s)


@pytest.mark.parametrize("extra", [[], ["workflow/config/gpu_vitb4.yaml"]])
def test_the_sessions_that_plan_by_a_pilot_do_not_fit_by_the_measured_figures(extra: list[str]) -> None:
    """The 60,000-image sessions (400 epochs take an hour or more): a pilot plans the epochs that fit."""
    cost = plan.project_run(session_configs(*extra)["vit"])
    assert cost.run_seconds > 3000 and cost.run_seconds + request.DEFAULT_RESERVE > 60 * 9


def test_the_flop_count_is_the_benchmarks() -> None:
    """maxmargin.gpu.plan's count (no torch at the session's start) is benchmarks/vit_benchmark.py's formula, and
    within 0.1 % of the FLOPs the first session counted for ViT-B/2."""
    model = session_configs()["vit"]["model"]
    assert plan.analytic_flops(model) == pytest.approx(plan.MEASURED.gflops_per_image * 1e9, rel=1e-3)
    assert plan.MEASURED.model == {k: model[k] for k in plan.MEASURED.model}  # paper.yaml's ViT-B/2


def test_the_report_unpacks_a_sessions_archive_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's page comes back as <docs>.tar.gz, each member listed with its sha256 in session.json: unpacked
    beside it, read by the page; a member whose bytes differ from the list, or whose name is a path, is refused."""
    monkeypatch.setattr(gpu_report, "GPU_DOCS", tmp_path)
    folder = tmp_path / "session9"
    folder.mkdir()
    members = {"vit_x.md": b"# page\n", "vit_x_fig6.png": b"png", "../vit_x_claims.csv": b"claim_id\n"}
    with tarfile.open(folder / "vit_x.tar.gz", "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    record = {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}
    record["vit_x_fig6.png"] = hashlib.sha256(b"another png").hexdigest()
    session = {"docs": "vit_x", "files": {"vit_x.tar.gz": {"stage": "figures", "members": record}}}
    (folder / "session.json").write_text(json.dumps(session))
    problems = gpu_report.unpack(folder, session, check=True)
    assert any("vit_x.md is not vit_x.tar.gz's member" in p for p in problems)
    problems = gpu_report.unpack(folder, session, check=False)
    assert (folder / "vit_x.md").read_bytes() == b"# page\n"
    assert not (folder / "vit_x_fig6.png").exists() and not (tmp_path / "vit_x_claims.csv").exists()
    assert any("vit_x_fig6.png is not the file the session recorded" in p for p in problems)
    assert any("no plain member '../vit_x_claims.csv'" in p for p in problems)
    assert gpu_report.page_file("session9", session) == folder / "vit_x.md"


def test_a_page_without_the_probe_says_why() -> None:
    """A session whose probe did not finish (not started, cut or failed) brought its page back without the probe's
    table and panel (vit.docs_w_svm: false): the report says why, and shows another session's page as the run."""
    reason = "12 s left before the page's 30 s, less than the probe's start alone (about 20 s)"
    sessions = {
        "not started": {"status": "not started", "reason": reason, "cvxopt": True},
        "cut": {"status": "cut", "seconds": 43.3, "heads_done": 2, "heads": 6, "cvxopt": True},
        "failed": {"status": "failed", "seconds": 9.0, "cvxopt": False},
    }
    for status, probe in sessions.items():
        line = gpu_report.probe_line("s", {"probe": probe})
        assert line.startswith(f"The W-ATT-SVM probe was {status}") and gpu_report.without_w_svm({"probe": probe})
        assert "made without its table and panel (`vit.docs_w_svm: false`)" in line and '"not run"' in line
    assert reason in gpu_report.probe_line("s", {"probe": sessions["not started"]})
    assert ", 2 of 6 heads done" in gpu_report.probe_line("s", {"probe": sessions["cut"]})
    assert "cvxopt was not on the node" in gpu_report.probe_line("s", {"probe": sessions["failed"]})
    assert not gpu_report.without_w_svm({"probe": {"status": "done"}}) and not gpu_report.without_w_svm({})
