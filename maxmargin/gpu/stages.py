"""A GPU session's stages, each a Snakemake run of the pipeline's own rules (docs/gpu.md, "Copy and run", 1-6).

Every stage runs Snakemake on the session's config files after one ``--configfile`` (:func:`snakemake_cmd`),
stopped at its limit (:func:`stage`): the pilot (:func:`pilot_stage`), the run (:func:`run_stage`, its training
log watched), the W-ATT-SVM probe (:func:`probe_stage`), the ray test (:func:`ray_stage`) and the page
(:func:`page_stage`, without the probe's or the ray test's part where it did not finish: :func:`page_without_probe`,
:func:`page_without_ray`). What each brings back is judged first
(:mod:`maxmargin.gpu.judge`). Standard library only at import.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from maxmargin.files import atomic_path, file_sha256
from maxmargin.gpu import paths, processes
from maxmargin.gpu.device import read_measures
from maxmargin.gpu.plan import MEASURED, pilot_numbers, plan_epochs, training_rate
from maxmargin.gpu.record import Session
from maxmargin.gpu.request import EXIT_CUT, EXIT_DONE, EXIT_FAILED
from maxmargin.gpu.salvage import salvage
from maxmargin.gpu.watch import JobWork, ProbeWatch, RunWatch, read_job_work

MIN_STAGE_SECONDS = 5.0  # a stage with less time left is not started (Snakemake alone takes seconds to start)
# Rule vit_probe's start (Snakemake's and its job's: imports, CUDA, the data, the snapshots): at least as long as
# the training job's before its epoch 0 (MEASURED), so the probe is not started with less time left.
PROBE_START = MEASURED.stage_start_s + MEASURED.job_start_s
LINK = re.compile(r"\]\(([^)#\s:/]+)[)#]")  # a Markdown link to a file beside the page, its anchor left out


def snakemake_cmd(repo: Path, configs: list[Path], targets: list[str], cores: int, options: list[str]) -> list[str]:
    """A stage's command: every config file after one --configfile (Snakemake keeps only the last of several),
    each relative to ``repo``."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--scheduler", "greedy", "--resources", "gpu=1"]
    return [*cmd, *options, "--configfile", *(os.path.relpath(p, repo) for p in configs), "--", *targets]


def stage(
    s: Session,
    name: str,
    configs: list[Path],
    targets: list[str],
    limit: float,
    options: list[str] = (),
    watch: Callable[[], None] | None = None,
) -> bool:
    """One Snakemake run of ``targets``, stopped after ``limit`` seconds (``watch``: called while it runs); whether
    it finished."""
    t0 = time.time()
    cmd = snakemake_cmd(s.repo, configs, targets, os.cpu_count() or 2, list(options))
    s.summary["stages"][name] = record = {"started": t0, "cut": False}
    if limit < MIN_STAGE_SECONDS:
        s.last = {"cut": True, "exit": None, "nothing_to_be_done": False}
        record.update(s.last, seconds=0.0)
        s.log(f"stage {name}: not started, {limit:.0f} s left before the wall limit")
        s.save()
        return False
    s.save()
    try:
        s.run(cmd, limit, watch)
    finally:
        record.update(s.last, seconds=time.time() - t0)
        s.save()
    cut = " (cut at the wall limit)" if record["cut"] else ""
    nothing = "; Snakemake had nothing to do" if record["nothing_to_be_done"] else ""
    s.log(f"stage {name}: exit {record['exit']}{cut}{nothing} after {record['seconds']:.0f} s")
    return record["exit"] == 0 and not record["cut"]


def write_config(folder: Path, name: str, content: dict) -> Path:
    """A config file the session writes (kept under the results root: the page's command names it)."""
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(content))
    return path


