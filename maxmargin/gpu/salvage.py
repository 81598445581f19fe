"""The epochs of a run a GPU session did not finish, read back from its checkpoint (docs/gpu.md, "What comes back").

A run cut at the wall limit, or stopped by a signal, leaves its checkpoint: where that checkpoint is of the planned
run (:func:`maxmargin.gpu.judge.judge_checkpoint`), its metrics rows come back as the run's table, every epoch the
run finished so far. torch is imported only when a checkpoint is read (after the kit's install).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from maxmargin.files import atomic_path
from maxmargin.gpu.judge import judge_checkpoint
from maxmargin.gpu.record import Session
from maxmargin.gpu.watch import JobWork


def write_rows(rows: list[Mapping[str, Any]], path: Path) -> None:
    """A checkpoint's metrics rows as CSV (a cut run's table)."""
    with atomic_path(path) as tmp, tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def salvage(s: Session, path: Path, planned: dict, job: JobWork, name: str) -> None:
    """The epochs a run cut at the wall limit or stopped by a signal finished, from its checkpoint ``path``, as CSV
    ``name`` in OUT_DIR: only a checkpoint of the planned run. ``job``: what the stage's training job did (this
    session's epochs, or an earlier session's)."""
    if not path.is_file():
        s.summary["run"]["epochs_done"] = 0
        s.log("run cut: no checkpoint, no epoch finished")
        return
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - whatever a damaged file raises: said, and nothing brought back
        s.log(f"run cut: its checkpoint {path} cannot be read ({type(err).__name__}: {err}); nothing brought back")
        return
    verdict = judge_checkpoint(state, planned, job)
    s.summary["run"].update(verdict.record, epochs_done=verdict.record["epochs"] if verdict.returned else 0)
    if not verdict.returned:
        s.log(f"run cut: its checkpoint {path.relative_to(s.repo)} is {verdict.message}; nothing brought back")
        return
    table = path.with_name("cut_metrics.csv")
    write_rows(state["metrics"], table)
    s.keep(table, name, {"stage": "run", **verdict.record})
    table.unlink()
    s.log(f"run cut: {verdict.record['epochs']} epochs done ({verdict.message}), read from its checkpoint")
