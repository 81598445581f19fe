"""How much one busy core slows a ViT training epoch, with OpenMP's waiting threads spinning or sleeping.

torch's CPU threads come from OpenMP (libgomp), whose idle threads spin while they wait for the next parallel region
(``OMP_WAIT_POLICY=ACTIVE``, in effect libgomp's default) or sleep at once (``PASSIVE``, what the Snakefile sets for
every job). Each measurement is a fresh Python process with the policy in its environment before torch is imported;
it trains the default config's ViT (``vit.model`` and ``vit.train`` of workflow/config/default.yaml: Adam, batch
size, torch threads) on random 32x32 images, ``--warmup`` untimed epochs and then ``--epochs`` timed ones of
``--images`` images. "busy": one more process keeps a core busy all along (``yes > /dev/null``), as a second job
would. The four conditions (ACTIVE / PASSIVE, alone / busy) run in turn, ``--rounds`` times, so that a change in the
machine's other load reaches all four alike; the ratios are taken within this one run. Prints a Markdown table (the
medians over every timed epoch of every round) for docs/results/timings.md.

    .venv/bin/python benchmarks/omp_contention_benchmark.py             # about 3 minutes on 2 quiet cores
    .venv/bin/python benchmarks/omp_contention_benchmark.py --rounds 1 --epochs 1 --images 256   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
POLICIES = ("ACTIVE", "PASSIVE")


def child(images: int, warmup: int, epochs: int) -> None:
    """Train and print {"wall": [...], "cpu": [...]}: each timed epoch's wall and process CPU seconds."""
    import torch  # here, after OMP_WAIT_POLICY is in this process's environment
    from torch.nn import functional

    from maxmargin.experiments.vit import ModelSettings, TrainSettings, build_vit, make_optimizer

    vit = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())["vit"]
    settings = TrainSettings(**vit["train"])
    torch.manual_seed(settings.seed)
    torch.set_num_threads(settings.threads)
    model = build_vit(ModelSettings(**vit["model"]))
    optimizer = make_optimizer(model, settings, vit["model"]["embed_dim"])
    size = vit["model"]["img_size"]
    batches = [
        (
            torch.randn(settings.batch_size, 3, size, size),
            torch.randint(0, vit["model"]["num_classes"], (settings.batch_size,)),
        )
        for _ in range(max(1, images // settings.batch_size))
    ]
    wall, cpu = [], []
    for epoch in range(warmup + epochs):
        start, start_cpu = time.perf_counter(), time.process_time()
        for x, y in batches:
            optimizer.zero_grad(set_to_none=True)
            functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        if epoch >= warmup:
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    print(json.dumps({"wall": wall, "cpu": cpu}))


def measure(policy: str, busy: bool, args: argparse.Namespace) -> dict[str, list[float]]:
    """One child run under ``policy``, with a busy core beside it or not."""
    env = os.environ | {"OMP_WAIT_POLICY": policy}
    command = [sys.executable, __file__, "--child", "--images", str(args.images)]
    command += ["--warmup", str(args.warmup), "--epochs", str(args.epochs)]
    spinner = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if busy else None
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=REPO)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(results: dict[tuple[str, bool], dict[str, list[float]]], args: argparse.Namespace, load: list[str]) -> str:
    """The medians and ratios as Markdown."""
    wall = {key: statistics.median(value["wall"]) for key, value in results.items()}
    cpu = {key: statistics.median(value["cpu"]) for key, value in results.items()}
    lines = [
        f"{args.rounds} rounds x {args.epochs} timed epochs of {args.images} images per condition, on {os.cpu_count()} "
        f"cores; load average (1 min) {' -> '.join(load)} over the run",
        "",
        "| OMP_WAIT_POLICY | epoch alone (s) | epoch beside a busy core (s) | busy / alone "
        "| CPU s per epoch (alone, busy) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for policy in POLICIES:
        alone, busy = wall[policy, False], wall[policy, True]
        lines.append(
            f"| {policy} | {alone:.2f} | {busy:.2f} | {busy / alone:.2f} | {cpu[policy, False]:.2f}, "
            f"{cpu[policy, True]:.2f} |"
        )
    lines += [
        "",
        f"ACTIVE / PASSIVE beside a busy core: {wall['ACTIVE', True] / wall['PASSIVE', True]:.2f}; "
        f"alone: {wall['ACTIVE', False] / wall['PASSIVE', False]:.2f}",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=1024, help="images per epoch (random)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed epochs first")
    parser.add_argument("--epochs", type=int, default=2, help="timed epochs per run")
    parser.add_argument("--rounds", type=int, default=3, help="runs of the four conditions in turn")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.images, args.warmup, args.epochs)
        return
    load = [f"{os.getloadavg()[0]:.1f}"]
    results: dict[tuple[str, bool], dict[str, list[float]]] = {}
    for round_ in range(args.rounds):
        for policy in POLICIES:
            for busy in (False, True):
                got = measure(policy, busy, args)
                entry = results.setdefault((policy, busy), {"wall": [], "cpu": []})
                for key in entry:
                    entry[key] += got[key]
                print(f"round {round_ + 1}: {policy} {'busy' if busy else 'alone'}: {got['wall']}", file=sys.stderr)
    load.append(f"{os.getloadavg()[0]:.1f}")
    print(table(results, args, load))


if __name__ == "__main__":
    main()
