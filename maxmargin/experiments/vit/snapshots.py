"""The model of a ViT run at the epochs its analyses read (``vit.train.snapshot_every``): what a probe after the
run needs, so that a new question about a finished run trains nothing.

The whole model's weights are kept, not the last layer's inputs: at the CPU scales a model (0.8 MB at the
default, 5.6 MB at depth 12) is smaller than the inputs of 256 probe images (4-6 MB an epoch), and any layer can be
probed later; at the paper's width the probe runs where the snapshots are (the GPU node).

During training each snapshot is its own file in a folder beside the checkpoint (``checkpoint.pt.snapshots/``,
moved with it when it is kept aside), so that a killed run keeps those of the epochs it finished; once the run is
finished they are gathered into one file, the declared output the probes read (``vit_snapshots.pt``).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import torch
from torch import nn

from maxmargin.files import TEMP_PREFIX, atomic_path

SNAPSHOT_FORMAT = 1
_NAME = re.compile(r"epoch_(\d+)\.pt")


def snapshot_epochs(epochs: int, every: int) -> list[int]:
    """The epochs a run keeps its model at: 0 (the initialisation), every ``every`` epochs, and the last (``every``
    0: none)."""
    return sorted({*range(0, epochs + 1, every), epochs}) if every > 0 else []


def snapshots_path(checkpoint: str | os.PathLike[str]) -> Path:
    """The folder beside a checkpoint that holds its run's snapshots while it trains."""
    path = Path(checkpoint)
    return path.with_name(path.name + ".snapshots")


class Snapshots:
    """The snapshots of one run in the folder beside its checkpoint, one file per epoch."""

    def __init__(self, checkpoint: str | os.PathLike[str]) -> None:
        self.folder = snapshots_path(checkpoint)

    def epochs(self) -> list[int]:
        if not self.folder.is_dir():
            return []
        return sorted(int(m[1]) for p in self.folder.iterdir() if (m := _NAME.fullmatch(p.name)))

    def _file(self, epoch: int) -> Path:
        return self.folder / f"epoch_{epoch:05d}.pt"

    def reset(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)

    def save(self, epoch: int, model: nn.Module) -> None:
        """Keep the model's weights after ``epoch`` (written atomically)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        with atomic_path(self._file(epoch)) as tmp:
            torch.save(state, tmp)

    def truncate(self, epoch: int) -> None:
        """Drop the snapshots after ``epoch`` (a resumed run makes them again) and what a killed write left."""
        for e in self.epochs():
            if e > epoch:
                self._file(e).unlink()
        for stale in self.folder.glob(f"{TEMP_PREFIX}*"):  # only this run writes here: none is a write in progress
            stale.unlink()

    def gather(self, path: str | os.PathLike[str], expected: list[int], meta: dict[str, Any]) -> None:
        """Write every snapshot into the one file at ``path``: ``{"format", "epochs", "states": {epoch: weights},
        **meta}``. The run must have kept exactly the ``expected`` epochs."""
        if self.epochs() != expected:
            raise RuntimeError(
                f"{self.folder} holds the snapshots of epochs {self.epochs()}, the run's are {expected}: train again "
                "(snakemake --forcerun vit_train)"
            )
        states = {e: torch.load(self._file(e), map_location="cpu", weights_only=True) for e in expected}
        with atomic_path(path) as tmp:
            torch.save({"format": SNAPSHOT_FORMAT, "epochs": expected, "states": states, **meta}, tmp)


def load_snapshots(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A run's gathered snapshots (:meth:`Snapshots.gather`)."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    if state.get("format") != SNAPSHOT_FORMAT:
        raise ValueError(f"{path} is not a snapshot file of format {SNAPSHOT_FORMAT}: rerun rule vit_train")
    return state
