"""One allocation of an offline GPU node: the plan, the run, the W-ATT-SVM probe, Figures 6-7 and the docs page
(docs/gpu.md).

``python -m maxmargin.gpu OUT_DIR [MINUTES] --start EPOCH_SECONDS``, started by tools/gpu_session.sh from the
repository's root. Before any work it checks its arguments, the ``GPU_SESSION_*`` settings, OUT_DIR (new or empty),
the kit and the config (:mod:`maxmargin.gpu.request`: a refusal names the fix, exit 2); it installs the kit's wheels
into a temporary folder (removed at exit: :mod:`maxmargin.gpu.kit`). Every stage goes through the pipeline's own
rules (:mod:`maxmargin.gpu.stages`), on workflow/config/paper.yaml, workflow/config/gpu_session.yaml, any files in
GPU_SESSION_CONFIG (colon-separated) and two it writes (where the kit lies; the epoch count):

  (a) the plan: the config's run priced by the figures the first session measured (:mod:`maxmargin.gpu.plan`,
      ``MEASURED``). Where it fits the time left with the page's reserve, no pilot: the config's epochs. Else
      `vit_pilot`: ``vit.pilot.epochs`` epochs; images/s, MFU against the card's dense bf16 peak, peak memory and
      compile time (the first epoch's time less the second's), and the epochs that fit;
  (b) `vit_train`, `vit_metrics_table` and `vit_baseline`: the run; its rule log is read as it trains, and after a
      few epochs its measured rate, projected end and whether that fits are logged (session.json's ``run``);
  (c) `vit_probe`, where the run keeps snapshots: each last-layer head against its W-ATT-SVM, started only where the
      time left before the page's reserve covers its start, stopped at that reserve (session.json's ``probe``); then,
      where ``vit.decisive.parts`` has ray, `vit_decisive_ray` the same way (session.json's ``ray``); what both cost
      is priced and logged with the plan, before anything starts (:mod:`maxmargin.gpu.plan_probe`);
  (d) the run's docs page (rule docs_vit), with Figures 6 and 7 (the paper's panels), the W-ATT-SVM panel and the
      ViT claims; where the probe did not finish, the page without the probe's table and panel (a config file it
      writes sets ``vit.docs_w_svm: false``: the page says why, its W-ATT-SVM claims are "not run").

Environment: GPU_KIT (the kit's folder), GPU_SESSION_CONFIG, GPU_SESSION_EPOCHS (a fixed epoch count),
GPU_SESSION_PILOT (1: a pilot; 0: none, the epochs given or the config's; unset: as the plan says),
GPU_SESSION_RESERVE (the seconds kept for the page).

OUT_DIR receives at most 8 files of at most 16 MiB, flat, each written as soon as its stage ends and only when it is of
the run the session planned (its settings, epoch count and fingerprint: session.json's ``files``,
:mod:`maxmargin.gpu.judge`): session.log, session.json, the pilot's table, the run's metrics, the probe's table, the ray
test's table, and the page with every file it links as one archive (<docs>.tar.gz, without the probe's table and panel,
or the ray test's table, where it did not finish; tools/gpu_report.py unpacks it). A stage that would pass the wall
limit is stopped with everything it started (:mod:`maxmargin.gpu.processes`), and the epochs a cut run finished are read
back from its checkpoint (:mod:`maxmargin.gpu.salvage`). SIGTERM, SIGINT or SIGHUP stops the stage the same way (a
stopped run's epochs read back as a cut run's). Whether this session made the run is what its training job's log says it
did (trained, restored, or nothing: :func:`maxmargin.gpu.watch.job_work`). Exit status: 0 the run and its page came back
(with its W-ATT-SVM and ray-test parts, or session.json's ``probe`` and ``ray`` say why not), 1 a stage failed or made
another run's files, 2 refused before any work, 3 cut at the wall limit before the page (Figures 6-7), 128 + N stopped
by signal N.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from maxmargin.gpu import paths, processes, stages
from maxmargin.gpu.device import read_measures, start_measuring
from maxmargin.gpu.judge import judge_finished, planned_settings
from maxmargin.gpu.kit import install_kit, kit_wheels
from maxmargin.gpu.plan import fig6_epochs, wants_pilot
from maxmargin.gpu.plan_probe import plan_analyses
from maxmargin.gpu.record import Session
from maxmargin.gpu.request import (
    EXIT_CUT,
    EXIT_FAILED,
    EXIT_USAGE,
    UsageError,
    check_config,
    check_data,
    claim_out_dir,
    merged_config,
    session_command,
    session_request,
)
from maxmargin.gpu.salvage import salvage

CONFIGS = "workflow/config"  # under the repository: default.yaml, paper.yaml, gpu_session.yaml
SCHEMA = "workflow/schemas/config.schema.yaml"


def prepare(s: Session, site: Path, wheels: list[Path]) -> tuple[dict, list[Path], Path]:
    """The kit installed, the session's configs (and the folder of those it writes), and the config checked."""
    install_kit(s, site, wheels)
    folder = s.repo / CONFIGS
    configs = [folder / "paper.yaml", folder / "gpu_session.yaml", *s.request.configs]
    results = merged_config(configs, folder / "default.yaml")["results"]
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(s.start))
    written = s.repo / results / "gpu_sessions" / f"{stamp}-{os.getpid()}"
    kit = {"vit": {"data": {"fashion_mnist_files": str(s.request.kit / "fashion-mnist")}}}
    configs.append(stages.write_config(written, "kit.yaml", kit))
    config = merged_config(configs, folder / "default.yaml")
    check_config(config, configs, s.repo / SCHEMA)
    check_data(config, s.repo)
    s.summary["configs"] = [os.path.relpath(p, s.repo) for p in configs]
    importlib.invalidate_caches()
    s.summary["cvxopt"] = importlib.util.find_spec("cvxopt") is not None
    s.log(
        "cvxopt: here (the W-ATT-SVM probe's fallbacks can run)"
        if s.summary["cvxopt"]
        else "cvxopt: not here (the W-ATT-SVM probe's hard-margin pivoting runs; a fallback would fail, and is said)"
    )
    return config, configs, written


