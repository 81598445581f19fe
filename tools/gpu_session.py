"""One allocation of an offline GPU node: the plan, the run, the W-ATT-SVM probe, Figures 6-7 and the docs page
(docs/gpu.md).

Started by tools/gpu_session.sh from the repository's root. Before any work it checks its arguments, the
``GPU_SESSION_*`` settings, OUT_DIR (new or empty), the kit, and the config (maxmargin/gpu.py: a refusal names the
fix, exit 2); it installs the kit's wheels into a temporary folder (removed at exit). Every stage goes through the
pipeline's own rules, on workflow/config/paper.yaml, workflow/config/gpu_session.yaml, any files in GPU_SESSION_CONFIG
(colon-separated) and two it writes (where the kit lies; the epoch count):

  (a) the plan: the config's run priced by the figures the first session measured (maxmargin/gpu_plan.py,
      ``MEASURED``). Where it fits the time left with the page's reserve, no pilot: the config's epochs. Else
      `vit_pilot`: ``vit.pilot.epochs`` epochs; images/s, MFU against the card's dense bf16 peak, peak memory and
      compile time (the first epoch's time less the second's), and the epochs that fit;
  (b) `vit_train`, `vit_metrics_table` and `vit_baseline`: the run; its rule log is read as it trains, and after a
      few epochs its measured rate, projected end and whether that fits are logged (session.json's ``run``);
  (c) `vit_probe`, where the run keeps snapshots: each last-layer head against its W-ATT-SVM, started only where the
      time left before the page's reserve covers its start, stopped at that reserve (session.json's ``probe``);
  (d) the run's docs page (rule docs_vit), with Figures 6 and 7 (the paper's panels), the W-ATT-SVM panel and the
      ViT claims; where the probe did not finish, the page without the probe's table and panel (a config file it
      writes sets ``vit.docs_w_svm: false``: the page says why, its W-ATT-SVM claims are "not run").

Environment: GPU_KIT (the kit's folder), GPU_SESSION_CONFIG, GPU_SESSION_EPOCHS (a fixed epoch count),
GPU_SESSION_PILOT (1: a pilot; 0: none, the epochs given or the config's; unset: as the plan says),
GPU_SESSION_RESERVE (the seconds kept for the page).

OUT_DIR receives at most 8 files of at most 16 MiB, flat, each written as soon as its stage ends and only when it is
of the run the session planned (its settings, epoch count and fingerprint: session.json's ``files``): session.log,
session.json, the pilot's table, the run's metrics, the probe's table, and the page with every file it links as one
archive (<docs>.tar.gz, without the probe's table and panel where it did not finish; tools/gpu_report.py unpacks
it). A stage that would pass the wall limit is stopped with everything it started (maxmargin/processes.py), and the
epochs a cut run finished are read back from its checkpoint. SIGTERM, SIGINT or SIGHUP stops the stage the same way
(a stopped run's epochs read back as a cut run's). Whether this session made the run is what its training job's log
says it did (trained, restored, or nothing: gpu_plan.job_work). Exit status: 0 the run and its page came back (with
its W-ATT-SVM part, or session.json's ``probe`` says why not), 1 a stage failed or made another run's files, 2 refused
before any work, 3 cut at the wall limit before the page (Figures 6-7), 128 + N stopped by signal N.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from maxmargin import gpu, gpu_plan, processes, registry
from maxmargin.gpu import EXIT_CUT, EXIT_DONE, EXIT_FAILED, EXIT_USAGE
from maxmargin.gpu_plan import fig6_epochs

REPO = Path(__file__).resolve().parents[1]
CONFIGS = REPO / "workflow/config"
MIN_STAGE_SECONDS = 5.0  # a stage with less time left is not started (Snakemake alone takes seconds to start)


def snakemake_cmd(configs: list[Path], targets: list[str], cores: int, options: list[str]) -> list[str]:
    """A stage's command: every config file after one --configfile (Snakemake keeps only the last of several)."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--scheduler", "greedy", "--resources", "gpu=1"]
    return [*cmd, *options, "--configfile", *(os.path.relpath(p, REPO) for p in configs), "--", *targets]


