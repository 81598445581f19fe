"""Checkpoints of a ViT run: written atomically, resumed only by the same settings, data and training code.

A checkpoint of other settings or code is never overwritten: it is kept aside under its fingerprint
(``checkpoint.<fingerprint>.pt``, with its W history), so that editing the ViT code cannot destroy a long run, and
taken back when the run's fingerprint is its own again (the edit undone), so that undoing an edit never costs one.
"""

from __future__ import annotations

import glob
import logging
import os
import pickle
import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import torch

from maxmargin.files import atomic_path, remove_stale_temporaries

log = logging.getLogger("maxmargin")

CHECKPOINT_FORMAT = 3  # 3: W history beside it, epoch times apart from the metrics


def w_history_path(checkpoint: str | os.PathLike[str]) -> Path:
    """The file beside a checkpoint holding the last layer's key-query matrix W of every evaluated epoch."""
    path = Path(checkpoint)
    return path.with_name(path.name + ".w_history")


def companions(checkpoint: str | os.PathLike[str]) -> list[Path]:
    """What lives beside a checkpoint and goes where it goes: its W history and its snapshots' folder."""
    path = Path(checkpoint)
    return [w_history_path(path), path.with_name(path.name + ".snapshots")]


def _move_companions(source: Path, target: Path) -> None:
    """Move the companions of checkpoint ``source`` to those of ``target`` (replacing what is there)."""
    for old, new in zip(companions(source), companions(target), strict=True):
        _remove(new)
        if old.exists():
            os.replace(old, new)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def remove_checkpoint(checkpoint: str | os.PathLike[str]) -> None:
    """Remove a checkpoint and its companions (a pilot's, which no run resumes)."""
    for path in (Path(checkpoint), *companions(checkpoint)):
        _remove(path)


def save_checkpoint(path: str | os.PathLike[str], state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (:func:`maxmargin.files.atomic_path`: a kill during the write leaves the
    previous one intact), first removing what a write killed before its rename (kill -9) left beside it."""
    remove_stale_temporaries(path)
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


class CheckpointWarning(UserWarning):
    """A checkpoint is kept aside, not resumed (a warning reaches the terminal, not only the log)."""


def _warn(message: str) -> None:
    log.warning(message)
    warnings.warn(message, CheckpointWarning, stacklevel=4)


def keep_aside(path: Path, tag: str) -> Path:
    """Move a checkpoint (and its W history) to ``<stem>.<tag><suffix>``, never over another one; the new path."""
    target = path.with_name(f"{path.stem}.{tag}{path.suffix}")
    n = 1
    while target.exists():
        target, n = path.with_name(f"{path.stem}.{tag}-{n}{path.suffix}"), n + 1
    os.replace(path, target)
    _move_companions(path, target)
    return target


def _kept_aside_of(path: Path, fingerprint: str) -> list[Path]:
    """The checkpoints :func:`keep_aside` moved beside ``path`` under ``fingerprint`` (``<stem>.<fp>[-n]<suffix>``)."""
    pattern = re.compile(rf"{re.escape(path.stem)}\.{re.escape(fingerprint)}(-\d+)?{re.escape(path.suffix)}")
    return sorted(p for p in path.parent.glob(glob.escape(path.stem) + ".*") if pattern.fullmatch(p.name))


def kept_aside(path: str | os.PathLike[str]) -> list[Path]:
    """Every checkpoint kept aside beside ``path`` (``<stem>.<tag>[-n]<suffix>``), the newest first."""
    path = Path(path)
    pattern = re.compile(rf"{re.escape(path.stem)}\.[\w-]+{re.escape(path.suffix)}")
    found = [p for p in path.parent.glob(glob.escape(path.stem) + ".*") if pattern.fullmatch(p.name)]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def prune_kept_aside(path: str | os.PathLike[str], keep: int) -> list[Path]:
    """Remove the kept-aside checkpoints beside ``path`` but the ``keep`` newest (``vit.checkpoints.keep_aside``),
    with their companions; the ones removed. Each edit of the training code keeps one aside: without a bound they
    pile up (a ViT-B/2 checkpoint with Adam's state is about 1 GB)."""
    removed = kept_aside(path)[keep:]
    for old in removed:
        remove_checkpoint(old)
        log.info("removed the kept-aside checkpoint %s (vit.checkpoints.keep_aside keeps the %d newest)", old, keep)
    return removed


def _read(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=True)


def _take_back(path: Path, fingerprint: str) -> dict[str, Any] | None:
    """Move the furthest checkpoint kept aside under ``fingerprint`` (a finished one first, else the latest epoch)
    back to ``path``, with its W history; its state, or None when there is none.

    An edit of the training code that is undone (``git checkout``) finds its own run again: resumed or restored,
    never trained again from epoch 0.
    """
    found = []
    for aside in _kept_aside_of(path, fingerprint):
        try:
            state = _read(aside)
        except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as err:
            _warn(f"kept-aside checkpoint {aside} is unreadable ({err}): removed")
            remove_checkpoint(aside)
            continue
        if state.get("format") == CHECKPOINT_FORMAT and state.get("fingerprint") == fingerprint:
            found.append((bool(state.get("finished")), int(state.get("epoch", -1)), aside, state))
    if not found:
        return None
    *_, aside, state = max(found, key=lambda f: f[:2])
    os.replace(aside, path)
    _move_companions(aside, path)
    log.info("taking back %s, kept aside earlier under this run's fingerprint %s, as %s", aside, fingerprint, path)
    return state


def _own_state(path: Path, fingerprint: str) -> dict[str, Any] | None:
    """The checkpoint at ``path`` if it is this run's; one of other settings, data or code (or an unreadable one)
    is kept aside under its fingerprint, with a warning that says where."""
    if not path.exists():
        return None
    try:
        state = _read(path)
    except (RuntimeError, OSError, EOFError, pickle.UnpicklingError) as err:
        aside = keep_aside(path, "unreadable")
        _warn(f"unreadable checkpoint {path} ({err}), kept aside as {aside}")
        return None
    if state.get("format") != CHECKPOINT_FORMAT or state.get("fingerprint") != fingerprint:
        aside = keep_aside(path, str(state.get("fingerprint", "unknown")))
        _warn(
            f"checkpoint {path} belongs to other settings, data or code (fingerprint {state.get('fingerprint')}, "
            f"this run {fingerprint}): kept aside as {aside}"
        )
        return None
    return state


def load_checkpoint(path: str | os.PathLike[str], fingerprint: str, restore: bool = False) -> dict[str, Any] | None:
    """The checkpoint of the run with this fingerprint at ``path`` (or kept aside beside it, taken back), else None.

    One of other settings, data or code (or an unreadable one) is kept aside under its fingerprint. A finished
    run's checkpoint is returned only with ``restore`` (its outputs are then rebuilt from it without training);
    otherwise the run trains again from epoch 0.
    """
    path = Path(path)
    existed = path.exists()
    state = _own_state(path, fingerprint) or _take_back(path, fingerprint)
    if state is None:
        if existed:
            log.info(
                "no checkpoint of this run (fingerprint %s) at %s or kept aside: starting afresh", fingerprint, path
            )
        return None
    if state.get("finished") and not restore:
        log.info("checkpoint %s is of a finished run; training again from epoch 0", path)
        return None
    return state
