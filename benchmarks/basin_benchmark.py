"""Benchmark of the basin target (tables + figure) at the default config, on ``--workers`` threads.

Prints the load average (``os.getloadavg``, what ``uptime`` shows) before and after, and the wall and CPU time of
each part: the grid runs per GD variant, the cone of Theorem 3 (its arcs and the stationary-point rays), the
Figure 1(b) paths, the figure, and the whole. The target: the whole within 30 s on 2 cores. And
the memory: the study's peak resident memory above what the process held before it, per start of the grid, next to
``maxmargin.config.BASIN_BYTES_PER_START`` (what the config check assumes before any job).

Not a test: run it by hand, e.g. ``PYTHONPATH=. .venv/bin/python benchmarks/basin_benchmark.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from maxmargin import pipeline
from maxmargin.config import BASIN_BYTES_PER_START
from maxmargin.experiments import basin, instances
from maxmargin.figures.basin import draw_basin
from maxmargin.pipeline import save_figure

CONFIG = yaml.safe_load((Path(__file__).resolve().parents[1] / "workflow/config/default.yaml").read_text())


def timed(label: str, call: Callable[[], Any]) -> Any:
    """Run ``call``, print its wall and CPU time, return its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    print(f"{label:<44} wall {time.perf_counter() - wall:6.2f} s   cpu {time.process_time() - cpu:6.2f} s")
    return out


def _peak_rss() -> int:
    """This process's peak resident memory in bytes (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="threads for the GD runs (the rule's threads)")
    parser.add_argument("--breakdown", action="store_true", help="then time the grid runs and the cone again, apart")
    args = parser.parse_args()
    b, fig1 = CONFIG["basin"], CONFIG["synthetic"]["fig1"]
    tols = {k: CONFIG["census"][k] for k in ("saturation_tol", "svm_tol")}
    # an input of the figure, made by another target
    fig1b = pipeline.run_experiment("fig1b", fig1, CONFIG["synthetic"]["data"].get("fig1b", {}))
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    start = time.perf_counter()
    before = _peak_rss()
    tables = timed("study (grid, cone, Figure 1(b) paths)", lambda: basin.basin_study(b, fig1, tols, args.workers))
    starts = b["grid"]["p1"]["num"] * b["grid"]["p2"]["num"]
    per_start = (_peak_rss() - before) / starts
    print(f"memory: peak {_peak_rss() / 2**20:.0f} MiB, {per_start / 1000:.1f} kB per start above the process's")
    print(f"        {before / 2**20:.0f} MiB before the study ({starts:,} starts; the config check assumes")
    print(f"        {BASIN_BYTES_PER_START / 1000:.0f} kB per start)")
    with tempfile.TemporaryDirectory() as tmp:

        def draw() -> None:
            fig = draw_basin(tables.basin, tables.cone, tables.paths, fig1b.tokens, fig1b.directions)
            save_figure(fig, f"{tmp}/basin.pdf", f"{tmp}/basin.png")

        timed("figure (PDF + PNG)", draw)
    print(f"basin target (study + figure): {time.perf_counter() - start:.2f} s wall, {args.workers} threads")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    if args.breakdown:
        _breakdown(b, fig1, tols, args.workers)


def _breakdown(b: dict, fig1: dict, tols: dict, workers: int) -> None:
    """The grid runs of each variant and the cone, timed apart."""
    inst = instances.fig1b()
    loss = fig1["loss"]
    variants = basin.gd_variants(fig1, b["constant"], basin.smoothness_bound(inst.K, inst.gamma, loss))
    starts = basin.grid_starts(b["grid"]["p1"], b["grid"]["p2"], inst.K.shape[-1])
    for v in variants:
        label = f"grid: {starts.shape[0]} starts, {v.name} GD, {v.n_iter} iterations"
        timed(label, lambda v=v: basin.run_gd(inst.K, inst.gamma, starts, v, loss, workers))
    lmm = basin.lmm_direction(inst.K, inst.gamma, tols["svm_tol"])
    timed(
        "cone (arcs per variant, stationary-point rays)",
        lambda: basin.cone_table(inst.K, inst.gamma, lmm, variants, b["cone"], loss=loss, tols=tols, workers=workers),
    )


if __name__ == "__main__":
    main()