def run_session(s: Session, site: Path, wheels: list[Path]) -> int:
    """The plan (a pilot's, or the config's own run), then the run, the probe and the page. The exit status."""
    config, configs, written = prepare(s, site, wheels)
    measuring = start_measuring(s, config)
    pilot = wants_pilot(s, config)
    plan_analyses(s, config)  # what the probe and the ray test cost after the run, said before anything starts
    if not pilot:  # the device is read after the run's stage
        epochs = s.request.epochs or int(config["vit"]["train"]["epochs"])
        return run_and_page(s, configs, written, epochs, measuring)
    epochs = stages.pilot_stage(s, configs, written, config, measuring)
    if epochs is None:
        return EXIT_CUT if s.last["cut"] else EXIT_FAILED
    return run_and_page(s, configs, written, epochs, None)


def run_and_page(
    s: Session, configs: list[Path], written: Path, epochs: int, measuring: subprocess.Popen | None
) -> int:
    """The run of ``epochs`` epochs (resumed from its checkpoint where one is of the same run), the W-ATT-SVM probe
    of its snapshots where the time left allows, then the page (:func:`probe_and_page`); each file brought back only
    when it is of the planned run. ``measuring``: the device's numbers, where no pilot has read them (they are
    measured beside the run's start). The exit status."""
    default = s.repo / CONFIGS / "default.yaml"
    config = merged_config(configs, default)
    every = config["vit"]["train"]["eval_every"]
    plots = {"vit": {"train": {"epochs": epochs}, "plots": {"fig6_epochs": fig6_epochs(epochs, every)}}}
    configs = [*configs, stages.write_config(written, "epochs.yaml", plots)]
    config = merged_config(configs, default)
    planned, results, docs = planned_settings(config["vit"]), s.repo / config["results"], config["vit"]["docs"]
    s.summary.update(docs=docs, results=config["results"])
    s.summary["run"] = {"epochs_planned": epochs, "reserve_seconds": s.request.reserve}
    s.log(f"run: {epochs} epochs ({s.left():.0f} s left, {s.request.reserve:.0f} s kept for the page)")
    finished, job = stages.run_stage(s, configs, results, planned, f"{docs}_metrics.csv")
    if measuring is not None:
        s.summary["device"] = read_measures(s, measuring)
    if not finished:
        if not s.last["cut"]:
            return EXIT_FAILED
        salvage(s, results / paths.CHECKPOINT, planned, job(), f"{docs}_metrics.csv")
        return EXIT_CUT
    table = results / paths.METRICS
    verdict = judge_finished(results / paths.SIDECAR, table, planned, job())
    s.summary["run"].update(verdict.record, epochs_done=verdict.record.get("epochs"))
    s.log(f"run: {table.name} is {verdict.message}")
    if not verdict.returned:
        return EXIT_FAILED
    s.keep(table, f"{docs}_metrics.csv", {"stage": "run", **verdict.record})
    stages.measured_rate(s, results / paths.SIDECAR)
    # The baseline's one row in session.json too (its table comes back with the page)
    with (results / paths.BASELINE).open() as f:
        s.summary["baseline"] = next(csv.DictReader(f))
    return probe_and_page(s, configs, written, config, table, verdict.record)


