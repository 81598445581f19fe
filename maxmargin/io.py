"""Atomic writes, provenance sidecars, per-rule logging and terminal progress for the Snakemake scripts."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

# The provenance of the job in progress, set by rule_logging(snakemake): every table written
# inside the block gets a sidecar and every figure the same record in its metadata.
_PROVENANCE: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("provenance", default=None)


def current_provenance() -> dict[str, Any] | None:
    return _PROVENANCE.get()


# Progress of long jobs (ViT epochs, census chunks, regularization-path radii). Inside rule_logging a record goes to the
# rule log like any other and also, one line each, to the job's stderr: the terminal when Snakemake runs the job
# itself, the job's SLURM log (.snakemake/slurm_logs/) on a cluster. Logging, not tqdm: it is flushed line by line
# and shown whether or not stderr is a terminal.
PROGRESS_LOGGER = "maxmargin.progress"


def progress(message: str, *args: Any) -> None:
    """Report one step of a long job (``message % args``): in the rule log and on the job's terminal/SLURM log."""
    logging.getLogger(PROGRESS_LOGGER).info(message, *args)


def provenance_path(path: str | os.PathLike[str]) -> Path:
    """Where the sidecar of an output lives: ``tables/x.csv`` -> ``tables/x.csv.provenance.json``."""
    return Path(f"{path}.provenance.json")


def _umask() -> int:
    """The process umask (reading it means setting it; it is put back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_path(path: str | os.PathLike[str]) -> contextlib.AbstractContextManager[Path]:
    """Yield a temporary path beside ``path`` that replaces it only if the block succeeds.

    An interrupted job then never leaves a half-written output that looks complete. The file gets the mode that
    the umask gives a new file (``mkstemp`` makes it 0600, which collaborators on a shared file system cannot read).
    """

    @contextlib.contextmanager
    def _ctx() -> Iterator[Path]:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix, dir=target.parent)
        os.close(fd)
        try:
            yield Path(tmp)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    return _ctx()


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    """Write JSON atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a table atomically, with full float precision, plus its provenance sidecar inside a rule."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.17g")
    provenance = current_provenance()
    if provenance is not None:
        write_json(provenance, provenance_path(path))


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


class _Tee:
    """A text stream that writes to the terminal's stderr and to the rule log alike."""

    def __init__(self, terminal: Any, log_file: Any) -> None:
        self.terminal, self.log_file = terminal, log_file

    def write(self, text: str) -> int:
        self.log_file.write(text)
        self.log_file.flush()
        return self.terminal.write(text)

    def flush(self) -> None:
        self.log_file.flush()
        self.terminal.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.terminal, name)


def remove_stale_sidecars(outputs: Any) -> None:
    """Delete the provenance sidecars of a job's outputs before it runs.

    Snakemake deletes a job's outputs before it runs them again, but not the sidecars it does not know of: a job
    that then fails would leave a sidecar describing a table that no longer exists.
    """
    for output in outputs:
        provenance_path(output).unlink(missing_ok=True)


@contextlib.contextmanager
def rule_logging(job: Any) -> Iterator[logging.Logger]:
    """Send the ``maxmargin`` logger, warnings, everything written to stderr and any traceback to the rule's log.

    ``job`` is the ``snakemake`` object of a script (its log file and provenance are used) or a log path. The log
    is appended to; stderr still reaches the terminal too (a fallback warning must be seen, not only logged), and
    so do the :func:`progress` lines, prefixed with the job's rule and wildcards.
    """
    if isinstance(job, str | os.PathLike):
        log_path, token, name = job, None, Path(job).stem
    else:
        from maxmargin.provenance import snakemake_provenance

        remove_stale_sidecars(job.output)
        log_path, token = job.log[0], _PROVENANCE.set(snakemake_provenance(job))
        name = _job_name(job)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    terminal = sys.stderr
    with open(log_path, "a", encoding="utf-8") as log_file, _stderr_to(log_file):
        logger = logging.getLogger("maxmargin")
        logger.setLevel(logging.INFO)
        handler = logging.StreamHandler(log_file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        # the terminal's own stream, not the tee: the rule log already gets the record through `handler`
        progress_handler = logging.StreamHandler(terminal)
        progress_handler.setFormatter(logging.Formatter(f"%(asctime)s [{name}] %(message)s", "%H:%M:%S"))
        logging.getLogger(PROGRESS_LOGGER).addHandler(progress_handler)
        try:
            yield logger
        except BaseException:
            logger.exception("rule failed")
            raise
        finally:
            if token is not None:
                _PROVENANCE.reset(token)
            logger.removeHandler(handler)
            logging.getLogger(PROGRESS_LOGGER).removeHandler(progress_handler)


def _job_name(job: Any) -> str:
    """``rule k=v ...``: which job a progress line on a shared terminal comes from."""
    wildcards = getattr(job, "wildcards", None) or {}
    items = dict(wildcards.items()) if hasattr(wildcards, "items") else {}
    return " ".join([str(getattr(job, "rule", "job")), *(f"{k}={v}" for k, v in items.items())])


@contextlib.contextmanager
def _stderr_to(log_file: Any) -> Iterator[None]:
    """Tee ``sys.stderr`` (Python warnings, torch and timm messages, progress bars) into ``log_file``."""
    terminal = sys.stderr
    sys.stderr = _Tee(terminal, log_file)
    # Warnings as log records written to the tee: a test runner's or library's own showwarning cannot divert them.
    logging.captureWarnings(True)
    warnings_logger = logging.getLogger("py.warnings")
    handler = logging.StreamHandler(sys.stderr)
    warnings_logger.addHandler(handler)
    try:
        yield
    finally:
        warnings_logger.removeHandler(handler)
        logging.captureWarnings(False)
        sys.stderr.flush()
        sys.stderr = terminal
