"""A finished ViT run's snapshot file, read only when it and its sidecar are this config's run's (rules vit_probe and
vit_probe_images).

The snapshot file (``runs/vit/vit_snapshots.pt``), the metrics table (``runs/vit/vit_metrics.csv``) and the run's
sidecar (``runs/vit/vit_metrics.json``) are written by one job, the sidecar last, recording the run's fingerprint,
the snapshot file's sha256 and epochs and the metrics table's sha256
(:func:`maxmargin.experiments.vit.results.save_result`). A file of another run put in the place of one of them or of
several (results synced back from a node, a partial restore, a hand copy) would otherwise be probed as this run's,
and the run's page would state its W-ATT-SVM claims from the other run: so the sidecar is checked against this
config's fingerprint and the metrics table, and the snapshot file against both, before it is read.

Outside :mod:`maxmargin.experiments.vit`, whose source is rule vit_train's rerun trigger
(:func:`~maxmargin.experiments.vit.settings.code_fingerprint`): a check of the probe's input retrains nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maxmargin.files import file_sha256


def _fix(*paths: Path) -> str:
    """The fix for a file that is not the run's: without it, rule vit_train runs again and writes all of the run's
    files from its finished checkpoint (scripts/vit_train.py), so nothing trains that had finished."""
    return (
        f"remove {'it' if len(paths) == 1 else 'them'} (rm {' '.join(map(str, paths))}) and run the same command "
        "again: rule vit_train then restores the run's own files from its finished checkpoint, without training (it "
        "trains again only where that checkpoint is gone)"
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
    """What the run's sidecar records of its files: its fingerprint, its snapshots' epochs and sha256, and the sha256
    of the metrics table it describes."""
    sidecar = json.loads(sidecar_path.read_text())
    record = {
        "fingerprint": sidecar.get("fingerprint"),
        "epochs": sidecar.get("snapshot_epochs"),
        "sha256": sidecar.get("snapshots_sha256"),
        "metrics_sha256": (sidecar.get("metrics_table") or {}).get("sha256"),
    }
    if None in record.values():
        absent = [key for key, value in record.items() if value is None]
        raise ValueError(
            f"the run's sidecar {sidecar_path} records no {', '.join(absent)} of its files, so nothing tells "
            "whether the snapshot file is this run's: train it again (snakemake --forcerun vit_train)"
        )
    return record


@dataclass(frozen=True)
class _Files:
    """The three files of a finished run that the probe reads or trusts, and what this config expects of them."""

    snapshots: Path
    sidecar: Path
    metrics: Path
    fingerprint: str  # this config's run: VitSettings.fingerprint of its settings, data and training code


def _foreign(files: _Files, run: dict[str, Any], found: dict[str, Any], metrics_sha256: str) -> tuple[list, list]:
    """Which of the run's files are not this run's, and why (a reason each): the files and the sentences.

    The sidecar is this config's run's when it records this config's fingerprint (:func:`_foreign_to_config` where
    it does not). Then the snapshot file and the metrics table are the run's when each is the file the sidecar
    records (the snapshot file's fingerprint, epochs and sha256; the table's sha256); a sidecar that records
    neither of the two files beside it is the odd one out (another run of the same settings)."""
    if run["fingerprint"] != files.fingerprint:
        return _foreign_to_config(files, run, found, metrics_sha256)
    snapshots = _snapshot_differences(files, run, found)
    metrics = (
        ""
        if metrics_sha256 == run["metrics_sha256"]
        else f"the metrics table {files.metrics} has sha256 {metrics_sha256}, the sidecar records "
        f"{run['metrics_sha256']}"
    )
    if snapshots and metrics:
        return [files.sidecar], [f"{files.sidecar} describes neither file beside it", snapshots, metrics]
    if snapshots:
        return [files.snapshots], [snapshots]
    if metrics:
        return [files.metrics], [metrics]
    return [], []


def _foreign_to_config(
    files: _Files, run: dict[str, Any], found: dict[str, Any], metrics_sha256: str
) -> tuple[list, list]:
    """A sidecar of another fingerprint than this config's is foreign; so is the snapshot file where it carries
    another fingerprint too, and the metrics table where it is the one that sidecar describes. A snapshot file of
    this config's fingerprint is named as such: the sidecar alone was swapped."""
    foreign = [files.sidecar]
    reasons = [
        f"{files.sidecar} records the run of fingerprint {run['fingerprint']}, where this config with its data and "
        f"today's training code makes fingerprint {files.fingerprint}"
    ]
    if found["fingerprint"] == files.fingerprint:
        reasons.append(f"the snapshot file {files.snapshots} carries this config's fingerprint")
    else:
        foreign.append(files.snapshots)
        reasons.append(f"the snapshot file {files.snapshots} carries fingerprint {found['fingerprint']}")
    if metrics_sha256 == run["metrics_sha256"]:
        foreign.append(files.metrics)
        reasons.append(f"the metrics table {files.metrics} is the one that sidecar describes (sha256 {metrics_sha256})")
    else:
        reasons.append(f"the metrics table {files.metrics} is not the one it describes (sha256 {metrics_sha256})")
    return foreign, reasons


