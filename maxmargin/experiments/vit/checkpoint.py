"""Checkpoints of a ViT run: a plain dict (the training loop's state), written atomically, resumed only by the run of
its fingerprint (the same settings, data and training code).

A checkpoint and its companions (its W history, its snapshots' folder) go together. One of another fingerprint is
never overwritten: it is kept aside as ``<stem>.<fingerprint>[-n]<suffix>`` (an unreadable one as
``<stem>.unreadable<suffix>``), so that editing the ViT code cannot destroy a long run, and taken back when the run's
fingerprint is its own again (the edit undone), so that undoing an edit never costs one. ``vit.checkpoints.keep_aside``
bounds how many stay aside (:func:`prune_kept_aside`).
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
UNREADABLE = (RuntimeError, OSError, EOFError, pickle.UnpicklingError)  # what torch.load raises on a damaged file


class CheckpointWarning(UserWarning):
    """A checkpoint is kept aside, not resumed (a warning reaches the terminal, not only the log)."""


def w_history_path(checkpoint: str | os.PathLike[str]) -> Path:
    """The file beside a checkpoint holding the last layer's key-query matrix W of every evaluated epoch."""
    path = Path(checkpoint)
    return path.with_name(path.name + ".w_history")


def _with_companions(checkpoint: Path) -> list[Path]:
    """A checkpoint and what goes where it goes: its W history and its snapshots' folder."""
    return [checkpoint, w_history_path(checkpoint), checkpoint.with_name(checkpoint.name + ".snapshots")]


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _move(source: Path, target: Path) -> None:
    """Move checkpoint ``source`` and its companions to ``target``'s places (replacing what is there)."""
    for old, new in zip(_with_companions(source), _with_companions(target), strict=True):
        _remove(new)
        if old.exists():
            os.replace(old, new)


def remove_checkpoint(checkpoint: str | os.PathLike[str]) -> None:
    """Remove a checkpoint and its companions (a pilot's, which no run resumes)."""
    for path in _with_companions(Path(checkpoint)):
        _remove(path)


def save_checkpoint(path: str | os.PathLike[str], state: dict[str, Any]) -> None:
    """Write a checkpoint atomically (:func:`maxmargin.files.atomic_path`: a kill during the write leaves the
    previous one intact), first removing what a write killed before its rename (kill -9) left beside it."""
    remove_stale_temporaries(path)
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def _read(path: Path) -> dict[str, Any]:
    return torch.load(path, map_location="cpu", weights_only=True)


def _warn(message: str) -> None:
    log.warning(message)
    warnings.warn(message, CheckpointWarning, stacklevel=4)


def kept_aside(path: str | os.PathLike[str], tag: str = r"[\w-]+") -> list[Path]:
    """The checkpoints kept aside beside ``path`` (``<stem>.<tag>[-n]<suffix>``, ``tag`` a regular expression),
    the newest first."""
    path = Path(path)
    name = re.compile(rf"{re.escape(path.stem)}\.(?:{tag})(?:-\d+)?{re.escape(path.suffix)}")
    found = [p for p in path.parent.glob(glob.escape(path.stem) + ".*") if name.fullmatch(p.name)]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def _keep_aside(path: Path, tag: str) -> Path:
    """Move a checkpoint (and its companions) to ``<stem>.<tag><suffix>``, never over another one; the new path."""
    target, n = path.with_name(f"{path.stem}.{tag}{path.suffix}"), 0
    while target.exists():
        n += 1
        target = path.with_name(f"{path.stem}.{tag}-{n}{path.suffix}")
    _move(path, target)
    return target


def prune_kept_aside(path: str | os.PathLike[str], keep: int) -> list[Path]:
    """Remove the kept-aside checkpoints beside ``path`` but the ``keep`` newest (``vit.checkpoints.keep_aside``),
    with their companions; the ones removed. Each edit of the training code keeps one aside: without a bound they
    pile up (a ViT-B/2 checkpoint with Adam's state is about 1 GB)."""
    removed = kept_aside(path)[keep:]
    for old in removed:
        remove_checkpoint(old)
        log.info("removed the kept-aside checkpoint %s (vit.checkpoints.keep_aside keeps the %d newest)", old, keep)
    return removed


def _is_run(state: dict[str, Any], fingerprint: str) -> bool:
    return state.get("format") == CHECKPOINT_FORMAT and state.get("fingerprint") == fingerprint


def _progress(state: dict[str, Any]) -> tuple[bool, int]:
    return bool(state.get("finished")), int(state.get("epoch", -1))


def _take_back(path: Path, fingerprint: str) -> dict[str, Any] | None:
    """Move the furthest checkpoint kept aside under ``fingerprint`` (a finished one first, else the latest epoch)
    back to ``path``, with its companions; its state, or None when there is none. An unreadable one is named and
    removed. One state is held at a time besides the best so far (a ViT-B/2 checkpoint is about 1 GB)."""
    best: tuple[Path, dict[str, Any]] | None = None
    for aside in kept_aside(path, re.escape(fingerprint)):
        try:
            state = _read(aside)
        except UNREADABLE as err:
            _warn(f"kept-aside checkpoint {aside} is unreadable ({err}): removed")
            remove_checkpoint(aside)
            continue
        if _is_run(state, fingerprint) and (best is None or _progress(state) > _progress(best[1])):
            best = (aside, state)
    if best is None:
        return None
    _move(best[0], path)
    log.info("taking back %s, kept aside earlier under this run's fingerprint %s, as %s", best[0], fingerprint, path)
    return best[1]


def _own_state(path: Path, fingerprint: str) -> dict[str, Any] | None:
    """The checkpoint at ``path`` if it is this run's; one of other settings, data or code (or an unreadable one)
    is kept aside under its fingerprint, with a warning that says where."""
    if not path.exists():
        return None
    try:
        state = _read(path)
    except UNREADABLE as err:
        _warn(f"unreadable checkpoint {path} ({err}), kept aside as {_keep_aside(path, 'unreadable')}")
        return None
    if _is_run(state, fingerprint):
        return state
    aside = _keep_aside(path, str(state.get("fingerprint", "unknown")))
    _warn(
        f"checkpoint {path} belongs to other settings, data or code (fingerprint {state.get('fingerprint')}, "
        f"this run {fingerprint}): kept aside as {aside}"
    )
    return None


def load_checkpoint(path: str | os.PathLike[str], fingerprint: str, restore: bool = False) -> dict[str, Any] | None:
    """The checkpoint of the run with this fingerprint at ``path`` (or kept aside beside it, taken back), else None.

    One of other settings, data or code (or an unreadable one) is kept aside under its fingerprint. A finished
    run's checkpoint is returned only with ``restore`` (its outputs are then rebuilt from it without training);
    otherwise the run trains again from epoch 0.
    """
    path = Path(path)
    state = _own_state(path, fingerprint) or _take_back(path, fingerprint)
    if state is None:
        log.info("no checkpoint of this run (fingerprint %s) at %s or kept aside: starting afresh", fingerprint, path)
        return None
    if state.get("finished") and not restore:
        log.info("checkpoint %s is of a finished run; training again from epoch 0", path)
        return None
    return state
