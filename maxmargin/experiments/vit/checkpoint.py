"""Checkpoints of a ViT run: written atomically, resumed only by the same settings, data and training code.

A checkpoint of other settings or code is never overwritten: it is kept aside under its fingerprint
(``checkpoint.<fingerprint>.pt``, with its W history), so that editing the ViT code cannot destroy a long run.
"""

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

CHECKPOINT_FORMAT = 3  # 3: W history beside it, epoch times apart from the metrics


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


def w_history_path(checkpoint: str | os.PathLike[str]) -> Path:
    """The file beside a checkpoint holding the last layer's key-query matrix W of every epoch (float32 blocks)."""
    path = Path(checkpoint)
    return path.with_name(path.name + ".w_history")


def save_checkpoint(path: str | os.PathLike[str], state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (a kill during the write leaves the previous one intact).

    A temporary file beside it replaces it once written (the experiments layer writes no table: nobody else
    reads a checkpoint).
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
    """A checkpoint is not resumed: the run starts afresh (a warning reaches the terminal, not only the log)."""


def _warn(message: str) -> None:
    log.warning(message)
    warnings.warn(message, CheckpointWarning, stacklevel=3)


def keep_aside(path: Path, tag: str) -> Path:
    """Move a checkpoint (and its W history) to ``<stem>.<tag><suffix>``, never over another one; the new path."""
    target = path.with_name(f"{path.stem}.{tag}{path.suffix}")
    n = 1
    while target.exists():
        target, n = path.with_name(f"{path.stem}.{tag}-{n}{path.suffix}"), n + 1
    os.replace(path, target)
    if w_history_path(path).exists():
        os.replace(w_history_path(path), w_history_path(target))
    return target


def load_checkpoint(path: str | os.PathLike[str], fingerprint: str, restore: bool = False) -> dict[str, Any] | None:
    """The checkpoint at ``path`` if it belongs to a run with this fingerprint, else None.

    One of other settings, data or code (or an unreadable one) is kept aside under its fingerprint, with a
    warning that says where. A finished run's checkpoint is returned only with ``restore`` (its outputs are then
    rebuilt from it without training); otherwise the run trains again from epoch 0.
    """
    path = Path(path)
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as err:
        aside = keep_aside(path, "unreadable")
        _warn(f"unreadable checkpoint {path} ({err}), kept aside as {aside}; starting afresh")
        return None
    if state.get("format") != CHECKPOINT_FORMAT or state.get("fingerprint") != fingerprint:
        aside = keep_aside(path, str(state.get("fingerprint", "unknown")))
        _warn(
            f"checkpoint {path} belongs to other settings, data or code (fingerprint {state.get('fingerprint')}, "
            f"this run {fingerprint}): kept aside as {aside}; starting afresh"
        )
        return None
    if state.get("finished") and not restore:
        log.info("checkpoint %s is of a finished run; training again from epoch 0", path)
        return None
    return state