def _snapshot_differences(files: _Files, run: dict[str, Any], found: dict[str, Any]) -> str:
    """How the snapshot file differs from what the sidecar records of it (empty when it does not)."""
    differ = [key for key in ("fingerprint", "epochs", "sha256") if found[key] != run[key]]
    diffs = "; ".join(f"{key} {found[key]} in the file, {run[key]} in the sidecar" for key in differ)
    return (
        f"the snapshot file's {' and '.join(differ)} differ from what the run's sidecar {files.sidecar} records "
        f"({diffs})"
        if differ
        else ""
    )


def run_snapshots(
    path: str | os.PathLike[str],
    sidecar: str | os.PathLike[str],
    fingerprint: str,
    metrics: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """The snapshots at ``path`` (:func:`read_snapshot_file`), once the run's files are this config's run's: the
    sidecar at ``sidecar`` records ``fingerprint`` (this config's: ``VitSettings.fingerprint`` of its settings, data
    and training code) and the sha256 of the metrics table it describes (``metrics``; by default the table beside
    it, ``<sidecar stem>.csv``, as rule vit_train writes them), and the snapshot file is the one it records (its
    sha256, and the fingerprint and epochs it carries). A file of another run is refused with a ValueError naming
    the file that is foreign, why, and the fix."""
    path, sidecar = Path(path), Path(sidecar)
    files = _Files(path, sidecar, sidecar.with_suffix(".csv") if metrics is None else Path(metrics), fingerprint)
    run = _run_record(sidecar)
    digest = file_sha256(path)
    try:
        state = read_snapshot_file(path)
    except ValueError as err:
        if digest == run["sha256"]:
            raise
        raise ValueError(f"{err} (nor is its sha256 the one the run's sidecar {sidecar} records)") from None
    found = {"fingerprint": state.get("fingerprint"), "epochs": list(state.get("epochs", [])), "sha256": digest}
    foreign, reasons = _foreign(files, run, found, file_sha256(files.metrics))
    if foreign:
        named = " and ".join(map(str, foreign))
        raise ValueError(
            f"{named} {'is' if len(foreign) == 1 else 'are'} not this run's: {'; '.join(reasons)}; {_fix(*foreign)}"
        )
    return state


# What makes rule vit_probe's numbers besides the snapshots: the analysis, this check, and the W-ATT-SVM solver with
# the argument checks every solve passes through (paths under the package).
PROBE_CODE = (
    "experiments/vit/w_svm_probe.py",
    "experiments/vit_heads.py",
    "experiments/vit_run_snapshots.py",
    "core/w_svm.py",
    "core/w_svm_dual.py",
    "core/w_svm_active.py",
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
