"""Which machine made a ViT run's numbers, for the record (its sidecar): the processor's name and the peak memory.
Nothing here changes a number, so it is outside the training code's fingerprint."""

from __future__ import annotations

import contextlib
import platform
from pathlib import Path

import torch


def cpu_name() -> str:
    """The processor's model name (from /proc/cpuinfo on Linux), for the record of which machine made the numbers."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def blas_kernels() -> list[dict[str, str]]:
    """The BLAS libraries loaded in this process with their kernel sets (threadpoolctl's ``architecture``, e.g.
    OpenBLAS's Haswell or SkylakeX): two machines with one CPU name can pick different kernel sets, which round
    differently, so a rerun reproduces a digit only on the same set."""
    from threadpoolctl import threadpool_info

    keys = ("internal_api", "version", "architecture")
    return [{key: str(lib.get(key)) for key in keys} for lib in threadpool_info() if lib.get("user_api") == "blas"]


def peak_memory_mb(device: torch.device) -> float:
    """Peak memory of this process: the GPU's allocator peak on CUDA, else the resident set's high-water mark."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
