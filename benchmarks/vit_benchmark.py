"""Training throughput (images/s) and model FLOP utilisation of the paper's ViT, and the paper run's expected time.

Paper: Section 4, "Real experiments" (ViT-base, patch 2 on 32x32 CIFAR-10, 400 epochs). Runs on whatever device
it finds (CUDA when available); a few timed training steps (forward, backward, optimiser step) of the model in
``workflow/config/paper.yaml`` merged over ``default.yaml``.

FLOPs per image are counted by ``torch.utils.flop_counter.FlopCounterMode`` on the meta device (matmuls and
convolutions, forward + backward; SDPA counted through its math decomposition) and checked against the analytic
count 6 * (params in the blocks) * tokens + 12 * depth * tokens^2 * dim. MFU = images/s * FLOPs/image / peak.
Peak FLOP/s: ``--peak-tflops``; default: the dense bf16 tensor-core peak for known GPUs (H100/H200 SXM 989,
A100 312 TFLOP/s), and on a CPU a measured float32 matmul peak.

It also prints what one allocation of an offline GPU node (docs/gpu.md) buys at ``--assumed-mfu``: the seconds of
one Fashion-MNIST epoch (60,000 training images, the 10,000 test images and the probe's forward passes) and the
epochs that fit in 6 and 7 minutes, on an H100 and an H200 (the same dense bf16 peak).

    .venv/bin/python benchmarks/vit_benchmark.py                  # CPU here: batch 2, 2 timed steps, < 1 min
    .venv/bin/python benchmarks/vit_benchmark.py --config workflow/config/paper.yaml workflow/config/gpu_vitb4.yaml
    python benchmarks/vit_benchmark.py --batch-size 128 --steps 20 --bf16 --compile   # on a GPU
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.nn import functional

from maxmargin.config import merged_config
from maxmargin.experiments.vit import ModelSettings, TrainSettings, build_vit, make_optimizer, resolve_device
from maxmargin.experiments.vit_flops import GPU_PEAK_TFLOPS, analytic_flops, count_flops, cpu_matmul_peak

REPO = Path(__file__).resolve().parents[1]
CIFAR10_TRAIN, CIFAR10_TEST = 50_000, 10_000
FASHION_TRAIN, FASHION_TEST = 60_000, 10_000
ALLOCATION_MINUTES = (6.0, 7.0)  # the training time one allocation leaves (docs/gpu.md)


def paper_vit_config(*configs: Path) -> dict:
    """default.yaml's ``vit`` section with ``configs`` merged over it in order (as ``--configfile`` does)."""
    return merged_config(configs, REPO / "workflow/config/default.yaml")["vit"]


def fashion_epoch_flops(cfg: dict, fwd_flops: float, train_flops: float) -> float:
    """FLOPs of one Fashion-MNIST epoch: training on all its images, then the test set and the probe forward."""
    return FASHION_TRAIN * train_flops + (FASHION_TEST + min(cfg["probe"]["n_images"], FASHION_TEST)) * fwd_flops


def device_peak(device: torch.device, override_tflops: float | None) -> tuple[float, str]:
    if override_tflops:
        return override_tflops * 1e12, "--peak-tflops"
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        for key, tflops in GPU_PEAK_TFLOPS.items():
            if key in name:
                return tflops * 1e12, f"dense bf16 peak of {key}"
        raise SystemExit(f"unknown GPU {name!r}: give its dense bf16 peak with --peak-tflops")
    return cpu_matmul_peak(), "measured float32 matmul peak of this CPU"


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, nargs="+", default=[REPO / "workflow/config/paper.yaml"])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--batch-size", type=int, default=None, help="default: 2 on a CPU, the config's on a GPU")
    ap.add_argument("--steps", type=int, default=None, help="timed steps (default: 2 on a CPU, 20 on a GPU)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps first (default: 1 CPU, 5 GPU)")
    ap.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None, help="default: on for CUDA")
    ap.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False)
    ap.add_argument("--peak-tflops", type=float, default=None, help="peak FLOP/s of the device, in TFLOP/s")
    ap.add_argument("--assumed-mfu", type=float, default=0.35, help="MFU assumed for the H100 time estimate")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    return ap.parse_args()


@dataclass(frozen=True)
class TimedSteps:
    """How the training steps were timed: device, batch, number of warm-up and timed steps, bf16, compile."""

    device: torch.device
    batch: int
    steps: int
    warmup: int
    bf16: bool
    compile: bool