def probe(model: dict, device: str) -> dict:
    """torch's version and device properties, the model's training FLOPs per image and the device's peak FLOP/s (the
    card's dense bf16 peak, or this CPU's measured float32 matmul peak), from maxmargin.experiments.vit_flops."""
    import torch

    from maxmargin.experiments.vit import ModelSettings
    from maxmargin.experiments.vit_flops import GPU_PEAK_TFLOPS, count_flops, cpu_matmul_peak

    cuda = device != "cpu" and torch.cuda.is_available()
    d: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda, "cuda_available": cuda}
    d["gflops_per_image_train"] = count_flops(ModelSettings(**model))[1] / 1e9
    d["peak_tflops"], d["peak_source"] = cpu_matmul_peak() / 1e12, "measured float32 matmul peak of this CPU"
    if cuda:
        p = torch.cuda.get_device_properties(0)
        d.update(
            name=p.name,
            total_memory_mb=p.total_memory / 2**20,
            multiprocessors=p.multi_processor_count,
            capability=f"{p.major}.{p.minor}",
        )
        known = [(key, tflops) for key, tflops in GPU_PEAK_TFLOPS.items() if key in p.name]
        d["peak_tflops"], d["peak_source"] = (
            (known[0][1], f"dense bf16 peak of {known[0][0]}") if known else (math.nan, "unknown GPU: no peak")
        )
    return d


def start_probe(s: gpu.Session, config: dict) -> subprocess.Popen:
    """nvidia-smi into the log, then :func:`probe` in a process of its own, beside the pilot (it needs neither)."""
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True)
        s.log("nvidia-smi:\n" + smi.stdout + smi.stderr)
    vit = config["vit"]
    args = [json.dumps(vit["model"]), vit["train"]["device"]]
    return s.popen([sys.executable, __file__, "--probe", *args], stdout=subprocess.PIPE, text=True)


def read_probe(s: gpu.Session, proc: subprocess.Popen) -> dict:
    try:
        out, _ = proc.communicate(timeout=max(s.left(), 1.0))
    except subprocess.TimeoutExpired:
        processes.stop_tree(proc.pid, grace=2.0)
        out = proc.communicate()[0]
    lines = out.strip().splitlines()  # its JSON is the last line: an import may print before it
    try:
        device = json.loads(lines[-1]) if proc.returncode == 0 and lines else {"error": f"exit {proc.returncode}"}
    except ValueError:
        device = {"error": f"no JSON in its output: {lines[-1][:200]}"}
    s.log(f"device: {json.dumps(device)}")
    return device


def stage(
    s: gpu.Session,
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
    cmd = snakemake_cmd(configs, targets, os.cpu_count() or 2, list(options))
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
    path.write_text(yaml.safe_dump(content))
    return path


def install_kit(s: gpu.Session, site: Path, wheels: list[Path]) -> None:
    """The kit's wheels into ``site`` (a temporary folder), put before everything else on the stages' path."""
    if wheels:
        s.log(f"installing {len(wheels)} wheels of the kit {s.request.kit}")
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
        proc = s.popen(
            [*cmd, "--no-cache-dir", "--target", str(site), *map(str, wheels)], stdout=s.log_file, stderr=s.log_file
        )
        if proc.wait() != 0:
            raise gpu.UsageError(
                f"the kit's wheels did not install (pip's error is in {s.out / 'session.log'}): build the kit for "
                "this node's Python (`make gpu-kit`, with --have node.txt for its packages)"
            )
    else:
        s.log(f"no kit at {s.request.kit}: this Python's own Snakemake and pandera serve (a rehearsal)")
    sys.path.insert(0, str(site))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    os.environ["PATH"] = os.pathsep.join([str(site / "bin"), os.environ["PATH"]])


def prepare(s: gpu.Session, site: Path, wheels: list[Path]) -> tuple[dict, list[Path], Path]:
    """The kit installed, the session's configs (and the folder of those it writes), and the config checked."""
    install_kit(s, site, wheels)
    configs = [CONFIGS / "paper.yaml", CONFIGS / "gpu_session.yaml", *s.request.configs]
    results = gpu.merged_config(configs, CONFIGS / "default.yaml")["results"]
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(s.start))
    written = REPO / results / "gpu_sessions" / f"{stamp}-{os.getpid()}"
    kit = {"vit": {"data": {"fashion_mnist_files": str(s.request.kit / "fashion-mnist")}}}
    configs.append(write_config(written, "kit.yaml", kit))
    config = gpu.merged_config(configs, CONFIGS / "default.yaml")
    gpu.check_config(config, configs, REPO / "workflow/schemas/config.schema.yaml")
    gpu.check_data(config, REPO)
    s.summary["configs"] = [os.path.relpath(p, REPO) for p in configs]
    importlib.invalidate_caches()
    s.summary["cvxopt"] = importlib.util.find_spec("cvxopt") is not None
    s.log(
        "cvxopt: here (the W-ATT-SVM probe's fallbacks can run)"
        if s.summary["cvxopt"]
        else "cvxopt: not here (the W-ATT-SVM probe's hard-margin pivoting runs; a fallback would fail, and is said)"
    )
    return config, configs, written


