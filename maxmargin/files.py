"""Writing files so that a reader never sees half of one: atomic replacement, byte-reproducible arrays, sha256."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

# Temporary files beside their target start with this: a run killed during a write (kill -9) leaves one behind,
# which the next job writing into that folder removes (remove_stale_temporaries).
TEMP_PREFIX = ".tmp-"


def _umask() -> int:
    """The process umask (reading it means setting it; it is put back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` that replaces it only if the block succeeds.

    An interrupted job then never leaves a half-written output that looks complete. The file gets the mode that
    the umask gives a new file (``mkstemp`` makes it 0600, which collaborators on a shared file system cannot read).
    A write that fails on a full disk raises ``OSError(ENOSPC)`` naming the file, whatever the writer raised (torch's
    stream writer says only ``basic_ios::clear: iostream error``; Python's own write, a bare ``[Errno 28] No space
    left on device``).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{target.name}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except Exception as err:
        full = isinstance(err, OSError) and err.errno == errno.ENOSPC
        if (full or _disk_full(target.parent)) and str(target) not in str(err):
            detail = "" if full else f" ({err})"  # the writer's own words, where they are not these
            raise OSError(errno.ENOSPC, f"No space left on device while writing {target}{detail}") from err
        raise
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _disk_full(folder: Path) -> bool:
    """Whether the file system of ``folder`` has (almost) no space left: the failed write's partial file, not yet
    removed, filled it. Under 1 MiB free counts as full (the last blocks a write could not get)."""
    try:
        return shutil.disk_usage(folder).free < 2**20
    except OSError:
        return False


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary files a killed write of ``path`` left beside it (kill -9 runs no cleanup); the files
    removed. Only this output's: no other job writes it, so none of them is a write in progress."""
    target = Path(path)
    removed = []
    for tmp in target.parent.glob(f"{TEMP_PREFIX}{target.name}.*"):
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp)
    return removed


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    """Write JSON atomically, keys sorted."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def write_npz(arrays: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write arrays as an ``.npz`` atomically and byte-reproducibly.

    ``np.savez`` stamps every member with the current time; a fixed stamp makes a forced rerun byte-identical.
    """
    import numpy as np

    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def source_fingerprint(paths: Iterable[Path]) -> str:
    """A short hash of source files' names and bytes: the rerun trigger of a rule whose outputs that code makes."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes, as its records hold it."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()
