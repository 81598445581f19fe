"""Benchmark of the census phase diagram (target ``census_grid``): the default grid through Snakemake.

Copies the workflow into a scratch directory, runs ``snakemake --cores N census_grid`` there on the default
config (every (n, T, d) cell one job, then the gather and the heat maps) and prints the wall time, the number of
cell jobs and the slowest cells from their benchmark files. The target: the default grid within 10 minutes on
2 cores, so that it could join ``all`` without pushing the default run past that.

Not a test: run it by hand, e.g. ``.venv/bin/python benchmarks/census_grid_benchmark.py --cores 2``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (its path is printed)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="census_grid_"))
    for name in ("Snakefile", "environment.yml"):
        shutil.copy(REPO / name, work / name)
    for folder in ("workflow", "scripts"):
        shutil.copytree(REPO / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"))
    snakemake = Path(sys.executable).with_name("snakemake")
    start = time.perf_counter()
    subprocess.run([str(snakemake), "--cores", str(args.cores), "census_grid"], cwd=work, check=True)
    wall = time.perf_counter() - start
    cells = sorted((work / "results/benchmarks/census_grid_cell").glob("*.tsv"))
    seconds = pd.Series({path.stem: float(pd.read_csv(path, sep="\t")["s"].iloc[0]) for path in cells})
    print(f"census_grid on {args.cores} core(s): {wall:.0f} s wall ({wall / 60:.1f} min), {len(cells)} cell jobs")
    print(f"  cell jobs: {seconds.sum():.0f} s in total, median {seconds.median():.1f} s, slowest:")
    for name, s in seconds.sort_values(ascending=False).head(5).items():
        print(f"    {name:20s} {s:6.1f} s")
    if args.keep:
        print(f"  results in {work / 'results'}")
    else:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