def pilot_stage(
    s: Session, configs: list[Path], written: Path, config: dict, measuring: subprocess.Popen
) -> int | None:
    """Rule vit_pilot on this machine (``--forcerun``: an earlier allocation's table does not stand), once more
    without torch.compile where it failed with it (the config that says so appended to ``configs``, for the run
    too); its table comes back. The epochs that fit after it (:func:`maxmargin.gpu.plan.plan_epochs`), or None
    where it did not finish or made no table of its own. ``measuring``: the device's numbers, read here."""
    t0 = time.time()
    options = ["--forcerun", "vit_pilot_run"]
    done = stage(s, "pilot", configs, ["vit_pilot"], s.left(), options)
    if not done and not s.summary["stages"]["pilot"]["cut"] and config["vit"]["train"]["compile"]:
        s.log("the pilot failed with torch.compile on (its error is above): once more, and the run, without it")
        configs.append(write_config(written, "eager.yaml", {"vit": {"train": {"compile": False}}}))
        t0 = time.time()
        done = stage(s, "pilot_eager", configs, ["vit_pilot"], s.left(), options)
    if not done:
        return None
    s.summary["device"] = device = read_measures(s, measuring)
    results = s.repo / config["results"]
    s.summary["pilot"] = pilot = pilot_numbers(results, time.time() - t0, device)
    table, planned = results / paths.PILOT, config["vit"]["pilot"]["epochs"]
    if table.stat().st_mtime < t0 or int(pilot["epochs"]) != planned:
        s.log(f"not kept: {table} is not of this pilot ({pilot['epochs']} epochs, planned {planned})")
        return None
    s.keep(table, "vit_pilot.csv", {"stage": "pilot", "epochs": planned, "made_here": True})
    s.log(
        f"pilot: {float(pilot['images_per_s']):.1f} images/s, MFU {100 * pilot['mfu']:.1f}% of "
        f"{device.get('peak_source')}, compile {pilot['compile_seconds']} s, steady epoch "
        f"{pilot['steady_epoch_seconds']:.1f} s, peak memory {float(pilot['peak_memory_mb']):.0f} MB"
    )
    most = config["vit"]["train"]["epochs"]
    return plan_epochs(s.left(), pilot, s.request.epochs, most, s.request.reserve)


def run_stage(
    s: Session, configs: list[Path], results: Path, planned: dict, name: str
) -> tuple[bool, Callable[[], JobWork]]:
    """The run's stage (vit_train, vit_metrics_table, vit_baseline), its training log watched (:class:`RunWatch`);
    stopped by a signal, the epochs it finished are brought back as ``name`` (as a cut run's are) before the signal
    ends the session. Whether it finished, and what its training job did (read when asked:
    :func:`maxmargin.gpu.watch.read_job_work`)."""
    t0, log, reserve = time.time(), results / paths.TRAIN_LOG, s.request.reserve
    watch = RunWatch(s, log, planned["train"]["epochs"], t0, reserve)
    # vit_train named: its outputs missing (a cut run's), Snakemake trains even where the tables of a run before stand
    targets = ["vit_train", "vit_metrics_table", "vit_baseline"]
    try:
        finished = stage(s, "run", configs, targets, s.left() - 0.5 * reserve, watch=watch)
    except processes.Interrupted:
        try:
            salvage(s, results / paths.CHECKPOINT, planned, read_job_work(log, t0), name)
        except Exception as err:  # noqa: BLE001 - the signal's exit status stands, whatever the salvage meets
            s.log(f"run stopped: its epochs could not be read back ({type(err).__name__}: {err})")
        raise
    watch.final()
    return finished, lambda: read_job_work(log, t0)


def measured_rate(s: Session, sidecar: Path) -> None:
    """The run's training images/s from its sidecar's times (the steps alone, after the compiled first rows), with
    its MFU where the device's peak is known: what the 2,000-image epochs make of the card."""
    rate = training_rate(json.loads(sidecar.read_text()))
    if rate is None:
        return
    device = s.summary.get("device", {})
    flops = device.get("gflops_per_image_train", math.nan) / (1e3 * device.get("peak_tflops", math.nan))
    s.summary["run"].update(images_per_s=rate[0], rate_epochs=rate[1], mfu=rate[0] * flops)
    mfu = f", MFU {100 * rate[0] * flops:.1f}% of {device.get('peak_source')}" if math.isfinite(flops) else ""
    s.log(f"run: {rate[0]:,.0f} training images/s over its last {rate[1]} epochs (the steps alone){mfu}")


