#!/usr/bin/env bash
# One command on an offline GPU node (docs/gpu.md), from the repository's root with the kit beside it (`make gpu-kit`):
#   bash tools/gpu_session.sh OUT_DIR [MINUTES]
# `python -m maxmargin.gpu` (maxmargin/gpu/session.py) checks its arguments, OUT_DIR (new or empty) and the kit,
# installs the kit's wheels into a temporary folder, then runs the pilot, the run that fits and Figures 6-7 through
# the pipeline's rules, writing at most 8 files into OUT_DIR and stopping itself MINUTES (default 9) after this script
# started. GPU_KIT: the kit's folder (default gpu_kit/); PYTHON: the interpreter (default python3).
set -u
start=$(date +%s.%N)
out=$(realpath -m -- "${1:?usage: tools/gpu_session.sh OUT_DIR [MINUTES]}")
minutes=${2:-9}
repo=$(cd "$(dirname "$0")/.." && pwd)
# This repository (the package, without its dependencies: the node's torch serves) and the workflow's terminal
# output (a Snakemake logger plugin, found on the path by its name); the session puts the kit's wheels before them.
export PYTHONPATH="$repo:$repo/workflow/logger${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 GPU_KIT="${GPU_KIT:-$repo/gpu_kit}"
cd "$repo" && exec "${PYTHON:-python3}" -m maxmargin.gpu "$out" "$minutes" --start "$start"
