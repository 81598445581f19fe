"""One allocation of an offline GPU node: pilot, the run that fits, Figures 6-7 and the docs page (docs/gpu.md).

Started by tools/gpu_session.sh (which puts the kit's wheels on PYTHONPATH), from the repository's root. Every stage
goes through the pipeline's own rules, on workflow/config/paper.yaml, workflow/config/gpu_session.yaml, any files in
GPU_SESSION_CONFIG (colon-separated) and one written here (the epoch count):

  (a) `vit_pilot`: ``vit.pilot.epochs`` epochs; images/s, MFU against the card's dense bf16 peak, peak memory and
      compile time (the first epoch's time less the second's);
  (b) `vit_metrics_table` and `vit_baseline`: the run, with as many epochs as the pilot says fit before the wall
      limit, less a reserve for (c);
  (c) the run's docs page (rule docs_vit), with Figures 6 and 7 (the paper's panels) and the ViT claims.

Environment: GPU_KIT (the kit's folder), GPU_SESSION_CONFIG, GPU_SESSION_EPOCHS (a fixed epoch count instead of the
pilot's plan), GPU_SESSION_PILOT=0 (with GPU_SESSION_EPOCHS: no pilot, for a run resumed over several allocations),
GPU_SESSION_RESERVE (the seconds kept for stage c).

OUT_DIR receives at most :data:`MAX_FILES` files, flat, each written as soon as its stage ends, and session.json is
rewritten after every stage; a stage that would pass the wall limit is stopped (SIGTERM to Snakemake, then SIGKILL),
and the epochs a cut run finished are read back from its checkpoint.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
MAX_FILES = 8  # what comes back from the node: 8 files of one folder
SAFETY_SECONDS = 15.0  # kept back from the wall limit: the last copies and session.json
# Kept for stage (c): Snakemake's start and five short jobs (GPU_SESSION_RESERVE overrides).
RESERVE = float(os.environ.get("GPU_SESSION_RESERVE", 45.0))
EPOCH_LINE = re.compile(r"epoch (\d+): train loss .*\(([0-9.]+)s\)")


class Session:
    """The wall clock, the log (also echoed) and the files of OUT_DIR."""

    def __init__(self, out: Path, start: float, minutes: float) -> None:
        self.out, self.start = out, start
        self.deadline = start + 60.0 * minutes - SAFETY_SECONDS
        out.mkdir(parents=True, exist_ok=True)
        self.log_file = (out / "session.log").open("a", buffering=1)
        self.summary: dict[str, Any] = {"minutes": minutes, "stages": {}}

    def left(self) -> float:
        return self.deadline - time.time()

    def log(self, text: str) -> None:
        line = f"[gpu-session {time.time() - self.start:6.1f}s] {text}"
        print(line, flush=True)
        self.log_file.write(line + "\n")

    def keep(self, source: Path, name: str) -> None:
        """Copy ``source`` into OUT_DIR as ``name`` (never more than MAX_FILES files there)."""
        present = {p.name for p in self.out.iterdir()}
        if name not in present and len(present) >= MAX_FILES:
            self.log(f"not kept: {name} (OUT_DIR already holds {MAX_FILES} files)")
            return
        if source.is_file():
            shutil.copyfile(source, self.out / name)

    def save(self) -> None:
        tmp = self.out / ".session.json.tmp"
        tmp.write_text(json.dumps(self.summary, indent=2, default=str) + "\n")
        tmp.replace(self.out / "session.json")

    def run(self, cmd: list[str], limit: float) -> tuple[int, bool]:
        """Run ``cmd`` in its own process group for at most ``limit`` seconds; (exit status, cut)."""
        self.log(f"$ {' '.join(cmd)}   (at most {limit:.0f} s)")
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        echo = threading.Thread(target=self._echo, args=(proc,), daemon=True)
        echo.start()
        try:
            return proc.wait(timeout=max(limit, 1.0)), False
        except subprocess.TimeoutExpired:
            self.log(f"stopping it at the wall limit ({limit:.0f} s)")
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return proc.returncode, True
        finally:
            echo.join(timeout=5)

    def _echo(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:
            print(line, end="", flush=True)
            self.log_file.write(line)


def snakemake_cmd(configs: list[Path], targets: list[str], cores: int, options: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        str(cores),
        "--scheduler",
        "greedy",
        "--resources",
        "gpu=1",
        *options,
        "--configfile",
        *map(str, configs),
        "--",
        *targets,
    ]


def merged_config(configs: list[Path]) -> dict:
    """default.yaml with ``configs`` merged over it in order, as --configfile does."""

    def merge(base: dict, over: dict) -> dict:
        return {k: merge(base.get(k, {}), v) if isinstance(v, dict) else v for k, v in {**base, **over}.items()}

    config = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())
    for path in configs:
        config = merge(config, yaml.safe_load(path.read_text()) or {})
    return config


def probe(model: dict, device: str) -> dict:
    """torch's version and device properties, the model's training FLOPs per image and the device's peak FLOP/s (the
    card's dense bf16 peak, or this CPU's measured float32 matmul peak): benchmarks/vit_benchmark.py's numbers."""
    import torch

    sys.path.insert(0, str(REPO / "benchmarks"))
    from vit_benchmark import GPU_PEAK_TFLOPS, count_flops, cpu_matmul_peak

    from maxmargin.experiments.vit import ModelSettings

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


