"""Whether what a GPU session would bring back is of the run it planned (docs/gpu.md, "What comes back").

A file comes back only when it is of the planned run: its settings (the epoch count included) and its fingerprint,
read from a finished run's sidecar (:func:`judge_finished`) or a cut run's checkpoint (:func:`judge_checkpoint`); it
says whether this session trained it or an earlier one did, by what the training job's own log says it did
(:class:`maxmargin.gpu.watch.JobWork`). A run of other settings is another run, never brought back as this one.
Standard library only at import.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maxmargin.files import file_sha256
from maxmargin.gpu.watch import JobWork


def planned_settings(vit: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a run of the config's ``vit`` block records (its sidecar's and its checkpoint's ``settings``)."""
    from maxmargin.experiments.vit.settings import VitSettings

    return json.loads(json.dumps(VitSettings.from_config(vit).to_dict()))


def _flat(value: Any, key: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        return {k: v for name, item in value.items() for k, v in _flat(item, f"{key}.{name}" if key else name).items()}
    return {key: value}


def differences(found: Mapping[str, Any], planned: Mapping[str, Any]) -> list[str]:
    """The settings in which a run differs from the planned one, as ``key found (planned value)``."""
    a, b = _flat(found), _flat(planned)
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return [f"{k} {a.get(k, 'absent')} (planned {b.get(k, 'absent')})" for k in keys]


@dataclass
class Verdict:
    """Whether a file the session would bring back is of the run it planned (``returned``), and its record for
    session.json: the run's fingerprint, its epochs, whether this session made it, and why not where it is not."""

    returned: bool
    record: dict[str, Any]
    message: str


def judge_run(
    settings: Mapping[str, Any], fingerprint: str, epochs: int, planned: Mapping[str, Any], job: JobWork
) -> Verdict:
    """A run's file against the plan: the same settings (its epoch count included) is the planned run, made by this
    session where its job trained up to ``epochs`` (``job``: what the job did, by its log), else by an earlier one
    (nothing trained here: said so, and how); other settings are another run, never returned."""
    made_here = job.trained_from is not None and job.trained_from <= epochs
    record = {"fingerprint": fingerprint, "epochs": epochs, "made_here": made_here}
    wrong = differences(settings, planned)
    if wrong:
        record["status"] = "another run"
        record["differences"] = wrong
        return Verdict(False, record, f"of another run (fingerprint {fingerprint}): {'; '.join(wrong[:4])}")
    if not made_here:
        how = (
            "restored by this session's job from its finished checkpoint"
            if job.restored
            else "taken as it stood (this session's job did not run or trained no epoch)"
        )
        record["status"] = f"this run, trained by an earlier session and {how}: nothing trained here"
        return Verdict(True, record, f"of this run (fingerprint {fingerprint}), trained by an earlier session, {how}")
    record["status"] = "this session's run"
    record["trained_from"] = job.trained_from
    return Verdict(True, record, f"this session's run (fingerprint {fingerprint}, {epochs} epochs)")


def judge_finished(sidecar: Path, table: Path, planned: Mapping[str, Any], job: JobWork) -> Verdict:
    """A finished run's metrics table against the plan, by its sidecar (settings, fingerprint, the table's sha256);
    ``job``: what this session's training job did (:func:`maxmargin.gpu.watch.job_work`). Its last row is the planned
    last epoch."""
    if not sidecar.is_file() or not table.is_file():
        return Verdict(False, {"status": "missing"}, f"{table.name} or its sidecar is missing")
    record = json.loads(sidecar.read_text())
    if record.get("metrics_table", {}).get("sha256") != file_sha256(table):
        return Verdict(False, {"status": "not its sidecar's table"}, f"{table} differs from its sidecar's record")
    with table.open(newline="") as f:
        epochs = max((int(row["epoch"]) for row in csv.DictReader(f)), default=-1)
    verdict = judge_run(record.get("settings", {}), str(record.get("fingerprint")), epochs, planned, job)
    if verdict.returned and epochs != planned["train"]["epochs"]:
        message = f"its last epoch is {epochs}, not the planned {planned['train']['epochs']}"
        return Verdict(False, {**verdict.record, "status": "unfinished"}, message)
    return verdict


def judge_checkpoint(state: Mapping[str, Any], planned: Mapping[str, Any], job: JobWork) -> Verdict:
    """A cut run's checkpoint (its ``settings``, ``fingerprint`` and ``epoch``) against the plan; ``job``: what this
    session's training job did (:func:`maxmargin.gpu.watch.job_work`)."""
    return judge_run(state.get("settings", {}), str(state.get("fingerprint")), int(state["epoch"]), planned, job)