def run_session(s: gpu.Session, site: Path, wheels: list[Path]) -> int:
    """The plan (a pilot's, or the config's own run), then the run, the probe and the page. The exit status."""
    config, configs, written = prepare(s, site, wheels)
    probing = start_probe(s, config)
    if not wants_pilot(s, config):  # the probe is read after the run's stage
        epochs = s.request.epochs or int(config["vit"]["train"]["epochs"])
        return run_and_page(s, configs, written, epochs, probing)
    t0 = time.time()
    # --forcerun: a pilot always measures this machine, even where an earlier allocation left its table
    options = ["--forcerun", "vit_pilot_run"]
    done = stage(s, "pilot", configs, ["vit_pilot"], s.left(), options)
    if not done and not s.summary["stages"]["pilot"]["cut"] and config["vit"]["train"]["compile"]:
        s.log("the pilot failed with torch.compile on (its error is above): once more, and the run, without it")
        configs.append(write_config(written, "eager.yaml", {"vit": {"train": {"compile": False}}}))
        t0 = time.time()
        done = stage(s, "pilot_eager", configs, ["vit_pilot"], s.left(), options)
    if not done:
        return EXIT_CUT if s.last["cut"] else EXIT_FAILED
    s.summary["device"] = device = read_probe(s, probing)
    s.summary["pilot"] = pilot = gpu_plan.pilot_numbers(REPO / config["results"], time.time() - t0, device)
    table, planned = REPO / config["results"] / "tables/vit_pilot.csv", config["vit"]["pilot"]["epochs"]
    if table.stat().st_mtime < t0 or int(pilot["epochs"]) != planned:
        s.log(f"not kept: {table} is not of this pilot ({pilot['epochs']} epochs, planned {planned})")
        return EXIT_FAILED
    s.keep(table, "vit_pilot.csv", {"stage": "pilot", "epochs": planned, "made_here": True})
    s.log(
        f"pilot: {float(pilot['images_per_s']):.1f} images/s, MFU {100 * pilot['mfu']:.1f}% of "
        f"{device.get('peak_source')}, compile {pilot['compile_seconds']} s, steady epoch "
        f"{pilot['steady_epoch_seconds']:.1f} s, peak memory {float(pilot['peak_memory_mb']):.0f} MB"
    )
    most = config["vit"]["train"]["epochs"]
    epochs = gpu_plan.plan_epochs(s.left(), pilot, s.request.epochs, most, s.request.reserve)
    return run_and_page(s, configs, written, epochs, None)


