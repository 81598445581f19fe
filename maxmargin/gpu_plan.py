"""The run a GPU session plans (tools/gpu_session.py, docs/gpu.md), and whether what it would bring back is that run.

The plan: the epochs that fit after the pilot, and the settings the run will record. The judgement: a file comes
back only when it is of the planned run (its settings, its epoch count included, and its fingerprint), and it says
whether this session made it or an earlier one did (a stage with nothing to do); a run of other settings is another
run, never brought back as this one.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maxmargin.gpu import sha256

EPOCH_LINE = re.compile(r"epoch (\d+): train loss .*\(([0-9.]+)s\)")


def pilot_numbers(results: Path, wall: float, device: Mapping[str, Any]) -> dict[str, Any]:
    """The pilot's table row (``results``/tables/vit_pilot.csv) with its MFU, compile time and epoch times (its log:
    one line per epoch); ``wall``: the pilot stage's seconds, ``device``: the probe's numbers."""
    with (results / "tables/vit_pilot.csv").open() as f:
        row = next(csv.DictReader(f))
    log_text = (results / "logs/vit_pilot/pilot.log").read_text()
    times = {int(e): float(t) for e, t in EPOCH_LINE.findall(log_text)}
    trained = [times[e] for e in sorted(times) if e >= 1]
    images_per_s = float(row["images_per_s"])
    flops = device.get("gflops_per_image_train", math.nan) / (1e3 * device.get("peak_tflops", math.nan))
    return {
        **row,
        "stage_seconds": wall,
        "epoch_times": times,
        "steady_epoch_seconds": float(row["epoch_seconds"]),  # the mean after the first trained epoch
        "compile_seconds": trained[0] - trained[-1] if len(trained) > 1 else None,
        "mfu": images_per_s * flops,
    }


def plan_epochs(left: float, pilot: Mapping[str, Any], forced: int | None, most: int, reserve: float) -> int:
    """The run's epochs with ``left`` seconds to go: it costs the pilot's stage less its trained epochs and its compile
    time (Inductor's cache is warm by then: on the first H100 session the run's first epoch took 2 s over a steady
    one, the pilot's 33 s), plus N steady epochs; ``reserve`` seconds stay for the page. ``forced``: given."""
    epoch, n_pilot = pilot["steady_epoch_seconds"], len(pilot["epoch_times"]) - 1
    fixed = pilot["stage_seconds"] - n_pilot * epoch - (pilot["compile_seconds"] or 0.0)
    fit = math.floor((left - reserve - fixed) / max(epoch, 1e-3))
    return forced or max(1, min(fit, most))


def fig6_epochs(epochs: int) -> list[int]:
    """Five epochs of Figure 6 spread over the run, as paper.yaml's [0, 100, 200, 300, 400] over 400."""
    return sorted({round(epochs * k / 4) for k in range(5)})


def write_rows(rows: list[Mapping[str, Any]], path: Path) -> None:
    """A checkpoint's metrics rows as CSV (a cut run's table)."""
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


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
    settings: Mapping[str, Any], fingerprint: str, epochs: int, planned: Mapping[str, Any], made_here: bool
) -> Verdict:
    """A run's file against the plan: the same settings (its epoch count included) is the planned run, made by this
    session or by an earlier one (nothing new: reported as such); other settings are another run, never returned."""
    record = {"fingerprint": fingerprint, "epochs": epochs, "made_here": made_here}
    wrong = differences(settings, planned)
    if wrong:
        record["status"] = "another run"
        record["differences"] = wrong
        return Verdict(False, record, f"of another run (fingerprint {fingerprint}): {'; '.join(wrong[:4])}")
    if not made_here:
        record["status"] = "this run, made by an earlier session (nothing new here)"
        return Verdict(True, record, f"of this run (fingerprint {fingerprint}), made by an earlier session")
    record["status"] = "this session's run"
    return Verdict(True, record, f"this session's run (fingerprint {fingerprint}, {epochs} epochs)")


def judge_finished(sidecar: Path, table: Path, planned: Mapping[str, Any], since: float) -> Verdict:
    """A finished run's metrics table against the plan, by its sidecar (settings, fingerprint, the table's sha256):
    made in this session when the sidecar was written after ``since``; its last row is the planned last epoch."""
    if not sidecar.is_file() or not table.is_file():
        return Verdict(False, {"status": "missing"}, f"{table.name} or its sidecar is missing")
    record = json.loads(sidecar.read_text())
    if record.get("metrics_table", {}).get("sha256") != sha256(table):
        return Verdict(False, {"status": "not its sidecar's table"}, f"{table} differs from its sidecar's record")
    with table.open(newline="") as f:
        epochs = max((int(row["epoch"]) for row in csv.DictReader(f)), default=-1)
    made_here = sidecar.stat().st_mtime >= since
    verdict = judge_run(record.get("settings", {}), str(record.get("fingerprint")), epochs, planned, made_here)
    if verdict.returned and epochs != planned["train"]["epochs"]:
        message = f"its last epoch is {epochs}, not the planned {planned['train']['epochs']}"
        return Verdict(False, {**verdict.record, "status": "unfinished"}, message)
    return verdict


def judge_checkpoint(state: Mapping[str, Any], checkpoint: Path, planned: Mapping[str, Any], since: float) -> Verdict:
    """A cut run's checkpoint (its ``settings``, ``fingerprint`` and ``epoch``) against the plan: made in this session
    when written after ``since``."""
    made_here = checkpoint.stat().st_mtime >= since
    return judge_run(state.get("settings", {}), str(state.get("fingerprint")), int(state["epoch"]), planned, made_here)