def probe_stage(s: Session, configs: list[Path], config: dict, record: dict) -> bool:
    """Rule vit_probe on the run's snapshots, where the time left before the page's reserve is at least its start
    (:data:`PROBE_START`: a lower bound, as what a head costs on this card is known only once it runs), stopped at
    that reserve; its table comes back. Whether it finished; session.json's ``probe`` says how it went."""
    left, reserve = s.left(), s.request.reserve
    s.summary["probe"] = probe = {"status": "not started", "cvxopt": s.summary.get("cvxopt")}
    if not_started(s, probe, "probe", "the probe's"):
        return False
    results = s.repo / config["results"]
    table = results / paths.W_SVM
    t0 = time.time()
    watch = ProbeWatch(s, results / paths.PROBE_LOG, t0, t0 + left - reserve)
    try:
        done = stage(s, "probe", configs, [os.path.relpath(table, s.repo)], left - reserve, watch=watch)
    except processes.Interrupted:
        probe.update(status="interrupted", seconds=round(time.time() - t0, 1))
        raise
    watch.final()
    probe["seconds"] = round(time.time() - t0, 1)
    if done:
        probe["status"] = "done"
        # made here where this stage's probe job ran (its log's start line), not where the table is newer
        s.keep(table, "vit_w_svm.csv", {"stage": "probe", **record, "made_here": watch.started is not None})
        return True
    probe["status"] = "cut" if s.last["cut"] else "failed"
    hint = (
        ""
        if s.summary.get("cvxopt") or s.last["cut"]
        else " (cvxopt is not on this node: the probe's fallbacks need it)"
    )
    heads = f", {probe['heads_done']} of {probe['heads']} heads done" if "heads_done" in probe else ""
    s.log(f"probe: {probe['status']} after {probe['seconds']:.0f} s{heads}{hint}")
    return False


def not_started(s: Session, record: dict, name: str, whose: str) -> bool:
    """Whether an analysis stage must not start: the time left before the page's reserve is less than its start
    (:data:`PROBE_START`); ``record`` (its session.json entry) and the log then say why."""
    left, reserve = s.left(), s.request.reserve
    if left - reserve >= PROBE_START:
        return False
    record["reason"] = (
        f"{left - reserve:.0f} s left before the page's {reserve:.0f} s, less than {whose} start alone "
        f"(about {PROBE_START:.0f} s)"
    )
    s.log(f"{name}: not started: {record['reason']}")
    return True


def ray_stage(s: Session, configs: list[Path], config: dict, record: dict) -> bool:
    """Rule vit_decisive_ray at the snapshots of ``vit.decisive.at``, where the time left before the page's reserve is
    at least its start (:data:`PROBE_START`: its job reads the data and the snapshots as the probe's does), stopped at
    that reserve; its table comes back. Whether it finished; session.json's ``ray`` says how it went."""
    left, reserve = s.left(), s.request.reserve
    s.summary["ray"] = ray = {"status": "not started"}
    if not_started(s, ray, "ray test", "its"):
        return False
    table, t0 = s.repo / config["results"] / paths.RAY, time.time()
    try:
        done = stage(s, "ray", configs, [os.path.relpath(table, s.repo)], left - reserve)
    except processes.Interrupted:
        ray.update(status="interrupted", seconds=round(time.time() - t0, 1))
        raise
    ray["seconds"] = round(time.time() - t0, 1)
    ray["status"] = "done" if done else "cut" if s.last["cut"] else "failed"
    if done:
        # made here where this stage's job ran (Snakemake had something to do), not where the table is newer
        s.keep(table, "vit_decisive_ray.csv", {"stage": "ray", **record, "made_here": not s.last["nothing_to_be_done"]})
    s.log(f"ray test: {ray['status']} after {ray['seconds']:.0f} s")
    return done


