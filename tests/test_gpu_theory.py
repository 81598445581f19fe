"""The theory's GPU session (workflow/config/gpu_paper_epochs_theory.yaml, docs/gpu.md): the probe's and the ray test's
price (maxmargin/gpu/plan_probe.py) read from what session3 measured, the config's arithmetic against it, what the
session logs before anything starts, and the whole command rehearsed on the CPU at the rehearsal's size."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from conftest import REPO
from test_gpu_kit import PAPER_EPOCHS, REHEARSAL, rehearse, scaled, unpacked, workspace

from maxmargin.claims import sessions
from maxmargin.gpu import plan, plan_probe, request

THEORY = "workflow/config/gpu_paper_epochs_theory.yaml"
SESSION3 = REPO / "docs/gpu/session3"


def session_config(*extra: str) -> dict:
    paths = [REPO / "workflow/config/paper.yaml", REPO / "workflow/config/gpu_session.yaml", *(REPO / e for e in extra)]
    return request.merged_config(paths, REPO / "workflow/config/default.yaml")


def test_the_probes_figures_are_session3s() -> None:
    """plan_probe.PROBE_MEASURED read again from docs/gpu/session3/: its table (snapshots, heads, images, each head's
    seconds and solves), its log (the heads' progress bar at its end) and session.json (the card, the stage)."""
    m, s3 = plan_probe.PROBE_MEASURED, json.loads((SESSION3 / "session.json").read_text())
    table = pd.read_csv(SESSION3 / "vit_w_svm.csv")
    vit = sessions.session_config(SESSION3, REPO)["vit"]  # the configs session3 ran, its epochs
    assert m.source == "docs/gpu/session3" and m.card == s3["device"]["name"]
    assert (m.snapshots, m.heads, m.images) == (table.epoch.nunique(), table["head"].nunique(), table.n_images[0])
    assert m.solves == 1 + vit["w_svm"]["null_draws"] + table.null_shuffled_drawn.max()
    assert m.head_s == round(table.seconds.mean(), 2)
    bar = re.findall(
        r"W-ATT-SVM probe: heads (\d+)/\1 \(100%\), (\d+) s so far", (SESSION3 / "session.log").read_text()
    )
    assert bar == [(str(m.snapshots * m.heads), str(round(m.bar_s)))]
    assert m.stage_s == round(s3["stages"]["probe"]["seconds"], 1)
    # priced again, session3's own probe costs what its stage took
    assert plan_probe.project_probe(vit).seconds == pytest.approx(m.stage_s, abs=0.5)


def test_a_solve_grows_from_session3s_as_the_cpus_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """At session3's images a solve is its own; elsewhere scaled by the CPU's growth, log-log between the measured
    counts and on the last slope beyond them."""
    monkeypatch.setattr(plan_probe, "SOLVE_GROWTH", {32: 1.0, 64: 4.0, 128: 8.0})
    solve = plan_probe.PROBE_MEASURED.solve_s
    assert plan_probe.solve_seconds(32) == pytest.approx(solve)
    assert plan_probe.solve_seconds(64) == pytest.approx(4 * solve)
    assert plan_probe.solve_seconds(16) == pytest.approx(solve / 4)  # the first slope below
    assert plan_probe.solve_seconds(256) == pytest.approx(16 * solve)  # the last slope (1) beyond
    assert plan_probe.solve_seconds(96) == pytest.approx(4 * 1.5 * solve)


@pytest.mark.parametrize("ray", [{"low": 0.5, "high": 64.0, "points": 15}, {"low": 0.3, "high": 7.0, "points": 6}])
def test_the_ray_grid_is_counted_as_the_rule_makes_it(ray: dict) -> None:
    from maxmargin.experiments.vit_decisive import ray_grid

    assert plan_probe.ray_points(ray) == len(ray_grid(ray["low"], ray["high"], ray["points"]))


def header_numbers(path: Path) -> list[int]:
    """The seconds that end the lines of a config's header (``#   ... 123 s``), in order."""
    header = "".join(line for line in path.read_text().splitlines(keepends=True) if line.startswith("#"))
    return [int(n.replace(",", "")) for n in re.findall(r"^#   .*\s([\d,]+) s$", header, re.MULTILINE)]


def theory_plan() -> tuple[plan.RunPlan, plan_probe.PartsPlan, plan_probe.PartsPlan, float]:
    """The theory session's run, probe and ray test by the measured figures, and what the run leaves the two before
    the page's reserve in 9 minutes."""
    vit = session_config(PAPER_EPOCHS, THEORY)["vit"]
    run = plan.project_run(vit)
    after = 60 * 9 - request.SAFETY_SECONDS - run.session_start - run.run_seconds - request.DEFAULT_RESERVE
    return run, plan_probe.project_probe(vit), plan_probe.project_ray(vit), after


def test_the_theory_configs_arithmetic_is_the_plans() -> None:
    """gpu_paper_epochs_theory.yaml's header, line by line, is what the session prices and logs: the run (its
    session's start and page), what it leaves, the probe's parts and the ray test's; what it says fits does."""
    run, probe, ray, after = theory_plan()
    lines = [run.run_seconds, run.session_start + run.page, after, *probe.parts.values(), *ray.parts.values()]
    assert header_numbers(REPO / THEORY) == [round(x) for x in lines], f"{THEORY}'s arithmetic is stale"
    header = (REPO / THEORY).read_text()
    assert f"the probe, about {probe.seconds:,.0f} s in all, does not fit" in header and probe.seconds > after
    assert f"nor the ray test, about {ray.seconds:,.0f} s" in header and ray.seconds > after
    assert f"{run.total + probe.seconds + ray.seconds + request.DEFAULT_RESERVE - run.page:,.0f} s" in header
    # the run itself fits with the page's reserve, so the session trains the config's 400 epochs without a pilot
    assert run.run_seconds + request.DEFAULT_RESERVE <= 60 * 9 - request.SAFETY_SECONDS - run.session_start
    vit = session_config(PAPER_EPOCHS, THEORY)["vit"]
    assert vit["train"]["epochs"] == 400 and plan.snapshot_count(400, vit["train"]["snapshot_every"]) == 9
    assert vit["data"] == session_config(PAPER_EPOCHS)["vit"]["data"] and vit["model"]["embed_dim"] == 768


class Logged(SimpleNamespace):
    """A session's summary and log, as plan_analyses reads and writes them."""

    def log(self, text: str) -> None:
        self.lines.append(text)


@pytest.mark.parametrize("left", [522.0, 1e7])
def test_the_analyses_are_logged_before_anything_starts(left: float) -> None:
    """The session logs each analysis with its price against what the run's plan leaves, in the order it runs them
    (the ray test after the probe), and keeps them in session.json's plan; in 9 minutes neither fits."""
    config = session_config(PAPER_EPOCHS, THEORY)
    run, probe, ray, _ = theory_plan()
    summary = {"plan": {"left": left, "run_seconds": run.run_seconds, "reserve": 30.0, "n_train": 1920}}
    s = Logged(summary=summary, request=SimpleNamespace(epochs=None), lines=[])
    plan_probe.plan_analyses(s, config)
    after = left - run.run_seconds - 30.0
    parts = summary["plan"]["analyses"]["parts"]
    assert [p["seconds"] for p in parts] == [round(probe.seconds, 1), round(ray.seconds, 1)]
    assert [p["fits"] for p in parts] == [probe.seconds <= after, probe.seconds + ray.seconds <= after]
    assert len(s.lines) == 2 and s.lines[0].startswith(f"plan: {probe.text()}; it ")
    assert f"after the {probe.seconds:,.0f} s of the part before it" in s.lines[1]
    short = f"does not fit (short by {probe.seconds - after:,.0f} s)"
    assert (short in s.lines[0]) == (left < 1e6) and ("it fits" in s.lines[1]) == (left > 1e6)


# The theory session at the rehearsal's size: 8 epochs, a row every 2, a checkpoint every 3, a snapshot every epoch
# (9 snapshots, as on the node, 5 of them in the last half), the probe on 8 training images.
CADENCES = """vit:
  train: {epochs: 8, eval_every: 2, checkpoint_every: 3, snapshot_every: 1}
  w_svm: {images: 8, nuclear_images: 0}
"""


@pytest.mark.slow
@pytest.mark.long  # minutes: `make test-long` (CI), not `make test`
def test_the_theory_session_brings_back_the_markers_the_probe_and_the_ray_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command of docs/gpu.md, gpu_paper_epochs.yaml and gpu_paper_epochs_theory.yaml at the rehearsal's size,
    on the CPU: no pilot; the plan of the probe and the ray test logged before the run; the metrics with the training
    loss and the Q/K gradient norms on every row; the W-ATT-SVM table at all 9 snapshots on the training images;
    the ray table at the last; the page's archive with the ray test's table, which tools/gpu_report.py reports."""
    work, docs = workspace(tmp_path), "vit_gpu_paper_epochs_theory"
    (tmp_path / "cadences.yaml").write_text(CADENCES)
    configs = f"{PAPER_EPOCHS}:{THEORY}:{REHEARSAL}:{tmp_path / 'cadences.yaml'}"
    out, t, _ = rehearse(tmp_path, work, "t", scaled(3.0), request.EXIT_DONE, GPU_SESSION_CONFIG=configs)
    assert not t["plan"]["pilot"] and t["plan"]["epochs"] == 8
    stages = {k: (v["exit"], v["cut"]) for k, v in t["stages"].items()}
    assert stages == {"run": (0, False), "probe": (0, False), "ray": (0, False), "figures": (0, False)}
    files = ["session.json", "session.log", f"{docs}.tar.gz", f"{docs}_metrics.csv", "vit_decisive_ray.csv"]
    assert sorted(q.name for q in out.iterdir()) == sorted([*files, "vit_w_svm.csv"])
    log = (out / "session.log").read_text()
    analyses = [line for line in log.splitlines() if "plan: the W-ATT-SVM probe of 9 snapshots x 2 heads" in line]
    assert analyses and log.index(analyses[0]) < log.index("$ ")  # priced before the first stage
    assert "plan: the ray test at 1 snapshot(s) on 64 training images, 90 losses" in log
    assert [p["what"] for p in t["plan"]["analyses"]["parts"]][1].startswith("the ray test")

    metrics = pd.read_csv(out / f"{docs}_metrics.csv")
    assert metrics.epoch.tolist() == [0, 2, 4, 6, 8]
    markers = ["train_loss_full", "train_loss_max", "grad_rms_q", "grad_rms_k", "cls_max_attention"]
    assert metrics[markers].notna().all().all() and (metrics[["grad_rms_q", "grad_rms_k"]] > 0).all().all()
    assert metrics.adam_sqrt_v_rms_q.iloc[1:].notna().all()  # Adam's second moment, once it has one

    w_svm = pd.read_csv(out / "vit_w_svm.csv")
    assert sorted(w_svm.epoch.unique()) == list(range(9)) and (w_svm.epoch >= 4).sum() == 5 * 2
    assert set(w_svm.images) == {"train"} and set(w_svm.n_images) == {8} and w_svm.cosine.notna().all()
    ray = pd.read_csv(out / "vit_decisive_ray.csv")
    assert set(ray.epoch) == {8} and set(ray.n_images) == {64} and len(ray) == 2 * (2 + 1) * 15
    assert set(ray.direction) == {"trained", "max_margin"} and (ray.loss > 0).all()
    assert t["ray"]["status"] == "done" and t["files"]["vit_decisive_ray.csv"]["made_here"]

    members = unpacked(out / f"{docs}.tar.gz", t["files"][f"{docs}.tar.gz"]["members"])
    # the page's copy of the table (rule docs_vit writes it again from the table it read): the same rows and numbers
    pd.testing.assert_frame_equal(
        pd.read_csv(io.BytesIO(members[f"{docs}_decisive_ray.csv"])), ray, check_dtype=False, check_exact=True
    )
    claims = {r["claim_id"]: r["verdict"] for r in csv.DictReader(io.StringIO(members[f"{docs}_claims.csv"].decode()))}
    assert claims["vit_ray_precondition"] != "not run" and claims["vit_regime_markers"] != "not run"

    # what came back, as it is committed under docs/gpu/<session>/: the report unpacks it and reports the ray test
    from maxmargin.docs import gpu_report

    monkeypatch.setattr(gpu_report, "GPU_DOCS", tmp_path / "docs_gpu")
    shutil.copytree(out, tmp_path / "docs_gpu/t")
    found = gpu_report.sessions()
    assert gpu_report.unpack(tmp_path / "docs_gpu/t", found["t"], False) == []
    page = gpu_report.render(found)
    assert "## The run (t)" in page and "The ray test ran on the node in" in page
    assert f"[t/{docs}_decisive_ray.csv](t/{docs}_decisive_ray.csv)" in page
    today = re.search(r"\| vit_ray_precondition \| [^|]* \| (\w[\w ]*) \| (\w[\w ]*) \|", page)
    assert today and today[1] == claims["vit_ray_precondition"] == today[2]  # today's code, the node's record
