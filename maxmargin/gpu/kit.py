"""The kit on the node (docs/gpu.md, "The node, and how the kit meets it"): its wheels installed for one session.

The node has no package index: the kit (``make gpu-kit``, :mod:`maxmargin.gpu.kit_build`) carries the wheels of what
it lacks (Snakemake, pandera and their needs), which a session installs into a temporary folder (removed at its end)
and puts before everything else on its stages' path. Without a kit, an interpreter that has Snakemake serves (a
rehearsal). Standard library only: this runs before those packages are there.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from maxmargin.gpu.record import Session
from maxmargin.gpu.request import UsageError


def kit_wheels(kit: Path, have_snakemake: bool | None = None) -> list[Path]:
    """The kit's wheels to install; none where the kit is absent but this interpreter has Snakemake (a rehearsal).
    Neither: refused, naming the kit and how to build it."""
    wheels = sorted(kit.glob("wheels/*.whl"))
    if wheels:
        return wheels
    if have_snakemake is None:
        have_snakemake = importlib.util.find_spec("snakemake") is not None
    if not have_snakemake:
        raise UsageError(
            f"no kit at {kit} (no wheels in {kit / 'wheels'}) and this Python has no Snakemake: build the kit where "
            "pip reaches an index (`make gpu-kit`), copy gpu_kit/ beside tools/ with the repository, or name its "
            "folder with GPU_KIT=..."
        )
    return []


def install_kit(s: Session, site: Path, wheels: list[Path]) -> None:
    """The kit's wheels into ``site`` (a temporary folder), put before everything else on the stages' path."""
    if wheels:
        s.log(f"installing {len(wheels)} wheels of the kit {s.request.kit}")
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
        proc = s.popen(
            [*cmd, "--no-cache-dir", "--target", str(site), *map(str, wheels)], stdout=s.log_file, stderr=s.log_file
        )
        if proc.wait() != 0:
            raise UsageError(
                f"the kit's wheels did not install (pip's error is in {s.out / 'session.log'}): build the kit for "
                "this node's Python (`make gpu-kit`, with --have node.txt for its packages)"
            )
    else:
        s.log(f"no kit at {s.request.kit}: this Python's own Snakemake and pandera serve (a rehearsal)")
    sys.path.insert(0, str(site))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    os.environ["PATH"] = os.pathsep.join([str(site / "bin"), os.environ["PATH"]])
