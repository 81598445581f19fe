"""The device a GPU session runs on (docs/gpu.md, "What comes back": session.json's ``device``).

nvidia-smi into session.log, then torch's version and device properties, the model's training FLOPs per image and the
device's peak FLOP/s, measured in a process of its own (``python -m maxmargin.gpu.device MODEL DEVICE``: torch is
imported there, not in the session), beside the pilot or the run's start, which need none of it.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from typing import Any

from maxmargin.gpu import processes
from maxmargin.gpu.record import Session


def measure(model: dict, device: str) -> dict:
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


def start_measuring(s: Session, config: dict) -> subprocess.Popen:
    """nvidia-smi into the log, then :func:`measure` in a process of its own, beside the pilot (it needs neither)."""
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi"], capture_output=True, text=True)
        s.log("nvidia-smi:\n" + smi.stdout + smi.stderr)
    vit = config["vit"]
    args = [json.dumps(vit["model"]), vit["train"]["device"]]
    return s.popen([sys.executable, "-m", "maxmargin.gpu.device", *args], stdout=subprocess.PIPE, text=True)


def read_measures(s: Session, proc: subprocess.Popen) -> dict:
    """What :func:`start_measuring`'s process printed (its last line: an import may print before it), logged."""
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


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]), sys.argv[2])))