def wants_pilot(s: gpu.Session, config: dict) -> bool:
    """Whether a pilot plans the run. The run's cost by the measured figures (gpu_plan.project_run: the config's
    epochs, or GPU_SESSION_EPOCHS) is logged and kept in session.json's ``plan``. GPU_SESSION_PILOT decides where
    it is given; unset, a pilot runs where GPU_SESSION_EPOCHS is given (it measures this machine) or where the
    config's run does not fit the time left with the page's reserve (it plans the epochs that fit). No pilot and
    the config's epochs that do not fit: refused (a run that would be cut)."""
    request, reserve, vit = s.request, s.request.reserve, config["vit"]
    if request.epochs is not None:
        vit = {**vit, "train": {**vit["train"], "epochs": request.epochs}}
    plan, left = gpu_plan.project_run(vit), s.left()
    fits = plan.n_train is not None and plan.run_seconds + reserve <= left
    verdict = "fits" if fits else "does not fit"
    s.log(f"plan: {plan.text()}; it {verdict} the {left:.0f} s left with the page's {reserve:.0f} s")
    pilot = request.pilot if request.pilot is not None else request.epochs is not None or not fits
    s.summary["plan"] = {**plan.record(), "left": round(left, 1), "reserve": reserve, "fits": fits, "pilot": pilot}
    if not pilot and request.epochs is None and not fits:
        raise gpu.UsageError(
            f"GPU_SESSION_PILOT=0 trains the config's {plan.epochs} epochs, which do not fit the {left:.0f} s left "
            "by the measured figures (session.log's plan): leave GPU_SESSION_PILOT unset so that a pilot plans the "
            "epochs that fit, or give GPU_SESSION_EPOCHS (a run resumed over several allocations)"
        )
    why = "GPU_SESSION_PILOT" if request.pilot is not None else "GPU_SESSION_EPOCHS" if request.epochs else "the plan"
    s.log(
        f"plan: a pilot measures this machine ({why})"
        if pilot
        else f"plan: no pilot ({why}): the run's own epochs check the plan as they come"
    )
    return pilot


def run_and_page(
    s: gpu.Session, configs: list[Path], written: Path, epochs: int, probing: subprocess.Popen | None
) -> int:
    """The run of ``epochs`` epochs (resumed from its checkpoint where one is of the same run), the W-ATT-SVM probe
    of its snapshots where the time left allows, then the page (without the probe's table and panel where it did not
    finish: :func:`page_without_probe`); each file brought back only when it is of the planned run. ``probing``: the
    device probe, where no pilot has read it (it runs beside the run's start)."""
    reserve = s.request.reserve
    config = gpu.merged_config(configs, CONFIGS / "default.yaml")
    every = config["vit"]["train"]["eval_every"]
    plots = {"vit": {"train": {"epochs": epochs}, "plots": {"fig6_epochs": fig6_epochs(epochs, every)}}}
    configs = [*configs, write_config(written, "epochs.yaml", plots)]
    config = gpu.merged_config(configs, CONFIGS / "default.yaml")
    planned, results, docs = gpu_plan.planned_settings(config["vit"]), REPO / config["results"], config["vit"]["docs"]
    s.summary.update(docs=docs, results=config["results"])
    s.summary["run"] = {"epochs_planned": epochs, "reserve_seconds": reserve}
    s.log(f"run: {epochs} epochs ({s.left():.0f} s left, {reserve:.0f} s kept for the page)")
    finished, job = run_stage(s, configs, results, planned, f"{docs}_metrics.csv")
    if probing is not None:
        s.summary["device"] = read_probe(s, probing)
    if not finished:
        if not s.last["cut"]:
            return EXIT_FAILED
        salvage(s, results / CHECKPOINT, planned, job(), f"{docs}_metrics.csv")
        return EXIT_CUT
    table = results / "tables/vit_metrics.csv"
    verdict = gpu_plan.judge_finished(results / "tables/vit_metrics.json", table, planned, job())
    s.summary["run"].update(verdict.record, epochs_done=verdict.record.get("epochs"))
    s.log(f"run: {table.name} is {verdict.message}")
    if not verdict.returned:
        return EXIT_FAILED
    s.keep(table, f"{docs}_metrics.csv", {"stage": "run", **verdict.record})
    measured_rate(s, results / "tables/vit_metrics.json")
    # The baseline's one row in session.json too (its table comes back with the page)
    with (results / "tables/vit_baseline.csv").open() as f:
        s.summary["baseline"] = next(csv.DictReader(f))
    probed = probe_stage(s, configs, config, verdict.record) if config["vit"]["train"]["snapshot_every"] else None
    if probed is False:  # the page without the probe's table and panel, and session.json's probe says why
        configs = page_without_probe(s, configs, written)
    with_w_svm = probed is not False and config["vit"]["docs_w_svm"]
    suffixes = PAGE_FILES if with_w_svm else tuple(suffix for suffix in PAGE_FILES if suffix not in W_SVM_FILES)
    # The page builds Figures 6 and 7 (their panels of the paper; the aggregate targets fig6/fig7 add panels beyond it)
    if not stage(s, "figures", configs, [f"docs/results/{docs}.md"], s.left()):
        return EXIT_CUT if s.last["cut"] else EXIT_FAILED
    page = REPO / "docs/results"
    if gpu.sha256(page / f"{docs}_metrics.csv") != gpu.sha256(table):
        s.log(f"not kept: the page docs/results/{docs}.md was made from another run's table")
        return EXIT_FAILED
    files = [page / f"{docs}{suffix}" for suffix in suffixes]
    stray = sorted(set(LINK.findall((page / f"{docs}.md").read_text())) - {p.name for p in files})
    if stray:  # a page of before (Snakemake did not remake it): it links files this one does not write
        s.log(f"not kept: the page docs/results/{docs}.md links {stray}, which this session's page does not write")
        return EXIT_FAILED
    s.pack(files, f"{docs}.tar.gz", {"stage": "figures", **verdict.record})
    return EXIT_DONE