def start_probe(s: Session, config: dict) -> subprocess.Popen:
    """nvidia-smi into the log, then :func:`probe` in a process of its own, beside the pilot (it needs neither)."""
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True)
        s.log("nvidia-smi:\n" + smi.stdout + smi.stderr)
    vit = config["vit"]
    args = [json.dumps(vit["model"]), vit["train"]["device"]]
    return subprocess.Popen([sys.executable, __file__, "--probe", *args], cwd=REPO, stdout=subprocess.PIPE, text=True)


def read_probe(s: Session, proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=max(s.left(), 1.0))
    lines = out.strip().splitlines()  # its JSON is the last line: an import may print before it
    device = json.loads(lines[-1]) if proc.returncode == 0 and lines else {"error": f"probe exit {proc.returncode}"}
    s.log(f"device: {json.dumps(device)}")
    return device


def pilot_numbers(config: dict, wall: float, device: dict) -> dict:
    """The pilot's table row with its MFU, compile time and epoch times (its log: one line per epoch)."""
    results = REPO / config["results"]
    with (results / "tables/vit_pilot.csv").open() as f:
        row = next(csv.DictReader(f))
    log_text = (results / "logs/vit_pilot/pilot.log").read_text()
    times = {int(e): float(t) for e, t in EPOCH_LINE.findall(log_text)}
    trained = [times[e] for e in sorted(times) if e >= 1]
    images_per_s = float(row["images_per_s"])
    return {
        **row,
        "stage_seconds": wall,
        "epoch_times": times,
        "steady_epoch_seconds": float(row["epoch_seconds"]),  # the mean after the first trained epoch
        "compile_seconds": trained[0] - trained[-1] if len(trained) > 1 else None,
        "mfu": images_per_s * device["gflops_per_image_train"] / (1e3 * device["peak_tflops"]),
    }


def plan_epochs(s: Session, pilot: dict, forced: int | None, most: int, reserve: float) -> int:
    """The run's epochs: it costs the pilot's stage less its trained epochs and its compile time (Inductor's cache is
    warm by then: on the first H100 session the run's first epoch took 2 s over a steady one, the pilot's 33 s), plus
    N steady epochs; ``reserve`` seconds stay for stage (c)."""
    epoch, n_pilot = pilot["steady_epoch_seconds"], len(pilot["epoch_times"]) - 1
    fixed = pilot["stage_seconds"] - n_pilot * epoch - (pilot["compile_seconds"] or 0.0)
    fit = math.floor((s.left() - reserve - fixed) / max(epoch, 1e-3))
    return forced or max(1, min(fit, most))


def fig6_epochs(epochs: int) -> list[int]:
    """Five epochs of Figure 6 spread over the run, as paper.yaml's [0, 100, 200, 300, 400] over 400."""
    return sorted({round(epochs * k / 4) for k in range(5)})


def salvage_metrics(config: dict, dest: Path) -> int:
    """The epochs a cut run finished, from its checkpoint, as CSV; how many."""
    import torch

    path = REPO / config["results"] / "runs/vit/checkpoint.pt"
    if not path.is_file():
        return 0
    rows = torch.load(path, map_location="cpu", weights_only=False)["metrics"]
    with dest.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return len(rows) - 1


def stage(
    s: Session, name: str, configs: list[Path], targets: list[str], limit: float, cores: int, options: list[str] = ()
) -> bool:
    """One Snakemake run of ``targets``, stopped after ``limit`` seconds; whether it finished."""
    t0 = time.time()
    rc, cut = s.run(snakemake_cmd(configs, targets, cores, list(options)), limit)
    s.summary["stages"][name] = {"seconds": time.time() - t0, "exit": rc, "cut": cut}
    s.log(f"stage {name}: exit {rc}{' (cut at the wall limit)' if cut else ''} after {time.time() - t0:.0f} s")
    s.save()
    return rc == 0 and not cut


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        print(json.dumps(probe(json.loads(sys.argv[2]), sys.argv[3])))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("minutes", type=float, nargs="?", default=9.0)
    ap.add_argument("--start", type=float, default=None, help="when the command started (epoch seconds)")
    args = ap.parse_args()
    s = Session(args.out.resolve(), args.start or time.time(), args.minutes)
    s.summary["command"] = session_command(args.minutes)
    kit = Path(os.environ.get("GPU_KIT", REPO / "gpu_kit")).resolve()
    extra = [Path(p).resolve() for p in os.environ.get("GPU_SESSION_CONFIG", "").split(":") if p]
    configs = [REPO / "workflow/config/paper.yaml", REPO / "workflow/config/gpu_session.yaml", *extra]
    with tempfile.TemporaryDirectory(prefix="gpu_session_") as tmp:  # the written configs: no files to bring back
        here = Path(tmp, "kit.yaml")
        here.write_text(yaml.safe_dump({"vit": {"data": {"fashion_mnist_files": str(kit / "fashion-mnist")}}}))
        configs.append(here)
        try:
            run_session(s, merged_config(configs), configs, Path(tmp))
        finally:
            s.summary["seconds"] = time.time() - s.start
        s.save()
        s.log(f"done in {time.time() - s.start:.0f} s; OUT_DIR holds {sorted(p.name for p in s.out.iterdir())}")


