"""Checkpoints of a ViT run: written atomically after every epoch, resumed only by the same settings, data and code."""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
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


def load_checkpoint(path: str | os.PathLike[str], fingerprint: str) -> dict[str, Any] | None:
    """The checkpoint at ``path`` if it belongs to a run with this fingerprint, else None (with a warning)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as err:
        log.warning("ignoring unreadable checkpoint %s (%s); starting afresh", path, err)
        return None
    if state.get("format") != CHECKPOINT_FORMAT or state.get("fingerprint") != fingerprint:
        log.warning("checkpoint %s belongs to other settings, data or code; starting afresh", path)
        return None
    if state.get("finished"):
        log.info("checkpoint %s is of a finished run; training again from epoch 0", path)
        return None
    return state