def run_stage(
    s: gpu.Session, configs: list[Path], results: Path, planned: dict, name: str
) -> tuple[bool, Callable[[], gpu_plan.JobWork]]:
    """The run's stage (vit_train, vit_metrics_table, vit_baseline), its training log watched (:class:`RunWatch`);
    stopped by a signal, the epochs it finished are brought back as ``name`` (as a cut run's are) before the signal
    ends the session. Whether it finished, and what its training job did (read when asked: :func:`job_work`)."""
    t0, log, reserve = time.time(), results / TRAIN_LOG, s.request.reserve
    watch = RunWatch(s, log, planned["train"]["epochs"], t0, reserve)
    # vit_train named: its outputs missing (a cut run's), Snakemake trains even where the tables of a run before stand
    targets = ["vit_train", "vit_metrics_table", "vit_baseline"]
    try:
        finished = stage(s, "run", configs, targets, s.left() - 0.5 * reserve, watch=watch)
    except processes.Interrupted:
        try:
            salvage(s, results / CHECKPOINT, planned, job_work(log, t0), name)
        except Exception as err:  # noqa: BLE001 - the signal's exit status stands, whatever the salvage meets
            s.log(f"run stopped: its epochs could not be read back ({type(err).__name__}: {err})")
        raise
    watch.final()
    return finished, lambda: job_work(log, t0)


# What rule docs_vit writes beside its page (workflow/rules/vit.smk), which the page links: one archive brings them.
PAGE_FILES = (
    ".md",
    "_fig6.png",
    "_fig7.png",
    "_fig7_regime.png",
    "_fig7_w_svm.png",
    "_metrics.csv",
    "_baseline.csv",
    "_w_svm.csv",
    "_claims.csv",
)
W_SVM_FILES = ("_fig7_w_svm.png", "_w_svm.csv")  # of those, what it writes only with vit.docs_w_svm (the probe's)
LINK = re.compile(r"\]\(([^)#\s:/]+)[)#]")  # a Markdown link to a file beside the page, its anchor left out
# Rule vit_probe's start (Snakemake's and its job's: imports, CUDA, the data, the snapshots): at least as long as
# the training job's before its epoch 0 (gpu_plan.MEASURED), so the probe is not started with less time left.
PROBE_START = gpu_plan.MEASURED.stage_start_s + gpu_plan.MEASURED.job_start_s


