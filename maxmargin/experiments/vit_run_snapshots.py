"""A finished ViT run's snapshot file, read only when it is that run's (rule vit_probe).

The snapshot file (``runs/vit/vit_snapshots.pt``) and the run's sidecar (``runs/vit/vit_metrics.json``) are written by
one job, the sidecar last, recording the snapshot file's sha256, the run's fingerprint and its snapshot epochs
(:func:`maxmargin.experiments.vit.results.save_result`). A snapshot file of another run put in its place (results
synced back from a node, a partial restore, a hand copy) would otherwise be probed as this run's, and the run's page
would state its W-ATT-SVM claims from the other run: so the file is checked against the sidecar before it is read.

Outside :mod:`maxmargin.experiments.vit`, whose source is rule vit_train's rerun trigger
(:func:`~maxmargin.experiments.vit.settings.code_fingerprint`): a check of the probe's input retrains nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from maxmargin.files import file_sha256


def _fix(path: Path) -> str:
    return (
        f"remove it (rm {path}) and run the same command again: rule vit_train then restores the run's own snapshots "
        "from its finished checkpoint, without training (it trains again only where that checkpoint is gone)"
    )


def read_snapshot_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The dict a snapshot file holds (``format``, ``epochs``, ``states``, ``fingerprint``, ``model``); ValueError
    naming the file and the fix where it is unreadable (truncated, not a torch file) or of another form."""
    import torch

    from maxmargin.experiments.vit.checkpoint import UNREADABLE
    from maxmargin.experiments.vit.snapshots import SNAPSHOT_FORMAT

    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except UNREADABLE as err:  # torch's own message names neither the file nor what to do
        raise ValueError(
            f"{path} cannot be read as a snapshot file ({type(err).__name__}: {str(err).splitlines()[0]}): it is "
            f"truncated or not a file torch.save wrote; {_fix(path)}"
        ) from None
    if not isinstance(state, dict):
        raise ValueError(f"{path} holds a {type(state).__name__}, not a snapshot file's dict; {_fix(path)}")
    if state.get("format") != SNAPSHOT_FORMAT or not isinstance(state.get("states"), dict):
        keys = sorted(map(str, state))
        raise ValueError(f"{path} is not a snapshot file of format {SNAPSHOT_FORMAT} (its keys: {keys}); {_fix(path)}")
    return state


def _run_record(sidecar_path: Path) -> dict[str, Any]:
    """What the run's sidecar records of its snapshot file: its fingerprint, epochs and sha256."""
    sidecar = json.loads(sidecar_path.read_text())
    record = {
        "fingerprint": sidecar.get("fingerprint"),
        "epochs": sidecar.get("snapshot_epochs"),
        "sha256": sidecar.get("snapshots_sha256"),
    }
    if None in record.values():
        absent = [key for key, value in record.items() if value is None]
        raise ValueError(
            f"the run's sidecar {sidecar_path} records no {', '.join(absent)} of its snapshots, so nothing tells "
            "whether the snapshot file is this run's: train it again (snakemake --forcerun vit_train)"
        )
    return record


def run_snapshots(path: str | os.PathLike[str], sidecar: str | os.PathLike[str]) -> dict[str, Any]:
    """The snapshots at ``path`` (:func:`read_snapshot_file`), once they are the run's whose sidecar is at
    ``sidecar``: the file's sha256, the fingerprint it carries and its epochs, each the sidecar's. A file of another
    run is refused with a ValueError naming the differences, both files and the fix."""
    path, sidecar = Path(path), Path(sidecar)
    run = _run_record(sidecar)
    digest = file_sha256(path)
    try:
        state = read_snapshot_file(path)
    except ValueError as err:
        if digest == run["sha256"]:
            raise
        raise ValueError(f"{err} (nor is its sha256 the one the run's sidecar {sidecar} records)") from None
    found = {"fingerprint": state.get("fingerprint"), "epochs": list(state.get("epochs", [])), "sha256": digest}
    differ = [key for key in ("fingerprint", "epochs", "sha256") if found[key] != run[key]]
    if differ:
        diffs = "; ".join(f"{key} {found[key]} in the file, {run[key]} in the sidecar" for key in differ)
        raise ValueError(
            f"{path} is not the snapshot file of the run it lies in: its {' and '.join(differ)} differ from what the "
            f"run's sidecar {sidecar} records ({diffs}); {_fix(path)}"
        )
    return state


# What makes rule vit_probe's numbers besides the snapshots: the analysis, this check, and the W-ATT-SVM solver with
# the argument checks every solve passes through (paths under the package).
PROBE_CODE = (
    "experiments/vit/w_svm_probe.py",
    "experiments/vit_run_snapshots.py",
    "core/w_svm.py",
    "core/w_svm_dual.py",
    "core/w_svm_hard.py",
    "core/w_svm_nuclear.py",
    "core/w_svm_nulls.py",
    "core/gd.py",
    "core/arguments.py",
)


def probe_fingerprint() -> str:
    """Hash of :data:`PROBE_CODE`: rules vit_probe's and vit_probe_images' rerun trigger (an edit of an analysis or of
    the solver reruns the analyses, never the training)."""
    from maxmargin.files import source_fingerprint

    package = Path(__file__).resolve().parents[1]
    return source_fingerprint([package / name for name in PROBE_CODE])
