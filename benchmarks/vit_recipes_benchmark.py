"""Benchmark of the ViT recipe study (target ``vit_recipes``): the whole target's wall time, and each recipe's.

Runs ``snakemake --cores N --forcerun vit_recipe_train -- vit_recipes`` in this checkout (results under the
configured results root) and prints the wall time of the target and every job's time from its benchmark file.
Target: at most 15 minutes on 2 cores for the default CPU proxy.

Not a test: run it by hand, e.g. ``.venv/bin/python benchmarks/vit_recipes_benchmark.py --cores 2``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--configfile", action="append", default=[], help="extra config files, as for snakemake")
    args = parser.parse_args()
    snakemake = Path(sys.executable).with_name("snakemake")
    extra = [a for path in args.configfile for a in ("--configfile", path)]
    start = time.perf_counter()
    subprocess.run(
        [str(snakemake), "--cores", str(args.cores), "--forcerun", "vit_recipe_train", *extra, "--", "vit_recipes"],
        cwd=REPO,
        check=True,
    )
    wall = time.perf_counter() - start
    config = yaml.safe_load((REPO / "workflow/config/default.yaml").read_text())
    for path in args.configfile:
        config.update(yaml.safe_load(Path(path).read_text()) or {})
    bench = REPO / config["results"] / "benchmarks" / "vit_recipe_train"
    for recipe in config["vit_recipes"]["recipes"]:
        seconds = float(pd.read_csv(bench / f"{recipe['name']}.tsv", sep="\t")["s"].iloc[0])
        print(f"{recipe['name']:<28} {seconds:7.1f} s")
    print(f"vit_recipes target: {wall:.0f} s wall on {args.cores} cores (target: <= 900 s)")


if __name__ == "__main__":
    main()