def probe_stage(s: gpu.Session, configs: list[Path], config: dict, record: dict) -> bool:
    """Rule vit_probe on the run's snapshots, where the time left before the page's reserve is at least its start
    (:data:`PROBE_START`: a lower bound, as what a head costs on this card is known only once it runs), stopped at
    that reserve; its table comes back. Whether it finished; session.json's ``probe`` says how it went."""
    left, reserve = s.left(), s.request.reserve
    s.summary["probe"] = probe = {"status": "not started", "cvxopt": s.summary.get("cvxopt")}
    if left - reserve < PROBE_START:
        probe["reason"] = (
            f"{left - reserve:.0f} s left before the page's {reserve:.0f} s, less than the probe's start alone "
            f"(about {PROBE_START:.0f} s)"
        )
        s.log(f"probe: not started: {probe['reason']}")
        return False
    results = REPO / config["results"]
    table = results / registry.table("vit_w_svm").pattern
    t0 = time.time()
    watch = ProbeWatch(s, results / "logs/vit_probe/vit_w_svm.log", t0, t0 + left - reserve)
    try:
        done = stage(s, "probe", configs, [os.path.relpath(table, REPO)], left - reserve, watch=watch)
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


def page_without_probe(s: gpu.Session, configs: list[Path], written: Path) -> list[Path]:
    """The configs of a page made without the probe's table and panel, where the probe did not finish (cut, not
    started or failed): a config file written beside the session's others sets ``vit.docs_w_svm: false``, read by
    rule docs_vit alone (nothing trained or probed again). The page says why; its W-ATT-SVM claims are "not run";
    session.json's ``probe`` records it (``page``)."""
    path = write_config(written, "docs_w_svm.yaml", {"vit": {"docs_w_svm": False}})
    probe = s.summary["probe"]
    probe["page"] = (
        f"made without the W-ATT-SVM table and panel (its W-ATT-SVM claims not run), since the probe "
        f"{'failed' if probe['status'] == 'failed' else 'was ' + probe['status']}: {os.path.relpath(path, REPO)} "
        "sets vit.docs_w_svm: false"
    )
    s.log(f"page: {probe['page']}")
    return [*configs, path]


def measured_rate(s: gpu.Session, sidecar: Path) -> None:
    """The run's training images/s from its sidecar's times (the steps alone, after the compiled first rows), with
    its MFU where the device's peak is known: what the 2,000-image epochs make of the card."""
    rate = gpu_plan.training_rate(json.loads(sidecar.read_text()))
    if rate is None:
        return
    device = s.summary.get("device", {})
    flops = device.get("gflops_per_image_train", math.nan) / (1e3 * device.get("peak_tflops", math.nan))
    s.summary["run"].update(images_per_s=rate[0], rate_epochs=rate[1], mfu=rate[0] * flops)
    mfu = f", MFU {100 * rate[0] * flops:.1f}% of {device.get('peak_source')}" if math.isfinite(flops) else ""
    s.log(f"run: {rate[0]:,.0f} training images/s over its last {rate[1]} epochs (the steps alone){mfu}")


