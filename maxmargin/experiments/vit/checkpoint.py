"""Checkpoints of a ViT run: written atomically after every epoch, resumed only by the same settings, data and code."""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import warnings
from pathlib import Path
from typing import Any

import torch

log = logging.getLogger("maxmargin")

CHECKPOINT_FORMAT = 2  # 2: schedule state, settings and the "finished" flag


def rng_state(generator: torch.Generator) -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "generator": generator.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any], generator: torch.Generator) -> None:
    torch.set_rng_state(state["torch"])
    generator.set_state(state["generator"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | os.PathLike[str], state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (a kill during the write leaves the previous one intact).

    A temporary file beside it replaces it once written, as :func:`maxmargin.io.atomic_path` does for the tables
    (the experiments layer imports no I/O module: tests/test_layers.py). A checkpoint is never read by anyone else.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        torch.save(state, tmp)
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


class CheckpointWarning(UserWarning):
    """A checkpoint is ignored: the run starts afresh (a warning reaches the terminal, not only the log)."""


def _ignore(message: str) -> None:
    log.warning(message)
    warnings.warn(message, CheckpointWarning, stacklevel=3)


def load_checkpoint(path: str | os.PathLike[str], fingerprint: str, restore: bool = False) -> dict[str, Any] | None:
    """The checkpoint at ``path`` if it belongs to a run with this fingerprint, else None (with a warning).

    A finished run's checkpoint is returned only with ``restore`` (its outputs are then rebuilt from it without
    training); otherwise the run trains again from epoch 0.
    """
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as err:
        _ignore(f"ignoring unreadable checkpoint {path} ({err}); starting afresh")
        return None
    if state.get("format") != CHECKPOINT_FORMAT or state.get("fingerprint") != fingerprint:
        _ignore(f"checkpoint {path} belongs to other settings, data or code; starting afresh")
        return None
    if state.get("finished") and not restore:
        log.info("checkpoint %s is of a finished run; training again from epoch 0", path)
        return None
    return state