def training_throughput(model_settings: ModelSettings, train_settings: TrainSettings, timing: TimedSteps) -> float:
    """Images per second of full training steps (forward, backward, optimiser step) on random images."""
    device, gpu = timing.device, timing.device.type == "cuda"
    torch.manual_seed(0)
    model = build_vit(model_settings).to(device).train()
    optimizer = make_optimizer(model, train_settings, model_settings.embed_dim)
    forward = torch.compile(model) if timing.compile else model
    x = torch.randn(timing.batch, 3, model_settings.img_size, model_settings.img_size, device=device)
    y = torch.randint(0, model_settings.num_classes, (timing.batch,), device=device)

    def step() -> None:
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=timing.bf16):
            loss = functional.cross_entropy(forward(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def sync() -> None:
        if gpu:
            torch.cuda.synchronize(device)

    for _ in range(timing.warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(timing.steps):
        step()
    sync()
    return timing.batch * timing.steps / (time.perf_counter() - t0)


def paper_run_flops(cfg: dict, fwd_flops: float, train_flops: float) -> float:
    """FLOPs of the configured run on CIFAR-10: every epoch trains on the training set and evaluates the test set
    and the probe; epoch 0 adds one forward pass over the training set."""
    n_eval = CIFAR10_TEST + min(cfg["probe"]["n_images"], CIFAR10_TEST)
    epochs = cfg["train"]["epochs"]
    return epochs * (CIFAR10_TRAIN * train_flops + n_eval * fwd_flops) + CIFAR10_TRAIN * fwd_flops


def print_summary(result: dict, model_settings: ModelSettings) -> None:
    m = model_settings
    print(
        f"device            {result['device']}  (batch {result['batch_size']}, {result['steps']} timed steps, "
        f"bf16 {result['bf16']}, compile {result['compile']}, {result['optimizer']})"
    )
    print(
        f"model             ViT {m.embed_dim}-d, depth {m.depth}, {m.num_heads} heads, patch {m.patch_size} on "
        f"{m.img_size}x{m.img_size}"
    )
    print(
        f"FLOPs / image     {result['gflops_per_image_forward']:.1f} G forward, "
        f"{result['gflops_per_image_train']:.1f} G forward+backward "
        f"(analytic {result['gflops_per_image_train_analytic']:.1f} G)"
    )
    print(f"throughput        {result['images_per_s']:.2f} images/s = {result['achieved_tflops']:.3f} TFLOP/s")
    print(
        f"MFU               {100 * result['mfu']:.1f}% of {result['peak_tflops']:.2f} TFLOP/s ({result['peak_source']})"
    )
    print(
        f"paper run         {result['paper_epochs']} epochs x {CIFAR10_TRAIN} images + evaluation = "
        f"{result['paper_run_pflops'] / 1e3:.2f} EFLOP"
    )
    print(
        f"expected time     {result['h100_estimated_hours']:.1f} h on one H100 at "
        f"{100 * result['h100_assumed_mfu']:.0f}% MFU ({GPU_PEAK_TFLOPS['H100']:.0f} TFLOP/s dense bf16); "
        f"{result['this_device_estimated_hours']:.1f} h on this device at the measured rate"
    )
    fits = ", ".join(f"{n} in {m:g} min" for m, n in zip(ALLOCATION_MINUTES, result["allocation_epochs"], strict=True))
    print(
        f"one allocation    Fashion-MNIST epoch {result['fashion_epoch_seconds']:.1f} s on an H100 or H200 at "
        f"{100 * result['h100_assumed_mfu']:.0f}% MFU: epochs {fits}"
    )


def main() -> None:
    args = parse_args()
    cfg = paper_vit_config(*args.config)
    model_settings = ModelSettings(**cfg["model"])
    train_settings = TrainSettings(**cfg["train"])
    device = resolve_device(args.device)
    gpu = device.type == "cuda"
    timing = TimedSteps(
        device=device,
        batch=args.batch_size or (train_settings.batch_size if gpu else 2),
        steps=args.steps or (20 if gpu else 2),
        warmup=args.warmup if args.warmup is not None else (5 if gpu else 1),
        bf16=gpu if args.bf16 is None else args.bf16,
        compile=args.compile,
    )
    fwd_flops, train_flops = count_flops(model_settings)
    peak, peak_source = device_peak(device, args.peak_tflops)
    images_per_s = training_throughput(model_settings, train_settings, timing)
    paper_flops = paper_run_flops(cfg, fwd_flops, train_flops)
    h100_rate = GPU_PEAK_TFLOPS["H100"] * 1e12 * args.assumed_mfu
    fashion_epoch = fashion_epoch_flops(cfg, fwd_flops, train_flops) / h100_rate
    result = {
        "device": torch.cuda.get_device_name(device) if gpu else f"cpu ({torch.get_num_threads()} threads)",
        "model": cfg["model"],
        "optimizer": train_settings.optimizer,
        "batch_size": timing.batch,
        "steps": timing.steps,
        "bf16": timing.bf16,
        "compile": timing.compile,
        "gflops_per_image_forward": fwd_flops / 1e9,
        "gflops_per_image_train": train_flops / 1e9,
        "gflops_per_image_train_analytic": analytic_flops(model_settings) / 1e9,
        "images_per_s": images_per_s,
        "achieved_tflops": images_per_s * train_flops / 1e12,
        "peak_tflops": peak / 1e12,
        "peak_source": peak_source,
        "mfu": images_per_s * train_flops / peak,
        "paper_run_pflops": paper_flops / 1e15,
        "paper_epochs": train_settings.epochs,
        "h100_assumed_mfu": args.assumed_mfu,
        "h100_estimated_hours": paper_flops / h100_rate / 3600,
        "this_device_estimated_hours": paper_flops / (images_per_s * train_flops) / 3600,
        "fashion_epoch_seconds": fashion_epoch,
        "allocation_epochs": [int(60 * m // fashion_epoch) for m in ALLOCATION_MINUTES],
    }
    print_summary(result, model_settings)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