def session_command(minutes: float) -> str:
    """The command as it was given, with the settings it read from the environment (docs/gpu/index.md shows it)."""
    names = ("GPU_SESSION_CONFIG", "GPU_SESSION_EPOCHS", "GPU_SESSION_PILOT", "GPU_SESSION_RESERVE")
    settings = [f"{name}={os.environ[name]}" for name in names if os.environ.get(name)]
    return " ".join([*settings, "bash tools/gpu_session.sh OUT_DIR", f"{minutes:g}"])


def run_session(s: Session, config: dict, configs: list[Path], tmp: Path) -> None:
    """Stage (a), the pilot, and from its numbers the epochs of the run; then (b) and (c)."""
    vit, cores = config["vit"], os.cpu_count() or 2
    probing = start_probe(s, config)
    forced = int(os.environ["GPU_SESSION_EPOCHS"]) if os.environ.get("GPU_SESSION_EPOCHS") else None
    if forced and os.environ.get("GPU_SESSION_PILOT") == "0":  # a run of fixed length resumed: no pilot needed
        s.summary["device"] = read_probe(s, probing)
        run_and_figures(s, config, configs, tmp, forced)
        return
    t0 = time.time()
    # --forcerun: a pilot always measures this machine, even where an earlier allocation left its table
    options = ["--forcerun", "vit_pilot_run"]
    done = stage(s, "pilot", configs, ["vit_pilot"], s.left(), cores, options)
    if not done and not s.summary["stages"]["pilot"]["cut"] and vit["train"]["compile"]:
        s.log("the pilot failed with torch.compile on (its error is above): once more, and the run, without it")
        eager = tmp / "eager.yaml"
        eager.write_text(yaml.safe_dump({"vit": {"train": {"compile": False}}}))
        configs.append(eager)
        t0 = time.time()
        done = stage(s, "pilot_eager", configs, ["vit_pilot"], s.left(), cores, options)
    if not done:
        return
    s.keep(REPO / config["results"] / "tables/vit_pilot.csv", "vit_pilot.csv")
    wall = time.time() - t0
    s.summary["device"] = device = read_probe(s, probing)
    s.summary["pilot"] = pilot = pilot_numbers(config, wall, device)
    s.log(
        f"pilot: {float(pilot['images_per_s']):.1f} images/s, MFU {100 * pilot['mfu']:.1f}% of "
        f"{device['peak_source']}, compile {pilot['compile_seconds']} s, steady epoch "
        f"{pilot['steady_epoch_seconds']:.1f} s, peak memory {float(pilot['peak_memory_mb']):.0f} MB"
    )
    epochs = plan_epochs(s, pilot, forced, vit["train"]["epochs"], RESERVE)
    run_and_figures(s, config, configs, tmp, epochs)


def run_and_figures(s: Session, config: dict, configs: list[Path], tmp: Path, epochs: int) -> None:
    """Stages (b) and (c): the run of ``epochs`` epochs (resumed from its checkpoint where one is), then the page."""
    docs, cores = config["vit"]["docs"], os.cpu_count() or 2
    s.summary["run"] = {"epochs_planned": epochs, "reserve_seconds": RESERVE}
    s.log(f"run: {epochs} epochs ({s.left():.0f} s left, {RESERVE:.0f} s kept for the figures)")
    plan = tmp / "epochs.yaml"
    plan.write_text(
        yaml.safe_dump({"vit": {"train": {"epochs": epochs}, "plots": {"fig6_epochs": fig6_epochs(epochs)}}})
    )
    configs = [*configs, plan]
    done = stage(s, "run", configs, ["vit_metrics_table", "vit_baseline"], s.left() - 0.5 * RESERVE, cores)
    metrics = s.out / f"{docs}_metrics.csv"
    if not done:
        s.summary["run"]["epochs_done"] = salvage_metrics(config, metrics)
        s.log(f"run cut: {s.summary['run']['epochs_done']} epochs done, read from its checkpoint")
        return
    s.keep(REPO / config["results"] / "tables/vit_metrics.csv", metrics.name)
    s.summary["run"]["epochs_done"] = epochs
    # The page's other tables do not come back (8 files): the baseline's one row travels in session.json instead
    with (REPO / config["results"] / "tables/vit_baseline.csv").open() as f:
        s.summary["baseline"] = next(csv.DictReader(f))
    # The page builds Figures 6 and 7 (their panels of the paper; the aggregate targets fig6/fig7 add panels beyond it)
    if stage(s, "figures", configs, [f"docs/results/{docs}.md"], s.left(), cores):
        for suffix in (".md", "_fig6.png", "_fig7.png", "_claims.csv"):
            s.keep(REPO / "docs/results" / f"{docs}{suffix}", f"{docs}{suffix}")


if __name__ == "__main__":
    main()
