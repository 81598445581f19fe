"""The GPU sessions committed under docs/gpu/ (docs/gpu.md): their page is what their files give, the paper-scale
SLURM request covers what they measured, and the session's epoch plan is checked against what the first one ran."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from conftest import REPO, load_tool

from maxmargin import gpu, gpu_plan

gpu_report = load_tool("gpu_report")
SESSIONS = gpu_report.sessions()
PILOTS = {name: s for name, s in SESSIONS.items() if "pilot" in s}
pytestmark = pytest.mark.skipif(not PILOTS, reason="no GPU session with a pilot committed under docs/gpu/")


def test_the_page_is_what_the_sessions_files_give() -> None:
    assert gpu_report.PAGE.read_text() == gpu_report.render(SESSIONS), "run tools/gpu_report.py"


def test_the_readme_and_the_landing_page_say_what_the_sessions_files_give() -> None:
    """Their status sentence is tools/gpu_report.py's, from the same files as the page (issue 44: the landing page
    said the paper-scale ViT had run on a CPU only)."""
    for path, marks in gpu_report.STATUS_PAGES.items():
        text = path.read_text()
        assert text == gpu_report.with_status(text, marks, SESSIONS), f"{path.name}: run tools/gpu_report.py"
        sentence = text.split(marks[0])[1].split(marks[1])[0]
        assert sentence == gpu_report.status(SESSIONS, marks[2]) and " on one NVIDIA " in sentence
    run = [name for name in SESSIONS if (gpu_report.GPU_DOCS / name / "vit_gpu.md").is_file()][-1]
    assert f"for {SESSIONS[run]['run']['epochs_done']} epochs" in gpu_report.status(SESSIONS, "md")


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
    left = 60 * s["minutes"] - gpu.SAFETY_SECONDS - stages["pilot"]["seconds"] - outside_stages
    planned = gpu_plan.plan_epochs(left, pilot, None, 400, gpu.DEFAULT_RESERVE)
    steady = float(pilot["steady_epoch_seconds"])
    beyond_epochs = stages["run"]["seconds"] - s["run"]["epochs_done"] * steady  # Snakemake, data, epoch 0's eval
    fitted = math.floor((left - gpu.DEFAULT_RESERVE - beyond_epochs) / steady)
    assert fitted - 1 <= planned <= fitted


def test_a_session_records_its_command() -> None:
    gpu_session = load_tool("gpu_session")
    request = gpu.session_request("out", "6.4", {"GPU_SESSION_EPOCHS": "10"}, REPO)
    assert gpu_session.session_command(request) == "GPU_SESSION_EPOCHS=10 bash tools/gpu_session.sh OUT_DIR 6.4"
    assert all("command" in json.loads(p.read_text()) for p in Path(gpu_report.GPU_DOCS).glob("*/session.json"))