class RunWatch:
    """The run's rule log read while it trains: after a few epochs, its measured rate, projected end and whether
    that fits the stage's limit, logged then (and every minute) and kept in session.json's ``run``."""

    def __init__(self, s: gpu.Session, log: Path, epochs: int, since: float, reserve: float) -> None:
        self.s, self.log, self.epochs, self.since = s, log, epochs, since
        self.limit = s.deadline - 0.5 * reserve  # the run's stage is cut there
        self.after = gpu_plan.MEASURED.job_end_s + gpu_plan.MEASURED.table_s  # its last epoch to the stage's end
        self.next, self.last = 0.0, None

    def __call__(self, force: bool = False) -> None:
        if not self.log.is_file() or (time.time() < self.next and not force):
            return
        lines = self.log.read_text(errors="replace").splitlines()
        p = gpu_plan.run_projection(lines, self.epochs, since=self.since)
        if p is None or p == self.last:
            return
        self.next, self.last = time.time() + 60.0, p
        s, end = self.s, p.end + self.after
        record = {
            "at": round(p.at - s.start, 1),
            "epoch": p.done,
            "seconds_per_epoch": round(1 / p.rate, 4),
            "over_epochs": [p.since_done + 1, p.done],
            "end": round(end - s.start, 1),
            "limit": round(self.limit - s.start, 1),
            "fits": end <= self.limit,
        }
        s.summary["run"].setdefault("first_projection", record)
        s.summary["run"]["projection"] = record
        verdict = (
            f"within the stage's limit at {self.limit - s.start:.0f} s ({self.limit - end:.0f} s to spare)"
            if end <= self.limit
            else f"past the stage's limit at {self.limit - s.start:.0f} s: it is cut there, at about epoch "
            f"{p.by(self.limit - self.after)}, and its checkpoint's epochs come back"
        )
        s.log(
            f"run: epoch {p.done} of {p.total} at {p.at - s.start:.0f} s, {1 / p.rate:.2f} s an epoch over epochs "
            f"{p.since_done + 1}-{p.done} (rows and checkpoints included): it ends at about {end - s.start:.0f} s, "
            f"{verdict}"
        )
        s.save()

    def final(self) -> None:
        """The last projection, once the stage has ended (its last lines read)."""
        last_read(self.s, "run", lambda: self(force=True))


def last_read(s: gpu.Session, what: str, read: Callable[[], None]) -> None:
    """A watch's last reading of its log, after its stage: a note, never the session's end."""
    try:
        read()
    except processes.Interrupted:
        raise
    except Exception as err:  # noqa: BLE001 - whatever a damaged log raises
        s.log(f"{what}: its log could not be read ({type(err).__name__}: {err})")


class ProbeWatch:
    """The probe's rule log read while it runs: its start (the data and snapshots read) and, from its heads'
    progress lines, its rate and projected end against its limit; kept in session.json's ``probe``."""

    def __init__(self, s: gpu.Session, log: Path, since: float, limit: float) -> None:
        self.s, self.log, self.since, self.limit = s, log, since, limit
        self.started, self.last = None, None

    def final(self) -> None:
        last_read(self.s, "probe", self)

    def __call__(self) -> None:
        if not self.log.is_file():
            return
        started, p = gpu_plan.probe_projection(self.log.read_text(errors="replace").splitlines(), self.since)
        s, probe = self.s, self.s.summary["probe"]
        if started is not None and self.started is None:
            self.started = started
            probe["job_start"] = round(started - self.since, 1)
            s.log(f"probe: its job read the data and the snapshots {started - self.since:.0f} s after the stage began")
        if p is None or p == self.last:
            return
        self.last = p
        probe.update(heads_done=p.done, heads=p.total, seconds_per_head=round(1 / p.rate, 2))
        probe.update(end=round(p.end - s.start, 1), limit=round(self.limit - s.start, 1))
        verdict = "before" if p.end <= self.limit else "after"
        s.log(
            f"probe: {p.done} of {p.total} heads in {p.at - started:.0f} s ({1 / p.rate:.1f} s a head): it ends at "
            f"about {p.end - s.start:.0f} s, {verdict} its limit at {self.limit - s.start:.0f} s"
        )
        s.save()


CHECKPOINT = "runs/vit/checkpoint.pt"
TRAIN_LOG = "logs/vit_train/vit.log"


def job_work(log: Path, since: float) -> gpu_plan.JobWork:
    """What the run's training job did in this stage (trained from which epoch, restored, or nothing), by its rule
    log's lines from ``since`` on: the job's own word (gpu_plan.job_work), never a file's time."""
    if not log.is_file():
        return gpu_plan.JobWork(None)
    return gpu_plan.job_work(log.read_text(errors="replace").splitlines(), since)