def probe_and_page(s: Session, configs: list[Path], written: Path, config: dict, table: Path, record: dict) -> int:
    """The probe where the run keeps snapshots, the ray test where ``vit.decisive.parts`` asks for it, then the page:
    without the probe's table and panel, or the ray test's, where it did not finish
    (:func:`maxmargin.gpu.stages.page_without_probe`, :func:`~maxmargin.gpu.stages.page_without_ray`). The exit
    status."""
    vit = config["vit"]
    probed = stages.probe_stage(s, configs, config, record) if vit["train"]["snapshot_every"] else None
    if probed is False:  # the page without the probe's table and panel, and session.json's probe says why
        configs = stages.page_without_probe(s, configs, written)
    if ray_asked(vit) and not stages.ray_stage(s, configs, config, record):
        configs = stages.page_without_ray(s, configs, written, vit["decisive"]["parts"])
    with_w_svm = probed is not False and vit["docs_w_svm"]
    return stages.page_stage(s, configs, vit["docs"], table, record, with_w_svm)


def ray_asked(vit: dict) -> bool:
    """Whether the run's page includes the ray test (``vit.decisive.parts``) at some snapshot of the run."""
    decisive = vit["decisive"]
    return "ray" in decisive["parts"] and bool(decisive["at"]) and bool(vit["train"]["snapshot_every"])


def session(s: Session, wheels: list[Path]) -> int:
    """The session between its checks and its end: whatever happens, nothing it started outlives it, its temporary
    folder is removed and session.json says how it ended."""
    s.summary["command"] = session_command(s.request)
    processes.become_subreaper()
    status = EXIT_FAILED
    with tempfile.TemporaryDirectory(prefix="gpu_session_site.") as site:
        try:
            status = run_session(s, Path(site), wheels)
        except UsageError as err:
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


def main(argv: list[str] | None = None) -> int:
    """The command line: its checks (refused: exit 2, before OUT_DIR is touched where the arguments are wrong),
    then :func:`session`. The repository is the working directory (tools/gpu_session.sh goes there)."""
    processes.raise_on_signals()
    ap = argparse.ArgumentParser(prog="python -m maxmargin.gpu", description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("minutes", nargs="?", default="9")
    ap.add_argument("--start", type=float, default=None, help="when the command started (epoch seconds)")
    args = ap.parse_args(argv)
    repo = Path.cwd()
    try:
        if not (repo / "Snakefile").is_file():
            raise UsageError(f"{repo} holds no Snakefile: run from the repository's root (bash tools/gpu_session.sh)")
        request = session_request(args.out, args.minutes, os.environ, repo)
        wheels = kit_wheels(request.kit)
        log_file = claim_out_dir(request.out)
    except UsageError as err:
        print(f"gpu-session: {err}", file=sys.stderr)
        return EXIT_USAGE
    except processes.Interrupted as stop:
        return 128 + stop.signum
    return session(Session(request, args.start or time.time(), log_file, repo), wheels)
