"""Benchmark of the W-ATT-SVM probe's solves (rule vit_probe, table vit_w_svm): each head's own W-ATT-SVM and its
null (a) draws, in CPU seconds (time.process_time) at one BLAS and torch thread, so that a loaded machine changes
them little.

Two inputs:

- ``--snapshots``: every snapshot of a finished run (e.g. the default run's results/runs/vit/vit_snapshots.pt,
  epochs 0-60) on all its training images (vit.data.n_train, as vit.w_svm.whole_train solves them), its config
  read from default.yaml and ``--config`` files over it (null (a): vit.w_svm.null_draws draws from vit.w_svm.seed).
  Prints each head's seconds (its own solve, each draw) per snapshot, then the largest head and each snapshot's sum.
- otherwise synthetic tokens of a given shape, by default the paper's model (ViT-B/2: width 768, 12 heads of 64, 256
  patch tokens + [CLS]): LayerNorm-like random tokens (each centred and scaled, as the block's norm leaves them),
  each head's W a random rank-d_head matrix and its selection the one that W makes: the size and structure of the
  real problem, not its trained values. ``--shuffles`` adds null (b)'s shuffled selections.

Not a test: run it by hand from the repository root (the run's data paths are relative to it), e.g.
``.venv/bin/python benchmarks/w_svm_benchmark.py --snapshots results/runs/vit/vit_snapshots.pt``
``.venv/bin/python benchmarks/w_svm_benchmark.py --images 32``  (synthetic, the paper's shape).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from maxmargin.core.w_svm import WSVMResult, w_att_svm, w_logits
from maxmargin.core.w_svm_nulls import random_rank_matrix

REPO = Path(__file__).resolve().parents[1]


def _timed(solve: Callable[[], WSVMResult]) -> tuple[WSVMResult, float]:
    t0 = time.process_time()
    res = solve()
    return res, time.process_time() - t0


def head_seconds(z, x, w, rank: int, draws: int, rng, shuffles: int = 0, **solver) -> list[tuple[str, float, str]]:
    """One head's solves on ``z``, ``x``: its own selection's, ``draws`` null (a) matrices' and ``shuffles``
    permutations of its selection (null (b), hard margin only, as the probe solves them): (name, CPU seconds, what
    the solve found) each."""
    selected = w_logits(w, z, x, solver.get("query_bias", True)).argmax(axis=1)
    out = []
    res, seconds = _timed(lambda: w_att_svm(z, x, selected, **solver))
    out.append(("own", seconds, f"{res.rounds} rounds, support {res.support}, hard {res.hard}"))
    for k in range(draws):
        m = random_rank_matrix(rng, w.shape, rank)
        sel = w_logits(m, z, x, solver.get("query_bias", True)).argmax(axis=1)
        res, seconds = _timed(lambda sel=sel: w_att_svm(z, x, sel, **solver))
        out.append((f"null (a) {k + 1}", seconds, f"{res.rounds} rounds, support {res.support}, hard {res.hard}"))
    for k in range(shuffles):
        permuted = selected[rng.permutation(len(selected))]
        res, seconds = _timed(lambda p=permuted: w_att_svm(z, x, p, soft=False, **solver))
        out.append((f"null (b) {k + 1}", seconds, f"{res.rounds} rounds, hard {res.hard}"))
    return out


def _line(label: str, parts: list[tuple[str, float, str]]) -> str:
    total = sum(seconds for _, seconds, _ in parts)
    each = ", ".join(f"{name} {seconds:.2f}" for name, seconds, _ in parts)
    return f"{label}: {total:.2f} s ({each}; own: {parts[0][2]})"


def run_snapshots(path: Path, configs: list[str], draws: int | None) -> None:
    """Every snapshot of the run at ``path``, every head, on all its training images (``draws`` null (a) draws a
    head: the config's vit.w_svm.null_draws unless given)."""

    from maxmargin.config import merged_config
    from maxmargin.experiments.vit import VitSettings, build_vit, load_image_data
    from maxmargin.experiments.vit.data import normalize
    from maxmargin.experiments.vit.model import last_attention
    from maxmargin.experiments.vit.snapshots import load_snapshots
    from maxmargin.experiments.vit_heads import attention_inputs, head_key_query

    cfg = merged_config([REPO / c for c in configs], REPO / "workflow/config/default.yaml")
    settings, w_svm = VitSettings.from_config(cfg["vit"]), cfg["vit"]["w_svm"]
    manifest = json.loads((REPO / cfg.get("results", "results") / "runs/data/vit.json").read_text())
    data = load_image_data(settings.data, settings.train.seed, manifest)
    images = normalize(data.x_train, data.mean, data.std)
    snapshots, net = load_snapshots(path), build_vit(settings.model)
    solver = {"soft_c": w_svm["soft_c"], "query_bias": w_svm["query_bias"]}
    draws = w_svm["null_draws"] if draws is None else draws
    print(f"{path}: epochs {snapshots['epochs']}, {len(images)} training images of {data.name}, "
          f"{draws} null (a) draws a head; CPU seconds at one thread", flush=True)  # fmt: skip
    rng, heads, sums = np.random.default_rng(w_svm["seed"]), [], {}
    for epoch in snapshots["epochs"]:
        net.load_state_dict(snapshots["states"][epoch])
        z, x = attention_inputs(net, images, 2 * settings.train.batch_size)
        attn = last_attention(net)
        for head, w in enumerate(head_key_query(attn, w_svm["query_bias"])):
            parts = head_seconds(z, x, w, attn.head_dim, draws, rng, **solver)
            heads.append((sum(s for _, s, _ in parts), epoch, head))
            sums[epoch] = sums.get(epoch, 0.0) + heads[-1][0]
            print(_line(f"epoch {epoch:3d} head {head}", parts), flush=True)
    worst = max(heads)
    print(f"largest head: {worst[0]:.2f} s (epoch {worst[1]}, head {worst[2]}); per snapshot: "
          + ", ".join(f"{e}: {s:.1f} s" for e, s in sums.items()))  # fmt: skip


def run_synthetic(args: argparse.Namespace) -> None:
    """Random LayerNorm-like tokens of the given shape, ``args.heads`` random rank-d_head heads."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.images, args.tokens, args.width))
    x = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True)
    z, draws = x[:, 0], 4 if args.draws is None else args.draws
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"synthetic: {args.images} images x {args.tokens} tokens x width {args.width} ({x.nbytes / 2**20:.0f} MB), "
          f"{args.heads} heads of rank {args.head_dim}, {draws} null (a) draws, {args.shuffles} shuffles a "
          f"head; CPU seconds at {args.threads} thread(s); peak memory {peak:.0f} MB", flush=True)  # fmt: skip
    totals = []
    for head in range(args.heads):
        w = random_rank_matrix(rng, (args.width + 1, args.width), args.head_dim) / args.width
        parts = head_seconds(z, x, w, args.head_dim, draws, rng, args.shuffles)
        totals.append(sum(s for _, s, _ in parts))
        print(_line(f"head {head}", parts), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"largest head {max(totals):.1f} s, all {sum(totals):.1f} s; peak memory {peak:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=Path, help="a run's vit_snapshots.pt (else synthetic tokens)")
    parser.add_argument("--config", nargs="*", default=[], help="config files over default.yaml (--snapshots)")
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=257)
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--draws", type=int, help="null (a) draws a head (default: the config's, or 4 synthetic)")
    parser.add_argument("--shuffles", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    with threadpool_limits(args.threads):
        run_snapshots(args.snapshots, args.config, args.draws) if args.snapshots else run_synthetic(args)


if __name__ == "__main__":
    main()