def page_without_ray(s: Session, configs: list[Path], written: Path, parts: list[str]) -> list[Path]:
    """The configs of a page made without the ray test's table and section, where it did not finish: a config file
    written beside the session's others takes ray out of ``vit.decisive.parts`` (``parts``: the config's), which only
    rule docs_vit and the claims read; its claim is then "not run". session.json's ``ray`` records it (``page``)."""
    kept = [part for part in parts if part != "ray"]
    path = write_config(written, "decisive_parts.yaml", {"vit": {"decisive": {"parts": kept}}})
    ray = s.summary["ray"]
    ray["page"] = (
        f"made without the ray test's table and section (its claim not run), since the ray test "
        f"{'failed' if ray['status'] == 'failed' else 'was ' + ray['status']}: {os.path.relpath(path, s.repo)} "
        f"sets vit.decisive.parts: {kept}"
    )
    s.log(f"page: {ray['page']}")
    return [*configs, path]


def page_without_probe(s: Session, configs: list[Path], written: Path) -> list[Path]:
    """The configs of a page made without the probe's table and panel, where the probe did not finish (cut, not
    started or failed): a config file written beside the session's others sets ``vit.docs_w_svm: false``, read by
    rule docs_vit alone (nothing trained or probed again). The page says why; its W-ATT-SVM claims are "not run";
    session.json's ``probe`` records it (``page``)."""
    path = write_config(written, "docs_w_svm.yaml", {"vit": {"docs_w_svm": False}})
    probe = s.summary["probe"]
    probe["page"] = (
        f"made without the W-ATT-SVM table and panel (its W-ATT-SVM claims not run), since the probe "
        f"{'failed' if probe['status'] == 'failed' else 'was ' + probe['status']}: {os.path.relpath(path, s.repo)} "
        "sets vit.docs_w_svm: false"
    )
    s.log(f"page: {probe['page']}")
    return [*configs, path]


def page_stage(s: Session, configs: list[Path], docs: str, table: Path, record: dict, with_w_svm: bool) -> int:
    """Rule docs_vit's page (Figures 6 and 7 with it) and every file it links, packed as one archive, where it was
    made from the run's ``table`` and links only what it wrote here (the probe's table and panel with
    ``with_w_svm``); ``record``: the run's, for session.json. The exit status."""
    suffixes = paths.PAGE_FILES if with_w_svm else tuple(x for x in paths.PAGE_FILES if x not in paths.W_SVM_FILES)
    # The page builds Figures 6 and 7 (their panels of the paper; the aggregate targets fig6/fig7 add panels beyond it)
    if not stage(s, "figures", configs, [f"{paths.PAGES}/{docs}.md"], s.left()):
        return EXIT_CUT if s.last["cut"] else EXIT_FAILED
    page = s.repo / paths.PAGES
    if file_sha256(page / f"{docs}_metrics.csv") != file_sha256(table):
        s.log(f"not kept: the page {paths.PAGES}/{docs}.md was made from another run's table")
        return EXIT_FAILED
    linked = set(LINK.findall((page / f"{docs}.md").read_text()))
    suffixes += tuple(x for x in paths.CURVE_FILES if with_w_svm and f"{docs}{x}" in linked)
    suffixes += tuple(x for x in paths.DECISIVE_FILES if f"{docs}{x}" in linked)
    files = [page / f"{docs}{suffix}" for suffix in suffixes]
    stray = sorted(linked - {p.name for p in files})
    if stray:  # a page of before (Snakemake did not remake it): it links files this one does not write
        s.log(f"not kept: the page {paths.PAGES}/{docs}.md links {stray}, which this session's page does not write")
        return EXIT_FAILED
    s.pack(files, f"{docs}.tar.gz", {"stage": "figures", **record})
    return EXIT_DONE