def salvage(s: gpu.Session, path: Path, planned: dict, job: gpu_plan.JobWork, name: str) -> None:
    """The epochs a run cut at the wall limit or stopped by a signal finished, from its checkpoint, as CSV in
    OUT_DIR: only a checkpoint of the planned run. ``job``: what the stage's training job did (this session's
    epochs, or an earlier session's)."""
    if not path.is_file():
        s.summary["run"]["epochs_done"] = 0
        s.log("run cut: no checkpoint, no epoch finished")
        return
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - whatever a damaged file raises: said, and nothing brought back
        s.log(f"run cut: its checkpoint {path} cannot be read ({type(err).__name__}: {err}); nothing brought back")
        return
    verdict = gpu_plan.judge_checkpoint(state, planned, job)
    s.summary["run"].update(verdict.record, epochs_done=verdict.record["epochs"] if verdict.returned else 0)
    if not verdict.returned:
        s.log(f"run cut: its checkpoint {path.relative_to(REPO)} is {verdict.message}; nothing brought back")
        return
    table = path.with_name("cut_metrics.csv")
    gpu_plan.write_rows(state["metrics"], table)
    s.keep(table, name, {"stage": "run", **verdict.record})
    table.unlink()
    s.log(f"run cut: {verdict.record['epochs']} epochs done ({verdict.message}), read from its checkpoint")


def session_command(request: gpu.Request) -> str:
    """The command as it was given, with the settings it read from the environment (docs/gpu/index.md shows it)."""
    settings = [f"{name}={value}" for name, value in request.settings.items()]
    return " ".join([*settings, "bash tools/gpu_session.sh OUT_DIR", f"{request.minutes:g}"])


def main() -> int:
    if sys.argv[1:2] == ["--probe"]:
        print(json.dumps(probe(json.loads(sys.argv[2]), sys.argv[3])))
        return 0
    processes.raise_on_signals()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("minutes", nargs="?", default="9")
    ap.add_argument("--start", type=float, default=None, help="when the command started (epoch seconds)")
    args = ap.parse_args()
    try:
        request = gpu.session_request(args.out, args.minutes, os.environ, REPO)
        wheels = gpu.kit_wheels(request.kit)
        log_file = gpu.claim_out_dir(request.out)
    except gpu.UsageError as err:
        print(f"gpu-session: {err}", file=sys.stderr)
        return EXIT_USAGE
    except processes.Interrupted as stop:
        return 128 + stop.signum
    return session(gpu.Session(request, args.start or time.time(), log_file, REPO), wheels)


def session(s: gpu.Session, wheels: list[Path]) -> int:
    """The session between its checks and its end: whatever happens, nothing it started outlives it, its temporary
    folder is removed and session.json says how it ended."""
    s.summary["command"] = session_command(s.request)
    processes.become_subreaper()
    status = EXIT_FAILED
    with tempfile.TemporaryDirectory(prefix="gpu_session_site.") as site:
        try:
            status = run_session(s, Path(site), wheels)
        except gpu.UsageError as err:
            s.summary["refused"] = str(err)
            s.log(f"refused: {err}")
            print(f"gpu-session: {err}", file=sys.stderr)
            status = EXIT_USAGE
        except processes.Interrupted as stop:
            s.summary["interrupted"] = str(stop)
            s.log(f"interrupted by {stop}: stopping everything this session started")
            status = 128 + stop.signum
        except Exception as err:  # noqa: BLE001 - in session.log, which comes back, not only on a terminal
            s.summary["error"] = f"{type(err).__name__}: {err}"
            s.log(f"failed: {traceback.format_exc()}")
            print(f"gpu-session: failed ({type(err).__name__}: {err}); see {s.out / 'session.log'}", file=sys.stderr)
        finally:
            processes.ignore_signals()
            processes.stop_descendants()
            s.summary.update(seconds=time.time() - s.start, exit=status)
            s.save()
            s.log(f"exit {status} after {time.time() - s.start:.0f} s; OUT_DIR holds {sorted(s.summary['files'])}")
    return status


if __name__ == "__main__":
    sys.exit(main())
