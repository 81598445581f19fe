#!/usr/bin/env bash
# One command on an offline GPU node (docs/gpu.md), from the repository's root with the kit beside it (`make gpu-kit`):
#   bash tools/gpu_session.sh OUT_DIR [MINUTES]
# Installs the kit's wheels into a temporary prefix, then tools/gpu_session.py runs the pilot, the run that fits and
# Figures 6-7 through the pipeline's rules, writing at most 8 files into OUT_DIR and stopping itself MINUTES (default
# 9) after this script started. GPU_KIT: the kit's folder (default gpu_kit/); PYTHON: the interpreter (default python3).
set -u
start=$(date +%s.%N)
out=${1:?usage: tools/gpu_session.sh OUT_DIR [MINUTES]}
minutes=${2:-9}
repo=$(cd "$(dirname "$0")/.." && pwd)
kit=${GPU_KIT:-$repo/gpu_kit}
python=${PYTHON:-python3}
mkdir -p "$out"
site=$(mktemp -d /tmp/gpu_session_site.XXXXXX)
if compgen -G "$kit/wheels/*.whl" >/dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$kit"/wheels/*.whl \
        >>"$out/session.log" 2>&1 || { echo "gpu-session: the kit's wheels did not install (see $out/session.log)" >&2; exit 1; }
fi
# The kit's packages, this repository (the package, installed without its dependencies: the node's torch serves) and
# the workflow's terminal output (a Snakemake logger plugin, found on the path by its name).
export PYTHONPATH="$site:$repo:$repo/workflow/logger${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$site/bin:$PATH" PYTHONUNBUFFERED=1 GPU_KIT="$kit"
cd "$repo" && exec "$python" tools/gpu_session.py "$out" "$minutes" --start "$start"
