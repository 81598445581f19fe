"""The paper's ViT's FLOPs and a device's peak FLOP/s, for its MFU (benchmarks/vit_benchmark.py, the GPU session).

FLOPs per image are counted by ``torch.utils.flop_counter.FlopCounterMode`` on the meta device (matmuls and
convolutions, forward + backward; SDPA through its math decomposition) and checked against the analytic count. The
peaks: the dense bf16 tensor-core peak of known GPUs, and on a CPU a measured float32 matmul peak.
"""

from __future__ import annotations

import time

import torch
from torch.utils.flop_counter import FlopCounterMode

from maxmargin.experiments.vit.model import build_vit
from maxmargin.experiments.vit.settings import ModelSettings

GPU_PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "GH200": 989.0, "A100": 312.0}  # dense bf16


def count_flops(model_settings: ModelSettings) -> tuple[float, float]:
    """(forward, forward + backward) FLOPs per image, counted on the meta device."""
    with torch.device("meta"):
        model = build_vit(model_settings)
        x = torch.randn(1, 3, model_settings.img_size, model_settings.img_size)
    counts = []
    for backward in (False, True):
        counter = FlopCounterMode(display=False)
        with counter:
            out = model(x)
            if backward:
                out.sum().backward()
        counts.append(float(counter.get_total_flops()))
    return counts[0], counts[1]


def analytic_flops(m: ModelSettings) -> float:
    """Forward + backward FLOPs per image: 3 x (2 x block params x tokens + 4 x depth x tokens^2 x dim)."""
    tokens = (m.img_size // m.patch_size) ** 2 + 1
    block_params = m.depth * (4 + 2 * m.mlp_ratio) * m.embed_dim**2
    return 3.0 * (2.0 * block_params * tokens + 4.0 * m.depth * tokens**2 * m.embed_dim)


def cpu_matmul_peak(n: int = 2048, repeats: int = 5) -> float:
    """Measured float32 matmul FLOP/s of this CPU (the best of ``repeats``)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best
